"""The API's answers to common mistakes: a ValueError or TypeError that names the function and says
what to write instead, never an error from deep inside NumPy or an engine's own type names."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr


def elementwise_sine(x):
    return np.sin(x)


def total_sine(x):
    return np.sin(x).sum()


def test_derivative_of_an_array_points_to_jacobian_and_jvp():
    with pytest.raises(ValueError, match=r"derivative\(elementwise_sine, x\) is for a scalar x.*\(3,\).*cr.jacobian"):
        cr.derivative(elementwise_sine, np.ones(3))
    assert cr.derivative(elementwise_sine, np.float64(0.0)) == 1.0  # a 0-d NumPy number is a scalar


def test_a_jvp_tangent_of_the_wrong_shape_names_its_position():
    with pytest.raises(
        ValueError, match=r"jvp\(elementwise_sine, \.\.\.\): tangent 0 has shape \(2,\), its primal \(3,\)"
    ):
        cr.jvp(elementwise_sine, (np.ones(3),), (np.ones(2),))
    y, dy = cr.jvp(lambda a, b: a * b, (np.ones(2), 3.0), (np.ones(2), 0.0))  # right shapes pass
    np.testing.assert_array_equal(dy, [3.0, 3.0])


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_hessian_of_a_vector_function_names_the_output_not_an_engine_type(engine):
    with pytest.raises(cr.ChainRulesError, match=r"got an array of shape \(3,\)") as info:
        cr.hessian(elementwise_sine, np.ones(3), engine=engine)
    assert "Dual" not in str(info.value)
    with pytest.raises(cr.ChainRulesError, match=r"got ndarray of shape \(3,\)"):
        cr.gradient(elementwise_sine, np.ones(3), engine=engine)


@pytest.mark.parametrize("argnums, error", [(2, IndexError), (-3, IndexError), ((0, 5), IndexError), ("0", TypeError)])
def test_argnums_outside_the_arguments_says_how_many_there_are(argnums, error):
    with pytest.raises(error, match=r"argnums=.* does not select among the 2 positional argument\(s\) given"):
        cr.gradient(lambda a, b: a * b, 1.0, 2.0, argnums=argnums)
    assert cr.gradient(lambda a, b: a * b, 1.0, 2.0, argnums=-1) == 1.0  # negative indices count from the end


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_cotangent_of_the_wrong_shape_names_the_function(engine):
    y, back = cr.pullback(elementwise_sine, np.ones(3), engine=engine)
    with pytest.raises(
        ValueError, match=r"pullback of elementwise_sine: a cotangent of shape \(2,\) for an output of shape \(3,\)"
    ):
        back(np.ones(2))
    np.testing.assert_allclose(back(np.ones(3))[0], np.cos(np.ones(3)))
    y, back = cr.pullback(total_sine, np.ones(3), engine=engine)
    np.testing.assert_allclose(back(1.0)[0], np.cos(np.ones(3)))


@pytest.mark.parametrize(
    "primal, tangent",
    [(1.0, 1j), (np.ones(2), np.full(2, 1j)), (np.float32(1.0), np.complex64(1.0)), (np.ones(2), np.zeros(2, complex))],
)
def test_jvp_refuses_a_complex_tangent_of_a_real_input(primal, tangent):
    # a real input's tangent is real: the imaginary part would be dropped, a derivative of 0 without warning
    with pytest.raises(ValueError, match="tangent 0 is complex and its primal is real"):
        cr.jvp(lambda x: 2.0 * x, (primal,), (tangent,))


def test_jvp_takes_a_real_tangent_of_a_complex_input():
    assert cr.jvp(lambda z: z * z, (1j,), (1.0,)) == (-1 + 0j, 2j)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_pullback_takes_a_list_cotangent_as_an_array(engine):
    _, back = cr.pullback(lambda x: 2.0 * x, np.ones(2), engine=engine)
    (dx,) = back([1.0, 3.0])  # (a Python list times 2 would repeat it)
    assert type(dx) is np.ndarray
    np.testing.assert_array_equal(dx, [2.0, 6.0])
    np.testing.assert_array_equal(back((1.0, 1.0))[0], [2.0, 2.0])


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize(
    "dy, error, match",
    [
        ([1.0], ValueError, r"cotangent of shape \(1,\) for an output of shape \(2,\)"),
        (1.0, ValueError, r"cotangent of shape \(\) for an output of shape \(2,\)"),
        ([[1.0, 1.0]], ValueError, r"shape \(1, 2\)"),
        (None, TypeError, "must be a number or an array like the output, got NoneType"),
        ("a", TypeError, "got str"),
        (["a", "b"], TypeError, "dtype <U1"),
    ],
)
def test_a_pullback_refuses_a_cotangent_unlike_the_output(engine, dy, error, match):
    _, back = cr.pullback(lambda x: 2.0 * x, np.ones(2), engine=engine)
    with pytest.raises(error, match=match):
        back(dy)


@pytest.mark.parametrize(
    "call, entry",
    [
        (lambda: cr.gradient(3.0, 1.0), "gradient"),
        (lambda: cr.value_and_gradient(None, 1.0), "gradient"),
        (lambda: cr.pullback(3.0, 1.0), "pullback"),
        (lambda: cr.jvp("f", (1.0,), (1.0,)), "jvp"),
        (lambda: cr.derivative(None, 1.0), "derivative"),
        (lambda: cr.jacobian(3.0, np.ones(2)), "jacobian"),
        (lambda: cr.hessian(3.0, np.ones(2)), "hessian"),
    ],
)
def test_a_function_that_is_not_callable_is_named_as_such(call, entry):
    with pytest.raises(TypeError, match=rf"{entry}\(f, \.\.\.\): f must be a callable"):
        call()


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_jacobian_checks_its_chunk_size_in_every_mode(mode):
    f = lambda x: 2.0 * x  # noqa: E731
    with pytest.raises(ValueError, match="chunk_size must be at least 1, got 0"):
        cr.jacobian(f, np.ones(3), mode=mode, chunk_size=0)
    with pytest.raises(TypeError, match="chunk_size must be an integer, got 1.5"):
        cr.jacobian(f, np.ones(3), mode=mode, chunk_size=1.5)
    np.testing.assert_array_equal(cr.jacobian(f, np.ones(3), mode=mode, chunk_size=np.int64(2)), 2.0 * np.eye(3))


def two_arguments(A, b):
    return np.sum((A @ b) ** 2)


@pytest.mark.parametrize(
    "call",
    [
        lambda A, b: cr.gradient(two_arguments, A, engine=b),
        lambda A, b: cr.value_and_gradient(two_arguments, A, engine=b),
        lambda A, b: cr.pullback(two_arguments, A, engine=b),
        lambda A, b: cr.jacobian(two_arguments, A, "reverse", b),
        lambda A, b: cr.jacobian(two_arguments, A, mode="forward", engine=b),
        lambda A, b: cr.hessian(two_arguments, A, engine=b),
    ],
    ids=["gradient", "value_and_gradient", "pullback", "jacobian", "jacobian-forward", "hessian"],
)
def test_an_engine_that_is_not_an_engines_name_is_named_as_such(call):
    # an argument meant for f given as engine= (NumPy's "unhashable type: 'numpy.ndarray'" had come out)
    A, b = np.eye(2), np.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"engine= takes the name of a reverse engine, one of \['source', 'tape'\], got "
                       r"a value of type ndarray"):
        call(A, b)
    with pytest.raises(ValueError, match=r"engine='sauce': choose one of \['source', 'tape'\]"):
        call(A, "sauce")


def test_hessian_takes_one_x_and_engine_by_keyword():
    A, b = np.eye(2), np.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"hessian\(\) takes 2 positional arguments but 3 were given"):
        cr.hessian(two_arguments, A, b)
    H = cr.hessian(lambda v: two_arguments(A, v), b, engine="tape")
    np.testing.assert_allclose(H, 2.0 * A.T @ A)


def test_a_rule_for_something_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match=r"rrule.register\(3\): rules are for callables"):
        cr.rrule.register(3)


def test_rounding_gives_an_int_on_engine_values_too():
    # round(x), math.floor(x) index and count in a Hessian as in a gradient (their derivative is 0)
    def f(x):
        return [x, 2 * x, 3 * x][round(x)] * x + sum(x for _ in range(round(3 * x))) + round(x, None)

    for engine in ("source", "tape"):
        assert cr.hessian(f, 1.3, engine=engine) == pytest.approx(4.0)
    assert cr.gradient(f, 1.3)[0] == pytest.approx(4 * 1.3 + 4)


def test_hessian_of_a_vector_function_names_hessian():
    with pytest.raises(cr.ChainRulesError, match=r"^hessian needs \S*<lambda> to return a real scalar"):
        cr.hessian(lambda x: x * 2.0, np.ones(2))


@pytest.mark.parametrize("x", [np.float32(2.0), np.float64(2.0), np.int64(2), 2.0])
def test_hessian_at_a_number_is_a_number_of_the_gradients_type(x):
    h, g = cr.hessian(lambda x: x**3, x), cr.gradient(lambda x: x**3, x)[0]
    assert type(h) is type(g) and h == 12.0


def test_the_gradient_of_a_float_is_a_float_however_it_was_computed():
    # (a nested gradient's real part: NumPy numbers on the way)
    def outer(x):
        return cr.gradient(lambda w: abs(w) ** 2 * x, x * (1 + 1j))[0].real

    for engine in ("source", "tape"):
        (g,) = cr.gradient(outer, 1.0, engine=engine)
        assert type(g) is float and g == 4.0


def average_and_weight(x):
    return np.sum(np.average(x, returned=True))  # <- refused option


@pytest.mark.parametrize(
    "run",
    [
        lambda x: cr.gradient(average_and_weight, x, engine="tape"),
        lambda x: cr.gradient(average_and_weight, x, engine="source"),
        lambda x: cr.jacobian(average_and_weight, x, mode="forward"),
    ],
    ids=["tape", "source", "forward"],
)
def test_a_rules_refusal_of_an_option_notes_the_users_line(run):
    """A rule refuses an option it does not differentiate inside itself, with a NoRuleError naming
    the user's line that called it, under every engine."""
    line = average_and_weight.__code__.co_firstlineno + 1
    with pytest.raises(cr.NoRuleError, match=r"numpy\.average.*returned=True: call np\.sum") as info:
        run(np.array([0.2, 0.7, 0.4]))
    assert f"{__file__}:{line}" in str(info.value)


Q = np.array([0.3, 1.2, -0.4, 0.9])
REFUSED_OPTIONS = {  # options NumPy takes and the rules do not differentiate
    "average-returned": lambda x: np.average(x, returned=True)[0],
    "cov-complex": lambda x: np.cov(x + 1j * Q).real,
    "nan_to_num-copy": lambda x: np.nan_to_num(x * 1.0, copy=False),
    "sum-out": lambda x: np.sum(x, out=np.empty(())),
    "take-out": lambda x: np.take(x, [0, 1], out=np.empty(2)),
}


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("name", list(REFUSED_OPTIONS))
def test_refused_options_are_no_rule_errors_at_the_users_line(name, engine):
    call = REFUSED_OPTIONS[name]
    with pytest.raises(cr.ChainRulesError) as info:
        cr.gradient(lambda x: np.sum(call(x)), Q, engine=engine)
    # (the source engine refuses out= when it reads the code, before any rule runs)
    expected = cr.UnsupportedSyntaxError if engine == "source" and "out" in name else cr.NoRuleError
    assert isinstance(info.value, expected)
    assert f"{__file__}:{call.__code__.co_firstlineno}" in str(info.value)
