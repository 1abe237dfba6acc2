"""Indexing and attribute rules (rules/numpy/indexing.py): spec tables and in-place accumulation."""

import math
import operator
import tracemalloc

import numpy as np
import pytest
from _array_checks import Case, check_accumulation_layouts, check_batched_frule, rand
from _array_checks import Const as C

import chainrules as cr
import chainrules.testing as crt
from chainrules.core.errors import DroppedDerivativeError

F32, C128 = np.float32, np.complex128
MASK = rand(3, 4) > 0

GETITEM = [
    Case(operator.getitem, rand(5), C(2)),
    Case(operator.getitem, rand(5), C(-1)),
    Case(operator.getitem, rand(3, 4), C(1)),
    Case(operator.getitem, rand(3, 4), C((1, 2))),
    Case(operator.getitem, rand(3, 4, dtype=F32), C(slice(1, None, 2))),
    Case(operator.getitem, rand(3, 4), C((slice(None, None, -1), None, Ellipsis))),
    Case(operator.getitem, rand(2, 3, 4), C((Ellipsis, 1))),
    Case(operator.getitem, rand(2, 3, 4, dtype=C128), C((None, 0, Ellipsis, None))),
    Case(operator.getitem, rand(3, 4), C(np.array([0, 0, 2]))),
    Case(operator.getitem, rand(3, 4), C([2, 2, 2, 1])),
    Case(operator.getitem, rand(3, 4), C((np.array([[0, 1], [1, 1]]), np.array([3, 3])))),
    Case(operator.getitem, rand(3, 4, 5), C((np.array([0, 0]), slice(None), np.array([1, 1])))),
    Case(operator.getitem, rand(3, 4, 5), C((0, slice(None), [1, 1, 3]))),
    Case(operator.getitem, rand(3, 4, 5, dtype=F32), C((slice(1, 3), [0, 0], Ellipsis))),
    Case(operator.getitem, rand(3, 4), C(MASK)),
    Case(operator.getitem, rand(3, 4, dtype=C128), C(MASK)),
    Case(operator.getitem, rand(3, 4), C((MASK[:, 0], slice(1, 3)))),
    Case(operator.getitem, rand(3, 4), C((np.array([True, False, True]), np.array([3, 3])))),
    Case(operator.getitem, rand(3, 4), C(np.True_)),
]

ATTRIBUTES = [
    Case(getattr, rand(3, 4), C("T")),
    Case(getattr, rand(2, 3, 4), C("T")),
    Case(getattr, rand(2, 3, 4, dtype=F32), C("mT")),
    Case(getattr, rand(3, 4, dtype=C128), C("real")),
    Case(getattr, rand(3, 4, dtype=C128), C("imag")),
    Case(getattr, rand(3, 4), C("real")),
]

CASES = GETITEM + ATTRIBUTES


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rrule(case):
    crt.test_rrule(case.f, *case.testing_args(), fkwargs=case.kwargs)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_frule(case):
    crt.test_frule(case.f, *case.testing_args(), fkwargs=case.kwargs)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_batched_frule(case):
    check_batched_frule(case.f, *case.args, fkwargs=case.kwargs)


@pytest.mark.parametrize("case", GETITEM, ids=str)
def test_cotangent_accumulates_into_every_layout(case):
    assert check_accumulation_layouts(case.f, *case.args, fkwargs=case.kwargs) == 1


ITEM = [
    Case(np.ndarray.item, rand(1, 1)),
    Case(np.ndarray.item, rand(3, 4), C(5)),
    Case(np.ndarray.item, rand(3, 4), C(-1)),
    Case(np.ndarray.item, rand(3, 4), C(1), C(2)),
    Case(np.ndarray.item, rand(3, 4, dtype=F32), C((2, 3))),
    Case(np.ndarray.item, rand(3, 4, dtype=C128), C(7)),
]


@pytest.mark.parametrize("case", ITEM, ids=str)
def test_item_takes_the_cotangent_of_one_entry(case):
    crt.test_rrule(case.f, *case.testing_args())
    crt.test_frule(case.f, *case.testing_args())


TOLIST = [
    Case(np.ndarray.tolist, rand(4)),
    Case(np.ndarray.tolist, rand(3, 2)),
    Case(np.ndarray.tolist, rand(2, 3, 2, dtype=F32)),
    Case(np.ndarray.tolist, rand(2, 2, dtype=C128)),
    Case(np.ndarray.tolist, np.array(0.7)),  # a 0-d array: a number
    Case(np.ndarray.tolist, np.zeros((2, 0))),  # [[], []]
]


@pytest.mark.parametrize("case", TOLIST, ids=str)
def test_tolist_gives_each_number_the_cotangent_of_its_entry(case):
    crt.test_rrule(case.f, *case.testing_args())
    crt.test_frule(case.f, *case.testing_args())
    check_batched_frule(case.f, *case.args)


