"""check_grads through the public API, with small test-local engines plugged into it.

The fake engines differentiate only what has a registered rule (``cr.rrule``/``cr.frule``), plus
the derivative functions check_grads builds for second order (``PullbackFunction``,
``JVPFunction``) of elementwise functions whose second derivative is listed in ``SECOND``. Rules
and second derivatives are registered right or deliberately wrong, so each test shows
check_grads passing on correct derivatives and failing, with a clear message, on wrong ones.
"""

import math
import sys
import types
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr
from chainrules import api
from chainrules.testing import JVPFunction, PullbackFunction, available_reverse_engines, check_grads

NO = cr.NoTangent()
SECOND = {}  # elementwise function -> its second derivative, known to the fake engines


def _derivative_function_parts(g, x):
    """For check_grads' derivative function g of an elementwise f: (second derivative at x, the fixed seed)."""
    seed = cr.unthunk(g.dy) if isinstance(g, PullbackFunction) else g.tangents[0]
    return SECOND[g.f](x), seed


def _is_known_derivative_function(g) -> bool:
    return isinstance(g, (PullbackFunction, JVPFunction)) and g.f in SECOND


def fake_pullback_full(f, *args, **kwargs):
    if _is_known_derivative_function(f):
        (x,) = args
        f2, seed = _derivative_function_parts(f, x)

        def derivative_function_pullback(w):
            w = cr.unthunk(w)
            if isinstance(f, PullbackFunction):
                w = w[0]  # g returns the 1-tuple of cotangents
            return NO, f2 * seed * w

        return f(x), derivative_function_pullback
    result = cr.rrule(f, *args, **kwargs)
    if result is None:
        raise cr.NoRuleError(f, args)
    return result


def negating_pullback_full(f, *args, **kwargs):
    """A broken engine: every cotangent comes back negated."""
    y, back = fake_pullback_full(f, *args, **kwargs)
    return y, lambda dy: tuple(-cr.unthunk(c) if not isinstance(c, cr.AbstractZero) else c for c in back(dy))


def fake_jvp(f, primals, tangents):
    if _is_known_derivative_function(f):
        ((x,), (v,)) = primals, tangents
        f2, seed = _derivative_function_parts(f, x)
        dy = f2 * seed * v
        return f(x), (cr.Tangent[tuple](dy) if isinstance(f, PullbackFunction) else dy)
    result = cr.frule((NO, *tangents), f, *primals)
    if result is None:
        raise cr.NoRuleError(f, primals)
    return result


@pytest.fixture
def engines(monkeypatch):
    """Plug the fake engines into the API for one test: reverse 'fake' and 'negating', and forward."""
    modules = {}
    for name, pullback_full in [("fake", fake_pullback_full), ("negating", negating_pullback_full)]:
        module = types.ModuleType(f"_chainrules_test_engine_{name}")
        module.pullback_full = pullback_full
        modules[name] = module.__name__
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(api, "REVERSE_ENGINES", modules)
    forward = types.ModuleType("chainrules.forward")
    forward.jvp = fake_jvp
    monkeypatch.setitem(sys.modules, "chainrules.forward", forward)
    return modules


def _register(f, derivative, second=None, *, rrule_derivative=None, frule_derivative=None):
    """Register elementwise rrule/frule for f (each may use its own, possibly wrong, derivative) and its f''."""
    d_rev = rrule_derivative or derivative
    d_fwd = frule_derivative or derivative

    @cr.rrule.register(f)
    def rule(x):
        def pullback(dy):
            dy = cr.unthunk(dy)
            return NO, dy * d_rev(x)

        return f(x), pullback

    @cr.frule.register(f)
    def forward_rule(tangents, x):
        return f(x), d_fwd(x) * tangents[1]

    if second is not None:
        SECOND[f] = second


def cube(x):
    return x**3


_register(cube, lambda x: 3 * x**2, lambda x: 6 * x)


