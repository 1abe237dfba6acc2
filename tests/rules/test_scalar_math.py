"""The ``math`` and ``cmath`` rules against finite differences, one row per function."""

import cmath
import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian, test_frule, test_rrule, test_scalar

# function, points (each a tuple of arguments)
REAL = [
    (math.sin, [(0.3,), (-2.0,)]),
    (math.cos, [(0.3,), (-2.0,)]),
    (math.tan, [(0.3,), (-1.2,)]),
    (math.asin, [(0.3,), (-0.8,)]),
    (math.acos, [(0.3,), (-0.8,)]),
    (math.atan, [(0.3,), (-4.0,)]),
    (math.sinh, [(0.3,), (-2.0,)]),
    (math.cosh, [(0.3,), (-2.0,)]),
    (math.tanh, [(0.3,), (-2.0,)]),
    (math.asinh, [(0.3,), (-2.0,)]),
    (math.acosh, [(1.3,), (4.0,)]),
    (math.atanh, [(0.3,), (-0.7,)]),
    (math.degrees, [(0.3,)]),
    (math.radians, [(30.0,)]),
    (math.exp, [(0.3,), (-2.0,)]),
    (math.exp2, [(0.3,), (-2.0,)]),
    (math.expm1, [(1e-3,), (-2.0,)]),
    (math.log, [(0.3,), (5.0,), (5.0, 2.0), (0.3, 10.0)]),
    (math.log2, [(0.3,), (5.0,)]),
    (math.log10, [(0.3,), (5.0,)]),
    (math.log1p, [(0.3,), (-0.5,)]),
    (math.sqrt, [(0.3,), (5.0,)]),
    (math.cbrt, [(0.3,), (-5.0,)]),
    (math.erf, [(0.3,), (-1.5,)]),
    (math.erfc, [(0.3,), (-1.5,)]),
    (math.gamma, [(0.3,), (4.5,), (-1.5,)]),
    (math.lgamma, [(0.3,), (4.5,), (-1.5,)]),
    (math.fabs, [(0.3,), (-2.0,)]),
    (math.pow, [(1.3, 2.5), (0.7, -1.5)]),
    (math.atan2, [(0.3, 1.2), (-1.0, -0.5)]),
    (math.hypot, [(3.0, -4.0), (0.3, 1.2, -2.0), (2.5,)]),
    (math.copysign, [(1.5, -2.0), (-1.5, -2.0), (1.5, 3.0)]),
    (math.fmod, [(7.5, 2.0), (-7.5, 2.0), (7.3, -2.5)]),
    (math.remainder, [(7.4, 2.0), (-7.4, 2.0), (5.2, -1.5)]),
    (math.ldexp, [(1.3, 3), (-0.7, -2)]),
    (math.nextafter, [(1.3, 2.0)]),
    (math.dist, [((1.0, 2.0, 3.0), (0.5, -1.0, 2.0)), ([1.0, 2.0], [0.0, 4.0])]),
    (math.fsum, [([0.1, 0.2, 0.3],), ((1.5, -2.0),)]),
    (math.prod, [([1.5, -2.0, 0.5],), ((2.0, 0.0, 3.0),), ([1.5, 0.0, 0.0],)]),
    (math.frexp, [(10.3,), (-0.3,)]),
    (math.modf, [(10.3,), (-2.7,)]),
]

# holomorphic on the complex plane; phase and polar are real-valued (the gradient convention)
COMPLEX = [
    (cmath.exp, [(0.3 + 0.4j,), (0.5,)]),
    (cmath.log, [(0.3 + 0.4j,), (-2.0 + 0.5j,), (0.3 + 0.4j, 2.0), (2.0 + 1j, 1.5 - 0.5j)]),
    (cmath.log10, [(0.3 + 0.4j,)]),
    (cmath.sqrt, [(0.3 + 0.4j,), (-2.0 + 0.5j,)]),
    (cmath.sin, [(0.3 + 0.4j,), (1.2,)]),
    (cmath.cos, [(0.3 + 0.4j,)]),
    (cmath.tan, [(0.3 + 0.4j,)]),
    (cmath.asin, [(0.3 + 0.4j,)]),
    (cmath.acos, [(0.3 + 0.4j,)]),
    (cmath.atan, [(0.3 + 0.4j,)]),
    (cmath.sinh, [(0.3 + 0.4j,)]),
    (cmath.cosh, [(0.3 + 0.4j,)]),
    (cmath.tanh, [(0.3 + 0.4j,)]),
    (cmath.asinh, [(0.3 + 0.4j,)]),
    (cmath.acosh, [(0.3 + 0.4j,), (-2.0 - 0.5j,)]),
    (cmath.atanh, [(0.3 + 0.4j,)]),
    (cmath.phase, [(0.3 + 0.4j,), (-2.0 - 0.5j,)]),
    (cmath.polar, [(0.3 + 0.4j,), (-2.0 - 0.5j,)]),
    (cmath.rect, [(1.5, 0.4), (0.5, -2.0)]),
]

