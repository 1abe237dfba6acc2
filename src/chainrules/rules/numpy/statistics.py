"""Rules for NumPy's covariance and correlation matrices: ``np.cov`` and ``np.corrcoef``.

With ``X`` the variables as rows (``m`` and ``y`` stacked, transposed for ``rowvar=False``), ``w``
the observation weights (``fweights * aweights``, ones without them) and ``f`` NumPy's
normalisation, ``C = Xc diag(w) Xcᵀ / f`` where ``Xc = X - (X w / sum w) 1ᵀ``. ``aweights`` are
differentiated too (importance weights, responsibilities): with the centring weighted by ``w``,
``∂C/∂w_j = xc_j xc_jᵀ / f - C ∂f/∂w_j / f`` (the mean's term vanishes, as ``Xc w = 0``).
``fweights`` (integer counts) and ``ddof`` are settings. Real arrays only: a complex covariance
is refused, not given a wrong derivative. Everything is written with NumPy functions, so the
rules also run on the dual numbers of a Hessian.
"""

from __future__ import annotations

import numpy as np

from ...core import AbstractZero, NoTangent, ZeroTangent, frule, rrule, unthunk
from ...core.errors import option_refused
from ._arrays import array_or_active, cotangent_array, to_input

_NO = NoTangent()
_ZERO = ZeroTangent()

_COV = ("y", "rowvar", "bias", "ddof", "fweights", "aweights")
_AWEIGHTS = _COV.index("aweights")  # its place among the arguments after m


class _Covariance:
    """How ``np.cov(m, *args, **kwargs)`` builds its matrix: the stacked rows, the weights and the
    normalisation, and the maps between the inputs' tangents and the rows'."""

    def __init__(self, m, args, kwargs):
        o = {"y": None, "rowvar": True, "bias": False, "ddof": None, "fweights": None, "aweights": None}
        o.update(zip(_COV, args))
        o.update(kwargs)
        if np.iscomplexobj(m) or np.iscomplexobj(o["y"]):
            raise option_refused(np.cov, (m,), "a complex array: the rules of np.cov and np.corrcoef take real ones")
        self.m, self.y, self.rowvar = m, o["y"], o["rowvar"]
        ddof = o["ddof"] if o["ddof"] is not None else (0 if o["bias"] else 1)
        X = self.rows(m, self.y)
        n = np.shape(X)[1]
        fw, aw = o["fweights"], o["aweights"]
        self.counts = np.ones(n) if fw is None else np.asarray(fw, dtype=float)
        w = None if fw is None else self.counts
        if aw is not None:
            aw = array_or_active(aw)
            w = aw if w is None else w * aw
        self.w = np.ones(n) if w is None else w
        w_sum = np.sum(self.w)
        if w is None:
            self.fact = n - ddof
        elif ddof == 0:
            self.fact = w_sum
        elif aw is None:
            self.fact = w_sum - ddof
        else:
            self.fact = w_sum - ddof * np.sum(w * aw) / w_sum
        self.aw, self.ddof, self.w_sum = aw, ddof, w_sum
        self.Xc = self.center(X)

    def _as_rows(self, v, is_m):
        rows = np.atleast_2d(v)
        if not self.rowvar and (np.ndim(v) != 1 if is_m else np.shape(rows)[0] != 1):
            rows = rows.T
        return rows

    def rows(self, m, y):
        """The variables as rows, ``m``'s then ``y``'s (zero tangents as zeros)."""
        parts = [self._as_rows(m, True)]
        if y is not None:
            parts.append(self._as_rows(y, False))
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def center(self, X):
        return X - (X @ self.w / self.w_sum)[:, None]

    def inputs(self, dX):
        """The cotangents of ``m`` and ``y`` from that of the stacked rows."""
        k = np.shape(self._as_rows(self.m, True))[0]
        results = []
        for v, part, is_m in ((self.m, dX[:k], True), (self.y, dX[k:], False)):
            if v is None:
                continue
            if not self.rowvar and (np.ndim(v) != 1 if is_m else np.shape(np.atleast_2d(v))[0] != 1):
                part = part.T
            results.append(to_input(v, np.reshape(part, np.shape(v))))
        return results

    def pullback(self, dC):
        """The cotangent of the stacked rows: ``(C̄ + C̄ᵀ) Xc diag(w) / f``, then centred (the adjoint of centring)."""
        k = np.shape(self.Xc)[0]
        dC = np.reshape(dC, (k, k))
        dXc = (dC + dC.T) @ (self.Xc * self.w) / self.fact
        return dXc - (dXc.sum(axis=1) / self.w_sum)[:, None] * self.w

    def pushforward(self, dX):
        dXc = self.center(dX)
        half = (dXc * self.w) @ self.Xc.T / self.fact
        return half + half.T

    def _fact_slope(self):
        """``∂f/∂aweights``, with ``w = fweights aw``: ``f = sum w`` (``ddof`` 0), else
        ``sum w - ddof sum(w aw) / sum w``."""
        if self.ddof == 0:
            return self.counts
        W = self.w_sum
        return self.counts - self.ddof * (2 * self.w / W - np.sum(self.w * self.aw) * self.counts / W**2)

    def weights_pullback(self, dC, C):
        """The cotangent of ``aweights``: ``fweights_j xc_jᵀ C̄ xc_j / f - <C̄, C> ∂f/∂aw_j / f``."""
        k = np.shape(self.Xc)[0]
        dC, C = np.reshape(dC, (k, k)), np.reshape(C, (k, k))
        spread = np.sum((dC @ self.Xc) * self.Xc, axis=0)
        return (self.counts * spread - np.sum(dC * C) * self._fact_slope()) / self.fact

    def weights_pushforward(self, daw, C):
        """The tangent of ``C`` along a tangent ``daw`` of ``aweights``."""
        k = np.shape(self.Xc)[0]
        dC = (self.Xc * (self.counts * daw)) @ self.Xc.T - np.reshape(C, (k, k)) * np.sum(self._fact_slope() * daw)
        return dC / self.fact


