"""A fifth corpus of whole programs: simulation and geometry (n-body
forces by broadcasting, spring chains with dataclass state, quaternions, Rodrigues' formula,
triangle meshes, 1-d finite elements, a heat equation, rays and spheres, hand-written RK4, a
projectile with drag, polygons, a hanging chain), machine learning (normalisation layers, causal
attention, recurrent cells over lists, a transformer block, convolution and pooling, metric
losses, Sinkhorn, dropout, weight decay, namedtuple layers) and the Python around them.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
from typing import NamedTuple

import numpy as np
import scipy.linalg
from program_checks import SCIPY_WRAPPER, SCIPY_WRAPPER_FORWARD, new_corpus

PROGRAMS, program = new_corpus()

RNG = np.random.default_rng(2024)

# ----- simulation and geometry --------------------------------------------------------------------

MASSES = np.array([1.0, 0.8, 1.3, 0.6])


@program(
    np.array([[0.0, 0.0, 0.0], [1.0, 0.2, -0.1], [-0.3, 1.1, 0.4], [0.5, -0.7, 0.9]]),
    hessian=True,
    nested=True,
)
def nbody_potential_energy(pos):
    G, soft = 1.0, 0.05
    diff = pos[:, None, :] - pos[None, :, :]
    r = np.sqrt(np.sum(diff**2, axis=-1) + soft**2)
    pair = MASSES[:, None] * MASSES[None, :] / r
    off_diagonal = ~np.eye(len(pos), dtype=bool)
    return -0.5 * G * np.sum(pair[off_diagonal])


@program(
    np.array([[0.0, 0.0], [1.0, 0.1], [-0.4, 0.9]]),
    np.array([[0.0, 0.1], [-0.2, 0.3], [0.1, -0.2]]),
    nested=True,
)
def nbody_leapfrog_with_forces(pos0, vel0):
    m = np.array([1.0, 0.5, 0.7])
    dt, soft2 = 0.05, 0.1

    def accelerations(p):
        d = p[None, :, :] - p[:, None, :]
        inv_r3 = (np.sum(d * d, axis=-1) + soft2) ** -1.5
        inv_r3 = np.where(np.eye(len(p), dtype=bool), 0.0, inv_r3)
        return np.einsum("ij,ijk,j->ik", inv_r3, d, m)

    pos, vel = pos0, vel0
    acc = accelerations(pos)
    for _ in range(5):
        vel = vel + 0.5 * dt * acc
        pos = pos + dt * vel
        acc = accelerations(pos)
        vel = vel + 0.5 * dt * acc
    centre = (m @ pos) / m.sum()
    return np.sum((pos - centre) ** 2) + 0.5 * np.sum(m[:, None] * vel**2)


@dataclasses.dataclass
class ChainState:
    x: np.ndarray
    v: np.ndarray
    t: float = 0.0


def chain_forces(x, k, rest):
    padded = np.concatenate([[0.0], x])
    stretch = np.diff(padded) - rest
    tension = k * stretch
    return np.append(tension[1:], 0.0) - tension


@program(np.array([3.0, 2.5, 2.0, 1.5]), hessian=True, nested=True)
def spring_chain_stepped_with_dataclass_state(k):
    state = ChainState(x=np.array([1.1, 2.0, 3.2, 3.9]), v=np.zeros(4))
    dt, damping = 0.05, 0.2
    while state.t < 0.5 - 1e-9:
        a = chain_forces(state.x, k, 1.0) - damping * state.v
        v = state.v + dt * a
        state = ChainState(state.x + dt * v, v, state.t + dt)
    return np.sum(state.x**2) + 0.5 * state.v @ state.v


def quat_mul(p, q):
    w1, x1, y1, z1 = p
    w2, x2, y2, z2 = q
    return np.stack(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )


@program(np.array([0.9, 0.2, -0.3, 0.1]), np.array([1.0, -0.5, 0.25]), hessian=True)
def quaternion_rotation_of_a_vector(q, v):
    q = q / np.linalg.norm(q)
    conj = q * np.array([1.0, -1.0, -1.0, -1.0])
    pure = np.concatenate([np.zeros(1), v])
    rotated = quat_mul(quat_mul(q, pure), conj)[1:]
    target = np.array([0.2, 0.9, -0.4])
    return np.sum((rotated - target) ** 2) + (q @ q - 1.0) ** 2


@program(np.array([0.3, -0.5, 0.4]), hessian=True, nested=True)
def rodrigues_rotation_matrix(omega):
    theta = np.linalg.norm(omega)
    k = omega / theta
    K = -np.cross(k, np.eye(3))  # K @ v == np.cross(k, v)
    R = np.eye(3) + np.sin(theta) * K + (1.0 - np.cos(theta)) * (K @ K)
    points = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5], [0.3, -0.2, 1.0]])
    moved = points @ R.T
    return np.sum(moved[:, 0] * moved[:, 1]) + np.trace(R)


LEVI_CIVITA = np.zeros((3, 3, 3))
for _i, _j, _k in itertools.permutations(range(3)):
    LEVI_CIVITA[_i, _j, _k] = np.linalg.det(np.eye(3)[[_i, _j, _k]])


@program(
    np.array([0.4, -0.2, 0.7]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
    hessian=True,
)
def expm_of_a_skew_matrix(omega):
    K = -np.einsum("ijk,k->ij", LEVI_CIVITA, omega)
    R = scipy.linalg.expm(K)
    body = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    world = body @ R.T
    orthogonality = np.sum((R.T @ R - np.eye(3)) ** 2)
    return np.sum(world * np.array([[0.3, 0.2, 0.1], [0.5, -0.4, 0.6]])) + orthogonality


FACES = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]])


@program(
    np.array([[0.0, 0.0, 0.0], [1.0, 0.1, 0.0], [0.2, 1.0, 0.1], [0.3, 0.2, 0.9]]),
    hessian=True,
)
def tetrahedron_mesh_area_and_volume(verts):
    a, b, c = verts[FACES[:, 0]], verts[FACES[:, 1]], verts[FACES[:, 2]]
    normals = np.cross(b - a, c - a)
    areas = 0.5 * np.linalg.norm(normals, axis=1)
    volume = np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0
    unit = normals / (2.0 * areas[:, None])
    smoothness = np.sum((unit @ unit.T - np.eye(4)) ** 2)
    return np.sum(areas) - 2.0 * abs(volume) + 0.1 * smoothness


EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])


@program(np.array([[0.0, 0.0], [1.1, 0.1], [1.0, 0.9], [-0.1, 1.2]]), np.array([1.0, 1.0, 1.0, 1.0, 1.4]))
def spring_mesh_energy_with_rest_lengths(xy, rest):
    d = xy[EDGES[:, 1]] - xy[EDGES[:, 0]]
    length = np.linalg.norm(d, axis=-1)
    stretch = np.sum((length - rest) ** 2)
    anchor = np.sum((xy[0] - np.array([0.0, 0.0])) ** 2)
    return 0.5 * stretch + 10.0 * anchor


@program(np.array([2.0, 1.5, 1.8, 1.2, 2.2]), refuses={"tape": "writes into an array in place"}, hessian=True)
def fem_bar_assembly_with_slices(EA):
    n_el = len(EA)
    h = 1.0 / n_el
    K = np.zeros((n_el + 1, n_el + 1))
    f = np.full(n_el + 1, h)
    f[0] = f[-1] = 0.5 * h
    for i in range(n_el):
        ke = EA[i] / h * np.array([[1.0, -1.0], [-1.0, 1.0]])
        K[i : i + 2, i : i + 2] += ke
    u = np.linalg.solve(K[1:, 1:], f[1:])
    return f[1:] @ u + 0.1 * u[-1] ** 2


@program(np.array([0.6, 0.9, 1.2, 0.8, 1.0, 0.7]), 0.5)
def heat_equation_implicit_steps(u0, conductivity):
    n = len(u0)
    dx, dt = 1.0 / (n + 1), 0.01
    lap = (np.diag(-2.0 * np.ones(n)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)) / dx**2
    A = np.eye(n) - dt * conductivity * lap
    u = u0
    for _ in range(4):
        u = np.linalg.solve(A, u + dt * np.sin(np.pi * np.linspace(0, 1, n)))
    return np.sum(u**2) * dx + u[n // 2]


ORIGINS = np.array([[0.0, 0.0, -3.0], [0.3, 0.1, -3.0], [1.5, 1.5, -3.0], [-0.2, 0.4, -3.0]])
DIRECTIONS = np.array([[0.0, 0.0, 1.0], [0.05, 0.0, 1.0], [0.0, 0.0, 1.0], [0.1, -0.1, 1.0]])


@program(np.array([0.1, 0.2, 0.3]), 0.9, nested=True)
def ray_sphere_depth_with_where(centre, radius):
    d = DIRECTIONS / np.linalg.norm(DIRECTIONS, axis=1, keepdims=True)
    oc = ORIGINS - centre
    b = np.einsum("ij,ij->i", oc, d)
    c = np.einsum("ij,ij->i", oc, oc) - radius**2
    disc = b * b - c
    hit = disc > 0
    t = np.where(hit, -b - np.sqrt(np.where(hit, disc, 1.0)), 10.0)
    points = ORIGINS + t[:, None] * d
    normals = (points - centre) / radius
    return np.sum(t) + np.sum(normals[hit, 2])


def pendulum_rhs(state, g_over_l, damping):
    theta, omega = state
    return (omega, -g_over_l * np.sin(theta) - damping * omega)


@program(np.array([0.8, 0.0]), 9.81, 0.1, hessian=True, nested=True)
def pendulum_rk4_with_tuples(y0, g_over_l, damping):
    h = 0.05
    state = (y0[0], y0[1])
    for _ in range(20):
        k1 = pendulum_rhs(state, g_over_l, damping)
        k2 = pendulum_rhs(tuple(s + 0.5 * h * k for s, k in zip(state, k1)), g_over_l, damping)
        k3 = pendulum_rhs(tuple(s + 0.5 * h * k for s, k in zip(state, k2)), g_over_l, damping)
        k4 = pendulum_rhs(tuple(s + h * k for s, k in zip(state, k3)), g_over_l, damping)
        state = tuple(s + h / 6 * (a + 2 * b + 2 * c + d) for s, a, b, c, d in zip(state, k1, k2, k3, k4))
    theta, omega = state
    return 1.0 - np.cos(theta) + 0.5 * omega**2 / g_over_l


@program(np.array([12.0, 0.7]), 0.05, hessian=True)
def projectile_with_drag_until_landing(launch, drag):
    speed, angle = launch
    pos = np.zeros(2)
    vel = speed * np.stack([np.cos(angle), np.sin(angle)])
    dt = 0.02
    while True:
        acc = np.array([0.0, -9.81]) - drag * np.linalg.norm(vel) * vel
        new_pos = pos + dt * vel
        if new_pos[1] < 0.0:
            frac = pos[1] / (pos[1] - new_pos[1])
            return pos[0] + frac * (new_pos[0] - pos[0])
        pos, vel = new_pos, vel + dt * acc


@program(np.array([[0.0, 0.0], [2.0, 0.1], [2.2, 1.5], [0.8, 2.0], [-0.3, 1.0]]))
def shoelace_area_and_perimeter(poly):
    x, y = poly[:, 0], poly[:, 1]
    area = 0.5 * (x @ np.roll(y, -1) - y @ np.roll(x, -1))
    edges = np.roll(poly, -1, axis=0) - poly
    perimeter = np.sum(np.sqrt(np.sum(edges**2, axis=1)))
    return (area - 3.0) ** 2 + 0.1 * perimeter**2


@program(np.array([-0.3, -0.55, -0.7, -0.75, -0.7, -0.55, -0.3]), 4.0, hessian=True)
def hanging_chain_energy(heights, stiffness):
    n = len(heights)
    xs = np.linspace(0.0, 1.0, n + 2)
    ys = np.concatenate([[0.0], heights, [0.0]])
    seg = np.hypot(np.diff(xs), np.diff(ys))
    rest = 1.2 / (n + 1)
    stretch = 0.5 * stiffness * np.sum((seg - rest) ** 2)
    gravity = 9.81 * np.sum(0.5 * (ys[1:] + ys[:-1]) * seg)
    return stretch + gravity * 0.1


@program(np.array([[0.0, 0.0], [1.0, 0.1], [2.0, 0.4], [2.8, 1.1], [3.3, 2.0]]))
def elastic_rod_bending_by_turning_angles(points):
    edges = np.diff(points, axis=0)
    lengths = np.linalg.norm(edges, axis=1)
    heading = np.arctan2(edges[:, 1], edges[:, 0])
    turning = np.diff(heading)
    voronoi = 0.5 * (lengths[1:] + lengths[:-1])
    bending = np.sum(turning**2 / voronoi)
    return bending + 2.0 * np.sum((lengths - 1.0) ** 2)


# ----- machine learning ---------------------------------------------------------------------------

TOKENS = RNG.normal(size=(4, 6)) * 0.5


@program(TOKENS, np.linspace(0.8, 1.2, 6), np.linspace(-0.1, 0.1, 6), hessian=True, nested=True)
def layer_norm_with_affine(x, gamma, beta):
    eps = 1e-5
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    normed = (x - mu) / np.sqrt(var + eps)
    out = gamma * normed + beta
    return np.sum(out**3) / out.size + np.sum(out[:, 0])


@program(RNG.normal(size=(5, 3)), np.array([1.0, 0.8, 1.2]), np.array([0.0, 0.1, -0.1]), True)
def batch_norm_train_and_eval(X, gamma, beta, training):
    running_mean, running_var = np.zeros(3), np.ones(3)
    momentum = 0.1
    if training:
        mean, var = X.mean(axis=0), X.var(axis=0)
        running_mean = (1 - momentum) * running_mean + momentum * mean
        running_var = (1 - momentum) * running_var + momentum * var * len(X) / (len(X) - 1)
    else:
        mean, var = running_mean, running_var
    Y = gamma * (X - mean) / np.sqrt(var + 1e-5) + beta
    return np.sum(np.tanh(Y) ** 2) + np.sum(running_mean**2) + np.sum(running_var)


def softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


W_Q, W_K, W_V = (RNG.normal(size=(6, 4)) * 0.4 for _ in range(3))


@program(TOKENS, hessian=True, nested=True)
def causal_self_attention(x):
    T, d = x.shape[0], W_Q.shape[1]
    q, k, v = x @ W_Q, x @ W_K, x @ W_V
    scores = q @ k.T / np.sqrt(d)
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores = np.where(mask, -1e9, scores)
    attn = softmax(scores)
    out = attn @ v
    return np.sum(out**2) + 0.1 * np.sum(attn * np.arange(T))


def gru_step(h, x, p):
    z = 1 / (1 + np.exp(-(p["Wz"] @ x + p["Uz"] @ h)))
    r = 1 / (1 + np.exp(-(p["Wr"] @ x + p["Ur"] @ h)))
    h_tilde = np.tanh(p["Wh"] @ x + p["Uh"] @ (r * h))
    return (1 - z) * h + z * h_tilde


GRU_PARAMS = {
    name: RNG.normal(size=(3, 2 if name.startswith("W") else 3)) * 0.5 for name in ("Wz", "Uz", "Wr", "Ur", "Wh", "Uh")
}
SEQUENCE = [np.array([0.5, -0.2]), np.array([0.1, 0.9]), np.array([-0.7, 0.3]), np.array([0.4, 0.4])]


@program(np.array([0.1, -0.2, 0.3]), GRU_PARAMS)
def gru_unrolled_over_a_list(h0, params):
    h = h0
    outputs = []
    for x in SEQUENCE:
        h = gru_step(h, x, params)
        outputs.append(h)
    readout = np.array([1.0, -1.0, 0.5])
    return sum((readout @ o - 0.2 * t) ** 2 for t, o in enumerate(outputs))


class LSTMState(NamedTuple):
    h: np.ndarray
    c: np.ndarray


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@program(RNG.normal(size=(12, 5)) * 0.4, hessian=True)
def lstm_cell_with_namedtuple_state(W):
    state = LSTMState(np.zeros(3), np.zeros(3))
    for x in SEQUENCE:
        gates = W @ np.concatenate([x, state.h])
        i, f, o, g = np.split(gates, 4)
        c = sigmoid(f) * state.c + sigmoid(i) * np.tanh(g)
        state = LSTMState(sigmoid(o) * np.tanh(c), c)
    return np.sum(state.h) + 0.5 * np.sum(state.c**2)


class Block(NamedTuple):
    Wq: np.ndarray
    Wk: np.ndarray
    Wv: np.ndarray
    W1: np.ndarray
    W2: np.ndarray


def layer_norm(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def transformer_block(x, p):
    h = layer_norm(x)
    att = softmax((h @ p.Wq) @ (h @ p.Wk).T / np.sqrt(p.Wq.shape[1]))
    x = x + att @ (h @ p.Wv)
    h = layer_norm(x)
    return x + np.maximum(h @ p.W1, 0.0) @ p.W2


@program(TOKENS[:3], Block(*(RNG.normal(size=s) * 0.3 for s in [(6, 6), (6, 6), (6, 6), (6, 8), (8, 6)])))
def tiny_transformer_block(x, params):
    y = transformer_block(x, params)
    logits = y @ np.linspace(-1, 1, 6)
    return np.mean(logits**2) + np.log(np.sum(np.exp(logits)))


IMAGE = np.outer(np.sin(np.linspace(0, 2, 6)), np.cos(np.linspace(0, 1.5, 6))) + 0.1 * np.arange(36).reshape(6, 6) / 36


@program(np.array([[0.2, -0.1, 0.3], [0.05, 0.4, -0.2], [0.1, 0.0, 0.25]]), IMAGE, hessian=True)
def conv2d_by_slicing_then_maxpool(kernel, image):
    kh, kw = kernel.shape
    H, W = image.shape[0] - kh + 1, image.shape[1] - kw + 1
    out = sum(kernel[i, j] * image[i : i + H, j : j + W] for i in range(kh) for j in range(kw))
    act = np.tanh(out + 0.05)
    pooled = act.reshape(H // 2, 2, W // 2, 2).max(axis=(1, 3))
    return np.sum(pooled**2) + np.mean(act)


@program(
    np.array([[0.3, 0.1, -0.2], [0.5, -0.4, 0.2]]),
    np.array([[0.35, 0.05, -0.1], [0.2, -0.5, 0.3]]),
    np.array([[0.9, -0.3, 0.4], [-0.6, 0.2, 0.1]]),
    hessian=True,
)
def triplet_margin_loss(anchor, positive, negative):
    margin = 0.5
    d_pos = np.linalg.norm(anchor - positive, axis=1)
    d_neg = np.linalg.norm(anchor - negative, axis=1)
    losses = np.maximum(d_pos - d_neg + margin, 0.0)
    return losses.mean() + 0.01 * np.sum(anchor**2)


@program(RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3)))
def info_nce_contrastive_loss(za, zb):
    temperature = 0.5
    za = za / np.linalg.norm(za, axis=1, keepdims=True)
    zb = zb / np.linalg.norm(zb, axis=1, keepdims=True)
    logits = za @ zb.T / temperature
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -np.mean(np.diag(log_probs))


LABELS = np.array([0, 0, 1, 1, 2])


@program(RNG.normal(size=(5, 2)), 1.0, nested=True)
def soft_nearest_neighbour_loss(X, temperature):
    sq = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    sim = np.exp(-sq / temperature) * (1.0 - np.eye(len(X)))
    same = LABELS[:, None] == LABELS[None, :]
    ratio = np.sum(sim * same, axis=1) / np.sum(sim, axis=1)
    return -np.mean(np.log(ratio + 1e-8))


@program(np.array([[0.1, 0.9, 1.6], [0.8, 0.2, 0.7], [1.4, 0.6, 0.3]]), hessian=True)
def sinkhorn_scaling_iterations(C):
    a = np.array([0.5, 0.3, 0.2])
    b = np.array([0.2, 0.4, 0.4])
    K = np.exp(-C / 0.3)
    u = np.ones(3)
    for _ in range(15):
        v = b / (K.T @ u)
        u = a / (K @ v)
    P = u[:, None] * K * v[None, :]
    return np.sum(P * C) + 0.3 * np.sum(P * np.log(P))


DROPOUT_MASK = np.array([[1, 0, 1, 1], [1, 1, 0, 1], [0, 1, 1, 1]], dtype=bool)


@program(RNG.normal(size=(3, 4)) * 0.5, np.array([0.4, -0.3, 0.8]), DROPOUT_MASK, 0.25)
def mlp_with_dropout_mask_argument(W, x, mask, rate):
    h = x @ W
    h = np.where(mask[0], h / (1 - rate), 0.0)
    h2 = np.maximum(h, 0.1 * h) * mask[1] / (1 - rate)
    return np.sum(np.tanh(h2) * np.where(mask[2], 1.0, -1.0))


@program(
    {"w1": RNG.normal(size=(3, 2)) * 0.5, "b1": np.zeros(2), "w2": RNG.normal(size=2) * 0.5, "b2": 0.1},
    1e-2,
)
def weight_decay_over_a_parameter_dict(params, decay):
    X = np.array([[0.2, -0.4, 1.0], [0.7, 0.1, -0.3], [-0.5, 0.9, 0.2]])
    y = np.array([1.0, 0.0, 1.0])
    hidden = np.tanh(X @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"] + params["b2"]
    nll = np.mean(np.logaddexp(0.0, logits) - y * logits)
    penalty = sum(np.sum(value**2) for name, value in params.items() if not name.startswith("b"))
    return nll + 0.5 * decay * penalty


class Dense(NamedTuple):
    W: np.ndarray
    b: np.ndarray


@program(
    [Dense(RNG.normal(size=(2, 4)) * 0.6, np.zeros(4)), Dense(RNG.normal(size=(4, 3)) * 0.6, np.full(3, 0.1))],
    np.array([[0.5, -1.0], [1.5, 0.2], [-0.3, 0.8]]),
)
def layers_in_a_list_of_namedtuples(layers, X):
    h = X
    for depth, layer in enumerate(layers):
        h = h @ layer.W + layer.b
        if depth < len(layers) - 1:
            h = np.log1p(np.exp(h))  # softplus
    targets = np.array([0, 2, 1])
    logp = h - np.log(np.sum(np.exp(h), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(3), targets])


@program(np.array([1.2, -0.4, 0.3, 2.0]), np.array([2, 0, 1, 3]))
def label_smoothing_cross_entropy(logits, order):
    n = len(logits)
    smoothing = 0.1
    target = np.full(n, smoothing / n)
    target[order[0]] += 1 - smoothing
    log_probs = logits - np.max(logits) - np.log(np.sum(np.exp(logits - np.max(logits))))
    return -target @ log_probs


# ----- Python idioms ------------------------------------------------------------------------------


class Shape:
    def __init__(self, scale):
        self.scale = scale

    @property
    def area(self):
        raise NotImplementedError

    def cost(self):
        return self.area + 0.1 * self.perimeter


class Circle(Shape):
    @property
    def area(self):
        return np.pi * self.scale**2

    @property
    def perimeter(self):
        return 2 * np.pi * self.scale


class Rectangle(Shape):
    def __init__(self, scale, aspect):
        super().__init__(scale)
        self.aspect = aspect

    @property
    def area(self):
        return self.scale**2 * self.aspect

    @property
    def perimeter(self):
        return 2 * self.scale * (1 + self.aspect)


@program(np.array([0.7, 1.3, 0.5]))
def shapes_with_properties_and_super(x):
    shapes = [Circle(x[0]), Rectangle(x[1], x[2]), Rectangle(x[2], 2.0)]
    total = sum(s.cost() for s in shapes)
    biggest = max(shapes, key=lambda s: s.area)
    return total + biggest.perimeter


@program(np.array([0.5, 1.5, -0.3, 0.8]))
def nested_functions_with_nonlocal_accumulator(x):
    total = 0.0
    steps = 0

    def visit(v):
        nonlocal total, steps
        total = total + v**2 * (steps + 1)
        steps += 1

    for v in x:
        visit(v)
    return total / steps


@program(np.array([0.5, -0.2, 0.3, 0.1]), 0.7, hessian=True, nested=True)
def horner_by_reduce_and_partial(coeffs, x):
    horner = functools.reduce(lambda acc, c: acc * x + c, coeffs[::-1], 0.0)
    poly = functools.partial(np.polyval, coeffs[::-1])
    both = horner + poly(x)
    shifted = functools.partial(lambda c, v, shift: np.sum(c * (v + shift) ** np.arange(len(c))), coeffs)
    return both + shifted(x, shift=0.5)


@program(np.array([0.9, 1.1, 0.95, 1.05, 1.2]), hessian=True)
def itertools_accumulate_pairwise_product(growth):
    wealth = list(itertools.accumulate(growth, operator.mul))
    returns = [b / a - 1.0 for a, b in itertools.pairwise(wealth)]
    cross = sum(r1 * r2 for r1, r2 in itertools.product(returns[:2], returns[2:]))
    running_max = list(itertools.accumulate(wealth, max))
    drawdown = max(1.0 - w / m for w, m in zip(wealth, running_max))
    return wealth[-1] + cross + drawdown


@program(np.array([3.0, 1.0, 2.5, 0.5, 1.8]), np.array([0.2, 0.9, 0.4, 0.7, 0.3]), nested=True)
def sorted_reversed_and_enumerate(values, weights):
    ranked = sorted(zip(values, weights), key=lambda vw: vw[0], reverse=True)
    discounted = sum(v * w / (rank + 1) for rank, (v, w) in enumerate(ranked))
    tail = [v for v, _ in reversed(ranked)][:2]
    lo, hi = min(values), max(values, key=lambda v: v * 1.0)
    return discounted + sum(tail) * (hi - lo)


def sliding_windows(x, width):
    for start in range(len(x) - width + 1):
        yield x[start : start + width]


@program(
    np.array([0.3, 1.1, -0.4, 0.8, 0.5, -0.9]),
    refuses={"source": "a generator expression computes its values as they are consumed"},
)
def generator_of_sliding_windows(x):
    smoothness = sum(np.var(w) for w in sliding_windows(x, 3))
    peaks = (np.max(w) for w in sliding_windows(x, 2))
    return smoothness + sum(p**2 for p in peaks)


@program(np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([1.0, -1.0]))
def try_except_keyerror_and_singular_fallback(A, b):
    cache = {"scale": 1.5}
    try:
        shift = cache["shift"]
    except KeyError:
        shift = 0.1
    try:
        x = np.linalg.solve(A + shift * np.eye(2), b)
    except np.linalg.LinAlgError:
        x = np.linalg.lstsq(A, b, rcond=None)[0]
    return cache["scale"] * x @ x + np.sum(A * np.outer(x, x))


@program(np.array([0.4, 1.2, 2.5, 0.2]), 1.0)
def early_return_on_a_threshold(x, threshold):
    energy = 0.0
    for i, v in enumerate(x):
        energy = energy + v**2 * (i + 1)
        if energy > threshold * 5:
            return energy * threshold + i
    return energy


EXPRESSION = ("+", ("*", 0, ("sin", 1)), ("-", ("*", 2, 2), ("exp", ("*", 0, 1))))


def evaluate(node, x):
    if isinstance(node, int):
        return x[node]
    op, *children = node
    values = [evaluate(child, x) for child in children]
    if op == "+":
        return values[0] + values[1]
    if op == "-":
        return values[0] - values[1]
    if op == "*":
        return values[0] * values[1]
    return {"sin": np.sin, "exp": np.exp}[op](values[0])


@program(np.array([0.3, -0.8, 1.1]), hessian=True)
def recursion_on_a_tree_of_tuples(x):
    return evaluate(EXPRESSION, x) ** 2 + evaluate(("*", 1, 2), x)


@program(np.array([0.2, 0.5, 0.9, 1.4]), nested=True)
def dict_comprehensions_of_features(x):
    features = {f"pow{k}": x**k for k in range(1, 4)}
    summaries = {name: (np.mean(f), np.std(f)) for name, f in features.items()}
    best = min(summaries, key=lambda name: summaries[name][1])
    score = sum(m * s for m, s in summaries.values())
    return score + np.sum(features[best])


def weighted_norm(*vectors, p=2, weights=None):
    weights = weights or [1.0] * len(vectors)
    return sum(w * np.sum(np.abs(v) ** p) ** (1 / p) for w, v in zip(weights, vectors))


@program(np.array([0.3, -0.6, 0.9, 1.2, -0.4, 0.5]))
def star_unpacking_into_varargs(x):
    first, *middle, last = np.split(x, 3)
    options = {"p": 3, "weights": [1.0, 0.5, 2.0]}
    parts = [first, *middle, last]
    return weighted_norm(*parts, **options) + weighted_norm(first, last)


@program(np.array([0.5, -0.25, 0.75]), 4, True)
def fstring_log_with_int_and_bool_arguments(x, n_iter, verbose):
    history = []
    for it in range(n_iter):
        x = x - 0.1 * (x - np.array([1.0, 0.0, -1.0])) * (it + 1)
        loss = np.sum(x**2)
        if verbose:
            history.append(f"iter {it:02d}: loss={loss:.4f} x0={x[0]:+.3f}")
    assert len(history) == (n_iter if verbose else 0), history
    return loss + 0.5 * float(len(history)) * x[1]


TARGET = np.array([0.5, 0.5, 0.0])
STEP_SIZE = 0.3
N_STEPS = 5


@program(np.array([1.5, -0.5, 2.0]))
def global_constants_in_gradient_descent(x0):
    x = x0
    trajectory = [x0]
    for _ in range(N_STEPS):
        x = x - STEP_SIZE * (x - TARGET) * (1 + 0.1 * np.sum(x**2))
        trajectory.append(x)
    path_length = sum(np.linalg.norm(b - a) for a, b in zip(trajectory, trajectory[1:]))
    return np.sum((x - TARGET) ** 2) + 0.1 * path_length


@program(
    np.array([0.6, -0.3, 1.1]),
    refuses={
        "tape": "writes into an array in place",
        "forward": "write x = x + v",
    },
)
def list_of_array_accumulators(x):
    acc = [np.zeros(3) for _ in range(2)]
    for k in range(4):
        acc[k % 2] += x * (k + 1)
    return np.sum(acc[0] * acc[1])


@program(np.array([0.6, -0.3, 1.1]))
def list_of_arrays_accumulated_by_rebinding(x):
    acc = [np.zeros(3) for _ in range(2)]
    for k in range(4):
        acc[k % 2] = acc[k % 2] + x * (k + 1)
    moments = [np.sum(a**p) for p, a in enumerate(acc, start=2)]
    return moments[0] * moments[1] / 100.0


class Polynomial:
    def __init__(self, coeffs):
        self.coeffs = coeffs

    @classmethod
    def from_roots(cls, roots):
        coeffs = np.array([1.0])
        for r in roots:
            coeffs = np.convolve(coeffs, np.stack([np.ones_like(r), -r]))
        return cls(coeffs)

    @staticmethod
    def horner(coeffs, t):
        out = 0.0
        for c in coeffs:
            out = out * t + c
        return out

    def __call__(self, t):
        return self.horner(self.coeffs, t)


@program(np.array([0.5, -1.0, 1.5]), nested=True)
def classmethod_and_staticmethod_polynomial(roots):
    p = Polynomial.from_roots(roots)
    samples = np.linspace(-1.5, 2.0, 5)
    return np.sum(p(samples) ** 2) / 10 + p(0.25)


ACTIVATIONS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "gelu": lambda z: 0.5 * z * (1 + np.tanh(0.79788456 * (z + 0.044715 * z**3))),
    "swish": lambda z: z / (1 + np.exp(-z)),
}


@program(np.array([0.7, -1.2, 0.4, 2.1]), "gelu")
def lambda_table_of_activations(x, name):
    chosen = ACTIVATIONS[name]
    rest = {k: f for k, f in ACTIVATIONS.items() if k != name}
    others = sum(np.sum(f(x)) for f in rest.values())
    return np.sum(chosen(x) ** 2) + 0.1 * others


@program(np.array([2.0, 0.5, 3.0, 1.0, 0.8]), 0.9)
def while_loop_with_break_and_else(x, tol):
    i = 0
    best = x[0]
    while i < len(x) - 1:
        i += 1
        if abs(x[i] - best) < tol:
            break
        best = best * 0.5 + x[i] * 0.5
    else:
        best = best + np.sum(x) * 0.01
    return best**2 + i


@program(np.array([[0.8, 0.1], [0.3, 0.9]]), np.array([[1.0, 0.0], [0.2, 1.0]]))
def min_max_over_lists_of_arrays(A, B):
    candidates = [A, B, A @ B, 0.5 * (A + B.T)]
    norms = [np.linalg.norm(C) for C in candidates]
    smallest = min(candidates, key=np.linalg.norm)
    largest_norm = max(norms)
    return np.sum(smallest**2) + largest_norm + min(np.trace(C) for C in candidates)


class Layer:
    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return x @ self.W


class ResidualLayer(Layer):
    def __call__(self, x):
        return x + np.tanh(super().__call__(x))


@program(np.array([[0.5, -0.2], [0.3, 0.4]]), np.array([0.6, -0.8]), hessian=True)
def callable_objects_with_inheritance(W, x):
    net = [ResidualLayer(W), Layer(W.T), ResidualLayer(0.5 * W)]
    h = x
    for layer in net:
        h = layer(h)
    return np.sum(h**2)


@dataclasses.dataclass(frozen=True)
class Config:
    lr: float = 0.1
    beta: float = 0.9
    clip: float = 1.0


@program(np.array([1.5, -2.0, 0.5]))
def momentum_with_clipping_and_dataclass_config(w0):
    cfg = Config(lr=0.2)
    w, m = w0, np.zeros_like(w0)
    for _ in range(4):
        g = 2 * w + np.sin(w)
        norm = np.linalg.norm(g)
        if norm > cfg.clip:
            g = g * (cfg.clip / norm)
        m = cfg.beta * m + (1 - cfg.beta) * g
        w = w - cfg.lr * m
    return np.sum(w**2)


@program(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 0.25, 0.125, 0.0625]), hessian=True)
def back_substitution_with_reversed_range(diag, rhs):
    n = len(diag)
    U = np.diag(diag) + np.triu(np.full((n, n), 0.1), k=1)
    x = [0.0] * n
    for i in reversed(range(n)):
        s = rhs[i] - sum(U[i, j] * x[j] for j in range(i + 1, n))
        x[i] = s / U[i, i]
    return sum(xi**2 for xi in x) + x[0]


@program(np.array([0.2, 0.4, 0.6, 0.8]), np.array([1.0, 0.0, 1.0, 1.0]))
def float_labels_and_boolean_masks(p, labels):
    positive = labels == 1
    eps = 1e-7
    bce = -np.mean(labels * np.log(p + eps) + (1 - labels) * np.log(1 - p + eps))
    precision_proxy = np.sum(p[positive]) / (np.sum(p) + eps)
    return bce - precision_proxy + 0.5 * np.sum(p[~positive] ** 2)


# ----- more simulation, learning and Python ------------------------------------------------------


@dataclasses.dataclass
class Particles:
    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray = dataclasses.field(default_factory=lambda: np.array([1.0, 2.0, 1.5]))

    def __post_init__(self):
        self.momentum = self.mass[:, None] * self.vel

    @property
    def kinetic(self):
        return 0.5 * np.sum(self.momentum**2 / self.mass[:, None])


@program(np.array([[0.1, 0.2], [-0.3, 0.4], [0.5, -0.1]]))
def dataclass_with_post_init_and_default_factory(vel):
    p = Particles(pos=np.zeros((3, 2)), vel=vel)
    total_momentum = p.momentum.sum(axis=0)
    return p.kinetic + total_momentum @ total_momentum


@program(np.array([0.3, -0.2, 0.5, 0.1]), hessian=True)
def deque_window_and_defaultdict_histogram(x):
    import collections

    window = collections.deque(maxlen=2)
    bins = collections.defaultdict(float)
    smoothed = []
    for i, v in enumerate(x):
        window.append(v)
        smoothed.append(sum(window) / len(window))
        bins[i % 2] += v**2
    return sum(s**2 for s in smoothed) + bins[0] * bins[1]


@program(np.array([[0.0, 0.0], [1.0, 0.2], [0.4, 1.1], [1.3, 1.0]]), hessian=True)
def combinations_of_points_lennard_jones(points):
    energy = 0.0
    for i, j in itertools.combinations(range(len(points)), 2):
        r2 = np.sum((points[i] - points[j]) ** 2)
        inv6 = (1.0 / r2) ** 3
        energy = energy + 4 * 0.1 * (inv6**2 - inv6)
    return energy + 0.01 * np.sum(points**2)


@program(np.array([0.8, 0.3, -0.5]), np.array([0.2, 0.9, 0.4]))
def cross_products_torque_and_angular_momentum(r, f):
    torque = np.cross(r, f)
    lever = np.linalg.norm(r)
    omega = torque / lever**2
    L = np.cross(r, np.cross(omega, r))
    return torque @ torque + 0.5 * omega @ L + np.dot(np.cross(f, r), torque)


@program(np.array([1.0, 0.2, -0.3, 0.6]), nested=True)
def quaternion_slerp_with_arccos(q1):
    q0 = np.array([1.0, 0.0, 0.0, 0.0])
    q1 = q1 / np.linalg.norm(q1)
    cos_half = np.clip(q0 @ q1, -1.0, 1.0)
    omega = np.arccos(cos_half)
    ts = np.linspace(0.0, 1.0, 5)[:, None]
    path = (np.sin((1 - ts) * omega) * q0 + np.sin(ts * omega) * q1) / np.sin(omega)
    return np.sum(path[:, 1:] ** 2) + omega


@program(np.array([[1.0, 0.2, 0.1], [0.2, 0.8, 0.0], [0.1, 0.0, 1.2]]), hessian=True)
def inertia_tensor_principal_axes(inertia):
    inertia = 0.5 * (inertia + inertia.T)
    moments, axes = np.linalg.eigh(inertia)
    frame = axes * np.sign(axes[0])  # a sign convention per axis
    body_x = frame[:, 0]
    return moments @ np.array([1.0, 2.0, 3.0]) + body_x[1] ** 2 + np.linalg.det(inertia)


@program(np.array([0.9, 1.1, 1.0, 0.8, 1.2]))
def mass_spring_modes_by_eigvalsh(k):
    main = k + np.append(k[1:], 0.0)
    K = np.diag(main) - np.diag(k[1:], 1) - np.diag(k[1:], -1)
    w2 = np.linalg.eigvalsh(K)
    return np.sqrt(w2[0]) + 0.1 * np.sum(w2)


@program(np.linspace(0.0, 1.0, 6) ** 2, 0.3)
def cumulative_arc_length_reparameterisation(y, scale):
    x = np.linspace(0.0, 1.0, len(y))
    ds = np.sqrt(np.diff(x) ** 2 + (scale * np.diff(y)) ** 2)
    s = np.concatenate([[0.0], np.cumsum(ds)])
    u = s / s[-1]
    return np.sum(np.interp([0.25, 0.5, 0.75], u, y)) + s[-1]


@program(RNG.normal(size=(6, 2)) * 0.8, nested=True)
def kmeans_soft_assignments_with_argmin(X):
    centres = X[[0, 3]]
    for _ in range(3):
        d2 = np.sum((X[:, None, :] - centres[None, :, :]) ** 2, axis=-1)
        hard = np.argmin(d2, axis=1)
        resp = np.exp(-d2) / np.exp(-d2).sum(axis=1, keepdims=True)
        centres = (resp.T @ X) / resp.sum(axis=0)[:, None]
    return np.sum(d2[np.arange(len(X)), hard]) + np.sum(centres**2)


@program(RNG.normal(size=(4, 3)) * 0.5, np.array([2, 0, 1, 2]))
def focal_loss_with_take_along_axis(logits, targets):
    gamma = 2.0
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    picked = np.take_along_axis(logp, targets[:, None], axis=1)[:, 0]
    p = np.exp(picked)
    return -np.mean((1 - p) ** gamma * picked)


@program(RNG.normal(size=(2, 4, 4)) * 0.5, nested=True)
def depthwise_conv_with_padding_and_avgpool(x):
    kernel = np.array([[0.25, 0.5, 0.25]])
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)), mode="edge")
    rows = sum(kernel[0, i] * padded[:, i : i + 4, 1:5] for i in range(3))
    cols = sum(kernel[0, j] * padded[:, 1:5, j : j + 4] for j in range(3))
    y = np.maximum(rows + cols, 0.01 * (rows + cols))
    pooled = y.reshape(2, 2, 2, 2, 2).mean(axis=(2, 4))
    return np.sum(pooled**2) + np.sum(np.abs(y[0] - y[1]))


@program(RNG.normal(size=(3, 4)) * 0.3, hessian=True)
def multi_head_attention_by_reshape_and_transpose(x):
    heads, d = 2, 2
    Wqkv = np.linspace(-0.5, 0.5, 4 * 12).reshape(4, 12)
    qkv = (x @ Wqkv).reshape(3, 3, heads, d).transpose(1, 2, 0, 3)
    q, k, v = qkv[0], qkv[1], qkv[2]
    scores = np.einsum("htd,hsd->hts", q, k) / np.sqrt(d)
    attn = np.exp(scores - scores.max(-1, keepdims=True))
    attn = attn / attn.sum(-1, keepdims=True)
    out = np.einsum("hts,hsd->thd", attn, v).reshape(3, heads * d)
    return np.sum(out**2) + np.sum(np.swapaxes(attn, 0, 2)[0])


@program(np.array([0.4, -0.3, 0.9, 0.2]), hessian=True, nested=True)
def inplace_updates_on_own_arrays(x):
    h = x * 2.0
    h *= np.array([1.0, 0.5, 0.25, 2.0])
    h /= np.linalg.norm(h)
    out = np.zeros_like(x)
    out[1:] += h[:-1] * x[1:]
    tail = out[2:]
    tail -= 0.5 * x[:2]
    return np.sum(out**2) + h @ x


@program(np.array([0.5, 1.2, -0.7, 0.3, 0.9]))
def sort_and_argsort_trimmed_mean(x):
    order = np.argsort(x)
    ranked = x[order]
    trimmed = np.sort(x)[1:-1]
    weights = np.arange(1, len(x) + 1) / len(x)
    return np.mean(trimmed) ** 2 + ranked @ weights + np.median(x)


@functools.cache
def binomial(n, k):
    return 1 if k in (0, n) else binomial(n - 1, k - 1) + binomial(n - 1, k)


@program(np.array([0.2, 0.7, 1.3]), order=3)
def cached_helper_with_int_key(x, order):
    t = 0.4
    bernstein = [binomial(order, k) * t**k * (1 - t) ** (order - k) for k in range(order + 1)]
    control = np.concatenate([x, x[-1:] * 2.0])
    point = sum(b * c for b, c in zip(bernstein, control))
    return point**2 + np.sum(np.diff(control) ** 2)


@program({"a": np.array([0.5, -0.2]), "b": np.array([1.5, 0.3]), "c": 0.7})
def sorted_dict_items_and_get_default(params):
    total = 0.0
    for key, value in sorted(params.items()):
        total = total + np.sum(value**2) * (ord(key) - 96)
    bias = params.get("bias", 0.0)
    scale = params.get("c", 1.0)
    return total * scale + bias + " ".join(f"{k}" for k in params).count("a")


@program(np.array([0.3, 0.6, -0.4]))
def starmap_islice_and_chain(x):
    powered = list(itertools.starmap(pow, zip(x, [1, 2, 3])))
    first_two = list(itertools.islice(itertools.cycle(x), 1, 5))
    flat = list(itertools.chain.from_iterable([powered, first_two]))
    return sum(flat) + functools.reduce(operator.mul, powered, 1.0)


@program(np.array([0.6, -0.8, 0.4]))
def any_all_and_conditional_penalties(w):
    penalty = 0.0
    if any(abs(v) > 0.7 for v in w):
        penalty = penalty + sum(v**2 for v in w if abs(v) > 0.7)
    if all(v < 1.0 for v in w):
        penalty = penalty + 0.1 * np.sum(w**4)
    return penalty + np.prod(np.cos(w))


@program(np.array([[0.5, 0.1], [0.2, 0.4]]))
def matrix_power_and_kron_markov(P):
    P = np.abs(P) / np.abs(P).sum(axis=1, keepdims=True)
    P4 = np.linalg.matrix_power(P, 4)
    joint = np.kron(P, P)
    stationary = np.linalg.solve((np.eye(2) - P.T + np.ones((2, 2))), np.ones(2))
    return np.sum(P4[0] * np.array([1.0, 2.0])) + np.trace(joint) + stationary[0]


class Integrator:
    order = 1

    def __init__(self, dt):
        self.dt = dt

    def step(self, f, y):
        return y + self.dt * f(y)

    def run(self, f, y, n):
        for _ in range(n):
            y = self.step(f, y)
        return y


class Midpoint(Integrator):
    order = 2

    def step(self, f, y):
        return y + self.dt * f(y + 0.5 * self.dt * f(y))


@program(np.array([1.0, 0.5]), 0.3, hessian=True, nested=True)
def integrator_class_hierarchy_with_overrides(y0, k):
    def rhs(y):
        return np.stack([y[1], -k * y[0] - 0.1 * y[1] ** 3])

    results = {cls.__name__: cls(0.1).run(rhs, y0, 10) for cls in (Integrator, Midpoint)}
    err = results["Midpoint"] - results["Integrator"]
    return np.sum(results["Midpoint"] ** 2) + err @ err * Midpoint.order


@program(np.array([1.0, 1.2, 0.9, 1.3, 1.1, 1.25]), hessian=True, nested=True)
def running_peak_and_drawdown_penalty(prices):
    log_returns = np.diff(np.log(prices))
    peak = np.maximum.accumulate(prices)
    drawdown = 1.0 - prices / peak
    sharpe = np.mean(log_returns) / np.std(log_returns)
    return -sharpe + 5.0 * np.sum(drawdown**2)


@program(np.array([[0.2, 0.5, 0.1], [0.7, 0.3, 0.9], [0.4, 0.8, 0.6]]), nested=True)
def reflect_padded_laplacian_smoothing(img):
    p = np.pad(img, 1, mode="reflect")
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * img
    return np.sum(lap**2) + 0.5 * np.sum((img - 0.5) ** 2)


@program(np.array([0.8, -0.4, 0.3]), 2.5)
def spring_energy_with_a_shared_stiffness(x, k):
    rest = np.array([0.5, -0.5, 0.0])
    stretch = x - rest
    elastic = 0.5 * k * np.sum(stretch**2)
    return elastic + 0.1 * k * np.sum(np.abs(x) ** 3)


SCHEDULES = {2: (0.5, 0.25), 3: (0.5, 0.3, 0.1)}


@program(np.array([1.0, -0.5, 0.8]), 3, hessian=True)
def step_schedule_looked_up_by_an_int_argument(x0, n_steps):
    x = x0
    for lr in SCHEDULES[n_steps]:
        x = x - lr * (x - np.array([0.2, 0.1, -0.3])) * (1.0 + 0.1 * x**2)
    return np.sum(x**2)
