"""Reverse-mode Jacobians through linear algebra pull back one block of cotangents (the rules of
``numpy.linalg`` and ``scipy.linalg`` take a batch), and agree with the loop of one pullback per
output, with forward mode and with finite differences, on both reverse engines (the tape runs
NumPy only: SciPy's functions are Python code it cannot see into)."""

import numpy as np
import pytest
import scipy.linalg as sl
from _jacobians import ENGINES, loop_jacobian

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse import source, trace

RNG = np.random.default_rng(17)
A = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
S = RNG.standard_normal((4, 4))
S = S @ S.T + 4 * np.eye(4)
T = RNG.standard_normal((4, 4))
T = T + T.T
T2 = np.stack([T, T @ T / 4])
LU_AND_PIV = sl.lu_factor(A)


def solve_vector(x):
    return np.linalg.solve(A, x)


def inverse_of_a_reshape(a):
    return np.linalg.inv(a.reshape(3, 3)).ravel()


def eigenvalues_along_a_line(x):
    return np.linalg.eigvalsh(S + x[0] * T)


def eigenvalues_of_a_family(x):
    return np.linalg.eigvalsh(S + np.tensordot(x, T2, axes=1))


def cholesky_factor(x):
    return np.linalg.cholesky(S + np.outer(x, x)).ravel()


def det_times_inverse(a):
    m = a.reshape(3, 3)
    return np.linalg.det(m) * np.linalg.inv(m).ravel() + np.linalg.trace(m)


def log_det_times_inverse(a):  # slogdet's tuple: the tape follows it, the source engine takes it apart
    m = a.reshape(3, 3)
    return np.linalg.slogdet(m)[1] * np.linalg.inv(m).ravel()


def stacked_solve(x):
    return np.linalg.solve(np.stack([A, A.T]), x).ravel()


def scipy_solve(x):
    return sl.solve(A, x)


def scipy_expm(a):
    return sl.expm(a.reshape(2, 2)).ravel()


def scipy_lu_solve(x):
    return sl.lu_solve(LU_AND_PIV, x * x)


def scipy_eigvalsh(a):
    return sl.eigvalsh(a.reshape(3, 3))


def _forward_columns(f, args, position, directions):
    """The Jacobian's columns from ``cr.jvp`` of the SciPy function itself (forward mode uses a
    SciPy function's rule only when it is the function differentiated)."""
    zeros = [cr.ZeroTangent()] * len(args)
    columns = []
    for d in directions:
        tangents = list(zeros)
        tangents[position] = d
        columns.append(cr.jvp(f, args, tuple(tangents))[1])
    return np.stack(columns, axis=-1)


SQUARE = (RNG.standard_normal((3, 3)) + 3 * np.eye(3)).ravel()
NUMPY_FUNCTIONS = [
    (solve_vector, RNG.standard_normal(4)),
    (inverse_of_a_reshape, SQUARE),
    (eigenvalues_of_a_family, RNG.standard_normal(2)),
    (cholesky_factor, RNG.standard_normal(4)),
    (det_times_inverse, SQUARE),
    (stacked_solve, RNG.standard_normal(4)),
]
CASES = [(f, x, engine) for f, x in NUMPY_FUNCTIONS for engine in ENGINES]

# SciPy's functions (Python code the tape cannot see into) on the source engine; forward mode from
# the SciPy function's own forward rule
SCIPY_FUNCTIONS = [
    (scipy_solve, RNG.standard_normal(4), lambda x: _forward_columns(sl.solve, (A, x), 1, np.eye(4))),
    (
        scipy_expm,
        RNG.standard_normal(4),
        lambda x: cr.jacobian(sl.expm, x.reshape(2, 2), mode="forward").reshape(4, 4),
    ),
    (
        scipy_lu_solve,
        RNG.standard_normal(4),
        lambda x: _forward_columns(sl.lu_solve, (LU_AND_PIV, x * x), 1, 2 * x * np.eye(4)),
    ),
    (
        scipy_eigvalsh,
        (S[:3, :3] + RNG.standard_normal((3, 3))).ravel(),
        lambda x: cr.jacobian(sl.eigvalsh, x.reshape(3, 3), mode="forward").reshape(3, 9),
    ),
]


