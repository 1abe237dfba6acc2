"""Rules for NumPy's elementwise functions: the ufuncs and their relatives (``where``, ``clip``, ``sinc``...).

Most rules are one row: the function and one partial derivative per argument, from which
``elementwise`` builds both the ``rrule`` and the ``frule``. Inputs broadcast against each other;
each cotangent is summed back to its input's shape and dtype. Complex inputs follow ChainRules'
convention: a holomorphic function's pullback multiplies by the conjugate partial. A function
with a real output of a complex input is written with the partial ``p`` for which
``dy = real(p * dz)`` (``abs``: ``conj(z) / |z|``), and the same rows then serve it.

A list or tuple operand is the array NumPy makes of it (``np.power(x, [1.0, 2.0])``): the rules
run on that array (``rrule_on_arrays``), and the operand's cotangent is structural (``Tangent[list]``).

Ufunc keywords: ``dtype=`` (and ``casting=``, ``order=``, ...) pass through to the primal;
``where=`` gives a zero derivative where it is false; ``out=`` is refused with a clear error,
since writing into an existing array is mutation, which rules do not differentiate.

Conventions at kinks: ``maximum``/``minimum``/``fmax``/``fmin`` split the cotangent equally
between tied arguments (tied as NumPy compared them: cast to the ``dtype=`` given); ``abs`` and
``hypot`` have derivative zero at zero; ``clip`` passes the cotangent to ``a`` when ``a`` equals
a bound.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable

import numpy as np

from ...core import (
    AbstractThunk,
    AbstractZero,
    ActiveValue,
    NoTangent,
    Thunk,
    ZeroTangent,
    carries_batch,
    conj,
    frule,
    input_matcher,
    match_input,
    match_input_batch,
    non_differentiable,
    rrule,
    unthunk,
)
from ...core.active import stood_for
from ...core.errors import option_refused
from ...core.keywords import declare_parameters
from ...core.projection import numpy_cotangent
from ..operators import _array_cotangent, frule_on_arrays, rrule_on_arrays
from ._arrays import array_or_active, scatter_add, tangent_array
from ._util import align, bind, match_output, raise_out

_NO = NoTangent()
_ZERO = ZeroTangent()
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_F64 = np.float64
_NDARRAY = np.ndarray
_SEQUENCES = (list, tuple)


# ----- the row machinery -------------------------------------------------------------------


def _takes_out(partial: Callable) -> bool:
    try:
        p = inspect.signature(partial).parameters.get("out")
    except (TypeError, ValueError):
        return False
    return p is not None and p.kind is inspect.Parameter.KEYWORD_ONLY


def _times(d, p):
    """``p * d``, without a multiplication for the constant partials 1 and -1.

    A boolean mask multiplies too: that is several times faster than ``np.where`` on a mask
    without order, where the branch predictor fails.
    """
    if type(p) is float:
        if p == 1.0:
            return d
        if p == -1.0:
            return -d
    return p * d


#: a partial not computed yet: the row's partial bound to the arguments (made in C, cheaper than a
#: closure), called when its argument's cotangent (or tangent) is asked for. An argument of
#: ``x ** 2.0`` or ``x / 3.0`` that is a constant never needs its partial (``y log|x|``, ``-y / 3``),
#: a pass or several over the array.
_Deferred = functools.partial


def _partial_value(p):
    return p() if type(p) is _Deferred else p


def pull(args: tuple, partials: list, y, dy) -> tuple:
    """The cotangents ``dy * conj(p)`` of an elementwise function, each brought back to its input.

    A partial is an array or number, a boolean mask (the cotangent passes where it is true),
    ``None`` for an argument without a derivative (``NoTangent``), or a ``_Deferred`` one, computed
    in its argument's thunk. A batch of cotangents (a
    leading batch axis) gives a batch of cotangents for each argument: the partials broadcast
    along the trailing axes.
    """
    dy = unthunk(dy)
    if type(dy) is np.ndarray and type(y) is np.ndarray:
        if dy.dtype.kind == "c" and y.dtype.kind != "c":
            dy = dy.real  # a real output's cotangent is real
    elif isinstance(dy, AbstractZero):
        return tuple(_NO if p is None else _ZERO for p in partials)
    elif not np.iscomplexobj(y) and np.iscomplexobj(dy):
        dy = np.real(dy)
    else:
        dy = numpy_cotangent(y, dy)
    if carries_batch(y, dy):  # a batch of cotangents: each argument's batch at once
        return tuple(_NO if p is None else _batch_back_to(x, dy, p) for x, p in zip(args, partials))
    if len(args) == 1:
        p = partials[0]
        return (_NO if p is None else _back_to(args[0], _times(dy, conj(p))),)  # (one input: never deferred)
    # several inputs: a cotangent that costs array work waits until asked for (it may be a
    # constant's: the 2.0 of np.power(x, 2.0), whose cotangent is a product and a sum)
    return tuple(_NO if p is None else _lazy_back_to(x, dy, p) for x, p in zip(args, partials))


def _lazy_back_to(x, dy, p):
    return _array_cotangent(x, dy, lambda: _back_to(x, _times(dy, conj(_partial_value(p)))))


def _batch_back_to(x, dy, p):
    if type(p) is _Deferred:
        return Thunk(lambda: match_input_batch(x, _times(dy, conj(p()))))
    return match_input_batch(x, _times(dy, conj(p)))


def _back_to(x, dx):
    """``match_input(x, dx)``, skipped when ``dx`` already is an array of ``x``'s shape and dtype."""
    if type(dx) is np.ndarray and type(x) is np.ndarray and dx.shape == x.shape and dx.dtype == x.dtype:
        return dx
    return match_input(x, dx)


def push(args: tuple, partials: list, y, dxs: tuple):
    """The pushforward ``sum(p * dx)`` of an elementwise function, shaped like its output.

    A batched tangent (one more leading axis than its input) is aligned with the output first,
    and then the result is batched too.
    """
    dy = _ZERO
    batch = None
    ndim = np.ndim(y)
    for x, p, dx in zip(args, partials, dxs):
        dx = tangent_array(x, unthunk(dx))  # (a list's tangent is a structure of its entries' tangents)
        if p is None or isinstance(dx, AbstractZero):
            continue
        if np.ndim(dx) > np.ndim(x):  # batched (perhaps already aligned with the output)
            batch = np.shape(dx)[0]
        p = _partial_value(p)
        aligned = align(x, dx, ndim)
        # a boolean mask selects (np.where, clip, maximum): an unselected tangent may be inf or NaN
        # (sqrt's at 0, in np.where(x > 0, np.sqrt(x), 0.0)), which times False would still be NaN
        term = np.where(p, aligned, 0) if getattr(p, "dtype", None) == np.bool_ else _times(aligned, p)
        dy = term if isinstance(dy, AbstractZero) else dy + term
    if isinstance(dy, AbstractZero):
        return dy
    shape = np.shape(y) if batch is None else (batch,) + np.shape(y)
    if np.shape(dy) != shape:
        dy = np.broadcast_to(dy, shape)  # a constant partial leaves a broadcast input's shape
    return match_output(y, dy)


