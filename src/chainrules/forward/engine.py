"""``jvp`` and ``jacobian``: seed duals into the inputs, run the function, read the partials out.

Inputs and outputs may be numbers, NumPy arrays, or structures of them (tuples, lists, dicts,
namedtuples, dataclasses and other objects with fields); a structure's tangent is a
``Tangent[P]`` with one tangent per field (a plain tuple/list/dict of tangents is accepted too).

Jacobians push a *chunk* of basis tangents through the function at once (ForwardDiff's chunks,
the seed document's "hyperduals"): each pass handles ``chunk`` of the ``N`` input entries, so
a Jacobian takes ``ceil(N / chunk)`` passes. The automatic chunk is the largest one whose seed
block (``chunk * N`` numbers) stays within ``2**22`` numbers (32 MiB of float64), evened out
over the passes so they all have about the same size; ``chunk_size=`` sets it. The seed itself
is a ``BasisSeed``: products against it are row selections, not matrix products.

A function (or callable object) with an ``frule`` is not run on duals: its rule pushes the
tangents (or each chunk of them) forward, as ``call`` does for an operation.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import (
    AbstractTangent,
    AbstractZero,
    NoTangent,
    ProjectTo,
    Tangent,
    ZeroTangent,
    basis_seed,
    frule,
    unthunk,
)
from ..core.active import ActiveValue, install_forward, uninstall_forward
from ..core.errors import NoForwardRuleError, raise_converted, raise_swallowed, user_location
from ..core.structures import is_structure, item_tangents, leaves, structure_items, tangent_like, with_fields
from ..core.tangents import _is_namedtuple_type, namedtuple_with
from .dual import _DUALS, RULED_CALLS, Dual, DualArray, Tag, _innermost, _new_object, push, pusher_for

_NO = NoTangent()
_ZERO = ZeroTangent()

#: largest number of entries in one pass's seed block (chunk * N); see the module docstring
SEED_BUDGET = 2**22


def chunk_size_for(n: int) -> int:
    """The automatic chunk size for an input of ``n`` entries.

    >>> chunk_size_for(1000), chunk_size_for(10_000), chunk_size_for(0)
    (1000, 417, 1)
    """
    if n <= 1:
        return 1
    if n * n <= SEED_BUDGET:  # the common case: every entry in one pass
        return n
    largest = max(1, min(n, SEED_BUDGET // n))
    passes = math.ceil(n / largest)
    return math.ceil(n / passes)


# ----- leaves: the numbers and arrays inside a (possibly structured) value ------------------


def _is_number_leaf(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, int, complex, np.number)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "iufc"


def _is_float_leaf(x) -> bool:
    if isinstance(x, (float, complex, np.inexact)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def _seed(x, t, tag: Tag):
    """``x`` with every leaf that has a nonzero tangent replaced by a dual carrying it."""
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return x
    if isinstance(x, ActiveValue) or _is_number_leaf(x):  # a dual, or another engine's value (a tracked array)
        if tag.batch is None and not (type(x) is float and type(t) is float):
            t = ProjectTo(_innermost(x))(t)  # a tangent given by the user: checked and brought to x's dtype
        return Dual(x, t, tag)
    if not is_structure(x):
        return x
    items = item_tangents(t, x)
    if isinstance(x, (tuple, list)) and not _is_namedtuple_type(type(x)):
        return type(x)(_seed(v, d, tag) for v, d in zip(x, items))
    if isinstance(x, dict):
        new = copy.copy(x)
        for k, d in items.items():
            new[k] = _seed(x[k], d, tag)
        return new
    if _is_namedtuple_type(type(x)):
        return namedtuple_with(x, {k: _seed(getattr(x, k), d, tag) for k, d in items.items()})
    return with_fields(x, {k: _seed(getattr(x, k), d, tag) for k, d in items.items()})


def _read(y, tag: Tag):
    """``(primal, tangent)`` of an output: duals of ``tag`` are opened, structures walked."""
    if type(y) in _DUALS:
        if y.tag is tag:
            return y.primal, y.partials
        return y, _ZERO  # a dual of an outer differentiation: a constant here
    if _is_number_leaf(y) or isinstance(y, np.generic):
        return y, _ZERO
    if isinstance(y, Tangent):  # a tangent computed by the function (a nested jvp): read field by field
        return _read_tangent(y, tag)
    if isinstance(y, AbstractZero):  # a zero computed by the function (a nested derivative of a constant)
        return y, _ZERO
    if isinstance(y, (bool, str, bytes, type(None))) or not is_structure(y):
        return y, _NO
    P = type(y)
    if isinstance(y, (tuple, list)) and not _is_namedtuple_type(P):
        pairs = [_read(v, tag) for v in y]
        primal = P(p for p, _ in pairs)
        tangents = [t for _, t in pairs]
        return primal, (_ZERO if _all_zero(tangents) else Tangent[P](*tangents))
    if isinstance(y, dict):
        pairs = {k: _read(v, tag) for k, v in y.items()}
        primal = copy.copy(y)
        primal.update({k: p for k, (p, _) in pairs.items()})
        tangents = {k: t for k, (_, t) in pairs.items()}
        return primal, (_ZERO if _all_zero(tangents.values()) else Tangent[dict](tangents))
    fields = structure_items(y)
    pairs = {k: _read(v, tag) for k, v in fields.items()}
    primals = {k: p for k, (p, _) in pairs.items()}
    primal = namedtuple_with(y, primals) if _is_namedtuple_type(P) else with_fields(y, primals)
    tangents = {k: t for k, (_, t) in pairs.items()}
    return primal, (_ZERO if _all_zero(tangents.values()) else Tangent[P](**tangents))


def _read_tangent(y: Tangent, tag: Tag):
    """``(primal, tangent)`` of a ``Tangent[P]`` output: both are ``Tangent[P]``s, field by field."""
    T, backing = type(y), y.backing
    if isinstance(backing, tuple):
        pairs = [_read(v, tag) for v in backing]
        return T(*(p for p, _ in pairs)), (_ZERO if _all_zero(t for _, t in pairs) else T(*(t for _, t in pairs)))
    pairs = {k: _read(v, tag) for k, v in backing.items()}
    primals, tangents = {k: p for k, (p, _) in pairs.items()}, {k: t for k, (_, t) in pairs.items()}
    if T.primal_type is dict:
        return T(primals), (_ZERO if _all_zero(tangents.values()) else T(tangents))
    return T(**primals), (_ZERO if _all_zero(tangents.values()) else T(**tangents))


def _all_zero(ts) -> bool:
    return all(isinstance(t, AbstractZero) for t in ts)


# ----- jvp ----------------------------------------------------------------------------------


def jvp(f: Callable, primals: tuple, tangents: tuple):
    """``(y, dy)``: ``f(*primals)`` and its tangent along ``tangents``, by dual numbers.

    >>> import numpy as np
    >>> from chainrules import forward
    >>> y, dy = forward.jvp(lambda x, y: x * np.sin(y), (2.0, 0.0), (1.0, 1.0))
    >>> float(y), float(dy)
    (0.0, 2.0)
    """
    installed = install_forward(pushforward_full)
    try:
        return _pushed(f, primals, tangents, _NO_KWARGS)
    finally:
        uninstall_forward(installed)


def pushforward_full(tangents: tuple, f: Callable, *args, **kwargs):
    """``(y, dy)``: ``f(*args, **kwargs)`` pushed forward along ``tangents`` (``(df, dx1, ...)``) by
    dual numbers of a differentiation of its own; the engine behind ``chainrules.frule_via_ad``.
    A tangent of ``f`` itself has no dual to carry it, nor have the values of an enclosing
    differentiation that ``f`` captured (a closure over the duals the calling rule was given the
    primals of): both are refused (the entry points run the function through the source engine's
    primal then, where the reverse rule differentiates ``f`` with those values)."""
    if isinstance(unthunk(tangents[0]), AbstractZero):
        y, dy = _pushed(f, args, tangents[1:], kwargs)
        if _orders_in((y, dy)) <= _orders_in((args, kwargs, tangents)):
            return y, dy
    raise NoForwardRuleError(
        f, args, location=user_location(), reason="forward mode pushes no tangent of values the callable captured"
    )


def _orders_in(x) -> set:
    """The differentiations (``differentiation_order()``) whose values ``x`` holds, nested ones too."""
    found = set()
    for leaf in leaves(x, lambda v, top: isinstance(v, ActiveValue)):
        while isinstance(leaf, ActiveValue) and leaf.differentiation_order() not in found:
            found.add(leaf.differentiation_order())
            leaf = leaf.stands_for()
    return found


def _pushed(f: Callable, primals: tuple, tangents: tuple, kwargs: dict):
    tag = Tag()
    tag.entry = sys._getframe(0)  # where a walk for calls of ruled callables stops
    pusher = _own_pusher(f, primals)
    try:
        if pusher is not None:
            ts = [_NO, *(_rule_tangent(x, t) for x, t in zip(primals, tangents))]
            out = push(f, pusher, list(primals), ts, kwargs, tag)
        else:
            out = f(*(_seed(x, t, tag) for x, t in zip(primals, tangents)), **kwargs)
    except Exception as error:
        _raise_refusal(error, tag)
        raise
    finally:
        tag.entry = tag.clean_frames = None
        tag.finished = True
    if tag.refused is not None:
        raise_swallowed(tag.refused, f)
    y, dy = _read(out, tag)
    return y, _plain_tangent(dy)


def _raise_refusal(error: Exception, tag: Tag) -> None:
    """Raise the refusal behind ``error``, which ended a differentiation with ``tag``: one a library
    turned into its own error, or the call of a ruled callable in whose body the duals failed
    (``RuledCallWatch.failed``); return where there is none (see ``raise_converted``)."""
    raise_converted(error, tag.refused or RULED_CALLS.failed(tag, error), _DUALS)


_NO_KWARGS: dict = {}  # shared, never written


def _own_pusher(f, primals):
    """The pusher of ``f``'s frule for these arguments (looked up by their plain values: an outer
    differentiation's duals by their primals), or ``None``. A rule registered for duals themselves
    (``math.sin``'s, which runs ``np.sin``'s: the rule for floats would convert them) comes first."""
    if any(type(x) in _DUALS for x in primals):
        rule = frule.lookup(f, tuple(primals))
        if rule is not None and getattr(rule, "on_engine_values", False):
            return pusher_for(f, list(primals))
    return pusher_for(f, [_innermost(x) for x in primals])


def _rule_tangent(x, t):
    """A user's tangent of ``x`` as a rule takes it: unthunked, a number's brought to ``x``'s dtype,
    a structure's as ``Tangent[P]``."""
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return t
    if isinstance(x, ActiveValue) or _is_number_leaf(x):  # a dual, or another engine's value (a tracked array)
        return ProjectTo(_innermost(x))(t)
    if not is_structure(x) or isinstance(t, Tangent):
        return t
    items = item_tangents(t, x)
    P = type(x)
    if isinstance(items, dict):
        if isinstance(x, dict):
            return Tangent[dict]({k: _rule_tangent(x[k], d) for k, d in items.items()})
        return Tangent[P](**{k: _rule_tangent(getattr(x, k), d) for k, d in items.items()})
    return Tangent[P](*(_rule_tangent(v, d) for v, d in zip(x, items)))


