"""Rules for NumPy's FFT module: ``np.fft.fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft``, their
2-D and n-D forms, ``fftshift``/``ifftshift``, and ``fftfreq``/``rfftfreq``.

NumPy computes an n-D transform as 1-D transforms along its axes in turn (``rfftn`` is ``rfft``
along the last axis, then ``fft`` along the others). A rule writes the call out as that list of
*steps* (``_plan``), once, in its primal: the pushforward runs the steps on the tangent, the
pullback runs their adjoints in reverse order. Every transform is linear over the reals, so
the steps need nothing of the primal but shapes. ``n=``/``s=`` (zero-padding or truncating the
input), ``axis=``/``axes=`` and ``norm=`` ("backward", "ortho", "forward") are taken as NumPy
takes them; ``out=`` is refused.

The adjoints, in ChainRules' convention (``y = A x`` pulls back ``dx = A^H dy``; a real input
keeps the real part), as in JAX's transpose rules (``jax/_src/lax/fft.py``) and AbstractFFTs'
ChainRulesCore extension:

- ``fft`` with a norm is ``c`` times the DFT; its adjoint ``c DFT^H`` is ``ifft`` with the
  reciprocal norm (backward and forward swapped, ortho kept); ``ifft``'s is ``fft`` likewise.
- Zero-padding to ``n`` and truncating to ``n`` are each other's adjoints.
- ``rfft`` keeps bins ``0..n//2`` of the DFT of a real input; ``irfft`` rebuilds a real signal
  from them counting each interior bin twice (for itself and its conjugate mirror), so
  ``rfft``'s adjoint is ``irfft`` of ``dy / w`` and ``irfft``'s is ``w * rfft(dy)``, both with the
  reciprocal norm, where ``w`` is 2 on the interior bins and 1 on the DC bin and (even ``n``) the
  Nyquist bin. ``irfft`` ignores the imaginary parts of those two bins, and ``w * rfft(dy)`` of a
  real ``dy`` has none there.
- ``hfft`` is ``irfft`` of the conjugate with the reciprocal norm, ``ihfft`` the conjugate of
  ``rfft`` with it; the adjoint of ``conj`` is ``conj``.

Pushforwards take a leading batch axis on the tangent and pullbacks a leading batch axis on
the cotangent (Jacobians push and pull blocks of them): the steps' axes move one to the right.

``fftfreq(n, d)`` and ``rfftfreq(n, d)`` are ``k / (n d)`` for integers ``k``: no derivative in
``n``, and ``-y / d`` in the sample spacing ``d``.

>>> import numpy as np, chainrules as cr
>>> y, back = cr.rrule(np.fft.rfft, np.array([1.0, 2.0, 3.0, 4.0]))
>>> back(np.ones(3, dtype=complex))[1]  # Re(sum_k e^(2 pi i j k / 4)) over the bins k = 0, 1, 2
array([3., 0., 1., 0.])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core import (
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    carries_batch,
    decline_batch,
    frule,
    match_input,
    match_input_batch,
    rrule,
    unthunk,
)
from ._arrays import cotangent_array, is_batched, normalize_axes, normalize_axis, to_input
from ._util import bind, match_output

_NO = NoTangent()
_ZERO = ZeroTangent()

#: the norm whose scale is the reciprocal of each norm's (the adjoint's norm)
_RECIPROCAL = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}

_TRANSFORMS = {"fft": np.fft.fft, "ifft": np.fft.ifft, "rfft": np.fft.rfft, "irfft": np.fft.irfft}


# ----- plans: a call as its 1-D steps --------------------------------------------------------


class _Plan:
    """The 1-D steps of a transform of an array of ``shape``, in the order NumPy runs them.

    A step is ``(kind, axis, n, norm, length)``: ``kind`` one of ``_TRANSFORMS`` (run along the
    non-negative ``axis`` with ``n`` points and ``norm``, from an input ``length`` long along
    ``axis``) or ``"conj"`` (the other fields unused).
    """

    __slots__ = ("shape", "steps")

    def __init__(self, shape: tuple[int, ...]):
        self.shape = list(shape)
        self.steps: list[tuple] = []

    def add(self, kind: str, axis: int, n, norm) -> None:
        axis = normalize_axis(axis, len(self.shape))
        length = self.shape[axis]
        if n is None:  # the 1-D function's own default
            n = 2 * (length - 1) if kind == "irfft" else length
        self.steps.append((kind, axis, int(n), norm, length))
        self.shape[axis] = int(n) // 2 + 1 if kind == "rfft" else int(n)

    def conj(self) -> None:
        self.steps.append(("conj", 0, 0, None, 0))


def _cook(shape: tuple[int, ...], s, axes, inverse_real: bool = False) -> tuple[list, list]:
    """``s`` and ``axes`` of an n-D transform as NumPy completes them (``numpy.fft``'s ``_cook_nd_args``)."""
    given = s is not None
    if not given:
        s = list(shape) if axes is None else [shape[a] for a in axes]
    s = list(s)
    axes = list(range(-len(s), 0)) if axes is None else list(axes)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if inverse_real and not given:
        s[-1] = (shape[axes[-1]] - 1) * 2
    return [shape[a] if n == -1 else n for n, a in zip(s, axes)], axes


def _plan(kind: str, shape: tuple[int, ...], o: dict) -> list[tuple]:
    """The steps of ``np.fft.<kind>`` of an array of ``shape`` with the bound options ``o``."""
    plan = _Plan(shape)
    norm = o["norm"]
    if kind in _TRANSFORMS:
        plan.add(kind, o["axis"], o["n"], norm)
    elif kind == "hfft":  # irfft of the conjugate, with the reciprocal norm
        plan.conj()
        plan.add("irfft", o["axis"], o["n"], _RECIPROCAL[norm])
    elif kind == "ihfft":  # the conjugate of rfft, with the reciprocal norm
        plan.add("rfft", o["axis"], o["n"], _RECIPROCAL[norm])
        plan.conj()
    else:
        s, axes = _cook(shape, o["s"], o["axes"], inverse_real=kind == "irfftn")
        if kind in ("fftn", "ifftn"):  # the last axis first, as NumPy does
            for n, axis in zip(reversed(s), reversed(axes)):
                plan.add(kind[:-1], axis, n, norm)
        elif kind == "rfftn":
            plan.add("rfft", axes[-1], s[-1], norm)
            for n, axis in zip(reversed(s[:-1]), reversed(axes[:-1])):
                plan.add("fft", axis, n, norm)
        else:  # irfftn
            for n, axis in zip(s[:-1], axes[:-1]):
                plan.add("ifft", axis, n, norm)
            plan.add("irfft", axes[-1], s[-1], norm)
    return plan.steps


# ----- the steps forward and back -------------------------------------------------------------


def _resize(v, axis: int, length: int):
    """``v`` truncated or zero-padded at the end of ``axis`` to ``length`` entries."""
    have = np.shape(v)[axis]
    if have == length:
        return v
    if have > length:
        return v[(slice(None),) * axis + (slice(0, length),)]
    widths = [(0, 0)] * np.ndim(v)
    widths[axis] = (0, length - have)
    return np.pad(v, widths)


def _weights(n: int, ndim: int, axis: int, dtype: np.dtype) -> np.ndarray:
    """How often ``irfft`` of ``n`` points counts each of the ``n // 2 + 1`` bins: 2 for the interior
    bins, which stand for themselves and their conjugate mirror, 1 for DC and (even ``n``) Nyquist;
    shaped to broadcast along ``axis`` of an array of ``ndim`` axes."""
    w = np.full(n // 2 + 1, 2.0, dtype=dtype)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w.reshape((-1,) + (1,) * (ndim - axis - 1))


def _push(steps: list[tuple], dx, lead: int):
    """The tangent ``dx`` (with ``lead`` batch axes in front) through the steps."""
    for kind, axis, n, norm, _ in steps:
        dx = np.conj(dx) if kind == "conj" else _TRANSFORMS[kind](dx, n, axis + lead, norm)
    return dx


def _pull(steps: list[tuple], dy, lead: int, real_dtype: Callable[[], np.dtype]):
    """The cotangent ``dy`` (with ``lead`` batch axes in front) back through the steps' adjoints."""
    for kind, axis, n, norm, length in reversed(steps):
        if kind == "conj":
            dy = np.conj(dy)
            continue
        axis += lead
        reciprocal = _RECIPROCAL[norm]
        if kind == "fft":
            dy = np.fft.ifft(dy, n, axis, reciprocal)
        elif kind == "ifft":
            dy = np.fft.fft(dy, n, axis, reciprocal)
        elif kind == "rfft":
            dy = np.fft.irfft(dy / _weights(n, np.ndim(dy), axis, real_dtype()), n, axis, reciprocal)
        else:  # irfft: its output (and so its cotangent) is real
            if np.iscomplexobj(dy):
                dy = np.real(dy)
            dy = np.fft.rfft(dy, n, axis, reciprocal) * _weights(n, np.ndim(dy), axis, real_dtype())
        dy = _resize(dy, axis, length)
    return dy


def _dense(x, dx):
    """The tangent of a (nested) list or tuple of numbers as one array (zeros materialized)."""
    dx = unthunk(dx)
    if isinstance(x, (list, tuple)):
        if isinstance(dx, AbstractZero):
            return np.zeros(np.shape(x))
        items = dx.backing if isinstance(dx, Tangent) else dx
        return np.array([_dense(e, d) for e, d in zip(x, items)])
    return np.zeros(np.shape(x)) if isinstance(dx, AbstractZero) else dx


# ----- the transforms --------------------------------------------------------------------------

_ONE_D = ("n", "axis", "norm", "out")
_ONE_D_DEFAULTS = {"n": None, "axis": -1, "norm": None}
_N_D = ("s", "axes", "norm", "out")
_N_D_DEFAULTS = {"s": None, "axes": None, "norm": None}
_TWO_D_DEFAULTS = {"s": None, "axes": (-2, -1), "norm": None}


def _register_transform(f, kind: str, names: tuple[str, ...], defaults: dict) -> None:
    name = f.__name__

    def fft_rrule(x, *args, **kwargs):
        options = bind(f, args, kwargs, names, defaults)
        y = f(x, *args, **kwargs)
        steps = _plan(kind, np.shape(x), options)
        real_input = not np.iscomplexobj(x)
        rest = (_NO,) * len(args)
        if isinstance(x, (list, tuple)):  # a list's cotangent is a Tangent[list], which has no batch form
            decline_batch()

        def real_dtype():
            return np.finfo(np.result_type(y)).dtype

        def fft_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (_NO, dy, *rest)
            batched = carries_batch(y, dy)
            dy = match_input_batch(y, dy) if batched else cotangent_array(y, dy)
            dx = _pull(steps, dy, int(batched), real_dtype)
            if real_input and np.iscomplexobj(dx):
                dx = np.real(dx)
            return (_NO, match_input_batch(x, dx) if batched else to_input(x, dx), *rest)

        fft_pullback.__qualname__ = f"{name}_pullback"
        return y, fft_pullback

    def fft_frule(tangents, x, *args, **kwargs):
        options = bind(f, args, kwargs, names, defaults)
        y = f(x, *args, **kwargs)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero):
            return y, _ZERO
        if isinstance(x, (list, tuple)):
            dx = _dense(x, dx)
        steps = _plan(kind, np.shape(x), options)
        return y, match_output(y, _push(steps, dx, int(is_batched(x, dx))))

    fft_rrule.__qualname__ = f"rrule_{name}"
    fft_frule.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(fft_rrule)
    frule.register(f, batched=True)(fft_frule)


for _f in (np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.hfft, np.fft.ihfft):
    _register_transform(_f, _f.__name__, _ONE_D, _ONE_D_DEFAULTS)
for _f in (np.fft.fft2, np.fft.ifft2, np.fft.rfft2, np.fft.irfft2):
    _register_transform(_f, _f.__name__[:-1] + "n", _N_D, _TWO_D_DEFAULTS)
for _f in (np.fft.fftn, np.fft.ifftn, np.fft.rfftn, np.fft.irfftn):
    _register_transform(_f, _f.__name__, _N_D, _N_D_DEFAULTS)


# ----- fftshift, ifftshift: rotations, each the other's adjoint ---------------------------------


def _register_shift(f, inverse) -> None:
    name = f.__name__

    def shift_rrule(x, *args, **kwargs):
        axes = normalize_axes(bind(f, args, kwargs, ("axes",), {"axes": None})["axes"], np.ndim(x))
        y = f(x, *args, **kwargs)
        rest = (_NO,) * len(args)
        if isinstance(x, (list, tuple)):
            decline_batch()

        def shift_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (_NO, dy, *rest)
            if carries_batch(y, dy):
                return (_NO, match_input_batch(x, inverse(dy, tuple(a + 1 for a in axes))), *rest)
            return (_NO, to_input(x, inverse(cotangent_array(y, dy), axes)), *rest)

        shift_pullback.__qualname__ = f"{name}_pullback"
        return y, shift_pullback

    def shift_frule(tangents, x, *args, **kwargs):
        axes = normalize_axes(bind(f, args, kwargs, ("axes",), {"axes": None})["axes"], np.ndim(x))
        y = f(x, *args, **kwargs)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero):
            return y, _ZERO
        if isinstance(x, (list, tuple)):
            dx = _dense(x, dx)
        lead = int(is_batched(x, dx))
        return y, match_output(y, f(dx, tuple(a + lead for a in axes)))

    shift_rrule.__qualname__ = f"rrule_{name}"
    shift_frule.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(shift_rrule)
    frule.register(f, batched=True)(shift_frule)


