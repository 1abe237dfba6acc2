"""The parts of an array that views of it were given, as byte ranges of its memory.

A reverse-mode engine keeps the values an operation read for its pullback; where that read is a
view of an array the function later writes into (``row = out[i]``, or a reshape of it), the
write must not reach the part the view shares, and may go anywhere else. Both reverse engines
record those parts with ``viewed`` and ask ``writes_viewed`` before a write.
"""

from __future__ import annotations

import bisect

import numpy as np

from .active import ActiveValue, stood_for


def _is_array(x) -> bool:
    """An array, or an outer differentiation's value standing for one (a dual array, in a Hessian)."""
    return isinstance(x, np.ndarray) or (isinstance(x, ActiveValue) and np.ndim(x) > 0)


def is_view(element, container) -> bool:
    """Whether ``element`` (read from ``container``) shares the container's memory."""
    return _is_array(element) and _is_array(container) and np.may_share_memory(element, container)


class ViewedParts:
    """The parts of a buffer that reads have viewed (``row = out[i]``), as merged byte ranges of its
    memory: a later write into the buffer is refused only where it overlaps one of them
    (``writes_viewed``), so that filling row after row while reading earlier rows
    (``u[t + 1] = u[t] + dt * rhs(u[t])``) runs. A view read holds the values it saw for the
    pullbacks that keep it, and every view made from it lies inside its range."""

    __slots__ = ("memory", "starts", "ends")

    def __init__(self, memory: np.ndarray):
        self.memory = memory  # the buffer's plain array: the ranges are in its memory
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        i = bisect.bisect_left(self.ends, start)  # the first range that ends at or after `start`
        j = bisect.bisect_right(self.starts, end)  # past the last range that starts at or before `end`
        if i < j:  # merge the ranges it touches
            start, end = min(start, self.starts[i]), max(end, self.ends[j - 1])
        self.starts[i:j] = [start]
        self.ends[i:j] = [end]

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.ends, start)  # the first range that ends after `start`
        return i < len(self.starts) and self.starts[i] < end

    def moved_to(self, memory: np.ndarray):
        """The same parts in ``memory``, a buffer's new array laid out as the old one (a copy of it,
        as the tape's first write makes); ``True``, every part, where its layout differs.

        >>> a = np.zeros(4)
        >>> b = a.copy()
        >>> writes_viewed(viewed(False, a[:2], a).moved_to(b), b, 3)
        False
        >>> viewed(False, a[:2], a).moved_to(np.zeros(5))
        True
        """
        old = self.memory
        if memory is old:
            return self
        if type(memory) is not np.ndarray or (memory.shape, memory.strides, memory.dtype) != (
            old.shape,
            old.strides,
            old.dtype,
        ):
            return True
        shift = memory.__array_interface__["data"][0] - old.__array_interface__["data"][0]
        moved = ViewedParts(memory)
        moved.starts = [s + shift for s in self.starts]
        moved.ends = [e + shift for e in self.ends]
        return moved


def byte_range(array) -> tuple[int, int] | None:
    """``[start, end)``: the addresses of the memory ``array`` spans (that of the plain array an
    outer differentiation's array stands for); ``None`` for an empty array or another object."""
    array = stood_for(array)
    if type(array) is not np.ndarray or not array.size:
        return None
    start = end = array.__array_interface__["data"][0]
    for n, stride in zip(array.shape, array.strides):
        if stride < 0:
            start += (n - 1) * stride
        else:
            end += (n - 1) * stride
    return start, end + array.itemsize


def viewed(flag, element, container):
    """A buffer's ``_shared`` flag after ``element`` was read from it: unchanged unless ``element``
    views the buffer, whose range is then added to the ``ViewedParts`` (``True``, every part, where
    the range cannot be told, or once the buffer itself was passed on)."""
    if flag is True or not is_view(element, container):
        return flag
    memory, span = stood_for(container), byte_range(element)
    if span is None or (flag and flag.memory is not memory):  # (the buffer moved: an outer
        return True  # differentiation's array took its values, as a Hessian's dual buffer does)
    parts = flag or ViewedParts(memory)
    parts.add(*span)
    return parts


def part_key(key) -> tuple:
    """``key`` as a tuple that reads even one entry as a 0-d view (``a[0, 1, ...]``), not a copy."""
    index = key if type(key) is tuple else (key,)
    return index if any(k is Ellipsis for k in index) else (*index, Ellipsis)


def writes_viewed(flag, container, key) -> bool:
    """Whether ``container[key] = ...`` writes into a part a read viewed (see ``ViewedParts``):
    where the part written cannot be told (an index array picks entries), any part counts."""
    memory = stood_for(container)
    if flag is True or flag.memory is not memory:
        return True
    try:
        target = memory[part_key(key)]
    except Exception:  # noqa: BLE001 - the write itself raises NumPy's error
        return True
    if type(target) is not np.ndarray or not np.may_share_memory(target, memory):
        return True  # an index array: the write's entries are not one view
    span = byte_range(target)
    return span is not None and flag.overlaps(*span)
