"""Rules for ``scipy.linalg``'s linear matrix equations: Sylvester, continuous and discrete Lyapunov.

Each solution ``X`` solves ``L(X) = Q`` for a linear operator ``L`` built from the coefficients.
Differentiating gives ``L(dX) = dQ - dL(X)``: one more solve with the same operator. The pullback
of a cotangent ``dX`` solves the adjoint equation ``L^*(G) = dX`` once; ``G`` is the cotangent of
``Q``, and the coefficients' cotangents are products of ``G`` with ``X``. The adjoint of a
Sylvester operator ``X -> A X + X B`` is ``G -> A^H G + G B^H``, again a Sylvester operator, so
the Schur forms ``A = U R U^H``, ``B = V S V^H`` computed for the primal (Bartels & Stewart 1972,
"Solution of the matrix equation AX + XB = C") solve it with LAPACK's TRSYL: no refactorization.

The discrete equation ``X - A X A^H = Q`` is solved as SciPy solves it: by one LU factorization
of ``I - A (x) conj(A)`` for small matrices (``method="direct"``, chosen below n = 10), else by the
bilinear transformation ``B = (A + I)^{-1} (A - I)``, which turns it into the continuous equation
``B X + X B^H = -2 (A + I)^{-1} Q (A + I)^{-H}`` (``method="bilinear"``); the pullback reuses the
same factors. A batch of cotangents (a leading batch axis, for reverse-mode Jacobians) solves
the adjoint equation row by row with those factors (TRSYL takes one right-hand side matrix), and
a batch of tangents the equation likewise.

Real coefficients with a complex right-hand side are solved in the complex Schur form (SciPy
1.17 hands the real quasi-triangular Schur form to the complex TRSYL there, which reads it as
triangular and returns a wrong solution when a coefficient has complex eigenvalues). Dual numbers
(forward over reverse) solve the same equations through the functions' own forward rules, so
``cr.hessian`` runs through these rules.

>>> import numpy as np, scipy.linalg as sl, chainrules as cr
>>> a, q = np.array([[2.0, 0.0], [0.0, 3.0]]), np.eye(2)
>>> x, back = cr.rrule(sl.solve_continuous_lyapunov, a, q)  # A X + X A^H = Q
>>> x
array([[0.25      , 0.        ],
       [0.        , 0.16666667]])
>>> back(np.eye(2))[2]  # the cotangent of Q solves A^H G + G A = dX
array([[0.25      , 0.        ],
       [0.        , 0.16666667]])
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sl

from ...core import carries_batch, frule, rrule, unthunk
from ._lapack import (
    LU,
    NO,
    ZERO,
    batch_size,
    by_rows,
    is_plain,
    is_zero,
    lapack,
    mH,
    mm,
    options,
    projector,
    through_rules,
)
from .linalg import _matrix

_FLIP = {"N": "C", "C": "N"}


def _trsyl(r, s, c, op_r: str, op_s: str):
    """``Y`` with ``op_r(R) Y + Y op_s(S) = C`` for (quasi-)upper triangular Schur factors ``R``, ``S``."""
    if np.iscomplexobj(c) and not np.iscomplexobj(r):  # a complex right-hand side, real factors
        return _trsyl(r, s, c.real, op_r, op_s) + 1j * _trsyl(r, s, c.imag, op_r, op_s)
    if not np.iscomplexobj(r):
        op_r, op_s = op_r.replace("C", "T"), op_s.replace("C", "T")
    y, scale, info = lapack("trsyl", r.dtype)(r, s, c.astype(r.dtype, copy=False), trana=op_r, tranb=op_s)
    if info < 0:
        raise np.linalg.LinAlgError(f"TRSYL: illegal value in argument {-info}")
    if info == 1:
        warnings.warn(
            "the coefficients have eigenvalues whose sum is zero or nearly so: the Sylvester equation is "
            "(nearly) singular and LAPACK perturbed it",
            RuntimeWarning,
            stacklevel=4,
        )
    return y / scale if scale != 1 else y


class _Sylvester:
    """``X -> A X + X B`` solved in the Schur bases ``A = U R U^H``, ``B = V S V^H``.

    ``solve(C)`` gives ``X`` with ``A X + X B = C``, ``solve(C, adjoint=True)`` gives ``G`` with
    ``A^H G + G B^H = C``, both from the same factors (``R Y + Y S = U^H C V``, ``X = U Y V^H``,
    and ``R^H Z + Z S^H = U^H C V``). For a Lyapunov operator, ``B = A^H = U R^H U^H`` reuses them.
    """

    def __init__(self, a, b=None):
        output = "complex" if np.iscomplexobj(a) else "real"
        self.r, self.u = sl.schur(a, output=output)
        if b is None:  # B = A^H
            self.s, self.v, self.op_s = self.r, self.u, "C"
        else:
            self.s, self.v = sl.schur(b, output=output)
            self.op_s = "N"

    def solve(self, c, adjoint: bool = False):
        op_r, op_s = ("C", _FLIP[self.op_s]) if adjoint else ("N", self.op_s)
        y = _trsyl(self.r, self.s, mm(mm(self.u, c, "C"), self.v), op_r, op_s)
        return mm(mm(self.u, y), self.v, "N", "C")


class _Stein:
    """``X -> X - A X A^H`` (the discrete Lyapunov operator), solved as SciPy's ``method`` does."""

    def __init__(self, a, method: str):
        n = a.shape[0]
        self.shape, self.direct = a.shape, method == "direct"
        if self.direct:  # vec(A X A^H) = (A (x) conj(A)) vec(X), rows flattened
            self.lu = LU(np.eye(n * n) - np.kron(a, np.conj(a)))
            self.lu.check("scipy.linalg.solve_discrete_lyapunov")
        else:
            ident = np.eye(n, dtype=a.dtype)
            self.plus = LU(a + ident)  # A + I, whose inverse maps the equation to a continuous one
            self.plus.check("scipy.linalg.solve_discrete_lyapunov (method='bilinear' needs A + I invertible)")
            self.continuous = _Sylvester(self.plus.solve(a - ident))

    def solve(self, c, adjoint: bool = False):
        if self.direct:
            return self.lu.solve(np.ravel(c), "C" if adjoint else "N").reshape(self.shape)
        # X - A X A^H = C   <=>  B X + X B^H = -2 (A + I)^{-1} C (A + I)^{-H}, and the adjoint
        # G - A^H G A = C   <=>  B^H G + G B = -2 (A + I)^{-H} C (A + I)^{-1}
        op = "C" if adjoint else "N"
        w = self.plus.solve(c, op)
        w = mH(self.plus.solve(mH(w), op))
        return self.continuous.solve(-2 * w, adjoint)


