"""What the third program corpus (``programs_corpus_three.py``) found, one test per bug, each
small enough to say what went wrong: every engine against finite differences, or the error that
names the user's line where a wrong number had come out."""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

REVERSE = ("source", "tape")


def fd_gradient(f, x):
    return crt.fd_jacobian(f, x).reshape(np.shape(x))


# ----- forward mode: a dual was hashed and compared by its primal ---------------------------------


@functools.lru_cache
def cached_square(v):
    return v * v


def test_a_cache_never_returns_what_it_computed_without_the_derivative():
    # a dual hashed as its primal found the plain call's result: the derivative came out 0.0
    assert cached_square(2.0) == 4.0
    with pytest.raises(TypeError, match=r"dual number is unhashable \(at .*test_programs_three_regressions.py:\d+"):
        cr.derivative(cached_square, 2.0)
    memo = {3.0: 9.0}

    def memoised_square(v):
        if v not in memo:
            memo[v] = v * v
        return memo[v]

    with pytest.raises(TypeError, match="lru_cache"):
        cr.jvp(memoised_square, (3.0,), (1.0,))
    with pytest.raises(TypeError, match=r"value being differentiated is unhashable \(at .*regressions.py:\d+"):
        cr.gradient(memoised_square, 3.0, engine="tape")


def distinct_sums(M):
    sums = {np.sum(M) for _ in range(2)}
    return np.sum(M**2) * len(sums)


def test_a_set_of_differentiated_values_is_refused_with_the_line():
    # the tape said only "unhashable type: 'TrackedNumber'"; the source engine spoke of an `s.add(v)`
    # into `comprehension`, neither of which the user wrote
    with pytest.raises(cr.UnsupportedSyntaxError, match=r"regressions.py:\d+:\d+: a set of differentiated values"):
        cr.gradient(distinct_sums, np.ones(2))
    with pytest.raises(TypeError, match=r"value being differentiated is unhashable \(at .*regressions.py:\d+"):
        cr.gradient(distinct_sums, np.ones(2), engine="tape")


# ----- nested differentiation ---------------------------------------------------------------------


def quadratic(w, lam):
    return 0.5 * np.sum((np.array([[1.0, 0.3], [0.2, 1.0]]) @ w - 1.0) ** 2) + lam * w @ w


def descent_loss(w0):
    value, g = cr.value_and_gradient(quadratic, w0, 0.3, argnums=0)  # a vector dot product inside
    w = w0 - 0.1 * g
    return quadratic(w, 0.3) + 0.1 * value


@pytest.mark.parametrize("engine", REVERSE)
def test_hessian_over_a_nested_gradient_whose_rules_return_engine_numbers(engine):
    # `w @ w` of tracked arrays gives an engine's number, which the rule indexed with [()]
    x = np.array([0.2, -0.1])
    H = cr.hessian(descent_loss, x, engine=engine)
    np.testing.assert_allclose(H, crt.fd_jacobian(lambda z: cr.gradient(descent_loss, z)[0], x), rtol=1e-6)


def field(x):
    return np.stack([x[1] * x[2], -x[0] * x[2], np.sin(x[0])])


def directional(x):
    _, dy = cr.jvp(field, (x,), (np.array([1.0, 0.5, 0.0]),))
    return np.sum(dy**2)


def test_a_jvp_inside_a_tape_hessian_indexes_a_dual_of_a_tracked_dual():
    # getitem on a dual holding a tracked array holding a dual bounced between the engines' bridges
    x = np.array([0.4, -0.2, 0.9])
    H = cr.hessian(directional, x, engine="tape")
    np.testing.assert_allclose(H, crt.fd_jacobian(lambda z: cr.gradient(directional, z)[0], x), rtol=1e-6, atol=1e-9)
    weights = np.array([0.5, 1.0, 1.5])
    slope = cr.gradient(lambda z: np.sum(cr.gradient(directional, z)[0] * weights), x, engine="tape")[0]
    np.testing.assert_allclose(slope, H @ weights, rtol=1e-8)


