"""Reverse rules run on duals: the pieces forward-over-reverse Hessians are built from."""

import math
import operator

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.forward import Dual, Tag


def test_pullbacks_of_broadcasting_operators_keep_duals():
    tag = Tag()
    x = Dual(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.0]), tag)
    s = Dual(2.0, 1.0, tag)
    y, back = cr.rrule(operator.mul, s, x)  # a scalar times a vector: the pullback sums for s
    _, ds, dx = (cr.unthunk(c) for c in back(np.ones(3)))
    assert isinstance(ds, Dual) and isinstance(dx, Dual)
    assert float(ds.primal) == 6.0 and float(ds.partials) == 1.0  # d/d(eps) of sum(x + eps e0)
    np.testing.assert_allclose(dx.primal, [2.0, 2.0, 2.0])
    np.testing.assert_allclose(dx.partials, [1.0, 1.0, 1.0])


def test_unbroadcast_and_match_input_on_duals():
    d = Dual(np.ones((2, 3)), np.arange(6.0).reshape(2, 3), Tag())
    u = cr.unbroadcast(np.zeros(3), d)
    assert isinstance(u, Dual) and u.shape == (3,)
    np.testing.assert_allclose(u.partials, [3.0, 5.0, 7.0])
    m = cr.match_input(1.0, d)
    assert isinstance(m, Dual) and float(m.partials) == 15.0
    m32 = cr.match_input(np.zeros((2, 3), np.float32), d)
    assert isinstance(m32, Dual)


def test_project_to_with_duals():
    d = Dual(np.ones(3), np.ones(3), Tag())
    assert cr.ProjectTo(np.zeros(3))(d) is d
    assert cr.ProjectTo(d)(np.ones(3)).shape == (3,)
    with pytest.raises(ValueError, match="shape"):
        cr.ProjectTo(np.zeros(2))(d)
    assert cr.ProjectTo(1.0)(Dual(2.0, 1.0, Tag())).primal == 2.0


def test_second_derivative_by_forward_over_hand_written_reverse():
    # f(x) = x sin(x) + x^2 / 3: its gradient by rrules, differentiated by forward mode
    def grad(x):
        s, back_sin = cr.rrule(math.sin, x)
        p, back_mul = cr.rrule(operator.mul, x, s)
        q, back_pow = cr.rrule(operator.pow, x, 2)
        r, back_div = cr.rrule(operator.truediv, q, 3.0)
        _, dp, dr = cr.rrule(operator.add, p, r)[1](1.0)
        _, dx1, ds = back_mul(dp)
        _, dq, _ = back_div(dr)
        _, dx2, _ = back_pow(dq)
        _, dx3 = back_sin(ds)
        return dx1 + dx2 + dx3

    x = 0.8
    assert grad(x) == pytest.approx(math.sin(x) + x * math.cos(x) + 2 * x / 3)
    assert cr.derivative(grad, x) == pytest.approx(2 * math.cos(x) - x * math.sin(x) + 2 / 3)


def test_gradient_seed_accepts_a_scalar_dual():
    from chainrules.api import _seed_for

    assert _seed_for(Dual(1.0, 1.0, Tag()), np.sin) == 1.0
    with pytest.raises(cr.ChainRulesError, match="real scalar"):
        _seed_for(Dual(np.ones(2), np.ones(2), Tag()), np.sin)


def _f_index(x):
    return np.sum(x**3) + x[0] * x[1]


def _f_method(x):
    return np.tanh(x).sum() ** 2 + (x.reshape(1, 2) @ np.ones((2, 1))).sum()


_A = np.array([[2.0, 1.0], [1.0, 3.0]])


def _f_quadratic(x):
    return x @ _A @ x + np.log(np.sum(np.exp(x)))


def _f_math(x):
    return math.sin(x[0]) * x[1] ** 2 + math.exp(x[1] / 4)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("f", [_f_index, _f_method, _f_quadratic, _f_math], ids=lambda f: f.__name__)
