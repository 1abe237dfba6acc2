"""The short cuts of a reverse-mode Jacobian give the numbers of the general paths: the matrix-vector
rule of ``W @ x``, a batch passed through ``+`` as it is, the partial of ``x ** 2`` as ``x + x``,
a scaled block written without ``__array_finalize__``, the API's one-block pass and the source
engine's entry for a function that calls rules. Each is compared with finite differences, forward
mode and the general path, across shapes and dtypes."""

import operator

import numpy as np
import pytest
from _jacobians import ENGINES, each_engine, fd_jacobian

import chainrules as cr
import chainrules.testing as crt
from chainrules import api
from chainrules.core import BasisSeed, basis_seed
from chainrules.reverse import source

RNG = np.random.default_rng(29)
SHAPES = [(1, 1), (1, 4), (5, 1), (3, 7), (7, 3)]  # (outputs M, inputs N)


def _tolerance(dtype):
    return {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-7, "atol": 1e-9}


# ----- the matrix-vector rule ------------------------------------------------------------------


@pytest.mark.parametrize("m, n", SHAPES)
@pytest.mark.parametrize("op", [operator.matmul, np.matmul], ids=["@", "np.matmul"])
def test_the_matrix_vector_rule_passes_test_rrule(op, m, n):
    A, v = RNG.standard_normal((m, n)), RNG.standard_normal(n)
    y, back = cr.rrule(op, A, v)
    assert back.__name__ == "matrix_vector_pullback"  # the short cut is the rule under test
    crt.test_rrule(op, A, v)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m, n", SHAPES)
def test_a_batch_through_the_matrix_vector_rule_equals_one_cotangent_at_a_time(m, n, dtype):
    A, v = RNG.standard_normal((m, n)).astype(dtype), RNG.standard_normal(n).astype(dtype)
    y, back = cr.rrule(operator.matmul, A, v)
    assert y.dtype == dtype
    dys = RNG.standard_normal((4, m)).astype(dtype)
    _, dA, dv = back(dys)
    dA, dv = cr.unthunk(dA), cr.unthunk(dv)
    assert dA.shape == (4, m, n) and dv.shape == (4, n)
    assert dA.dtype == dtype and dv.dtype == dtype
    for k, dy in enumerate(dys):
        _, dA_k, dv_k = back(dy)
        np.testing.assert_allclose(dA[k], cr.unthunk(dA_k), **_tolerance(dtype))
        np.testing.assert_allclose(dv[k], cr.unthunk(dv_k), **_tolerance(dtype))
        np.testing.assert_allclose(dA[k], np.outer(dy, v), **_tolerance(dtype))
        np.testing.assert_allclose(dv[k], dy @ A, **_tolerance(dtype))


def test_a_complex_batch_of_cotangents_of_a_real_product_is_brought_to_real():
    A, v = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    _, back = cr.rrule(operator.matmul, A, v)
    dys = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    _, dA, dv = back(dys)
    np.testing.assert_allclose(cr.unthunk(dv), dys.real @ A)
    np.testing.assert_allclose(cr.unthunk(dA), dys.real[:, :, None] * v)


@pytest.mark.parametrize(
    "A, v",
    [
        (np.ones((3, 4), dtype=np.float32), np.ones(4)),  # mixed dtypes
        (np.ones((3, 4)), np.arange(4)),  # an integer vector
        (np.ones((3, 4)) + 1j, np.ones(4) + 0j),  # complex
        (np.ones((2, 3, 4)), np.ones(4)),  # a stack
    ],
    ids=["mixed", "integer", "complex", "stack"],
)
def test_other_operands_take_the_general_rule_and_stay_right(A, v):
    _, back = cr.rrule(operator.matmul, A, v)
    assert back.__name__ != "matrix_vector_pullback"
    if v.dtype.kind != "i":
        crt.test_rrule(operator.matmul, A, v)


# ----- + and ** with a batch ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b",
    [
        (RNG.standard_normal(4), RNG.standard_normal(4)),
        (RNG.standard_normal(4), RNG.standard_normal(1)),  # b broadcast: its rows are sums
        (RNG.standard_normal((3, 1)), RNG.standard_normal(4)),  # both broadcast
        (RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4)),  # a's rows stay float32
        (RNG.standard_normal(4), 2.5),
    ],
    ids=["same", "broadcast", "both-broadcast", "float32+float64", "number"],
)
@pytest.mark.parametrize("op", [operator.add, operator.sub])
def test_a_batch_through_add_and_sub_equals_one_cotangent_at_a_time(op, a, b):
    y, back = cr.rrule(op, a, b)
    dys = RNG.standard_normal((3, *np.shape(y)))
    _, da, db = back(dys)
    da, db = cr.unthunk(da), cr.unthunk(db)
    for k, dy in enumerate(dys):
        _, da_k, db_k = back(dy)
        np.testing.assert_allclose(da[k], cr.unthunk(da_k))
        np.testing.assert_allclose(db[k], cr.unthunk(db_k))
        assert np.asarray(da[k]).dtype == np.asarray(cr.unthunk(da_k)).dtype
    assert np.shape(da) == (3, *np.shape(a)) and np.shape(db) == (3, *np.shape(b))