def _ufunc_call(f, args: tuple, kwargs: dict, nin: int):
    """Check the extra arguments of a call ``f(*args, **kwargs)``; return its ``where=`` mask or None.

    Positional arguments after the inputs of a ufunc are its outputs; those and ``out=`` are refused.
    """
    if isinstance(f, np.ufunc):
        if any(a is not None for a in args[nin:]):
            raise_out(f)
        out = kwargs.get("out")
        if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
            raise_out(f)
        where = kwargs.get("where", True)
        return None if where is True else where
    if len(args) != nin:
        raise TypeError(f"the rule for {f.__name__} takes {nin} positional argument(s), got {len(args)}")
    return None


def _rules(
    f, nin: int, derivatives: Callable, scalar_partial: Callable | None = None, deferred: Callable | None = None
) -> tuple[Callable, Callable]:
    """The ``rrule`` and ``frule`` of an elementwise ``f`` of ``nin`` inputs.

    ``derivatives(args, y)`` returns the partials, one per input (see ``pull``), computed once in
    the primal and shared by the pullback. ``deferred(args, y)``, where the partials are
    independent of each other, returns them as ``_Deferred``: at an array output, each is
    computed when its argument's cotangent or tangent is. ``scalar_partial(x, y)``, for a function of one
    input, is its partial alone: the rrule's path for a real scalar (a loop of Python code
    calling ``np.sin`` on numbers), whose pullback multiplies without NumPy's array machinery.
    """
    name = getattr(f, "__name__", "f")
    pullback_name = f"{name}_pullback"

    def masked_derivatives(args, y, where):
        if where is None:
            return derivatives(args, y)
        with np.errstate(all="ignore"):  # the output is uninitialised where `where` is false
            ps = derivatives(args, y)
        return [None if p is None else np.where(where, p, 0.0) for p in ps]

    def elementwise_rrule(*args, **kwargs):
        if scalar_partial is not None and not kwargs and len(args) == 1:
            x = args[0]
            tx = type(x)
            if tx is np.ndarray:  # an array: its partial alone, and the real array pullback
                y = f(x)
                p = scalar_partial(x, y)
                if _real_partial(x, p, y):
                    return y, _real_array_pullback(p, y, pullback_name)
                return y, _array_pullback(x, p, y, pullback_name)
            if tx is float or tx is _F64:
                y = f(x)
                p = scalar_partial(x, y)
                if type(p) is float or type(p) is _F64:
                    return y, _scalar_pullback(x, tx, p, y, pullback_name)
        for x in args:  # a list or tuple operand: the partials take NumPy's array of it too
            tx = type(x)
            if tx is not _NDARRAY and tx is not float and isinstance(x, _SEQUENCES):
                return rrule_on_arrays(elementwise_rrule, args, kwargs)
        if not kwargs and len(args) == nin:  # the common call: no where=, out= or extra arguments
            y = f(*args)
            ps = derivatives(args, y) if deferred is None or type(y) is not np.ndarray else deferred(args, y)
            extra = ()
        else:
            where = _ufunc_call(f, args, kwargs, nin)
            extra = (_NO,) * (len(args) - nin)
            args = args[:nin]
            y = f(*args, **kwargs)
            ps = masked_derivatives(args, y, where)

        def elementwise_pullback(dy):
            return (_NO,) + pull(args, ps, y, dy) + extra

        elementwise_pullback.__qualname__ = pullback_name
        return y, elementwise_pullback

    def elementwise_frule(tangents, *args, **kwargs):
        where = _ufunc_call(f, args, kwargs, nin)
        args = args[:nin]
        y = f(*args, **kwargs)
        if where is None and deferred is not None and type(y) is np.ndarray:
            return y, push(args, deferred(args, y), y, tangents[1 : nin + 1])  # no partial of a zero tangent
        return y, push(args, masked_derivatives(args, y, where), y, tangents[1 : nin + 1])

    elementwise_rrule.__qualname__ = f"rrule_{name}"
    elementwise_frule.__qualname__ = f"frule_{name}"
    return elementwise_rrule, elementwise_frule


def _real_partial(x, p, y) -> bool:
    """Whether the one input ``x`` and the output ``y`` are real arrays of one shape and dtype,
    with an array partial ``p`` of that dtype: then ``p * dy`` is the input's cotangent as it is."""
    if type(x) is not np.ndarray or type(y) is not np.ndarray or type(p) is not np.ndarray:
        return False
    dtype, shape = y.dtype, y.shape
    if p is not y and (p.dtype != dtype or p.shape != shape):  # (exp's partial is its output)
        return False
    return dtype.kind == "f" and x.dtype == dtype and x.shape == shape


def _real_array_pullback(p, y, name: str):
    """The pullback of a one-input elementwise function of a real array (see ``_real_partial``):
    a cotangent of the output's shape and dtype is multiplied by the partial, nothing else."""
    dtype, shape = y.dtype, y.shape

    def elementwise_pullback(dy):
        if type(dy) is not np.ndarray and isinstance(dy, AbstractThunk):
            dy = dy.unthunk()  # (a matrix product's cotangent, say)
        if type(dy) is np.ndarray and dy.dtype == dtype and dy.shape == shape:
            return _NO, p * dy
        return (_NO,) + pull((y,), [p], y, dy)  # y stands for the input: it has its shape and dtype

    elementwise_pullback.__qualname__ = name
    return elementwise_pullback


def _array_pullback(x, p, y, name: str):
    """The pullback of a one-input elementwise function of an array with the partial ``p``."""

    def elementwise_pullback(dy):
        return (_NO,) + pull((x,), [p], y, dy)

    elementwise_pullback.__qualname__ = name
    return elementwise_pullback


def _scalar_pullback(x, tx: type, p, y, name: str):
    """The pullback of a one-input elementwise function at a real scalar ``x`` (a ``float`` or
    ``np.float64``) with the real partial ``p``: a real scalar cotangent is multiplied by ``p``
    and given ``x``'s own type, as ``match_input`` would; any other goes through ``pull``."""

    def elementwise_pullback(dy):
        td = type(dy)
        if td is float or td is _F64:
            dx = dy * p
            return _NO, (dx if type(dx) is tx else tx(dx))
        return (_NO,) + pull((x,), [p], y, dy)

    elementwise_pullback.__qualname__ = name
    return elementwise_pullback


def _register(
    f, nin: int, derivatives: Callable, partials: tuple | None = None, scalar_partial=None, deferred=None
) -> None:
    r, fw = _rules(f, nin, derivatives, scalar_partial, deferred)
    if partials is not None:
        r.partials = fw.partials = partials  # the dual engine may read them
    rrule.register(f, batched=True)(r)
    frule.register(f, batched=True)(fw)
    if nin == 2 and isinstance(f, np.ufunc):
        _outer_rules(f, r, fw)

    def sequence_frule(tangents, *args, **kwargs):
        return frule_on_arrays(fw, tangents, args, kwargs)

    # A list or tuple operand gets an frule of its own, typed, which runs `fw` on NumPy's array of
    # it: the dual engine would hand `fw.partials` the list as it is. (The rrule tests for one
    # itself, past its fast paths: an rrule is looked up at every call, and a typed lookup costs more.)
    sequence_frule.__qualname__ = f"{fw.__qualname__}_of_sequences"
    for i in range(nin):
        for P in _SEQUENCES:
            frule.register(f, *(object,) * i, P, batched=True)(sequence_frule)


