"""The seeds' examples, as outside code would write them in Python (`/work/shared/seeds/`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from contract_support import each_engine, ruled_ufunc

import chainrules as cr

# ----- seed 001: MicroGrad.jl ---------------------------------------------------------------


def f(a, b):
    return a / (a + b * b)


@each_engine
def test_seed_001_f_of_a_and_b(engine):
    z, back = cr.pullback(f, 2.0, 3.0, engine=engine)
    assert z == pytest.approx(0.1818, abs=1e-4)
    da, db = back(1.0)
    assert (round(da, 4), round(db, 4)) == (0.0744, -0.0992)  # the seed prints -0.099 and -0.0991 for -0.09917
    a, b = 2.0, 3.0
    assert da == pytest.approx(b**2 / (a + b**2) ** 2, rel=1e-14)
    assert db == pytest.approx(-2 * a * b / (a + b**2) ** 2, rel=1e-14)
    assert db == pytest.approx(-0.0991, abs=1e-4)


def sin_of_cos(x):
    return np.sin(np.cos(x))


@each_engine
def test_seed_001_sin_of_cos(engine):
    z, back = cr.pullback(sin_of_cos, 0.9, engine=engine)
    assert z == pytest.approx(0.5823, abs=1e-4)
    (dx,) = back(1.0)
    assert dx == pytest.approx(-0.6368, abs=1e-4)
    assert dx == pytest.approx(-math.cos(math.cos(0.9)) * math.sin(0.9), rel=1e-14)


def evalpoly(x, coeffs):
    """Horner's rule, as Julia's evalpoly: coeffs[0] + x * (coeffs[1] + x * (...))."""
    return coeffs[0] if len(coeffs) == 1 else coeffs[0] + x * evalpoly(x, coeffs[1:])


@dataclasses.dataclass
class Polynomial:
    weights: np.ndarray

    def __call__(self, x):
        if isinstance(x, np.ndarray) or getattr(x, "ndim", 0) > 0:  # the seed's map(m, x) for a vector
            return np.stack(list(map(self, x)))
        return evalpoly(x, self.weights)


@each_engine
def test_seed_001_polynomial_model_with_map(engine):
    model = Polynomial(np.array([3.0, 2.0, -3.0, 1.0]))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y, back = cr.pullback(model, x, engine=engine)
    np.testing.assert_allclose(y, [3.0, 3.0, 9.0, 27.0], rtol=1e-14)
    (dx,) = back(np.ones(4))
    np.testing.assert_allclose(dx, 2.0 - 6.0 * x + 3.0 * x**2, rtol=1e-14)

    dmodel, dx = cr.gradient(lambda m, x: np.sum(m(x)), model, x, engine=engine)
    assert type(dmodel) is cr.Tangent[Polynomial]
    np.testing.assert_allclose(dmodel.weights, [np.sum(x**k) for k in range(4)], rtol=1e-14)
    np.testing.assert_allclose(dx, 2.0 - 6.0 * x + 3.0 * x**2, rtol=1e-14)
    np.testing.assert_array_equal(model.weights, [3.0, 2.0, -3.0, 1.0])


# ----- seed 003: forward and reverse mode ------------------------------------------------------


def babysqrt(x, t=None, n=10):
    if t is None:
        t = (1 + x) / 2
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


@each_engine
@pytest.mark.parametrize("x", [0.1, 0.5, 1.0, 2.0])
def test_seed_003_babysqrt_derivative_is_one_over_twice_the_root(engine, x):
    (dx,) = cr.gradient(babysqrt, x, engine=engine)
    assert dx == pytest.approx(1 / (2 * math.sqrt(x)), rel=1e-8)


RULES_USED: list = []


def seed_f(x):
    return x**2


def seed_g(x):
    return np.sin(x)


def seed_h(x):
    return 5 * x


def foo(x):
    return seed_h(seed_g(seed_f(x)))


# the seed defines the three rules by hand
@cr.rrule.register(seed_f)
def rrule_seed_f(x):
    return seed_f(x), lambda dy: (cr.NoTangent(), 2 * x * dy)


@cr.rrule.register(seed_g)
def rrule_seed_g(x):
    return seed_g(x), lambda dy: (cr.NoTangent(), np.cos(x) * dy)


@cr.rrule.register(seed_h)
def rrule_seed_h(x):
    return seed_h(x), lambda dy: (cr.NoTangent(), 5 * dy)


@each_engine
@pytest.mark.parametrize("x", [-2.0, -0.3, 1.0, 1.7])
def test_seed_003_foo_is_five_sin_x_squared(engine, x):
    if engine == "tape":
        # the tape cannot intercept calls of Python functions: it refuses rather than differentiate
        # seed_f's body in place of its rule, and uses each rule for the function it is given
        with pytest.raises(cr.ChainRulesError, match="seed_f has a rule that the tape engine cannot use"):
            cr.pullback(foo, x, engine=engine)
        y_f, back_f = cr.pullback(seed_f, x, engine=engine)
        y_g, back_g = cr.pullback(seed_g, y_f, engine=engine)
        y, back_h = cr.pullback(seed_h, y_g, engine=engine)
        back = lambda dy: back_f(back_g(back_h(dy)[0])[0])  # noqa: E731
    else:
        y, back = cr.pullback(foo, x, engine=engine)
    assert y == pytest.approx(5 * math.sin(x**2), rel=1e-14)
    assert back(1.0)[0] == pytest.approx(10 * x * math.cos(x**2), rel=1e-13)


def test_seed_003_foo_through_the_hand_written_rules():
    y_f, back_f = cr.rrule(seed_f, 1.3)
    y_g, back_g = cr.rrule(seed_g, y_f)
    y_h, back_h = cr.rrule(seed_h, y_g)
    dx = back_f(back_g(back_h(1.0)[1])[1])[1]
    assert y_h == pytest.approx(5 * math.sin(1.3**2), rel=1e-14)
    assert dx == pytest.approx(10 * 1.3 * math.cos(1.3**2), rel=1e-13)


RNG = np.random.default_rng(3)


@each_engine
@pytest.mark.parametrize("N, M", [(3, 5), (5, 3), (4, 4)])
def test_seed_003_jacobian_of_wx_plus_b_squared(engine, N, M):
    W, b, x = RNG.standard_normal((N, M)), RNG.standard_normal(N), RNG.standard_normal(M)

    def layer(x):
        return (W @ x + b) ** 2

    analytic = 2 * (W @ x + b)[:, None] * W
    np.testing.assert_allclose(cr.jacobian(layer, x, mode="reverse", engine=engine), analytic, rtol=1e-12)
    if M >= N:  # mode="auto" picks reverse mode here
        np.testing.assert_allclose(cr.jacobian(layer, x, engine=engine), analytic, rtol=1e-12)


# ----- seed 004: accumulation -----------------------------------------------------------------


def sum_first_and_second(X):
    a = X[0]
    b = X[1]
    y = a + b
    return y


def mysum(X):
    total = 0.0
    for i in range(len(X)):
        total += X[i]
    return total


@each_engine
def test_seed_004_sum_first_and_second(engine):
    (dX,) = cr.gradient(sum_first_and_second, np.array([1.0, 2.0, 3.0]), engine=engine)
    np.testing.assert_array_equal(dX, [1.0, 1.0, 0.0])


@each_engine
def test_seed_004_mysum(engine):
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    (dX,) = cr.gradient(mysum, X[:, 0], engine=engine)
    np.testing.assert_array_equal(dX, [1.0, 1.0])
    y, back = cr.pullback(mysum, np.arange(100.0), engine=engine)
    assert y == 4950.0
    np.testing.assert_array_equal(back(3.0)[0], np.full(100, 3.0))


# ----- seed 002: tangent types --------------------------------------------------------------


def test_seed_002_zero_is_valid_for_every_primal():
    @dataclasses.dataclass
    class TimeSample:
        time: int
        value: float

    for primal in (1.5, np.ones(2), "text", TimeSample(3, 2.6e9), {"k": 1.0}, (1.0, "a")):
        moved = primal + cr.ZeroTangent()
        assert moved is primal
    assert cr.ZeroTangent() * np.ones(3) == cr.ZeroTangent()
    assert cr.add(cr.ZeroTangent(), cr.Tangent[TimeSample](value=1.0)) == cr.Tangent[TimeSample](value=1.0)


def test_seed_002_semi_structural_tangent():
    @dataclasses.dataclass
    class Stamp:
        millis: int

    @dataclasses.dataclass
    class TimeSample:
        time: Stamp
        value: float

    # the rule author gives the time field a natural tangent and the value a float
    t = cr.Tangent[TimeSample](time=cr.Tangent[Stamp](millis=5), value=0.5)
    moved = TimeSample(Stamp(100), 2.0) + t
    assert moved == TimeSample(Stamp(105), 2.5)
    doubled = cr.add(t, t)
    assert doubled.time.millis == 10 and doubled.value == 1.0


scaled_with_constant = ruled_ufunc(2)
CONSTANT_THUNKS = {"evaluated": 0}


@cr.rrule.register(scaled_with_constant)
def rrule_scaled_with_constant(x, c):
    def scaled_with_constant_pullback(dy):
        def dc():
            CONSTANT_THUNKS["evaluated"] += 1
            return np.sum(dy * x)

        return cr.NoTangent(), cr.Thunk(lambda: dy * c), cr.Thunk(dc)

    return x * c, scaled_with_constant_pullback


C = 3.0


@each_engine
def test_seed_002_a_thunk_nobody_uses_is_never_evaluated(engine):
    CONSTANT_THUNKS["evaluated"] = 0
    (dx,) = cr.gradient(lambda x: np.sum(scaled_with_constant(x, C)), np.array([1.0, 2.0]), engine=engine)
    np.testing.assert_array_equal(dx, [3.0, 3.0])
    assert CONSTANT_THUNKS["evaluated"] == 0


def sin_of_cos_math(x):
    return math.sin(math.cos(x))


def test_seed_001_sin_of_cos_with_the_math_module():
    # the tracing engine refuses math functions (they call float()); the default engine has their rules
    assert cr.gradient(sin_of_cos_math, 0.9)[0] == pytest.approx(-0.6368, abs=1e-4)


def test_seed_003_foo_uses_the_hand_written_rules():
    calls = []

    def traced_f(x):
        return x**2

    def traced_g(x):
        return math.sin(x)

    def traced_h(x):
        return 5 * x

    for fn, partial in ((traced_f, lambda x: 2 * x), (traced_g, math.cos), (traced_h, lambda x: 5.0)):

        @cr.rrule.register(fn)
        def rule(x, fn=fn, partial=partial):
            calls.append(fn.__name__)
            d = partial(x)
            return fn(x), lambda dy: (cr.NoTangent(), d * dy)

    def traced_foo(x):
        return traced_h(traced_g(traced_f(x)))

    (dx,) = cr.gradient(traced_foo, 1.3)
    assert dx == pytest.approx(10 * 1.3 * math.cos(1.3**2), rel=1e-13)
    assert calls == ["traced_f", "traced_g", "traced_h"]