def test_hessian_through_the_api_by_forward_over_reverse(f, engine):
    x = np.array([0.5, -0.7])
    if f is _f_math and engine == "tape":  # the tape refuses math.* on its values (they call float())
        with pytest.raises(TypeError, match="NumPy function"):
            cr.hessian(f, x, engine=engine)
        return
    H = cr.hessian(f, x, engine=engine)
    reference = crt.fd_jacobian(lambda z: cr.gradient(f, z, engine=engine)[0], x)
    np.testing.assert_allclose(H, reference, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_of_index_and_power_is_exact(engine):
    H = cr.hessian(_f_index, np.array([1.0, 2.0]), engine=engine)
    np.testing.assert_allclose(H, [[6.0, 1.0], [1.0, 12.0]])


def test_hessian_of_a_scalar_function_of_a_scalar():
    assert cr.hessian(lambda t: t**3 * math.sin(t), 0.5) == pytest.approx(
        6 * 0.5 * math.sin(0.5) + 6 * 0.25 * math.cos(0.5) - 0.125 * math.sin(0.5)
    )


# ----- iteration, sorting and buffers under forward over reverse --------------------------------
# Each of these once failed in a Hessian: the reverse pass saw dual arrays where it expected
# plain ones (a sort converted its input, iteration over a dual array gave its cotangent back as
# a list, a buffer's row took `+=` as a plain array would).


def _sorted_weights(X):
    return np.sum(np.sort(X.ravel()) * np.arange(X.size))


def _rows_enumerated(X):
    return sum(np.sum(r**2) * i for i, r in enumerate(X))


def _rows_generator(X):
    return sum(np.sqrt(r @ r) for r in X)


def _rows_mapped(X):
    return sum(map(lambda r: np.sum(np.exp(r / 3.0)), X))


def _rows_sorted_by_key(X):
    return np.sum(sorted(X, key=lambda r: r[0])[0] ** 3)


def _rows_reduced(X):
    import functools

    return np.sum(functools.reduce(lambda a, r: a * r, X))


def _rows_summed(X):
    return np.sum(sum(X) ** 3)


def _dict_of_columns(X):
    d = {"a": X[:, 0], "b": X[:, 1] ** 2}
    return d["a"] @ d["b"]


def _row_by_index_loop(X):
    total = 0.0
    i = 0
    while i < X.shape[0]:
        total = total + X[i, 1] ** 2 * X[i, 0]
        i += 1
    return total


ITERATING = [
    _sorted_weights,
    _rows_enumerated,
    _rows_generator,
    _rows_mapped,
    _rows_sorted_by_key,
    _rows_reduced,
    _rows_summed,
    _dict_of_columns,
    _row_by_index_loop,
]


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("f", ITERATING, ids=lambda f: f.__name__)
def test_hessians_of_code_that_iterates_sorts_and_indexes(f, engine):
    X = np.array([[2.5, 1.2], [3.1, 2.2], [1.7, 2.9]])
    H = cr.hessian(f, X, engine=engine)
    assert type(H) is np.ndarray and H.shape == X.shape + X.shape
    reference = crt.fd_jacobian(lambda Z: cr.gradient(f, Z, engine=engine)[0], X)
    np.testing.assert_allclose(H.reshape(X.size, X.size), reference, rtol=1e-6, atol=1e-8)


def _written_copy(x):
    y = x.copy()
    y[0] = x[1] * x[2]
    return np.sum(y**2 * x)


def _written_buffer(x):
    out = np.zeros_like(x)
    out[1:] = np.sin(x[:-1])
    return np.sum(out * x)


def _constant_written(x):
    y = x.copy()
    y[0] = 5.0
    return np.sum(y**2 * x)


@pytest.mark.parametrize("f", [_written_copy, _written_buffer, _constant_written])
def test_hessian_of_code_that_writes_into_a_copy_or_a_buffer(f):
    # the source engine's write into an array runs on a dual array and pulls back a dual cotangent
    x = np.array([0.3, 1.2, -0.7, 2.0])
    H = cr.hessian(f, x, engine="source")
    np.testing.assert_allclose(H, crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x), atol=1e-7)


def test_a_row_of_a_dual_buffer_adds_a_dual_in_place():
    tag = Tag()
    d = Dual(np.ones(2), np.full(2, 3.0), tag)
    buffer = np.zeros_like(d, shape=(3, 2))
    buffer[1] += d
    buffer[1] += d
    np.testing.assert_array_equal(buffer.primal, [[0, 0], [2, 2], [0, 0]])
    np.testing.assert_array_equal(buffer.partials, [[0, 0], [6, 6], [0, 0]])
    row = buffer[0]
    assert isinstance(row, Dual) and row.tag is tag  # a part of a writable buffer stays a dual


def test_rows_cotangent_keeps_duals_and_fills_zeros():
    tag = Tag()
    X = Dual(np.ones((3, 2)), np.zeros((3, 2)), tag)
    rows = [cr.ZeroTangent(), Dual(np.array([1.0, 2.0]), np.array([0.5, 0.25]), tag)]
    d = cr.core.rows_cotangent(X, rows)
    assert isinstance(d, Dual) and d.tag is tag
    np.testing.assert_array_equal(d.primal, [[0, 0], [1, 2], [0, 0]])
    np.testing.assert_array_equal(d.partials, [[0, 0], [0.5, 0.25], [0, 0]])
    assert cr.core.is_array_of_rows(X) and not cr.core.is_array_of_rows(Dual(1.0, 1.0, tag))


def _array_of_scalars(x):
    return np.sum(np.array([x[0] ** 2, x[0] * x[1], 3.0]) ** 2)


def _asarray_of_scalars(x):
    return np.sum(np.asarray([x[0] ** 2, x[1]]) * x)