class _ByRules:
    """The equation of ``f`` with coefficients that are dual numbers, solved by ``f`` itself through
    its forward rule; the adjoint equation is ``f``'s with the conjugate transposed coefficients."""

    def __init__(self, f, coefficients, **kwargs):
        self.f, self.coefficients, self.kwargs = f, coefficients, kwargs

    def solve(self, c, adjoint: bool = False):
        coefficients = [mH(x) for x in self.coefficients] if adjoint else self.coefficients
        return through_rules(self.f, *coefficients, c, **self.kwargs)


def _cast(name, *xs, dtype=None):
    """The arguments as single matrices of one dtype (other array types pass through)."""
    xs = [_matrix(x, name, square=i < len(xs) - 1) for i, x in enumerate(xs)]
    if all(isinstance(x, np.ndarray) for x in xs):
        common = np.result_type(*xs) if dtype is None else np.result_type(*xs, dtype)
        xs = [x.astype(common, copy=False) for x in xs]
    return xs


def _empty(q, dtype):
    return np.empty(np.shape(q), dtype=dtype)


def _solve_tangent(solver, rhs, batched: bool):
    """``L(dX) = rhs``, row by row for a batch of right-hand sides (with the same factors)."""
    if batched:
        return by_rows(lambda row: (solver.solve(row),), rhs)[0]
    return solver.solve(rhs)