def cube_wrong_second(x):
    return x**3


_register(cube_wrong_second, lambda x: 3 * x**2, lambda x: 3 * x)  # f'' should be 6x


def sine_wrong_rrule(x):
    return np.sin(x)


_register(sine_wrong_rrule, np.cos, rrule_derivative=lambda x: -np.cos(x))


def sine_wrong_frule(x):
    return np.sin(x)


_register(sine_wrong_frule, np.cos, frule_derivative=lambda x: np.cos(x) + 0.01)


def test_correct_derivatives_pass_to_second_order(engines):
    x = np.array([0.5, -1.2, 2.0])
    assert check_grads(cube, (x,), engine="fake") == [
        "reverse[fake] order 1: test_check_grads.cube",
        "forward order 2: pullback[fake](test_check_grads.cube)",
        "forward order 1: test_check_grads.cube",
        "forward order 2: jvp(test_check_grads.cube)",
    ]
    done = check_grads(cube, (x,), engine="fake", nested_modes=("forward", "reverse"))
    assert done == [
        "reverse[fake] order 1: test_check_grads.cube",
        "reverse[fake] order 2: pullback[fake](test_check_grads.cube)",
        "forward order 2: pullback[fake](test_check_grads.cube)",
        "forward order 1: test_check_grads.cube",
        "reverse[fake] order 2: jvp(test_check_grads.cube)",
        "forward order 2: jvp(test_check_grads.cube)",
    ]
    check_grads(cube, 0.7, engine="fake")


def test_a_wrong_reverse_rule_is_caught(engines):
    with pytest.raises(AssertionError) as info:
        check_grads(sine_wrong_rrule, (np.array([0.3, 1.1]),), engine="fake", order=1)
    message = str(info.value)
    assert "check_grads(reverse, engine='fake', order 1: test_check_grads.sine_wrong_rrule) failed" in message
    assert "<J^T dy, dx> =" in message and "<dy, J dx> =" in message and "rel error" in message
    check_grads(sine_wrong_rrule, (np.array([0.3, 1.1]),), modes=("forward",), order=1)


def test_a_wrong_forward_rule_is_caught(engines):
    with pytest.raises(AssertionError, match=r"check_grads\(forward, order 1: .*sine_wrong_frule\) failed") as info:
        check_grads(sine_wrong_frule, (np.array([0.3, 1.1]),), engine="fake", order=1)
    assert "the engine's JVP does not match finite differences" in str(info.value)
    check_grads(sine_wrong_frule, (np.array([0.3, 1.1]),), modes=("reverse",), engine="fake", order=1)


def test_a_wrong_second_derivative_is_caught_only_at_order_two(engines):
    check_grads(cube_wrong_second, 0.8, engine="fake", order=1)
    with pytest.raises(AssertionError, match=r"forward, order 2: pullback\[fake\]\(.*cube_wrong_second\)"):
        check_grads(cube_wrong_second, 0.8, engine="fake", order=2)
    with pytest.raises(AssertionError, match=r"reverse, engine='fake', order 2: pullback\[fake\]\(.*cube_wrong"):
        check_grads(cube_wrong_second, 0.8, engine="fake", order=2, modes=("reverse",), nested_modes=("reverse",))
    # forward over reverse (the Hessian's way) runs even when first-order forward mode is not asked for
    assert check_grads(cube, 0.8, engine="fake", modes=("reverse",)) == [
        "reverse[fake] order 1: test_check_grads.cube",
        "forward order 2: pullback[fake](test_check_grads.cube)",
    ]
    # with nothing to differentiate the first derivatives with, order 2 checks order 1 only
    assert len(check_grads(cube_wrong_second, 0.8, engine="fake", nested_modes=())) == 2


