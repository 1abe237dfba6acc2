"""Rules for ``scipy.spatial.distance``: ``cdist`` and ``pdist`` for the metrics ``'euclidean'``,
``'sqeuclidean'`` and ``'cityblock'``, ``squareform``, and the distances ``euclidean``,
``sqeuclidean`` and ``cityblock`` of two vectors.

With ``r = u - v`` and weights ``w`` (1 when not given), the three distances and their partials in
``u`` (those in ``v`` are their negatives) are

- ``sqeuclidean = sum(w r²)``: ``2 w r``; in ``w``, ``r²``;
- ``euclidean = sqrt(sum(w r²))``: ``w r / d``; in ``w``, ``r² / (2 d)``;
- ``cityblock = sum(w |r|)``: ``w sign(r)``; in ``w``, ``|r|``.

At coincident points (``d = 0``) the euclidean distance has no derivative: the rules give the
subgradient 0 there, as ``np.linalg.norm``'s rule does at a zero vector (ChainRules' convention
for norms), and ``sign(0) = 0`` for the cityblock distance, as for the 1-norm.

``cdist`` differentiates both point sets without forming the ``m × n × k`` differences for the
(squared) euclidean metric: the pullback of ``D[i, j] = |a_i - b_j|²`` for the cotangent ``G`` is
``2 (rowsum(G) a - G B)`` in ``A`` and ``2 (colsum(G) b - Gᵀ A)`` in ``B``. ``pdist`` is
``cdist(X, X)`` read above the diagonal, and its pullback that of ``cdist`` for the symmetric
matrix ``squareform`` makes of the cotangent. ``squareform`` copies entries, so it is linear. A
metric other than the three, or a callable metric, is refused with ``NoRuleError`` (naming it);
``cdist``'s ``w`` keyword is taken as constant weights. The rules also run on an engine's dual
numbers (``cr.hessian``: forward over reverse), the primal through the forward rule.

>>> import numpy as np, chainrules as cr
>>> from scipy.spatial.distance import cdist
>>> A, B = np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[3.0, 4.0]])
>>> y, back = cr.rrule(cdist, A, B)
>>> y
array([[5.        ],
       [3.60555128]])
>>> cr.unthunk(back(np.array([[1.0], [0.0]]))[1])  # (a_0 - b_0) / |a_0 - b_0| (a thunk: B may need none)
array([[-0.6, -0.8],
       [ 0. ,  0. ]])
"""

from __future__ import annotations

import numpy as np
import scipy.spatial.distance as ssd

from ...core import (
    NoRuleError,
    Thunk,
    callable_name,
    carries_batch,
    frule,
    rrule,
    unbroadcast,
    unbroadcast_batch,
    unthunk,
    user_location,
)
from ._lapack import NO, ZERO, as_array, is_active, is_batched, is_zero, plain, projector, through_rules

_METRICS = ("euclidean", "sqeuclidean", "cityblock")
_ALIASES = getattr(ssd, "_METRIC_ALIAS", {})  # SciPy's spellings of a metric ('sqe', 'cblock', ...)


def _metric(f, args: tuple, metric) -> str:
    """The canonical name of a metric this module differentiates; any other is refused."""
    if isinstance(metric, str):
        info = _ALIASES.get(metric.lower())
        name = info.canonical_name if info is not None else metric.lower()
        if name in _METRICS:
            return name
        reason = f"metric {metric!r}: the rules differentiate the metrics {', '.join(map(repr, _METRICS))} only"
    else:
        reason = f"the callable metric {callable_name(metric)}: the rules differentiate named metrics only"
    raise NoRuleError(f, args, location=user_location(), reason=reason)


def _options(f, args: tuple, first: int, kwargs: dict) -> tuple[str, object, dict]:
    """``(metric, w, kwargs)`` of a call of ``cdist`` (``first = 2``) or ``pdist`` (``first = 1``)."""
    if len(args) > first + 1:
        raise TypeError(f"{callable_name(f)} takes the metric as its only further positional argument")
    metric = args[first] if len(args) > first else kwargs.get("metric", "euclidean")
    name = _metric(f, args, metric)
    extra = set(kwargs) - {"metric", "w"}
    if extra:  # ``out`` (written into) and the options of other metrics
        reason = f"the keywords {', '.join(sorted(extra))}: the rules take the metric and w only"
        raise NoRuleError(f, args, location=user_location(), reason=reason)
    w = kwargs.get("w")
    return name, (1.0 if w is None else np.asarray(w, dtype=np.float64)), kwargs


def _float(x):
    """``x`` in float64, as SciPy computes distances between point sets (dual numbers pass)."""
    x = as_array(x)
    return x if is_active(x) or x.dtype == np.float64 else x.astype(np.float64)