# ----- Sylvester: A X + X B = Q ------------------------------------------------------------


def _sylvester_setup(a, b, q):
    name = "scipy.linalg.solve_sylvester"
    a, b, q = _cast(name, a, b, q)
    if np.shape(q) != (a.shape[0], b.shape[0]):
        raise ValueError(f"{name}: q must have shape {(a.shape[0], b.shape[0])}, got {np.shape(q)}")
    if a.size == 0 or b.size == 0:
        return a, b, _empty(q, q.dtype), None
    solver = _Sylvester(a, b) if is_plain(a, b, q) else _ByRules(sl.solve_sylvester, (a, b))
    return a, b, solver.solve(q), solver


@rrule.register(sl.solve_sylvester, batched=True)
def rrule_solve_sylvester(a, b, q):
    project_a, project_b, project_q = projector(a), projector(b), projector(q)
    a, b, x, solver = _sylvester_setup(a, b, q)

    def solve_sylvester_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx) or solver is None:
            return NO, ZERO, ZERO, ZERO
        if carries_batch(x, dx):
            (g,) = by_rows(lambda row: (solver.solve(row, adjoint=True),), dx)
            return NO, project_a.batch(-mm(g, x, "N", "C")), project_b.batch(-mm(mH(x), g)), project_q.batch(g)
        g = solver.solve(dx, adjoint=True)  # A^H G + G B^H = dX, in the primal's Schur bases
        return NO, project_a(-mm(g, x, "N", "C")), project_b(-mm(x, g, "C")), project_q(g)

    return x, solve_sylvester_pullback


@frule.register(sl.solve_sylvester, batched=True)
def frule_solve_sylvester(tangents, a, b, q):
    da, db, dq = (unthunk(t) for t in tangents[1:])
    batched = batch_size((da, db, dq), (a, b, q)) is not None
    a, b, x, solver = _sylvester_setup(a, b, q)
    rhs = 0 if is_zero(dq) else dq  # A dX + dX B = dQ - dA X - X dB
    if not is_zero(da):
        rhs = rhs - mm(da, x)
    if not is_zero(db):
        rhs = rhs - mm(x, db)
    if np.ndim(rhs) == 0 or solver is None:
        return x, ZERO
    return x, _solve_tangent(solver, rhs, batched)


# ----- continuous Lyapunov: A X + X A^H = Q ------------------------------------------------


def _continuous_setup(a, q):
    name = "scipy.linalg.solve_continuous_lyapunov"
    a, q = _cast(name, a, q)
    if np.shape(q) != a.shape:
        raise ValueError(f"{name}: a and q must have the same shape, got {a.shape} and {np.shape(q)}")
    if a.size == 0:
        return a, _empty(q, q.dtype), None
    solver = _Sylvester(a) if is_plain(a, q) else _ByRules(sl.solve_continuous_lyapunov, (a,))
    return a, solver.solve(q), solver


@rrule.register(sl.solve_continuous_lyapunov, batched=True)
def rrule_solve_continuous_lyapunov(a, q):
    project_a, project_q = projector(a), projector(q)
    a, x, solver = _continuous_setup(a, q)

    def solve_continuous_lyapunov_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx) or solver is None:
            return NO, ZERO, ZERO
        if carries_batch(x, dx):
            (g,) = by_rows(lambda row: (solver.solve(row, adjoint=True),), dx)
            return NO, project_a.batch(-(mm(g, x, "N", "C") + mm(mH(g), x))), project_q.batch(g)
        g = solver.solve(dx, adjoint=True)  # A^H G + G A = dX
        # dQ - dA X - X dA^H, pulled back: -(G X^H + G^H X)
        return NO, project_a(-(mm(g, x, "N", "C") + mm(g, x, "C"))), project_q(g)

    return x, solve_continuous_lyapunov_pullback


