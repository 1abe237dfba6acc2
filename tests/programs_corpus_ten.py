"""A tenth corpus of whole programs: higher-order and composed differentiation, where automatic
differentiation breaks. Programs that call the public API inside themselves (``cr.gradient``,
``cr.value_and_gradient``, ``cr.derivative``, ``cr.jvp``, ``cr.jacobian``, ``cr.hessian``,
``cr.pullback``) on inner functions closing over the outer argument: one inner gradient step of
meta-learning then an outer loss, a Newton step inside a loss, Hessian-vector products by ``jvp``
of a gradient, Gauss-Newton steps with a Jacobian, implicit layers, gradient penalties and
Laplacians of a network (physics-informed losses), with the engine, the mode, ``argnums`` and
``has_aux`` varied inside; the classic perturbation-confusion tests; third derivatives and mixed
partials by nesting; user rules, ``cr.checkpoint``, loops with data-dependent exits, dataclass
parameters, SciPy's solvers with their implicit-function rules and ``np.linalg``'s
factorizations, all inside another differentiation.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.integrate
import scipy.optimize
from program_checks import SCIPY_WRAPPER, new_corpus

import chainrules as cr

PROGRAMS, program = new_corpus()

# a ruled callable (a user's rule, a SciPy solver) called on the tape's values inside the function
RULE_ON_TAPE = SCIPY_WRAPPER

RNG = np.random.default_rng(1010)
X_TRAIN = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.8], [-0.6, 0.2, 0.4], [0.9, 0.9, -0.5]])
Y_TRAIN = np.array([0.7, -0.3, 0.2, 1.1])
X_TEST = np.array([[0.2, -0.4, 1.0], [-0.8, 0.6, 0.1], [0.5, 0.1, -0.9]])
Y_TEST = np.array([0.1, -0.6, 0.4])
W0 = np.array([0.3, -0.2, 0.5])
POINTS = np.array([[0.2, -0.1], [0.7, 0.4], [-0.3, 0.5]])
SPD = np.array([[3.0, 0.4, 0.2], [0.4, 2.5, -0.3], [0.2, -0.3, 2.0]])


def rosenbrock(z):
    return np.sum(100.0 * (z[1:] - z[:-1] ** 2) ** 2 + (1.0 - z[:-1]) ** 2)


def squared_error(w, X, y):
    return np.mean((X @ w - y) ** 2)


# ----- perturbation confusion (Siskind and Pearlmutter) ------------------------------------------


@program(1.3, hessian=True, nested=True)
def perturbation_confusion_by_derivative(x):
    # d/dy (x y + y^2) at y = 1 is x + 2, never 2 x + 2
    return x**2 * cr.derivative(lambda y: x * y + y**2, 1.0)


@program(0.8, hessian=True, nested=True)
def perturbation_confusion_tape_inside_source(x):
    inner = cr.gradient(lambda y: x + y, 1.0, engine="tape")[0]
    return x * inner + x**3 * cr.gradient(lambda y: x * y * y, 2.0, engine="tape")[0]


@program(np.array([0.4, -0.7, 1.2]), hessian=True, nested=True)
def perturbation_confusion_with_arrays(x):
    g = cr.gradient(lambda y: np.sum(x * y + y**2), np.ones(3))[0]  # x + 2
    return np.sum(x * g) + np.prod(g)


@program(np.array([0.5, 0.9]), hessian=True, nested=True)
def perturbation_confusion_in_a_jacobian(x):
    J = cr.jacobian(lambda y: x * y + np.sin(y) * x[::-1], np.array([0.3, -0.2]), mode="forward")
    return np.sum(J @ x) + np.trace(J) ** 2


@program(0.6, hessian=True, nested=True)
def perturbation_confusion_by_jvp(x):
    _, dy = cr.jvp(lambda y: x * y + np.exp(x * y), (1.0,), (1.0,))
    return x * dy


@program(0.9, hessian=True, nested=True)
def same_derivative_operator_at_two_levels(x):
    def d(g):
        return lambda z: cr.derivative(g, z)

    # the derivative of y -> x y^3 at x, then the derivative of that in x, both by the same d
    inner = d(lambda y: x * y**3)
    return d(lambda u: inner(u) * x)(x) + inner(x)


@program(1.1, hessian=True, nested=True)
def gradient_of_a_closure_over_a_derivative(x):
    def slope_at(a):
        return cr.derivative(lambda t: np.sin(a * t) * x, 0.5)

    return cr.gradient(lambda a: slope_at(a) * a, x)[0] + slope_at(x)


# ----- meta-learning: inner gradient steps, then an outer loss ------------------------------------


@program(W0, 0.1, hessian=True, nested=True)
def maml_one_inner_step(w, lr):
    g = cr.gradient(squared_error, w, X_TRAIN, Y_TRAIN, argnums=0)
    adapted = w - lr * g
    return squared_error(adapted, X_TEST, Y_TEST)


@program(W0, hessian=True, nested=True)
def maml_inner_step_on_the_tape(w):
    g = cr.gradient(lambda v: np.sum((X_TRAIN @ v - Y_TRAIN) ** 2) + 0.1 * np.sum(v**4), w, engine="tape")[0]
    adapted = w - 0.05 * g
    return np.sum((X_TEST @ adapted - Y_TEST) ** 2)


@program(W0, hessian=True, nested=True)
def maml_two_inner_steps_in_a_loop(w):
    adapted = w
    for lr in (0.1, 0.05):
        g = cr.gradient(lambda v: np.mean(np.tanh(X_TRAIN @ v) - Y_TRAIN) ** 2 + np.sum(v**2) * 0.01, adapted)[0]
        adapted = adapted - lr * g
    return np.sum((np.tanh(X_TEST @ adapted) - Y_TEST) ** 2)


@program(W0, 0.3, hessian=True, nested=True)
def maml_with_value_and_gradient_and_aux(w, b):
    def loss(v, bias):
        r = X_TRAIN @ v + bias - Y_TRAIN
        return np.sum(r**2), r

    (value, residual), (gv, gb) = cr.value_and_gradient(loss, w, b, has_aux=True)
    w1, b1 = w - 0.1 * gv, b - 0.1 * gb
    return np.sum((X_TEST @ w1 + b1 - Y_TEST) ** 2) + 0.01 * value + 0.1 * np.sum(residual**2)


@program(W0, np.array([0.2, -0.1, 0.3]), hessian=True, nested=True)
def inner_gradient_with_argnums_tuple(w, u):
    def coupled(a, b, scale):
        return np.sum(np.sin(a * b) * scale) + np.sum(a**2 * b)

    ga, gb = cr.gradient(coupled, w, u, 2.0, argnums=(0, 1))
    return np.sum(ga**2) + np.sum(gb * w) + np.sum(u**2)


@program(W0, hessian=True, nested=True)
def learned_step_size_by_inner_value_and_gradient_on_the_tape(w):
    value, (g,) = cr.value_and_gradient(lambda v: np.sum(np.exp(0.3 * X_TRAIN @ v)), w, engine="tape")
    step = 0.1 / (1.0 + value)
    return np.sum((w - step * g) ** 2) + value


# ----- Newton, Gauss-Newton, Hessian-vector products --------------------------------------------


@program(np.array([-0.4, 0.7, 0.3]), hessian=True, nested=True)
def newton_step_inside_a_loss(x):
    def f(z):
        return np.sum(np.exp(z) - z) + 0.5 * z @ SPD @ z

    H = cr.hessian(f, x)
    g = cr.gradient(f, x)[0]
    x_new = x - np.linalg.solve(H, g)
    return f(x_new) + np.sum(x_new**2)


@program(np.array([0.9, 1.2, 0.8]), nested=True)
def newton_step_on_rosenbrock_with_the_tape(x):
    H = cr.hessian(rosenbrock, x, engine="tape")
    g = cr.gradient(rosenbrock, x, engine="tape")[0]
    step = np.linalg.solve(H + 10.0 * np.eye(3), g)
    return rosenbrock(x - step)


@program(np.array([0.3, -0.5, 0.8]), np.array([1.0, 0.5, -0.5]), hessian=True, nested=True)
def hessian_vector_product_by_jvp_of_gradient(x, v):
    def f(z):
        return np.sum(np.sin(z) * z**2) + np.prod(z)

    _, hv = cr.jvp(lambda z: cr.gradient(f, z)[0], (x,), (v,))
    return np.sum(hv**2) + f(x)


@program(np.array([0.3, -0.5, 0.8]), hessian=True, nested=True)
def hessian_vector_product_by_jvp_of_tape_gradient(x):
    def f(z):
        return np.sum(np.log1p(z**2)) * np.sum(z)

    _, hv = cr.jvp(lambda z: cr.gradient(f, z, engine="tape")[0], (x,), (x,))
    return x @ hv


@program(np.array([0.3, -0.5, 0.8]), hessian=True, nested=True)
def hessian_vector_product_by_pullback_of_gradient(x):
    def f(z):
        return np.sum(np.cosh(z)) + z[0] * z[1] * z[2]

    g, back = cr.pullback(lambda z: cr.gradient(f, z)[0], x)
    hv = back(np.ones(3))[0]
    return np.sum(hv * x) + 0.5 * np.sum(g**2)


@program(np.array([0.8, 1.3]), hessian=True, nested=True)
def gauss_newton_step_with_forward_jacobian(theta):
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    data = np.array([1.0, 0.62, 0.37, 0.24, 0.14])

    def residual(p):
        return p[0] * np.exp(-p[1] * t) - data

    J = cr.jacobian(residual, theta, mode="forward")
    r = residual(theta)
    step = np.linalg.solve(J.T @ J + 0.1 * np.eye(2), J.T @ r)
    return np.sum(residual(theta - step) ** 2)


@program(np.array([0.8, 1.3]), hessian=True, nested=True)
def gauss_newton_step_with_reverse_tape_jacobian(theta):
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    data = np.array([1.0, 0.62, 0.37, 0.24, 0.14])

    def residual(p):
        return p[0] / (1.0 + p[1] * t) - data

    J = cr.jacobian(residual, theta, mode="reverse", engine="tape")
    r = residual(theta)
    step = np.linalg.lstsq(J, r, rcond=None)[0]
    return np.sum(residual(theta - 0.5 * step) ** 2)


# ----- higher derivatives and mixed partials ------------------------------------------------------


@program(0.7, hessian=True, nested=True)
def third_derivative_three_deep(x):
    def f(t):
        return np.sin(x * t) * t**2

    d3 = cr.derivative(lambda a: cr.derivative(lambda b: cr.derivative(f, b), a), 0.4)
    return d3 * x


@program(0.5, hessian=True)
def fourth_derivative_by_nested_tape_gradients(x):
    def d(g):
        return lambda z: cr.gradient(g, z, engine="tape")[0]

    return d(d(d(lambda z: np.exp(x * z) * z)))(x)


@program(np.array([0.4, -0.3]), hessian=True, nested=True)
def jacobian_of_a_hessian(x):
    def f(z):
        return np.sum(z**4) + np.exp(z[0] * z[1])

    T = cr.jacobian(lambda z: cr.hessian(f, z), x)
    return np.sum(T * np.arange(8.0).reshape(2, 2, 2)) + np.sum(T**2)


@program(1.2, 0.4, hessian=True, nested=True)
def mixed_partial_by_nested_derivative(x, y):
    def g(a, b):
        return np.sin(a * b) + a**2 * b**3

    dxy = cr.derivative(lambda b: cr.derivative(lambda a: g(a, b), x), y)
    return dxy + x * y


@program(np.array([0.5, -0.2]), hessian=True, nested=True)
def gradient_of_a_derivative_mixed_modes(x):
    def f(z, s):
        return np.sum(np.tanh(s * z)) * s

    d_ds = cr.derivative(lambda s: cr.gradient(f, x, s)[0] @ x, 0.8)
    return d_ds**2


# ----- physics-informed losses: derivatives of a network in its input -----------------------------


def small_network(params, p):
    W = params[:6].reshape(3, 2)
    v = params[6:9]
    return v @ np.tanh(W @ p)


PARAMS = np.array([0.4, -0.3, 0.2, 0.5, -0.6, 0.1, 0.7, -0.4, 0.3])


@program(PARAMS, hessian=True)
def laplacian_residual_loss(params):
    total = 0.0
    for p in POINTS:
        H = cr.hessian(lambda q: small_network(params, q), p)
        total = total + (np.trace(H) + np.sum(p)) ** 2
    return total


@program(PARAMS, nested=True)
def laplacian_residual_loss_through_the_tape(params):
    total = 0.0
    for p in POINTS:
        H = cr.hessian(lambda q: small_network(params, q), p, engine="tape")
        total = total + np.trace(H) ** 2
    return total


@program(PARAMS, hessian=True, nested=True)
def gradient_penalty_of_a_critic(params):
    total = 0.0
    for p in POINTS:
        g = cr.gradient(lambda q: small_network(params, q), p)[0]
        total = total + (np.sqrt(np.sum(g**2) + 1e-3) - 1.0) ** 2
    return total + small_network(params, POINTS[0])


@program(PARAMS, hessian=True, nested=True)
def input_jacobian_penalty_reverse_mode(params):
    def features(p):
        W = params[:6].reshape(3, 2)
        return np.tanh(W @ p) * params[6:9]

    J = cr.jacobian(features, POINTS[1], mode="reverse")
    return np.sum(J**2) + np.linalg.det(J[:2] @ J[:2].T + np.eye(2))


# ----- user rules, checkpoints, loops with data-dependent exits ------------------------------------


def smooth_abs(x):
    return np.sqrt(x * x + 0.01)


@cr.rrule.register(smooth_abs)
def rrule_smooth_abs(x):
    y = np.sqrt(x * x + 0.01)

    def smooth_abs_pullback(dy):
        return cr.NoTangent(), dy * x / y

    return y, smooth_abs_pullback


@cr.frule.register(smooth_abs)
def frule_smooth_abs(tangents, x):
    y = np.sqrt(x * x + 0.01)
    return y, tangents[1] * x / y


def cubic_shrink(x):
    return x - x**3 / 3.0


@cr.rrule.register(cubic_shrink)
def rrule_cubic_shrink(x):
    def cubic_shrink_pullback(dy):
        return cr.NoTangent(), dy * (1.0 - x**2)

    return x - x**3 / 3.0, cubic_shrink_pullback


@program(np.array([0.4, -0.8, 0.3]), hessian=True, nested=True, refuses={"tape": RULE_ON_TAPE})
def user_rule_inside_an_inner_gradient(x):
    g = cr.gradient(lambda w: np.sum(smooth_abs(w * x - 0.2)), x)[0]
    return np.sum(g * x) + np.sum(smooth_abs(g))


@program(np.array([0.4, -0.8, 0.3]), hessian=True, nested=True, refuses={"tape": RULE_ON_TAPE})
def reverse_only_user_rule_differentiated_twice(x):
    g = cr.gradient(lambda w: np.sum(cubic_shrink(w) * x), x)[0]
    return np.sum(g**2) + np.sum(cubic_shrink(x) ** 2)


@program(np.array([0.4, -0.8, 0.3]), hessian=True, nested=True)
def user_rules_only_inside_an_inner_source_gradient(x):
    # the rules run inside the source engine's gradient only: the tape outside sees its result
    g = cr.gradient(lambda w: np.sum(smooth_abs(w * x - 0.2) * cubic_shrink(w)), x)[0]
    return np.sum(g * x) + np.sum(g**2)


@program(0.6, hessian=True, nested=True, refuses={"tape": RULE_ON_TAPE})
def derivative_of_a_user_rule_inside_a_derivative(x):
    inner = cr.derivative(lambda t: smooth_abs(x * t) * cubic_shrink(t), 0.3)
    return inner * smooth_abs(x)


@program(np.array([0.5, -0.3, 0.9]), hessian=True, nested=True)
def checkpointed_layer_inside_an_inner_gradient(x):
    layer = cr.checkpoint(lambda h: np.tanh(h * x + 0.1))

    def loss(w):
        return np.sum(layer(layer(w)) ** 2)

    g = cr.gradient(loss, x)[0]
    return loss(x - 0.3 * g)


@program(np.array([0.5, -0.3, 0.9]), hessian=True, nested=True)
def checkpoint_of_a_function_that_differentiates(x):
    @cr.checkpoint
    def gradient_norm(w):
        g = cr.gradient(lambda v: np.sum(np.sin(v) * v**2), w)[0]
        return np.sum(g**2)

    return gradient_norm(x) + gradient_norm(x * 0.5)


@program(2.0, hessian=True, nested=True)
def derivative_of_newtons_square_root(a):
    def babysqrt(v):
        t = 1.0
        while abs(t * t - v) > 1e-13 * v:
            t = (t + v / t) / 2.0
        return t

    return cr.derivative(babysqrt, a) * a + babysqrt(a * a + 1.0)


@program(np.array([0.3, -0.2]), hessian=True, nested=True)
def implicit_layer_by_iteration_to_convergence(x):
    W = np.array([[0.3, -0.2], [0.1, 0.4]])

    def equilibrium(u):
        z = np.zeros(2)
        for _ in range(200):
            z_next = np.tanh(W @ z + u)
            if np.max(np.abs(z_next - z)) < 1e-14:
                break
            z = z_next
        return z_next

    z = equilibrium(x)
    dz = cr.jacobian(equilibrium, x, mode="forward")
    return np.sum(z**2) + np.trace(dz)


# ----- structured parameters ----------------------------------------------------------------------


@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: float


@program(W0, hessian=True, nested=True)
def dataclass_parameters_inner_gradient_step(w):
    def loss(model):
        return np.sum((X_TRAIN @ model.w + model.b - Y_TRAIN) ** 2)

    model = Linear(w, 0.1)
    grads = cr.gradient(loss, model)[0]
    stepped = Linear(model.w - 0.05 * grads.w, model.b - 0.05 * grads.b)
    return loss(stepped) + np.sum(grads.w**2)


@program(Linear(W0, 0.2))
def dataclass_argument_with_an_inner_gradient(model):
    g = cr.gradient(lambda x: np.sum(np.tanh(x @ model.w + model.b)), X_TEST[0])[0]
    return np.sum(g**2) + model.b**2


@program(W0, hessian=True, nested=True)
def inner_gradient_of_a_dict_of_parameters(w):
    def loss(params):
        return np.sum((np.tanh(X_TRAIN @ params["w"]) * params["scale"] - Y_TRAIN) ** 2)

    grads = cr.gradient(loss, {"w": w, "scale": 1.5})[0]
    return np.sum(grads["w"] ** 2) + grads["scale"] ** 2


# ----- SciPy solvers and np.linalg, differentiated twice ----------------------------------------------


@program(np.array([0.6, 1.4]), hessian=True, nested=True, refuses={"tape": RULE_ON_TAPE})
def implicit_layer_by_fsolve(x):
    def equation(z, a):
        return z + 0.3 * np.tanh(z * a) - a

    z = scipy.optimize.fsolve(equation, np.zeros(2), args=(x,), xtol=1e-13)
    return np.sum(z**2) + np.sum(z * x)


@program(np.array([0.3, 0.4]), hessian=True, nested=True, refuses={"tape": RULE_ON_TAPE})
def gradient_of_a_brentq_root_inside_a_loss(params):
    def root_of(p):
        return scipy.optimize.brentq(lambda t: t**3 + p[0] * t - p[1] - 1.0, -5.0, 5.0, xtol=1e-14)

    g = cr.gradient(root_of, params)[0]
    return root_of(params) + np.sum(g**2)


@program(0.8, hessian=True, nested=True, refuses={"tape": RULE_ON_TAPE})
def quad_of_a_parameter_differentiated_inside(theta):
    def moment(s):
        return scipy.integrate.quad(lambda t: np.exp(-s * t * t) * t**2, 0.0, 2.0, epsabs=1e-13, epsrel=1e-13)[0]

    return cr.derivative(moment, theta) + moment(theta) ** 2


@program(np.array([0.5, -0.3]), hessian=True, nested=True, refuses={"tape": RULE_ON_TAPE})
def minimize_inside_an_outer_loss(x):
    def inner(z, a):
        return np.sum((z - a) ** 2) + 0.1 * np.sum(z**4)

    def jac(z, a):
        return cr.gradient(inner, z, a)[0]

    def hess(z, a):
        return cr.hessian(lambda v: inner(v, a), z)

    res = scipy.optimize.minimize(inner, np.zeros(2), args=(x,), method="trust-exact", jac=jac, hess=hess)
    return np.sum(res.x**2) + np.sum(res.x * x)


@program(np.array([0.4, -0.2, 0.3]), hessian=True, nested=True)
def solve_differentiated_twice(x):
    A = SPD + np.diag(x**2)
    u = np.linalg.solve(A, np.ones(3) + x)
    return u @ u + np.sum(np.linalg.inv(A) * SPD)


@program(np.array([0.4, -0.2, 0.3]), hessian=True, nested=True)
def eigh_differentiated_twice(x):
    A = SPD + np.outer(x, x) + np.diag(x)
    w, V = np.linalg.eigh(A)
    return np.sum(w**2) + w[-1] + np.sum(V[:, 0] ** 4)


@program(np.array([0.4, -0.2, 0.3]), hessian=True, nested=True)
def cholesky_log_determinant_differentiated_twice(x):
    A = SPD + np.outer(x, x)
    L = np.linalg.cholesky(A)
    z = np.linalg.solve(L, x + 1.0)
    return 2.0 * np.sum(np.log(np.diag(L))) + 0.5 * z @ z


@program(np.array([0.4, -0.2, 0.3]), hessian=True, nested=True)
def laplace_approximation_by_an_inner_hessian(w):
    def nll(v):
        logits = X_TRAIN @ v
        return np.sum(np.logaddexp(0.0, logits) - Y_TRAIN * logits) + 0.5 * v @ v

    H = cr.hessian(nll, w)
    return nll(w) + 0.5 * np.linalg.slogdet(H)[1]


@program(np.array([0.4, -0.2, 0.3]), hessian=True, nested=True)
def gradient_of_a_log_det_jacobian_of_a_flow(x):
    def flow(z):
        return z + 0.5 * np.tanh(z[::-1] * np.array([1.0, 0.5, -0.7]))

    J = cr.jacobian(flow, x)
    return np.linalg.slogdet(J)[1] + 0.5 * np.sum(flow(x) ** 2)


@program(np.array([0.4, -0.2]), nested=True)
def forward_jacobian_of_a_forward_jacobian(x):
    def f(z):
        return np.array([1.0, 2.0]) * np.sin(z * x) + z[::-1] ** 3

    T = cr.jacobian(lambda z: cr.jacobian(f, z, mode="forward"), x, mode="forward")
    return np.sum(T * np.arange(8.0).reshape(2, 2, 2))


@program(W0, hessian=True, nested=True)
def tape_gradient_of_a_loss_over_a_dict_of_parameters(w):
    params = {"w": w, "scale": 0.7}

    def loss(x):
        return np.sum(np.tanh(x @ params["w"]) * params["scale"]) + np.sum(x**2) * 0.1

    saliency = cr.gradient(loss, X_TEST[0], engine="tape")[0]
    return np.sum(saliency**2)


@program(np.array([0.5, -0.3, 0.9]), hessian=True, nested=True)
def checkpointed_layer_inside_a_tape_hessian(x):
    layer = cr.checkpoint(lambda h: np.sin(h) * x)
    H = cr.hessian(lambda z: np.sum(layer(z) ** 2), x, engine="tape")
    return np.sum(H) + np.trace(H) ** 2


@program(np.array([0.5, -0.3, 0.9]), hessian=True, nested=True)
def directional_derivatives_inside_a_reverse_jacobian(x):
    def along(v):
        return cr.jvp(lambda z: np.sin(z * x) * z, (x,), (v,))[1]

    J = cr.jacobian(along, np.array([1.0, 0.5, -0.5]), mode="reverse")
    return np.sum(J * SPD) + np.sum(along(x) ** 2)


@program(0.4, hessian=True, nested=True)
def taylor_coefficients_by_recursive_derivatives(x):
    def nth(f, k):
        return f if k == 0 else nth(lambda t: cr.derivative(f, t), k - 1)

    coefficients = [nth(lambda t: np.exp(x * t) * np.cos(t), k)(0.0) / np.prod(np.arange(1.0, k + 1)) for k in range(4)]
    return sum(c * x**k for k, c in enumerate(coefficients))


ESCAPED = "escaped its function"  # a value being differentiated kept past its differentiation
SEEN = []


@program(1.5, refuses={"source": ESCAPED, "tape": ESCAPED, "forward": ESCAPED})
def inner_perturbation_kept_past_its_differentiation(t):
    cr.derivative(lambda s: SEEN.append(s) or s * t, 1.0)
    return SEEN[-1] + t
