"""Rules for ``scipy.ndimage``'s linear filters: ``correlate``, ``convolve``, ``correlate1d``,
``convolve1d``, ``gaussian_filter``, ``gaussian_filter1d`` (any ``order``), ``uniform_filter``,
``uniform_filter1d``, ``laplace``, ``sobel``, ``prewitt`` and ``gaussian_laplace``, in every
boundary mode, real and complex; and ``gaussian_gradient_magnitude``, the norm of the Gaussian
derivatives along the axes.

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

>>> import numpy as np, scipy.ndimage as ndi, chainrules as cr
>>> y, back = cr.rrule(ndi.correlate1d, np.array([1.0, 2.0, 4.0]), [1.0, 1.0], mode="nearest")
>>> y, cr.unthunk(back(np.array([1.0, 0.0, 0.0]))[1])  # y[0] reads x[0] twice, through the mode
(array([2., 3., 6.]), array([2., 0., 0.]))
"""

from __future__ import annotations

import inspect
from functools import cached_property

import numpy as np
import scipy.ndimage as ndi
import scipy.signal as ss
from scipy.ndimage import _ni_support
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
from ...core.errors import NoDerivativeError, option_refused
from ..numpy._arrays import batch_to_input, cotangent_array, has_no_tangent, to_input
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