def test_tolist_takes_plain_lists_zeros_and_thunks_as_cotangents():
    y, back = cr.rrule(np.ndarray.tolist, np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert y == [[1.0, 2.0], [3.0, 4.0]]
    seed = cr.Tangent[list]([0.5, 0.0], cr.Tangent[list](cr.ZeroTangent(), 2.0 + 1.0j))  # real x: real part
    np.testing.assert_array_equal(back(seed)[1], [[0.5, 0.0], [0.0, 2.0]])
    np.testing.assert_array_equal(back(cr.Thunk(lambda: [[1.0, 0.0], [0.0, 0.0]]))[1], [[1.0, 0.0], [0.0, 0.0]])
    assert back(cr.ZeroTangent())[1] == cr.ZeroTangent()
    assert back([cr.ZeroTangent(), cr.ZeroTangent()])[1] == cr.ZeroTangent()
    _, back = cr.rrule(np.ndarray.tolist, np.arange(3))  # integers: NoTangent unless given a float
    assert back(cr.ZeroTangent())[1] == cr.NoTangent()
    _, back = cr.rrule(np.ndarray.tolist, np.array([True, False]))
    assert back([1.0, 1.0])[1] == cr.NoTangent()


# ----- x.tolist() through the engines -------------------------------------------------------------


def _sines(x):  # x 1-D; math.sin of the numbers
    return sum(math.sin(v) for v in x.tolist())


def _corners(x):  # x 2-D
    rows = x.tolist()
    return rows[0][1] * rows[1][0] + rows[1][1] ** 3


def _rebuilt(x):  # np.array of the lists
    return np.array(x.tolist()).sum() * x.tolist()[0][0]


def _stacked(x):  # np.stack of the numbers: what the tape and forward mode ask for in place of np.array
    return np.stack([np.stack(row) for row in x.tolist()]).sum() * x.tolist()[0][0]


def _cube(x):  # x 0-d: a number
    return x.tolist() ** 3


def _modulus(z):  # z complex
    u, v = z.tolist()
    return abs(u * v) ** 2 + (u * u).real


def _vector(x):  # a vector out: a reverse Jacobian pulls back a batch through the rule
    v = x.tolist()
    return np.stack([v[0] * v[1], np.sin(v[2]), v[2] ** 2])


TOLIST_PROGRAMS = {
    "sines": (_sines, np.array([0.1, 0.2, 0.3])),
    "corners": (_corners, np.array([[1.0, 2.0], [3.0, 4.0]])),
    "corners_float32": (_corners, np.array([[1.0, 2.0], [3.0, 4.0]], dtype=F32)),
    "rebuilt": (_rebuilt, np.array([[1.0, 2.0], [3.0, 4.0]])),
    "stacked": (_stacked, np.array([[1.0, 2.0], [3.0, 4.0]])),
    "cube": (_cube, np.array(0.7)),
}
# the tape sees values only: math.sin of a tracked number and np.array of a list of them would drop
# the derivative, and are refused (docs/engines.md); the source engine sees those calls
TAPE_REFUSES = {"sines", "rebuilt"}


def _fd_gradient(f, x):
    return crt.fd_jacobian(f, x.astype(np.float64)).reshape(x.shape)


def _fd_hessian(f, x):
    x = x.astype(np.float64)
    return crt.fd_jacobian(lambda t: cr.gradient(f, t, engine="source")[0], x).reshape(x.shape * 2)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("name", TOLIST_PROGRAMS)
def test_tolist_gradient_and_hessian_in_reverse_mode(name, engine):
    f, x = TOLIST_PROGRAMS[name]
    if engine == "tape" and name in TAPE_REFUSES:
        with pytest.raises(DroppedDerivativeError, match="drop its derivative"):
            cr.gradient(f, x, engine=engine)
        return
    rtol = 1e-3 if x.dtype == F32 else 1e-7
    (g,) = cr.gradient(f, x, engine=engine)
    assert g.dtype == x.dtype
    np.testing.assert_allclose(g, _fd_gradient(f, x), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(cr.hessian(f, x, engine=engine), _fd_hessian(f, x), rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("name", TOLIST_PROGRAMS)
def test_tolist_jacobian_in_forward_mode(name):
    f, x = TOLIST_PROGRAMS[name]
    rtol = 1e-3 if x.dtype == F32 else 1e-7
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), _fd_gradient(f, x), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_tolist_reverse_jacobian_pulls_back_a_batch(engine):
    x = np.array([0.3, 0.5, 0.9])
    want = crt.fd_jacobian(_vector, x)
    np.testing.assert_allclose(cr.jacobian(_vector, x, mode="reverse", engine=engine), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.jacobian(_vector, x, mode="forward"), want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize(
    "f, x",
    [
        (_corners, np.array([[1.0, 2.0], [3.0, 4.0]])),
        (_modulus, np.array([1.0 + 2.0j, 0.5 - 1.0j])),
        (_cube, np.array(0.7)),
    ],
    ids=["corners", "complex", "0-d"],
)
def test_tolist_to_second_order_in_every_mode(f, x, engine):
    checks = crt.check_grads(
        f, (x,), modes=("forward", "reverse"), order=2, engine=engine, nested_modes=("forward", "reverse")
    )
    assert any("order 2" in c for c in checks)


# ----- the cotangent of x[i] is an action on the accumulator ------------------------------------


def test_repeated_integer_indices_accumulate():
    x = rand(4)
    _, back = cr.rrule(operator.getitem, x, [1, 1, 3, 1])
    dx = back(np.array([1.0, 2.0, 3.0, 4.0]))[1]
    assert isinstance(dx, cr.InplaceableThunk)
    np.testing.assert_array_equal(cr.unthunk(dx), [0.0, 7.0, 0.0, 3.0])
    acc = np.ones(4)
    np.testing.assert_array_equal(cr.iadd(acc, dx), [1.0, 8.0, 1.0, 4.0])


def _mysum_gradient(X):
    """The gradient of seed 004's ``mysum`` (``total += X[i]`` over i) as an engine accumulates it."""
    acc, owned = cr.ZeroTangent(), False
    for i in range(X.shape[0]):
        _, back = cr.rrule(operator.getitem, X, i)
        acc, owned = cr.accumulate(acc, owned, back(1.0)[1])
    return cr.unthunk(acc)


def test_mysum_gradient_is_right_and_allocates_one_accumulator():
    n = 20_000
    X = rand(n)
    tracemalloc.start()
    try:
        grad = _mysum_gradient(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(grad, np.ones(n))
    # one value form copied once into the owned accumulator: two arrays of n floats at most,
    # where building every value form would need n of them
    assert peak < 2.5 * 8 * n, f"peak {peak} bytes for n = {n}"


def test_scalar_index_into_big_array_does_not_build_the_dense_value():
    x = rand(100_000)
    _, back = cr.rrule(operator.getitem, x, 7)
    dx = back(3.0)[1]
    acc = np.zeros(100_000)
    tracemalloc.start()
    try:
        cr.iadd(acc, dx)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert acc[7] == 3.0 and acc.sum() == 3.0
    assert peak < 8 * 1000


def test_a_real_array_drops_the_imaginary_part_of_its_cotangent():
    _, back = cr.rrule(operator.getitem, rand(3), 1)
    acc = np.zeros(3)
    cr.iadd(acc, back(2.0 + 5.0j)[1])
    np.testing.assert_array_equal(acc, [0.0, 2.0, 0.0])


def test_integer_arrays_get_float_cotangents_and_boolean_arrays_none():
    _, back = cr.rrule(operator.getitem, np.arange(4), [0, 0])
    dx = cr.unthunk(back(np.ones(2))[1])
    assert dx.dtype == np.float64
    np.testing.assert_array_equal(dx, [2.0, 0.0, 0.0, 0.0])
    _, back = cr.rrule(operator.getitem, np.array([True, False]), 0)
    assert back(1.0)[1] == cr.NoTangent()


def test_getitem_rule_is_typed_on_arrays():
    assert cr.rrule.lookup(operator.getitem, (np.ones(2), 0)) is not None
    assert cr.frule.lookup(operator.getitem, (np.ones(2), 0)).batched


@pytest.mark.parametrize("name", ["shape", "ndim", "size", "dtype", "strides"])
def test_non_differentiable_attributes(name):
    x = rand(2, 3)
    y, back = cr.rrule(getattr, x, name)
    assert y == getattr(x, name)
    assert back(None) == (cr.NoTangent(),) * 3
    assert cr.frule((cr.NoTangent(), rand(2, 3), cr.NoTangent()), getattr, x, name)[1] == cr.NoTangent()


def test_a_bound_methods_cotangent_is_its_arrays():
    # (m = x.reshape; m(3, 2): the call's pullback gives the method the cotangent of x)
    x = rand(2, 3)
    y, back = cr.rrule(getattr, x, "reshape")
    assert callable(y)
    d = rand(2, 3)
    assert back(d)[1] is d and back(cr.ZeroTangent())[1] == cr.ZeroTangent()
    assert cr.frule((cr.NoTangent(), rand(2, 3), cr.NoTangent()), getattr, x, "reshape")[1] == cr.NoTangent()


def test_imag_of_a_real_array_is_a_constant():
    x = rand(2)
    _, back = cr.rrule(getattr, x, "imag")
    assert back(np.ones(2))[1] == cr.ZeroTangent()
    assert cr.frule((cr.NoTangent(), rand(2), cr.NoTangent()), getattr, x, "imag")[1] == cr.ZeroTangent()


def test_unknown_attributes_are_refused():
    with pytest.raises(cr.NoRuleError, match="ndarray.flat is computed in C"):
        cr.rrule(getattr, rand(2), "flat")
