"""Rules for ``scipy.ndimage``'s linear filters: ``correlate``, ``convolve``, ``correlate1d``,
``convolve1d``, ``gaussian_filter``, ``gaussian_filter1d`` (any ``order``), ``uniform_filter``,
``uniform_filter1d``, ``laplace``, ``sobel``, ``prewitt`` and ``gaussian_laplace``, in every
boundary mode, real and complex; ``gaussian_gradient_magnitude``, the norm of the Gaussian
derivatives along the axes; the rank filters (``minimum_filter``, ``maximum_filter``,
``median_filter``, ``percentile_filter``, ``rank_filter``, ``minimum_filter1d``,
``maximum_filter1d``); and the interpolations, of every order 0 to 5 (``map_coordinates``,
``shift``, ``zoom``, ``affine_transform``, ``rotate``).

Each filter is a sum of chains of correlations (``gaussian_filter`` one pass along each axis,
``laplace`` a sum of passes), each pass ``y[i] = sum_k e[k] x_m[i + k - c]`` with the kernel ``e``
as ndimage applies it (complex weights conjugated by ``correlate``, reversed by ``convolve``),
``c = K // 2 + origin`` on each axis and ``x_m`` the input extended by the mode. That extension is
``np.pad`` of the input ('reflect' and 'grid-mirror' pad 'symmetric', 'mirror' pads 'reflect',
'nearest' 'edge', 'wrap' and 'grid-wrap' 'wrap', 'constant' and 'grid-constant' with ``cval``)
followed by a 'valid' correlation, so a pass's adjoint is not the same filter with a flipped
kernel: it is the 'full' convolution with the conjugated kernel, followed by the adjoint of the
padding, which sums the cotangents of the copies back onto the entries they copy (``np.pad``'s
rule's). The tangents are filtered with zeros outside (``cval`` makes a filter affine).

The weights of the four correlations are differentiated too (the output is bilinear: their
cotangent is the 'valid' correlation of the padded input with the output's), and so is ``cval``
(the filter of zeros with ``cval`` 1 is the output's derivative in it). ``sigma`` is a setting: a
differentiated one is refused (``NoDerivativeError``), as is ``output=`` (``NoRuleError``).
Every rule takes a batch of tangents or cotangents (a leading batch axis); the filters the
pullbacks run go through this module's rules when an engine's values reach them, so Hessians work.

The rank filters and the interpolations are gathers: each output is a weighted sum of a few
entries of the input (of its spline coefficients) or ``cval`` (``_Gather``), its pushforward the
same sum of the tangents, its pullback the scatter of the cotangent onto those entries (summed where
a mode's reflections read an entry twice). A rank filter's output is the entry of its window it
equals (of tied distinct entries, the first in the window's order: a subgradient). An interpolation
of order ``n`` reads ``n + 1`` samples along each axis around its position, weighted by the
B-spline of order ``n`` (order 1: ``1 - t, t`` in the cell; order 0: the nearest sample), found and
extended past the ends as ndimage does in every mode, from positions computed as it computes them
(so that its rounding ties and edges go the same way). From order 2 the samples are the spline
coefficients, ``spline_filter`` of the input (padded first in the modes 'nearest' and
'grid-constant'; ``prefilter=False``: the input itself): a linear map, separable, each axis's the
matrix of its filter of the identity (``_Prefilter``), its adjoint the transpose. The derivative in
the position is the interpolant's slope, the B-spline's derivative (order 1: piecewise constant,
the slope of the cell to the right at a grid point, where the function has a kink; order 0: zero);
the positions move with ``map_coordinates``' ``coordinates``, ``shift``'s shift,
``affine_transform``'s ``matrix`` and ``offset`` and ``rotate``'s angle (in degrees), all
differentiated. ``zoom``'s factors are refused (``NoDerivativeError``: they set the output's shape
too), as is a rank filter whose output equals no entry of its window (a NaN); the ranks,
percentiles, sizes, footprints, orders, modes, ``prefilter``, ``grid_mode`` and output shapes are
settings.

>>> import numpy as np, scipy.ndimage as ndi, chainrules as cr
>>> y, back = cr.rrule(ndi.correlate1d, np.array([1.0, 2.0, 4.0]), [1.0, 1.0], mode="nearest")
>>> y, cr.unthunk(back(np.array([1.0, 0.0, 0.0]))[1])  # y[0] reads x[0] twice, through the mode
(array([2., 3., 6.]), array([2., 0., 0.]))
"""

from __future__ import annotations

import inspect
import itertools
import math
from functools import cached_property

import numpy as np
import scipy.ndimage as ndi
import scipy.signal as ss
import scipy.special as sc
from scipy.ndimage import _filters, _ni_support
from scipy.ndimage._filters import _gaussian_kernel1d

from ...core import (
    AbstractZero,
    NoTangent,
    Thunk,
    ZeroTangent,
    call_by_engine,
    carries_batch,
    frule,
    match_input_batch,
    rrule,
    unthunk,
    user_location,
)
from ...core.active import ActiveValue, stood_for
from ...core.errors import NoDerivativeError, option_refused
from ..numpy._arrays import (
    batch_to_input,
    cotangent_array,
    has_no_tangent,
    scatter_add,
    tangent_array,
    to_input,
)
from ..numpy._util import is_batched, match_output
from ..numpy.linalg import _safe_divide
from ..numpy.shapes import _pad

_NO = NoTangent()
_ZERO = ZeroTangent()

#: ndimage's extension of the input beyond its edges, as the ``np.pad`` mode that pads the same
_PAD_MODES = {
    "reflect": "symmetric",
    "grid-mirror": "symmetric",
    "mirror": "reflect",
    "nearest": "edge",
    "wrap": "wrap",
    "grid-wrap": "wrap",
    "constant": "constant",
    "grid-constant": "constant",
}


def _by_rule(f, args: tuple, kwargs: dict):
    """``f(*args, **kwargs)``, an engine's values run by their engine through this module's rule."""
    return call_by_engine(f, args, kwargs, f"scipy.ndimage.{f.__name__}")


