"""``scipy.integrate.solve_ivp`` by the adjoint method: ``result.y`` differentiated in ``y0``,
``args``, closures and the times, for explicit and implicit methods, and in forward mode by the
forward sensitivity equations; checked against closed forms, finite differences of SciPy's
solutions, each other and ``test_rrule``; second derivatives and the tape refuse it, naming what to
use."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si
import scipy.linalg as sl

import chainrules as cr
import chainrules.testing as crt

TIGHT = {"rtol": 1e-10, "atol": 1e-12}
ATOL_PER_STATE = np.array([1e-12, 1e-11])


def decay(t, y, k):
    return -k * y


cr.scalar_rule(decay, lambda t, y, k: 0.0 * y, lambda t, y, k: -k + 0.0 * y, lambda t, y, k: -y)


def test_solve_ivp_rule_against_finite_differences():
    y0, t_eval = np.array([1.0, 2.0]), np.array([0.3, 0.7, 0.9])  # (inside t_span as it is perturbed)
    result = si.solve_ivp(decay, (0.0, 1.0), y0, t_eval=t_eval, args=(0.8,), **TIGHT)
    seed = cr.Tangent[type(result)](y=np.random.default_rng(3).standard_normal(result.y.shape))
    crt.test_rrule(
        si.solve_ivp,
        crt.nondiff(decay),
        (0.0, 1.0),
        y0,
        fkwargs={"t_eval": t_eval, "args": (0.8,), **TIGHT},
        output_tangent=seed,
        rtol=1e-6,
        atol=1e-8,
    )


def test_exponential_decay_in_the_rate_the_start_and_the_times():
    def final(k, y0, t0, T):  # y(T) = y0 exp(-k (T - t0))
        return si.solve_ivp(lambda t, y: -k * y, (t0, T), np.array([y0]), **TIGHT).y[0, -1]

    k, y0, t0, T = 0.5, 2.0, 0.2, 1.3
    value = y0 * np.exp(-k * (T - t0))
    expected = (-(T - t0) * value, value / y0, k * value, -k * value)
    np.testing.assert_allclose(cr.gradient(final, k, y0, t0, T), expected, rtol=1e-8)


def oscillator(t, y, w, g):
    return np.array([y[1], -(w**2) * y[0] - g * y[1]])


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_damped_oscillator_against_finite_differences(method):
    t_eval = np.linspace(0.5, 2.0, 4)

    def loss(theta, y0):
        sol = si.solve_ivp(oscillator, (0.0, 2.0), y0, method=method, t_eval=t_eval, args=tuple(theta), **TIGHT)
        return np.sum(sol.y[0] ** 2) + sol.y[1, -1]

    theta, y0, h = np.array([1.3, 0.2]), np.array([1.0, 0.0]), 1e-6
    d_theta, d_y0 = cr.gradient(loss, theta, y0)
    fd_theta = [(loss(theta + h * e, y0) - loss(theta - h * e, y0)) / (2 * h) for e in np.eye(2)]
    fd_y0 = [(loss(theta, y0 + h * e) - loss(theta, y0 - h * e)) / (2 * h) for e in np.eye(2)]
    rtol = 1e-6 if method in ("RK45", "DOP853") else 1e-4  # (the implicit methods' error estimates are looser)
    np.testing.assert_allclose(d_theta, fd_theta, rtol=rtol, atol=1e-7)
    np.testing.assert_allclose(d_y0, fd_y0, rtol=rtol, atol=1e-7)


def test_the_output_times_and_a_vector_output():
    def at_times(t_eval):  # y = exp(sin t): y(t_i) moves with t_i at y'(t_i) = cos(t_i) y(t_i)
        return si.solve_ivp(lambda t, y: np.cos(t) * y, (0.0, 2.0), np.array([1.0]), t_eval=t_eval, **TIGHT).y[0]

    t_eval = np.array([0.5, 1.5, 2.0])
    expected = np.diag(np.cos(t_eval) * np.exp(np.sin(t_eval)))
    np.testing.assert_allclose(cr.jacobian(at_times, t_eval), expected, rtol=1e-8)

    def trajectory(k):  # one input, many outputs: "auto" takes forward mode, which refuses, then reverse
        return si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.array([1.0, 2.0]), t_eval=[0.5, 1.0], **TIGHT).y.ravel()

    t, y0 = np.array([0.5, 1.0, 0.5, 1.0]), np.array([1.0, 1.0, 2.0, 2.0])  # y = y0 exp(-k t), row by row
    expected = -t * y0 * np.exp(-0.5 * t)
    np.testing.assert_allclose(cr.jacobian(trajectory, 0.5), expected, rtol=1e-8)


def test_refusals():
    def decayed(k, engine_kwargs=None):
        return si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.array([1.0]), **TIGHT).y[0, -1]

    with pytest.raises(cr.NoRuleError, match=r"no forward rule for .*solve_ivp.*a Hessian"):
        cr.hessian(decayed, 0.5)
    with pytest.raises(cr.NoRuleError, match=r"no forward rule for .*solve_ivp.*first derivatives only"):
        cr.derivative(lambda k: cr.derivative(decayed, k), 0.5)
    # a tape's gradient of a source gradient: the tape's values carry no tangent for the forward sensitivities (a
    # TypeError had come from reading one)
    for solution in (decayed, lambda k: si.odeint(lambda y, t: -k * y, np.array([1.0]), [0.0, 1.0], **TIGHT)[-1, 0]):
        with pytest.raises(cr.NoRuleError, match=r"no forward rule for .*(solve_ivp|odeint).*a Hessian"):
            cr.gradient(lambda k: cr.gradient(solution, k)[0], 0.5, engine="tape")

    def scaled(k, a):  # y(1) = a exp(-k): one differentiation in y0, the other in the rate
        return si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.stack([a]), **TIGHT).y[0, -1]

    with pytest.raises(cr.NoRuleError, match=r"no forward rule for .*solve_ivp.*first derivatives only"):
        cr.derivative(lambda k: cr.derivative(lambda a: scaled(k, a), 2.0), 0.5)
    # (the tape sees the values being differentiated reach the ruled solver through the right-hand side's closure)
    with pytest.raises(cr.ChainRulesError, match="solve_ivp has a rule that the tape engine cannot use"):
        cr.gradient(decayed, 0.5, engine="tape")

    def with_event(k):
        return si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.array([1.0]), events=lambda t, y: y[0] - 0.5).y[0, -1]

    with pytest.raises(cr.NoRuleError, match="events= are not differentiated"):
        cr.gradient(with_event, 0.5)

    def dense(k):
        return si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.array([1.0]), dense_output=True).sol(0.5)[0]

    with pytest.raises(cr.NoRuleError, match="OdeSolution.__call__"):
        cr.gradient(dense, 0.5)


def test_the_primal_is_scipys_and_inputs_are_not_mutated():
    y0 = np.array([1.0, 0.5])
    result, _ = cr.pullback(lambda w: si.solve_ivp(oscillator, (0.0, 1.0), y0, args=(w, 0.1)).y, 1.2)
    np.testing.assert_array_equal(result, si.solve_ivp(oscillator, (0.0, 1.0), np.array([1.0, 0.5]), args=(1.2, 0.1)).y)
    np.testing.assert_array_equal(y0, [1.0, 0.5])


def test_forward_mode_agrees_with_reverse_mode():
    t_eval = np.linspace(0.5, 2.0, 4)

    def trajectory(theta, y0):
        return si.solve_ivp(oscillator, (0.0, 2.0), y0, t_eval=t_eval, args=tuple(theta), **TIGHT).y.ravel()

    def closure(k):  # y(1) = exp(-k), the rate captured
        return si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.array([1.0]), **TIGHT).y[0, -1]

    theta, y0 = np.array([1.3, 0.2]), np.array([1.0, 0.0])
    for f, x in ((lambda th: trajectory(th, y0), theta), (lambda y: trajectory(theta, y), y0)):
        forward, reverse = cr.jacobian(f, x, mode="forward"), cr.jacobian(f, x, mode="reverse")
        np.testing.assert_allclose(forward, reverse, rtol=1e-10, atol=1e-12)
    assert cr.derivative(closure, 0.5) == pytest.approx(-np.exp(-0.5), rel=1e-8)
    _, tangent = cr.jvp(lambda th: trajectory(th, y0), (theta,), (np.array([1.0, -2.0]),))
    np.testing.assert_allclose(tangent, cr.jacobian(lambda th: trajectory(th, y0), theta) @ [1.0, -2.0], rtol=1e-9)


def damped(method="RK45", t_eval=None, dense_output=False, atol_per_state=False):
    """The oscillator's solution as a function of ``x``: from ``y0 = x[2:]``, its frequency ``x[0]``
    captured by the right-hand side and its damping ``x[1]`` in ``args`` (by position, where the rule
    differentiates it)."""

    def solved(x):
        w = x[0]

        def rate(t, y, g):
            return np.stack([y[1], -(w**2) * y[0] - g * y[1]])

        settings = (method, t_eval, dense_output, None, False, (x[1],))
        if atol_per_state:
            return si.solve_ivp(rate, (0.0, 2.0), x[2:], *settings, rtol=1e-10, atol=ATOL_PER_STATE)
        return si.solve_ivp(rate, (0.0, 2.0), x[2:], *settings, **TIGHT)

    return solved


def assert_damped_jacobian(J, x, times, direction=None):
    """``J`` (states × times × inputs, or along ``direction``) is the oscillator's exact Jacobian at
    nine of ``times`` (the closed form is slow): ``y(t) = expm(A t) y0``, to the tolerances."""
    w, g, y0 = x[0], x[1], x[2:]
    A = np.array([[0.0, 1.0], [-(w**2), -g]])
    dA = (np.array([[0.0, 0.0], [-2 * w, 0.0]]), np.array([[0.0, 0.0], [0.0, -1.0]]))
    some = np.unique(np.linspace(0, times.size - 1, 9).astype(int))
    columns = [[*(sl.expm_frechet(A * t, d * t)[1] @ y0 for d in dA), *sl.expm(A * t).T] for t in times[some]]
    exact = np.transpose(columns, (2, 0, 1))  # (times × inputs × states to states × times × inputs)
    np.testing.assert_allclose(J[:, some], exact if direction is None else exact @ direction, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
@pytest.mark.parametrize("t_eval", [None, np.linspace(0.5, 2.0, 4)], ids=["steps", "t_eval"])
def test_forward_sensitivities_in_a_captured_parameter_args_and_y0(method, t_eval):
    """Forward mode in what the right-hand side closes over, in ``args`` and in ``y0``, one chunk of
    four tangents, at the solver's steps or ``t_eval``: the closed form, reverse mode and finite
    differences (at ``t_span``'s end, which they do not move), each to the tolerances."""
    x, h, solved = np.array([1.3, 0.2, 1.0, -0.5]), 1e-6, damped(method, t_eval)
    forward = cr.jacobian(lambda x: solved(x).y, x, mode="forward")
    assert_damped_jacobian(forward, x, solved(x).t)

    def loss(x):
        return np.sum(solved(x).y ** 2)

    np.testing.assert_allclose(cr.jacobian(loss, x, mode="forward"), cr.gradient(loss, x)[0], rtol=1e-7)
    fd = [(solved(x + h * e).y[:, -1] - solved(x - h * e).y[:, -1]) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(forward[:, -1], np.transpose(fd), rtol=1e-5, atol=1e-7)


def test_forward_sensitivities_one_tangent_at_a_time_dense_output_and_atol_per_state():
    """``cr.derivative`` and ``cr.jvp`` push one tangent (no chunk axis); ``dense_output=True`` leaves
    ``result.y`` and its tangent as they are; an ``atol`` per state applies to each tangent's."""
    x, solved = np.array([1.3, 0.2, 1.0, -0.5]), damped()
    times = solved(x).t
    d_w = cr.derivative(lambda w: solved(np.array([w, *x[1:]])).y, x[0])
    assert_damped_jacobian(d_w, x, times, np.array([1.0, 0.0, 0.0, 0.0]))
    direction = np.array([1.0, -2.0, 0.5, 3.0])
    _, tangent = cr.jvp(lambda x: damped(dense_output=True)(x).y, (x,), (direction,))
    assert_damped_jacobian(tangent, x, times, direction)
    for solved in (damped(dense_output=True), damped(atol_per_state=True)):
        assert_damped_jacobian(cr.jacobian(lambda x, solved=solved: solved(x).y, x, mode="forward"), x, solved(x).t)


def test_forward_mode_solves_the_sensitivities_once():
    """Forward mode costs the primal solve and one solve of the sensitivities, not one solve per
    entry of ``result.y``: it calls the right-hand side a few times as often as SciPy does."""

    def final(k, method, calls):
        def rate(t, y):
            counted(calls)
            return -k * y

        return np.sum(si.solve_ivp(rate, (0.0, 2.0), np.array([1.0, 2.0]), method=method, **TIGHT).y[:, -1] ** 2)

    for method in ("RK45", "LSODA"):
        plain, forward = [], []
        final(0.6, method, plain)
        derivative = cr.derivative(lambda k, method=method: final(k, method, forward), 0.6)
        assert derivative == pytest.approx(-2 * 5.0 * 2.0 * np.exp(-1.2 * 2.0), rel=1e-8)  # (sum y0² exp(-2 k T))
        assert len(forward) < 4 * len(plain)


def counted(calls: list) -> None:
    """One more call of a right-hand side, in ``calls`` (the engines run it as it is)."""
    calls.append(None)


cr.non_differentiable(counted)


def odeint_oscillator(theta, y0, t):
    return si.odeint(lambda y, t, w, g: oscillator(t, y, w, g), y0, t, args=tuple(theta), rtol=1e-11, atol=1e-12)


def test_odeint_against_finite_differences_in_every_argument():
    def loss(theta, y0, t):
        y = odeint_oscillator(theta, y0, t)
        return np.sum(y[:, 0] ** 2) + y[-1, 1]

    theta, y0, t, h = np.array([1.3, 0.2]), np.array([1.0, 0.0]), np.linspace(0.0, 2.0, 5), 1e-6
    gradients = cr.gradient(loss, theta, y0, t)
    for k, x in enumerate((theta, y0, t)):
        def moved(dx, k=k):
            parts = [theta, y0, t]
            parts[k] = parts[k] + dx
            return loss(*parts)

        fd = [(moved(h * e) - moved(-h * e)) / (2 * h) for e in np.eye(x.size)]
        np.testing.assert_allclose(gradients[k], fd, rtol=1e-6, atol=1e-7)


def test_odeint_forward_mode_tfirst_and_full_output():
    theta, y0, t = np.array([1.3, 0.2]), np.array([1.0, 0.0]), np.linspace(0.0, 2.0, 5)
    forward = cr.jacobian(lambda th: odeint_oscillator(th, y0, t).ravel(), theta, mode="forward")
    reverse = cr.jacobian(lambda th: odeint_oscillator(th, y0, t).ravel(), theta, mode="reverse")
    np.testing.assert_allclose(forward, reverse, rtol=1e-8, atol=1e-10)  # (two solves, each to the tolerances)

    def decayed(k):  # y(1) = exp(-k), with func(t, y) and the info dict
        settings = {"tfirst": True, "full_output": True, "rtol": 1e-11, "atol": 1e-12}
        y, info = si.odeint(lambda t, y: -k * y, np.array([1.0]), [0.0, 1.0], **settings)
        assert info["message"] == "Integration successful."
        return y[-1, 0]

    assert cr.gradient(decayed, 0.5)[0] == pytest.approx(-np.exp(-0.5), rel=1e-8)
    assert cr.derivative(decayed, 0.5) == pytest.approx(-np.exp(-0.5), rel=1e-8)
    with pytest.raises(cr.NoRuleError, match="a Hessian"):
        cr.hessian(decayed, 0.5)


def central_differences(f, x, h=1e-6):
    """``f``'s Jacobian at the vector ``x`` by central differences, one column per entry of ``x``."""
    return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)], axis=-1)


