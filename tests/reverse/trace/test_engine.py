"""The tape engine end to end: values, gradients, structures, control flow, repeated pullbacks."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.trace import TrackedArray, TrackedNumber, current_trace, pullback_full
from chainrules.testing import fd_jacobian


def seed_quotient(a, b):
    return a / (a + b * b)


def test_seed_example_through_the_api():
    y, back = cr.pullback(seed_quotient, 2.0, 3.0, engine="tape")
    assert y == pytest.approx(2.0 / 11.0)
    da, db = back(1.0)
    assert da == pytest.approx(9.0 / 121.0) and db == pytest.approx(-12.0 / 121.0)
    assert cr.gradient(seed_quotient, 2.0, 3.0, engine="tape") == pytest.approx((9.0 / 121.0, -12.0 / 121.0))
    value, grads = cr.value_and_gradient(seed_quotient, 2.0, 3.0, engine="tape")
    assert value == y and grads == (da, db)


def test_pullback_full_puts_the_function_tangent_first():
    y, back = pullback_full(seed_quotient, 2.0, 3.0)
    df, da, db = back(1.0)
    assert df == cr.NoTangent()
    assert type(da) is float and type(db) is float


def test_the_primal_is_the_plain_result():
    y, _ = pullback_full(lambda x: x * x + 1.0, np.array([1.0, 2.0]))
    assert type(y) is np.ndarray
    np.testing.assert_array_equal(y, [2.0, 5.0])


def test_back_can_be_called_many_times():
    y, back = pullback_full(lambda x: x * x * x, np.array([1.0, 2.0]))
    first = back(np.ones(2))[1]
    second = back(np.array([2.0, -1.0]))[1]
    np.testing.assert_allclose(first, [3.0, 12.0])
    np.testing.assert_allclose(second, [6.0, -12.0])
    np.testing.assert_allclose(first, [3.0, 12.0])  # the first result was not overwritten


def test_values_are_tracked_only_while_the_function_runs():
    seen = []

    def f(x):
        seen.append((type(x), current_trace()))
        return x * 2.0

    pullback_full(f, 1.0)
    pullback_full(f, np.ones(2))
    assert seen[0][0] is TrackedNumber and seen[1][0] is TrackedArray
    assert seen[0][1] is not None and current_trace() is None


def test_arrays_broadcast_through_operator_rules():
    def f(X, b):
        return (X * b + b) / 2.0 - X

    X, b = np.arange(6.0).reshape(2, 3), np.array([1.0, -1.0, 0.5])
    y, back = pullback_full(f, X, b)
    _, dX, db = back(np.ones((2, 3)))
    np.testing.assert_allclose(dX, np.broadcast_to(b / 2.0 - 1.0, (2, 3)))
    np.testing.assert_allclose(db, (X.sum(axis=0) + 2.0) / 2.0)


def test_jacobian_in_reverse_mode():
    J = cr.jacobian(lambda x: x * x * 2.0 + x, np.array([1.0, 2.0, 3.0]), mode="reverse", engine="tape")
    np.testing.assert_allclose(J, np.diag([5.0, 9.0, 13.0]))


@pytest.mark.parametrize(
    "f",
    [lambda x: (x[0] * x[1], 2.0 * x[2]), lambda x: [x[0] * x[1], 2.0 * x[2]], lambda x: [x, x * x]],
    ids=["tuple of numbers", "list of numbers", "list of arrays"],
)
def test_jacobian_in_reverse_mode_of_a_tuple_or_list_output(f):
    # one block per item, in a Tangent of the output's type, as forward mode and the source engine give
    x = np.array([1.0, 2.0, 3.0])
    J = cr.jacobian(f, x, mode="reverse", engine="tape")
    assert type(J) is cr.Tangent[type(f(x))]
    for other in (cr.jacobian(f, x, mode="reverse", engine="source"), cr.jacobian(f, x, mode="forward")):
        assert type(other) is type(J)
        np.testing.assert_allclose(np.stack(J.backing), np.stack(other.backing))
    stacked = np.stack(J.backing)
    np.testing.assert_allclose(stacked, fd_jacobian(lambda v: np.asarray(f(v)), x).reshape(stacked.shape), atol=1e-8)


# ----- which arguments get which tangents ----------------------------------------------------


def test_unused_float_gets_zero_and_discrete_arguments_get_no_tangent():
    def f(x, unused, flag, name, count):
        return x * count if flag and name == "a" else x

    grads = cr.gradient(f, 2.0, 5.0, True, "a", 3, engine="tape")
    assert grads[0] == 3.0
    assert grads[1] == cr.ZeroTangent() and isinstance(grads[1], cr.ZeroTangent)
    assert isinstance(grads[2], cr.NoTangent) and isinstance(grads[3], cr.NoTangent)
    assert grads[4] == 2.0 and type(grads[4]) is float  # an integer used arithmetically


def test_integer_used_only_to_count_gets_no_tangent():
    def f(x, n):
        for _ in range(n):
            x = x * 1.5
        return x

    dx, dn = cr.gradient(f, 2.0, 3, engine="tape")
    assert dx == pytest.approx(1.5**3)
    assert isinstance(dn, cr.NoTangent)


def test_integer_arrays_get_float_gradients():
    dk, dx = cr.pullback(lambda k, x: k * x, np.array([1, 2]), np.array([0.5, 0.25]), engine="tape")[1](np.ones(2))
    assert dk.dtype == np.float64
    np.testing.assert_allclose(dk, [0.5, 0.25])


def test_constant_output_gives_zero_gradients():
    assert cr.gradient(lambda x: 3.0, 1.0, engine="tape") == (cr.ZeroTangent(),)


def test_identity_returns_the_cotangent():
    _, back = pullback_full(lambda x: x, np.ones(2))
    dy = np.array([1.0, 2.0])
    np.testing.assert_array_equal(back(dy)[1], dy)


def test_float32_stays_float32():
    x = np.array([1.0, 2.0], dtype=np.float32)
    _, back = pullback_full(lambda x: x * x, x)
    dx = back(np.ones(2, dtype=np.float32))[1]
    assert dx.dtype == np.float32


def test_complex_input_follows_the_conjugate_convention():
    def f(z):
        return z * 2.0 + 1.0

    _, back = pullback_full(f, 1.0 + 2.0j)
    assert back(1.0 + 0.0j)[1] == 2.0 + 0.0j


# ----- data-dependent control flow and recursion ---------------------------------------------


def test_comparisons_use_primal_values():
    def f(x):
        total = 0.0
        while x < 10.0:
            x = x * 2.0
            total = total + x
        return total if total > 5.0 else -total

    y, back = pullback_full(f, 3.0)
    assert y == 18.0 and back(1.0)[1] == 6.0


def test_comparison_results_are_plain():
    def f(x):
        checks = (x > 0.0, x == 1.0, x != 2.0, x <= 1.0, x >= 0.0, bool(x), 0.0 < x)
        assert all(type(c) is bool for c in checks), checks
        assert type(np.ones(2) * 0 + (x > 0.0)) is np.ndarray
        return x

    pullback_full(f, 1.0)

    def g(x):
        mask = x > 0.0
        assert type(mask) is np.ndarray and mask.dtype == bool
        return x

    pullback_full(g, np.array([1.0, -1.0]))


def test_max_and_sorted_pick_tracked_values():
    def f(a, b, c):
        return max(a, b) * 10.0 + sorted([a, b, c])[0]

    assert cr.gradient(f, 1.0, 2.0, 0.5, engine="tape") == (cr.ZeroTangent(), 10.0, 1.0)


def babysqrt(x, t=None, n=10):
    if t is None:
        t = (1 + x) / 2
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


def test_recursion():
    y, back = pullback_full(babysqrt, 2.0)
    assert y == pytest.approx(np.sqrt(2.0))
    assert back(1.0)[1] == pytest.approx(1 / (2 * np.sqrt(2.0)))


def test_user_functions_and_closures_just_run():
    def make(k):
        return lambda t: k * t * t

    def f(x):
        square = make(1.0)
        return square(x) + make(x)(2.0)

    # d/dx [x^2 + 4x] = 2x + 4
    assert cr.gradient(f, 3.0, engine="tape") == (10.0,)


# ----- structures ----------------------------------------------------------------------------


@dataclasses.dataclass
class Params:
    w: object
    b: float
    name: str = "layer"


class Point(NamedTuple):
    x: float
    y: float


def test_structured_inputs_get_structural_tangents():
    def f(params, point, pair, items, table):
        base = params.w * point.x + params.b * point.y
        return base + pair[0] * pair[1] + items[2] * table["k"]

    params = Params(2.0, 3.0)
    grads = cr.gradient(f, params, Point(0.5, 4.0), (1.0, 2.0), [0.0, 0.0, 5.0], {"k": 7.0, "s": "x"}, engine="tape")
    dparams, dpoint, dpair, ditems, dtable = grads
    assert isinstance(dparams, cr.Tangent[Params])
    assert isinstance(dparams.name, cr.NoTangent) and dparams.b == 4.0 and dparams.w == 0.5
    assert dpoint == cr.Tangent[Point](x=2.0, y=3.0)
    assert dpair == cr.Tangent[tuple](2.0, 1.0)
    assert ditems == cr.Tangent[list](cr.ZeroTangent(), cr.ZeroTangent(), 7.0)
    assert dtable == cr.Tangent[dict]({"k": 5.0, "s": cr.NoTangent()})


def test_the_user_structures_are_not_modified():
    params = Params(1.0, 2.0)
    items = [1.0, 2.0]
    cr.gradient(lambda p, xs: p.b * xs[0], params, items, engine="tape")
    assert type(params.b) is float and items == [1.0, 2.0]


def test_structured_outputs_take_structured_cotangents():
    def f(x):
        return {"sq": x * x, "pair": (x * 2.0, 5), "point": Point(x, 1.0)}

    y, back = pullback_full(f, 3.0)
    assert y == {"sq": 9.0, "pair": (6.0, 5), "point": Point(3.0, 1.0)}
    assert type(y["point"]) is Point and type(y["point"].x) is float
    dy = {"sq": 1.0, "pair": cr.Tangent[tuple](10.0, cr.NoTangent()), "point": cr.Tangent[Point](x=100.0)}
    assert back(dy)[1] == 6.0 + 20.0 + 100.0
    assert back({"sq": 1.0, "pair": (1.0, cr.NoTangent()), "point": (1.0, 1.0)})[1] == 6.0 + 2.0 + 1.0
    assert back(cr.ZeroTangent())[1] == cr.ZeroTangent()


def test_dataclass_output():
    _, back = pullback_full(lambda x, c: Params(x * 2.0, c * 3.0, "out"), np.array([1.0, 2.0]), 1.0)
    _, dx, dc = back(cr.Tangent[Params](w=np.ones(2), b=1.0))
    np.testing.assert_allclose(dx, [2.0, 2.0])
    assert dc == 3.0


@dataclasses.dataclass
class Polynomial:
    weights: list

    def __call__(self, x):
        y = self.weights[-1]
        for w in reversed(self.weights[:-1]):
            y = y * x + w
        return y


def test_callable_object_gets_a_structural_tangent():
    model = Polynomial([3.0, 2.0, -3.0, 1.0])
    y, back = pullback_full(model, 2.0)
    assert y == 3.0 + 4.0 - 12.0 + 8.0
    dmodel, dx = back(1.0)
    assert dmodel == cr.Tangent[Polynomial](weights=cr.Tangent[list](1.0, 2.0, 4.0, 8.0))
    assert dx == 2.0 - 12.0 + 12.0
    assert model.weights == [3.0, 2.0, -3.0, 1.0]


def test_library_objects_pass_through_untouched():
    rng = np.random.default_rng(0)
    expected = np.random.default_rng(0).standard_normal()
    drng, dx = cr.gradient(lambda r, x: x * r.standard_normal(), rng, 2.0, engine="tape")
    assert isinstance(drng, cr.NoTangent) and dx == pytest.approx(expected)
    assert rng.standard_normal() != expected  # the caller's generator itself was used
