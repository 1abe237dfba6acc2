"""Finite-difference methods with an adaptive step, and finite-difference JVPs and VJPs of structured functions.

The algorithm is FiniteDifferences.jl's:

- A ``p``-point method on an integer grid ``g`` estimates the ``q``-th derivative as
  ``sum_k c_k f(x + h g_k) / h**q``, the coefficients ``c`` solving the Vandermonde system
  ``sum_k c_k g_k**i = q! [i == q]`` (``i = 0..p-1``) exactly in rational arithmetic.
- The step ``h`` minimises the error bound ``C1 h**-q + C2 h**(p-q)``: round-off
  ``C1 = eps |f| factor sum|c_k|`` against truncation ``C2 = |f^(p)| sum|c_k g_k**p| / p!``, giving
  ``h = (q / (p - q) C1 / C2) ** (1/p)``. The size of the ``p``-th derivative comes from a
  *bound estimator*, a ``(p+2)``-point method for the ``p``-th derivative evaluated at ``x`` and
  its two grid neighbours (its own step from a fixed ``condition`` number in place of ``|f^(p)|``).
- The step is clamped to ``max_range / max|g|`` (keep the evaluations inside the function's
  domain) and to 1000 times the default step.
- Optionally, Richardson extrapolation: estimates at steps ``h, h c, h c**2, ...`` combined to
  cancel the leading error terms, whose powers of ``h`` are read off the exact coefficients.

``fd_jvp``/``fd_vjp``/``fd_jacobian`` apply a method to any value ``to_vec`` flattens.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from ..core import AbstractZero, Tangent, unthunk
from .to_vec import Layout, layout, values_like

_EPS64 = float(np.finfo(np.float64).eps)


def _solve_exact(A: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Gaussian elimination in exact rational arithmetic (the Vandermonde systems are tiny)."""
    n = len(b)
    M = [row[:] + [rhs] for row, rhs in zip(A, b)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if M[r][col] != 0)
        M[col], M[pivot] = M[pivot], M[col]
        for r in range(n):
            if r != col and M[r][col] != 0:
                ratio = M[r][col] / M[col][col]
                M[r] = [a - ratio * c for a, c in zip(M[r], M[col])]
    return [M[i][n] / M[i][i] for i in range(n)]


def fdm_coefficients(grid: Sequence[int], q: int) -> tuple[Fraction, ...]:
    """The exact weights of the finite-difference formula for the ``q``-th derivative on ``grid``.

    >>> from chainrules.testing import fdm_coefficients
    >>> [str(c) for c in fdm_coefficients([-2, -1, 0, 1, 2], 1)]
    ['1/12', '-2/3', '0', '2/3', '-1/12']
    """
    p = len(grid)
    if len(set(grid)) != p:
        raise ValueError(f"the grid {list(grid)} has repeated points")
    if not 0 <= q < p:
        raise ValueError(f"a {p}-point method estimates derivatives of order 0 to {p - 1}, not {q}")
    A = [[Fraction(g) ** i for g in grid] for i in range(p)]
    b = [Fraction(math.factorial(q)) if i == q else Fraction(0) for i in range(p)]
    return tuple(_solve_exact(A, b))


