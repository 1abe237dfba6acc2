"""The Python the source engine differentiates (part 1: straight-line code, branches, calls,
recursion, closures, methods and structures), each checked against finite differences."""

import dataclasses
import math
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse.source import pullback_full


def check(fn, *args):
    crt.check_grads(fn, args, modes=("reverse",), order=1, engine="source")


def grads(fn, *args, dy=1.0, **kwargs):
    return pullback_full(fn, *args, **kwargs)[1](dy)


# ----- operators and branches -----------------------------------------------------------------


def arithmetic(x, y):
    return (x * y - x / y + x**3 - (-y) + x**2) / (1 + y**-2)


def comparisons_and_booleans(x, y):
    big = x > y
    both = x > 0 and y > 0
    z = x if big else y * 2
    w = (x > 0 and y) or x
    v = 0.5 < x <= 3.0 < y * 10
    return z * w + (2.0 if both and not v else 1.0) * x


def early_returns(x, y):
    if x > 2:
        return x * y
    if y > 1:
        if x < 0:
            return 0.0
        x = x * 3
    return x + y


def augmented(x, y):
    s = x
    s += y
    s *= x
    s -= 1.0
    s /= y
    s **= 2
    return s


def uses_a_global(x):
    return x * SCALE + math.pi


SCALE = 3.0


