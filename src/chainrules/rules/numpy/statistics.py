"""Rules for NumPy's covariance and correlation matrices, ``np.cov`` and ``np.corrcoef``, and for
``np.histogram`` and ``np.histogram2d`` (below).

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

from ...core import AbstractZero, ActiveValue, NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from ...core.active import stood_for
from ...core.errors import option_refused
from ._arrays import (
    array_or_active,
    cotangent_array,
    scatter_add,
    sequence_cotangent,
    sequence_items,
    tangent_array,
    to_input,
)
from ._util import match_output
from .reductions import _diff_adjoint

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


# ----- histogram ----------------------------------------------------------------------------------
#
# np.histogram(a, bins, range, density, weights) sums the weights of the samples in each bin, bin k
# holding edges[k] <= a < edges[k+1] (the last bin its right edge too): n is linear in the weights,
# and piecewise constant in the samples and the edges (zero derivative there, as np.digitize's). The
# edges are `bins` itself when it is an array, else linspace(lo, hi, m + 1) with (lo, hi) the range
# given or the samples' smallest and largest: linear in lo and hi, whose derivatives are the range's
# or the extreme samples'. With density=True, h = n / db / S (db = diff(edges), S = sum(n)), so
#     dh = dn / (db S) - h d(db) / db - h dS / S.
_HISTOGRAM = ("bins", "range", "density", "weights")


class _Edges:
    """The edges of one axis of a histogram, from the samples ``a`` on it: each sample's bin, and
    where the edges come from (``bins``, ``range`` or the extreme samples), for their derivatives."""

    def __init__(self, a, bins, range_, edges):
        self.bins, self.range = bins, range_
        edges, samples = _plain(edges), np.ravel(_plain(a))
        m = np.size(edges) - 1
        k = np.searchsorted(edges, samples, side="right") - 1
        k[samples == edges[-1]] = m - 1
        self.inside = np.flatnonzero((k >= 0) & (k < m))
        self.k = k[self.inside]
        self.t = np.linspace(0.0, 1.0, m + 1)  # each edge's place between lo and hi
        self.shape = np.shape(a)
        self.extremes = None  # the samples that give lo and hi, where they do
        if np.ndim(bins) == 0 and range_ is None and samples.size:
            self.extremes = np.array([np.argmin(samples), np.argmax(samples)])

    def tangent(self, da, dbins, drange):
        """The edges' tangent from those of the samples, ``bins`` and ``range``; None where it is zero."""
        if np.ndim(self.bins) == 1:
            return None if isinstance(dbins, AbstractZero) else tangent_array(self.bins, dbins)
        if self.range is not None:
            ends = [0.0 if isinstance(d, AbstractZero) else d for d in sequence_items(self.range, drange)]
        elif self.extremes is not None and not isinstance(da, AbstractZero):
            ends = np.ravel(da)[self.extremes]
        else:
            return None
        return ends[0] * (1.0 - self.t) + ends[1] * self.t

    def cotangents(self, dedges) -> tuple:
        """``(ā, b̄ins, r̄ange)`` from the edges' cotangent: ``ā`` an array or zero, the others arrays or None."""
        if np.ndim(self.bins) == 1:
            return _ZERO, dedges, None
        ends = np.stack([np.sum(dedges * (1.0 - self.t)), np.sum(dedges * self.t)])
        if self.range is not None:
            return _ZERO, None, ends
        if self.extremes is not None:
            size = int(np.prod(self.shape))
            return np.reshape(scatter_add((size,), self.extremes, ends), self.shape), None, None
        return _ZERO, None, None


class _Histogram:
    """``np.histogram(a, *args, **kwargs)`` as NumPy computes it (``h``, ``edges``), and what its
    derivatives need: each sample's bin, and where the edges come from."""

    def __init__(self, a, args: tuple, kwargs: dict):
        o = {"bins": 10, "range": None, "density": None, "weights": None, **dict(zip(_HISTOGRAM, args)), **kwargs}
        self.bins, self.range, self.density = o["bins"], o["range"], bool(o["density"])
        self.n, self.edges = np.histogram(a, self.bins, self.range, weights=o["weights"])
        self.h = self.n
        if self.density:  # NumPy's own steps
            self.db = np.diff(self.edges).astype(float)
            self.total = self.n.sum()
            self.h = self.n / self.db / self.total
        self.axis = _Edges(a, self.bins, self.range, self.edges)

    def tangent(self, dn, dedges):
        """``h``'s tangent from those of the sums ``n`` and of the edges (either None for zero)."""
        if not self.density:
            return dn
        terms = []
        if dn is not None:
            terms += [dn / self.db / self.total, -self.h * np.sum(dn) / self.total]
        if dedges is not None:
            terms.append(-self.h * np.diff(dedges) / self.db)
        return sum(terms[1:], terms[0]) if terms else None

    def cotangents(self, dh, dedges):
        """``(n̄, ē)``: the cotangents of the sums and of the edges from those of ``h`` and the edges."""
        if not self.density:
            return dh, dedges
        dn = ddb = None
        if dh is not None:
            dn = dh / self.db / self.total - np.sum(dh * self.h) / self.total
            ddb = -dh * self.h / self.db
            through = _diff_adjoint(ddb, -1, np.size(self.edges))  # (the edges' from their widths')
            dedges = through if dedges is None else dedges + through
        return dn, dedges