NONDIFF = [
    (math.floor, (2.5,)),
    (math.ceil, (2.5,)),
    (math.trunc, (-2.5,)),
    (math.isnan, (2.5,)),
    (math.isinf, (2.5,)),
    (math.isfinite, (2.5,)),
    (math.isclose, (2.5, 2.5)),
    (math.factorial, (5,)),
    (math.comb, (5, 2)),
    (math.perm, (5, 2)),
    (math.gcd, (12, 18)),
    (math.lcm, (4, 6)),
    (math.isqrt, (17,)),
    (math.ulp, (2.5,)),
    (cmath.isnan, (1 + 2j,)),
    (cmath.isinf, (1 + 2j,)),
    (cmath.isfinite, (1 + 2j,)),
    (cmath.isclose, (1 + 2j, 1 + 2j)),
]


def _rows(table):
    return [pytest.param(f, args, id=f"{f.__module__}.{f.__name__}{args}") for f, points in table for args in points]


def _is_scalar_call(f, args):
    """One number in, one number out: a scalar function for test_scalar."""
    return len(args) == 1 and isinstance(args[0], (float, complex)) and isinstance(f(*args), (float, complex))


@pytest.mark.parametrize("f, args", [p for p in _rows(REAL) + _rows(COMPLEX) if _is_scalar_call(*p.values)])
def test_scalar_functions(f, args):
    test_scalar(f, *args)


@pytest.mark.parametrize("f, args", [p for p in _rows(REAL) + _rows(COMPLEX) if not _is_scalar_call(*p.values)])
def test_rules_match_finite_differences(f, args):
    test_rrule(f, *args)
    test_frule(f, *args)


@pytest.mark.parametrize("f, args", [pytest.param(f, a, id=f"{f.__module__}.{f.__name__}") for f, a in NONDIFF])
def test_non_differentiable(f, args):
    y, back = cr.rrule(f, *args)
    assert y == f(*args)
    assert back(1.0) == (cr.NoTangent(),) * (1 + len(args))
    assert cr.frule((cr.NoTangent(),) * (1 + len(args)), f, *args) == (f(*args), cr.NoTangent())


@pytest.mark.parametrize(
    "f, x, slope",
    [(math.sqrt, 0.0, math.inf), (math.cbrt, 0.0, math.inf), (math.asin, 1.0, math.inf), (math.acos, -1.0, -math.inf)],
)
def test_unbounded_slopes_are_infinite_not_errors(f, x, slope):
    assert cr.rrule(f, x)[1](1.0)[1] == slope


@pytest.mark.parametrize(
    "f, args, expected",
    [
        (math.fabs, (0.0,), (0.0,)),  # sign(0) = 0, as ChainRules' abs
        (math.atan2, (0.0, 0.0), (0.0, 0.0)),
        (math.hypot, (0.0, 0.0), (0.0, 0.0)),
        (math.dist, ((1.0, 2.0), (1.0, 2.0)), (cr.ZeroTangent(), cr.ZeroTangent())),
        (math.pow, (0.0, 2.0), (0.0, 0.0)),  # zero base: finite partials
        (math.pow, (0.0, 0.0), (0.0, 0.0)),
        (math.pow, (0.0, 0.5), (math.inf, 0.0)),
        # negative base (an integer exponent): the exponent's partial is the real part, y log|a|
        (math.pow, (-2.0, 3.0), (12.0, -8.0 * math.log(2.0))),
        (math.copysign, (2.0, 3), (1.0, cr.NoTangent())),  # an integer sign argument gets NoTangent
        (math.ldexp, (1.5, 3), (8.0, cr.NoTangent())),
    ],
)
def test_conventions_at_special_points(f, args, expected):
    assert cr.rrule(f, *args)[1](1.0)[1:] == expected


