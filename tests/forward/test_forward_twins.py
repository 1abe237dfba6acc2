"""Rules of math functions and number builtins on duals are served by their NumPy twins' rules."""

import math
import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.twins import FUNCTION_TWINS, METHOD_TWINS, twin_of
from chainrules.forward import Dual, Tag


def test_rrule_of_math_sin_on_a_dual_pushes_the_dual_through():
    x = Dual(0.5, 1.0, Tag())
    y, back = cr.rrule(math.sin, x)
    assert isinstance(y, Dual)
    assert float(y.primal) == pytest.approx(math.sin(0.5))
    assert float(y.partials) == pytest.approx(math.cos(0.5))
    _, dx = back(1.0)
    # the cotangent cos(x) is itself a dual: its partial is the second derivative -sin(x)
    assert float(dx.primal) == pytest.approx(math.cos(0.5))
    assert float(dx.partials) == pytest.approx(-math.sin(0.5))


def test_frule_of_math_exp_on_a_dual():
    x = Dual(1.0, 1.0, Tag())
    y, dy = cr.frule((cr.NoTangent(), 2.0), math.exp, x)
    assert float(y.primal) == pytest.approx(math.e)
    assert float(dy.primal) == pytest.approx(2 * math.e)
    assert float(dy.partials) == pytest.approx(2 * math.e)


@pytest.mark.parametrize("args", [(0.5, "dual"), ("dual", 0.5), ("dual", "dual")])
def test_two_argument_math_functions_with_a_dual_in_either_place(args):
    x = Dual(0.7, 1.0, Tag())
    values = tuple(x if a == "dual" else a for a in args)
    y, back = cr.rrule(math.atan2, *values)
    plain = tuple(0.7 if a == "dual" else a for a in args)
    assert float(y.primal) == pytest.approx(math.atan2(*plain))
    expected = sum(
        p
        for p, a in zip((plain[1] / (plain[0] ** 2 + plain[1] ** 2), -plain[0] / (plain[0] ** 2 + plain[1] ** 2)), args)
        if a == "dual"
    )
    assert float(y.partials) == pytest.approx(expected)
    assert len(back(1.0)) == 3


def test_float_of_a_dual_through_its_rule_keeps_the_dual():
    x = Dual(2.0, 3.0, Tag())
    y, back = cr.rrule(float, x)
    assert isinstance(y, Dual) and float(y.partials) == 3.0
    assert back(1.0)[1] == 1.0 or float(np.asarray(back(1.0)[1])) == 1.0


def test_plain_numbers_still_use_the_math_rules():
    y, back = cr.rrule(math.sin, 0.5)
    assert type(y) is float and back(1.0)[1] == pytest.approx(math.cos(0.5))


def test_the_twin_table_holds_functions_not_derivatives():
    assert twin_of(math.sin) is np.sin and twin_of(math.lgamma).__name__ == "gammaln"
    assert twin_of(lambda x: x) is None
    assert twin_of([].append) is None
    for f, twin in FUNCTION_TWINS.items():
        assert callable(f) and callable(twin)
    arguments = {np.ndarray.reshape: (3, 2), np.ndarray.astype: (np.float32,), np.ndarray.compress: ([True, False],)}
    for method, method_call in METHOD_TWINS.items():
        a = np.ones((2, 3))
        function, args, _ = method_call(a, *arguments.get(method, (1,)))
        # the array first: the method's tangent is read from that position
        assert method.__objclass__ is np.ndarray and callable(function) and args[0] is a


def test_math_functions_inside_a_hessian_computed_by_nested_forward_rules():
    # The second derivative of x -> sin(x) exp(x) by forward over the rrules of math functions
    def first_derivative(x):
        s, back_s = cr.rrule(math.sin, x)
        e, back_e = cr.rrule(math.exp, x)
        return back_s(e)[1] + back_e(s)[1]

    d2 = cr.derivative(first_derivative, 0.3)
    expected = 2 * math.cos(0.3) * math.exp(0.3)
    assert d2 == pytest.approx(expected)


def test_array_method_rules_on_duals_run_the_numpy_functions_rules():
    x = Dual(np.arange(6.0).reshape(2, 3), np.ones((2, 3)), Tag())
    y, back = cr.rrule(np.ndarray.sum, x, 0)
    np.testing.assert_allclose(y.primal, [3.0, 5.0, 7.0])
    np.testing.assert_allclose(y.partials, [2.0, 2.0, 2.0])
    d = back(np.ones(3))
    assert len(d) == 3 and d[2] == cr.NoTangent()
    np.testing.assert_allclose(d[1], np.ones((2, 3)))
    y, back = cr.rrule(np.ndarray.reshape, x, 3, 2)
    assert y.shape == (3, 2)
    d = back(np.ones((3, 2)))
    assert len(d) == 4 and d[1].shape == (2, 3) and d[2] == d[3] == cr.NoTangent()
    y, dy = cr.frule((cr.NoTangent(), np.ones((2, 3)), cr.NoTangent(), cr.NoTangent()), np.ndarray.reshape, x, 3, 2)
    assert y.shape == (3, 2) and dy.shape == (3, 2)


def test_getitem_and_getattr_rules_on_duals_use_the_primals_type():
    x = Dual(np.arange(6.0).reshape(2, 3), np.ones((2, 3)), Tag())
    y, back = cr.rrule(operator.getitem, x, 1)
    np.testing.assert_allclose(y.primal, [3.0, 4.0, 5.0])
    y, dy = cr.frule((cr.NoTangent(), np.ones((2, 3)), cr.NoTangent()), getattr, x, "T")
    assert y.shape == (3, 2) and dy.shape == (3, 2)
