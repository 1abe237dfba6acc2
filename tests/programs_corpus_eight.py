"""An eighth corpus of whole programs: code that defines its own rules.

Stable logsumexp and softmax with their own rules, ODE steps with adjoint rules, rules for
methods of user classes, for callable objects and for constructors, pullbacks returning thunks,
functions with a forward rule only, non-differentiable helpers, rules taking dataclasses,
namedtuples, tuples, lists and dicts and returning ``Tangent``s for them, keyword arguments,
rules that call ``cr.rrule_via_ad`` / ``cr.frule_via_ad`` on a callback, and all of these used
inside loops, closures, recursion, Hessians and nested differentiation.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import numpy as np
from program_checks import new_corpus

import chainrules as cr

PROGRAMS, program = new_corpus()

RNG = np.random.default_rng(88)

# a call of a ruled Python function inside the function differentiated (docs/engines.md,
# "Rules for your own functions")
RULED_TAPE = "has a rule that the tape engine cannot use here"
RULED_FORWARD = "has a rule that forward mode cannot use here"
RULED = {"tape": RULED_TAPE, "forward": RULED_FORWARD}  # the callee has a forward rule too
RULED_R = {"tape": RULED_TAPE}
# the callee has a reverse rule only: forward mode takes its body
RULED_TAPE_ONLY = {"tape": RULED_TAPE}

# ----- the user's rules ---------------------------------------------------------------------------


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


@cr.rrule.register(logsumexp)
def rrule_logsumexp(x):
    m = np.max(x)
    e = np.exp(x - m)
    s = np.sum(e)
    y = m + np.log(s)
    project_x = cr.ProjectTo(x)

    def logsumexp_pullback(dy):
        return cr.NoTangent(), cr.Thunk(lambda: project_x(cr.unthunk(dy) * (e / s)))

    return y, logsumexp_pullback


@cr.frule.register(logsumexp)
def frule_logsumexp(tangents, x):
    m = np.max(x)
    e = np.exp(x - m)
    s = np.sum(e)
    dx = cr.unthunk(tangents[1])
    if cr.iszero(dx):
        return m + np.log(s), cr.ZeroTangent()
    return m + np.log(s), np.sum(e * dx) / s


def softmax(x, axis=-1):
    z = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return z / np.sum(z, axis=axis, keepdims=True)


@cr.rrule.register(softmax)
def rrule_softmax(x, axis=-1):
    z = np.exp(x - np.max(x, axis=axis, keepdims=True))
    y = z / np.sum(z, axis=axis, keepdims=True)

    def softmax_pullback(dy):
        dy = cr.unthunk(dy)
        if cr.iszero(dy):
            return cr.NoTangent(), cr.ZeroTangent()
        return cr.NoTangent(), y * (dy - np.sum(dy * y, axis=axis, keepdims=True))

    return y, softmax_pullback


def softplus(x):
    return np.logaddexp(0.0, x)


cr.scalar_rule(softplus, lambda x, *, out: 1.0 - np.exp(-out))


def smooth_relu(x, beta):
    return np.log1p(np.exp(beta * x)) / beta


cr.scalar_rule(
    smooth_relu,
    lambda x, beta: 1.0 / (1.0 + np.exp(-beta * x)),
    lambda x, beta, *, out: (x / (1.0 + np.exp(-beta * x)) - out) / beta,
)


def euler_step(u, theta, dt):
    """One explicit Euler step of du/dt = -theta * u**3 + sin(u)."""
    return u + dt * (-theta * u**3 + np.sin(u))


@cr.rrule.register(euler_step)
def rrule_euler_step(u, theta, dt):
    y = u + dt * (-theta * u**3 + np.sin(u))

    def euler_step_pullback(dy):
        dy = cr.unthunk(dy)
        if cr.iszero(dy):
            return cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent(), cr.ZeroTangent()
        du = dy * (1.0 + dt * (-3.0 * theta * u**2 + np.cos(u)))
        dtheta = cr.Thunk(lambda: -dt * np.sum(dy * u**3))
        ddt = cr.Thunk(lambda: np.sum(dy * (-theta * u**3 + np.sin(u))))
        return cr.NoTangent(), du, dtheta, ddt

    return y, euler_step_pullback


@cr.frule.register(euler_step)
def frule_euler_step(tangents, u, theta, dt):
    _, du, dtheta, ddt = (cr.unthunk(t) for t in tangents)
    rhs = -theta * u**3 + np.sin(u)
    y = u + dt * rhs
    dy = du + dt * ((-3.0 * theta * u**2 + np.cos(u)) * du - dtheta * u**3) + ddt * rhs
    return y, dy


@dataclasses.dataclass
class Spring:
    k: float
    rest: float

    def energy(self, x):
        stretch = np.diff(x) - self.rest
        return 0.5 * self.k * np.sum(stretch**2)


@cr.rrule.register(Spring.energy)
def rrule_spring_energy(spring, x):
    stretch = np.diff(x) - spring.rest
    y = 0.5 * spring.k * np.sum(stretch**2)

    def spring_energy_pullback(dy):
        dy = cr.unthunk(dy)
        if cr.iszero(dy):
            return cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent()
        force = spring.k * stretch * dy
        dx = np.concatenate([[0.0], force]) - np.concatenate([force, [0.0]])
        dspring = cr.Tangent[Spring](k=0.5 * np.sum(stretch**2) * dy, rest=-np.sum(force))
        return cr.NoTangent(), dspring, dx

    return y, spring_energy_pullback


def matvec(W, x):
    return W @ x


@cr.rrule.register(matvec)
def rrule_matvec(W, x):
    def matvec_pullback(dy):
        dy = cr.unthunk(dy)
        if cr.iszero(dy):
            return cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent()

        def add_outer(acc):
            acc += np.outer(dy, x)
            return acc

        dW = cr.InplaceableThunk(add_outer, cr.Thunk(lambda: np.outer(dy, x)))
        return cr.NoTangent(), dW, cr.Thunk(lambda: W.T @ dy)

    return W @ x, matvec_pullback


def cube_root(x):
    return np.cbrt(x)


@cr.frule.register(cube_root)
def frule_cube_root(tangents, x):
    y = np.cbrt(x)
    return y, cr.unthunk(tangents[1]) / (3.0 * y**2)


def bin_index(x, edges):
    return int(np.searchsorted(edges, x) - 1)


cr.non_differentiable(bin_index)


@dataclasses.dataclass
class Affine:
    W: np.ndarray
    b: np.ndarray


def affine_apply(layer, x):
    return layer.W @ x + layer.b


@cr.rrule.register(affine_apply)
def rrule_affine_apply(layer, x):
    project_W = cr.ProjectTo(layer.W)

    def affine_apply_pullback(dy):
        dy = cr.unthunk(dy)
        if cr.iszero(dy):
            return cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent()
        dlayer = cr.Tangent[Affine](W=project_W(np.outer(dy, x)), b=dy)
        return cr.NoTangent(), dlayer, layer.W.T @ dy

    return layer.W @ x + layer.b, affine_apply_pullback


def huber(r, delta=1.0):
    a = np.abs(r)
    return np.sum(np.where(a <= delta, 0.5 * r**2, delta * (a - 0.5 * delta)))


@cr.rrule.register(huber)
def rrule_huber(r, *args, delta=1.0):
    if args:
        (delta,) = args
    a = np.abs(r)
    y = np.sum(np.where(a <= delta, 0.5 * r**2, delta * (a - 0.5 * delta)))
    slope = np.clip(r, -delta, delta)

    def huber_pullback(dy):
        dy = cr.unthunk(dy)
        if cr.iszero(dy):
            return (cr.NoTangent(), cr.ZeroTangent()) + (cr.ZeroTangent(),) * len(args)
        if not args:  # delta by keyword: not differentiated
            return cr.NoTangent(), dy * slope
        return cr.NoTangent(), dy * slope, cr.Thunk(lambda: np.sum(dy * np.where(a <= delta, 0.0, a - delta)))

    return y, huber_pullback


@dataclasses.dataclass
class RBFKernel:
    lengthscale: float

    def __call__(self, x, y):
        d = x[:, None] - y[None, :]
        return np.exp(-0.5 * d**2 / self.lengthscale**2)


@cr.rrule.register(RBFKernel)
def rrule_rbf_kernel(k, x, y):
    d = x[:, None] - y[None, :]
    K = np.exp(-0.5 * d**2 / k.lengthscale**2)

    def rbf_kernel_pullback(dK):
        dK = cr.unthunk(dK)
        if cr.iszero(dK):
            return cr.ZeroTangent(), cr.ZeroTangent(), cr.ZeroTangent()
        g = dK * K
        dl = np.sum(g * d**2) / k.lengthscale**3
        dd = -g * d / k.lengthscale**2
        return cr.Tangent[RBFKernel](lengthscale=dl), np.sum(dd, axis=1), -np.sum(dd, axis=0)

    return K, rbf_kernel_pullback


def trapezoid_of(f, a, b, n):
    """The integral of f over [a, b] by the trapezoid rule on n intervals."""
    h = (b - a) / n
    nodes = [a + i * h for i in range(n + 1)]
    values = [f(t) for t in nodes]
    return h * (0.5 * values[0] + sum(values[1:-1]) + 0.5 * values[-1])


@cr.rrule.register(trapezoid_of)
def rrule_trapezoid_of(f, a, b, n):
    h = (b - a) / n
    weights = [0.5] + [1.0] * (n - 1) + [0.5]
    calls = [cr.rrule_via_ad(f, a + i * h) for i in range(n + 1)]
    values = [y for y, _ in calls]
    total = sum(w * v for w, v in zip(weights, values))

    def trapezoid_of_pullback(dy):
        dy = cr.unthunk(dy)
        df, da, db = cr.ZeroTangent(), -dy * total / n, dy * total / n
        for i, ((_, back), w) in enumerate(zip(calls, weights)):
            dfi, dt = back(dy * h * w)
            df = cr.add(df, dfi)
            dt = cr.unthunk(dt)
            da = da + dt * (1.0 - i / n)
            db = db + dt * (i / n)
        return cr.NoTangent(), df, da, db, cr.NoTangent()

    return h * total, trapezoid_of_pullback


class Pair(NamedTuple):
    mean: np.ndarray
    log_std: np.ndarray


def gaussian_nll(p, x):
    z = (x - p.mean) * np.exp(-p.log_std)
    return np.sum(0.5 * z**2 + p.log_std)


@cr.rrule.register(gaussian_nll)
def rrule_gaussian_nll(p, x):
    inv = np.exp(-p.log_std)
    z = (x - p.mean) * inv
    y = np.sum(0.5 * z**2 + p.log_std)

    def gaussian_nll_pullback(dy):
        dy = cr.unthunk(dy)
        dz = dy * z
        dp = cr.Tangent[Pair](mean=-dz * inv, log_std=dy * (1.0 - z**2))
        return cr.NoTangent(), dp, dz * inv

    return y, gaussian_nll_pullback


def polar_to_cartesian(r, theta):
    return r * np.cos(theta), r * np.sin(theta)


@cr.rrule.register(polar_to_cartesian)
def rrule_polar_to_cartesian(r, theta):
    c, s = np.cos(theta), np.sin(theta)

    def polar_to_cartesian_pullback(dxy):
        dxy = cr.unthunk(dxy)
        if cr.iszero(dxy):
            return cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent()
        dx, dy = (cr.unthunk(t) for t in dxy)
        return cr.NoTangent(), dx * c + dy * s, r * (dy * c - dx * s)

    return (r * c, r * s), polar_to_cartesian_pullback


def weighted_total(items):
    """sum of w * v**2 for (w, v) in a list of pairs."""
    return sum(w * v**2 for w, v in items)


@cr.rrule.register(weighted_total)
def rrule_weighted_total(items):
    y = sum(w * v**2 for w, v in items)

    def weighted_total_pullback(dy):
        dy = cr.unthunk(dy)
        parts = [cr.Tangent[tuple](dy * v**2, 2.0 * dy * w * v) for w, v in items]
        return cr.NoTangent(), cr.Tangent[list](*parts)

    return y, weighted_total_pullback


def dict_energy(params):
    return params["a"] * np.sum(params["x"] ** 2) + np.sin(params["a"])


@cr.rrule.register(dict_energy)
def rrule_dict_energy(params):
    a, x = params["a"], params["x"]
    y = a * np.sum(x**2) + np.sin(a)

    def dict_energy_pullback(dy):
        dy = cr.unthunk(dy)
        return cr.NoTangent(), cr.Tangent[dict]({"a": dy * (np.sum(x**2) + np.cos(a)), "x": 2.0 * dy * a * x})

    return y, dict_energy_pullback


def masked_mean(x, mask):
    return np.sum(x * mask) / np.sum(mask)


@cr.rrule.register(masked_mean)
def rrule_masked_mean(x, mask):
    n = np.sum(mask)

    def masked_mean_pullback(dy):
        return cr.NoTangent(), cr.unthunk(dy) * mask / n, cr.NoTangent()

    return np.sum(x * mask) / n, masked_mean_pullback


@dataclasses.dataclass
class Precision:
    """A Gaussian's precision, built from a standard deviation."""

    tau: float

    @classmethod
    def from_std(cls, sigma):
        return cls(1.0 / sigma**2)