def test_a_batch_that_fits_passes_through_add_as_it_is():
    a, b = RNG.standard_normal(4), RNG.standard_normal(4)
    _, back = cr.rrule(operator.add, a, b)
    block = basis_seed(4, (4,), 0, np.float64)
    _, da, db = back(block)
    assert da is block and db is block  # nothing to sum or convert: no copy, no thunk


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("n", [2, 3])
def test_powers_of_arrays_take_a_batch_and_keep_their_dtype(n, dtype):
    # positive real bases: test_rrule also differentiates the exponent, through log(x)
    x = (RNG.uniform(0.5, 2.0, 5) + (1j * RNG.standard_normal(5) if dtype == np.complex128 else 0)).astype(dtype)
    if dtype != np.float32:
        crt.test_rrule(operator.pow, x, n)
    y, back = cr.rrule(operator.pow, x, n)
    dys = RNG.standard_normal((2, 5)).astype(dtype)
    _, dx, _ = back(dys)
    dx = cr.unthunk(dx)
    assert dx.dtype == dtype
    np.testing.assert_allclose(dx, dys * np.conj(n * x ** (n - 1)), **_tolerance(dtype))


def test_the_square_of_an_integer_array_still_has_the_integer_partial():
    x = np.arange(-2, 3)
    _, back = cr.rrule(operator.pow, x, 2)
    _, dx, _ = back(np.ones(5))
    np.testing.assert_array_equal(cr.unthunk(dx), 2 * x)
    _, dx, _ = back(np.ones((2, 5)))
    np.testing.assert_array_equal(cr.unthunk(dx), [2 * x, 2 * x])


def test_python_number_powers_keep_their_scalar_pullback():
    for a, b in [(2.0, 3), (1.5, 0.5), (3.0, 2.0), (0.5, -1.5)]:
        crt.test_rrule(operator.pow, a, b)
    y, back = cr.rrule(operator.pow, 2.0, 3)
    assert y == 8.0 and back(1.0)[1] == 12.0
    y, back = cr.rrule(operator.pow, -8.0, 1 / 3)  # a complex result takes the general pullback
    assert isinstance(y, complex)
    # the real input gets the real part of the conjugated derivative
    assert abs(back(1.0 + 0j)[1] - ((1 / 3) * (-8.0 + 0j) ** (1 / 3 - 1)).real) < 1e-12


# ----- scaled blocks ----------------------------------------------------------------------------


def test_a_scaled_block_its_views_and_its_memory_are_read_only():
    block = basis_seed(3, (4,), 1, np.float64) * np.arange(1.0, 5.0)
    assert isinstance(block, BasisSeed) and block.basis == (1, 4)
    np.testing.assert_array_equal(block.scale, [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(block), [[0, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 4]])
    with pytest.raises(ValueError):
        block[0, 0] = 1.0
    view = block[1:]
    assert view.basis is None and view.scale is None  # a view is a plain value
    with pytest.raises(ValueError):
        view[0, 0] = 1.0
    with pytest.raises(ValueError):
        view.setflags(write=True)
    plain = np.asarray(block) * 2.0
    assert type(plain) is np.ndarray


@pytest.mark.parametrize("batch, n, first", [(4, 4, 0), (3, 5, 2), (4, 3, 1), (2, 3, -1)])
def test_scaled_blocks_at_every_offset_hold_their_values_at_the_units(batch, n, first):
    seed = BasisSeed(batch, (n,), first=first, dtype=np.float64)
    values = RNG.standard_normal(n)
    scaled = seed * values
    np.testing.assert_array_equal(np.asarray(scaled), np.asarray(seed) * values)
    W = RNG.standard_normal((n, 2))
    np.testing.assert_allclose(scaled @ W, (np.asarray(seed) * values) @ W)


# ----- the API's pass and the engines' entries ------------------------------------------------------


def seed_function_of(W, b):
    def f(x):
        return (W @ x + b) ** 2

    return f


@each_engine
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m, n", SHAPES)
def test_the_seed_jacobian_matches_forward_mode_and_finite_differences(engine, m, n, dtype):
    W, b = RNG.standard_normal((m, n)).astype(dtype), RNG.standard_normal(m).astype(dtype)
    x = RNG.standard_normal(n).astype(dtype)
    f = seed_function_of(W, b)
    expected = 2 * (W @ x + b)[:, None] * W
    for mode in ("reverse", "auto"):
        for _ in range(2):  # the second call takes the engines' and the API's fast paths
            J = cr.jacobian(f, x, mode=mode, engine=engine)
            assert J.shape == (m, n) and J.dtype == dtype and J.flags.writeable
            np.testing.assert_allclose(J, expected, **_tolerance(dtype))
    np.testing.assert_allclose(J, cr.jacobian(f, x, mode="forward"), **_tolerance(dtype))
    if dtype == np.float64:
        np.testing.assert_allclose(J, fd_jacobian(f, x), rtol=1e-6, atol=1e-8)


@each_engine
@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, None])
def test_blocks_of_any_size_give_the_same_jacobian(engine, chunk_size):
    W, b = RNG.standard_normal((7, 5)), RNG.standard_normal(7)
    x = RNG.standard_normal(5)
    f = seed_function_of(W, b)
    J = cr.jacobian(f, x, mode="reverse", engine=engine, chunk_size=chunk_size)
    np.testing.assert_allclose(J, 2 * (W @ x + b)[:, None] * W, rtol=1e-12)