def _plain(x):
    """An engine's value as the array it stands for (bins are found on values alone)."""
    return np.asarray(stood_for(x)) if isinstance(x, ActiveValue) else np.asarray(x)


def _histogram_tangents(args: tuple, tangents) -> dict:
    """The tangents of the arguments after the samples, by name (zero for those not given by position)."""
    given = dict(zip(_HISTOGRAM, tangents))
    return {name: unthunk(given.get(name, _ZERO)) if i < len(args) else _ZERO for i, name in enumerate(_HISTOGRAM)}


@rrule.register(np.histogram)
def rrule_histogram(a, *args, **kwargs):
    """The sums are differentiated in the weights only (piecewise constant in the samples and the
    edges), the edges in ``bins`` (an array), ``range`` or, without either, the extreme samples."""
    hist = _Histogram(a, args, kwargs)
    y = (hist.h, hist.edges)
    size = int(np.prod(hist.axis.shape))

    def histogram_pullback(dy):
        dh, dedges = (None if isinstance(d, AbstractZero) else d for d in sequence_items(y, dy))
        dn, dedges = hist.cotangents(dh, dedges)
        out = dict.fromkeys(_HISTOGRAM[: len(args)], _NO)
        da = _ZERO
        if dn is not None and len(args) > 3 and args[3] is not None:  # each weight gets its bin's cotangent
            dw = scatter_add((size,), hist.axis.inside, dn[hist.axis.k], dtype=np.result_type(dn))
            out["weights"] = to_input(args[3], np.reshape(dw, hist.axis.shape))
        if dedges is not None:
            da, dbins, drange = hist.axis.cotangents(dedges)
            da = to_input(a, da)
            if dbins is not None:
                out["bins"] = to_input(args[0], dbins)
            if drange is not None and len(args) > 1:
                out["range"] = to_input(args[1], drange)
        return (_NO, da, *out.values())

    return y, histogram_pullback


@frule.register(np.histogram)
def frule_histogram(tangents, a, *args, **kwargs):
    hist = _Histogram(a, args, kwargs)
    y = (hist.h, hist.edges)
    d = _histogram_tangents(args, tangents[2:])
    dn = None
    if not isinstance(d["weights"], AbstractZero):
        dn = np.bincount(hist.axis.k, np.ravel(d["weights"])[hist.axis.inside], np.size(hist.n))
    dedges = hist.axis.tangent(unthunk(tangents[1]), d["bins"], d["range"])
    dh = hist.tangent(dn, dedges)
    if dh is None and dedges is None:
        return y, _ZERO
    return y, Tangent[tuple](*(_ZERO if d is None else match_output(v, d) for v, d in zip(y, (dh, dedges))))


# np.histogram2d(x, y, bins, range, density, weights) sums the weights of the samples in each pair
# of bins, an axis's edges found as np.histogram finds them (from its bins, its range or its extreme
# samples): the same derivatives, per axis. With density=True, h = n / (S dbx[:, None] dby[None, :]),
#     dh = dn / (S dbx dby) - h dS / S - h d(dbx) / dbx - h d(dby) / dby.


def _per_axis(bins, range_) -> tuple:
    """The bins and the range of each axis, as np.histogram2d reads them: one array of edges for
    both axes unless ``bins`` has one or two entries (a number, or one per axis)."""
    try:
        shared = len(bins) not in (1, 2)
    except TypeError:
        shared = True
    return (bins, bins) if shared else tuple(bins), (None, None) if range_ is None else tuple(range_)


