"""Writes into the tape's arrays: ``y[key] = v``, ``y[key] += v``, and the views that must see them.

A write is one operation on the tape, ``write_into(buffer, key, value)``: the array with
``value`` written at ``key``. Its pullback splits the cotangent of the written array into the
value's part (``dy[key]``, summed where the value was broadcast) and the buffer's (``dy`` with
that part zeroed), as for JAX's ``x.at[key].set(value)``.

Cost. The first write into an array copies it (a rule may have captured it, or an argument's
memory may be under it); the array then belongs to the buffer, and later writes go into it in
place as long as nothing but indexing read it since the previous write (indexing's pullback
keeps only the array's shape, and a part read from such an array is a copy). Backwards, the
sweep hands a write the cotangent it owns (``backward.sweep``), which the write zeroes in place
at ``key``: so n scalar writes into one n-entry buffer cost O(n) in all, forward and backward.
An operation that did read the buffer in between (``np.sum(out)``, ``out * 2``) makes the next
write copy it again.

Views. ``v = y[1:]`` (basic indexing) is a view in NumPy: a later write into ``y`` shows in
``v``. The tape keeps a weak list of such views of each array and, after a write, rebinds every
live one to a fresh read of the written array; a write into a view (``v[0] = w``, ``v += w``)
writes into its array at the view's key. ``y.real`` and ``y.imag`` are views too, and
``y.real = w`` (or a write into the view) writes all of ``y`` with that part replaced
(``write_part``). An array that another operation made share memory with
(``y.reshape``, ``y.T``, ``np.asarray(y)``), and an argument, take no writes: the error names the line;
where the operation took a view by indexing (``y[i].reshape``), only the part of the array it views
takes none (``core.views.ViewedParts``).
"""

from __future__ import annotations

import operator

import numpy as np

from ...core.active import ActiveValue, part_assignment_refused, stood_for, with_part
from ...core.errors import DroppedDerivativeError
from ...core.indexing import ellipsis_spelled_out
from ...core.projection import match_input, match_input_batch
from ...core.tangents import AbstractZero, NoTangent, ZeroTangent, unthunk
from ...core.views import ViewedParts, writes_viewed
from . import tracer
from .tracer import WRITE, _current, apply

_NO = NoTangent()
_ZERO = ZeroTangent()


def write_into(buffer, key, value):
    """``buffer[key] = value`` as a function: a copy of ``buffer`` with ``value`` written into it.

    >>> write_into(np.zeros(3), slice(1, None), 2.0)
    array([0., 2., 2.])
    """
    return _written(np.copy(buffer), key, value)  # (a forward-mode dual's copy takes writes too)


def _written(out, key, value):
    """``out[key] = value`` into ``out``, which the caller owns; ``out`` (or, for a plain array an
    outer differentiation's value is written into, that engine's buffer holding it)."""
    if type(out) is np.ndarray and isinstance(value, ActiveValue):
        # an outer differentiation's value (a dual, in a Hessian) goes into that engine's buffer
        held = value.buffer_holding(out)
        out = out if held is None else held
    out[key] = value
    return out


def _repeats(shape: tuple, key) -> bool:
    """Whether an integer-array key writes some position twice (where only the last write counts)."""
    parts = key if type(key) is tuple else (key,)
    if not any(isinstance(p, (np.ndarray, list)) and np.asarray(p).dtype.kind in "iu" for p in parts):
        return False
    positions = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)[key]
    return np.unique(positions).size < np.size(positions)