def make_precision(sigma):
    return Precision(1.0 / sigma**2)


@cr.rrule.register(make_precision)
def rrule_make_precision(sigma):
    def make_precision_pullback(dp):
        dp = cr.unthunk(dp)
        if cr.iszero(dp):
            return cr.NoTangent(), cr.ZeroTangent()
        return cr.NoTangent(), -2.0 * dp.tau / sigma**3

    return Precision(1.0 / sigma**2), make_precision_pullback


def scale_rows(A, s):
    return A * s[:, None]


@cr.rrule.register(scale_rows, np.ndarray, np.ndarray)
def rrule_scale_rows_arrays(A, s):
    def scale_rows_pullback(dY):
        dY = cr.unthunk(dY)
        if cr.iszero(dY):
            return cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent()
        return cr.NoTangent(), dY * s[:, None], np.sum(dY * A, axis=1)

    return A * s[:, None], scale_rows_pullback


def log_det_spd(A):
    L = np.linalg.cholesky(0.5 * (A + A.T))
    return 2.0 * np.sum(np.log(np.diag(L)))


@cr.rrule.register(log_det_spd)
def rrule_log_det_spd(A):
    S = 0.5 * (A + A.T)
    L = np.linalg.cholesky(S)
    y = 2.0 * np.sum(np.log(np.diag(L)))
    Sinv = np.linalg.inv(S)

    def log_det_spd_pullback(dy):
        return cr.NoTangent(), cr.Thunk(lambda: cr.unthunk(dy) * Sinv)

    return y, log_det_spd_pullback