def test_every_installed_engine_is_checked_by_default(engines):
    assert available_reverse_engines() == ["fake", "negating"]
    with pytest.raises(AssertionError, match="engine='negating'"):
        check_grads(cube, 0.9, order=1)
    assert check_grads(cube, 0.9, order=1, engine="fake")[0].startswith("reverse[fake]")


Pair = namedtuple("Pair", ["a", "b"])


def weighted(p, n, w):
    return n * (p.a * np.sum(w) + p.b**2)


def weighted_wrong(p, n, w):
    return n * (p.a * np.sum(w) + p.b**2)


def _field(t, name):
    t = cr.unthunk(t)
    return 0.0 if isinstance(t, cr.AbstractZero) else getattr(t, name)


def _register_weighted(f, dw_factor):
    @cr.rrule.register(f)
    def rule(p, n, w):
        def pullback(dy):
            dy = cr.unthunk(dy)
            dp = cr.Tangent[Pair](a=dy * n * np.sum(w), b=dy * n * 2 * p.b)
            return NO, dp, NO, dy * n * p.a * dw_factor * np.ones_like(w)

        return f(p, n, w), pullback

    @cr.frule.register(f)
    def forward_rule(tangents, p, n, w):
        _, dp, _, dw = tangents
        dw = 0.0 if isinstance(dw, cr.AbstractZero) else np.sum(dw)
        return f(p, n, w), n * (_field(dp, "a") * np.sum(w) + p.a * dw + 2 * p.b * _field(dp, "b"))


_register_weighted(weighted, 1.0)
_register_weighted(weighted_wrong, 1.1)  # the cotangent of w is 10% off


def test_structured_and_integer_arguments(engines):
    args = (Pair(0.5, -1.5), 3, np.array([1.0, 2.0, 0.5]))
    check_grads(weighted, args, engine="fake", order=1)
    with pytest.raises(AssertionError, match="engine='fake'"):
        check_grads(weighted_wrong, args, engine="fake", order=1)


def test_engine_errors_are_reported_with_their_context(engines):
    def no_rule(x):
        return x

    with pytest.raises(AssertionError, match=r"(?s)engine='fake'.*cr.pullback raised NoRuleError: .*no_rule"):
        check_grads(no_rule, 1.0, engine="fake")


def test_a_callable_engine_is_used_directly():
    assert check_grads(math.sin, 0.5, modes=("reverse",), order=1, engine=cr.rrule) == [
        "reverse[rrule] order 1: math.sin"
    ]

    def wrong_engine(f, *args):
        return negating_pullback_full(f, *args)

    with pytest.raises(AssertionError, match="engine='wrong_engine'"):
        check_grads(math.sin, 0.5, modes=("reverse",), order=1, engine=wrong_engine)


def test_nothing_to_check_is_an_error(monkeypatch):
    monkeypatch.setattr(api, "REVERSE_ENGINES", {"absent": "_chainrules_no_such_engine"})
    monkeypatch.setitem(sys.modules, "chainrules.forward", None)  # makes the forward engine look absent
    assert available_reverse_engines() == []
    with pytest.raises(AssertionError, match="no engine to check"):
        check_grads(cube, 0.5)


def test_an_engine_with_a_missing_dependency_is_an_error(monkeypatch, tmp_path):
    package = tmp_path / "_chainrules_broken_engine"
    package.mkdir()
    (package / "__init__.py").write_text("import _chainrules_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(api, "REVERSE_ENGINES", {"broken": "_chainrules_broken_engine"})
    with pytest.raises(ModuleNotFoundError, match="_chainrules_missing_dependency"):
        available_reverse_engines()


def test_argument_validation(engines):
    with pytest.raises(ValueError, match="unknown modes"):
        check_grads(cube, 0.5, modes=("sideways",))
    with pytest.raises(ValueError, match="at least 1"):
        check_grads(cube, 0.5, order=0)
    with pytest.raises(ValueError, match="engine='nope'"):
        check_grads(cube, 0.5, engine="nope")
    assert check_grads.__test__ is False