class FiniteDifferenceMethod:
    """A finite-difference method: call it as ``m(f, x)`` for the derivative of ``f`` at the float ``x``.

    ``f`` may return a float or a float array (every element is differentiated). Build one with
    ``central_fdm``, ``forward_fdm`` or ``backward_fdm``. ``m(f, x, step=h)`` uses a fixed step;
    ``m.estimate_step(f, x)`` returns the adaptive ``(step, error_bound)``;
    ``m.extrapolate(f, x)`` returns Richardson's ``(estimate, error_estimate)``. ``eps`` is the
    relative round-off of ``f``'s arithmetic (float64's by default; pass float32's for float32
    functions).
    """

    def __init__(
        self,
        grid: Sequence[int],
        q: int,
        *,
        adapt: int = 1,
        condition: float = 10.0,
        factor: float = 1.0,
        max_range: float = math.inf,
        richardson: bool = False,
    ):
        self.grid = tuple(int(g) for g in grid)
        self.p = len(self.grid)
        self.q = q
        exact = fdm_coefficients(self.grid, q)
        self.coefs = np.array([float(c) for c in exact])
        self.grid_array = np.array(self.grid, dtype=float)
        # coefficients estimating the same derivative at the neighbours x - h and x + h from the same points
        self.coefs_neighbourhood = tuple(
            np.array([float(c) for c in fdm_coefficients([g - shift for g in self.grid], q)]) for shift in (-1, 0, 1)
        )
        self.condition = float(condition)
        self.factor = float(factor)
        self.max_range = float(max_range)
        self.richardson = richardson
        self.adapt = adapt
        self.error_powers = _error_powers(self.grid, exact, q)
        self.bound_estimator = (
            FiniteDifferenceMethod(
                _add_tails(self.grid),
                self.p,
                adapt=adapt - 1,
                condition=condition,
                factor=factor,
                max_range=max_range,
            )
            if adapt >= 1
            else None
        )
        p, c, g = self.p, self.coefs, self.grid_array
        self._sum_abs_coefs = float(np.sum(np.abs(c)))
        self._truncation_moment = float(np.sum(np.abs(c * g**p))) / math.factorial(p)
        self._used = c != 0  # points whose weight is zero need no evaluation

    def __repr__(self) -> str:
        extra = f", max_range={self.max_range:g}" if math.isfinite(self.max_range) else ""
        extra += ", richardson=True" if self.richardson else ""
        return f"FiniteDifferenceMethod(grid={list(self.grid)}, q={self.q}, adapt={self.adapt}{extra})"

    # -- estimates --
    def __call__(self, f: Callable, x: float, step: float | None = None, *, eps: float | None = None):
        """The estimate of the ``q``-th derivative of ``f`` at ``x``."""
        x = float(x)
        if step is None:
            if self.richardson:
                return self.extrapolate(f, x, eps=eps)[0]
            step = self.estimate_step(f, x, eps=eps)[0]
        points = x + step * self.grid_array[self._used]
        total = sum(c * np.asarray(f(pt), dtype=float) for c, pt in zip(self.coefs[self._used], points))
        estimate = total / step**self.q
        return float(estimate) if np.ndim(estimate) == 0 else estimate

    def estimate_step(self, f: Callable, x: float, *, eps: float | None = None) -> tuple[float, float]:
        """``(step, error_bound)``: the step minimising the round-off plus truncation bound (NaN bound when clamped)."""
        eps = _EPS64 if eps is None else float(eps)
        if self.bound_estimator is None:
            step, accuracy = self._default_step(eps)
        else:
            derivative_size, f_size = self.bound_estimator._magnitudes(f, float(x), eps)
            if derivative_size > 0 and f_size > 0 and math.isfinite(derivative_size) and math.isfinite(f_size):
                step, accuracy = self._step_and_accuracy(derivative_size, eps * f_size)
            else:  # a polynomial of low degree, a zero function, or values outside the domain
                step, accuracy = self._default_step(eps)
        return self._limit_step(step, accuracy, eps)

    def _step_and_accuracy(self, derivative_size: float, f_error: float) -> tuple[float, float]:
        p, q = self.p, self.q
        c1 = f_error * self.factor * self._sum_abs_coefs
        c2 = derivative_size * self._truncation_moment
        step = (q / (p - q) * c1 / c2) ** (1 / p) if q > 0 else (c1 / c2) ** (1 / p)
        return step, step**-q * c1 + step ** (p - q) * c2

    def _default_step(self, eps: float) -> tuple[float, float]:
        return self._step_and_accuracy(self.condition, eps)

    def _limit_step(self, step: float, accuracy: float, eps: float) -> tuple[float, float]:
        step_max = self.max_range / float(np.max(np.abs(self.grid_array)))
        if step > step_max:
            step, accuracy = step_max, math.nan
        default_max = 1000 * self._default_step(eps)[0]
        if step > default_max:
            step, accuracy = default_max, math.nan
        return step, accuracy

    def _magnitudes(self, f: Callable, x: float, eps: float) -> tuple[float, float]:
        """Sizes of this method's derivative near ``x`` and of ``f`` itself, from one set of evaluations."""
        step = self.estimate_step(f, x, eps=eps)[0]
        fs = np.array([np.asarray(f(x + step * g), dtype=float) for g in self.grid])
        fs = fs.reshape(self.p, -1)
        derivative_size = max(float(np.max(np.abs(c @ fs))) for c in self.coefs_neighbourhood) / step**self.q
        return derivative_size, float(np.max(np.abs(fs))) if fs.size else 0.0

    # -- Richardson extrapolation --
    def extrapolate(
        self,
        f: Callable,
        x: float,
        initial_step: float | None = None,
        *,
        contract: float = 0.125,
        breaktol: float = 2.0,
        max_steps: int = 10,
        rtol: float = 0.0,
        atol: float = 0.0,
        eps: float | None = None,
    ):
        """``(estimate, error_estimate)`` by Richardson extrapolation of estimates at shrinking steps.

        The steps are ``initial_step * contract**k``; the tableau cancels the error terms
        ``h**e`` for the powers ``e`` of this method's truncation error. It stops when the
        error estimate grows by more than ``breaktol`` (round-off took over), meets
        ``max(rtol |estimate|, atol)``, or after ``max_steps`` contractions. The default initial
        step is ``max_range / max|g|`` when ``max_range`` is finite, else ``0.1``.

        >>> import math
        >>> from chainrules.testing import central_fdm
        >>> value, error = central_fdm(5, 1).extrapolate(math.exp, 1.0)
        >>> abs(value - math.e) < 1e-12
        True
        """
        x = float(x)
        if initial_step is None:
            span = float(np.max(np.abs(self.grid_array)))
            initial_step = self.max_range / span if math.isfinite(self.max_range) else 0.1
        h = float(initial_step)
        previous = [np.asarray(self(f, x, h), dtype=float)]
        best, best_error = previous[0], math.inf
        for _ in range(max_steps):
            h *= contract
            row = [np.asarray(self(f, x, h), dtype=float)]
            row_error = math.inf
            for k, power in enumerate(self.error_powers[: len(previous)], start=1):
                ratio = contract ** (-power)
                improved = row[k - 1] + (row[k - 1] - previous[k - 1]) / (ratio - 1)
                error = float(np.max(np.abs(improved - row[k - 1])))
                row.append(improved)
                row_error = min(row_error, error)
                if error < best_error:
                    best, best_error = improved, error
            previous = row
            if not math.isfinite(row_error) or row_error > breaktol * best_error:
                break
            if best_error <= max(rtol * float(np.max(np.abs(best))), atol):
                break
        return (float(best) if best.ndim == 0 else best), best_error