def apply_n_times(f, x, n):
    for _ in range(n):
        x = f(x)
    return x


@cr.rrule.register(apply_n_times)
def rrule_apply_n_times(f, x, n):
    backs = []
    for _ in range(n):
        x, back = cr.rrule_via_ad(f, x)
        backs.append(back)

    def apply_n_times_pullback(dy):
        df = cr.ZeroTangent()
        for back in reversed(backs):
            dfi, dy = back(dy)
            df = cr.add(df, dfi)
        return cr.NoTangent(), df, dy, cr.NoTangent()

    return x, apply_n_times_pullback


@cr.frule.register(apply_n_times)
def frule_apply_n_times(tangents, f, x, n):
    _, df, dx, _ = tangents
    for _ in range(n):
        x, dx = cr.frule_via_ad((df, dx), f, x)
    return x, dx


def fixed_point_of(g, theta, x0):
    """x = g(x, theta), by iteration from x0 (a contraction)."""
    x = x0
    for _ in range(200):
        x = g(x, theta)
    return x


@cr.rrule.register(fixed_point_of)
def rrule_fixed_point_of(g, theta, x0):
    x = fixed_point_of(g, theta, x0)
    _, back = cr.rrule_via_ad(g, x, theta)

    def fixed_point_of_pullback(dx):
        # w = dx + J_x^T w, solved by iteration; then theta's cotangent is J_theta^T w
        dx = cr.unthunk(dx)
        w = dx
        for _ in range(200):
            w = dx + cr.unthunk(back(w)[1])
        dg, _, dtheta = back(w)
        return cr.NoTangent(), dg, dtheta, cr.NoTangent()

    return x, fixed_point_of_pullback