@frule.register(sl.solve_continuous_lyapunov, batched=True)
def frule_solve_continuous_lyapunov(tangents, a, q):
    da, dq = (unthunk(t) for t in tangents[1:])
    batched = batch_size((da, dq), (a, q)) is not None
    a, x, solver = _continuous_setup(a, q)
    rhs = 0 if is_zero(dq) else dq  # A dX + dX A^H = dQ - dA X - X dA^H
    if not is_zero(da):
        rhs = rhs - mm(da, x) - mm(x, da, "N", "C")
    if np.ndim(rhs) == 0 or solver is None:
        return x, ZERO
    return x, _solve_tangent(solver, rhs, batched)


# ----- discrete Lyapunov: X - A X A^H = Q ---------------------------------------------------

_DISCRETE_OPTIONS = (("method", None),)


def _discrete_setup(a, q, rest, kwargs):
    name = "scipy.linalg.solve_discrete_lyapunov"
    method = options(name, rest, kwargs, _DISCRETE_OPTIONS)["method"]
    a, q = _cast(name, a, q, dtype=np.float64)  # SciPy computes in double precision
    if np.shape(q) != a.shape:
        raise ValueError(f"{name}: a and q must have the same shape, got {a.shape} and {np.shape(q)}")
    if method is None:
        method = "bilinear" if a.shape[0] >= 10 else "direct"
    method = method.lower()
    if method not in ("direct", "bilinear"):
        raise ValueError(f"{name}: unknown solver {method!r}")
    if a.size == 0:
        return a, _empty(q, q.dtype), None
    solver = _Stein(a, method) if is_plain(a, q) else _ByRules(sl.solve_discrete_lyapunov, (a,), method=method)
    return a, solver.solve(q), solver


@rrule.register(sl.solve_discrete_lyapunov, batched=True)
def rrule_solve_discrete_lyapunov(a, q, *rest, **kwargs):
    project_a, project_q = projector(a), projector(q)
    a, x, solver = _discrete_setup(a, q, rest, kwargs)
    extra = (NO,) * len(rest)

    def solve_discrete_lyapunov_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx) or solver is None:
            return (NO, ZERO, ZERO) + extra
        if carries_batch(x, dx):
            (g,) = by_rows(lambda row: (solver.solve(row, adjoint=True),), dx)
            grad = mm(mm(g, a), x, "N", "C") + mm(mH(g), mm(a, x))
            return (NO, project_a.batch(grad), project_q.batch(g)) + extra
        g = solver.solve(dx, adjoint=True)  # G - A^H G A = dX
        # dQ + dA X A^H + A X dA^H, pulled back: G A X^H + G^H A X
        grad = mm(mm(g, a), x, "N", "C") + mm(g, mm(a, x), "C")
        return (NO, project_a(grad), project_q(g)) + extra

    return x, solve_discrete_lyapunov_pullback


@frule.register(sl.solve_discrete_lyapunov, batched=True)
def frule_solve_discrete_lyapunov(tangents, a, q, *rest, **kwargs):
    da, dq = (unthunk(t) for t in tangents[1:3])
    batched = batch_size((da, dq), (a, q)) is not None
    a, x, solver = _discrete_setup(a, q, rest, kwargs)
    rhs = 0 if is_zero(dq) else dq  # dX - A dX A^H = dQ + dA X A^H + A X dA^H
    if not is_zero(da):
        rhs = rhs + mm(mm(da, x), a, "N", "C") + mm(mm(a, x), da, "N", "C")
    if np.ndim(rhs) == 0 or solver is None:
        return x, ZERO
    return x, _solve_tangent(solver, rhs, batched)