@each_engine
def test_a_jacobian_that_is_a_row_selection_is_a_fresh_array(engine):
    W = RNG.standard_normal((4, 4))
    J = cr.jacobian(lambda x: W @ x, RNG.standard_normal(4), mode="reverse", engine=engine)
    np.testing.assert_array_equal(J, W)
    assert J.flags.writeable and not np.shares_memory(J, W)
    J[0, 0] = 100.0
    assert W[0, 0] != 100.0


def concatenates(x):
    pair = (x,) + (x * 2.0,)  # + on tuples: the rule declines a batch while the primal runs
    return pair[0] * pair[1]


def test_a_rule_that_declines_while_the_primal_runs_leaves_the_pullback_unbatched():
    x = RNG.standard_normal(3)
    for _ in range(3):  # later calls take the engine's fast entry
        y, back = source.pullback_full(concatenates, x)
        assert not getattr(back, "batched", False)
        J = cr.jacobian(concatenates, x, mode="reverse")
        np.testing.assert_allclose(J, np.diag(4.0 * x), rtol=1e-12)


def test_the_fast_entry_installs_the_engine_for_rules_that_call_back_into_it():
    def apply(x):
        return np.array(list(map(lambda v: v * v, x))) * x  # map's rule calls rrule_via_ad

    x = RNG.standard_normal(3)
    for _ in range(3):
        np.testing.assert_allclose(cr.jacobian(apply, x, mode="reverse"), np.diag(3.0 * x**2), rtol=1e-12)


def test_auto_mode_switches_when_the_output_grows_for_the_same_input():
    size = [2]

    def growing(x):
        return x[: size[0]] * 1.0 if size[0] <= x.size else np.concatenate([x] * (size[0] // x.size))

    x = RNG.standard_normal(4)
    api._auto_choices.pop(growing, None)
    np.testing.assert_allclose(cr.jacobian(growing, x), np.eye(4)[:2], atol=1e-12)
    assert api._chosen_before(growing, (x.shape, x.dtype)) == "reverse"
    size[0] = 8
    np.testing.assert_allclose(cr.jacobian(growing, x), np.vstack([np.eye(4)] * 2), atol=1e-12)
    assert api._chosen_before(growing, (x.shape, x.dtype)) == "forward"
    np.testing.assert_allclose(cr.jacobian(growing, x), np.vstack([np.eye(4)] * 2), atol=1e-12)
    assert api._chosen_before(growing, (x.shape, x.dtype)) == "forward"  # a choice that holds stays
    size[0] = 2  # the output shrinks: forward mode still answers, and reverse mode is chosen next time
    np.testing.assert_allclose(cr.jacobian(growing, x), np.eye(4)[:2], atol=1e-12)
    assert api._chosen_before(growing, (x.shape, x.dtype)) == "reverse"


def test_the_cotangent_of_a_scalar_input_comes_back_from_the_block():
    for engine in ENGINES:
        J = cr.jacobian(lambda t: np.arange(1.0, 4.0) * t * t, 2.0, mode="reverse", engine=engine)
        np.testing.assert_allclose(J, [4.0, 8.0, 12.0])
