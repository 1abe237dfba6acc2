"""check_grads on the real engines: every installed reverse engine (and the forward engine, once
installed) must pass on ordinary NumPy functions."""

import importlib

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import available_reverse_engines, check_grads

rng = np.random.default_rng(7)


def rational(a, b):
    return a * b + a / (b + 2.0)


def layer(W, x):
    return np.tanh(W @ x)


def weighted_energy(x):
    return np.sum(np.sin(x) * x**2)


CASES = [
    (rational, (1.5, 0.7)),
    (layer, (rng.standard_normal((3, 4)), rng.standard_normal(4))),
    (weighted_energy, (rng.standard_normal(5),)),
]


def test_the_merged_engines_are_found():
    assert {"source", "tape"} <= set(available_reverse_engines())


@pytest.mark.parametrize("engine", available_reverse_engines())
@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_check_grads_passes_on_real_functions(engine, f, args):
    done = check_grads(f, args, engine=engine)
    assert done[0] == f"reverse[{engine}] order 1: {__name__}.{f.__name__}"


@pytest.mark.parametrize("engine", available_reverse_engines())
@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_order_two_without_forward_mode_is_reverse_over_reverse(engine, f, args):
    done = check_grads(f, args, modes=("reverse",), engine=engine, nested_modes=("reverse",))
    name = f"{__name__}.{f.__name__}"
    assert done == [f"reverse[{engine}] order 1: {name}", f"reverse[{engine}] order 2: pullback[{engine}]({name})"]


@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_reverse_over_forward_is_checked_when_only_forward_mode_is_asked_for(f, args):
    done = check_grads(f, args, modes=("forward",), nested_modes=("reverse",), engine="tape")
    name = f"{__name__}.{f.__name__}"
    assert done == [f"forward order 1: {name}", f"reverse[tape] order 2: jvp({name})"]


def test_without_the_forward_engine_order_two_is_reverse_over_reverse(monkeypatch):
    import importlib

    module = importlib.import_module("chainrules.testing.check_grads")
    monkeypatch.setattr(module, "forward_engine_available", lambda: False)
    x = rng.standard_normal(5)
    done = check_grads(weighted_energy, (x,), engine="tape")  # nested_modes=("forward",) by default
    assert done == [
        f"reverse[tape] order 1: {__name__}.weighted_energy",
        f"reverse[tape] order 2: pullback[tape]({__name__}.weighted_energy)",
    ]


def cube(x):
    return x * x * x


@cr.rrule.register(cube)
def rrule_cube(x):
    def cube_pullback(dy):  # right at first order; its own derivative is 3x (round has none), not 6x
        return cr.NoTangent(), dy * 3.0 * x * np.round(x, 12)

    return x * x * x, cube_pullback


@pytest.mark.parametrize("engine", available_reverse_engines())
def test_reverse_over_reverse_catches_a_wrong_second_derivative(engine):
    check_grads(cube, (0.8,), modes=("reverse",), engine=engine, order=1)
    with pytest.raises(AssertionError, match=rf"reverse, engine='{engine}', order 2: pullback\[{engine}\]\(.*cube\)"):
        check_grads(cube, (0.8,), modes=("reverse",), engine=engine, nested_modes=("reverse",))
    # through the fallback: a rule table cannot differentiate its own pullback, the tape does it
    with pytest.raises(AssertionError, match=r"reverse, engine='tape', order 2: pullback\[rrule\]\(.*cube\)"):
        check_grads(cube, (0.8,), modes=("reverse",), engine=cr.rrule, nested_modes=("reverse",))


def test_a_rule_table_as_the_engine_is_nested_by_the_tape():
    x = np.array([0.5, -1.0])
    done = check_grads(np.sin, (x,), modes=("reverse",), engine=cr.rrule, nested_modes=("reverse",))
    assert done == ["reverse[rrule] order 1: numpy.sin", "reverse[tape] order 2: pullback[rrule](numpy.sin)"]
    with pytest.raises(AssertionError, match=r"NoRuleError: no differentiation rule for .*weighted_energy"):
        check_grads(weighted_energy, (x,), modes=("reverse",), engine=cr.rrule, order=1)


def test_reverse_over_reverse_through_an_integer_power():
    # the power rule's pullback computes log|a| on the outer tape's values without converting them
    x = np.array([0.4, -1.3, 2.1])
    done = check_grads(
        lambda x: np.sum(x**3 * np.cos(x)), (x,), modes=("reverse",), engine="tape", nested_modes=("reverse",)
    )
    assert len(done) == 2
    H = cr.jacobian(lambda z: cr.gradient(lambda x: np.sum(x**3), z, engine="tape")[0], x, engine="tape")
    np.testing.assert_allclose(H, np.diag(6.0 * x), rtol=1e-14)


def sine(x):
    return np.sin(x)


def test_an_engine_that_refuses_the_function_by_design_is_skipped_by_default(monkeypatch):
    # a call of a function with a rule inside the function: the tape refuses it (IgnoredRuleError)
    @cr.rrule.register(sine)
    def rrule_sine(x):
        return np.sin(x), lambda dy: (cr.NoTangent(), np.cos(x) * dy)

    def energy(x):
        return np.sum(sine(x) * x)

    x = np.array([0.1, 0.2])
    try:
        performed = check_grads(energy, (x,), order=1)
        assert any(check.startswith("reverse[source] order 1") for check in performed)
        assert any(
            "engine='tape'" in check and "skipped" in check and "IgnoredRuleError" in check for check in performed
        )
        with pytest.raises(AssertionError, match="IgnoredRuleError"):  # named, the engine must check it
            check_grads(energy, (x,), order=1, engine="tape")
        # with the tape the only engine installed, nothing is checked: an error, not an empty list
        module = importlib.import_module("chainrules.testing.check_grads")
        monkeypatch.setattr(module, "available_reverse_engines", lambda: ["tape"])
        with pytest.raises(AssertionError, match="every engine refused it"):
            check_grads(energy, (x,), modes=("reverse",), order=1)
    finally:
        cr.rrule.unregister(sine)