def _outer_operand(a, b):
    """``a`` with one length-1 axis appended per axis of ``b``: ``f.outer(a, b)`` is ``f`` of it and ``b``."""
    return np.reshape(a, np.shape(a) + (1,) * np.ndim(b))


def _reshaped(d, x, like):
    """The tangent or cotangent ``d`` of ``x`` (a batch of them too) given ``like``'s shape."""
    d = unthunk(d)
    if isinstance(d, AbstractZero):
        return d
    lead = np.shape(d)[:1] if np.ndim(d) > np.ndim(x) else ()  # (a batch axis, whatever axes follow it)
    return np.reshape(d, lead + np.shape(like))


def _outer_rules(f, r, fw) -> None:
    """Register the rules of ``f.outer`` for a ufunc ``f`` of two inputs, from ``f``'s rules ``r``
    and ``fw``: ``f.outer(a, b)`` is ``f(_outer_operand(a, b), b)``, whose rules broadcast ``a``
    over ``b``'s axes and sum its cotangent back, here reshaped to ``a``'s shape."""

    def outer_rrule(a, b, **kwargs):
        if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
            return rrule_on_arrays(outer_rrule, (a, b), kwargs)
        wide = _outer_operand(a, b)
        y, back = r(wide, b, **kwargs)

        def outer_pullback(dy):
            df, da, db = back(dy)
            da = _reshaped(da, wide, a)
            return df, (da if isinstance(da, AbstractZero) else input_matcher(y, dy)(a, da)), db

        return y, outer_pullback

    def outer_frule(tangents, a, b, **kwargs):
        if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
            return frule_on_arrays(outer_frule, tangents, (a, b), kwargs)
        wide = _outer_operand(a, b)
        return fw((tangents[0], _reshaped(tangents[1], a, wide), tangents[2]), wide, b, **kwargs)

    outer_rrule.__qualname__, outer_frule.__qualname__ = f"rrule_{f.__name__}_outer", f"frule_{f.__name__}_outer"
    rrule.register(f.outer, batched=True)(outer_rrule)
    frule.register(f.outer, batched=True)(outer_frule)


def elementwise(f, *partials: Callable | None) -> None:
    """Register ``rrule`` and ``frule`` for an elementwise ``f`` from one partial per argument.

    Like ``cr.scalar_rule``, plus what ufunc calls need: inputs of different shapes broadcast
    (batched tangents included), ``where=``/``dtype=`` are honoured, ``out=`` is refused. A
    partial with a keyword-only ``out`` parameter also receives the primal output; a partial
    of ``None`` marks an argument without a derivative.

    >>> import numpy as np, chainrules as cr
    >>> y, back = cr.rrule(np.multiply, np.ones((2, 1)), np.arange(3.0))
    >>> tuple(cr.unthunk(d) for d in back(np.ones((2, 3)))[1:])  # thunks: either may be a constant's
    (array([[3.],
           [3.]]), array([2., 2., 2.]))
    """
    wants_out = tuple(p is not None and _takes_out(p) for p in partials)

    def derivatives(args, y):
        return [None if p is None else p(*args, out=y) if w else p(*args) for p, w in zip(partials, wants_out)]

    def deferred(args, y):
        return [
            None if p is None else _Deferred(p, *args, out=y) if w else _Deferred(p, *args)
            for p, w in zip(partials, wants_out)
        ]

    scalar_partial = None
    if len(partials) == 1 and partials[0] is not None:
        partial = partials[0]
        scalar_partial = (lambda x, y: partial(x, out=y)) if wants_out[0] else (lambda x, y: partial(x))
    _register(f, len(partials), derivatives, partials, scalar_partial, deferred if len(partials) > 1 else None)


def elementwise_joint(f, nin: int, derivatives: Callable) -> None:
    """Like ``elementwise``, with all partials from one call ``derivatives(args, y)`` that shares their work."""
    _register(f, nin, derivatives)


# ----- partials that need care -------------------------------------------------------------


def _safe_divisor(d):
    """``d`` with its zeros replaced by ones (where the numerator vanishes too)."""
    return np.where(d == 0, 1, d)


def _log_abs_base(a):
    """log|a| (log a for complex a), and 0 where a == 0: the exponent's partial of a**b there."""
    safe = _safe_divisor(a)
    return np.log(safe) if np.iscomplexobj(a) else np.log(np.abs(safe))


def _power_base_partial(power):
    def base_partial(a, b):
        if type(b) is int or type(b) is float:  # a constant exponent (x ** 2): no mask to build
            if b == 0:
                return 0.0
            return 2.0 * a if b == 2 else b * power(a, b - 1.0)
        b1 = b - 1.0  # a float exponent: integers to negative integer powers are an error
        # b a^(b-1) is 0 at b = 0 by itself, except at a = 0 (0 * inf): only that point is set to 0,
        # so that the partial's own derivative in b at b = 0 (a Hessian's cross term, 1 / a) stays
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((b == 0) & (a == 0), 0.0, b * power(a, b1))

    return base_partial


def as_computed(v, y):
    """``v``, an input of an extremum with the output ``y``, cast to ``y``'s dtype where comparing
    them would not: ``dtype=np.float32`` has NumPy cast float64 inputs before it picks the result,
    which then equals the cast input only. Comparisons promote, so a Python number, an input of
    ``y``'s dtype and one safely cast to it (float32 to float64) are compared as they are.

    >>> import numpy as np
    >>> a = np.array([0.3, 2.1])
    >>> y = np.maximum(a, 1.0, dtype=np.float32)
    >>> a == y, as_computed(a, y) == y
    (array([False, False]), array([False,  True]))
    """
    tv = type(v)
    if tv is float or tv is int or (tv is np.ndarray and v.dtype == getattr(y, "dtype", None)):
        return v  # (the common calls: maximum(x, 0.0), max(x))
    dtype = getattr(stood_for(y), "dtype", None)
    plain = stood_for(v)
    own = getattr(plain, "dtype", None)
    if not isinstance(dtype, np.dtype) or not isinstance(own, np.dtype) or own == dtype or np.can_cast(own, dtype):
        return v
    return np.asarray(plain).astype(dtype)  # (a mask's values only: an engine's derivative is of no use)


def _select_partials(nan_wins: bool):
    """Partials of maximum/minimum (``nan_wins``: a NaN propagates) and fmax/fmin (a NaN loses).

    Each input's share of the result: 1 if it is the result, 1/2 each on a tie, and the NaN
    input of maximum/minimum is the result.
    """

    def select_partials(args, y):
        # the inputs as NumPy compared them: dtype=np.float32 casts float64 inputs first, and
        # a float64 input equals no float32 output (ties too are those of the cast values)
        a, b = (as_computed(v, y) for v in args)
        won = a == y
        if nan_wins:
            won = np.logical_or(won, a != a)
        tie = a == b
        if not np.any(tie):
            return [won, np.logical_not(won)]
        share = won - 0.5 * tie
        return [share, 1.0 - share]

    return select_partials