def assert_forward_agrees(f, x, rtol=1e-5, atol=1e-7):
    """Forward mode's Jacobian of ``f`` at ``x`` (one chunk of tangents) is finite differences' and
    reverse mode's (each solve to its tolerances)."""
    forward = cr.jacobian(f, x, mode="forward")
    np.testing.assert_allclose(forward, central_differences(f, x), rtol=rtol, atol=atol)
    np.testing.assert_allclose(forward, cr.jacobian(f, x, mode="reverse"), rtol=1e-8, atol=1e-10)


def pendulum_angle_at_a_differentiated_horizon(t_end):
    def rhs(t, y):
        return np.stack([y[1], -np.sin(y[0])])

    sol = si.solve_ivp(rhs, (0.0, t_end), np.array([0.8, 0.0]), rtol=1e-12, atol=1e-12)
    return sol.y[0, -1] ** 2 + 0.1 * t_end


def odeint_at_differentiated_sample_times(t):
    def rhs(y, t):
        return np.stack([y[1], -4.0 * y[0]])

    ys = si.odeint(rhs, np.array([1.0, 0.0]), t, rtol=1e-12, atol=1e-12)
    return np.sum(ys[:, 0] * np.array([1.0, 2.0, 3.0, 4.0]))


def test_forward_mode_moves_t_spans_end():
    """A later end moves the last column along the solution, ``fun(T, y(T)) dT``: forward mode (one
    tangent, and a chunk) as finite differences and reverse mode. A Hessian through the solution
    is refused, never a number: the adjoint's pullback is not differentiated."""
    f, h = pendulum_angle_at_a_differentiated_horizon, 1e-6
    fd = (f(1.2 + h) - f(1.2 - h)) / (2 * h)
    assert cr.derivative(f, 1.2) == pytest.approx(fd, rel=1e-5)
    assert cr.derivative(f, 1.2) == pytest.approx(cr.gradient(f, 1.2)[0], rel=1e-9)
    assert_forward_agrees(lambda x: np.array([f(x[0])]), np.array([1.2]))
    with pytest.raises(cr.NoRuleError, match=r"no forward rule for .*solve_ivp.*a Hessian"):
        cr.hessian(f, 1.2)
    with pytest.raises(cr.NoRuleError, match=r"no forward rule for .*solve_ivp.*first derivatives only"):
        cr.derivative(lambda t: cr.derivative(f, t), 1.2)


