"""The backward sweep: the tape's pullbacks in reverse recorded order, in one loop.

Cotangents live in a dict from slot to cotangent, holding only the nonzero ones still needed
(a slot is absent until something reaches it, and removed when its pullback runs), so the
sweep's own memory follows the live cotangents rather than the length of the tape. An entry
whose output cotangent is zero is skipped; otherwise its pullback runs and each tracked
argument's cotangent is accumulated with ``chainrules.accumulate``, which follows the ownership
rule (an array is written only if this sweep allocated it: ``owned`` is the set of such slots;
the first array a slot receives is borrowed). With ``release=True`` each entry also leaves the
tape as it runs (and with it the arrays its pullback captured), so memory falls as the sweep
proceeds.
"""

from __future__ import annotations

import numpy as np

from ...core.accumulation import accumulate
from ...core.active import ENGINE_INSTALLED
from ...core.errors import callable_name
from ...core.tangents import AbstractThunk, AbstractZero, InplaceableThunk, NoTangent, Tangent, ZeroTangent
from .tracer import PAIRS, WRITE

_ZERO = ZeroTangent()
_NO = NoTangent()
_F64 = np.float64
_ARRAY = np.ndarray


def part(ct, key, index: int | None = None):
    """The cotangent of one field of a structure from the structure's cotangent.

    ``ct`` may be a zero, a thunk, a ``Tangent``, or a plain tuple, list, array or dict; ``key`` is
    the field name (or dict key), ``index`` the position for tuple-like cotangents.
    """
    if isinstance(ct, AbstractThunk):
        ct = ct.unthunk()
    if isinstance(ct, AbstractZero):
        return ct
    if isinstance(ct, Tangent):
        if isinstance(ct.backing, tuple):
            return ct.backing[key if index is None else index]
        return ct[key]
    if isinstance(ct, dict):
        return ct.get(key, _ZERO)
    # an array stands for a tuple or list of numbers or equal-shaped arrays (``cr.jacobian`` seeds
    # such an output with rows of the identity of ``np.asarray(y)``'s shape): its rows are the fields
    if isinstance(ct, (tuple, list, np.ndarray)):
        return ct[key if index is None else index]
    return getattr(ct, key)


def _part_path(grads: tuple, path: tuple):
    ct = grads[path[0]]
    for key in path[1:]:
        ct = part(ct, key)
    return ct


def _gather(template, cts: dict):
    """The cotangent of a structured output from its slots (removed as they are read), or None if zero."""
    values = []
    nonzero = False
    for _, child in template.children:
        if child is None:
            value = _NO
        elif type(child) is int:
            value = cts.pop(child, _ZERO)
        else:
            value = _gather(child, cts)
            if value is None:
                value = _ZERO
        if not isinstance(value, AbstractZero):
            nonzero = True
        values.append(value)
    if not nonzero:
        return None
    T = template.type
    if issubclass(T, (tuple, list)) and not hasattr(T, "_fields"):
        return Tangent[T](*values)
    by_key = {key: v for (key, _), v in zip(template.children, values)}
    # (a dict subclass's too, as the inputs' cotangents: a ``Tangent`` takes a mapping only for ``dict``)
    return Tangent[dict](by_key) if issubclass(T, dict) else Tangent[T](**by_key)


def sweep(tape: list, cts: dict, owned: set, release: bool = False) -> None:
    """Run the tape's pullbacks backwards, accumulating into ``cts`` (slot -> cotangent)."""
    pop, get = cts.pop, cts.get
    if release:
        # Entries are popped from the end of the tape, each freed with its pullback once it has
        # run; `iter(pop, None)` stops at a None put first (a C loop, no copy of the tape).
        tape.insert(0, None)
        entries = iter(tape.pop, None)
    else:
        entries = reversed(tape)  # a kept tape is read in place: no copy of it
    for pullback, out, f, first, second in entries:
        if type(out) is int:
            dy = pop(out, None)
            td = type(dy)
            if td is not float and td is not _F64 and td is not _ARRAY:  # numbers and arrays need no checks
                if dy is None or isinstance(dy, AbstractZero):
                    continue
                if isinstance(dy, AbstractThunk):
                    # Evaluate now: the pullback would, and a chain of unevaluated thunks would recurse.
                    dy = dy.unthunk()
        else:
            dy = _gather(out, cts)
            if dy is None:
                continue
        if first == WRITE:
            _pull_write(pullback, dy, out in owned, f, second, cts, owned)
            continue
        try:
            grads = pullback(dy)
        except Exception as err:
            err.add_note(f"(while pulling back through {callable_name(f)} on the tape)")
            raise
        if first >= 0:  # the hot paths' entries: the slots of the first and second argument
            dx = grads[1]
            acc = get(first)
            if acc is None:
                cts[first] = dx  # borrowed: not in `owned`
            elif type(acc) is float and type(dx) is float:
                cts[first] = acc + dx
            elif (
                type(acc) is _ARRAY
                and isinstance(dx, InplaceableThunk)
                and first in owned
                and not ENGINE_INSTALLED.get()
            ):
                # a loop's x[i]: scattered into the array this sweep owns (accumulate's step, inline)
                out = dx.add_into(acc)
                if out is not acc:
                    raise broken_add_into(dx, out)
            else:
                cts[first] = add_to(acc, first, dx, owned)
        elif first == PAIRS:  # (position or path, slot) pairs
            for pos, slot in second:
                dx = grads[pos] if type(pos) is int else _part_path(grads, pos)
                acc = get(slot)
                cts[slot] = dx if acc is None else add_to(acc, slot, dx, owned)
            continue
        if second >= 0:
            dx = grads[2]
            acc = get(second)
            if acc is None:
                cts[second] = dx
            elif type(acc) is float and type(dx) is float:
                cts[second] = acc + dx
            else:
                cts[second] = add_to(acc, second, dx, owned)


def _pull_write(pullback, dy, dy_owned: bool, f, pairs: list, cts: dict, owned: set) -> None:
    """A write's entry (``writes.py``): its pullback is told whether the sweep owns ``dy``, which it
    then zeroes in place at the written key, and says whether the array's cotangent it returns is
    one the sweep owns (so the previous write zeroes it in place in turn: O(n) for n writes)."""
    try:
        grads, fresh = pullback(dy, dy_owned)
    except Exception as err:
        err.add_note(f"(while pulling back through {callable_name(f)} on the tape)")
        raise
    for pos, slot in pairs:
        dx = grads[pos] if type(pos) is int else _part_path(grads, pos)
        acc = cts.get(slot)
        if acc is None:
            cts[slot] = dx
            if pos == 1 and fresh:
                owned.add(slot)
        else:
            cts[slot] = add_to(acc, slot, dx, owned)


def add_to(acc, slot: int, dx, owned: set):
    """``acc + dx`` for ``slot``, in place when the sweep owns ``acc`` (``chainrules.accumulate``)."""
    total, is_owned = accumulate(acc, slot in owned, dx)
    if is_owned:
        owned.add(slot)
    else:
        owned.discard(slot)
    return total


def broken_add_into(dx, out) -> RuntimeError:
    return RuntimeError(
        f"{dx!r}: add_into must add into the accumulator it is given and return it; it returned a {type(out).__name__}"
    )