def _rounded_quotient(a, b, *, out):
    """-(a - out) / b rounded: minus the integer quotient of mod/fmod, exact from the primal."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.rint((a - out) / b)


def _abs_partial(x):
    """d|x| = real(p * dx): sign(x) for real x, conj(x)/|x| for complex x; zero at zero."""
    if not np.iscomplexobj(x):
        return np.sign(x)
    r = np.abs(x)
    return np.conj(x) / _safe_divisor(r)


_PI2 = math.pi * math.pi


def _sinc_partial(x):
    # d/dx sin(pi x)/(pi x) = (cos(pi x) - sinc(x)) / x, which cancels near x = 0: there its Taylor
    # series -pi^2 x / 3 + pi^4 x^3 / 30 - pi^6 x^5 / 840 (whose own derivative at 0 is sinc''(0))
    safe = _safe_divisor(x)
    x2 = x * x
    series = x * _PI2 * (-1.0 / 3.0 + x2 * _PI2 * (1.0 / 30.0 - x2 * _PI2 / 840.0))
    return np.where(np.abs(x) < 1e-2, series, (np.cos(np.pi * safe) - np.sinc(safe)) / safe)


def _hypot_partial(a, b, *, out):
    return a / _safe_divisor(out)


def _hypot_partial_b(a, b, *, out):
    return b / _safe_divisor(out)


def _ratio(n, d):
    """``n / d``, with NumPy's inf or nan where ``d`` is a Python number equal to 0 (Python raises
    ``ZeroDivisionError`` there; NumPy's numbers, arrays and an engine's values never do)."""
    try:
        return n / d
    except ZeroDivisionError:
        with np.errstate(divide="ignore", invalid="ignore"):
            # (np.divide, not np.float64(d): d may be an engine's number, a dual of a Python 0.0)
            return np.divide(n, d)


#: 1 as a read-only 0-d array of each float and complex dtype (see ``_one``)
_ONES = {
    np.dtype(t): np.ones((), t)
    for t in (np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.clongdouble)
}
for _one_array in _ONES.values():
    _one_array.setflags(write=False)


def _one(v):
    """The 1 of a partial such as ``1 - v * v``: a 0-d array of ``v``'s dtype for a float or
    complex ndarray ``v``, else ``1.0``. The numbers are the same (NumPy casts a Python float to
    the array's dtype), but with a small array ``one - v`` costs half what ``1.0 - v`` does:
    NumPy converts a Python float on every call."""
    if type(v) is np.ndarray:
        one = _ONES.get(v.dtype)
        if one is not None:
            return one
    return 1.0


def _reciprocal(d):
    """``1 / d``, as ``_ratio`` gives it, with ``_one``'s 1."""
    return _ratio(_one(d), d)


def _over_squared_norm(n, y, x):
    """``n / (x² + y²)``, an arctan2 partial, and 0 at the origin, where arctan2 has no derivative
    (ChainRules.jl's convention for ``atan(y, x)``, and ``math.atan2``'s rule's)."""
    u = x * x + y * y
    at_origin = u == 0
    if np.ndim(at_origin) == 0:
        return 0.0 if at_origin else n / u
    if np.any(at_origin):
        return np.where(at_origin, 0.0, n / np.where(at_origin, 1.0, u))
    return n / u


def _asin_root(x):
    """``sqrt(1 - x^2)``, arcsin's derivative's denominator (and minus arccos's).

    For complex ``x`` it is ``sqrt(1 - x) sqrt(1 + x)``, the branch that arcsin and arccos
    themselves take, on their cuts too: at ``x = 1.4 + 0j`` NumPy's arcsin is the limit from
    above, ``pi/2 + 0.87j``, where ``sqrt(1 - x^2)`` is ``-0.98j``, and ``sqrt(-0.96 + 0j)`` would
    give ``+0.98j``. That needs the sign of a zero imaginary part kept: ``1.0 - x`` and
    ``x + 1.0`` would make ``-0.0`` a ``+0.0`` (1.0 is ``1 + 0j`` to NumPy), so they are written
    ``-(x - 1.0)`` and ``x - (-1.0)``, whose imaginary parts are ``-imag(x)`` and ``imag(x)``.
    """
    if type(x) is float or not np.iscomplexobj(x):
        return np.sqrt(1.0 - x * x)
    return np.sqrt(-(x - 1.0)) * np.sqrt(x - (-1.0))


def _in_scalar_dtype(x, c):
    """The constant partial ``c`` of a NumPy complex scalar ``x`` in its dtype, else ``c``. Such a
    scalar's cotangent keeps the type the product gives it (``match_input`` casts arrays only):
    a Python ``-1j`` would make a complex64 one's complex128, and ``1.0`` a float32."""
    return x.dtype.type(c) if isinstance(x, np.complexfloating) else c


# ----- the rows ----------------------------------------------------------------------------

# unary, holomorphic where NumPy takes complex input
elementwise(np.negative, lambda x: -1.0)
elementwise(np.positive, lambda x: 1.0)
elementwise(np.absolute, _abs_partial)  # np.abs; real output, so complex input is covered too
elementwise(np.fabs, np.sign)
elementwise(np.reciprocal, lambda x, *, out: -(out * out))
elementwise(np.exp, lambda x, *, out: out)
elementwise(np.exp2, lambda x, *, out: out * _LN2)
elementwise(np.expm1, lambda x, *, out: out + 1.0)
elementwise(np.log, _reciprocal)
elementwise(np.log2, lambda x: _reciprocal(x * _LN2))
elementwise(np.log10, lambda x: _reciprocal(x * _LN10))
elementwise(np.log1p, lambda x: _reciprocal(x + _one(x)))
elementwise(np.sqrt, lambda x, *, out: 0.5 / out)
elementwise(np.cbrt, lambda x, *, out: 1.0 / (3.0 * out * out))
elementwise(np.square, lambda x: 2.0 * x)
elementwise(np.sin, np.cos)
elementwise(np.cos, lambda x: -np.sin(x))
elementwise(np.tan, lambda x, *, out: _one(out) + out * out)
elementwise(np.arcsin, lambda x: 1.0 / _asin_root(x))
elementwise(np.arccos, lambda x: -1.0 / _asin_root(x))
elementwise(np.arctan, lambda x: 1.0 / (1.0 + x * x))
elementwise(np.sinh, np.cosh)
elementwise(np.cosh, np.sinh)
elementwise(np.tanh, lambda x, *, out: _one(out) - out * out)
# (x * x - (-1.0) is x * x + 1.0, keeping the sign of a zero imaginary part: see _asin_root)
elementwise(np.arcsinh, lambda x: 1.0 / np.sqrt(x * x - (-1.0)))
# sqrt(x - 1) sqrt(x + 1): arccosh's own branch for complex x, on its cut too (see _asin_root)
elementwise(np.arccosh, lambda x: 1.0 / (np.sqrt(x - 1.0) * np.sqrt(x - (-1.0))))
elementwise(np.arctanh, lambda x: _ratio(1.0, 1.0 - x * x))
for _f in (np.deg2rad, np.radians):
    elementwise(_f, lambda x: math.pi / 180.0)
for _f in (np.rad2deg, np.degrees):
    elementwise(_f, lambda x: 180.0 / math.pi)
elementwise(np.sinc, _sinc_partial)
elementwise(np.real, lambda x: _in_scalar_dtype(x, 1.0))  # dy = real(dz)
elementwise(np.imag, lambda x: _in_scalar_dtype(x, -1j) if np.iscomplexobj(x) else 0.0)  # dy = real(-i dz)

# binary
elementwise(np.add, lambda a, b: 1.0, lambda a, b: 1.0)
elementwise(np.subtract, lambda a, b: 1.0, lambda a, b: -1.0)
elementwise(np.multiply, lambda a, b: b, lambda a, b: a)
elementwise(np.divide, lambda a, b: _reciprocal(b), lambda a, b, *, out: _ratio(-out, b))  # np.true_divide
elementwise(np.power, _power_base_partial(np.power), lambda a, b, *, out: out * _log_abs_base(a))
elementwise(np.float_power, _power_base_partial(np.float_power), lambda a, b, *, out: out * _log_abs_base(a))
elementwise(np.arctan2, lambda y, x: _over_squared_norm(x, y, x), lambda y, x: _over_squared_norm(-y, y, x))
elementwise(np.hypot, _hypot_partial, _hypot_partial_b)
elementwise(np.logaddexp, lambda a, b, *, out: np.exp(a - out), lambda a, b, *, out: np.exp(b - out))
elementwise(np.logaddexp2, lambda a, b, *, out: np.exp2(a - out), lambda a, b, *, out: np.exp2(b - out))
for _f in (np.maximum, np.minimum):
    elementwise_joint(_f, 2, _select_partials(nan_wins=True))
for _f in (np.fmax, np.fmin):
    elementwise_joint(_f, 2, _select_partials(nan_wins=False))
for _f in (np.remainder, np.fmod):  # np.mod is np.remainder
    elementwise(_f, lambda a, b: 1.0, _rounded_quotient)
elementwise(np.copysign, lambda a, b: 1.0 - 2.0 * (np.signbit(a) != np.signbit(b)), lambda a, b: 0.0)
elementwise(np.heaviside, lambda x, h: 0.0, lambda x, h: x == 0)
elementwise(np.nextafter, lambda x, y: 1.0, lambda x, y: 0.0)  # x moved by one ulp: x's slope, almost everywhere
elementwise(np.ldexp, lambda x, e: np.ldexp(1.0, e), None)  # the exponent is an integer


# ----- hand-written rules ------------------------------------------------------------------


def _conj_call(f, x, kwargs):
    """``f(x)``: the array methods keep a 0-d array one, where the ufunc gives a NumPy scalar."""
    return f(x, **kwargs) if isinstance(x, np.ndarray) else np.conjugate(x, **kwargs)


def _conj_rules(f):
    # conj is not holomorphic: its derivative is conj itself, not a multiplication
    def rrule_conj(x, *args, **kwargs):
        _ufunc_call(np.conjugate, args, kwargs, 0)
        y = _conj_call(f, x, kwargs)

        def conj_pullback(dy):
            dy = unthunk(dy)
            return (_NO, input_matcher(y, dy)(x, conj(dy))) + (_NO,) * len(args)

        return y, conj_pullback

    def frule_conj(tangents, x, *args, **kwargs):
        _ufunc_call(np.conjugate, args, kwargs, 0)
        y = _conj_call(f, x, kwargs)
        dx = unthunk(tangents[1])
        return y, dx if isinstance(dx, AbstractZero) else match_output(y, conj(dx))

    rrule.register(f, batched=True)(rrule_conj)
    frule.register(f, batched=True)(frule_conj)


for _f in (np.conjugate, np.ndarray.conj, np.ndarray.conjugate):  # np.conj is np.conjugate
    _conj_rules(_f)


@rrule.register(np.angle, batched=True)
def rrule_angle(z, *args, **kwargs):
    deg = bind(np.angle, args, kwargs, ("deg",), {"deg": False})["deg"]
    y = np.angle(z, deg)
    p = _angle_partial(z, deg)

    def angle_pullback(dy):
        return (_NO,) + pull((z,), [p], y, dy) + (_NO,) * len(args)

    return y, angle_pullback


@frule.register(np.angle, batched=True)
def frule_angle(tangents, z, *args, **kwargs):
    deg = bind(np.angle, args, kwargs, ("deg",), {"deg": False})["deg"]
    y = np.angle(z, deg)
    return y, push((z,), [_angle_partial(z, deg)], y, tangents[1:2])


def _angle_partial(z, deg):
    """d angle(z) = real(p * dz) with p = -i conj(z) / |z|^2 (zero for real z, and at z = 0)."""
    if not np.iscomplexobj(z):
        return 0.0
    p = -1j * np.conj(z) / _safe_divisor(np.real(z * np.conj(z)))
    return p * (180.0 / math.pi) if deg else p


def _sign_parts(z, args: tuple, kwargs: dict):
    """``np.sign(z)`` and, for complex ``z``, ``(s, 1/|z|)`` of its derivative (None for real ``z``).

    Since NumPy 2 the sign of a complex ``z`` is ``s = z / |z|`` (0 at 0), smooth away from 0:
    ``ds = (dz - s Re(conj(s) dz)) / |z|`` (``dz`` less its part along ``s``, which only scales
    ``z``), a map that is its own adjoint under the real inner product; zero at ``z = 0`` and
    where ``where=`` is false. A real ``z``'s sign is piecewise constant: no derivative.
    """
    where = _ufunc_call(np.sign, args, kwargs, 0)
    y = np.sign(z, **kwargs)
    if not np.iscomplexobj(z):
        return y, None
    r = np.abs(z)
    zero = r == 0
    inv = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, r))
    if where is not None:
        inv = np.where(where, inv, 0.0)
    return y, (z * inv, inv)