@pytest.mark.parametrize(
    "f, args",
    [
        (math.sin, (2,)),
        (math.exp, (1,)),
        (math.sqrt, (4,)),
        (math.log, (3, 2)),
        (math.atan2, (1, 2)),
        (math.hypot, (3, 4)),
    ],
)
def test_integer_inputs_get_float_derivatives(f, args):
    grads = cr.rrule(f, *args)[1](1.0)[1:]
    floats = cr.rrule(f, *map(float, args))[1](1.0)[1:]
    assert all(type(g) is float for g in grads) and grads == floats


def test_sin_and_cos_frules_take_a_batch_of_tangents():
    batch = np.array([1.0, 2.0, -1.0])
    assert np.allclose(cr.frule((cr.NoTangent(), batch), math.sin, 0.3)[1], math.cos(0.3) * batch)
    assert np.allclose(cr.frule((cr.NoTangent(), batch), math.exp, 0.3)[1], math.exp(0.3) * batch)
    assert cr.frule.lookup(math.sin, (0.3,)).batched


def test_complex_cotangent_of_a_real_input_is_projected():
    assert cr.rrule(math.sin, 0.3)[1](2.0 + 5.0j)[1] == 2.0 * math.cos(0.3)


def test_cmath_phase_gradient_convention():
    # phase(x + iy) = atan2(y, x): the gradient is d/dx + i d/dy = (-y + i x) / |z|^2
    z = 3.0 + 4.0j
    assert cmath.isclose(cr.rrule(cmath.phase, z)[1](1.0)[1], (-4.0 + 3.0j) / 25.0)


def test_prod_with_zeros_and_arrays():
    # zeros among the factors are exact (prefix and suffix products, no division)
    assert cr.rrule(math.prod, [2.0, 0.0, 0.0])[1](1.0)[1] == cr.Tangent[list](0.0, 0.0, 0.0)
    a, b = np.array([1.0, 2.0]), np.array([[3.0], [4.0]])
    test_rrule(math.prod, [a, b])
    da, db = cr.rrule(math.prod, [a, b])[1](np.ones((2, 2)))[1]
    assert np.array_equal(da, [7.0, 7.0]) and np.array_equal(db, [[3.0], [3.0]])


def test_sequence_rules_refuse_iterators():
    with pytest.raises(cr.NoRuleError, match="math.fsum"):
        cr.rrule(math.fsum, iter([1.0, 2.0]))


def test_sequences_of_numbers_keep_integers_out():
    test_rrule(math.fsum, [1.5, 2, 3.0])
    grads = cr.rrule(math.fsum, [1.5, 2, 3.0])[1](2.0)
    assert grads == (cr.NoTangent(), cr.Tangent[list](2.0, cr.NoTangent(), 2.0))
    assert isinstance(grads[1][1], cr.NoTangent)


@pytest.mark.parametrize("x", [0.7, 3])
def test_scalar_rules_for_int_and_float(x):
    test_scalar(math.tanh, x)


def _expish(x):
    return np.exp(x)


cr.scalar_rule(_expish, lambda x, *, out: out)


@pytest.mark.parametrize(
    "x, seed",
    [
        (0.5, 2.0),
        (0.5, np.float64(2.0)),
        (0.5, 2),
        (0.5, 2.0 + 1.0j),
        (0.5, cr.Thunk(lambda: 2.0)),
        (1, 2.0),
        (np.float32(0.5), 2.0),
        (0.5 + 0.25j, 2.0 - 1.0j),
        (np.array([0.5, 1.0]), np.array([2.0, 3.0])),
    ],
)
def test_one_argument_scalar_rules_fast_and_general_paths_agree(x, seed):
    # a float input with a float seed takes scalar_rule's fast path; every other kind the general one
    expected = cr.match_input(x, cr.unthunk(seed) * np.conj(np.exp(x)))
    got = cr.rrule(_expish, x)[1](seed)[1]
    assert type(got) is type(expected) and np.allclose(got, expected)
    assert cr.iszero(cr.rrule(_expish, x)[1](cr.ZeroTangent())[1])
    y, dy = cr.frule((cr.NoTangent(), seed), _expish, x)
    assert np.allclose(dy, cr.match_input(y, np.exp(x) * cr.unthunk(seed)))  # a real output's tangent is real