def clamp_grad_identity(x):
    """The identity, whose rule passes the cotangent through unchanged (a straight-through op)."""
    return x * 1.0


@cr.rrule.register(clamp_grad_identity)
def rrule_clamp_grad_identity(x):
    def clamp_grad_identity_pullback(dy):
        return cr.NoTangent(), dy

    return x * 1.0, clamp_grad_identity_pullback


def mean_var(x):
    mu = np.mean(x)
    return mu, np.mean((x - mu) ** 2)


@cr.rrule.register(mean_var)
def rrule_mean_var(x):
    n = x.size
    mu = np.mean(x)
    c = x - mu
    var = np.mean(c**2)

    def mean_var_pullback(d):
        d = cr.unthunk(d)
        if cr.iszero(d):
            return cr.NoTangent(), cr.ZeroTangent()
        dmu, dvar = (cr.unthunk(t) for t in d)
        return cr.NoTangent(), dmu / n + dvar * 2.0 * c / n

    return (mu, var), mean_var_pullback


def gather_rows(E, idx):
    return E[idx]


@cr.rrule.register(gather_rows)
def rrule_gather_rows(E, idx):
    shape = E.shape

    def gather_rows_pullback(dY):
        dY = cr.unthunk(dY)
        if cr.iszero(dY):
            return cr.NoTangent(), cr.ZeroTangent(), cr.NoTangent()

        def add_rows(acc):
            np.add.at(acc, idx, dY)
            return acc

        return (
            cr.NoTangent(),
            cr.InplaceableThunk(add_rows, cr.Thunk(lambda: add_rows(np.zeros(shape)))),
            cr.NoTangent(),
        )

    return E[idx], gather_rows_pullback


@dataclasses.dataclass
class Quadratic:
    """A callable quadratic form 0.5 x^T A x - b^T x, whose rule is registered on the instance's class."""

    A: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return 0.5 * x @ self.A @ x - self.b @ x


@cr.rrule.register(Quadratic)
def rrule_quadratic(q, x):
    Ax = q.A @ x
    y = 0.5 * x @ Ax - q.b @ x

    def quadratic_pullback(dy):
        dy = cr.unthunk(dy)
        dq = cr.Tangent[Quadratic](A=0.5 * dy * np.outer(x, x), b=-dy * x)
        return dq, dy * (0.5 * (Ax + q.A.T @ x) - q.b)

    return y, quadratic_pullback


@cr.frule.register(Quadratic)
def frule_quadratic(tangents, q, x):
    dq, dx = tangents
    Ax = q.A @ x
    y = 0.5 * x @ Ax - q.b @ x
    dx = cr.unthunk(dx)
    dy = (0.5 * (Ax + q.A.T @ x) - q.b) @ dx if not cr.iszero(dx) else 0.0
    if not cr.iszero(dq):
        dy = dy + 0.5 * x @ cr.unthunk(dq.A) @ x - cr.unthunk(dq.b) @ x
    return y, dy


def sq_norm(x):
    return np.sum(x * x)


cr.scalar_rule(sq_norm, lambda x: 2.0 * x)  # (an elementwise partial of a reduction)