def _sign_map(parts, d):
    """``(d - s Re(conj(s) d)) / |z|`` (see ``_sign_parts``); a batch of ``d`` broadcasts along its leading axis."""
    s, inv = parts
    return (d - s * np.real(np.conj(s) * d)) * inv


@rrule.register(np.sign, batched=True)
def rrule_sign(z, *args, **kwargs):
    if isinstance(z, _SEQUENCES):  # a list of complex numbers: the rule runs on NumPy's array of it
        return rrule_on_arrays(rrule_sign, (z, *args), kwargs)
    y, parts = _sign_parts(z, args, kwargs)
    n = len(args)

    def sign_pullback(dy):
        dy = unthunk(dy)
        if parts is None:
            return (_NO,) * (n + 2)
        if isinstance(dy, AbstractZero):
            return (_NO, _ZERO) + (_NO,) * n
        if carries_batch(y, dy):
            return (_NO, match_input_batch(z, _sign_map(parts, dy))) + (_NO,) * n
        return (_NO, match_input(z, _sign_map(parts, numpy_cotangent(y, dy)))) + (_NO,) * n

    return y, sign_pullback


@frule.register(np.sign, batched=True)
def frule_sign(tangents, z, *args, **kwargs):
    if isinstance(z, _SEQUENCES):
        return frule_on_arrays(frule_sign, tangents, (z, *args), kwargs)
    y, parts = _sign_parts(z, args, kwargs)
    dz = unthunk(tangents[1])
    if parts is None:
        return y, _NO
    if isinstance(dz, AbstractZero):
        return y, _ZERO
    return y, match_output(y, _sign_map(parts, dz))