class Pose(NamedTuple):
    position: np.ndarray
    angle: float


def reach(pose, length):
    tip = pose.position + length * np.stack([np.cos(pose.angle), np.sin(pose.angle)])
    return np.sum((tip - 1.0) ** 2)


def penalised_reach(pose, length):
    g_pose, g_length = cr.gradient(reach, pose, length, argnums=(0, 1))  # a Tangent[Pose], read by field
    return reach(pose, length) + g_pose.position @ g_pose.position + g_pose.angle**2 + g_length**2


def dict_loss(w):
    grads = cr.gradient(lambda p: np.sum(p["w"] ** 3) * p["b"], {"w": w, "b": 2.0})[0]
    return np.sum(grads["w"]) + grads["b"]


@pytest.mark.parametrize("engine", REVERSE)
def test_fields_of_a_nested_gradient_of_a_structure(engine):
    # the source engine had no rule for Tangent.__getattr__ / Tangent.__getitem__
    pose, length = Pose(np.array([0.2, -0.4]), 0.7), 1.5
    d_pose, d_length = cr.gradient(penalised_reach, pose, length, engine=engine)
    np.testing.assert_allclose(d_length, fd_gradient(lambda s: penalised_reach(pose, s), length), rtol=1e-6)
    np.testing.assert_allclose(
        d_pose.angle, fd_gradient(lambda a: penalised_reach(Pose(pose.position, a), length), 0.7), rtol=1e-6
    )
    w = np.array([0.5, -1.0])
    np.testing.assert_allclose(cr.gradient(dict_loss, w, engine=engine)[0], fd_gradient(dict_loss, w), rtol=1e-6)


def nll(w):
    return np.sum(np.logaddexp(0.0, np.array([[1.0, 0.3], [1.0, -0.8], [0.5, 1.4]]) @ w)) + 0.1 * w @ w


def evidence(params):
    w, scale = params[:2], params[2]
    H = cr.hessian(lambda v: nll(v) * scale + np.sum(np.exp(scale * v)), w)  # a closure over scale
    return np.linalg.slogdet(H)[1] + nll(w)


@pytest.mark.parametrize("engine", REVERSE)
def test_a_hessian_inside_a_differentiated_function(engine):
    # the source engine had no rule for cr.hessian
    p = np.array([0.4, -0.2, 0.7])
    np.testing.assert_allclose(cr.gradient(evidence, p, engine=engine)[0], fd_gradient(evidence, p), rtol=1e-6)
    h = cr.gradient(lambda x: cr.hessian(lambda v: v**3 * np.sin(v), x) * x, 0.7, engine=engine)[0]
    np.testing.assert_allclose(h, fd_gradient(lambda x: cr.hessian(lambda v: v**3 * np.sin(v), x) * x, 0.7))


def wide_params(x):
    return np.sum(np.exp(x[:, None] * np.array([1.0, 0.5, -0.3]))) * x[0]


def zipped_with_a_constant(x, w):
    pairs = [(a * b, a) for a, b in zip(x, w)]
    ranked = sorted(pairs, key=lambda t: t[0])
    return sum(rank * value for rank, (value, _) in enumerate(ranked)) + wide_params(x)


@pytest.mark.parametrize("engine", REVERSE)
def test_hessian_of_a_zip_over_a_constant_array(engine):
    # the rows' cotangents of the constant w are duals under a Hessian: they were written into a plain array
    x, w = np.array([0.3, 1.4, -0.2]), np.array([1.0, 0.5, 2.0])
    H = cr.hessian(lambda z: zipped_with_a_constant(z, w), x, engine=engine)
    reference = crt.fd_jacobian(lambda z: cr.gradient(zipped_with_a_constant, z, w)[0], x)
    np.testing.assert_allclose(H, reference, rtol=1e-6, atol=1e-9)


# ----- the source engine on Python the others ran ---------------------------------------------------


@dataclasses.dataclass
class Affine:
    A: np.ndarray
    b: np.ndarray

    def __matmul__(self, other):
        if isinstance(other, Affine):
            return Affine(self.A @ other.A, self.A @ other.b + self.b)
        return self.A @ other + self.b  # applied to a vector