class _Histogram2d:
    """``np.histogram2d(x, y, *args, **kwargs)`` as NumPy computes it (``h``, ``xedges``,
    ``yedges``), and what its derivatives need: each sample's pair of bins, and each axis's edges."""

    def __init__(self, x, y, args: tuple, kwargs: dict):
        o = {"bins": 10, "range": None, "density": None, "weights": None, **dict(zip(_HISTOGRAM, args)), **kwargs}
        self.bins, self.range, self.density = o["bins"], o["range"], bool(o["density"])
        self.n, *self.edges = np.histogram2d(x, y, self.bins, self.range, weights=o["weights"])
        self.axes = [_Edges(a, *b, e) for a, b, e in zip((x, y), zip(*_per_axis(self.bins, self.range)), self.edges)]
        self.shared = np.ndim(self.axes[0].bins) == 1 and self.axes[0].bins is self.axes[1].bins
        k = np.full((2, np.size(x)), -1)
        for row, axis in zip(k, self.axes):
            row[axis.inside] = axis.k
        self.inside = np.flatnonzero((k >= 0).all(axis=0))
        self.k = tuple(k[:, self.inside])
        self.h = self.n
        if self.density:  # NumPy's own steps
            self.db = [np.diff(e).astype(float) for e in self.edges]
            self.total = self.n.sum()
            self.h = self.n / self.db[0][:, None] / self.db[1][None, :] / self.total

    def tangent(self, dn, dedges):
        """``h``'s tangent from those of the sums and of each axis's edges (None for zero)."""
        if not self.density:
            return dn
        terms = []
        if dn is not None:
            terms += [dn / self.db[0][:, None] / self.db[1][None, :] / self.total, -self.h * np.sum(dn) / self.total]
        for i, (de, db) in enumerate(zip(dedges, self.db)):
            if de is not None:
                terms.append(-self.h * np.expand_dims(np.diff(de) / db, 1 - i))
        return sum(terms[1:], terms[0]) if terms else None

    def cotangents(self, dh, dedges):
        """``(n̄, [x̄edges, ȳedges])`` from the cotangents of ``h`` and of the edges."""
        if not self.density or dh is None:
            return dh, dedges
        dn = dh / self.db[0][:, None] / self.db[1][None, :] / self.total - np.sum(dh * self.h) / self.total
        widths = [-np.sum(dh * self.h, axis=1 - i) / db for i, db in enumerate(self.db)]  # (each axis's widths')
        through = [_diff_adjoint(w, -1, w.size + 1) for w in widths]
        return dn, [t if de is None else de + t for de, t in zip(dedges, through)]


@rrule.register(np.histogram2d)
def rrule_histogram2d(x, y, *args, **kwargs):
    """The sums are differentiated in the weights only (piecewise constant in the samples and the
    edges), each axis's edges as ``np.histogram``'s: in its bins (an array), its range or, without
    either, its extreme samples."""
    hist = _Histogram2d(x, y, args, kwargs)
    out_y = (hist.h, *hist.edges)

    def histogram2d_pullback(dy):
        dh, *dedges = (None if isinstance(d, AbstractZero) else d for d in sequence_items(out_y, dy))
        dn, dedges = hist.cotangents(dh, dedges)
        out = dict.fromkeys(_HISTOGRAM[: len(args)], _NO)
        if dn is not None and len(args) > 3 and args[3] is not None:  # each weight gets its bin's cotangent
            dw = scatter_add((np.size(x),), hist.inside, dn[hist.k], dtype=np.result_type(dn))
            out["weights"] = to_input(args[3], np.reshape(dw, np.shape(args[3])))
        samples, dbins, dranges = [_ZERO, _ZERO], [_ZERO, _ZERO], [_ZERO, _ZERO]
        for i, (axis, de) in enumerate(zip(hist.axes, dedges)):
            if de is not None:
                da, db, dr = axis.cotangents(de)
                samples[i] = to_input((x, y)[i], da)
                dbins[i] = _ZERO if db is None else to_input(axis.bins, db)
                dranges[i] = _ZERO if dr is None else to_input(axis.range, dr)
        if args and not all(isinstance(d, AbstractZero) for d in dbins):
            out["bins"] = sum(dbins[1:], dbins[0]) if hist.shared else sequence_cotangent(args[0], dbins)
        if len(args) > 1 and not all(isinstance(d, AbstractZero) for d in dranges):
            out["range"] = sequence_cotangent(args[1], dranges)
        return (_NO, *samples, *out.values())

    return out_y, histogram2d_pullback


@frule.register(np.histogram2d)
def frule_histogram2d(tangents, x, y, *args, **kwargs):
    hist = _Histogram2d(x, y, args, kwargs)
    out_y = (hist.h, *hist.edges)
    d = _histogram_tangents(args, tangents[3:])
    dn = None
    if not isinstance(d["weights"], AbstractZero):
        flat = np.ravel_multi_index(hist.k, np.shape(hist.n))
        dw = np.ravel(d["weights"])[hist.inside]
        dn = np.reshape(scatter_add((np.size(hist.n),), flat, dw, dtype=np.result_type(dw, float)), np.shape(hist.n))
    dbins, dranges = (d["bins"], d["bins"]), (_ZERO, _ZERO)
    if not (hist.shared or isinstance(d["bins"], AbstractZero)):
        dbins = sequence_items(hist.bins, d["bins"])
    if not isinstance(d["range"], AbstractZero):
        dranges = sequence_items(hist.range, d["range"])
    dedges = [axis.tangent(unthunk(da), db, dr) for axis, da, db, dr in zip(hist.axes, tangents[1:3], dbins, dranges)]
    dh = hist.tangent(dn, dedges)
    if dh is None and all(de is None for de in dedges):
        return out_y, _ZERO
    return out_y, Tangent[tuple](*(_ZERO if t is None else match_output(v, t) for v, t in zip(out_y, (dh, *dedges))))