def test_forward_mode_moves_t_spans_start_and_the_results_times():
    """A later start starts the sensitivities from ``dy0 - fun(t0, y0) dt0``; ``sol.t`` (the solver's
    steps) carries ``t_span``'s ends' tangents at its ends and none between, where the step control
    put them; the first column, ``y0`` itself, does not move with the start (reverse mode as forward,
    whose derivative of it had been ``-fun(t0, y0)``)."""

    def solved(x):  # t_span = x[:2], y0 = x[2:]
        return si.solve_ivp(lambda t, y: np.stack([y[1], -y[0]]), (x[0], x[1]), x[2:], rtol=1e-10, atol=1e-10)

    x = np.array([0.3, 1.1, 1.0, 0.5])  # (a short span: the reverse Jacobian of sol.y solves one adjoint per entry)
    first = cr.jacobian(lambda x: solved(x).y[:, 0], x, mode="reverse")
    np.testing.assert_allclose(first, [[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]], atol=1e-12)
    assert_forward_agrees(lambda x: np.concatenate([solved(x).y[:, -1], solved(x).y[:, 0]]), x)
    steps = solved(x).t.size
    for f in (lambda x: solved(x).t, lambda x: solved(x).y.ravel()):  # (its steps between are the solver's)
        forward = cr.jacobian(f, x, mode="forward")
        np.testing.assert_allclose(forward, cr.jacobian(f, x, mode="reverse"), rtol=1e-8, atol=1e-10)
    expected_t = np.zeros((steps, 4))
    expected_t[0, 0] = expected_t[-1, 1] = 1.0
    np.testing.assert_array_equal(cr.jacobian(lambda x: solved(x).t, x, mode="forward"), expected_t)