@rrule.register(np.real_if_close, batched=True)
def rrule_real_if_close(a, *args, **kwargs):
    y = np.real_if_close(a, *args, **kwargs)

    def real_if_close_pullback(dy):
        return (_NO,) + pull((a,), [1.0], y, dy) + (_NO,) * len(args)

    return y, real_if_close_pullback


@frule.register(np.real_if_close, batched=True)
def frule_real_if_close(tangents, a, *args, **kwargs):
    y = np.real_if_close(a, *args, **kwargs)
    return y, push((a,), [1.0], y, tangents[1:2])


_NAN_TO_NUM = ("copy", "nan", "posinf", "neginf")


@rrule.register(np.nan_to_num, batched=True)
def rrule_nan_to_num(x, *args, **kwargs):
    y, ps, parts = _nan_to_num(x, args, kwargs)

    def nan_to_num_pullback(dy):
        cotangents = pull((x, *args), ps, y, dy)
        dy = unthunk(dy)
        if parts is None or isinstance(dy, AbstractZero):
            return (_NO, *cotangents)
        return (_NO, *pull((x,), [1.0], y, parts(dy)), *cotangents[1:])

    return y, nan_to_num_pullback


@frule.register(np.nan_to_num, batched=True)
def frule_nan_to_num(tangents, x, *args, **kwargs):
    y, ps, parts = _nan_to_num(x, args, kwargs)
    dy = push((x, *args), ps, y, tangents[1:])
    dx = unthunk(tangents[1])
    if parts is None or isinstance(dx, AbstractZero):
        return y, dy
    dy_x = push((x,), [1.0], y, (parts(dx),))
    return y, dy_x if isinstance(dy, AbstractZero) else dy_x + dy


#: which entries each replacement value of nan_to_num (given by position after ``copy``) takes
_REPLACED = (np.isnan, np.isposinf, np.isneginf)


def _nan_to_num(x, args, kwargs):
    """The primal of nan_to_num, the partials of ``x`` and its positional arguments, and for a complex
    ``x`` the map of a tangent or cotangent onto the parts it keeps (None for a real one): ``x``'s
    partial is 1 where it is finite (for a complex one, where both parts are: a part is kept or
    replaced apart from the other, a real-linear map, which ``parts`` is), a replacement value's 1
    where it replaced an entry (of the real or the imaginary part); ``copy`` and a default (None)
    replacement have none."""
    options = bind(np.nan_to_num, args, kwargs, _NAN_TO_NUM, {"copy": True, "nan": 0.0, "posinf": None, "neginf": None})
    if not options.pop("copy"):
        raise option_refused(
            np.nan_to_num, (x,), "copy=False overwrites its input, and rules do not differentiate mutation: call it "
            "with copy=True"
        )
    y = np.nan_to_num(x, **options)
    xs = array_or_active(x)
    complex_x = xs.dtype.kind == "c"

    def replaced(test):
        return test(xs.real) + 1j * test(xs.imag) if complex_x else test(xs)

    values = [None if v is None else replaced(test) for v, test in zip(args[1:], _REPLACED)]
    ps = [None if complex_x else np.isfinite(x), None, *values][: 1 + len(args)]
    if not complex_x:
        return y, ps, None
    real, imaginary = np.isfinite(xs.real), np.isfinite(xs.imag)
    return y, ps, lambda d: np.where(real, np.real(d), 0) + 1j * np.where(imaginary, np.imag(d), 0)


def _where_partials(cond, a, b):
    mask = cond if getattr(cond, "dtype", None) == np.bool_ else np.asarray(cond).astype(bool)
    return [None, mask, np.logical_not(mask)]


@rrule.register(np.where, batched=True)
def rrule_where(cond, *args):
    y = np.where(cond, *args)
    if not args:  # where(cond): the indices of the true entries

        def where_indices_pullback(dy):
            return _NO, _NO

        return y, where_indices_pullback
    ps = _where_partials(cond, *args)

    def where_pullback(dy):
        return (_NO,) + pull((cond,) + args, ps, y, dy)

    return y, where_pullback


@frule.register(np.where, batched=True)
def frule_where(tangents, cond, *args):
    y = np.where(cond, *args)
    if not args:
        return y, _NO
    return y, push((cond,) + args, _where_partials(cond, *args), y, tangents[1:4])


_INTERP = ("left", "right", "period")


def _interp_parts(x, xp, fp, args, kwargs):
    """``(lo, hi, w_lo, w_hi, slope, below, above, along_period)`` of ``np.interp(x, xp, fp)``: each
    ``x`` reads ``w_lo fp[lo] + w_hi fp[hi]`` (or ``left``/``right`` outside ``xp``) and has the slope
    of its segment, zero outside. At a knot the segment to its right is taken (the last one at the
    end). ``along_period``: dy/d period, where there is one (else None)."""
    o = dict(zip(_INTERP, args), **kwargs)
    points, values = array_or_active(xp), array_or_active(fp)
    entries = period = None
    if o.get("period") is not None:
        x_given, xp_given, period = x, points, o["period"]
        x, points, values, entries = _periodic_table(x, points, values, abs(period))
    n = points.size
    lo = np.clip(np.searchsorted(points, x, side="right") - 1, 0, max(n - 2, 0))
    hi = np.minimum(lo + 1, n - 1)
    width = points[hi] - points[lo]
    safe = np.where(width == 0, 1, width)
    below, above = x < points[0], x > points[-1]
    inside = ~(below | above)
    t = np.where(inside, (x - points[lo]) / safe, 0)
    slope = np.where(inside & (width != 0), (values[hi] - values[lo]) / safe, 0)
    w_lo = np.where(inside, 1 - t, 0) + (below if o.get("left") is None else 0)
    w_hi = np.where(inside, t, 0) + (above if o.get("right") is None else 0)
    along_period = None
    if entries is not None:  # the periodic table's points are copies of xp's and fp's entries
        # v % P moves with the period P by -floor(v / P), the table's two added points by -1 and +1 more
        shifts = _table_ends(len(entries)) - np.floor(xp_given / abs(period))[entries]
        moves = -np.floor(x_given / abs(period)) - (w_lo * shifts[lo] + w_hi * shifts[hi])
        along_period = np.sign(period) * slope * moves
        lo, hi = entries[lo], entries[hi]
    return lo, hi, w_lo, w_hi, slope, below, above, along_period