@pytest.mark.parametrize(
    "f, args",
    [
        (math.sin, (0.3,)),
        (math.cos, (0.3,)),
        (math.log, (0.3,)),
        (math.log, (5.0, 2.0)),
        (math.pow, (1.3, 2.5)),
        (math.hypot, (0.3, 1.2, -2.0)),
        (math.atan2, (0.3, 1.2)),
        (cmath.log, (0.3 + 0.4j, 2.0)),
        (cmath.rect, (1.5, 0.4)),
        (abs, (-1.5,)),
        (abs, (3.0 - 4.0j,)),
        (float, (3,)),
        (complex, (1.5, -2.0)),
        (pow, (1.5, 2.5)),
    ],
)
def test_batched_frules_equal_one_call_per_tangent(f, args):
    rule = cr.frule.lookup(f, args)
    assert rule.batched
    rng = np.random.default_rng(3)
    batch = [rng.standard_normal(4) * (1 + 1j if isinstance(a, complex) else 1) for a in args]
    _, dy = rule((cr.NoTangent(), *batch), *args)
    for k in range(4):
        assert np.allclose(dy[k], rule((cr.NoTangent(), *(b[k] for b in batch)), *args)[1])


# ----- edge cases found by fuzzing (tests/fuzz/fuzz_rules.py) ---------------------------------


def test_rect_of_numpy_numbers_is_a_python_complex():
    r, phi = np.float64(0.9), 1.4
    assert type(cr.rrule(cmath.rect, r, phi)[0]) is complex
    assert type(cr.frule((cr.NoTangent(), 1.0, 0.0), cmath.rect, r, phi)[0]) is complex
    test_rrule(cmath.rect, r, phi)
    test_frule(cmath.rect, r, phi)


@pytest.mark.parametrize("f", [math.cosh, math.erf, math.exp2, math.fabs, math.radians])
def test_tangent_of_a_python_float_is_a_float(f):
    """math functions return a Python float for a float32 input: its tangent is a float too."""
    _, dy = cr.frule((cr.NoTangent(), np.float32(1.0)), f, np.float32(0.7))
    assert type(dy) is float
    test_frule(f, np.float32(0.7))


@pytest.mark.parametrize("f", [math.sin, math.cos, math.frexp, math.modf, cmath.polar])
def test_numpy_float32_in_python_float_out(f):
    """The input's cotangent keeps its type (float32), the output's tangent is a float like the output."""
    x = np.float32(0.7)
    _, back = cr.rrule(f, x)
    y, dy = cr.frule((cr.NoTangent(), np.float32(1.0)), f, x)
    seed = 1.0 if isinstance(y, float) else cr.Tangent[tuple](1.0, 0.0)
    assert type(cr.unthunk(back(seed)[1])) is np.float32
    assert all(
        type(d) is float
        for d in (dy.backing if isinstance(dy, cr.Tangent) else (dy,))
        if d != cr.ZeroTangent() and d != cr.NoTangent()
    )
    test_rrule(f, x)
    test_frule(f, x)


def test_fsum_of_values_being_differentiated_twice_or_forward():
    """``math.fsum`` of a Hessian's dual numbers, or of forward mode's run through the source
    engine: the rule adds them in order (fsum would convert them to floats, and had raised)."""
    x = np.array([0.3, -1.2, 2.0])

    def f(v):
        return math.fsum([v[0] * v[1], v[2] ** 3, math.sin(v[0])])

    expected = np.array([x[1] + math.cos(x[0]), x[0], 3 * x[2] ** 2])
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-12)
    H = np.array([[-math.sin(x[0]), 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 6 * x[2]]])
    np.testing.assert_allclose(cr.hessian(f, x), H, rtol=1e-12, atol=1e-15)


def test_dist_of_values_being_differentiated_twice_or_forward():
    """``math.dist`` of a Hessian's dual numbers, or of forward mode's run through the source
    engine: the rule takes the norm of the differences by their own arithmetic (math.dist would
    convert them to floats, and had raised)."""
    x = np.array([0.3, 1.0, -0.4])

    def f(v):
        return math.dist((v[0], v[1]), (v[2], 0.5))

    d = math.dist((x[0], x[1]), (x[2], 0.5))
    u = np.array([x[0] - x[2], x[1] - 0.5]) / d
    expected = np.array([u[0], u[1], -u[0]])
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-12)
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-12)
    np.testing.assert_allclose(cr.hessian(f, x), fd_jacobian(lambda z: cr.gradient(f, z)[0], x), rtol=1e-6, atol=1e-8)