def _plain_tangent(t):
    """The output tangent as the caller may keep it: an ordinary array it can write into (a rule
    may have returned a read-only broadcast view)."""
    if isinstance(t, np.ndarray) and (type(t) is not np.ndarray or not t.flags.writeable):
        return np.array(t)
    if isinstance(t, Tangent):
        backing = t.backing
        if isinstance(backing, tuple):
            return type(t)(*(_plain_tangent(v) for v in backing))
        if type(t).primal_type is dict:
            return type(t)({k: _plain_tangent(v) for k, v in backing.items()})
        return type(t)(**{k: _plain_tangent(v) for k, v in backing.items()})
    return t


# ----- jacobian -----------------------------------------------------------------------------


@dataclasses.dataclass
class _Input:
    """One differentiable leaf of the input: where it sits in the flat input vector."""

    value: Any
    offset: int
    size: int
    shape: tuple[int, ...]
    dtype: np.dtype


def _is_input_leaf(x, top: bool) -> bool:
    """A differentiable leaf: a dual or another engine's value (an outer tape's tracked array), a
    bare number, or an inexact one inside a structure (integers inside structures are left alone,
    as finite differences leave them)."""
    return isinstance(x, ActiveValue) or (_is_number_leaf(x) and (top or _is_float_leaf(x)))