def tanh_layer(W, x):
    return np.tanh(W @ x)


@cr.rrule.register(tanh_layer)
def rrule_tanh_layer(W, x):
    y = np.tanh(W @ x)
    project_W, project_x = cr.ProjectTo(W), cr.ProjectTo(x)

    def tanh_layer_pullback(dy):
        dy = cr.unthunk(dy)
        if cr.iszero(dy):
            return cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent()
        dz = dy * (1.0 - y**2)
        return cr.NoTangent(), project_W(np.outer(dz, x)), project_x(W.T @ dz)

    return y, tanh_layer_pullback


@cr.frule.register(tanh_layer)
def frule_tanh_layer(tangents, W, x):
    _, dW, dx = (cr.unthunk(t) for t in tangents)
    y = np.tanh(W @ x)
    dz = cr.ZeroTangent()
    if not cr.iszero(dW):
        dz = dz + dW @ x
    if not cr.iszero(dx):
        dz = dz + W @ dx
    return y, (1.0 - y**2) * dz


# ----- programs ------------------------------------------------------------------------------------


@program(np.array([1.2, -0.3, 2.5, 0.7]), hessian=True, nested=True, refuses=RULED)
def cross_entropy_with_a_stable_logsumexp(logits):
    label = 2
    return logsumexp(logits) - logits[label] + 0.01 * np.sum(logits**2)


@program(np.array([1000.0, 999.0, 998.5]), refuses=RULED)
def logsumexp_at_large_logits(logits):
    return logsumexp(logits * 1.0) + logsumexp(-logits / 1000.0)


@program(np.array([[0.2, -0.5, 1.0], [1.5, 0.3, -0.2]]), hessian=True, refuses=RULED_R)
def softmax_attention_weights_with_axis_keyword(scores):
    w = softmax(scores, axis=1)
    values = np.array([[1.0, 0.5], [-0.3, 2.0], [0.8, -1.0]])
    out = w @ values
    return np.sum(out**2) + np.sum(softmax(scores, axis=0)[0])


@program(np.array([0.5, -1.0, 2.0]), hessian=True, nested=True, refuses=RULED_TAPE_ONLY)
def softplus_scalar_rule_in_a_loop(x):
    total = 0.0
    for k in range(3):
        total = total + np.sum(softplus(x * (k + 1) - 0.5))
    return total


@program(np.array([0.3, -0.7, 1.4]), 4.0, hessian=True, nested=True, refuses=RULED_TAPE_ONLY)
def smooth_relu_with_out_partial(x, beta):
    return np.sum(smooth_relu(x, beta) ** 2) + np.sum(smooth_relu(x[::-1], beta)) * beta


@program(np.array([0.9, -0.4, 0.2]), 0.8, 0.05, hessian=True, nested=True, refuses=RULED)
def ode_euler_with_an_adjoint_step_rule(u0, theta, dt):
    u = u0
    for _ in range(6):
        u = euler_step(u, theta, dt)
    return np.sum(u**2)


@program(0.8, np.array([0.9, -0.4, 0.2]), hessian=True, refuses=RULED)
def ode_euler_adjoint_in_the_rate(theta, u0):
    u = u0
    energy = 0.0
    for _ in range(5):
        u = euler_step(u, theta, 0.1)
        energy = energy + 0.1 * np.sum(u**2)
    return energy


@program(np.array([0.0, 1.1, 2.3, 2.9]), 2.0, hessian=True, refuses=RULED_R)
def spring_method_rule(x, k):
    s = Spring(k, 1.0)
    return s.energy(x) + 0.1 * np.sum(x**2)


@program(np.array([0.0, 1.1, 2.3, 2.9]), 2.0, nested=True, refuses=RULED_R)
def spring_bound_method_as_a_value(x, k):
    energy = Spring(k, 0.9).energy
    return energy(x) * energy(x * 1.1)


@program(RNG.normal(size=(3, 4)), np.array([0.5, -1.0, 0.3, 0.8]), hessian=True, refuses=RULED_R)
def matvec_with_inplaceable_thunk_accumulated(W, x):
    h = matvec(W, x)
    h2 = matvec(W, x * 2.0)
    return np.sum(np.tanh(h) * h2) + np.sum(matvec(W, np.ones(4)))


@program(np.array([0.5, -1.0, 0.3, 0.8]), RNG.normal(size=(3, 4)), hessian=True, refuses=RULED_R)
def matvec_thunk_in_first_argument_x(x, W):
    return np.sum(matvec(W, x) ** 2) + np.sum(matvec(W, x) * np.arange(3.0))


@program(np.array([1.5, 2.0, 3.5]), hessian=True, nested=True)
def frule_only_cube_root(x):
    return np.sum(cube_root(x) * x)


@program(np.array([1.5, 2.0, 3.5]))
def frule_only_cube_root_in_a_closure(x):
    def g(v):
        return cube_root(v) * 2.0

    return np.sum(g(x) ** 2)