def test_forward_mode_moves_t_eval_with_y0_and_parameters():
    """``t_eval`` (an array, or a list holding a dual number) moves its columns along the solution,
    with ``t_span``'s start, ``y0``, ``args`` and a captured parameter in the same chunk."""

    def solved(x):  # t_span's start x[0], the frequency captured x[1], the damping in args x[2], y0, t_eval
        w = x[1]

        def rate(t, y, g):
            return np.stack([y[1], -(w**2) * y[0] - g * y[1]])

        return si.solve_ivp(rate, (x[0], 2.0), x[3:5], t_eval=x[5:], args=(x[2],), rtol=1e-12, atol=1e-12)

    x = np.array([0.1, 1.3, 0.2, 1.0, -0.5, 0.5, 1.0, 1.6])
    assert_forward_agrees(lambda x: solved(x).y.ravel(), x)
    np.testing.assert_array_equal(cr.jacobian(lambda x: solved(x).t, x, mode="forward"), np.eye(8)[5:])

    def listed(end):  # y = exp(sin t) at [0.5, end]
        return si.solve_ivp(lambda t, y: np.cos(t) * y, (0.0, 2.0), np.array([1.0]), t_eval=[0.5, end], **TIGHT).y[0]

    np.testing.assert_allclose(cr.derivative(listed, 1.5), [0.0, np.cos(1.5) * np.exp(np.sin(1.5))], rtol=1e-8)