_register_shift(np.fft.fftshift, np.fft.ifftshift)
_register_shift(np.fft.ifftshift, np.fft.fftshift)


# ----- fftfreq, rfftfreq: k / (n d) ----------------------------------------------------------


def _register_frequencies(f) -> None:
    name = f.__name__

    def freq_rrule(n, *args, **kwargs):
        y = f(n, *args, **kwargs)
        d, d_given = _spacing(args, kwargs)
        rest = (_NO,) * max(len(args) - 1, 0)

        def freq_pullback(dy):
            dy = unthunk(dy)
            if not d_given:
                return (_NO, _NO)
            if isinstance(dy, AbstractZero):
                return (_NO, _NO, dy, *rest)
            # dy/dd = -y / d, summed against the cotangent over the frequencies
            if carries_batch(y, dy):
                return (_NO, _NO, match_input_batch(d, -np.sum(dy * y, axis=-1) / d), *rest)
            return (_NO, _NO, match_input(d, -np.sum(dy * y) / d), *rest)

        freq_pullback.__qualname__ = f"{name}_pullback"
        return y, freq_pullback

    def freq_frule(tangents, n, *args, **kwargs):
        y = f(n, *args, **kwargs)
        d, d_given = _spacing(args, kwargs)
        dd = unthunk(tangents[2]) if d_given and len(tangents) > 2 else _ZERO
        if isinstance(dd, AbstractZero):
            return y, _ZERO
        dd = np.reshape(dd, np.shape(dd) + (1,) * np.ndim(y))  # a batch of tangents of d: one row each
        return y, match_output(y, -y * (dd / d))

    freq_rrule.__qualname__ = f"rrule_{name}"
    freq_frule.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(freq_rrule)
    frule.register(f, batched=True)(freq_frule)


def _spacing(args: tuple, kwargs: dict):
    """The sample spacing ``d`` of a call ``fftfreq(n, *args, **kwargs)``, and whether it came
    positionally (only then is it an argument with a cotangent)."""
    if args:
        return args[0], True
    return kwargs.get("d", 1.0), False


for _f in (np.fft.fftfreq, np.fft.rfftfreq):
    _register_frequencies(_f)