TABLE_EDGES = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
TABLE_VALUES = np.array([0.0, 0.5, 2.0, 2.5, 4.0])


@program(np.array([0.3, 1.7, 2.2, 3.6]), hessian=True, nested=True, refuses=RULED_TAPE_ONLY)
def piecewise_linear_lookup_with_non_differentiable_index(x):
    total = 0.0
    for v in x:
        i = bin_index(v, TABLE_EDGES)
        t = (v - TABLE_EDGES[i]) / (TABLE_EDGES[i + 1] - TABLE_EDGES[i])
        total = total + (1.0 - t) * TABLE_VALUES[i] + t * TABLE_VALUES[i + 1]
    return total * total


@program(
    np.array([[0.5, -0.2], [0.1, 0.9], [-0.4, 0.3]]), np.array([0.2, -0.1, 0.05]), np.array([1.0, 2.0]), refuses=RULED_R
)
def dataclass_layer_rule(W, b, x):
    layer = Affine(W, b)
    h = np.tanh(affine_apply(layer, x))
    return np.sum(h**2)


@program(Affine(np.array([[0.5, -0.2], [0.1, 0.9]]), np.array([0.2, -0.1])), np.array([1.0, 2.0]), refuses=RULED_R)
def dataclass_layer_rule_as_input(layer, x):
    return np.sum(affine_apply(layer, x) ** 2) + np.sum(layer.b)


@program(np.array([0.3, -2.2, 0.8, 1.7]), hessian=True, refuses=RULED_R)
def huber_with_keyword_delta(r):
    return huber(r, delta=1.5) + 2.0 * huber(r * 0.5) + huber(r, 0.5)


@program(0.7, np.array([0.0, 0.5, 1.5]), hessian=True, nested=True, refuses=RULED_R)
def rbf_kernel_callable_object(lengthscale, x):
    k = RBFKernel(lengthscale)
    K = k(x, x) + 0.1 * np.eye(3)
    return np.sum(np.linalg.solve(K, np.ones(3)))


@program(RBFKernel(0.7), np.array([0.0, 0.5, 1.5]), np.array([0.2, 1.0]), refuses=RULED_R)
def rbf_kernel_object_as_input(k, x, y):
    return np.sum(k(x, y) ** 2)


@program(np.array([0.0, 0.5, 1.5]), 0.7, refuses=RULED_R)
def rbf_kernel_points(x, lengthscale):
    k = RBFKernel(lengthscale)
    return np.sum(k(x, x[::-1] * 0.5))


@program(1.3, hessian=True, nested=True, refuses=RULED_R)
def trapezoid_rule_via_ad_on_a_closure(omega):
    def integrand(t):
        return np.sin(omega * t) * np.exp(-t)

    return trapezoid_of(integrand, 0.0, 2.0, 8)


@program(0.4, 1.9, hessian=True, refuses=RULED_R)
def trapezoid_rule_limits(a, b):
    return trapezoid_of(np.cos, a, b, 6) + trapezoid_of(lambda t: t**2, a, b, 4)


@program(np.array([0.5, -0.3]), hessian=True, refuses=RULED_TAPE_ONLY)
def trapezoid_rule_of_a_quadratic_form(w):
    q = Quadratic(np.array([[2.0, 0.3], [0.3, 1.0]]), np.array([0.1, -0.2]))
    return trapezoid_of(lambda t: q(w * t), 0.0, 1.0, 5)


@program(Pair(np.array([0.2, -0.1]), np.array([0.3, -0.2])), np.array([0.5, 0.4]), nested=False, refuses=RULED_R)
def namedtuple_rule_returning_tangent(p, x):
    return gaussian_nll(p, x) + np.sum(p.mean**2)


@program(np.array([0.2, -0.1]), np.array([0.3, -0.2]), hessian=True, refuses=RULED_R)
def namedtuple_built_inside(mean, log_std):
    xs = np.array([[0.5, 0.4], [-0.2, 0.1], [0.0, 0.9]])
    return sum(gaussian_nll(Pair(mean, log_std), x) for x in xs)


@program(1.5, 0.6, hessian=True, refuses=RULED_R)
def polar_rule_with_tuple_output(r, theta):
    x, y = polar_to_cartesian(r, theta)
    x2, y2 = polar_to_cartesian(r * 0.5, theta + x)
    return x * y + x2 - y2**2


@program(1.5, 0.6, refuses=RULED_R)
def polar_rule_only_one_output_used(r, theta):
    return polar_to_cartesian(r, theta)[1] ** 2


@program([(0.5, 1.0), (1.5, -2.0), (0.2, 0.3)], refuses=RULED_R)
def list_of_pairs_rule_as_input(items):
    return weighted_total(items) ** 2


@program(np.array([0.5, 1.5, 0.2]), np.array([1.0, -2.0, 0.3]), refuses=RULED_R)
def list_of_pairs_built_inside(w, v):
    items = [(w[i], v[i]) for i in range(3)]
    return weighted_total(items) + weighted_total(items[:1])