def write_rule(in_place: bool):
    """The rule of ``write_into``, writing into ``buffer`` itself when ``in_place`` (the tape owns it).

    Its pullback takes ``(dy, owned)``, ``owned`` saying whether the sweep owns ``dy`` (then it is
    zeroed in place), and returns ``((df, dbuffer, dkey, dvalue), dbuffer_is_owned)``."""

    def write_into_rrule(buffer, key, value):
        shape = np.shape(buffer)
        if not tracer._is_basic(key) and _repeats(shape, key):
            raise DroppedDerivativeError(
                f"a write whose index repeats a position (only the last value stays){_at()}: the tape engine "
                "writes each position once per assignment; write the positions one by one, or use np.where"
            )
        out = _written(buffer, key, value) if in_place else write_into(buffer, key, value)
        dtype = np.dtype(value.dtype) if isinstance(value, ActiveValue) else np.asarray(value).dtype
        # what `match_input` needs of the value: shape, dtype, realness (a view of one zero, not the value)
        value_like = np.broadcast_to(np.zeros((), dtype), np.shape(value)) if np.ndim(value) else dtype.type(0)
        if type(value) is float:
            value_like = 0.0
        # an integer buffer truncates what is written into it: no derivative passes
        truncates = np.dtype(getattr(buffer, "dtype", np.float64)).kind not in "fc"
        ndim = len(shape)

        def write_into_pullback(dy, owned=False):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (_NO, dy, _NO, dy), False
            batch = np.ndim(dy) == ndim + 1
            if isinstance(dy, np.ndarray):
                if not owned or type(dy) is not np.ndarray or not dy.flags.writeable:
                    dy = np.array(dy)  # (a structured seed, a subclass, becomes a plain array)
                at = np.moveaxis(dy, 0, -1) if batch else dy
                k = ellipsis_spelled_out(key, ndim) if batch else key
                piece = at[k]
                if truncates:
                    dvalue = _ZERO
                else:
                    part = piece.copy() if isinstance(piece, np.ndarray) else piece
                    if batch:
                        part = np.moveaxis(np.asarray(part), -1, 0)
                    dvalue = match_input_batch(value_like, part) if batch else match_input(value_like, part)
                at[k] = 0
                return (_NO, dy, _NO, dvalue), True
            # another engine's array (a dual, in a Hessian), which takes no write: zeroed by a mask
            keep = np.ones(shape, dtype=bool)
            keep[key] = False
            if batch:
                raise TypeError("a batch of cotangents of another engine's array through a write")
            piece = dy[key] if shape else dy  # (a 0-d array's cotangent may be a dual number, written whole)
            dvalue = _ZERO if truncates else match_input(value_like, piece)
            return (_NO, dy * keep, _NO, dvalue), False

        return out, write_into_pullback

    write_into_rrule.batched = True
    return write_into_rrule


tracer.RESULT_IS_ITS_OWN.add(write_into)
_IN_PLACE = write_rule(True)
_COPYING = write_rule(False)


def _at() -> str:
    where = tracer.user_location()
    return f" (at {where})" if where else ""


def _foreign(value, trace) -> bool:
    """Whether ``value`` holds a value the write cannot record on ``trace``: another trace's, or
    another engine's of a differentiation nested inside it."""
    if isinstance(value, tracer.Tracked):
        return value._trace is not trace
    if type(value) in (tuple, list):
        return any(_foreign(v, trace) for v in value)
    return isinstance(value, ActiveValue) and value.differentiation_order() > trace.order


def _nested_refused() -> TypeError:
    return TypeError(
        f"a value of a differentiation nested inside the tape's (a dual of cr.jacobian or cr.derivative, or "
        f"an inner gradient's value) cannot be written into the tape's array{_at()}: build the array with "
        "np.stack or np.concatenate"
    )


def refuse_shared(box, key) -> None:
    """Raise where ``box`` takes no write at ``key``: an argument, or an array another one shares
    memory with there (where a reshape of a view shares a part of it, the writes beside it go on)."""
    reason = box._aliased
    if not reason:
        return
    if reason == "argument":
        raise TypeError(
            f"assignment into an argument being differentiated (x[...] = v, x += v){_at()}: it would change the "
            "caller's array; write into a copy (x = x.copy()) or build the result out of place (np.where)"
        )
    if type(reason) is ViewedParts:
        memory = stood_for(box._value)
        box._aliased = reason = reason.moved_to(memory)
        if reason is not True and not writes_viewed(reason, memory, key):
            return
    raise TypeError(
        f"writing into an array (x[...] = v) after another array came to share its memory (a reshape, "
        f"a transpose, np.asarray of it or of a view of the part written){_at()}: the tape engine writes into "
        "an array only while no other array but its views by indexing sees it; copy the other array "
        "(y = x.reshape(...).copy()) or write before sharing"
    )