def composed(A):
    f = Affine(A, np.array([0.1, -0.3]))
    g = f @ f
    return np.sum((g @ np.array([1.0, 2.0])) ** 2)


@pytest.mark.parametrize("engine", REVERSE)
def test_matmul_defined_by_a_user_class(engine):
    # `f @ g` had no rule, `f @ x` crashed in the arrays' rule
    A = np.array([[0.5, 0.1], [-0.2, 0.8]])
    np.testing.assert_allclose(cr.gradient(composed, A, engine=engine)[0], fd_gradient(composed, A), rtol=1e-6)


@dataclasses.dataclass(frozen=True)
class Schedule:
    lr: float
    momentum: float


def scheduled(theta, lr):
    h = Schedule(lr=lr, momentum=0.5)
    for _ in range(3):
        h = dataclasses.replace(h, lr=h.lr * 0.8)
        theta = theta - h.lr * theta**3
    return np.sum(theta**2) + h.momentum


@pytest.mark.parametrize("engine", REVERSE)
def test_dataclasses_replace_with_a_differentiated_field(engine):
    # the source engine refused attribute writes advising dataclasses.replace, which it then had no rule for
    theta, lr = np.array([1.0, -0.5]), 0.2
    d_theta, d_lr = cr.gradient(scheduled, theta, lr, engine=engine)
    np.testing.assert_allclose(d_theta, fd_gradient(lambda t: scheduled(t, lr), theta), rtol=1e-6)
    np.testing.assert_allclose(d_lr, fd_gradient(lambda s: scheduled(theta, s), lr), rtol=1e-6)


def noisy(x):
    rng = np.random.default_rng(5)
    a = x + rng.normal(size=3)  # rng is drawn from again: the call changes it
    return np.sum(a * rng.normal(size=3) + 0.1 * rng.random() * x**2)


@pytest.mark.parametrize("engine", REVERSE)
def test_a_seeded_generator_drawn_from_several_times(engine):
    x = np.array([0.3, 0.5, 0.2])
    np.testing.assert_allclose(cr.gradient(noisy, x, engine=engine)[0], fd_gradient(noisy, x), rtol=1e-6)


# ----- np.select ------------------------------------------------------------------------------------


X_SELECT = np.array([-1.5, -0.2, 0.4, 1.3, 2.6])


def test_select_rules():
    conditions = [X_SELECT < -1, X_SELECT > 2, X_SELECT > -1]  # overlapping: the first true one wins
    choices = [np.exp(X_SELECT), np.log(np.abs(X_SELECT)), X_SELECT**2]
    crt.test_rrule(np.select, conditions, choices, 0.5 * X_SELECT)
    crt.test_frule(np.select, conditions, choices, 0.5 * X_SELECT)
    broadcast = ([X_SELECT[:, None] < 0], [np.ones((5, 3))], np.array([0.1, 0.2, 0.3]))
    crt.test_rrule(np.select, *broadcast)
    crt.test_frule(np.select, *broadcast)
    crt.test_rrule(np.select, conditions[:2], [c.astype(np.float32) for c in choices[:2]], np.float32(0.5))


def selected(x):
    return np.sum(np.select([x < -1, x > 2], [np.exp(x), np.log(np.abs(x))], default=0.5 * x) ** 2)


@pytest.mark.parametrize("engine", REVERSE)
def test_select_in_every_engine(engine):
    reference = fd_gradient(selected, X_SELECT)
    np.testing.assert_allclose(cr.gradient(selected, X_SELECT, engine=engine)[0], reference, rtol=1e-6)
    np.testing.assert_allclose(cr.jacobian(selected, X_SELECT, mode="forward"), reference, rtol=1e-6)
    H = cr.hessian(selected, X_SELECT, engine=engine)
    reference = crt.fd_jacobian(lambda z: cr.gradient(selected, z)[0], X_SELECT)
    np.testing.assert_allclose(H, reference, rtol=1e-6, atol=1e-9)
