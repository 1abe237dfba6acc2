"""The backward sweep: the tape's pullbacks in reverse recorded order, in one loop.

Cotangents live in a list indexed by slot. An entry whose output cotangent is zero is skipped;
otherwise its pullback runs and each tracked argument's cotangent is accumulated with
``chainrules.accumulate``, which follows the ownership rule (an array is written only if this
sweep allocated it; the first array a slot receives is borrowed). An output slot's cotangent
is dropped as soon as its pullback has run, and with ``release=True`` so is the entry itself
(and with it the arrays its pullback captured), so memory falls as the sweep proceeds.
"""

from __future__ import annotations

from ...core.accumulation import accumulate
from ...core.errors import callable_name
from ...core.tangents import AbstractThunk, AbstractZero, NoTangent, Tangent, ZeroTangent

_ZERO = ZeroTangent()
_NO = NoTangent()


def part(ct, key, index: int | None = None):
    """The cotangent of one field of a structure from the structure's cotangent.

    ``ct`` may be a zero, a thunk, a ``Tangent``, or a plain tuple, list or dict; ``key`` is
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
    if isinstance(ct, (tuple, list)):
        return ct[key if index is None else index]
    return getattr(ct, key)


def _part_path(grads: tuple, path: tuple):
    ct = grads[path[0]]
    for key in path[1:]:
        ct = part(ct, key)
    return ct


def _gather(template, cts: list):
    """The cotangent of a structured output from its slots (emptied as they are read), or None if zero."""
    values = []
    nonzero = False
    for _, child in template.children:
        if child is None:
            value = _NO
        elif type(child) is int:
            value = cts[child]
            cts[child] = None
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
    if hasattr(T, "_fields"):
        return Tangent[T](**{key: v for (key, _), v in zip(template.children, values)})
    return Tangent[T](*values)


def sweep(tape: list, cts: list, owned: list, release: bool = False) -> None:
    """Run the tape's pullbacks backwards, accumulating into ``cts`` (indexed by slot)."""
    zero, no, thunk = _ZERO, _NO, AbstractThunk
    for i in range(len(tape) - 1, -1, -1):
        pullback, out, parents, f = tape[i]
        if release:
            tape[i] = None
        if type(out) is int:
            dy = cts[out]
            cts[out] = None
            if dy is zero or dy is no or isinstance(dy, AbstractZero):
                continue
        else:
            dy = _gather(out, cts)
            if dy is None:
                continue
        if isinstance(dy, thunk):
            # Evaluate now: the pullback would, and a chain of unevaluated thunks would recurse.
            dy = dy.unthunk()
        try:
            grads = pullback(dy)
        except Exception as err:
            err.add_note(f"(while pulling back through {callable_name(f)} on the tape)")
            raise
        for pos, slot in parents:
            dx = grads[pos] if type(pos) is int else _part_path(grads, pos)
            acc = cts[slot]
            if acc is zero:
                cts[slot] = dx  # borrowed: owned[slot] is still False
            elif type(acc) is float and type(dx) is float:
                cts[slot] = acc + dx
            else:
                cts[slot], owned[slot] = accumulate(acc, owned[slot], dx)