def _cov_tangents(cov, tangents):
    """The tangent of the stacked rows, or zero when neither ``m`` nor ``y`` has one."""
    dm = unthunk(tangents[1])
    dy = unthunk(tangents[2]) if len(tangents) > 2 and cov.y is not None else _ZERO
    if isinstance(dm, AbstractZero) and isinstance(dy, AbstractZero):
        return _ZERO
    dm = np.zeros(np.shape(cov.m)) if isinstance(dm, AbstractZero) else dm
    if cov.y is None:
        return cov.rows(dm, None)
    return cov.rows(dm, np.zeros(np.shape(cov.y)) if isinstance(dy, AbstractZero) else dy)


def _y_keyword(args, kwargs):
    """Whether ``y`` came by keyword (it is then not differentiated, as for every rule)."""
    return not args and kwargs.get("y") is not None


@rrule.register(np.cov)
def rrule_cov(m, *args, **kwargs):
    C = np.cov(m, *args, **kwargs)
    cov = _Covariance(m, args, kwargs)
    rest = len(args)

    def cov_pullback(dC):
        dC = cotangent_array(C, dC)
        if isinstance(dC, AbstractZero):
            return (_NO, dC, *(_NO for _ in range(rest)))
        grads = cov.inputs(cov.pullback(dC))
        cotangents = [_NO] * rest
        if rest and args[0] is not None:
            cotangents[0] = grads[1]
        if rest > _AWEIGHTS and cov.aw is not None:  # (by keyword, aweights are a constant)
            cotangents[_AWEIGHTS] = to_input(args[_AWEIGHTS], cov.weights_pullback(dC, C))
        return (_NO, grads[0], *cotangents)

    return C, cov_pullback


@frule.register(np.cov)
def frule_cov(tangents, m, *args, **kwargs):
    C = np.cov(m, *args, **kwargs)
    cov = _Covariance(m, args, kwargs)
    dX = _cov_tangents(cov, tangents if not _y_keyword(args, kwargs) else tangents[:2])
    dC = _ZERO if isinstance(dX, AbstractZero) else cov.pushforward(dX)
    daw = unthunk(tangents[2 + _AWEIGHTS]) if len(tangents) > 2 + _AWEIGHTS and cov.aw is not None else _ZERO
    if not isinstance(daw, AbstractZero):
        dC = cov.weights_pushforward(daw, C) if isinstance(dC, AbstractZero) else dC + cov.weights_pushforward(daw, C)
    return C, dC if isinstance(dC, AbstractZero) else np.reshape(dC, np.shape(C))


def _correlation(C):
    """``R = C / (s sᵀ)`` with ``s = sqrt(diag C)``, as NumPy computes it (clipped to [-1, 1])."""
    s = np.sqrt(np.diagonal(C))
    return np.clip(C / s[:, None] / s[None, :], -1, 1), s


@rrule.register(np.corrcoef)
def rrule_corrcoef(x, *args, **kwargs):
    """``R_ij = C_ij / (s_i s_j)``: ``C̄ = R̄ / (s sᵀ)`` and, through ``s``, ``C̄_kk`` gains
    ``-(sum_j R̄_kj R_kj + sum_i R̄_ik R_ik) / (2 C_kk)``; then ``np.cov``'s pullback."""
    R = np.corrcoef(x, *args, **kwargs)
    C, cov_pullback = rrule_cov(x, *args[:2], **{k: v for k, v in kwargs.items() if k in ("y", "rowvar")})
    rest = len(args)

    def corrcoef_pullback(dR):
        dR = cotangent_array(R, dR)
        if isinstance(dR, AbstractZero) or np.ndim(C) == 0:  # one variable: R = 1 whatever x is
            return (_NO, _ZERO, *(_ZERO if i == 0 and args[0] is not None else _NO for i in range(rest)))
        Rc, s = _correlation(C)
        dC = dR / s[:, None] / s[None, :]
        weighted = dR * Rc
        dC = dC - np.diag((weighted.sum(axis=1) + weighted.sum(axis=0)) / (2 * np.diagonal(C)))
        return cov_pullback(dC)

    return R, corrcoef_pullback


@frule.register(np.corrcoef)
def frule_corrcoef(tangents, x, *args, **kwargs):
    R = np.corrcoef(x, *args, **kwargs)
    cov_kwargs = {k: v for k, v in kwargs.items() if k in ("y", "rowvar")}
    C, dC = frule_cov(tangents[:3], x, *args[:2], **cov_kwargs)
    if isinstance(dC, AbstractZero) or np.ndim(C) == 0:
        return R, _ZERO
    Rc, s = _correlation(C)
    relative = np.diagonal(dC) / (2 * np.diagonal(C))  # ds_i / s_i
    return R, dC / s[:, None] / s[None, :] - Rc * (relative[:, None] + relative[None, :])