def test_forward_mode_moves_odeints_times():
    """odeint's ``t``, ``t[0]`` included (the start: the first row, ``y0``, stays), alone and with
    ``y0`` and ``args``, one chunk of tangents and one tangent at a time."""
    f, t = odeint_at_differentiated_sample_times, np.array([0.0, 0.7, 1.4, 2.0])
    assert_forward_agrees(lambda t: np.array([f(t)]), t)
    direction = np.array([1.0, -0.5, 0.25, 2.0])
    _, tangent = cr.jvp(f, (t,), (direction,))
    assert tangent == pytest.approx(cr.gradient(f, t)[0] @ direction, rel=1e-9)
    with pytest.raises(cr.NoRuleError, match=r"no forward rule for .*odeint.*a Hessian"):
        cr.hessian(f, t)

    def sampled(x):  # t = x[:4], y0 = x[4:6], the damping in args x[6]
        rate = lambda y, t, g: oscillator(t, y, 1.3, g)  # noqa: E731
        return si.odeint(rate, x[4:6], x[:4], args=(x[6],), rtol=1e-12, atol=1e-12).ravel()

    x = np.array([0.1, 0.7, 1.4, 2.0, 1.0, -0.2, 0.3])
    assert_forward_agrees(sampled, x)


def test_right_hand_sides_building_arrays_of_captured_values_in_forward_mode():
    """np.array([...]) of values the right-hand side closes over, which hold forward mode's dual
    numbers: the solver steps on their plain values (np.array of dual numbers raised), the adjoint
    pairs with what they move."""

    def final(k):
        def rhs(t, y):
            return np.array([y[1], -k * y[0]])

        return si.solve_ivp(rhs, (0.0, 1.0), np.array([1.0, 0.0]), **TIGHT).y[0, -1]

    def sampled(k):
        return si.odeint(lambda y, t: np.array([y[1], -k * y[0]]), np.array([1.0, 0.0]), [0.0, 1.0], **TIGHT)[-1, 0]

    h = 1e-6
    for f in (final, sampled):
        fd = (f(2.0 + h) - f(2.0 - h)) / (2 * h)
        assert cr.derivative(f, 2.0) == pytest.approx(fd, rel=1e-6)
        assert cr.derivative(f, 2.0) == pytest.approx(cr.gradient(f, 2.0)[0], rel=1e-8)