def _safe_divide(x, y):
    """``x / y``, and 0 where ``y`` is 0: the subgradient at coincident points."""
    zero = y == 0
    return np.where(zero, 0.0, x / np.where(zero, 1.0, y))


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _row(x):
    return np.expand_dims(x, -1)


# ----- cdist ------------------------------------------------------------------------------------


def _cdist(XA, XB, metric, w):
    if is_active(XA, XB):
        return through_rules(ssd.cdist, XA, XB, metric=metric, **({} if np.ndim(w) == 0 else {"w": w}))
    return ssd.cdist(XA, XB, metric=metric, **({} if np.ndim(w) == 0 else {"w": w}))


def _cdist_weights(metric, dy, y):
    """``G`` with the pullback ``w (rowsum(G) a - G B)`` (and its mirror) for the (squared)
    euclidean metric."""
    return 2 * dy if metric == "sqeuclidean" else _safe_divide(dy, y)


@rrule.register(ssd.cdist, batched=True)
def rrule_cdist(XA, XB, *args, **kwargs):
    metric, w, kwargs = _options(ssd.cdist, (XA, XB, *args), 2, kwargs)
    A, B = _float(XA), _float(XB)
    y = _cdist(A, B, metric, w)
    project_a, project_b = projector(XA), projector(XB)

    def cdist_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO, ZERO, ZERO, *(NO,) * len(args))
        batched = carries_batch(y, dy)
        dy = plain(dy)
        finish_a = project_a.batch if batched else project_a
        finish_b = project_b.batch if batched else project_b
        if metric == "cityblock":
            # d/da_i sum_j G_ij sum_k w_k |a_ik - b_jk| = w sum_j G_ij sign(a_i - b_j)
            signs = np.sign(A[:, None, :] - B[None, :, :])

            def da():
                return finish_a(w * np.sum(_row(dy) * signs, axis=-2))

            def db():
                return finish_b(-w * np.sum(_row(dy) * signs, axis=-3))

        else:
            G = _cdist_weights(metric, dy, y)

            def da():
                return finish_a(w * (_row(np.sum(G, axis=-1)) * A - np.matmul(G, B)))

            def db():
                return finish_b(w * (_row(np.sum(G, axis=-2)) * B - np.matmul(_mT(G), A)))

        return (NO, Thunk(da), Thunk(db), *(NO,) * len(args))

    return y, cdist_pullback


@frule.register(ssd.cdist, batched=True)
def frule_cdist(tangents, XA, XB, *args, **kwargs):
    metric, w, kwargs = _options(ssd.cdist, (XA, XB, *args), 2, kwargs)
    A, B = _float(XA), _float(XB)
    y = _cdist(A, B, metric, w)
    dA, dB = (plain(unthunk(t)) for t in tangents[1:3])
    if is_zero(dA) and is_zero(dB):
        return y, ZERO
    if metric == "cityblock":
        signs = w * np.sign(A[:, None, :] - B[None, :, :])  # (m, n, k)
        dy = 0.0
        if not is_zero(dA):
            dy = dy + np.sum(signs * np.expand_dims(dA, -2), axis=-1)
        if not is_zero(dB):
            dy = dy - np.sum(signs * np.expand_dims(dB, -3), axis=-1)
        return y, dy
    # d|a_i - b_j|² = 2 (a_i·da_i - da_i·b_j - a_i·db_j + b_j·db_j), weighted by w
    half = 0.0
    if not is_zero(dA):
        half = half + _row(np.sum(A * w * dA, axis=-1)) - np.matmul(dA, _mT(B * w))
    if not is_zero(dB):
        half = half + np.expand_dims(np.sum(B * w * dB, axis=-1), -2) - np.matmul(A * w, _mT(dB))
    return y, 2 * half if metric == "sqeuclidean" else _safe_divide(half, y)


# ----- pdist -----------------------------------------------------------------------------------


def _pairs(n: int):
    """The rows and columns of the pairs ``i < j`` in ``pdist``'s order."""
    return np.triu_indices(n, 1)


def _points(length: int) -> int:
    """The number of points ``n`` with ``n (n - 1) / 2 = length`` pairs."""
    n = int(round((1 + np.sqrt(1 + 8 * length)) / 2))
    if n * (n - 1) // 2 != length:
        raise ValueError(f"a condensed distance vector of length {length} is not n (n - 1) / 2 for any n")
    return n


def _pair_index(n: int):
    """``(index, off_diagonal)``: ``M = where(off_diagonal, v[..., index], 0)`` is the symmetric
    matrix of the condensed vector ``v`` (a gather, so that it also builds dual numbers)."""
    index = np.zeros((n, n), dtype=np.intp)
    i, j = _pairs(n)
    index[i, j] = index[j, i] = np.arange(i.size)
    return index, ~np.eye(n, dtype=bool)


