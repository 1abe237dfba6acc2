"""Adding tangents: ``add`` (never mutates), ``iadd`` (may mutate), and ``accumulate`` (the engines' step).

The ownership rule every engine follows
--------------------------------------
An engine may write into an array only if the engine allocated it itself. It never writes into
a user's input, a cotangent the user passed in, or an array a rule returned or closed over (a
rule may hand back its seed, or an array it keeps for a second call of its pullback). So the
first time a second contribution arrives for a variable whose cotangent is *borrowed*, the
engine makes one owned copy (fused with the addition); every later contribution is added into
that copy in place, and an ``InplaceableThunk`` adds itself into it without building its value.
``accumulate(acc, owned, dx)`` is that step, the only one the engines use.
"""

from __future__ import annotations

from numbers import Number

import numpy as np

from .active import ENGINE_INSTALLED
from .tangents import AbstractZero, InplaceableThunk, RefusedThunk, Tangent, Thunk, ZeroTangent, unthunk

_FAST_SCALARS = (float, int, complex)
_ZERO = ZeroTangent()


def add(a, b):
    """The sum of two tangents of the same primal, without mutating either.

    Defined for every pair of tangent kinds: numbers, arrays, zeros, thunks, inplaceable thunks,
    structural tangents, and plain tuples/lists/dicts (added element by element, not concatenated).

    >>> import numpy as np, chainrules as cr
    >>> cr.add(1.0, cr.ZeroTangent())
    1.0
    >>> cr.add((1.0, 2.0), (3.0, 4.0))
    (4.0, 6.0)
    """
    ta, tb = type(a), type(b)
    if ta in _FAST_SCALARS and tb in _FAST_SCALARS:
        return a + b
    if isinstance(a, AbstractZero):
        return b
    if isinstance(b, AbstractZero):
        return a
    if isinstance(a, RefusedThunk):  # (the sum cannot be given either: read, it raises the refusal)
        return a
    if isinstance(b, RefusedThunk):
        return b
    # An inplaceable thunk adds itself into a copy of the other side instead of building its value,
    # unless an engine is installed (its value may then hold the engine's values: see ENGINE_INSTALLED).
    if isinstance(b, InplaceableThunk):
        a = unthunk(a)
        if _is_array(a) and not ENGINE_INSTALLED.get():
            return _add_inplaceable(a.copy(), b)
    elif isinstance(a, InplaceableThunk):
        b = unthunk(b)
        if _is_array(b) and not ENGINE_INSTALLED.get():
            return _add_inplaceable(b.copy(), a)
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero):
        return b
    if isinstance(b, AbstractZero):
        return a
    if isinstance(a, Tangent) or isinstance(b, Tangent):
        return _add_structural(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        _check_same_length(a, b)
        return type(a)(add(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: add(a.get(k, _ZERO), b.get(k, _ZERO)) for k in {**a, **b}}
    return a + b


def _add_inplaceable(buffer: np.ndarray, t: InplaceableThunk):
    out = t.add_into(buffer)
    if out is not buffer:
        raise _broken_add_into(t, out)
    return out


def _broken_add_into(t: InplaceableThunk, out) -> RuntimeError:
    return RuntimeError(
        f"{t!r}: add_into must add into the accumulator it is given and return it; it returned a {type(out).__name__}"
    )


def _add_structural(a, b):
    if isinstance(a, Tangent) and isinstance(b, Tangent):
        Pa, Pb = type(a).primal_type, type(b).primal_type
        if Pa is not Pb:
            raise TypeError(
                f"cannot add a tangent of {Pa.__qualname__} to a tangent of {Pb.__qualname__}: "
                f"{type(a).__name__} + {type(b).__name__}"
            )
        return _add_backings(type(a), a.backing, b.backing)
    t, other = (a, b) if isinstance(a, Tangent) else (b, a)
    if isinstance(other, (tuple, list)) and isinstance(t.backing, tuple):
        return _add_backings(type(t), t.backing, tuple(other))
    if isinstance(other, dict) and isinstance(t.backing, dict):
        return _add_backings(type(t), t.backing, other)
    raise TypeError(f"cannot add {type(t).__name__} and a {type(other).__name__}")


def _add_backings(cls, a, b):
    from .tangents import _rebuild

    if isinstance(a, tuple):
        _check_same_length(a, b)
        return _rebuild(cls, tuple(add(x, y) for x, y in zip(a, b)))
    return _rebuild(cls, {k: add(a.get(k, _ZERO), b.get(k, _ZERO)) for k in {**a, **b}})


def _check_same_length(a, b):
    if len(a) != len(b):
        raise ValueError(f"cannot add tangents of {len(a)} and {len(b)} elements")


def _is_array(x) -> bool:
    return type(x) is np.ndarray


def _broadcasts_into(shape: tuple, target: tuple) -> bool:
    if shape == target:
        return True
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def is_inplaceable_destination(x) -> bool:
    """Whether ``x`` can be overwritten by ``iadd``: a writeable float or complex NumPy array."""
    return _is_array(x) and x.flags.writeable and x.dtype.kind in "fc"


def iadd(acc, b):
    """``acc + b``, overwriting ``acc`` when it is a writeable array (ChainRules' ``add!!``).

    The caller vouches that it owns ``acc``. An ``InplaceableThunk`` adds itself into ``acc``
    without evaluating its value; where ``acc`` cannot hold the sum in place (a Python float, a
    dtype or shape the sum does not fit) a new value is returned. Always use the return value.

    >>> import numpy as np, chainrules as cr
    >>> acc = np.zeros(2)
    >>> cr.iadd(acc, np.ones(2)) is acc
    True
    >>> cr.iadd(1.0, 2.0)
    3.0
    """
    if type(acc) in _FAST_SCALARS and type(b) in _FAST_SCALARS:
        return acc + b
    if isinstance(b, AbstractZero):
        return acc
    if isinstance(acc, AbstractZero):
        return b
    if isinstance(b, RefusedThunk):
        return b
    if not is_inplaceable_destination(acc):
        return add(acc, b)
    if isinstance(b, InplaceableThunk) and not ENGINE_INSTALLED.get():
        return _add_inplaceable(acc, b)
    b = unthunk(b)
    if isinstance(b, AbstractZero):
        return acc
    if isinstance(b, (np.ndarray, np.generic, Number)):
        b_dtype = b.dtype if isinstance(b, (np.ndarray, np.generic)) else np.result_type(b)
        fits_dtype = np.can_cast(np.result_type(acc.dtype, b_dtype), acc.dtype, "same_kind")
        if fits_dtype and _broadcasts_into(np.shape(b), acc.shape):
            np.add(acc, b, out=acc)
            return acc
    return add(acc, b)


def accumulate(acc, owned: bool, dx) -> tuple[object, bool]:
    """One accumulation step of an engine: returns ``(acc + dx, owned)``.

    ``owned`` says whether the engine allocated ``acc`` itself. A borrowed array is copied
    once, fused with the first addition into it; an owned one is added into in place. A new
    variable starts as ``(ZeroTangent(), False)``.

    >>> import numpy as np, chainrules as cr
    >>> x = np.ones(3)                       # e.g. a cotangent a rule returned
    >>> acc, owned = cr.accumulate(cr.ZeroTangent(), False, x)
    >>> acc is x, owned                      # borrowed: not copied yet
    (True, False)
    >>> acc, owned = cr.accumulate(acc, owned, x)
    >>> acc is x, owned, x                   # one copy, and x untouched
    (False, True, array([1., 1., 1.]))
    """
    if type(acc) in _FAST_SCALARS and type(dx) in _FAST_SCALARS:
        return acc + dx, False
    if type(acc) is np.ndarray:
        if type(dx) is Thunk:
            dx = dx.unthunk()
        if type(dx) is np.ndarray and dx.shape == acc.shape and dx.dtype == acc.dtype and acc.dtype.kind in "fc":
            # two arrays of one shape and float dtype (the common step): what iadd and add do, without their checks
            if owned and acc.flags.writeable:
                np.add(acc, dx, out=acc)
                return acc, True
            out = acc + dx
            return out, type(out) is np.ndarray  # (a 0-d sum is a NumPy scalar)
    if owned and isinstance(dx, InplaceableThunk) and type(acc) is np.ndarray:
        # the loop's common step (seed 004's X[i]), as iadd takes it; written out, because
        # it runs once per loop iteration and the helpers' calls cost as much as the scatter
        if acc.dtype.kind in "fc" and acc.flags.writeable and not ENGINE_INSTALLED.get():
            out = dx.add_into(acc)
            if out is not acc:
                raise _broken_add_into(dx, out)
            return acc, True
    if isinstance(dx, AbstractZero):
        return acc, owned
    if isinstance(acc, AbstractZero):
        return dx, False
    if owned:
        out = iadd(acc, dx)
    else:
        out = add(acc, dx)  # a new array: the one copy of the borrowed accumulator
    return out, is_inplaceable_destination(out)