def _add_tails(grid: tuple[int, ...]) -> tuple[int, ...]:
    """Two more points for the bound estimator: one on each side, or two past the end of a one-sided grid."""
    lo, hi = min(grid), max(grid)
    if lo < 0 < hi:  # central grid
        return (lo - 1, *grid, hi + 1)
    if lo >= 0:  # forward grid
        return (*grid, hi + 1, hi + 2)
    return (lo - 2, lo - 1, *grid)  # backward grid


def _error_powers(grid: tuple[int, ...], coefs: tuple[Fraction, ...], q: int, count: int = 12) -> list[int]:
    """Powers of ``h`` in the truncation error: ``m - q`` for each moment ``sum c g**m`` (m >= p) that is non-zero."""
    powers = []
    m = len(grid)
    while len(powers) < count and m < len(grid) + 4 * count:
        if sum(c * Fraction(g) ** m for c, g in zip(coefs, grid)) != 0:
            powers.append(m - q)
        m += 1
    return powers


def _central_grid(p: int) -> tuple[int, ...]:
    half = p // 2
    if p % 2:
        return tuple(range(-half, half + 1))
    return tuple([*range(-half, 0), *range(1, half + 1)])


def _check_orders(name: str, p: int, q: int) -> None:
    if q < 1:
        raise ValueError(f"{name}({p}, {q}): the order q of the derivative is at least 1")
    if p <= q:
        raise ValueError(f"{name}({p}, {q}): a {q}-th derivative needs more than {q} points")