def _check(J, y, x, f, engine, forward):
    assert J.shape == np.shape(y) + np.shape(x)
    np.testing.assert_allclose(J, loop_jacobian(engine, f, x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(J, forward, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(J, crt.fd_jacobian(f, x).reshape(J.shape), rtol=1e-6, atol=1e-7)


def _ids(v):
    return getattr(v, "__name__", None) or (v if isinstance(v, str) else "")


@pytest.mark.parametrize("f, x, engine", CASES, ids=_ids)
def test_a_batched_jacobian_equals_the_loop_forward_mode_and_finite_differences(f, x, engine):
    y, back = ENGINES[engine](f, x)
    assert back.batched
    J = cr.jacobian(f, x, mode="reverse", engine=engine)
    _check(J, y, x, f, engine, cr.jacobian(f, x, mode="forward"))


@pytest.mark.parametrize("f, x, forward", SCIPY_FUNCTIONS, ids=_ids)
def test_scipy_functions_pull_back_a_block_on_the_source_engine(f, x, forward):
    y, back = source.pullback_full(f, x)
    assert back.batched
    J = cr.jacobian(f, x, mode="reverse")
    _check(J, y, x, f, "source", forward(x))


@pytest.mark.parametrize("engine", list(ENGINES))
def test_eigenvalues_along_a_line_in_one_block(engine):
    """``S + x[0] T``: the eigenvalues' derivatives are ``v_i^T T v_i``, and ``x[1]`` does not enter."""
    x = RNG.standard_normal(2)
    assert ENGINES[engine](eigenvalues_along_a_line, x)[1].batched
    J = cr.jacobian(eigenvalues_along_a_line, x, mode="reverse", engine=engine)
    w, v = np.linalg.eigh(S + x[0] * T)
    np.testing.assert_allclose(J[:, 0], np.einsum("ij,ik,kj->j", v, T, v), rtol=1e-10)
    np.testing.assert_array_equal(J[:, 1], 0.0)
    np.testing.assert_allclose(J, cr.jacobian(eigenvalues_along_a_line, x, mode="forward"), rtol=1e-12)


def test_a_tuple_output_of_a_rule_keeps_the_tape_batched():
    """The tape follows each part of ``slogdet``'s tuple: the rule's pullback gets a ``Tangent`` whose
    parts carry the batch (the source engine takes the tuple apart one cotangent at a time)."""
    y, back = trace.pullback_full(log_det_times_inverse, SQUARE)
    assert back.batched
    J = cr.jacobian(log_det_times_inverse, SQUARE, mode="reverse", engine="tape")
    _check(J, y, SQUARE, log_det_times_inverse, "tape", cr.jacobian(log_det_times_inverse, SQUARE, mode="forward"))
    np.testing.assert_allclose(J, cr.jacobian(log_det_times_inverse, SQUARE, mode="reverse"), rtol=1e-12)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_one_solve_with_the_primal_factors_per_block(engine, monkeypatch):
    """``solve``'s pullback solves the whole block of cotangents in one call with the primal's LU
    factors: one solve for the primal, one for the block, none per output."""
    import chainrules.rules.scipy._lapack as lapack_module

    calls = []
    original = lapack_module.LU.solve

    def counting_solve(self, b, op="N", batched=False, vector=None):
        calls.append(np.shape(b))
        return original(self, b, op, batched, vector)

    monkeypatch.setattr(lapack_module.LU, "solve", counting_solve)
    x = RNG.standard_normal(4)
    J = cr.jacobian(solve_vector, x, mode="reverse", engine=engine)
    assert calls == [(4,), (4, 4)]
    np.testing.assert_allclose(J, np.linalg.inv(A), rtol=1e-12)