@program({"a": 0.7, "x": np.array([0.3, -0.2, 0.5])}, refuses=RULED_R)
def dict_rule_as_input(params):
    return dict_energy(params) * 2.0


@program(0.7, np.array([0.3, -0.2, 0.5]), hessian=True, refuses=RULED_R)
def dict_built_inside_rule(a, x):
    return dict_energy({"a": a, "x": x}) + dict_energy({"x": x * a, "a": 1.0})


@program(np.array([0.3, 1.2, -0.5, 2.0]), np.array([True, False, True, True]), hessian=True, refuses=RULED_R)
def masked_mean_no_tangent_for_the_mask(x, mask):
    return masked_mean(x**2, mask) + masked_mean(x, ~mask) ** 2


@program(0.8, hessian=True, nested=True, refuses=RULED_R)
def rule_for_building_a_dataclass(sigma):
    p = make_precision(sigma)
    data = np.array([0.2, -0.5, 1.1])
    return 0.5 * p.tau * np.sum(data**2) - 1.5 * np.log(p.tau)


@program(0.8)
def classmethod_constructor_without_rule(sigma):
    p = Precision.from_std(sigma)
    return p.tau * 2.0 + np.log(p.tau)


@program(np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.3, 1.5]), hessian=True, refuses=RULED_R)
def typed_rule_for_arrays(A, s):
    return np.sum(scale_rows(A, s) ** 2) + np.sum(scale_rows(A, s * 2.0))


@program(np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]]), hessian=True, refuses=RULED_R)
def log_det_by_cholesky_with_thunk(A):
    S = 0.5 * (A + A.T)
    return log_det_spd(S) + np.trace(S)


@program(np.array([0.4, -0.2, 0.1]), hessian=True, nested=True, refuses=RULED_R)
def gaussian_process_marginal_likelihood(x):
    K = RBFKernel(0.9)(x, x) + 0.2 * np.eye(3)
    y = np.array([0.3, -0.1, 0.5])
    return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * log_det_spd(K)


@program(np.array([0.3, 0.9, -0.4]), 0.7, hessian=True, nested=True, refuses=RULED_TAPE_ONLY)
def apply_n_times_via_ad_on_a_closure(x, c):
    def step(v):
        return v - 0.1 * (v**3 - c)

    return np.sum(apply_n_times(step, x, 4) ** 2)


# (no Hessian: with x constant the ruled call receives c only inside the closure, where forward
# mode differentiates the body; it is the rule's mathematics here, so the numbers agree)
@program(0.7, np.array([0.3, 0.9, -0.4]), refuses=RULED_R)
def apply_n_times_in_the_captured_constant(c, x):
    def step(v):
        return v - 0.1 * (v**3 - c)

    return np.sum(apply_n_times(step, x, 3))


@program(np.array([0.5, -0.2]), hessian=True, nested=True, refuses=RULED_TAPE_ONLY)
def implicit_fixed_point_layer(theta):
    A = np.array([[0.3, -0.1], [0.2, 0.25]])

    def g(x, th):
        return np.tanh(A @ x + th)

    x = fixed_point_of(g, theta, np.zeros(2))
    return np.sum(x**2) + x[0] * theta[1]


@program(np.array([0.4, 1.1, -0.3]), hessian=True, refuses=RULED_R)
def straight_through_identity_inside(x):
    return np.sum(np.sin(clamp_grad_identity(x)) * x)


@program(np.array([0.5, 2.0, -1.0, 0.3]), hessian=True, nested=True, refuses=RULED_R)
def batch_norm_by_mean_var_rule(x):
    mu, var = mean_var(x)
    xhat = (x - mu) / np.sqrt(var + 1e-3)
    return np.sum(xhat * np.array([1.0, -0.5, 2.0, 0.3])) + var


@program(np.array([0.5, 2.0, -1.0, 0.3]), refuses=RULED_R)
def mean_var_only_variance_used(x):
    _, var = mean_var(x)
    return var**2


@program(RNG.normal(size=(5, 3)), refuses=RULED_R)
def embedding_lookup_with_inplaceable_thunks(E):
    total = 0.0
    for tokens in (np.array([0, 2, 2]), np.array([4, 0])):
        rows = gather_rows(E, tokens)
        total = total + np.sum(np.tanh(rows) ** 2)
    return total


@program(np.array([0.5, -0.3, 0.8]), hessian=True, nested=True, refuses=RULED_TAPE_ONLY)
def callable_object_rule_in_a_loop(x):
    q = Quadratic(np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.5]]), np.array([0.1, 0.0, -0.2]))
    for _ in range(3):
        x = x - 0.2 * (q.A @ x - q.b)
    return q(x) + q(x * 2.0)


@program(np.array([0.5, -0.3]), np.array([0.1, 0.4]), hessian=True, refuses=RULED)
def callable_object_fields_differentiated(b, x):
    q = Quadratic(np.array([[2.0, 0.3], [0.3, 1.0]]), b)
    return q(x) * q(x + b)