def central_fdm(p: int, q: int, *, adapt: int = 1, max_range: float = math.inf, **options) -> FiniteDifferenceMethod:
    """A ``p``-point central method for the ``q``-th derivative with an adaptive step.

    ``adapt`` is how many levels of bound estimators choose the step (0: a fixed default step);
    ``max_range`` bounds how far from ``x`` the method evaluates ``f``; ``condition`` (10) and
    ``factor`` (1) tune the default step and the round-off term; ``richardson=True`` makes
    ``m(f, x)`` extrapolate.

    >>> import math
    >>> from chainrules.testing import central_fdm
    >>> m = central_fdm(5, 1)
    >>> abs(m(math.sin, 1.0) - math.cos(1.0)) < 1e-12
    True
    >>> [round(float(c), 4) for c in m.coefs]
    [0.0833, -0.6667, 0.0, 0.6667, -0.0833]
    """
    _check_orders("central_fdm", p, q)
    return FiniteDifferenceMethod(_central_grid(p), q, adapt=adapt, max_range=max_range, **options)


def forward_fdm(p: int, q: int, *, adapt: int = 1, max_range: float = math.inf, **options) -> FiniteDifferenceMethod:
    """A ``p``-point forward method (grid ``0..p-1``), for functions defined only to the right of ``x``.

    >>> import math
    >>> from chainrules.testing import forward_fdm
    >>> abs(forward_fdm(6, 1)(math.sqrt, 0.25) - 1.0) < 1e-8
    True
    """
    _check_orders("forward_fdm", p, q)
    return FiniteDifferenceMethod(tuple(range(p)), q, adapt=adapt, max_range=max_range, **options)


def backward_fdm(p: int, q: int, *, adapt: int = 1, max_range: float = math.inf, **options) -> FiniteDifferenceMethod:
    """A ``p``-point backward method (grid ``1-p..0``), for functions defined only to the left of ``x``.

    >>> import math
    >>> from chainrules.testing import backward_fdm
    >>> abs(backward_fdm(6, 1)(lambda x: math.sqrt(-x), -0.25) + 1.0) < 1e-8
    True
    """
    _check_orders("backward_fdm", p, q)
    return FiniteDifferenceMethod(tuple(range(1 - p, 1)), q, adapt=adapt, max_range=max_range, **options)


def default_fdm() -> FiniteDifferenceMethod:
    """The method the testers use: ``central_fdm(5, 1, max_range=1e-2)`` (ChainRulesTestUtils' default).

    The range limit keeps evaluations within 0.01 of the point (times the direction's size),
    inside the domain of functions like ``log`` and ``sqrt`` near their boundary.
    """
    return _DEFAULT


_DEFAULT = central_fdm(5, 1, max_range=1e-2)


# ----- directional derivatives of structured functions --------------------------------------


def roundoff_eps(*values) -> float:
    """The machine epsilon of the least precise floating-point value inside ``values`` (float64's if none)."""
    eps = _EPS64
    stack = list(values)
    while stack:
        v = unthunk(stack.pop())
        dtype = getattr(v, "dtype", None)
        if isinstance(dtype, np.dtype) and dtype.kind in "fc":
            eps = max(eps, float(np.finfo(dtype).eps))
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, Tangent):
            stack.extend(val for _, val in v.items())
    return eps


def _along(f: Callable, x_layout: Layout, x_vec: np.ndarray, direction: np.ndarray, y_layout: Layout):
    """``eps -> vec(f(x + eps * direction))``, checking that the output keeps its structure."""

    def g(e: float) -> np.ndarray:
        y = f(x_layout.primal(x_vec + e * direction, 0))
        try:
            return values_like(y_layout, y)
        except ValueError as exc:
            raise ValueError(
                f"finite differences: the output changed structure under a perturbation of size {e:.3g} ({exc})"
            ) from None

    return g


def _prepare(f, x, perturb_ints: bool):
    x_layout = layout(x, perturb_ints)
    x_vec = np.empty(x_layout.size)
    x_layout.values(x_vec, 0)
    y = f(x_layout.primal(x_vec, 0))
    return x_layout, x_vec, y, layout(y)


def _directional(fdm, f, x_layout, x_vec, direction, y, y_layout) -> np.ndarray:
    if y_layout.size == 0 or not np.any(direction):
        return np.zeros(y_layout.size)
    g = _along(f, x_layout, x_vec, direction, y_layout)
    estimate = fdm(g, 0.0, eps=roundoff_eps(x_layout.primal(x_vec, 0), y))
    return np.atleast_1d(np.asarray(estimate, dtype=float))