def _nested_array_with_dtype(x):
    M = np.array([[x[0], x[1] ** 2], [1.0, x[0] * x[1]]], dtype=np.float64)
    return np.sum(M @ M)


@pytest.mark.parametrize(
    "f", [_array_of_scalars, _asarray_of_scalars, _nested_array_with_dtype], ids=lambda f: f.__name__
)
def test_hessian_of_an_array_built_from_differentiated_scalars(f):
    """The source engine sees ``np.array([...])`` and takes its rule, whose value stacks the duals
    forward mode passes through the reverse pass (converting them would drop their partials)."""
    x = np.array([1.5, 2.0])
    H = cr.hessian(f, x)
    reference = crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x)
    np.testing.assert_allclose(H, reference, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_and_second_derivative_at_integer_inputs(engine):
    # a dual of an integer is an input like the integer itself: float derivatives, not NoTangent()
    def cube_sum(x):
        return np.sum(x**3)

    assert cr.hessian(lambda x: x**3, 2, engine=engine) == 12.0
    np.testing.assert_allclose(cr.hessian(cube_sum, np.array([1, 2]), engine=engine), np.diag([6.0, 12.0]))
    assert cr.derivative(lambda x: cr.gradient(lambda y: y**3, x, engine=engine)[0], 2) == 12.0
    np.testing.assert_allclose(
        cr.hessian(cube_sum, np.array([1, 2]), engine=engine),
        crt.fd_jacobian(lambda x: 3.0 * x**2, np.array([1.0, 2.0])),
    )


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_of_float32_stays_float32(engine):
    x = np.array([1.0, 2.0, -0.5], dtype=np.float32)

    def f(x):
        return np.sum(np.sin(x) * x**3)

    H = cr.hessian(f, x, engine=engine)
    assert H.dtype == np.float32
    expected = crt.fd_jacobian(lambda z: cr.gradient(f, z, engine=engine)[0], x.astype(np.float64))
    np.testing.assert_allclose(H, expected, rtol=1e-4, atol=1e-4)
    _, dg = cr.jvp(lambda z: cr.gradient(f, z, engine=engine)[0], (x,), (np.ones(3, np.float32),))
    assert dg.dtype == np.float32


def dirichlet_log_normaliser(alpha):
    s = float(np.sum(alpha))  # a plain float where alpha is plain; the dual itself under a Hessian
    return math.lgamma(s) - sum(math.lgamma(a) for a in alpha) + math.exp(float(alpha[0]) / 4)


def test_math_of_float_of_a_value_being_differentiated_in_every_mode():
    """The source engine takes float() of an engine's value (a dual, a tracked number) as that
    value, so the math call after it goes through its rule: Hessians, forward mode and a tape over
    the source engine differentiate it (a plain float there was converted, and refused)."""
    from scipy.special import polygamma

    alpha = np.array([1.5, 2.5, 0.7])
    grad = cr.gradient(dirichlet_log_normaliser, alpha)[0]
    expected_hessian = polygamma(1, alpha.sum()) - np.diag(polygamma(1, alpha))
    expected_hessian[0, 0] += math.exp(alpha[0] / 4) / 16
    np.testing.assert_allclose(cr.jacobian(dirichlet_log_normaliser, alpha, mode="forward"), grad, rtol=1e-12)
    np.testing.assert_allclose(cr.hessian(dirichlet_log_normaliser, alpha), expected_hessian, rtol=1e-10)
    by_tape = cr.gradient(lambda a: np.sum(cr.gradient(dirichlet_log_normaliser, a)[0]), alpha, engine="tape")[0]
    np.testing.assert_allclose(by_tape, expected_hessian.sum(axis=0), rtol=1e-10)


TABLE = np.array([0.0, 1.0, 4.0, 9.0, 16.0])


def table_lookup(t):  # linear interpolation in a lookup table: int() picks the segment
    i = int(t)
    frac = t - i
    return TABLE[i] * (1 - frac) + TABLE[i + 1] * frac


def babylonian(c):  # iterated until math.isclose says it converged
    z, z_old = c, 0.0
    while not math.isclose(z, z_old, rel_tol=1e-14):
        z_old = z
        z = 0.5 * (z + c / z)
    return z


def test_functions_without_a_derivative_compute_on_an_engines_values():
    """``int(t)`` and ``math.isclose`` carry no derivative: under a Hessian and forward mode (the
    source engine's primal on dual numbers) they compute on the values, as in reverse mode."""
    assert cr.derivative(table_lookup, 2.3) == pytest.approx(5.0)
    assert cr.hessian(table_lookup, 2.3) == pytest.approx(0.0)
    assert cr.derivative(babylonian, 2.0) == pytest.approx(0.5 / math.sqrt(2.0))
    assert cr.hessian(babylonian, 2.0) == pytest.approx(-0.25 * 2.0**-1.5)