@pytest.mark.parametrize(
    "fn, args",
    [
        (arithmetic, (1.3, 0.7)),
        (comparisons_and_booleans, (1.5, 2.5)),
        (comparisons_and_booleans, (3.5, 2.5)),
        (comparisons_and_booleans, (-1.0, 0.2)),
        (early_returns, (1.5, 2.5)),
        (early_returns, (3.5, 2.5)),
        (early_returns, (-1.0, 2.5)),
        (early_returns, (1.0, 0.5)),
        (augmented, (1.5, 2.5)),
        (uses_a_global, (1.5,)),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_operators_and_branches(fn, args):
    check(fn, *args)


def test_integers_used_arithmetically_get_float_derivatives():
    _, dx, dy = grads(arithmetic, 2, 3)
    assert isinstance(dx, float) and isinstance(dy, float)
    crt.assert_approx((dx, dy), crt.fd_vjp(lambda a: arithmetic(*a), 1.0, (2.0, 3.0)))


def test_an_unused_argument_gets_a_zero_and_a_flag_no_tangent():
    def pick(x, y, flag):
        return x * 2.0 if flag else x

    assert grads(pick, 1.5, 2.5, True) == (cr.NoTangent(), 2.0, cr.ZeroTangent(), cr.NoTangent())


def test_constant_output_gives_zero_cotangents():
    def constant(x):
        return 1.0

    assert grads(constant, 2.0) == (cr.NoTangent(), cr.ZeroTangent())


# ----- calls --------------------------------------------------------------------------------


def helper(a, b=2.0, *, scale=1.0):
    return (a * b) * scale


def keywords_and_defaults(x, y):
    return helper(x) + helper(x, y) + helper(x, b=y) + helper(a=y, scale=x)


def starred(x, y):
    args = (x, y)
    kw = {"scale": y}
    return helper(*args) + helper(*args, **kw) + helper(x, *[y])


def variadic(*xs, **named):
    total = 0.0
    total = total + xs[0] * xs[1] + named["w"] * xs[-1]
    return total


def calls_variadic(x, y):
    return variadic(x, y, x, w=y)


def options(x, **settings):
    return x * settings.get("scale", 1.0) + settings.get("shift", x * x)


def reads_options(x, y):
    return options(x, scale=y) + options(y)


def fact_like(x, n):
    return x if n <= 1 else x * fact_like(x, n - 1)


def is_even(x, n):
    return x if n == 0 else is_odd(x * 1.5, n - 1)


def is_odd(x, n):
    return -x if n == 0 else is_even(x + 1.0, n - 1)


@pytest.mark.parametrize(
    "fn, args",
    [
        (keywords_and_defaults, (1.5, 2.5)),
        (starred, (1.5, 2.5)),
        (calls_variadic, (1.5, 2.5)),
        (reads_options, (1.5, 2.5)),
        (lambda x, y, z: variadic(x, y, z, w=x), (1.5, 2.5, 0.5)),
        (fact_like, (1.3, 5)),
        (is_even, (0.7, 5)),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_calls(fn, args):
    check(fn, *args)


def test_keyword_arguments_get_no_cotangent_at_the_api():
    y, back = cr.pullback(helper, 2.0, b=3.0, scale=0.5)
    assert y == 3.0 and back(1.0) == (1.5,)


def test_variadic_call_at_the_top():
    assert grads(variadic, 1.5, 2.5, 0.5, w=2.0)[1:] == pytest.approx((2.5, 1.5, 2.0))


# ----- closures, nested functions, lambdas ------------------------------------------------------


def make_affine(w, b):
    def affine(x):
        return w * x + b

    return affine


def nested_and_lambdas(x, y):
    def inner(a, *, scale=2.0):
        return a * scale + y

    square = lambda a: a * a  # noqa: E731
    return inner(x, scale=y) + inner(y) + square(x) + (lambda z: z * y)(x)


def recursive_inner(x, n):
    def walk(v, k):
        return v if k == 0 else walk(v * x, k - 1)

    return walk(1.0, n)


def closure_of_closure(x, w):
    scale = make_affine(w, 1.0)

    def twice(v):
        return scale(scale(v))

    return twice(x)


def lambdas_made_in_comprehensions(x, y):
    k = 10.0  # the comprehension's `k` is another variable; a lambda's default reads that one
    scaled = [lambda v, k=k: v * k for k in range(3)]
    return sum(f(x) for f in scaled) + sum([(lambda v: v * y)(x) for _ in range(2)]) + k * x


@pytest.mark.parametrize(
    "fn, args",
    [
        (nested_and_lambdas, (1.5, 2.5)),
        (lambdas_made_in_comprehensions, (1.5, 2.5)),
        (recursive_inner, (1.3, 4)),
        (closure_of_closure, (1.5, 0.5)),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_closures(fn, args):
    check(fn, *args)


def test_a_closure_gets_the_tangent_of_its_captured_variables():
    affine = make_affine(1.5, 0.25)
    y, back = pullback_full(affine, 2.0)
    df, dx = back(1.0)
    assert y == 3.25 and dx == 1.5
    assert isinstance(df, cr.Tangent) and df.w == 2.0 and df.b == 1.0


def test_a_plain_function_has_no_tangent():
    assert grads(arithmetic, 2.0, 1.0)[0] == cr.NoTangent()


# ----- methods and callable objects ------------------------------------------------------------


@dataclasses.dataclass
class Linear:
    w: float
    b: float

    def __call__(self, x):
        return self.w * x + self.b

    def twice(self, x):
        return self(x) + self.helper(x)

    def helper(self, x):
        return self.w * x * x

    @staticmethod
    def static_square(x):
        return x * x

    @classmethod
    def from_class(cls, x):
        return x * 3.0

    @property
    def slope(self):
        return self.w * 2.0

    def uses_all(self, x):
        return self.static_square(x) + self.from_class(x) + self.slope * x + Linear.helper(self, x)


def test_a_callable_object_gets_a_structural_tangent():
    model = Linear(2.0, 0.5)
    y, back = pullback_full(model, 3.0)
    dmodel, dx = back(1.0)
    assert y == 6.5 and dx == 2.0
    assert dmodel == cr.Tangent[Linear](w=3.0, b=1.0)


def test_bound_methods_static_class_methods_and_properties():
    model = Linear(2.0, 0.5)
    y, back = pullback_full(model.uses_all, 3.0)
    dmodel, dx = back(1.0)
    assert y == 9.0 + 9.0 + 12.0 + 18.0
    assert dx == pytest.approx(6.0 + 3.0 + 4.0 + 12.0)
    assert dmodel == cr.Tangent[Linear](w=6.0 + 9.0)
    check(lambda w, x: Linear(w, 0.5).twice(x), 2.0, 3.0)


Point = namedtuple("Point", "x y")


@dataclasses.dataclass
class Pair:
    first: float
    second: float


def structures(a, b):
    t = (a, b * 2)
    u, v = t
    (p, q), *rest = [(u, v), a, b]
    d = {"k": u, "j": v, **{"z": a}}
    point = Point(a, y=b)
    pair = Pair(first=a * b, second=b)
    return d["k"] * d["j"] + t[0] + point.x * point[1] + pair.first + rest[1] * p * q + d["z"]


def returns_a_structure(a, b):
    return {"sum": a + b, "pair": (a * b, Pair(a, b))}


def takes_structures(p, pair, items):
    x, y = p
    return x * pair.second + y * items[0] + items[1]["w"]


def test_structures():
    check(structures, 1.5, 2.5)


def test_structured_outputs_and_inputs():
    y, back = pullback_full(returns_a_structure, 2.0, 3.0)
    assert y == {"sum": 5.0, "pair": (6.0, Pair(2.0, 3.0))}
    dy = cr.Tangent[dict]({"sum": 1.0, "pair": cr.Tangent[tuple](2.0, cr.Tangent[Pair](first=10.0))})
    assert back(dy)[1:] == (1.0 + 6.0 + 10.0, 1.0 + 4.0)
    args = (Point(1.5, 2.5), Pair(3.0, 4.0), [0.5, {"w": 2.0}])
    _, dp, dpair, ditems = grads(takes_structures, *args)
    assert dp == cr.Tangent[Point](x=4.0, y=0.5)
    assert dpair == cr.Tangent[Pair](second=1.5)
    assert ditems == cr.Tangent[list](2.5, cr.Tangent[dict]({"w": 1.0}))


# ----- statements with no derivative -------------------------------------------------------------


def statements(x):
    """A docstring."""
    import math as m

    assert x > 0, f"x must be positive, got {x}"
    label: str = f"x={x:.2f}"
    (n := len(label))
    if x > 100:
        raise ValueError(label)
    return m.exp(x) * n


def test_statements_without_derivative():
    check(statements, 2.0)
    with pytest.raises(AssertionError, match="x must be positive"):
        pullback_full(statements, -1.0)
    with pytest.raises(ValueError, match="x=200.00"):
        pullback_full(statements, 200.0)


# ----- arrays through operators ----------------------------------------------------------------


def array_expression(x, y):
    z = x * y + x / 2.0 - y
    return z * z + x


def test_arrays_through_operators():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    y_, back = pullback_full(array_expression, x, y)
    dy = np.array([1.0, 0.5, 2.0])
    crt.assert_approx(back(dy)[1:], crt.fd_vjp(lambda a: array_expression(*a), dy, (x, y)))


def test_broadcasting_scalars_and_arrays():
    def scaled(s, v):
        return (s * v + s) * v

    x = np.array([1.0, 2.0])
    _, ds, dv = grads(scaled, 1.5, x, dy=np.ones(2))
    crt.assert_approx((ds, dv), crt.fd_vjp(lambda a: scaled(*a), np.ones(2), (1.5, x)))


def test_a_closure_reading_a_variable_bound_later_is_refused():
    def late(x):
        def g():
            return w * 2.0

        w = x * 3.0
        return g()

    message = r"test_source_language.py:\d+:\d+: .*`w`, which is bound after"
    with pytest.raises(cr.UnsupportedSyntaxError, match=message):
        pullback_full(late, 1.0)


def test_mutually_recursive_nested_functions_are_refused():
    def parity(x, n):
        def even(v, k):
            return v if k == 0 else odd(v * x, k - 1)

        def odd(v, k):
            return -v if k == 0 else even(v + x, k - 1)

        return even(1.0, n)

    with pytest.raises(cr.UnsupportedSyntaxError, match="`odd`, which is bound after"):
        pullback_full(parity, 1.5, 3)