def test_hypot_of_three_and_rounding_of_values_being_differentiated_twice_or_forward():
    """``math.hypot(x, y, z)`` on dual numbers is NumPy's two-argument hypot folded over the
    arguments (its rule had been given z as ``out=``), and ``math.trunc``/``floor``/``ceil`` of a
    dual number are integers, as their rules give (math.trunc had raised: a dual had no ``__trunc__``)."""
    x = np.array([0.3, 1.1, -0.7])

    def f(v):
        return math.hypot(v[0], 2.0 * v[1], v[2]) * v[0] + math.trunc(3.0 * v[1]) * v[2] + math.ceil(v[2]) * v[0]

    h = math.hypot(x[0], 2.0 * x[1], x[2])
    expected = np.array([x[0] ** 2 / h + h + math.ceil(x[2]), 4.0 * x[1] * x[0] / h, x[2] * x[0] / h + 3.0])
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-12)
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-12)
    np.testing.assert_allclose(cr.hessian(f, x), fd_jacobian(lambda z: cr.gradient(f, z)[0], x), rtol=1e-6, atol=1e-8)
    assert type(cr.jvp(math.floor, (2.5,), (1.0,))[0]) is int


# ----- cmath.asin, cmath.acos (and asinh, acosh) on their branch cuts ---------------------------


def _fd_along(f, z: complex, d: complex, h: float = 1e-6) -> complex:
    """The derivative of ``f`` at ``z`` along ``d`` (1 or 1j), moving only that part of ``z``: the
    other keeps its sign of zero, and so its side of a branch cut."""

    def moved(t):
        return complex(z.real + t, z.imag) if d == 1 else complex(z.real, z.imag + t)

    return (f(moved(h)) - f(moved(-h))) / (2 * h)


_CUT_POINTS = [(x, im) for x in (1.4, -1.4, 0.3) for im in (0.0, -0.0, 1e-9, -1e-9)]


@pytest.mark.parametrize("f", [cmath.asin, cmath.acos, cmath.acosh, cmath.asinh, cmath.atanh])
@pytest.mark.parametrize("x, im", _CUT_POINTS, ids=lambda v: repr(v))
def test_cmath_inverse_trig_derivatives_on_both_sides_of_the_cuts(f, x, im):
    """Along the cut (the real axis; the imaginary one for asinh), the derivative of the side that
    cmath's value is on: ``x + 0j`` and ``x - 0j`` are on opposite sides for ``|x| > 1``."""
    d = 1j if f is cmath.asinh else 1
    z = complex(im, x) if f is cmath.asinh else complex(x, im)
    want = _fd_along(f, z, d)
    assert cmath.isclose(cr.derivative(f, z) * d, want, rel_tol=1e-6)
    assert cmath.isclose(cr.frule((cr.NoTangent(), d), f, z)[1], want, rel_tol=1e-6)


@pytest.mark.parametrize("f", [cmath.asin, cmath.acos, cmath.acosh])
@pytest.mark.parametrize("x", [1.4, -1.4, 0.3, 2.5, -3.0])
def test_cmath_inverse_trig_of_a_real_float(f, x):
    """A float ``x`` is ``x + 0j`` to cmath: past +-1 the upper side of the cut, whose derivative
    the finite differences along the real axis give (``cmath.acos(1.4)``: -1.02j, not +1.02j)."""
    h = 1e-6
    want = (f(x + h) - f(x - h)) / (2 * h)
    assert cmath.isclose(cr.derivative(f, x), want, rel_tol=1e-6)
    assert cmath.isclose(cr.frule((cr.NoTangent(), 1.0), f, x)[1], want, rel_tol=1e-6)
    fd = fd_jacobian(lambda t: f(t), x)  # (re, im) of the output along x
    assert cmath.isclose(cr.derivative(f, x), complex(fd[0, 0], fd[1, 0]), rel_tol=1e-6)


@pytest.mark.parametrize("f", [cmath.asin, cmath.acos])
@pytest.mark.parametrize("z", [1.4 + 0.1j, -1.4 - 0.1j, 1.4 - 0.1j, -1.4 + 0.1j])
def test_cmath_asin_acos_rules_near_the_cuts(f, z):
    test_rrule(f, z)
    test_frule(f, z)


def test_cmath_acos_gradient_of_a_real_loss_on_the_cut():
    """The gradient of ``Im acos(x)`` at a real float ``x > 1``: d/dx Im acos(x + 0j) = -1/sqrt(x^2 - 1)."""
    g = cr.gradient(lambda x: cmath.acos(x).imag, 1.4)[0]
    assert math.isclose(g, -1 / math.sqrt(1.4**2 - 1), rel_tol=1e-12)
    g = cr.gradient(lambda x: cmath.asin(x).imag, 1.4)[0]
    assert math.isclose(g, 1 / math.sqrt(1.4**2 - 1), rel_tol=1e-12)