def write(box, key, value) -> None:
    """``box[key] = value`` for a tracked array: recorded, then the box and its views rebound."""
    trace = box._trace
    if _foreign(value, trace) or (isinstance(key, tuple) and _foreign(key, trace)):
        raise _nested_refused()
    if type(value) in (tuple, list) and any(isinstance(v, tracer.Tracked) for v in _leaves(value)):
        value = apply(np.array, (value,), {})  # what NumPy does with a sequence written into an array
    view = box._view_of
    if view is not None:  # a write through a view is a write into its array at the view's key
        write_at(view[0], view[1], _recorded_write(box, key, value, _COPYING))
        return
    refuse_shared(box, key)
    in_place = box._writable and trace is _current.get() and not _read_since(trace, box._slot, box._owned_at)
    result = _recorded_write(box, key, value, _IN_PLACE if in_place else _COPYING)
    box._value = result._value
    box._slot = result._slot
    box._writable = True
    refresh_views(box)
    box._owned_at = len(trace.tape)


def write_part(box, name: str, value) -> None:
    """``z.real = v`` or ``z.imag = v`` (``name``) for a tracked array: NumPy writes ``v`` into that
    part of ``z``'s memory, which ``z`` and its views see; recorded as the write of all of ``z``,
    ``z[...] = v + 1j * z.imag`` (``core.active.with_part``). Refused where another array may
    share ``z``'s memory (an argument, a reshape), as ``z[...] = w`` is."""
    if box._view_of is None and box._aliased:
        raise part_assignment_refused(name, tracer.user_location())
    write(box, Ellipsis, with_part(box, name, value))


def write_at(box, key, value) -> None:
    """``box[key] = value``, or for the key of a view of a part, ``box.real = value`` (``"real"``)."""
    if type(key) is str:
        write_part(box, key, value)
    else:
        write(box, key, value)


def _recorded_write(box, key, value, rule):
    """``write_into(box, key, value)`` recorded on ``box``'s trace as a write (see ``backward.sweep``)."""
    trace = box._trace
    result = apply(write_into, (box, key, value), {}, rule)
    if type(result) is not type(box) or result._trace is not trace:
        raise _nested_refused()
    entry = trace.tape[-1]
    trace.tape[-1] = (entry[0], entry[1], entry[2], WRITE, entry[4])
    return result


def _leaves(value):
    for v in value:
        if type(v) in (tuple, list):
            yield from _leaves(v)
        else:
            yield v


def _read_since(trace, slot: int, start: int) -> bool:
    """Whether an operation other than indexing or a write read ``slot`` from tape entry ``start`` on
    (its pullback may hold the array's values, which a write in place would change)."""
    tape = trace.tape
    getitem = operator.getitem
    for i in range(start, len(tape)):
        _, _, f, first, second = tape[i]
        if type(second) is int:  # a hot path's entry: the slots of its two arguments
            if (first == slot or second == slot) and f is not getitem:
                return True
        elif f is not getitem and f is not write_into:
            for _, s in second:
                if s == slot:
                    return True
    return False


def refresh_views(box) -> None:
    """After a write into ``box`` (or an update of it), each live view of it reads it afresh."""
    views = box._views
    if not views:
        return
    kept = []
    for ref in list(views):  # (the reads below register new views, dropped afterwards)
        view = ref()
        if view is None:
            continue
        key = view._view_of[1]
        fresh = apply(getattr, (box, key), {}) if type(key) is str else tracer.binary(operator.getitem, box, key)
        view._value, view._slot = fresh._value, fresh._slot
        view._writable = False
        del fresh
        refresh_views(view)
        kept.append(ref)
    box._views = kept  # (the reads above registered boxes that are gone now)