def _to_matrix(v, n: int):
    index, off_diagonal = _pair_index(n)
    if np.shape(v)[-1] == 0:  # (no pairs to gather from: one point, or none)
        return np.zeros(np.shape(v)[:-1] + (n, n), dtype=as_array(v).dtype)
    return np.where(off_diagonal, v[..., index], 0)


def _pdist(X, metric, w):
    if is_active(X):
        return through_rules(ssd.pdist, X, metric=metric, **({} if np.ndim(w) == 0 else {"w": w}))
    return ssd.pdist(X, metric=metric, **({} if np.ndim(w) == 0 else {"w": w}))


@rrule.register(ssd.pdist, batched=True)
def rrule_pdist(X, *args, **kwargs):
    metric, w, kwargs = _options(ssd.pdist, (X, *args), 1, kwargs)
    P = _float(X)
    n = np.shape(P)[0]
    y = _pdist(P, metric, w)
    project = projector(X)

    def pdist_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO, ZERO, *(NO,) * len(args))
        finish = project.batch if carries_batch(y, dy) else project
        # the pullback of cdist(X, X) for the symmetric cotangent, each pair once
        G = _to_matrix(plain(dy), n)
        if metric == "cityblock":
            signs = np.sign(P[:, None, :] - P[None, :, :])
            return (NO, finish(w * np.sum(_row(G) * signs, axis=-2)), *(NO,) * len(args))
        G = _cdist_weights(metric, G, _to_matrix(y, n))
        return (NO, finish(w * (_row(np.sum(G, axis=-1)) * P - np.matmul(G, P))), *(NO,) * len(args))

    return y, pdist_pullback


@frule.register(ssd.pdist, batched=True)
def frule_pdist(tangents, X, *args, **kwargs):
    metric, w, kwargs = _options(ssd.pdist, (X, *args), 1, kwargs)
    P = _float(X)
    y = _pdist(P, metric, w)
    dX = plain(unthunk(tangents[1]))
    if is_zero(dX):
        return y, ZERO
    i, j = _pairs(np.shape(P)[0])
    r, dr = P[i] - P[j], dX[..., i, :] - dX[..., j, :]  # each pair's difference, (pairs, k)
    if metric == "cityblock":
        return y, np.sum(w * np.sign(r) * dr, axis=-1)
    half = np.sum(w * r * dr, axis=-1)
    return y, 2 * half if metric == "sqeuclidean" else _safe_divide(half, y)


# ----- squareform ------------------------------------------------------------------------------


def _squareform_options(args: tuple, kwargs: dict) -> int:
    """How many positional arguments after ``X`` (``force``, ``checks``: no cotangents)."""
    if len(args) > 2 or set(kwargs) - {"force", "checks"}:
        raise TypeError("scipy.spatial.distance.squareform takes X, force and checks")
    return len(args)


def _squareform(X, matrix: bool):
    """SciPy's squareform of ``X`` (``matrix``: ``X`` is a square matrix, read above its
    diagonal, as SciPy reads it without checks), or of a batch of them along a leading axis."""
    if matrix:
        i, j = _pairs(np.shape(X)[-1])
        return X[..., i, j]
    return _to_matrix(X, _points(np.shape(X)[-1]))


def _squareform_pullback(dy, X, matrix: bool):
    """The cotangent of ``X`` from that of ``squareform(X)``: its transpose."""
    if matrix:  # the upper triangle of X gets the vector's entries, the rest (unread) 0
        n = np.shape(X)[-1]
        index, _ = _pair_index(n)
        if np.shape(dy)[-1] == 0:
            return np.zeros(np.shape(dy)[:-1] + (n, n), dtype=as_array(dy).dtype)
        return np.where(np.triu(np.ones((n, n), dtype=bool), 1), dy[..., index], 0)
    return _squareform(dy + _mT(dy), True)  # each entry appears above and below the diagonal


@rrule.register(ssd.squareform, batched=True)
def rrule_squareform(X, *args, **kwargs):
    n_rest = _squareform_options(args, kwargs)
    matrix = np.ndim(X) == 2
    y = through_rules(ssd.squareform, X, *args, **kwargs) if is_active(X) else ssd.squareform(X, *args, **kwargs)
    project = projector(X)

    def squareform_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO, ZERO, *(NO,) * n_rest)
        finish = project.batch if carries_batch(y, dy) else project
        return (NO, finish(_squareform_pullback(plain(dy), X, matrix)), *(NO,) * n_rest)

    return y, squareform_pullback