@program(np.array([0.7, -0.3, 1.2]), hessian=True, nested=True, refuses=RULED_TAPE_ONLY)
def recursion_through_a_scalar_rule(x):
    def depth(v, n):
        if n == 0:
            return np.sum(softplus(v))
        return depth(softplus(v) - 0.5, n - 1) + 0.1 * np.sum(v**2)

    return depth(x, 3)


@program(np.array([0.7, -0.3, 1.2]), hessian=True, refuses=RULED)
def recursion_through_a_ruled_function(x):
    def deep(v, n):
        if n == 0:
            return logsumexp(v)
        return deep(v * 0.8 + logsumexp(v) * 0.1, n - 1)

    return deep(x, 3)


@program(np.array([0.4, -0.6, 0.9]), hessian=True, nested=True, refuses=RULED)
def while_loop_with_break_and_a_rule(x):
    total, k = 0.0, 0
    while True:
        total = total + logsumexp(x * (k + 1))
        k += 1
        if k >= 3 or total > 100.0:
            break
    return total


@program(np.array([0.4, -0.6, 0.9]), refuses=RULED)
def rules_in_comprehensions_and_generators(x):
    shifted = [logsumexp(x + s) for s in (0.0, 0.5, 1.0)]
    return sum(v**2 for v in shifted) + sum(logsumexp(x * w) for w in (1.0, 2.0))


@program(np.array([0.3, 0.8, -0.4]), hessian=True, nested=True, refuses=RULED_TAPE_ONLY)
def nested_gradient_of_a_ruled_function(x):
    g = cr.gradient(logsumexp, x)[0]
    return np.sum(g * x) + logsumexp(x)


@program(np.array([0.3, 0.8, -0.4]), hessian=True)
def nested_gradient_of_a_closure_over_a_rule(x):
    def loss(w):
        return logsumexp(w * x) + np.sum(w**2)

    g = cr.gradient(loss, np.ones(3))[0]
    return np.sum(g**2)


@program(RNG.normal(size=(2, 3)), np.array([0.5, -1.0, 0.2]), hessian=True, refuses=RULED)
def two_layer_net_with_tanh_layer_rules(W, x):
    h = tanh_layer(W, x)
    W2 = np.array([[0.3, -0.7], [1.1, 0.4]])
    return np.sum(tanh_layer(W2, h) ** 2)


@program(np.array([0.5, -1.0, 0.2]), RNG.normal(size=(2, 3)), hessian=True, nested=True, refuses=RULED)
def tanh_layer_hessian_in_the_input(x, W):
    return np.sum(tanh_layer(W, x)) + 0.5 * np.sum(tanh_layer(W, x * x) ** 2)


@cr.checkpoint
def segment(u):
    for _ in range(3):
        u = u + 0.1 * softmax(u)
    return u


@program(np.array([0.3, 1.1, -0.6]), hessian=True, nested=True, refuses=RULED)
def checkpointed_segment_calling_a_rule(x):
    for _ in range(2):
        x = segment(x)
    return logsumexp(x)


@program(np.array([0.3, 1.1, -0.6]), hessian=True, refuses=RULED_TAPE_ONLY)
def functools_partial_through_a_rule(x):
    smooth = functools.partial(smooth_relu, beta=3.0)
    return np.sum(smooth(x) ** 2) + np.sum(apply_n_times(functools.partial(smooth_relu, beta=2.0), x, 2))


@program(np.array([1.0, 0.5, -0.5], dtype=np.float32), refuses=RULED, rtol=1e-3)
def float32_rule_with_projection(x):
    W = np.array([[0.2, 0.1, -0.3], [0.5, -0.4, 0.2]], dtype=np.float32)
    return np.sum(tanh_layer(W, x * np.float32(2.0)))


def bisect_root(g, lo, hi):
    """x in [lo, hi] with g(x) = 0, by bisection."""
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if g(lo) * g(mid) <= 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


@cr.rrule.register(bisect_root)
def rrule_bisect_root(g, lo, hi):
    root = bisect_root(g, lo, hi)
    _, back = cr.rrule_via_ad(g, root)
    g_x = cr.unthunk(back(1.0)[1])

    def bisect_root_pullback(dx):
        dg, _ = back(-cr.unthunk(dx) / g_x)  # the implicit function theorem
        return cr.NoTangent(), dg, cr.ZeroTangent(), cr.ZeroTangent()

    return root, bisect_root_pullback


# The rule has no forward rule and runs the solver itself on the closure: the tape and forward
# mode refuse the call, and so does the source engine's primal run on dual numbers, as the rule's
# value cannot carry them (hence no Hessian either)
@program(
    8.0,
    refuses={
        "tape": RULED_TAPE,
        "forward": RULED_FORWARD,
        "forward-primal": "its reverse rule computed its value without the values being differentiated",
    },
)
def bisection_root_of_a_closure(c):
    return bisect_root(lambda x: x**3 - c, 0.0, 10.0) ** 2