def _leaf_dtype(x) -> np.dtype:
    while isinstance(x, Dual):
        x = x.primal
    dtype = np.result_type(x)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def jacobian(f: Callable, x, chunk_size: int | None = None):
    """The Jacobian of ``f`` at ``x`` by forward mode, with shape ``out.shape + x.shape``.

    ``x`` is a number, an array, or a structure of them; ``f`` returns the same kinds. For a
    structured input (or output) the Jacobian is arranged like it: a ``Tangent[P]`` holding one
    block per field. ``chunk_size`` is the number of input entries per pass (default: see the
    module docstring).

    >>> import numpy as np
    >>> from chainrules import forward
    >>> W, b = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.ones(3)
    >>> forward.jacobian(lambda x: (W @ x + b) ** 2, np.array([1.0, 2.0]))  # 2 (W x + b)[:, None] * W
    array([[ 12.,  24.],
           [ 72.,  96.],
           [180., 216.]])
    """
    installed = install_forward(pushforward_full)
    try:
        return _jacobian(f, x, chunk_size)
    finally:
        uninstall_forward(installed)


def _jacobian(f: Callable, x, chunk_size: int | None):
    plain = type(x) is np.ndarray and x.dtype.kind in "fc"  # the common case, without walking a structure
    if plain and chunk_size is None and 1 < x.size and x.size * x.size <= SEED_BUDGET:
        J = _one_pass_jacobian(f, x)
        if J is not None:
            return J
    if plain:
        inputs = None  # described only if the passes' tangents need assembling (see `_plain_inputs`)
        n = x.size
    else:
        inputs, n = [], 0
        for leaf in leaves(x, _is_input_leaf):
            shape = np.shape(leaf)
            size = math.prod(shape)
            inputs.append(_Input(leaf, n, size, shape, _leaf_dtype(leaf)))
            n += size
    if n == 0:
        return _assemble(f(x), [_ZERO], [0], _plain_inputs(x) if inputs is None else inputs, x)
    chunk = chunk_size_for(n) if chunk_size is None else int(chunk_size)
    if chunk < 1:
        raise ValueError(f"jacobian: chunk_size must be at least 1, got {chunk_size}")
    chunk = min(chunk, n)
    y = None
    tangents, batches = [], []  # per pass: the output's batched tangent and the pass's size
    pusher = _own_pusher(f, (x,))
    for start in range(0, n, chunk):
        batch = min(chunk, n - start)
        tag = Tag(batch)
        tag.entry = sys._getframe(0)
        if plain:
            seed = basis_seed(batch, x.shape, start, x.dtype)
        else:
            seeds = []
            for inp in inputs:
                first = start - inp.offset
                overlaps = first < inp.size and first + batch > 0
                seeds.append(basis_seed(batch, inp.shape, first, inp.dtype) if overlaps else _ZERO)
            seed = tangent_like(x, _is_input_leaf, seeds, _ZERO)
        try:
            if pusher is not None:  # the rule pushes the chunk (or, unbatched, each of its tangents) forward
                out = push(f, pusher, [x], [_NO, seed], _NO_KWARGS, tag)
            else:
                out = f(Dual(x, seed, tag) if plain else _seed(x, seed, tag))
        except Exception as error:
            _raise_refusal(error, tag)
            raise
        finally:
            tag.entry = tag.clean_frames = None
            tag.finished = True
        if tag.refused is not None:
            raise_swallowed(tag.refused, f)
        y, dy = (out.primal, out.partials) if type(out) in _DUALS and out.tag is tag else _read(out, tag)
        tangents.append(dy)
        batches.append(batch)
    return _finish(f, y, tangents, batches, _plain_inputs(x) if inputs is None else inputs, x)