def _settings(f, x, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by name, defaults filled in; ``output=`` refused at the user's line."""
    bound = inspect.signature(f).bind(x, *args, **kwargs)
    bound.apply_defaults()
    s = dict(bound.arguments)
    if s.get("output") is not None:
        raise option_refused(
            f,
            (x, *args),
            "output= writes into an existing array or casts to a dtype, and the rule does not "
            "differentiate that: drop output= and use the returned value (with .astype for a dtype)",
        )
    s.update(s.pop("kwargs", {}))
    return s


def _correlate(t, kernel, mode: str, origins: list, axis: int | None, lead: tuple):
    """``sum_k kernel[k] t[i + k - c]`` over ``t``'s axes past ``lead``, ``t`` extended by ``mode``
    with zeros as the constant; ``axis``: the kernel is long along that axis only."""
    weights = np.conj(kernel) if np.iscomplexobj(kernel) else kernel  # (ndimage conjugates complex weights)
    if axis is not None:
        options = {"axis": axis + len(lead), "mode": mode, "origin": origins[axis]}
        return _by_rule(ndi.correlate1d, (t, np.reshape(weights, -1)), options)
    options = {"mode": mode, "origin": [0] * len(lead) + list(origins)}
    return _by_rule(ndi.correlate, (t, np.reshape(weights, (1,) * len(lead) + np.shape(kernel))), options)


class _Pass:
    """One correlation ``y[i] = sum_k kernel[k] x_m[i + k - c]`` of an array shaped as ``x``: the
    kernel has ``x``'s rank, ``mode`` extends ``x`` and ``origins`` shift the centre ``c``."""

    def __init__(self, x, kernel, mode: str, origins: list):
        shape = np.shape(kernel)
        self.x, self.kernel, self.mode, self.origins = x, kernel, mode, list(origins)
        self.widths = [(n // 2 + o, n - 1 - n // 2 - o) for n, o in zip(shape, self.origins, strict=True)]
        long = [d for d, n in enumerate(shape) if n > 1]
        self.axis = long[0] if len(long) == 1 else None  # one axis: ndimage's correlate1d

    @classmethod
    def along(cls, x, axis: int, weights, mode: str, origin: int = 0) -> _Pass:
        """The pass of the 1-d kernel ``weights`` along ``axis``."""
        shape, origins = [1] * np.ndim(x), [0] * np.ndim(x)
        shape[axis], origins[axis] = np.size(weights), origin
        return cls(x, np.reshape(weights, shape), mode, origins)

    def padded(self, x, cval=0.0):
        """``x`` extended by the mode as far as the kernel reaches: the pass is its 'valid' correlation."""
        if _PAD_MODES[self.mode] == "constant":
            return np.pad(x, self.widths, constant_values=cval)
        return np.pad(x, self.widths, mode=_PAD_MODES[self.mode])

    def push(self, t, lead: tuple = ()):
        return _correlate(t, self.kernel, self.mode, self.origins, self.axis, lead)

    @cached_property
    def _unpad(self):
        """The adjoint of the padding (``np.pad``'s rule's): the copies' cotangents summed back."""
        return _pad(None, self.x, self.widths, mode=_PAD_MODES[self.mode])[0]

    def adjoint(self, dy, lead: tuple = ()):
        """The 'full' convolution of ``dy`` with the conjugated kernel, then the padding's adjoint."""
        full = np.pad(dy, [(0, 0)] * len(lead) + self.widths)  # dy in the padded input's frame
        origins = [n - 1 - 2 * (n // 2) - o for n, o in zip(np.shape(self.kernel), self.origins)]
        z = _correlate(full, np.conj(np.flip(self.kernel)), "constant", origins, self.axis, lead)
        return self._unpad(z, lead)


def _linear_map(terms: list[list[_Pass]]):
    """``(adjoint, push)`` of the sum over ``terms`` of each chain of passes (applied in order)."""

    def adjoint(dy, lead=()):
        out = []
        for chain in terms:
            d = dy
            for p in reversed(chain):
                d = p.adjoint(d, lead)
            out.append(d)
        return sum(out[1:], out[0])

    def push(dx, lead):
        out = []
        for chain in terms:
            d = dx
            for p in chain:
                d = p.push(d, lead)
            out.append(d)
        return sum(out[1:], out[0])

    return adjoint, push


def _axis(x, axis: int) -> int:
    return axis % np.ndim(x)


def _gaussian_pass(x, axis: int, sigma, order: int, mode: str, truncate: float, radius) -> _Pass:
    """``gaussian_filter1d``'s pass: the kernel of the ``order``-th derivative of a Gaussian."""
    lw = int(truncate * float(sigma) + 0.5) if radius is None else radius
    return _Pass.along(x, axis, _gaussian_kernel1d(sigma, order, lw)[::-1], mode)


def _gaussian_chain(x, sigma, order, mode, truncate, radius, axes) -> list[_Pass]:
    """``gaussian_filter``'s passes: one along each of ``axes`` whose sigma is not zero."""
    axes = _ni_support._check_axes(axes, np.ndim(x))
    n = len(axes)
    rows = zip(
        axes,
        *(_ni_support._normalize_sequence(v, n) for v in (sigma, order, mode, radius)),
    )
    return [_gaussian_pass(x, a, s, o, m, truncate, r) for a, s, o, m, r in rows if s > 1e-15]


# ----- the filters linear in the input: the chains of passes whose sum each is ---------------------

#: {filter: terms(x, settings) -> the chains of passes whose sum it is}
_TERMS = {}


def _terms(f):
    def decorator(terms):
        _TERMS[f] = terms
        return terms

    return decorator


@_terms(ndi.gaussian_filter1d)
def _gaussian_filter1d(x, s):
    return [[_gaussian_pass(x, _axis(x, s["axis"]), s["sigma"], s["order"], s["mode"], s["truncate"], s["radius"])]]


@_terms(ndi.gaussian_filter)
def _gaussian_filter(x, s):
    return [_gaussian_chain(x, s["sigma"], s["order"], s["mode"], s["truncate"], s["radius"], s["axes"])]


@_terms(ndi.uniform_filter1d)
def _uniform_filter1d(x, s):
    size = s["size"]
    return [[_Pass.along(x, _axis(x, s["axis"]), np.full(size, 1.0 / size), s["mode"], s["origin"])]]


@_terms(ndi.uniform_filter)
def _uniform_filter(x, s):
    axes = _ni_support._check_axes(s["axes"], np.ndim(x))
    rows = zip(axes, *(_ni_support._normalize_sequence(s[k], len(axes)) for k in ("size", "origin", "mode")))
    return [[_Pass.along(x, a, np.full(int(n), 1.0 / int(n)), m, o) for a, n, o, m in rows if n > 1]]


@_terms(ndi.laplace)
def _laplace(x, s):
    axes = _ni_support._check_axes(s["axes"], np.ndim(x))
    modes = _ni_support._normalize_sequence(s["mode"], len(axes))
    return [[_Pass.along(x, a, np.array([1.0, -2.0, 1.0]), m)] for a, m in zip(axes, modes)] or [[]]


def _edge_filter(x, s, smoothing) -> list[list[_Pass]]:
    """``sobel``'s and ``prewitt``'s chain: a difference along the axis, ``smoothing`` along the others."""
    axis, modes = _axis(x, s["axis"]), _ni_support._normalize_sequence(s["mode"], np.ndim(x))
    chain = [_Pass.along(x, axis, np.array([-1.0, 0.0, 1.0]), modes[axis])]
    chain += [_Pass.along(x, a, smoothing, modes[a]) for a in range(np.ndim(x)) if a != axis]
    return [chain]


@_terms(ndi.sobel)
def _sobel(x, s):
    return _edge_filter(x, s, np.array([1.0, 2.0, 1.0]))


@_terms(ndi.prewitt)
def _prewitt(x, s):
    return _edge_filter(x, s, np.array([1.0, 1.0, 1.0]))


@_terms(ndi.gaussian_laplace)
def _gaussian_laplace(x, s):
    """A sum over the axes of second derivatives of Gaussians, each in its axis's mode on every axis."""
    ndim = np.ndim(x)
    axes = _ni_support._check_axes(s["axes"], ndim)
    sigmas, modes = (_ni_support._normalize_sequence(s[k], len(axes)) for k in ("sigma", "mode"))
    sigma = [0] * ndim
    for a, v in zip(axes, sigmas):
        sigma[a] = v
    truncate, radius = s.get("truncate", 4.0), s.get("radius")
    terms = [
        _gaussian_chain(x, sigma, [2 * (b == a) for b in range(ndim)], m, truncate, radius, None)
        for a, m in zip(axes, modes)
    ]
    return terms or [[]]


# ----- correlations: bilinear in the input and the weights ----------------------------------------

_WEIGHTED = (ndi.correlate, ndi.convolve, ndi.correlate1d, ndi.convolve1d)


class _Weighted:
    """One call of ``correlate``, ``convolve``, ``correlate1d`` or ``convolve1d``: its pass over the
    input, the kernel as ndimage applies it made from the weights (conjugated by a correlation,
    reversed with the origins moved by a convolution)."""

    def __init__(self, f, x, s: dict):
        self.f, self.weights = f, s["weights"]
        self.options = {k: v for k, v in s.items() if k not in ("input", "weights")}
        ndim, origins = np.ndim(x), [0] * np.ndim(x)
        if f in (ndi.correlate1d, ndi.convolve1d):
            axis, shape = _axis(x, s["axis"]), [1] * ndim
            shape[axis], origins[axis] = np.size(self.weights), s["origin"]
            kernel = np.reshape(self.weights, shape)
        else:
            axes = _ni_support._check_axes(s["axes"], ndim)
            for a, o in zip(axes, _ni_support._normalize_sequence(s["origin"], len(axes))):
                origins[a] = o
            missing = tuple(a for a in range(ndim) if a not in axes)  # axes the weights do not span
            kernel = np.expand_dims(self.weights, missing) if missing else self.weights
        self.convolution = f in (ndi.convolve, ndi.convolve1d)
        if self.convolution:
            kernel = np.flip(kernel)
            origins = [-o - (1 - n % 2) for o, n in zip(origins, np.shape(kernel))]
        elif np.iscomplexobj(kernel):
            kernel = np.conj(kernel)
        self.input_pass = _Pass(x, kernel, s["mode"], origins)

    def cotangent(self, x, dy):
        """``w̄`` from ``sum_i conj(ȳ[i]) xp[i + k]``: the 'valid' correlation of the input padded
        by the mode (``cval`` and all) with the cotangent."""
        xp = self.input_pass.padded(x, self.options["cval"])
        g = call_by_engine(ss.correlate, (xp, dy, "valid"), {}, "scipy.signal.correlate")
        if self.convolution:  # the kernel is the weights reversed, not conjugated
            g = np.flip(np.conj(g) if np.iscomplexobj(g) else g)
        return np.reshape(g, np.shape(self.weights))

    def push(self, x, dw):
        """The output's tangent along the weights: the same call with them (``cval`` and all)."""
        return _by_rule(self.f, (x, dw), self.options)


# ----- gaussian_gradient_magnitude: the norm of the Gaussian derivatives along the axes -----------


class _Magnitude:
    """``y = sqrt(sum_i g_i**2)`` for the Gaussian derivatives ``g_i`` along each axis (each in
    its axis's mode, ``cval`` and all): ``ẏ = sum_i (g_i / y) ġ_i``, 0 where ``y`` is 0 (the
    subgradient of a norm at zero), each ``ġ_i`` the linear map of its chain of passes."""

    def __init__(self, x, y, s: dict):
        ndim = np.ndim(x)
        axes = _ni_support._check_axes(s["axes"], ndim)
        extra = {k: s[k] for k in ("truncate", "radius") if k in s}
        self.parts = []  # (g_i / y, the options of g_i's gaussian_filter, the adjoint and push of its linear part)
        for a, m in zip(axes, _ni_support._normalize_sequence(s["mode"], len(axes))):
            options = {"sigma": s["sigma"], "order": [int(b == a) for b in range(ndim)], "mode": m, **extra}
            g = _by_rule(ndi.gaussian_filter, (x,), {**options, "cval": s["cval"]})
            chain = _gaussian_chain(
                x, options["sigma"], options["order"], m, extra.get("truncate", 4.0), extra.get("radius"), None
            )
            self.parts.append((_safe_divide(g, y), options, _linear_map([chain])))
        if not self.parts:  # no axes: ndimage returns the input
            self.parts.append((1.0, None, _linear_map([[]])))

    def adjoint(self, dy, lead: tuple = ()):
        out = [adjoint(np.conj(ratio) * dy, lead) for ratio, _, (adjoint, _) in self.parts]
        return sum(out[1:], out[0])

    def push(self, dx, lead: tuple):
        out = [ratio * push(dx, lead) for ratio, _, (_, push) in self.parts]
        return sum(out[1:], out[0])

    def cval_derivative(self, zeros):
        out = [
            zeros if o is None else r * _by_rule(ndi.gaussian_filter, (zeros,), {**o, "cval": 1.0})
            for r, o, _ in self.parts
        ]
        return sum(out[1:], out[0])


# ----- the rules -----------------------------------------------------------------------------------


_SIGMA = (
    "the rule does not differentiate in sigma, the Gaussian's width: hold it constant (take it from outside "
    "the function being differentiated)"
)
_ROUNDED = "the output is rounded to the input's integer dtype, where it has no derivative: filter a float array"
_DIFFERENTIABLE = ("weights", "cval", "sigma")  # positional arguments that may carry derivatives


def _is_zero(dv) -> bool:
    """Whether a tangent is zero: a hard zero, or plain numbers all zero (an engine's value never is)."""
    return isinstance(dv, AbstractZero) or (isinstance(dv, (float, int, np.ndarray, np.generic)) and not np.any(dv))


class _Call:
    """One call of a filter: its value, the maps of the input's tangents and cotangents, and the
    derivatives in its other positional arguments: the weights, ``cval`` (the output is affine in
    it), ``sigma`` refused; all refused where ndimage rounds the output to an integer input's dtype."""

    def __init__(self, f, x, args: tuple, kwargs: dict):
        self.s = s = _settings(f, x, args, kwargs)
        self.f, self.x, self.kwargs = f, x, kwargs
        self.y = _by_rule(f, (x, *args), kwargs)
        self.names = list(inspect.signature(f).parameters)[1 : 1 + len(args)]
        self.rounded = np.dtype(getattr(self.y, "dtype", float)).kind in "biu"
        self.location = user_location() if self.rounded or "sigma" in self.names else None
        if f is ndi.gaussian_gradient_magnitude:
            self.magnitude = _Magnitude(x, self.y, s)
            self.adjoint, self.push = self.magnitude.adjoint, self.magnitude.push
        elif f in _WEIGHTED:
            self.weighted = _Weighted(f, x, s)
            self.adjoint, self.push = _linear_map([[self.weighted.input_pass]])
        else:
            self.adjoint, self.push = _linear_map(_TERMS[f](x, s))

    @cached_property
    def cval_derivative(self):
        """``dy/dcval``: the filter of zeros with ``cval`` 1 (nonzero only near a constant edge)."""
        zeros = np.zeros(np.shape(self.x), complex if np.iscomplexobj(self.x) else float)
        if self.f is ndi.gaussian_gradient_magnitude:
            return self.magnitude.cval_derivative(zeros)
        options = {k: v for k, v in self.s.items() if k != "input"}
        return _by_rule(self.f, (zeros,), {**options, "cval": 1.0})

    def refusal(self, why: str) -> NoDerivativeError:
        where = f" at {self.location}" if self.location else ""
        return NoDerivativeError(f"scipy.ndimage.{self.f.__name__}{where}: {why}")

    def refused(self, why: str) -> Thunk:
        """A cotangent that raises the refusal when an engine reads it (never, for a constant)."""
        return Thunk(lambda: _raise(self.refusal(why)))

    def cotangent(self, name: str, value, dy, lead: tuple):
        """The cotangent of the positional argument ``name`` (``value``) from the output's ``dy``."""
        back = batch_to_input if lead else to_input
        if name == "weights" and not has_no_tangent(value):
            if lead:
                return Thunk(lambda: back(value, np.stack([self.weighted.cotangent(self.x, row) for row in dy])))
            return Thunk(lambda: back(value, self.weighted.cotangent(self.x, dy)))
        if name == "cval":
            axes = tuple(range(len(lead), np.ndim(dy)))
            return Thunk(lambda: back(value, np.sum(np.conj(self.cval_derivative) * dy, axis=axes)))
        if name == "sigma":
            return self.refused(_SIGMA)
        return _NO

    def tangent(self, name: str, value, dv):
        """The output's tangent along the positional argument ``name`` (``value``)."""
        if name == "weights":
            if is_batched(value, dv):
                return np.stack([self.weighted.push(self.x, row) for row in dv])
            return self.weighted.push(self.x, dv)
        if name == "cval":
            lead = np.shape(dv)[:1] if is_batched(value, dv) else ()
            return np.reshape(dv, (*lead, *(1,) * np.ndim(self.y))) * self.cval_derivative
        if name == "sigma" and not _is_zero(dv):
            raise self.refusal(_SIGMA)
        return None


def _raise(error: Exception):
    raise error


def _register(f):
    """The ``rrule`` and ``frule`` of the filter ``f``, both taking a batch (a leading batch axis)."""
    name = f.__name__

    def filter_rrule(input, *args, **kwargs):  # noqa: A002  (ndimage's name)
        call, x = _Call(f, input, args, kwargs), input
        y = call.y

        def filter_pullback(dy):
            if call.rounded:
                refused = (call.refused(_ROUNDED) if n in _DIFFERENTIABLE else _NO for n in call.names)
                return (_NO, _NO if has_no_tangent(x) else call.refused(_ROUNDED), *refused)
            dy = unthunk(dy)
            batch = carries_batch(y, dy)
            dy = match_input_batch(y, dy) if batch else cotangent_array(y, dy)
            if isinstance(dy, AbstractZero):
                return (_NO, _NO if has_no_tangent(x) else dy, *(dy for _ in args))
            lead = np.shape(dy)[:1] if batch else ()
            dx = _NO if has_no_tangent(x) else (batch_to_input if batch else to_input)(x, call.adjoint(dy, lead))
            return (_NO, dx, *(call.cotangent(n, a, dy, lead) for n, a in zip(call.names, args)))

        filter_pullback.__name__ = filter_pullback.__qualname__ = f"{name}_pullback"
        return y, filter_pullback

    def filter_frule(tangents, input, *args, **kwargs):  # noqa: A002
        call, x = _Call(f, input, args, kwargs), input
        dx, dvs = unthunk(tangents[1]), [unthunk(t) for t in tangents[2:]]
        if call.rounded and not all(
            _is_zero(d) for n, d in zip(("input", *call.names), (dx, *dvs)) if n in ("input", *_DIFFERENTIABLE)
        ):
            raise call.refusal(_ROUNDED)
        terms = [] if isinstance(dx, AbstractZero) else [call.push(dx, np.shape(dx)[:1] if is_batched(x, dx) else ())]
        for n, a, dv in zip(call.names, args, dvs):
            term = None if isinstance(dv, AbstractZero) else call.tangent(n, a, dv)
            if term is not None:
                terms.append(term)
        if not terms:
            return call.y, _ZERO
        return call.y, match_output(call.y, sum(terms[1:], terms[0]))

    filter_rrule.__name__ = filter_rrule.__qualname__ = f"rrule_{name}"
    filter_frule.__name__ = filter_frule.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(filter_rrule)
    frule.register(f, batched=True)(filter_frule)


for _f in (*_WEIGHTED, *_TERMS, ndi.gaussian_gradient_magnitude):
    _register(_f)


# ----- gathers: the rank filters and the interpolations ------------------------------------------


class _Gather:
    """``y[p] = sum_k w[k, p] e[i[k, p]]`` over ``e``, the flattened input followed by ``cval``: an
    output that is a weighted sum of input entries (or ``cval``) at each point, as a rank filter's
    (the one entry it selects) and an interpolation's (the samples around its position) are.
    ``slope_weights(d)`` makes the weights' derivatives in the position's ``d``-th coordinate (when
    a derivative in the positions asks); ``source`` is the input's shape (or its spline
    coefficients'), ``shape`` the output's."""

    def __init__(self, source: tuple, index, weights, shape: tuple, slope_weights=None):
        self.source, self.index, self.weights, self.shape = source, index, weights, shape
        self.slope_weights = slope_weights
        self.size = int(np.prod(source, dtype=int))

    def _extended(self, x, cval, lead: tuple):
        tail = np.zeros((*lead, 1)) + (np.reshape(cval, (*lead, 1)) if np.ndim(cval) else cval)
        return np.concatenate([np.reshape(x, (*lead, self.size)), tail], axis=-1)

    def push(self, dx, dcval, lead: tuple = ()):
        """The output's tangent along the input's ``dx`` and ``cval``'s ``dcval``."""
        picked = self._extended(dx, dcval, lead)[..., self.index]
        return np.reshape(np.sum(self.weights * picked, axis=len(lead)), (*lead, *self.shape))

    def adjoint(self, dy, lead: tuple = ()) -> tuple:
        """``(x̄, cval̄)``: ``ȳ`` scattered back with the weights, summed where entries repeat."""
        values = self.weights * np.reshape(dy, (*lead, 1, -1))
        index = (slice(None), self.index) if lead else self.index
        summed = scatter_add((*lead, self.size + 1), index, values)
        return np.reshape(summed[..., : self.size], (*lead, *self.source)), summed[..., self.size]

    def slope(self, d: int, x, cval):
        """``dy/dc_d``, the interpolant's slope along the ``d``-th coordinate at each point."""
        picked = self._extended(x, cval, ())[self.index]
        return np.sum(self.slope_weights(d) * picked, axis=0)


def _padded_positions(shape: tuple, widths: list, modes: list):
    """The flat position in an input of ``shape`` that each entry of its extension by the boundary
    modes copies (``np.pad`` of the positions, axis by axis), ``prod(shape)`` where it is ``cval``."""
    size = int(np.prod(shape, dtype=int))
    positions = np.arange(size).reshape(shape)
    for axis, (width, mode) in enumerate(zip(widths, modes)):
        if width == (0, 0):
            continue
        pads = [(0, 0)] * len(shape)
        pads[axis] = width
        if _PAD_MODES[mode] == "constant":
            positions = np.pad(positions, pads, constant_values=size)
        else:
            positions = np.pad(positions, pads, mode=_PAD_MODES[mode])
    return positions


_RANK = (
    ndi.minimum_filter,
    ndi.maximum_filter,
    ndi.median_filter,
    ndi.percentile_filter,
    ndi.rank_filter,
    ndi.minimum_filter1d,
    ndi.maximum_filter1d,
)


def _window(f, x, s: dict) -> tuple:
    """``(footprint, origins, modes)`` of a rank filter over all the input's axes, as ndimage reads
    ``size``, ``footprint``, ``origin``, ``mode`` and ``axes``: a box (a size, or a footprint all
    true, for the minimum and maximum) is one pass along each of ``axes`` in their order, a
    footprint otherwise spans the input's axes in its own order, the origins in the order of ``axes``."""
    ndim = np.ndim(x)
    if f in (ndi.minimum_filter1d, ndi.maximum_filter1d):
        axes, sizes, footprint = (_axis(x, s["axis"]),), (s["size"],), None
    else:
        axes = _ni_support._check_axes(s["axes"], ndim)
        footprint = None if s["footprint"] is None else np.asarray(s["footprint"], bool)
        sizes = footprint.shape if footprint is not None else _ni_support._normalize_sequence(s["size"], len(axes))
    if f in (ndi.minimum_filter, ndi.maximum_filter, ndi.minimum_filter1d, ndi.maximum_filter1d) and (
        footprint is None or footprint.all()
    ):
        kernel, origins, modes = [1] * ndim, [0] * ndim, ["constant"] * ndim
        rows = zip(axes, sizes, *(_ni_support._normalize_sequence(s[k], len(axes)) for k in ("origin", "mode")))
        for a, n, o, m in rows:
            kernel[a], origins[a], modes[a] = n, o, m
        return np.ones(kernel, bool), origins, modes
    if footprint is None:
        footprint = np.ones(sizes, bool)
    footprint = _filters._expand_footprint(ndim, axes, footprint)
    modes = _filters._expand_mode(ndim, axes, s["mode"])
    origins = _filters._expand_origin(ndim, axes, s["origin"])
    return footprint, origins, [modes] * ndim if isinstance(modes, str) else modes


def _rank_gather(f, x, s: dict, y) -> _Gather | None:
    """The entry each output of a rank filter is: of the window of the input extended by the mode,
    the first (in the window's order) that equals the output, so ties between distinct entries go to
    one of them (a subgradient) and copies made by a reflection to the entry they copy; ``None``
    where an output equals no entry (a NaN in its window)."""
    kernel, origins, modes = _window(f, x, s)
    widths = [(n // 2 + o, n - 1 - n // 2 - o) for n, o in zip(kernel.shape, origins)]
    positions = _padded_positions(np.shape(x), widths, modes)
    cval = np.reshape(stood_for(s["cval"]), 1).astype(np.result_type(y))  # (as ndimage pads with it)
    values = np.concatenate([np.reshape(stood_for(x), -1), cval])
    windows = np.lib.stride_tricks.sliding_window_view(positions, kernel.shape)[..., kernel]
    hits = values[windows] == np.asarray(stood_for(y))[..., None]
    if not np.all(np.any(hits, axis=-1)):
        return None
    picked = np.take_along_axis(windows, np.argmax(hits, axis=-1)[..., None], axis=-1)
    return _Gather(np.shape(x), np.reshape(picked, (1, -1)), np.ones((1, picked.size)), np.shape(y))


def _mapped(c, n: int, mode: str):
    """``(cc, dcc/dc, outside)``: ndimage's map of the coordinate ``c`` along an axis of ``n``
    entries into the input (``map_coordinate`` in its ``ni_interpolation.c``: 'mirror' reflects
    about the end samples, 'reflect' and 'grid-mirror' about the half-sample edges, 'wrap' with
    period ``n - 1``, 'grid-wrap' ``n``; 'nearest' and 'grid-constant' extend the samples instead, see
    ``_edge``); ``outside``: 'constant' gives ``cval`` there."""
    lo, hi = c < 0, c > n - 1
    slope, outside = np.ones_like(c), np.zeros(c.shape, bool)
    if mode == "constant":
        return c, slope, lo | hi
    if mode in ("grid-constant", "nearest"):
        return c, slope, outside
    if n <= 1:
        return np.zeros_like(c), np.zeros_like(c), outside
    if mode == "mirror":
        s2 = 2 * n - 2
        a = s2 * np.trunc(-c / s2) + c
        below, below_slope = np.where(a <= 1 - n, a + s2, -a), np.where(a <= 1 - n, 1.0, -1.0)
        b = c - s2 * np.trunc(c / s2)
        above, above_slope = np.where(b >= n, s2 - b, b), np.where(b >= n, -1.0, 1.0)
    elif mode in ("reflect", "grid-mirror"):
        s2 = 2 * n
        a = np.where(c < -s2, s2 * np.trunc(-c / s2) + c, c)
        below, below_slope = np.where(a < -n, a + s2, -a - 1), np.where(a < -n, 1.0, -1.0)
        b = c - s2 * np.trunc(c / s2)
        above, above_slope = np.where(b >= n, s2 - b - 1, b), np.where(b >= n, -1.0, 1.0)
    else:  # 'wrap' (period n - 1), 'grid-wrap' (period n)
        p = n - 1 if mode == "wrap" else n
        below = c + p * (np.trunc((-c if mode == "wrap" else -1 - c) / p) + 1)
        above, below_slope, above_slope = c - p * np.trunc(c / p), slope, slope
    mapped = np.where(lo, below, np.where(hi, above, c))
    return mapped, np.where(lo, below_slope, np.where(hi, above_slope, 1.0)), outside


def _edge(i, n: int, mode: str):
    """The entry along an axis of ``n`` that the spline's sample ``i`` (past an end) reads, ``n`` for
    ``cval`` ('grid-constant'): the samples are reflected about the half-sample edges ('reflect',
    'grid-mirror'), wrapped ('grid-wrap'), repeated ('nearest'), reflected about the end samples
    otherwise ('mirror', and 'wrap' and 'constant' near the ends, whose positions stay inside)."""
    if mode == "grid-constant":
        return np.where((i < 0) | (i >= n), n, i)
    if mode in ("reflect", "grid-mirror"):
        i = np.mod(i, 2 * n)
        return np.where(i >= n, 2 * n - 1 - i, i)
    if mode == "grid-wrap":
        return np.mod(i, n)
    if mode == "nearest" or n == 1:
        return np.clip(i, 0, n - 1)
    i = np.mod(i, 2 * n - 2)
    return np.where(i >= n, 2 * n - 2 - i, i)


def _bspline(order: int, t, derivative: int = 0):
    """The centred B-spline of ``order`` (or its ``derivative``-th derivative) at ``t``, the weight
    of the sample at distance ``t`` in ndimage's interpolation: ``sum_j (-1)**j C(order + 1, j)
    (t + (order + 1) / 2 - j)_+**order / order!``, each derivative a difference of the B-splines of
    one order less, half a sample apart (Unser, "Splines: a perfect fit for signal and image
    processing", IEEE Signal Processing Magazine 16(6), 1999)."""
    if derivative:
        return _bspline(order - 1, t + 0.5, derivative - 1) - _bspline(order - 1, t - 0.5, derivative - 1)
    if order == 0:  # (a box: the formula's 0**0 would be 1)
        return np.where((t >= -0.5) & (t < 0.5), 1.0, 0.0)
    total = 0.0
    for j in range(order + 2):
        total = total + (-1) ** j * math.comb(order + 1, j) * np.maximum(t + (order + 1) / 2 - j, 0.0) ** order
    return total / math.factorial(order)


def _cells(c, shift, n: int, order: int, mode: str) -> tuple:
    """``(entries, weights, slopes)`` along one axis, each ``(order + 1, P)``: the samples the
    interpolation at the coordinates ``c`` reads (``n`` for ``cval``), their weights (the
    B-spline's at the distances to them; order 1: ``1 - t, t`` for ``t`` the position in the cell,
    order 0: the nearest sample) and the weights' derivatives in ``c``; ``shift``: an engine's part
    of ``c`` (zero, carrying its derivatives), which moves them to first order."""
    cc, dcc, outside = _mapped(c, n, mode)
    if order == 0:
        start = np.floor(cc + 0.5)
        entries, weights, slopes = start[None], np.ones((1, *c.shape)), np.zeros((1, *c.shape))
    elif order == 1:
        start = np.floor(cc)
        t = cc - start if shift is None else cc - start + dcc * shift
        entries, weights, slopes = np.stack([start, start + 1]), [1 - t, t], np.stack([-dcc, dcc])
    else:  # (ndimage's first sample: odd orders from the cell's start, even ones from the nearest)
        start = (np.floor(cc) if order % 2 else np.floor(cc + 0.5)) - order // 2
        entries = start + np.arange(order + 1).reshape(-1, *(1,) * c.ndim)
        t = cc - entries
        weights, slopes = _bspline(order, t), dcc * _bspline(order, t, 1)
        if shift is not None:
            weights = weights + slopes * shift
            slopes = slopes + dcc * dcc * _bspline(order, t, 2) * shift
        weights = list(weights)
    entries = _edge(entries.astype(np.intp), n, mode)
    if np.any(outside):  # 'constant': cval alone outside the input
        entries = np.where(outside, n, entries)
        weights = [np.where(outside, float(k == 0), w) for k, w in enumerate(weights)]
        slopes = np.where(outside, 0.0, slopes)
    return entries, weights, slopes


def _interpolation(shape: tuple, positions, shift, orders: list, mode: str) -> _Gather:
    """The gather of the interpolation of an array of ``shape`` (the input, or its spline
    coefficients) at ``positions`` (``ndim`` arrays of the output's shape), of ``orders[d]`` along
    axis ``d``: the tensor product of the axes' cells, ``cval`` where any axis reads it."""
    cells = [
        _cells(np.reshape(c, -1), None if shift is None else np.reshape(shift[d], -1), n, order, mode)
        for d, (c, n, order) in enumerate(zip(positions, shape, orders))
    ]
    size = int(np.prod(shape, dtype=int))
    corners = list(itertools.product(*(range(order + 1) for order in orders)))
    index, weights = [], []
    for corner in corners:
        flat, constant = 0, False
        for (entries, _, _), k, n in zip(cells, corner, shape):
            flat, constant = flat * n + np.minimum(entries[k], n - 1), constant | (entries[k] == n)
        index.append(np.where(constant, size, flat))
        weights.append(_product([w[k] for (_, w, _), k in zip(cells, corner)]))

    def slope_weights(d: int):
        """The weights with the ``d``-th axis's differentiated, at each corner."""
        rows = ([s[k] if e == d else w[k] for e, ((_, w, s), k) in enumerate(zip(cells, corner))] for corner in corners)
        return np.stack([_product(row) for row in rows])

    return _Gather(shape, np.stack(index), np.stack(weights), np.shape(positions)[1:], slope_weights)


def _product(factors: list):
    out = factors[0]
    for f in factors[1:]:
        out = out * f
    return out


class _Positions:
    """Where an interpolation samples its input: ``plain``, the coordinates in the input of each
    output point (``(ndim, *output shape)``, computed as ndimage computes them, so that the cells
    and the 'constant' mode's edges agree with its own), and ``moves``, for each argument the
    positions depend on, the map of its tangent to theirs and the adjoint of that map; ``axes``, those
    interpolated along (``rotate`` reads the others' entries, its plane by plane)."""

    def __init__(self, f, x, s: dict):
        self.moves, shape = {}, np.shape(x)
        self.axes = tuple(range(len(shape)))  # the axes interpolated along
        if f is ndi.map_coordinates:
            self.plain = np.asarray(_plain(s["coordinates"]), float)
            self.moves["coordinates"] = (lambda dv, lead: dv, lambda g, lead, shape: g)
        elif f is ndi.shift:
            amount = np.asarray(_ni_support._normalize_sequence(_plain(s["shift"]), len(shape)), float)
            self.plain = np.indices(shape, float) + _column(-amount, len(shape))
            self.moves["shift"] = self._translation(-1.0)
        elif f is ndi.zoom:
            self.plain = self._zoomed(shape, s)
        elif f is ndi.affine_transform:
            self._affine(shape, s)
        else:
            self._rotation(shape, s)

    @staticmethod
    def _zoomed(shape: tuple, s: dict):
        zoom = _ni_support._normalize_sequence(s["zoom"], len(shape))
        out = [int(round(n * z)) for n, z in zip(shape, zoom)]
        axes = []
        for n, m in zip(shape, out):
            num, div = (n, m) if s["grid_mode"] else (n - 1, m - 1)
            z, kk = (num / div if div else 1.0), np.arange(m, dtype=float)
            axes.append((kk + 0.5) * z - 0.5 if s["grid_mode"] else kk * z)
        return np.stack(np.meshgrid(*axes, indexing="ij"))

    def _translation(self, sign: float):
        """The moves of a shift (``sign`` -1) or an offset (+1) of the positions, one number or one per axis."""

        def push(dv, lead):
            return sign * _column(np.reshape(dv, (*lead, -1)) + np.zeros(self.plain.shape[0]), self.plain.ndim - 1)

        def pull(g, lead, shape):
            total = sign * np.sum(g, axis=tuple(range(len(lead) + 1, np.ndim(g))))
            return np.reshape(total, (*lead, *shape)) if shape else np.sum(total, axis=-1)

        return push, pull

    def _affine(self, shape: tuple, s: dict):
        ndim, matrix = len(shape), np.asarray(_plain(s["matrix"]), float)
        offset = s["offset"]
        homogeneous = matrix.ndim == 2 and matrix.shape[1] == ndim + 1 and matrix.shape[0] in (ndim, ndim + 1)
        if homogeneous:
            matrix, offset = matrix[:ndim, :ndim], matrix[:ndim, ndim]
        offset = np.asarray(_ni_support._normalize_sequence(_plain(offset), ndim), float)
        out = np.indices(shape if s["output_shape"] is None else tuple(s["output_shape"]), float)
        self.out = out
        if matrix.ndim == 1:  # ndimage's zoom and shift: (o + offset / m) * m
            self.plain = (out + _column(offset / matrix, ndim)) * _column(matrix, ndim)
        else:
            self.plain = np.stack([_dot_in_order(offset[h], matrix[h], out) for h in range(ndim)])
        self.moves["matrix"] = (self._matrix_push(homogeneous, matrix.ndim == 1), self._matrix_pull(homogeneous))
        if not homogeneous:
            self.moves["offset"] = self._translation(1.0)

    def _matrix_push(self, homogeneous: bool, diagonal: bool):
        def push(dm, lead):
            ndim = self.plain.shape[0]
            if diagonal:
                return np.reshape(dm, (*lead, ndim, *(1,) * ndim)) * self.out
            linear = np.tensordot(dm[..., :ndim, :ndim], self.out, axes=1)
            return linear + _column(dm[..., :ndim, ndim], ndim) if homogeneous else linear

        return push

    def _matrix_pull(self, homogeneous: bool):
        def pull(g, lead, shape):
            ndim = self.plain.shape[0]
            spatial = tuple(range(len(lead) + 1, np.ndim(g)))
            if len(shape) == 1:
                return np.sum(g * self.out, axis=spatial)
            linear = np.tensordot(g, self.out, axes=(spatial, tuple(range(1, ndim + 1))))
            if not homogeneous:
                return linear
            full = np.concatenate([linear, np.sum(g, axis=spatial)[..., None]], axis=-1)
            rows = shape[0] - ndim  # the homogeneous row (0 0 .. 1) carries no derivative
            return np.concatenate([full, np.zeros((*lead, rows, ndim + 1))], axis=-2) if rows else full

        return pull

    def _rotation(self, shape: tuple, s: dict):
        """``rotate``'s positions, ndimage's matrix (by ``cosdg``, ``sindg``) and offset over the plane
        of ``axes`` (a position's other coordinates are the output's); the angle in degrees moves them."""
        ndim, axes = len(shape), sorted(a % len(shape) for a in s["axes"])
        self.axes = tuple(axes)
        angle = stood_for(s["angle"])
        c, si = sc.cosdg(angle), sc.sindg(angle)
        rot = np.array([[c, si], [-si, c]])
        in_plane = np.asarray(shape)[axes]
        if s["reshape"]:
            bounds = rot @ [[0, 0, in_plane[0], in_plane[0]], [0, in_plane[1], 0, in_plane[1]]]
            out_plane = (np.ptp(bounds, axis=1) + 0.5).astype(int)
        else:
            out_plane = in_plane
        out_centre = (out_plane - 1) / 2
        offset = (in_plane - 1) / 2 - rot @ out_centre
        out_shape = list(shape)
        out_shape[axes[0]], out_shape[axes[1]] = out_plane
        out = np.indices(out_shape, float)
        plain = out.copy()
        plane = out[axes]
        for h in range(2):
            plain[axes[h]] = _dot_in_order(offset[h], rot[h], plane)
        self.plain = plain

        def turned(angle):
            """The positions' derivatives in the angle (of an engine's angle: its derivatives too)."""
            t = np.deg2rad(angle)
            d = np.pi / 180 * np.stack([np.stack([-np.sin(t), np.cos(t)]), np.stack([-np.cos(t), -np.sin(t)])])
            moved = np.tensordot(d, plane - _column(out_centre, ndim), axes=1)
            zero = np.zeros(out.shape[1:])
            return np.stack([moved[axes.index(a)] if a in axes else zero for a in range(ndim)])

        slope = turned(s["angle"])
        self.moves["angle"] = (
            lambda dv, lead: np.reshape(dv, (*lead, *(1,) * (ndim + 1))) * slope,
            lambda g, lead, shape: np.sum(g * slope, axis=tuple(range(len(lead), np.ndim(g)))),
        )


def _plain(v):
    """The plain numbers an argument stands for, inside a list or tuple too."""
    return type(v)(_plain(e) for e in v) if isinstance(v, (list, tuple)) else stood_for(v)


def _is_active(v) -> bool:
    """Whether an argument is or holds (in a list or tuple) an engine's value."""
    return any(_is_active(e) for e in v) if isinstance(v, (list, tuple)) else isinstance(v, ActiveValue)


def _array(v):
    """An argument as an array, a list or tuple holding an engine's values stacked (by ``np.stack``,
    which carries their derivatives)."""
    return np.stack([_array(e) for e in v]) if isinstance(v, (list, tuple)) and _is_active(v) else v


def _column(v, ndim: int):
    """``v`` (its last axis one number per axis) shaped to broadcast against positions of ``ndim`` axes."""
    return np.reshape(v, (*np.shape(v), *(1,) * ndim))


def _dot_in_order(start, row, points):
    """``start + sum_l row[l] points[l]``, summed in ndimage's order (from ``start``, the offset) so
    that the positions are its own to the last bit: a tie of order 0's rounding goes its way."""
    total = start
    for r, p in zip(row, points):
        total = total + p * r
    return total


# ----- the rules of the gathers --------------------------------------------------------------------

_INTERPOLATIONS = (ndi.map_coordinates, ndi.shift, ndi.zoom, ndi.affine_transform, ndi.rotate)
_ZOOM = "the zoom factors set the output's shape and are not differentiated: hold them constant"
_NAN = "an output equals no entry of its window (a NaN there), so the entry it selects is unknown"


class _Prefilter:
    """ndimage's B-spline coefficients of an input of ``shape`` (``prefilter=True``, order 2 to 5)
    along ``axes`` (all, or ``rotate``'s plane): the input padded by 12 ('nearest' repeating its
    edges, 'grid-constant' with ``cval``), then ``spline_filter1d`` along each axis, a linear map of
    the input and ``cval``. Each axis's filter is the matrix of its filter of the identity (the
    adjoint its transpose); the coefficients' positions are the input's moved by the padding,
    ``shift`` (one number per axis)."""

    def __init__(self, shape: tuple, order: int, mode: str, axes: tuple):
        self.shape, self.mode = shape, mode
        npad = 12 if mode in ("nearest", "grid-constant") else 0  # as ndimage pads them
        self.widths = [(npad, npad) if d in axes else (0, 0) for d in range(len(shape))]
        self.shift = np.array([w for w, _ in self.widths], float)
        self.padded = tuple(n + 2 * w for n, (w, _) in zip(shape, self.widths))
        self.matrices = {d: ndi.spline_filter1d(np.eye(self.padded[d]), order, axis=0, mode=mode) for d in axes}
        self.frame = np.pad(np.zeros(shape), self.widths, constant_values=1.0)  # (where the padding is cval)

    def _filter(self, c, lead: tuple, adjoint: bool):
        for d, matrix in self.matrices.items():
            axis = len(lead) + d
            c = np.moveaxis(np.tensordot(matrix.T if adjoint else matrix, c, axes=([1], [axis])), 0, axis)
        return c

    def push(self, x, cval, lead: tuple):
        """The coefficients of ``x`` (a batch past ``lead``) and ``cval``."""
        if np.any(self.shift):
            widths = [(0, 0)] * len(lead) + self.widths
            if self.mode == "nearest":
                x = np.pad(x, widths, mode="edge")
            else:
                values = np.reshape(cval, (*lead, *(1,) * len(self.shape))) if np.ndim(cval) else cval
                x = np.pad(x, widths) + values * self.frame
        return self._filter(x, lead, False)

    def adjoint(self, dc, lead: tuple) -> tuple:
        """``(x̄, cval̄)`` from the coefficients' cotangent."""
        z = self._filter(dc, lead, True)
        if not np.any(self.shift):
            return z, 0.0
        if self.mode == "nearest":
            return _pad(None, np.zeros(self.shape), self.widths, mode="edge")[0](z, lead), 0.0
        inner = (..., *(slice(w, w + n) for (w, _), n in zip(self.widths, self.shape)))
        return z[inner], np.sum(z * self.frame, axis=tuple(range(len(lead), np.ndim(z))))


class _GatherCall:
    """One call of a rank filter or an interpolation: its value and its gather (the entries each
    output reads, with their weights: of the input, or of its spline coefficients), built when a
    derivative asks for it; the derivatives in the input, ``cval`` and the arguments that move the
    positions (``coordinates``, ``shift``, ``matrix``, ``offset``, ``angle``), all refused for an
    output rounded to an integer dtype; ``zoom``'s factors refused."""

    def __init__(self, f, x, args: tuple, kwargs: dict):
        self.s = _settings(f, x, args, kwargs)
        self.f, self.x, self.args = f, x, args
        self.y = _by_rule(f, (x, *args), kwargs)
        self.names = list(inspect.signature(f).parameters)[1 : 1 + len(args)]
        self.location = user_location()
        self.reason = _ROUNDED if np.dtype(getattr(stood_for(self.y), "dtype", float)).kind in "biu" else None

    def refusal(self, why: str) -> NoDerivativeError:
        where = f" at {self.location}" if self.location else ""
        return NoDerivativeError(f"scipy.ndimage.{self.f.__name__}{where}: {why}")

    @cached_property
    def prefilter(self) -> _Prefilter | None:
        """The map to the spline coefficients the interpolation reads, ``None`` where it reads the input."""
        s = self.s
        if self.f in _INTERPOLATIONS and s["order"] > 1 and s["prefilter"]:
            return _Prefilter(np.shape(self.x), s["order"], s["mode"], self.positions.axes)
        return None

    @cached_property
    def positions(self) -> _Positions:
        return _Positions(self.f, self.x, self.s)

    @cached_property
    def gather(self) -> _Gather:
        if self.f in _RANK:
            gather = _rank_gather(self.f, self.x, self.s, self.y)
            if gather is None:
                raise self.refusal(_NAN)
            return gather
        moving = [(n, a) for n, a in zip(self.names, self.args) if n in self.positions.moves]
        shift = None  # an engine's part of the positions (a Hessian's): zero, carrying their derivatives
        for n, a in moving:
            if not _is_active(a):
                continue
            moved = self.positions.moves[n][0](_array(a) - np.asarray(_plain(a), float), ())
            shift = moved if shift is None else shift + moved
        source, positions = np.shape(self.x), self.positions.plain
        if self.prefilter is not None:
            source, positions = self.prefilter.padded, positions + _column(self.prefilter.shift, positions.ndim - 1)
        # (the axes not interpolated, past rotate's plane, are read at their entries)
        orders = [self.s["order"] if d in self.positions.axes else 0 for d in range(np.ndim(self.x))]
        return _interpolation(source, positions, shift, orders, self.s["mode"])

    def push(self, dx, dcval, lead: tuple = ()):
        """The output's tangent along the input's ``dx`` and ``cval``'s ``dcval``."""
        dc = dx if self.prefilter is None else self.prefilter.push(dx, dcval, lead)
        return self.gather.push(dc, dcval, lead)

    def adjoint(self, dy, lead: tuple = ()) -> tuple:
        """``(x̄, cval̄)`` from the output's ``ȳ``."""
        dc, dcval = self.gather.adjoint(dy, lead)
        if self.prefilter is None:
            return dc, dcval
        dx, padded = self.prefilter.adjoint(dc, lead)
        return dx, dcval + padded

    @cached_property
    def slopes(self):
        """``dy/dc_d`` at each output point, stacked on a first axis over the input's axes."""
        gather, x, cval = self.gather, self.x, self.s["cval"]
        coefficients = x if self.prefilter is None else self.prefilter.push(x, cval, ())
        slopes = np.stack([gather.slope(d, coefficients, cval) for d in range(np.ndim(x))])
        return np.reshape(slopes, (-1, *gather.shape))

    @cached_property
    def cval_weight(self):
        """``dy/dcval``: the output of zeros with ``cval`` 1."""
        return self.push(np.zeros(np.shape(self.x)), 1.0)

    def differentiable(self, name: str) -> bool:
        if self.f in _RANK:
            return name == "cval"
        return name in ("cval", "zoom") or name in self.positions.moves

    def cotangent(self, name: str, value, dy, lead: tuple, adjoint):
        back = batch_to_input if lead else to_input
        if name == "cval":
            return Thunk(lambda: back(value, adjoint()[1]))
        if name == "zoom" and self.f is ndi.zoom:
            return Thunk(lambda: _raise(self.refusal(_ZOOM)))
        if self.f in _INTERPOLATIONS and name in self.positions.moves:
            pull = self.positions.moves[name][1]

            def moved():
                slopes = np.conj(self.slopes) if np.iscomplexobj(stood_for(self.slopes)) else self.slopes
                g = slopes * np.reshape(dy, (*lead, 1, *self.gather.shape))
                return back(value, pull(g, lead, np.shape(_plain(value))))

            return Thunk(moved)
        return _NO

    def tangent(self, name: str, value, dv):
        dv = tangent_array(value, dv)
        lead = np.shape(dv)[:1] if is_batched(_plain(value), dv) else ()
        if name == "cval":
            return np.reshape(dv, (*lead, *(1,) * len(self.gather.shape))) * self.cval_weight
        if name == "zoom" and self.f is ndi.zoom:
            raise self.refusal(_ZOOM)
        if self.f in _INTERPOLATIONS and name in self.positions.moves:
            return np.sum(self.slopes * self.positions.moves[name][0](dv, lead), axis=len(lead))
        return None


def _register_gather(f):
    """The ``rrule`` and ``frule`` of the rank filter or interpolation ``f``, both taking a batch."""
    name = f.__name__

    def gather_rrule(input, *args, **kwargs):  # noqa: A002  (ndimage's name)
        call, x = _GatherCall(f, input, args, kwargs), input
        y = call.y

        def gather_pullback(dy):
            dy = unthunk(dy)
            batch = carries_batch(y, dy)
            dy = match_input_batch(y, dy) if batch else cotangent_array(y, dy)
            if isinstance(dy, AbstractZero):
                return (_NO, _NO if has_no_tangent(x) else dy, *(dy for _ in args))
            if call.reason is not None:
                refused = Thunk(lambda: _raise(call.refusal(call.reason)))
                rest = (refused if call.differentiable(n) else _NO for n in call.names)
                return (_NO, _NO if has_no_tangent(x) else refused, *rest)
            lead = np.shape(dy)[:1] if batch else ()
            adjoint = _once(lambda: call.adjoint(dy, lead))
            back = batch_to_input if batch else to_input
            dx = _NO if has_no_tangent(x) else Thunk(lambda: back(x, adjoint()[0]))
            return (_NO, dx, *(call.cotangent(n, a, dy, lead, adjoint) for n, a in zip(call.names, args)))

        gather_pullback.__name__ = gather_pullback.__qualname__ = f"{name}_pullback"
        return y, gather_pullback

    def gather_frule(tangents, input, *args, **kwargs):  # noqa: A002
        call, x = _GatherCall(f, input, args, kwargs), input
        dx, dvs = unthunk(tangents[1]), [unthunk(t) for t in tangents[2:]]
        nonzero = [(n, a, d) for n, a, d in zip(call.names, args, dvs) if not _is_zero(d) and call.differentiable(n)]
        if call.reason is not None and (nonzero or not _is_zero(dx)):
            raise call.refusal(call.reason)
        terms = []
        if not isinstance(dx, AbstractZero):
            terms.append(call.push(dx, 0.0, np.shape(dx)[:1] if is_batched(x, dx) else ()))
        for n, a, dv in nonzero:
            term = call.tangent(n, a, dv)
            if term is not None:
                terms.append(term)
        if not terms:
            return call.y, _ZERO
        return call.y, match_output(call.y, sum(terms[1:], terms[0]))

    gather_rrule.__name__ = gather_rrule.__qualname__ = f"rrule_{name}"
    gather_frule.__name__ = gather_frule.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(gather_rrule)
    frule.register(f, batched=True)(gather_frule)


def _once(compute):
    """``compute``, called at most once: its value kept for the later calls."""
    memo = []

    def value():
        if not memo:
            memo.append(compute())
        return memo[0]

    return value


for _f in (*_RANK, *_INTERPOLATIONS):
    _register_gather(_f)
