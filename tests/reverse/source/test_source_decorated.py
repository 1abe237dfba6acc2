"""Functions wrapped by decorators (``functools.wraps``): the source engine differentiates the
wrapper's own code with the wrapper's own signature (``inspect.signature`` would report the
wrapped function's, through ``__wrapped__``: the gradient of ``*args`` had been a silent zero).
Gradients are checked against finite differences and the tape."""

import functools

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source
from chainrules.testing import fd_jacobian


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 2.0

    return wrapper


def swapped(fn):
    @functools.wraps(fn)
    def wrapper(a, b):
        return fn(b, a)

    return wrapper


def scaled(s):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x, *rest, scale=s):
            return fn(x * scale, *rest)

        return wrapper

    return decorate


class Shifted:
    """A class decorator: the instance is the callable, with the function's name and doc."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        return self.fn(*args) + 1.0


@doubled
def sine_times(x, y=1.0):
    return np.sin(x) * y


@doubled
@scaled(3.0)
def stacked(x, y=1.0):
    return np.sin(x) * y


@doubled
def weighted_sines(x, w):
    return np.sum(np.sin(x) * w)


@swapped
def squared_times(a, b):
    return a**2 * b


@Shifted
def cubed(x):
    return x**3


CASES = [
    (sine_times, (0.7,)),
    (sine_times, (0.7, 2.0)),
    (stacked, (0.7, 2.0)),
    (squared_times, (0.7, 1.3)),
    (cubed, (0.7,)),
    (weighted_sines, (np.array([0.3, 1.2]), np.array([2.0, -1.0]))),
]


@pytest.mark.parametrize("f, args", CASES, ids=lambda v: getattr(v, "__name__", None))
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_gradients_of_decorated_functions(f, args, engine):
    grads = cr.gradient(f, *args, engine=engine)  # (each positional argument's)
    for i, g in enumerate(grads):
        expected = fd_jacobian(lambda v, i=i: f(*args[:i], v, *args[i + 1 :]), args[i])
        np.testing.assert_allclose(g, np.reshape(expected, np.shape(args[i])), rtol=1e-7, atol=1e-9)


def test_the_wrapper_keeps_its_own_signature():
    y, back = source.pullback_full(sine_times, 0.7)
    assert y == pytest.approx(2 * np.sin(0.7))
    assert back(1.0)[1] == pytest.approx(2 * np.cos(0.7))  # (was ZeroTangent())
    assert "def wrapper_primal(*args, **kwargs):" in cr.show(sine_times, 0.7)


# ----- decorated nested functions: `name = decorator(function)` after the `def` ----------------


def times(k):
    """A decorator with an argument, which the wrapper captures (it may carry a derivative)."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(v):
            return k * fn(v)

        return wrapper

    return decorate


def nested_doubled(x, a):
    @doubled
    def g(v):
        return np.sin(a * v)

    return np.sum(g(x) * x)


def plus(c):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(v):
            return fn(v) + c

        return wrapper

    return decorate


def nested_stacked(x, a):
    @plus(a)
    @times(3.0)
    @doubled
    @cr.checkpoint
    def g(v):
        return np.sin(a * v) * v

    return np.sum(g(x) ** 2)


def nested_with_argument(x, a):
    @times(a * a)  # evaluated before the `def`, as the decorator expression
    def g(v):
        return a * v**2

    return np.sum(g(x))


NESTED = [nested_doubled, nested_stacked, nested_with_argument]
XA = (np.array([0.3, -1.1]), 0.7)


def _finite_differences(f, args):
    return [
        np.reshape(fd_jacobian(lambda v, i=i: f(*args[:i], v, *args[i + 1 :]), args[i]), np.shape(args[i]))
        for i in range(len(args))
    ]


@pytest.mark.parametrize("f", NESTED, ids=lambda f: f.__name__)
def test_decorated_nested_functions_against_finite_differences_and_the_tape(f):
    y, back = source.pullback_full(f, *XA)  # (was refused: "a decorated nested function is not supported")
    assert y == pytest.approx(f(*XA))
    _, *grads = back(1.0)
    tape = cr.gradient(f, *XA, engine="tape")
    for g, t, e in zip(grads, tape, _finite_differences(f, XA)):
        np.testing.assert_allclose(g, e, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-14)


ORDER = []


def tag(name):
    ORDER.append(f"evaluate {name}")

    def decorate(fn):
        ORDER.append(f"apply {name}")
        return fn

    return decorate


def test_decorators_are_evaluated_first_and_applied_bottom_up():
    def f(x):
        @tag("outer")
        @tag("inner")
        def g(v):  # (captures nothing differentiated: the decorators run as plain calls)
            return v * v

        return g(x)

    ORDER.clear()
    _, back = source.pullback_full(f, 1.5)
    assert ORDER == ["evaluate outer", "evaluate inner", "apply inner", "apply outer"]
    assert back(1.0)[1] == 3.0


def test_a_decorator_the_engine_cannot_see_through_is_refused_not_a_zero():
    def cached(x, a):
        @functools.lru_cache(maxsize=8)
        def g(v):
            return a * v**2

        return g(x)

    with pytest.raises(cr.NoRuleError, match=r"lru_cache.*test_source_decorated\.py:\d+"):
        source.pullback_full(cached, 0.3, 0.7)


def test_a_decorated_nested_function_calling_itself_is_refused():
    def power(x, a):
        @doubled
        def p(v, n):
            return v if n == 0 else a * p(v, n - 1)

        return p(x, 2)

    with pytest.raises(cr.UnsupportedSyntaxError, match="decorated nested function `p` calls itself"):
        source.pullback_full(power, 0.3, 0.7)
    dx, da = cr.gradient(power, 0.3, 0.7)  # on the tape: power is 8 a**2 x
    assert (dx, da) == (pytest.approx(8 * 0.7**2), pytest.approx(16 * 0.7 * 0.3))


def test_the_wrapped_function_read_through_dunder_wrapped_gets_its_cotangent():
    def f(x, a):
        @doubled
        def g(v):
            return a * v

        return g.__wrapped__(x) + g(x)  # 3 a x

    _, dx, da = source.pullback_full(f, 0.3, 0.7)[1](1.0)  # (da was 0.6 while a function had no fields)
    assert (dx, da) == (pytest.approx(3 * 0.7), pytest.approx(3 * 0.3))


def test_update_wrapper_as_a_statement_is_refused_as_a_write_and_the_tape_differentiates_it():
    def f(x, a):
        def g(v):
            return a * v

        def h(v):
            return v

        functools.update_wrapper(h, g)  # gives h its `__wrapped__` in place
        return h.__wrapped__(x)

    with pytest.raises(cr.UnsupportedSyntaxError, match=r"update_wrapper.*changes `h` in place"):
        source.pullback_full(f, 1.5, 0.7)
    expected = (fd_jacobian(lambda x: f(x, 0.7), 1.5)[0, 0], fd_jacobian(lambda a: f(1.5, a), 0.7)[0, 0])
    for engine in ("source", "tape"):  # (engine="source" falls back to the tape, as for any refusal)
        assert cr.gradient(f, 1.5, 0.7, engine=engine) == pytest.approx(expected)  # (a's had been a zero)