def _finish(f: Callable, y, tangents: list, batches: list, inputs: list, x):
    """The Jacobian from the output ``y`` and the passes' batched output tangents."""
    if (
        type(y) not in (np.ndarray, float, *_DUALS)
        and not (_is_number_leaf(y) or isinstance(y, (np.generic, ActiveValue)))
        and (isinstance(y, AbstractTangent) or not is_structure(y))
    ):
        raise TypeError(
            f"jacobian: {getattr(f, '__qualname__', f)} returned a {type(y).__name__}; "
            "it must return a number, an array, or a structure of them"
        )
    return _assemble(y, tangents, batches, inputs, x)


def _one_pass_jacobian(f: Callable, x: np.ndarray):
    """The Jacobian at a float vector ``x`` from one pass of all ``x.size`` unit tangents: for a
    vector output, the output's tangent block transposed. ``None`` for a matrix ``x``, which the
    general path lays out."""
    if x.ndim != 1:
        return None
    n = x.size
    tag = Tag(n)
    tag.entry = sys._getframe(0)
    seed = basis_seed(n, x.shape, 0, x.dtype)
    pusher = pusher_for(f, [x])
    try:
        if pusher is None:
            dual = _new_object(DualArray)  # Dual(x, seed, tag), without its dispatch
            dual.primal, dual.partials, dual.tag, dual.writable = x, seed, tag, False
            out = f(dual)
        else:  # the rule pushes the block (or, unbatched, each of its tangents) forward
            out = push(f, pusher, [x], [_NO, seed], _NO_KWARGS, tag)
    except Exception as error:
        _raise_refusal(error, tag)
        raise
    finally:
        tag.entry = tag.clean_frames = None
        tag.finished = True
    if tag.refused is not None:
        raise_swallowed(tag.refused, f)
    if type(out) is DualArray and out.tag is tag:
        dy = out.partials
        if isinstance(dy, np.ndarray) and out.primal.ndim == 1:
            J = (dy if type(dy) is np.ndarray else dy.view(np.ndarray)).T  # the block is (n, m): J is its transpose
            if J.dtype != x.dtype:  # float32 only if the input and the output are, as reverse mode's
                dtype = np.result_type(out.primal.dtype, x.dtype)
                if J.dtype != dtype:
                    return J.astype(dtype)
            return J if dy.flags.writeable else np.array(J)
    y, dy = _read(out, tag)
    return _finish(f, y, [dy], [n], _plain_inputs(x), x)