@frule.register(ssd.squareform, batched=True)
def frule_squareform(tangents, X, *args, **kwargs):
    _squareform_options(args, kwargs)
    matrix = np.ndim(X) == 2
    y = through_rules(ssd.squareform, X, *args, **kwargs) if is_active(X) else ssd.squareform(X, *args, **kwargs)
    dX = plain(unthunk(tangents[1]))
    if is_zero(dX):
        return y, ZERO
    return y, _squareform(dX, matrix)


# ----- distances between two vectors -----------------------------------------------------------


def _vector_args(f, u, v, rest: tuple, kwargs: dict):
    """``(u, v, w, n_rest)`` of ``f(u, v, w=None)``; ``n_rest``: positional arguments after ``v``."""
    if len(rest) > 1 or set(kwargs) - {"w"}:
        raise TypeError(f"{callable_name(f)} takes u, v and w")
    w = rest[0] if rest else kwargs.get("w")
    return as_array(u), as_array(v), (None if w is None else as_array(w)), len(rest)


def _distance_rules(f, name: str):
    def value(u, v, w):
        if is_active(u, v, w):
            return through_rules(f, u, v, w)
        return f(u, v, w)

    def partials(u, v, w, y):
        """``(g_u, g_w)``: the partials of the distance in ``u`` (in ``v``: ``-g_u``) and in ``w``."""
        r = u - v
        weights = 1.0 if w is None else w
        if w is not None and np.shape(w) != np.shape(r):  # SciPy broadcasts u, v and w together
            r = r + np.zeros(np.broadcast_shapes(np.shape(r), np.shape(w)))
        if name == "sqeuclidean":
            return 2 * weights * r, r * r
        if name == "cityblock":
            return weights * np.sign(r), np.abs(r)
        return _safe_divide(weights * r, y), _safe_divide(0.5 * r * r, y)  # 0 at coincident points

    def rrule_distance(u, v, *rest, **kwargs):
        u, v, w, n_rest = _vector_args(f, u, v, rest, kwargs)
        y = value(u, v, w)
        g_u, g_w = partials(u, v, w, y)
        project_u, project_v, project_w = projector(u), projector(v), projector(w)

        def distance_pullback(dy):
            dy = unthunk(dy)
            if is_zero(dy):
                return (NO, ZERO, ZERO, *(ZERO,) * n_rest)
            if carries_batch(y, dy):
                dy = _row(plain(dy))
                d_u, d_v, d_w = (
                    project_u.batch(unbroadcast_batch(u, dy * g_u)),
                    project_v.batch(unbroadcast_batch(v, -dy * g_u)),
                    project_w.batch(unbroadcast_batch(w, dy * g_w)),
                )
            else:
                d_u, d_v, d_w = (
                    project_u(unbroadcast(u, dy * g_u)),
                    project_v(unbroadcast(v, -dy * g_u)),
                    project_w(unbroadcast(w, dy * g_w)),
                )
            return (NO, d_u, d_v, *(d_w if w is not None else NO,)[:n_rest])

        return y, distance_pullback

    def frule_distance(tangents, u, v, *rest, **kwargs):
        u, v, w, n_rest = _vector_args(f, u, v, rest, kwargs)
        y = value(u, v, w)
        du, dv = (plain(unthunk(t)) for t in tangents[1:3])
        dw = plain(unthunk(tangents[3])) if n_rest else ZERO
        if is_zero(du) and is_zero(dv) and (w is None or is_zero(dw)):
            return y, ZERO
        g_u, g_w = partials(u, v, w, y)
        dy = 0.0
        if not is_zero(du):
            dy = dy + np.sum(g_u * du, axis=-1)
        if not is_zero(dv):
            dy = dy - np.sum(g_u * dv, axis=-1)
        if w is not None and not is_zero(dw):
            dy = dy + np.sum(g_w * dw, axis=-1)
        if not is_batched(du, u) and not is_batched(dv, v) and not is_batched(dw, w):
            dy = _like_output(dy, y)
        return y, dy

    rrule_distance.__qualname__ = f"rrule_{name}"
    frule_distance.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(rrule_distance)
    frule.register(f, batched=True)(frule_distance)


def _like_output(dy, y):
    """A tangent of the distance ``y`` as SciPy returns it: a Python ``float`` or a NumPy scalar."""
    if is_active(dy, y):
        return dy
    return (
        float(dy) if isinstance(y, float) and not isinstance(y, np.generic) else np.asarray(dy, np.result_type(y))[()]
    )


for _f in (ssd.euclidean, ssd.sqeuclidean, ssd.cityblock):
    _distance_rules(_f, _f.__name__)