def _periodic_table(x, xp, fp, period):
    """``np.interp``'s reduction of a periodic call to a plain one: ``(x, xp, fp, entries)`` with ``x``
    and ``xp`` taken modulo the period, ``xp`` sorted and extended by one point on each side (its
    last less a period, its first plus a period), each table point reading ``xp[entries]`` and
    ``fp[entries]``. Away from the wrap ``x % period`` moves as ``x`` does, so the plain call's
    derivatives are the periodic one's, gathered back through ``entries``.

    >>> _periodic_table(np.array([25.0]), np.array([18.0, 6.0]), np.array([1.0, 2.0]), 24.0)[1:]
    (array([-6.,  6., 18., 30.]), array([1., 2., 1., 2.]), array([0, 1, 0, 1]))
    """
    xp = xp % period
    order = np.argsort(xp)
    entries = np.concatenate([order[-1:], order, order[:1]])
    points = xp[entries] + _table_ends(len(entries)) * period  # (a product, which an engine's period takes)
    return x % period, points, fp[entries], entries


def _table_ends(n: int) -> np.ndarray:
    """How the ``n`` points of ``np.interp``'s periodic table move with the period, besides ``xp``'s:
    the first (the last point less a period) by -1, the last (the first plus a period) by +1."""
    ends = np.zeros(n)
    ends[0], ends[-1] = -1.0, 1.0
    return ends


def _scatter_sum(shape: tuple, indices: tuple, values: tuple):
    """Zeros of ``shape`` with each of ``values`` added at its ``indices`` (repeats summed)."""
    return sum(scatter_add(shape, index, v) for index, v in zip(indices, values))


@rrule.register(np.interp, batched=True)
def rrule_interp(x, xp, fp, *args, **kwargs):
    """Piecewise linear: the derivative in ``x`` is the slope of its segment (one-sided at the
    knots), in ``fp`` the interpolation weights, in the sample points ``xp`` the slope times minus
    the weights (moving a segment's ends moves the point along it); ``left``/``right`` given by
    position get the cotangent of the points outside. With a ``period`` it is the plain call on
    NumPy's wrapped table (``_periodic_table``), which moves with the period."""
    y = np.interp(x, xp, fp, *args, **kwargs)
    parts = _interp_parts(array_or_active(x), xp, fp, args, kwargs)
    lo, hi, w_lo, w_hi, slope, below, above, along_period = parts
    ndim = np.ndim(y)

    def interp_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, _points_cotangent(xp, dy), dy) + tuple(_NO if a is None else dy for a in args)
        if getattr(dy, "ndim", 0) == ndim + 1:  # a batch of cotangents (a leading batch axis)
            return _interp_batch(x, xp, fp, args, parts, match_input_batch(y, dy))
        dy = array_or_active(dy)
        dx = match_input(x, dy * conj(slope))
        # the table's cotangents (scatters over its points) wait until asked for: it is mostly data
        dfp = Thunk(lambda: match_input(fp, _scatter_sum(np.shape(fp), (lo, hi), (dy * w_lo, dy * w_hi))))

        def points_cotangent():
            along = -dy * conj(slope)
            return _scatter_sum(np.shape(xp), (lo, hi), (along * w_lo, along * w_hi))

        dxp = _points_cotangent(xp, points_cotangent)
        bounds = tuple(_NO if a is None else match_input(a, np.sum(dy[m])) for a, m in zip(args, (below, above)))
        period = tuple(
            _NO if along_period is None else match_input(a, np.sum(dy * conj(along_period))) for a in args[2:]
        )
        return (_NO, dx, dxp, dfp, *bounds, *period)

    return y, interp_pullback


def _points_cotangent(xp, make):
    """The cotangent of ``np.interp``'s sample points: none for integer points, which cannot move
    (``make`` builds it, in a thunk, or is a zero to pass on)."""
    if array_or_active(xp).dtype.kind not in "fc":
        return _NO
    return make if isinstance(make, AbstractZero) else Thunk(lambda: match_input(xp, make()))


def _interp_batch(x, xp, fp, args, parts, dys):
    """``interp_pullback`` for a batch ``dys`` of cotangents: each row gathers into ``fp``'s
    cotangent with the interpolation weights, past the batch axis."""
    lo, hi, w_lo, w_hi, slope, below, above, along_period = parts
    rows = np.reshape(dys, (len(dys), -1))
    dx = match_input_batch(x, dys * conj(slope))

    def rows_scattered(table, values):  # each row's values summed into the table's points, lazily
        def scatter():
            out = np.zeros((len(dys), np.size(table)), dtype=np.result_type(values, w_lo))
            np.add.at(out, (slice(None), np.ravel(lo)), values * np.ravel(w_lo))
            np.add.at(out, (slice(None), np.ravel(hi)), values * np.ravel(w_hi))
            return match_input_batch(table, np.reshape(out, (len(dys), *np.shape(table))))

        return Thunk(scatter)

    dfp = rows_scattered(fp, rows)
    dxp = _NO
    if np.asarray(xp).dtype.kind in "fc":
        dxp = rows_scattered(xp, -rows * np.ravel(conj(slope)))
    bounds = tuple(
        _NO if a is None else match_input_batch(a, np.sum(rows * np.ravel(m), axis=1))
        for a, m in zip(args, (below, above))
    )
    period = tuple(
        _NO if along_period is None else match_input_batch(a, rows @ np.ravel(conj(along_period))) for a in args[2:]
    )
    return (_NO, dx, dxp, dfp, *bounds, *period)


@frule.register(np.interp, batched=True)
def frule_interp(tangents, x, xp, fp, *args, **kwargs):
    y = np.interp(x, xp, fp, *args, **kwargs)
    lo, hi, w_lo, w_hi, slope, below, above, along_period = _interp_parts(array_or_active(x), xp, fp, args, kwargs)
    # (a list's tangent is a structure of its entries' tangents)
    dx, dxp, dfp = (tangent_array(a, unthunk(t)) for a, t in zip((x, xp, fp), tangents[1:4]))
    terms = []
    if not isinstance(dx, AbstractZero):
        terms.append(slope * dx)
    if not isinstance(dxp, AbstractZero):  # the ends of each point's segment move: it slides along
        terms.append(-slope * (w_lo * dxp[..., lo] + w_hi * dxp[..., hi]))
    if not isinstance(dfp, AbstractZero):
        terms.append(w_lo * dfp[..., lo] + w_hi * dfp[..., hi])
    for a, mask, d in zip(args, (below, above, along_period), tangents[4:7]):
        d = unthunk(d)
        if a is not None and not isinstance(d, AbstractZero):
            terms.append(mask * np.reshape(d, np.shape(d) + (1,) * np.ndim(mask)))
    if not terms:
        return y, _ZERO
    return y, match_output(y, sum(terms[1:], terms[0]))