def fd_jvp(f: Callable, x, dx, fdm: FiniteDifferenceMethod | None = None, *, perturb_ints: bool = False):
    """The tangent of ``f(x)`` along the tangent ``dx`` of ``x``, by finite differences.

    ``x`` is any value ``to_vec`` flattens; ``dx`` a tangent of it (natural, ``Tangent[P]``, a
    plain tuple/dict of tangents, or a zero). The result is a tangent of ``f(x)``: a float, an
    array of the output's dtype, or ``Tangent[P]`` for a structure. For several arguments pass
    a tuple: ``fd_jvp(lambda a: f(*a), (x1, x2), (dx1, dx2))``.

    >>> import math
    >>> from chainrules.testing import fd_jvp
    >>> round(fd_jvp(math.sin, 0.0, 2.0), 9)
    2.0
    >>> round(fd_jvp(lambda a: a[0] * a[1], (2.0, 3.0), (1.0, 0.0)), 9)
    3.0
    """
    fdm = fdm or _DEFAULT
    x_layout, x_vec, y, y_layout = _prepare(f, x, perturb_ints)
    direction = np.zeros(x_layout.size)
    x_layout.pack(dx, direction, 0, "dx")
    return y_layout.tangent(_directional(fdm, f, x_layout, x_vec, direction, y, y_layout), 0)


def fd_jacobian(f: Callable, x, fdm: FiniteDifferenceMethod | None = None, *, perturb_ints: bool = False) -> np.ndarray:
    """The Jacobian of ``vec(f(x))`` with respect to ``vec(x)`` (``to_vec`` layouts), one column per input real.

    >>> import numpy as np
    >>> from chainrules.testing import fd_jacobian
    >>> np.round(fd_jacobian(lambda v: v * v, np.array([1.0, 2.0])), 8)
    array([[2., 0.],
           [0., 4.]])
    """
    fdm = fdm or _DEFAULT
    x_layout, x_vec, y, y_layout = _prepare(f, x, perturb_ints)
    J = np.zeros((y_layout.size, x_layout.size))
    basis = np.zeros(x_layout.size)
    for j in range(x_layout.size):
        basis[j] = 1.0
        J[:, j] = _directional(fdm, f, x_layout, x_vec, basis, y, y_layout)
        basis[j] = 0.0
    return J


def fd_vjp(f: Callable, dy, x, fdm: FiniteDifferenceMethod | None = None, *, perturb_ints: bool = False):
    """The cotangent ``J^T dy`` of ``x`` for the cotangent ``dy`` of ``f(x)``, by finite differences.

    The Jacobian is built one column per real of ``x`` (each a directional derivative), so the
    cost is about ``11 * len(to_vec(x)[0])`` calls of ``f``. The result is a tangent of ``x``
    (``Tangent[P]`` for structures); integers and booleans get ``NoTangent()`` wherever they sit
    (``perturb_ints=True`` perturbs integers as reals, at every depth). Complex numbers
    count as two reals, which gives ChainRules' convention (``df/dx + i df/dy`` for real ``f``).

    >>> from chainrules.testing import fd_vjp
    >>> g = fd_vjp(lambda z: abs(z) ** 2, 1.0, 1 + 2j)
    >>> round(g.real, 8), round(g.imag, 8)
    (2.0, 4.0)
    """
    fdm = fdm or _DEFAULT
    x_layout, x_vec, y, y_layout = _prepare(f, x, perturb_ints)
    dy = unthunk(dy)
    out = np.zeros(x_layout.size)
    if not isinstance(dy, AbstractZero):
        dy_vec = np.zeros(y_layout.size)
        y_layout.pack(dy, dy_vec, 0, "dy")
        if np.any(dy_vec):
            basis = np.zeros(x_layout.size)
            for j in range(x_layout.size):
                basis[j] = 1.0
                out[j] = dy_vec @ _directional(fdm, f, x_layout, x_vec, basis, y, y_layout)
                basis[j] = 0.0
    return x_layout.tangent(out, 0)


__all__ = [
    "FiniteDifferenceMethod",
    "backward_fdm",
    "central_fdm",
    "default_fdm",
    "fd_jacobian",
    "fd_jvp",
    "fd_vjp",
    "fdm_coefficients",
    "forward_fdm",
    "roundoff_eps",
]