def test_the_results_times_pair_with_its_states():
    """sol.t: t_eval, or the solver's steps from t_span's start to its end; its cotangent goes to
    t_eval and to t_span's ends (the steps between, where the step control put them, are held)."""

    def area(k, T, t_eval=True):  # ∫_0^T exp(-k t) dt by trapezoids on the result's times
        times = np.linspace(0.0, T, 41) if t_eval else None
        sol = si.solve_ivp(lambda t, y: -k * y, (0.0, T), np.array([1.0]), t_eval=times, **TIGHT)
        return np.trapezoid(sol.y[0], sol.t)

    k, T, h = 0.5, 2.0, 1e-6
    for t_eval in (True, False):
        dk, dT = cr.gradient(lambda k, T: area(k, T, t_eval), k, T)
        assert dT == pytest.approx((area(k, T + h, t_eval) - area(k, T - h, t_eval)) / (2 * h), rel=1e-6)
        if t_eval:  # the times move with T alone
            assert dk == pytest.approx((area(k + h, T) - area(k - h, T)) / (2 * h), rel=1e-6)
        else:  # the steps held: ∫ exp(-k t) dt's derivative to the trapezoids' accuracy
            assert dk == pytest.approx((T * np.exp(-k * T) * k - (1 - np.exp(-k * T))) / k**2, rel=1e-3)

    def constant_times(k):
        return area(k, 2.0)

    assert cr.derivative(constant_times, k) == pytest.approx(cr.gradient(constant_times, k)[0], rel=1e-10)