def _clip_rules(f, names: tuple[str, ...], defaults: dict):
    """Rules for ``np.clip(a, a_min, a_max)`` (or ``min=``, ``max=``) and ``ndarray.clip(min, max)``:
    bounds may be arrays or None."""
    lo_name, hi_name = names[:2]

    def clip_call(a, args, kwargs):
        bound = bind(f, args, kwargs, names, defaults)
        lo = bound[lo_name] if bound[lo_name] is not None else bound.get("min")
        hi = bound[hi_name] if bound[hi_name] is not None else bound.get("max")
        y = np.clip(a, lo, hi)
        # (a bound given as a list is compared as the array NumPy makes of it)
        pa, plo, phi = _clip_partials(a, *(b if b is None else array_or_active(b) for b in (lo, hi)))
        # partials of the positional arguments; a bound given by keyword is a constant
        partials = {lo_name: plo, "min": plo, hi_name: phi, "max": phi}
        ps = [None if v is None or v is np._NoValue else partials.get(n) for n, v in zip(names, args)]
        return y, (a, *args), [pa, *ps]

    def rrule_clip(a, *args, **kwargs):
        if any(isinstance(v, _SEQUENCES) for v in (a, *args)):
            return rrule_on_arrays(rrule_clip, (a, *args), kwargs)
        y, inputs, ps = clip_call(a, args, kwargs)

        def clip_pullback(dy):
            return (_NO,) + pull(inputs, ps, y, dy)

        return y, clip_pullback

    def frule_clip(tangents, a, *args, **kwargs):
        if any(isinstance(v, _SEQUENCES) for v in (a, *args)):
            return frule_on_arrays(frule_clip, tangents, (a, *args), kwargs)
        y, inputs, ps = clip_call(a, args, kwargs)
        return y, push(inputs, ps, y, tangents[1:])

    rrule.register(f, batched=True)(rrule_clip)
    frule.register(f, batched=True)(frule_clip)


def _clip_partials(a, lo, hi):
    """Masks of where the result of clip(a, lo, hi) = minimum(maximum(a, lo), hi) comes from.

    At a tie the cotangent goes to ``a``; where lo > hi NumPy returns hi, and so does the mask.
    """
    lo, hi = (None if v is None else array_or_active(v) for v in (lo, hi))  # (a bound given by keyword may be a list)
    below = a < lo if lo is not None else None
    above = a > hi if hi is not None else None
    if below is not None and above is not None and np.any(lo > hi):
        above = np.maximum(a, lo) > hi
        below = np.logical_and(below, np.logical_not(above))
    outside = below if above is None else above if below is None else np.logical_or(below, above)
    inside = np.logical_not(outside) if outside is not None else 1.0
    return inside, below, above


_clip_rules(np.clip, ("a_min", "a_max", "out", "min", "max"), {"a_min": None, "a_max": None, "min": None, "max": None})


def _clip_parameters(args) -> tuple:
    """np.clip's positions, ``min=`` and ``max=`` (keyword-only) after ``out``: where the engines pass
    one being differentiated."""
    P = inspect.Parameter
    bounds = ("a_min", "a_max", "out", "min", "max")
    return (P("a", P.POSITIONAL_ONLY), *(P(n, P.POSITIONAL_OR_KEYWORD, default=None) for n in bounds))


declare_parameters(np.clip, _clip_parameters)
_clip_rules(np.ndarray.clip, ("min", "max", "out"), {"min": None, "max": None})
# the ufunc behind both (``ndarray.clip`` calls it), which the tape and forward mode see on their values
_clip_rules(np._core.umath.clip, ("min", "max", "out"), {"min": None, "max": None})


def _full_like(a, fill_value, args: tuple, kwargs: dict):
    """``np.full_like``; for an engine's fill value (a Hessian's dual number, which NumPy's copyto
    would convert) the same array made from it by a broadcasting sum."""
    if not isinstance(fill_value, ActiveValue):
        return np.full_like(a, fill_value, *args, **kwargs)
    zeros = np.zeros_like(a, *args, **kwargs)
    return (zeros + fill_value).astype(zeros.dtype)


def _full(shape, fill_value, args: tuple, kwargs: dict):
    """``np.full``; for an engine's fill value, the same array made from it as in ``_full_like``."""
    if not isinstance(fill_value, ActiveValue):
        return np.full(shape, fill_value, *args, **kwargs)
    dtype = args[0] if args else kwargs.get("dtype")
    dtype = np.result_type(stood_for(fill_value)) if dtype is None else np.dtype(dtype)
    zeros = np.zeros(shape, dtype=dtype, order=args[1] if len(args) > 1 else kwargs.get("order", "C"))
    return (zeros + fill_value).astype(dtype)


def _fill_rules(f, make) -> None:
    """Rules for ``f(like, fill_value, *settings)`` (``np.full``, ``np.full_like``): every entry is the
    fill value (broadcast), whose cotangent sums the output's; ``make(like, fill_value, args,
    kwargs)`` computes the output.

    >>> y, back = rrule(np.full, (2, 3), 1.5)
    >>> back(np.ones((2, 3)))
    (NoTangent(), NoTangent(), 6.0)
    """
    name = f.__name__

    def fill_rrule(like, fill_value, *args, **kwargs):
        y = make(like, fill_value, args, kwargs)

        def fill_pullback(dy):
            return (_NO, _NO) + pull((fill_value,), [1.0], y, dy) + (_NO,) * len(args)

        fill_pullback.__qualname__ = f"{name}_pullback"
        return y, fill_pullback

    def fill_frule(tangents, like, fill_value, *args, **kwargs):
        y = make(like, fill_value, args, kwargs)
        return y, push((fill_value,), [1.0], y, tangents[2:3])

    fill_rrule.__qualname__, fill_frule.__qualname__ = f"rrule_{name}", f"frule_{name}"
    rrule.register(f, batched=True)(fill_rrule)
    frule.register(f, batched=True)(fill_frule)


_fill_rules(np.full_like, _full_like)
_fill_rules(np.full, _full)


# ----- no derivative -----------------------------------------------------------------------

non_differentiable(
    # ufuncs with piecewise-constant, boolean or integer results
    np.floor, np.ceil, np.rint, np.trunc, np.signbit, np.floor_divide, np.spacing,
    np.isnan, np.isinf, np.isfinite, np.isnat,
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift, np.gcd, np.lcm,
    # functions of the same kind
    np.round, np.around, np.fix, np.isneginf, np.isposinf, np.isclose, np.allclose, np.array_equal,
    np.array_equiv, np.iscomplex, np.iscomplexobj, np.isreal, np.isrealobj, np.isscalar, np.all, np.any,
    np.argmax, np.argmin, np.argsort, np.argpartition, np.argwhere, np.nonzero, np.flatnonzero,
    np.count_nonzero, np.searchsorted, np.lexsort, np.digitize, np.nanargmax, np.nanargmin,
    np.shape, np.ndim, np.size, np.result_type,
    # the same as ndarray methods
    np.ndarray.round, np.ndarray.argmax, np.ndarray.argmin, np.ndarray.argsort, np.ndarray.argpartition,
    np.ndarray.nonzero, np.ndarray.searchsorted, np.ndarray.all, np.ndarray.any,
)  # fmt: skip
# buffers made like their argument: an engine's value gives one of its own kind, which holds its values
non_differentiable(np.zeros_like, np.ones_like, np.empty_like, like_arguments=True)