def _plain_inputs(x: np.ndarray) -> list:
    return [_Input(x, 0, x.size, x.shape, x.dtype)]


def _assemble(y, tangents: list, batches: list, inputs: list, x):
    """Lay the passes' batched output tangents out as ``out.shape + in.shape`` blocks."""
    if type(y) is not np.ndarray and not _is_number_leaf(y) and not isinstance(y, ActiveValue):
        if isinstance(y, (bool, str, bytes, type(None))) or not is_structure(y):
            return _NO
        return _assemble_structure(y, tangents, batches, inputs, x)
    if not inputs:
        return _NO
    out_shape = np.shape(y)
    parts = []
    for batch, t in zip(batches, tangents):
        t = unthunk(t)
        if isinstance(t, AbstractZero):
            dtype = np.result_type(_leaf_dtype(y), *[inp.dtype for inp in inputs])
            parts.append(np.zeros((*out_shape, batch), dtype=dtype))
        else:
            t = _own(t)
            parts.append(t.T if np.ndim(t) == 2 else np.moveaxis(t, 0, -1))
    flat = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=-1)
    blocks = []
    for inp in inputs:
        block = flat if len(inputs) == 1 else flat[..., inp.offset : inp.offset + inp.size]
        shape = (*out_shape, *inp.shape)
        if np.shape(block) != shape:
            block = np.reshape(block, shape)
        dtype = np.result_type(_leaf_dtype(y), inp.dtype)  # float32 only if both are, as reverse mode's
        if isinstance(block, np.ndarray) and block.dtype != dtype:
            block = block.astype(dtype)
        blocks.append(_writeable(block))
    return blocks[0] if type(x) is np.ndarray else tangent_like(x, _is_input_leaf, blocks, _NO)


def _own(t):
    if isinstance(t, np.ndarray) and type(t) is not np.ndarray:
        return t.view(np.ndarray)
    return t


def _writeable(block):
    """A Jacobian the caller may write into (a selection from a seed product is a read-only view)."""
    if isinstance(block, np.ndarray) and not block.flags.writeable:
        return block.copy()
    return block


def _assemble_structure(y, tangents: list, batches: list, inputs: list, x):
    P = type(y)
    if isinstance(y, (tuple, list)) and not _is_namedtuple_type(P):
        per_item = [[_part(t, i) for t in tangents] for i in range(len(y))]
        return Tangent[P](*(_assemble(v, ts, batches, inputs, x) for v, ts in zip(y, per_item)))
    if isinstance(y, dict):
        return Tangent[dict](
            {k: _assemble(v, [_part(t, k) for t in tangents], batches, inputs, x) for k, v in y.items()}
        )
    fields = structure_items(y)
    return Tangent[P](
        **{k: _assemble(v, [_part(t, k) for t in tangents], batches, inputs, x) for k, v in fields.items()}
    )


def _part(t, key):
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return t
    return t[key]
