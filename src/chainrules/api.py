"""The user API: ``pullback``, ``gradient``, ``value_and_gradient``, ``jvp``, ``derivative``,
``jacobian``, ``hessian``, ``show``.

The API knows the engines only through a small protocol, so each engine stays independent:

- a reverse engine (``chainrules.reverse.source``, ``chainrules.reverse.trace``) provides
  ``pullback_full(f, *args, **kwargs) -> (y, back)`` with ``back(dy) -> (df, dx1, ..., dxn)``;
  ``back.batched`` (when present and true) says that ``dy`` may carry a leading batch axis, a
  batch of cotangents pulled back in one call, whose results carry the batch axis in front;
  ``back`` may also have ``last_call(dy)``, the same for a last call (the engine may free what
  the pullback holds as it goes), which ``gradient`` and ``value_and_gradient`` use;
  the source engine also provides ``show(f, *args, **kwargs) -> str``;
- the forward engine (``chainrules.forward``) provides ``jvp(f, primals, tangents) -> (y, dy)``
  and ``jacobian(f, x, chunk_size=None)``.

What the API returns is unthunked; the function's own tangent and keyword arguments get nothing.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import importlib
import inspect
import math
import operator
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .core import (
    AbstractTangent,
    AbstractThunk,
    AbstractZero,
    ActiveValue,
    ChainRulesError,
    DroppedDerivativeError,
    NoRuleError,
    NoTangent,
    Tangent,
    UnsupportedSyntaxError,
    ZeroTangent,
    add,
    basis_seed,
    match_input,
    rrule,
    unthunk,
    user_location,
)
from .core.active import CAPTURES_WANTED
from .core.errors import NoDerivativeError, NoForwardRuleError
from .core.pullback_results import callable_label, checked_cotangents
from .core.ruled_calls import IgnoredRuleError
from .core.structures import is_structure, item_tangents, leaves, structure_items, tangent_like, with_fields
from .core.tangents import _is_namedtuple_type, _rebuild, namedtuple_with

REVERSE_ENGINES = {"source": "chainrules.reverse.source", "tape": "chainrules.reverse.trace"}
DEFAULT_ENGINE = "source"


_loaded_engines: dict[str, object] = {}


def _reverse_engine(engine: str):
    module = _loaded_engines.get(engine) if type(engine) is str else None
    if module is not None and REVERSE_ENGINES.get(engine) == module.__name__:
        return module
    module = _loaded_engines[engine] = importlib.import_module(REVERSE_ENGINES[_checked_engine(engine)])
    return module


def _checked_engine(engine) -> str:
    """``engine`` where it names a reverse engine, else an error that names them: a ``TypeError``
    for a value of another type (an argument meant for ``f``, which ``engine=`` never reaches)."""
    if not isinstance(engine, str):
        raise TypeError(
            f"engine= takes the name of a reverse engine, one of {sorted(REVERSE_ENGINES)}, got a value of type "
            f"{type(engine).__name__}; engine= belongs to chainrules' entry points and is never passed on to f"
        )
    if engine not in REVERSE_ENGINES:
        raise ValueError(f"engine={engine!r}: choose one of {sorted(REVERSE_ENGINES)}")
    return engine


def _pullback_full(engine: str, f: Callable, *args, **kwargs):
    """``(y, back_full)`` from the reverse engine ``engine``. Where the source engine refuses the
    Python ``f`` is written in (a generator, a list reversed in place: an
    ``UnsupportedSyntaxError``) or a call in it with no rule (a plain class built: a
    ``NoRuleError``), or recurses too deep for its frames (a ``RecursionError``), the tape, which
    follows what runs, differentiates ``f``; it is
    remembered (beside ``_auto_choices``), so later calls go to the tape directly. Where the tape
    refuses ``f`` too, the source engine's refusal is raised, with a note saying why the tape failed."""
    if _ON_THE_TAPE_USED[0]:
        engine = _remembered_engine(engine, f)
    try:
        return _reverse_engine(engine).pullback_full(f, *args, **kwargs)
    except _TAPE_TAKES_OVER as refusal:
        if engine != "source":
            raise
        return _on_the_tape(refusal, f, args, kwargs)


#: what the source engine raises where the tape can still differentiate ``f``: a refusal of its
#: Python or of a call without a rule, and a ``RecursionError`` of a recursion deeper than about
#: half of Python's limit, as the source engine runs two frames for each call of the user's and
#: the tape runs the user's calls as Python does
_TAPE_TAKES_OVER = (UnsupportedSyntaxError, NoRuleError, RecursionError)


def _remembered_engine(engine: str, f: Callable) -> str:
    return "tape" if _checked_engine(engine) == "source" and _chosen_before(f, _ON_THE_TAPE) else engine


#: no positions: every argument is differentiated
_NONE = frozenset()


def _on_the_tape(refusal: Exception, f: Callable, args: tuple, kwargs: dict, constants: frozenset = _NONE):
    """``f`` on the tape, where the source engine refused it with ``refusal`` (see ``_pullback_full``);
    the arguments at ``constants`` carry no derivative (see ``_run_reverse``)."""
    try:
        pulled = _run_reverse(_reverse_engine("tape"), f, args, kwargs, constants)
    # (a C function given a tracked value: ctypes.ArgumentError)
    except (ChainRulesError, TypeError, ctypes.ArgumentError) as error:
        refusal.add_note(f"The tape engine could not differentiate {callable_label(f)} either: {error}")
        raise refusal from None
    _remember_choice(f, _ON_THE_TAPE, _ON_THE_TAPE)
    _ON_THE_TAPE_USED[0] = True
    return pulled


#: whether any function went to the tape in ``_pullback_full`` (so that others skip the lookup)
_ON_THE_TAPE_USED = [False]


def _run_reverse(module, f: Callable, args: tuple, kwargs: dict, constants: frozenset):
    """The engine ``module``'s ``(y, back_full)`` for ``f(*args, **kwargs)``, the positional
    arguments at ``constants`` (those ``argnums`` leaves out) taken as constants where the engine
    can (``pullback_with_constants``): code with no rule may then read them."""
    if constants:
        with_constants = getattr(module, "pullback_with_constants", None)
        if with_constants is not None:
            return with_constants(f, args, kwargs, constants)
    return module.pullback_full(f, *args, **kwargs)


def _unselected(argnums, n: int) -> frozenset:
    """The positions among ``n`` positional arguments that ``argnums`` does not select (none for
    ``None``, or for an ``argnums`` that selects nothing valid: ``_gradients`` says why)."""
    if argnums is None:
        return _NONE
    positions = range(n)
    try:
        chosen = {positions[argnums]} if isinstance(argnums, (int, np.integer)) else {positions[j] for j in argnums}
    except (IndexError, TypeError):
        return _NONE
    return frozenset(positions) - chosen


def _check_callable(f, entry: str) -> None:
    """A TypeError naming the entry point when ``f`` cannot be called (the engines would say
    there is no rule for it, or fail inside)."""
    if not callable(f):
        raise TypeError(f"{entry}(f, ...): f must be a callable, got {type(f).__name__} {f!r:.60}")


def _checked_chunk_size(chunk_size) -> int | None:
    """``chunk_size`` as given to ``jacobian``: None (chosen) or an integer of at least 1."""
    if chunk_size is None:
        return None
    try:
        size = operator.index(chunk_size)
    except TypeError:
        raise TypeError(f"jacobian: chunk_size must be an integer, got {chunk_size!r}") from None
    if size < 1:
        raise ValueError(f"jacobian: chunk_size must be at least 1, got {size}")
    return size


def _forward_engine():
    # what importlib.import_module returns, without its few µs a call once the module is loaded
    module = sys.modules.get("chainrules.forward")
    return importlib.import_module("chainrules.forward") if module is None else module


_PLAIN = (float, np.ndarray, complex)

#: whether forward mode ever ran a function through the source engine's primal (see `_forward`):
#: until then it looks up no remembered choice (a weak table's lookup costs a reference)
_THROUGH_SOURCE_USED = [False]


def _forward(run: Callable, f: Callable, *args):
    """``run(f, *args)``, a forward-mode computation (the forward engine's ``jvp`` or
    ``jacobian``). Where dual numbers cannot pass through ``f`` as Python runs it (``math.sin(x)``
    and a write into a plain NumPy buffer convert them to floats; a library function with a rule
    runs its own code on them), ``run`` gets ``f`` as the source engine's primal runs it: every
    call in ``f``'s code goes to its rule (on dual numbers, the rule's NumPy code or its twin
    carries the tangents; a callable with a reverse rule only, ``np.apply_along_axis``, is served
    by that rule) and writes into buffers ``f`` made are followed. Forward mode still
    pushes the tangents; the primal's pullbacks are never called. ``f`` is remembered (among
    ``_auto_choices``), so later calls do not run it twice."""
    if _THROUGH_SOURCE_USED[0] and _chosen_before(f, _THROUGH_SOURCE):
        return run(_through_source(f), *args)
    try:
        return run(f, *args)
    except (DroppedDerivativeError, IgnoredRuleError, NoForwardRuleError) as refusal:
        try:
            result = run(_through_source(f), *args)
        except Exception as error:
            if isinstance(error, ChainRulesError) and not isinstance(error, (NoDerivativeError, NoForwardRuleError)):
                # the source engine cannot run f either: the first refusal says why
                why = f"{type(error).__name__}: {error}"
                refusal.add_note(f"Run through the source engine's primal, {callable_label(f)} failed too: {why}")
                raise refusal from None
            # f ran, and a rule in it refused (a derivative without closed form, a solver that did not converge,
            # a rule for reverse mode only: solve_ivp's adjoint)
            error.add_note(
                f"(forward mode ran {callable_label(f)} as the source engine's primal runs it, since "
                f"{type(refusal).__name__}: {refusal})"
            )
            raise
    _remember_choice(f, _THROUGH_SOURCE, _THROUGH_SOURCE)
    _THROUGH_SOURCE_USED[0] = True
    return result


def _through_source(f: Callable) -> Callable:
    """``f`` as the source engine's primal runs it (its value, without the pullback)."""
    run = _reverse_engine("source").pullback_full

    def through_source(*args, **kwargs):
        return run(f, *args, **kwargs)[0]

    through_source.__qualname__ = callable_label(f)
    return through_source


def _deep_unthunk(t):
    if type(t) in _PLAIN:
        return t
    t = unthunk(t)
    return _fields_mapped(t, _deep_unthunk) if isinstance(t, Tangent) else t


def _fields_mapped(t: Tangent, fn: Callable) -> Tangent:
    """``t`` with ``fn`` applied to each field's tangent: ``t`` itself where ``fn`` changes none
    (a gradient of plain floats and arrays, returned without rebuilding it)."""
    backing = t.backing
    items = backing if isinstance(backing, tuple) else backing.values()
    mapped = [fn(v) for v in items]
    if all(m is v for m, v in zip(mapped, items)):
        return t
    return _rebuild(type(t), tuple(mapped) if isinstance(backing, tuple) else dict(zip(backing, mapped)))


def _arrays_in(t) -> list:
    """The NumPy arrays in a value the user gave (a seed): itself, or those in its tuples, lists,
    dicts and ``Tangent`` fields."""
    if isinstance(t, np.ndarray):
        return [t]
    if isinstance(t, Tangent):
        t = t.backing
    if isinstance(t, dict):
        t = t.values()
    elif not isinstance(t, (tuple, list)):
        return []
    return [a for v in t for a in _arrays_in(v)]


def _owned(result, given=None):
    """``result`` (unthunked) with each of its arrays that the user could not change on its own
    copied: a read-only array (a reduction's pullback spreads its cotangent as a broadcast view), one
    that may share memory with an array of ``given`` (the user's seed, passed on unchanged by an
    identity, a reshape or a transpose) or with an array met before it in ``result`` (one
    cotangent given to both operands of a sum). What the user gets back is theirs to change.

    >>> dy = np.ones(2)
    >>> _owned((dy.reshape(2, 1), 3.0), dy)[0] is dy
    False
    """
    if type(result) is float:
        return result
    single = type(result) is not tuple
    if not single:
        for v in result:
            if type(v) is not float:
                break
        else:  # (scalar code: nothing to look at)
            return result
    items = (result,) if single else result
    seen = [] if given is None else _arrays_in(given)
    changed = None
    for i, v in enumerate(items):
        tv = type(v)
        if tv is float:
            continue
        if tv is np.ndarray and not seen and v.flags.writeable:  # the common gradient: one fresh array
            seen.append(v)
            continue
        if isinstance(v, Tangent) and all(type(u) is float for _, u in v.items()):  # (scalar code's structure)
            continue
        mine = _own(v, seen)
        if mine is not v:
            changed = changed or list(items)
            changed[i] = mine
    if changed is None:
        return result
    return changed[0] if single else tuple(changed)


def _own(v, seen: list):
    """``v`` with its arrays copied where ``_owned`` says, each array then added to ``seen``."""
    if isinstance(v, np.ndarray):
        if not v.flags.writeable or any(np.may_share_memory(v, s) for s in seen):
            v = np.array(v)
        seen.append(v)
        return v
    if type(v) is tuple:
        return tuple(_own(u, seen) for u in v)
    if isinstance(v, Tangent):
        return _fields_mapped(v, lambda u: _own(u, seen))
    return v


def _unthunked(cotangents: tuple, args: tuple) -> tuple:
    """The user's view of a full pullback's result: no tangent for ``f``, nothing lazy."""
    grads = cotangents[1:]
    # the common result, plain floats and arrays for plain floats and arrays, is returned as it is,
    # without a new tuple
    for a, c in zip(args, grads):
        tc = type(c)
        if tc in _PLAIN and (tc is type(a) or tc is np.ndarray):
            continue
        if isinstance(c, Tangent) and _of_floats_and_arrays(a) and _plain_fields(c):
            continue  # (a tuple, list or dict of floats and arrays: its tangent is the user's as it is)
        return tuple([_as_returned(a, c) for a, c in zip(args, grads)])
    return grads


def _plain_fields(t: Tangent) -> bool:
    """Whether every field of ``t`` is a float or an array: nothing to unthunk or to type."""
    backing = t.backing
    for v in backing if isinstance(backing, tuple) else backing.values():
        if type(v) is not float and type(v) is not np.ndarray:
            return False
    return True


def pullback(f: Callable, *args, engine: str = DEFAULT_ENGINE, **kwargs) -> tuple[Any, Callable]:
    """``(y, back)`` where ``y = f(*args, **kwargs)`` and ``back(dy)`` returns one cotangent per
    positional argument (nothing for ``f`` itself or for keyword arguments).

    ``back`` may be called more than once, with different cotangents. The cotangent of a
    structured output is a ``Tangent`` or a value laid out as the output (a tuple, a dict, a value
    of its own type), each number or array of it of its part's shape.

    >>> import chainrules as cr
    >>> y, back = cr.pullback(lambda a, b: a * b, 2.0, 3.0)
    >>> y, back(1.0)
    (6.0, (3.0, 2.0))
    """
    _check_callable(f, "pullback")
    y, back_full = _pullback_full(engine, f, *args, **kwargs)

    structured = _is_structured(y)

    def back(dy):
        if _is_numeric(y) and not isinstance(dy, (AbstractTangent, ActiveValue)):
            dy = _numeric_cotangent(f, y, dy)
        elif structured:
            dy = _structural_cotangent(f, y, dy)
        return _owned(_unthunked(checked_cotangents(f, back_full(dy), args), args), dy)

    return y, back


def _numeric_cotangent(f: Callable, y, dy, path: str | None = None):
    """The user's cotangent ``dy`` of a number or array output ``y`` (the part ``path`` of a
    structured output, such as ``output[0]``), checked: a number or an array of ``y``'s shape (a
    list or tuple of numbers is taken as an array), else a ValueError or TypeError naming ``f``
    (a cotangent of another shape would be broadcast into a wrong result).

    >>> _numeric_cotangent(len, np.zeros(2), [1.0, 2.0])
    array([1., 2.])
    """
    if isinstance(dy, (list, tuple)):
        dy = np.asarray(dy)
    elif not (_is_numeric(dy) or isinstance(dy, np.ndarray)):
        raise TypeError(
            f"pullback of {callable_label(f)}: the cotangent must be a number or an array like "
            f"{path or 'the output'}, got {type(dy).__name__}"
        )
    if np.shape(dy) != np.shape(y):
        raise ValueError(
            f"pullback of {callable_label(f)}: a cotangent of shape {np.shape(dy)} for "
            f"{path or 'an output'} of shape {np.shape(y)}"
        )
    if isinstance(dy, np.ndarray) and dy.dtype.kind not in "fciu":
        raise TypeError(
            f"pullback of {callable_label(f)}: a cotangent of dtype {dy.dtype}{' for ' + path if path else ''}; "
            "give numbers"
        )
    return dy


def _structural_cotangent(f: Callable, y, dy):
    """The user's cotangent ``dy`` of a structured output ``y`` as the engines take it (see
    ``_structural_seed``), each of its numbers and arrays checked as ``_numeric_cotangent`` checks
    the cotangent of a whole output.

    >>> import dataclasses, numpy as np
    >>> @dataclasses.dataclass
    ... class P:
    ...     a: np.ndarray
    ...     b: float
    >>> _structural_cotangent(len, P(np.zeros(2), 0.0), P(np.ones(2), 1.0))
    Tangent[P](a=array([1., 1.]), b=1.0)
    """
    checked = functools.partial(_numeric_cotangent, f)
    return _structural_seed(f"pullback of {callable_label(f)}", "cotangent", y, dy, "output", checked)


def _structural_tangent(f: Callable, i: int, x, t):
    """The user's tangent ``t`` of the structured argument ``x`` (argument ``i`` of ``f``) as the
    forward engine takes it (see ``_structural_seed``), with no tangent for the integer numbers
    in ``x``: settings, whatever was given for them; the others are checked as ``jvp`` checks a
    whole argument's.

    >>> _structural_tangent(len, 0, (2.0, 3), (1.0, 1.0))
    Tangent[tuple](1.0, NoTangent())
    """

    def setting_or_tangent(leaf, d, path: str):
        if not (_is_input_leaf(leaf, False) or isinstance(leaf, ActiveValue)):
            return NoTangent()
        _check_tangent(f, f"the tangent of {path}", leaf, d)
        return d

    return _structural_seed(f"jvp({callable_label(f)}, ...)", "tangent", x, t, f"primals[{i}]", setting_or_tangent)


def _structural_seed(entry: str, noun: str, y, dy, path: str, at_leaf: Callable):
    """``dy``, the user's tangent of the structure ``y`` (the cotangent of an output, the tangent
    of an argument), as a ``Tangent`` of ``y``'s structure: ``dy`` may be a ``Tangent``, a tuple,
    list or dict (an array, for a tuple or list of numbers), or a value of ``y``'s own type (a
    dataclass instance), laid out as ``y``, with fields that are not given zero, and ``None`` for
    a part a zero. At a number or an array of ``y`` (the part ``path``, such as ``output[0].w``),
    it is ``at_leaf(leaf, part, path)``; strings, bools and ``None`` in ``y`` take nothing,
    whatever is given for them. Where ``dy`` is not laid out as ``y`` (another length, a key or
    field ``y`` has not), a ValueError or TypeError starting with ``entry``."""
    dy = unthunk(dy)
    if dy is None:  # (nothing given for this part: a zero)
        return ZeroTangent()
    if _is_number(y) or isinstance(y, ActiveValue):
        return dy if isinstance(dy, (AbstractTangent, ActiveValue)) else at_leaf(y, dy, path)
    if isinstance(dy, AbstractZero) or isinstance(y, AbstractTangent):
        return dy  # (a tangent output, a derivative's: its tangent is taken as given)
    if not is_structure(y):
        return NoTangent()
    items = structure_items(y)
    parts = _seed_items(entry, noun, y, dy, path)
    keys = range(len(items)) if isinstance(items, list) else list(items)
    seeds = {k: _structural_seed(entry, noun, items[k], parts[k], _item_path(path, y, k), at_leaf) for k in keys}
    if isinstance(items, list):
        return Tangent[type(y)](*seeds.values())
    return Tangent[dict](seeds) if isinstance(y, dict) else Tangent[type(y)](**seeds)


def _item_path(path: str, y, key) -> str:
    """How errors name the item ``key`` of the part ``path`` of a structure: ``output[0]``,
    ``output['a']``, ``output.w`` (a field)."""
    named = _is_namedtuple_type(type(y)) or not isinstance(y, (tuple, list, dict))
    return f"{path}.{key}" if named else f"{path}[{key!r}]"


def _seed_items(entry: str, noun: str, y, dy, path: str):
    """The parts of ``dy`` (see ``_structural_seed``) for the items of the structure ``y``, laid
    out as ``structure_items(y)``: a list, or a dict by key or field (zeros where not given)."""
    items = structure_items(y)
    if isinstance(dy, Tangent):
        given = dy.backing
    elif isinstance(dy, (tuple, list)) or (isinstance(dy, np.ndarray) and dy.ndim and isinstance(items, list)):
        given = tuple(dy)  # (an array's rows for a tuple's items: a tuple of numbers seeded by an array)
    elif isinstance(dy, dict) or type(dy) is type(y):
        given = structure_items(dy)
    else:
        given = None
    by_position = isinstance(given, tuple)
    # (a namedtuple's fields are named, and positional too)
    if given is None or (by_position != isinstance(items, list) and not _is_namedtuple_type(type(y))):
        raise TypeError(
            f"{entry}: the {noun} of {path}, a {type(y).__name__}, must be laid out as it (or a cr.Tangent), "
            f"got {type(dy).__name__}"
        )
    if by_position:
        if len(given) != len(items):
            raise ValueError(
                f"{entry}: a {noun} of length {len(given)} for {path}, a {type(y).__name__} of length {len(items)}"
            )
        return list(given) if isinstance(items, list) else dict(zip(items, given))
    for key in given:
        if key not in items:
            raise ValueError(f"{entry}: a {noun} for {_item_path(path, y, key)}, which {path} does not have")
    return {k: given.get(k, ZeroTangent()) for k in items}


def _as_returned(arg, cotangent):
    """The cotangent the user gets: unthunked, and a zero of a float argument is ``ZeroTangent()``
    (``NoTangent()`` is for what has no derivative: indices, counts, bools, strings)."""
    cotangent = _deep_unthunk(cotangent)
    if isinstance(cotangent, NoTangent) and _is_inexact(arg):
        return ZeroTangent()
    return _typed_like(arg, cotangent)


def _typed_like(arg, cotangent, top: bool = True):
    """``cotangent`` with the gradient of each real or complex number of ``arg`` (itself, or one
    inside the structure ``arg``) in that number's own type, however the engine computed it: a
    float's a float, a NumPy number's that NumPy type (np.complex128 in, np.complex128 out); an
    integer array inside ``arg`` is a setting, with ``NoTangent()``.

    >>> type(_typed_like(np.complex128(1j), 2.0 + 0j)).__name__
    'complex128'
    >>> _typed_like((1.0, "a"), Tangent[tuple](np.float64(2.0), NoTangent()))
    Tangent[tuple](2.0, NoTangent())
    """
    if type(arg) is float:
        return float(cotangent) if type(cotangent) is np.float64 else cotangent
    if not top and isinstance(arg, np.ndarray) and not _is_inexact(arg):
        return NoTangent()  # an integer array inside a structure is a setting (an index, a count, a shape)
    if isinstance(arg, np.inexact):
        if type(cotangent) is type(arg) or not _is_numeric(cotangent) or np.ndim(cotangent) != 0:
            return cotangent
        return type(arg)(cotangent)
    if not isinstance(cotangent, Tangent) or not _is_structured(arg) or _of_floats_and_arrays(arg):
        return cotangent
    items = structure_items(arg)
    parts = item_tangents(cotangent, arg)
    keys = range(len(items)) if isinstance(items, list) else list(items)
    backing = list(cotangent.backing) if isinstance(cotangent.backing, tuple) else dict(cotangent.backing)
    changed = False
    for position, key in enumerate(keys):
        typed = _typed_like(items[key], parts[key], False)
        if typed is not parts[key]:  # (a namedtuple's tangent may hold its fields by position)
            backing[position if isinstance(backing, list) else key], changed = typed, True
    return _rebuild(type(cotangent), tuple(backing) if isinstance(backing, list) else backing) if changed else cotangent


def _of_floats_and_arrays(arg) -> bool:
    """Whether ``arg`` is a tuple, list or dict of floats and arrays only, the common structure,
    whose gradients the engines give in their types already (no NumPy number to type)."""
    values = arg.values() if type(arg) is dict else arg if type(arg) in (tuple, list) else None
    if values is None:
        return False
    for v in values:
        if type(v) is not float and (type(v) is not np.ndarray or v.dtype.kind not in "fc"):
            return False
    return True


def _is_numeric(x) -> bool:
    """A plain number or NumPy array (not a structure, not an engine's value)."""
    return type(x) in (float, int, complex, np.ndarray) or isinstance(x, np.number)


def _is_structured(x) -> bool:
    """A structure of values (a tuple, a dataclass instance), not a number, an array or an engine's value."""
    return not (_is_numeric(x) or isinstance(x, ActiveValue)) and is_structure(x)


def _is_inexact(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc"
    return isinstance(x, (float, complex, np.inexact))


def _gradients(f: Callable, cotangents: tuple, args: tuple, argnums: int | Sequence[int] | None):
    """The user's gradients from ``f``'s full pullback's result (checked, see ``checked_cotangents``), for the
    arguments ``argnums`` selects: only those are unthunked (an unselected thunk may be costly and
    is never computed)."""
    if argnums is None and type(cotangents) is tuple and len(cotangents) == len(args) + 1:
        i = 0
        for a in args:  # scalar code: plain floats for floats, as they are
            i += 1
            if type(cotangents[i]) is not float or type(a) is not float:
                break
        else:
            return cotangents[1:]
    checked_cotangents(f, cotangents, args)
    if argnums is None:
        return _owned(_unthunked(cotangents, args))
    positions = range(len(args))
    try:
        if isinstance(argnums, (int, np.integer)):
            i = positions[argnums]
            return _owned(_as_returned(args[i], cotangents[1 + i]))
        chosen = [positions[j] for j in argnums]
    except (IndexError, TypeError) as exc:
        what = f"argnums={argnums!r} does not select among the {len(args)} positional argument(s) given"
        raise type(exc)(what + ("" if isinstance(exc, IndexError) else ": give an int or a sequence of ints")) from None
    return _owned(tuple(_as_returned(args[i], cotangents[1 + i]) for i in chosen))


def _seed_for(y, f: Callable, entry: str = "gradient"):
    if type(y) is float:
        return 1.0
    if isinstance(y, (float, int, np.floating, np.integer)) and not isinstance(y, bool):
        return 1.0
    if isinstance(y, np.ndarray) and y.shape == () and y.dtype.kind in "fiu":
        return np.ones((), dtype=y.dtype if y.dtype.kind == "f" else float)
    # a real scalar that an engine follows (nested differentiation) describes itself like NumPy's
    dtype = getattr(y, "dtype", None)
    if getattr(y, "shape", None) == () and isinstance(dtype, np.dtype) and dtype.kind in "fiu":
        # in its own precision: no projection at the end turns an engine's float64 values back to float32
        return dtype.type(1.0) if dtype.kind == "f" and dtype != np.float64 else 1.0
    name = callable_label(f)
    shape = getattr(y, "shape", None)
    kind = type(y).__name__
    if isinstance(y, ActiveValue) and isinstance(shape, tuple):  # an engine's value: say what it carries
        kind = "an array" if shape else "complex" if getattr(dtype, "kind", None) == "c" else kind
    raise ChainRulesError(
        f"{entry} needs {name} to return a real scalar, got {kind}"
        f"{' of shape ' + str(shape) if isinstance(shape, tuple) and shape else ''}; "
        "reduce the output to a scalar (e.g. .sum()), or use cr.jacobian or cr.pullback"
    )


def value_and_gradient(
    f: Callable,
    *args,
    engine: str = DEFAULT_ENGINE,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    **kwargs,
):
    """``(y, grads)`` for a real-scalar ``f``: ``grads`` has one gradient per positional argument.

    ``argnums`` selects arguments (an int gives one gradient, a sequence a tuple); the others
    are constants, as values ``f`` closes over are, so code with no rule may read them. With
    ``has_aux=True``, ``f`` returns ``(y, aux)`` and the result is ``((y, aux), grads)``; only
    ``y`` is differentiated.

    >>> import chainrules as cr
    >>> cr.value_and_gradient(lambda x, y: x * y + y, 2.0, 3.0)
    (9.0, (3.0, 3.0))
    """
    return _value_and_gradient(f, args, kwargs, engine, argnums, has_aux)


def _value_and_gradient(
    f: Callable, args: tuple, kwargs: dict, engine: str, argnums, has_aux: bool, entry: str = "gradient"
):
    _check_callable(f, entry)
    if _ON_THE_TAPE_USED[0]:
        engine = _remembered_engine(engine, f)
    module = _reverse_engine(engine)
    constants = _unselected(argnums, len(args))
    # The cyclic garbage collector is paused from the forward pass to the end of the sweep: a
    # pullback holds a few small objects per operation (closures, boxes, tape entries), freed by
    # reference counting as the sweep runs; a collection in between would traverse all of them
    # (on a 2,000-operation tape, 7% of the gradient's time).
    pause_gc = gc.isenabled()
    if pause_gc:
        gc.disable()
    try:
        try:
            if constants:
                y, back_full = _run_reverse(module, f, args, kwargs, constants)
            else:  # (``_pullback_full``, without a call on this path)
                y, back_full = module.pullback_full(f, *args, **kwargs)
        except _TAPE_TAKES_OVER as refusal:
            if engine != "source":
                raise
            y, back_full = _on_the_tape(refusal, f, args, kwargs, constants)
        if has_aux:
            # f itself is differentiated (a wrapper would be library code to the source engine),
            # with a zero cotangent for aux
            if not isinstance(y, (tuple, list)) or len(y) != 2:
                raise ChainRulesError(
                    f"has_aux=True needs {callable_label(f)} to return a pair (value, aux), got {type(y).__name__}"
                )
            seed = Tangent[type(y)](_seed_for(y[0], f, entry), ZeroTangent())
            return (y[0], y[1]), _gradients(f, _once(back_full)(seed), args, argnums)
        seed = 1.0 if type(y) is float else _seed_for(y, f, entry)
        return y, _gradients(f, _once(back_full)(seed), args, argnums)
    finally:
        if pause_gc:
            gc.enable()


def _once(back_full: Callable) -> Callable:
    """The pullback for its single call in a gradient: ``back.last_call`` where the engine has it,
    so that it can free what the pullback holds as it sweeps."""
    return getattr(back_full, "last_call", back_full)


def gradient(
    f: Callable,
    *args,
    engine: str = DEFAULT_ENGINE,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    **kwargs,
):
    """The gradient of a real-scalar ``f``: a tuple with one entry per positional argument.

    An argument the output does not depend on gets ``ZeroTangent()``; a discrete one (an index,
    a bool, a string) ``NoTangent()``. Integer inputs used arithmetically get float gradients.

    >>> import chainrules as cr
    >>> cr.gradient(lambda a, b: a / (a + b * b), 2.0, 3.0)  # doctest: +ELLIPSIS
    (0.0743..., -0.0991...)
    """
    value, grads = _value_and_gradient(f, args, kwargs, engine, argnums, has_aux)
    return (grads, value[1]) if has_aux else grads


def jvp(f: Callable, primals: tuple, tangents: tuple):
    """``(y, dy)``: the output of ``f(*primals)`` and its tangent along ``tangents`` (forward mode).

    Where dual numbers cannot pass through ``f`` as Python runs it (``math.sin(x)``, a write into
    a plain ``np.zeros(n)``, a library function with a rule), ``f`` runs as the source engine's
    primal runs it, still in forward mode (see ``_forward``); ``cr.derivative`` and
    ``cr.jacobian(..., mode="forward")`` do the same. Each tangent has its primal's shape, and is
    real for a real primal (a complex one is refused: a real input moves along real directions).
    A structured primal's tangent is a ``Tangent`` or a value laid out as the primal; an integer
    number inside it is a setting, whose tangent is ignored.

    >>> import chainrules as cr
    >>> cr.jvp(lambda x, y: x * y, (2.0, 3.0), (1.0, 0.0))
    (6.0, 3.0)
    """
    _check_callable(f, "jvp")
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError("jvp(f, primals, tangents): primals and tangents must be tuples")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    for i, (x, t) in enumerate(zip(primals, tangents)):
        _check_tangent(f, f"tangent {i}", x, t)
    if any(type(x) not in _PLAIN for x in primals):  # (scalar code: nothing to look at)
        tangents = tuple(
            _structural_tangent(f, i, x, t) if _is_structured(x) else t
            for i, (x, t) in enumerate(zip(primals, tangents))
        )
    y, dy = _forward(_forward_engine().jvp, f, primals, tangents)
    return y, _owned(_deep_unthunk(dy), tangents)


def _check_tangent(f: Callable, what: str, x, t) -> None:
    """A ValueError naming ``f`` where the tangent ``t`` (``what``: ``tangent 0``) does not fit its
    number or array primal ``x``: another shape, or complex for a real ``x``."""
    if isinstance(t, (np.ndarray, float, int, complex)) and np.shape(t) != np.shape(x) and _is_numeric(x):
        raise ValueError(f"jvp({callable_label(f)}, ...): {what} has shape {np.shape(t)}, its primal {np.shape(x)}")
    if _is_numeric(t) and _is_numeric(x) and np.iscomplexobj(t) and not np.iscomplexobj(x):
        raise ValueError(
            f"jvp({callable_label(f)}, ...): {what} is complex and its primal is real; a real input "
            "moves along real directions only (for a complex direction, make the input complex: x + 0j)"
        )


def derivative(f: Callable, x):
    """``f'(x)`` for a scalar ``x``, by forward mode.

    >>> import chainrules as cr
    >>> cr.derivative(lambda x: x ** 3, 2.0)
    12.0
    """
    _check_callable(f, "derivative")
    if type(x) is not float and np.ndim(x) != 0:
        raise ValueError(
            f"derivative({callable_label(f)}, x) is for a scalar x, got an array of shape {np.shape(x)}; "
            "use cr.jacobian(f, x) or cr.jvp(f, (x,), (tangent,))"
        )
    return _as_number_of(x, jvp(f, (x,), (1.0 if not isinstance(x, complex) else 1.0 + 0j,))[1])


def _as_number_of(x, d):
    """A derivative at a Python number ``x`` as a Python number: NumPy's functions compute in NumPy
    scalars and 0-d arrays, and a float input gets a float derivative, however it was nested; at a
    NumPy number, a NumPy number (np.float32 in, np.float32 out, as ``gradient`` gives it)."""
    if type(x) in (float, int, complex) and (
        type(d) in (np.float64, np.complex128)
        or (type(d) is np.ndarray and d.shape == () and d.dtype in (np.float64, np.complex128))
    ):
        return d.item()
    if isinstance(x, np.generic) and type(d) is np.ndarray and d.shape == ():
        return d.item() if isinstance(x, np.integer) else d[()]  # (an integer's is a float, as gradient's)
    return d


def _size(x) -> int:
    """The number of entries of a value, or of a Jacobian: those of its number leaves for a structure."""
    if type(x) is np.ndarray:
        return x.size
    if isinstance(x, Tangent):
        backing = x.backing
        return sum(_size(v) for v in (backing.values() if isinstance(backing, dict) else backing))
    if is_structure(x):
        items = structure_items(x)
        return sum(_size(v) for v in (items if isinstance(items, list) else items.values()))
    return int(np.size(x)) if _is_number(x) else 0


def _auto_key(x) -> tuple:
    """What ``mode="auto"`` remembers its choice by: the input's shape and dtype, per leaf for a structure."""
    if type(x) is np.ndarray:
        return x.shape, x.dtype
    if is_structure(x):
        return type(x), tuple((np.shape(v), _leaf_dtype(v)) for v in leaves(x, _is_input_leaf))
    return np.shape(x), getattr(x, "dtype", type(x))


def jacobian(f: Callable, x, mode: str = "auto", engine: str = DEFAULT_ENGINE, chunk_size: int | None = None):
    """The Jacobian of ``f`` at ``x``, of shape ``out.shape + x.shape``.

    For a structured output (tuple, list, dict, namedtuple, dataclass) it is a ``Tangent[P]``
    holding the Jacobian of each number or array of the output, and for a structured input each
    of those is a ``Tangent[Q]`` of the input's structure, down to blocks of shape
    ``out_leaf.shape + in_leaf.shape``: the same in every mode and engine. An integer array in the
    input gets a float block; an integer number in it is a setting, ``NoTangent()``, and so is an
    input with nothing to differentiate (a tuple of settings).

    For complex values, column ``k`` is the derivative along the real unit ``e_k`` (forward mode's
    pushforward of ``e_k``): ``f'(z)`` for a holomorphic ``f``, real for a real output.

    ``mode="forward"`` pushes tangents forward (through the source engine's primal where the
    duals cannot pass through ``f`` as Python runs it, as ``jvp``), ``"reverse"`` pulls cotangents back, ``"auto"``
    picks forward when the input is no larger than the output and reverse otherwise (for a square
    Jacobian both modes take as many tangents as cotangents, and a forward pass keeps no pullbacks:
    forward mode, as JAX's autodiff cookbook advises for near-square Jacobians). To see the
    output, ``"auto"`` runs ``f``'s reverse-mode primal, which reverse mode then uses; it
    remembers its choice per function and input shape and dtype, so a later call goes straight
    to the mode chosen (either mode gives the same Jacobian; the choice is only about speed).
    Where forward mode refuses ``f`` (a ``TypeError``: a call of a library function with a
    rule, such as ``scipy.linalg.solve_triangular``, ``math.sin`` of a dual number, a write into a
    plain NumPy buffer), ``"auto"`` uses reverse mode, and keeps to it for that function and input.
    Where reverse mode refuses ``f`` (a callable with a forward rule only; where the source engine
    refuses ``f``'s Python, reverse mode is the tape's), ``"auto"`` uses forward mode, whatever the
    sizes; where both refuse it, the reverse engine's refusal is raised.

    Reverse mode pulls back a block of unit cotangents at once (rows of the identity, a
    ``BasisSeed``: its products select rows instead of multiplying) when every rule ``f`` calls
    takes a batch; otherwise it pulls back one cotangent per output entry. ``chunk_size`` is the
    number of tangents (forward) or cotangents (reverse) per pass; by default a pass holds up to
    ``REVERSE_BATCH_BUDGET`` numbers per cotangent block.

    >>> import numpy as np, chainrules as cr
    >>> W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> cr.jacobian(lambda x: W @ x, np.ones(2)).shape
    (3, 2)
    >>> cr.jacobian(lambda x: (x[0], 2.0 * x[1]), np.ones(2), mode="reverse")
    Tangent[tuple](array([1., 0.]), array([0., 2.]))
    """
    _check_callable(f, "jacobian")
    chunk_size = _checked_chunk_size(chunk_size)
    _checked_engine(engine)  # (forward mode takes none)
    if mode == "reverse":
        y, back_full = _pullback_full(engine, f, x)
        return _reverse_jacobian(x, _jacobian_output(f, y), back_full, chunk_size)
    if mode == "forward":
        return _forward(_forward_jacobian, f, x, chunk_size)
    if mode != "auto":
        raise ValueError(f"jacobian: mode={mode!r}; choose 'auto', 'forward' or 'reverse'")
    key = _auto_key(x)
    chosen = _chosen_before(f, key)
    if chosen == _FORWARD:
        try:
            J = _forward_jacobian(f, x, chunk_size)
        except TypeError:  # forward mode refuses f here (another branch than before): reverse mode, from now on
            J = jacobian(f, x, "reverse", engine, chunk_size)
            _remember_choice(f, key, _FORWARD_REFUSED)
            return J
        if not auto_picks_forward(_size(x), _size(J) // max(_size(x), 1)):  # the output shrank: reverse next time
            _remember_choice(f, key, _REVERSE)
        return J
    if chosen == _FORWARD_REFUSED:
        return jacobian(f, x, "reverse", engine, chunk_size)
    try:  # the reverse-mode primal gives the output's size, and is reused if reverse mode wins
        pulled = _pullback_full(engine, f, x)
    except ChainRulesError as refusal:  # reverse mode cannot differentiate f: forward mode may
        try:
            return _forward_jacobian(f, x, chunk_size)
        except Exception as error:
            refusal.add_note(f"Forward mode could not compute the Jacobian either: {type(error).__name__}: {error}")
            raise refusal from None
    forward = auto_picks_forward(_size(x), _size(_jacobian_output(f, pulled[0])))
    if forward or chosen is None:  # a choice of reverse mode that still holds is not written again
        _remember_choice(f, key, _FORWARD if forward else _REVERSE)
    if forward:
        try:
            return _forward_jacobian(f, x, chunk_size)
        except TypeError:  # forward mode refuses what reverse mode ran: the pullback at hand gives the Jacobian
            _remember_choice(f, key, _FORWARD_REFUSED)
    return _reverse_jacobian(x, *pulled, chunk_size)


def auto_picks_forward(inputs: int, outputs: int) -> bool:
    """Whether ``jacobian(mode="auto")`` takes forward mode for a function of ``inputs`` numbers
    to ``outputs`` numbers: where the input is no larger than the output (a square Jacobian too:
    as many tangents as cotangents, and a forward pass keeps no pullbacks, as JAX's autodiff
    cookbook advises for near-square Jacobians).

    >>> auto_picks_forward(10, 10), auto_picks_forward(1000, 10)
    (True, False)
    """
    return inputs <= outputs


def _forward_jacobian(f: Callable, x, chunk_size: int | None = None):
    """The forward engine's Jacobian of ``f`` at ``x``."""
    return _forward_engine().jacobian(f, x, chunk_size=chunk_size)


#: the modes chosen for a function: ``mode="auto"``'s, {(input shape, dtype): one of the three
#: below}, forward mode's ``_THROUGH_SOURCE`` and reverse mode's ``_ON_THE_TAPE`` under their own keys
_auto_choices: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_FORWARD, _REVERSE = "forward", "reverse"
_FORWARD_REFUSED = "reverse: forward mode refused the function"  # (sizes are not compared again)
_THROUGH_SOURCE = "forward, through the source engine's primal"
_ON_THE_TAPE = "reverse, on the tape: the source engine refused the function"


def _chosen_before(f, key) -> str | None:
    try:
        choices = _auto_choices.get(f)
    except TypeError:  # a callable that cannot be weakly referenced (or hashed): nothing remembered
        return None
    return None if choices is None else choices.get(key)


def _remember_choice(f, key, choice: str) -> None:
    try:
        choices = _auto_choices.setdefault(f, {})
    except TypeError:
        return
    if len(choices) >= 16:  # a function called on ever new shapes: keep the memory bounded
        choices.clear()
    choices[key] = choice


#: the most numbers one reverse-mode pass's block of cotangents may hold (chunk * size of the
#: larger of input and output): 2**22 float64 numbers are 32 MiB
REVERSE_BATCH_BUDGET = 2**22


def _reverse_chunk(m: int, width: int, chunk_size: int | None) -> int:
    """Cotangents per reverse pass: all ``m`` if the block fits the budget, else passes of even size."""
    if chunk_size is not None:
        return max(1, min(int(chunk_size), m))
    largest = max(1, min(m, REVERSE_BATCH_BUDGET // max(width, 1)))
    passes = -(-m // largest)
    return -(-m // passes)


def _jacobian_output(f: Callable, y):
    """``y``, refused when it is a tangent (a gradient returned as it is): a Jacobian's output is a
    number, an array or a structure of them, and a tangent's fields are not its own output's."""
    if isinstance(y, AbstractTangent):
        raise TypeError(
            f"jacobian: {callable_label(f)} returned a {type(y).__name__}; it must return a number, an array, "
            "or a structure of them (a gradient's tangent: return its fields, e.g. as a tuple)"
        )
    return y


def _reverse_jacobian(x, y, back_full, chunk_size: int | None = None):
    if not (_is_numeric(y) and _is_numeric(x)) and (
        isinstance(x, ActiveValue) or isinstance(y, ActiveValue) or is_structure(y) or is_structure(x)
    ):
        return _structured_reverse_jacobian(x, y, back_full)
    if type(y) is np.ndarray and type(x) is np.ndarray:  # the common case, without the conversions
        y_arr, x_arr = y, x
        dtype = x.dtype if y.dtype == x.dtype else np.promote_types(y.dtype, x.dtype)
    else:
        y_arr = np.asarray(y)
        x_arr = np.asarray(x)
        dtype = np.result_type(y_arr.dtype, x_arr.dtype)
    if dtype.kind not in "fc":  # integer inputs or outputs get float derivatives; float32 stays float32
        dtype = np.dtype(np.float64)
    m = y_arr.size
    if m > 1 and getattr(back_full, "batched", False) and isinstance(x, (np.ndarray, float, complex)):
        y_shape, x_shape = y_arr.shape, x_arr.shape
        if chunk_size is None and m * max(m, x_arr.size) <= REVERSE_BATCH_BUDGET:  # one block: the common case
            seed = basis_seed(m, y_shape, 0, dtype)
            if dtype.kind == "c":  # complex values: real parts of pullbacks (see `_complex_rows`)
                J = np.empty((m, *x_shape), dtype=dtype)
                _complex_rows(J, x, x_shape, back_full, seed, y_arr.dtype.kind == "c")
            else:
                J = back_full(seed)[1]
                if type(J) is not np.ndarray:
                    J = _block_cotangent(x, x_shape, J, m, dtype)
                # a fresh, writeable array of the result dtype (a pass may return a view of an operand)
                if J.dtype != dtype or not J.flags.writeable or (J.base is not None and not _owns_block(J)):
                    J = np.array(J, dtype=dtype)
            return J if J.shape == y_shape + x_shape else J.reshape(y_shape + x_shape)
        return _batched_jacobian(x, y_shape, x_shape, back_full, dtype, chunk_size, y_arr.dtype.kind == "c")
    J = np.zeros(y_arr.shape + x_arr.shape, dtype=dtype)
    seed = np.zeros(y_arr.shape, dtype=dtype)
    flat_J = J.reshape(m, *x_arr.shape)
    if dtype.kind == "c":  # complex values: real parts of pullbacks (see `_complex_rows`)
        units = ((1.0, flat_J.real), (1j, flat_J.imag)) if y_arr.dtype.kind == "c" else ((1.0, flat_J.real),)
        for i in range(m):
            for unit, part in units:
                seed.reshape(-1)[i] = unit
                dx = _unthunked(back_full(seed if y_arr.ndim else seed[()]), (x,))[0]
                if not isinstance(dx, AbstractZero):
                    part[i] = np.real(dx)
            seed.reshape(-1)[i] = 0.0
        return J
    for i in range(m):  # one sweep per output entry: some rule on the way takes one cotangent at a time
        seed.reshape(-1)[i] = 1.0
        dx = _unthunked(back_full(seed if y_arr.ndim else seed[()]), (x,))[0]
        if not isinstance(dx, AbstractZero):
            flat_J[i] = dx
        seed.reshape(-1)[i] = 0.0
    return J


# ----- complex values -------------------------------------------------------------------------
# The Jacobian is forward mode's: column k is the pushforward of the real unit tangent e_k,
# J[i, k] = df_i(x; e_k) (f'(z) for a holomorphic f; the derivative along the real axis of x_k
# for a non-holomorphic one). A pullback is the adjoint L^T of the real-linear pushforward L under
# the real inner product <u, v> = Re(sum(conj(u) * v)), so for any cotangent u, as e_k is real,
#     Re(conj(u) * L(e_k)) = <u, L(e_k)> = <L^T(u), e_k> = Re(conj(L^T(u)_k)) = Re(L^T(u)_k).
# With u = e_i this is Re(J[i, k]) = Re(pullback(e_i)_k); with u = 1j * e_i it is
# Re(-1j * J[i, k]) = Im(J[i, k]) = Re(pullback(1j * e_i)_k). So
#     J[i, k] = Re(pullback(e_i)_k) + 1j * Re(pullback(1j * e_i)_k),
# the second sweep only for a complex output (a real output's J is Re(pullback(e_i)), real).
# (The pullbacks of real unit cotangents stacked as they are would be conj(J) for a holomorphic f
# and would drop the imaginary part of a complex output's derivative.)


def _complex_rows(out: np.ndarray, x, x_shape: tuple, back_full, seed, complex_output: bool) -> None:
    """Write the Jacobian rows of a block of unit cotangents ``seed`` into the complex array ``out``
    of shape ``(rows, *x_shape)``: the real parts of the pullbacks of ``seed`` and, for a complex
    output, of ``1j * seed`` (a scaled block: its units stay units), as the section's comment derives."""
    rows = out.shape[0]
    out.real[...] = np.real(_block_cotangent(x, x_shape, back_full(seed)[1], rows, out.dtype))
    if complex_output:
        out.imag[...] = np.real(_block_cotangent(x, x_shape, back_full(seed * 1j)[1], rows, out.dtype))
    else:
        out.imag[...] = 0.0


def _batched_jacobian(x, y_shape: tuple, x_shape: tuple, back_full, dtype, chunk_size, complex_output=False):
    """The Jacobian from blocks of unit cotangents, each pulled back in one call of ``back_full``
    (``_reverse_jacobian`` pulls back a Jacobian that fits in one block itself); for complex
    values, a block's rows are ``_complex_rows``."""
    m = math.prod(y_shape)
    chunk = _reverse_chunk(m, max(m, math.prod(x_shape)), chunk_size)
    J = np.empty((m, *x_shape), dtype=dtype)
    for first in range(0, m, chunk):
        rows = min(chunk, m - first)
        seed = basis_seed(rows, y_shape, first, dtype)
        if dtype.kind == "c":
            _complex_rows(J[first : first + rows], x, x_shape, back_full, seed, complex_output)
        else:
            J[first : first + rows] = _block_cotangent(x, x_shape, back_full(seed)[1], rows, dtype)
    return J.reshape(y_shape + x_shape)


def _block_cotangent(x, x_shape: tuple, dx, rows: int, dtype) -> np.ndarray:
    """A pass's cotangent of ``x`` as an array of shape ``(rows, *x_shape)``."""
    if type(dx) is np.ndarray:
        return dx
    if isinstance(dx, AbstractThunk):
        dx = dx.unthunk()
        if type(dx) is np.ndarray:
            return dx
    dx = _as_returned(x, dx)
    if isinstance(dx, AbstractZero):
        return np.zeros((rows, *x_shape), dtype=dtype)
    return np.asarray(dx)


# ----- Jacobians of structured inputs and outputs -------------------------------------------
# Laid out as forward mode lays them out: a ``Tangent[P]`` of the output's structure, each of
# whose number leaves holds the Jacobian of that leaf, itself a ``Tangent[Q]`` of the input's
# structure when the input is structured, down to blocks of shape ``out_leaf.shape + in_leaf.shape``.


def _is_number(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (float, int, complex, np.number)) or (isinstance(x, np.ndarray) and x.dtype.kind in "iufc")


def _is_input_leaf(x, top: bool) -> bool:
    """A leaf of ``x`` differentiated with respect to: a bare number or array, or an inexact one
    inside a structure (an integer number or array inside one is a setting, a count, a size or an
    index: docs/tangents.md)."""
    return _is_number(x) and (top or _is_inexact(x))


def _is_forward_leaf(x, top: bool) -> bool:
    """A leaf of ``x`` that forward mode seeds, and a reverse-mode Jacobian gives a block: an input
    leaf, or an engine's value (a dual of an outer differentiation, or one forward mode seeded)."""
    return isinstance(x, ActiveValue) or _is_input_leaf(x, top)


def _tangent_leaves(t, x, is_leaf: Callable = _is_forward_leaf, top: bool = True) -> list:
    """The parts of the tangent ``t`` of ``x`` at its leaves (``is_leaf``), in leaf order (zeros where missing)."""
    t = unthunk(t)
    if is_leaf(x, top):
        return [t]
    if not is_structure(x):
        return []
    items = structure_items(x)
    parts = item_tangents(t, x)
    if isinstance(items, list):
        return [leaf for v, dv in zip(items, parts) for leaf in _tangent_leaves(dv, v, is_leaf, False)]
    return [leaf for k, v in items.items() for leaf in _tangent_leaves(parts[k], v, is_leaf, False)]


def _leaf_dtype(x) -> np.dtype:
    dtype = np.result_type(_innermost_value(x))
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _is_output_leaf(y, top: bool) -> bool:
    """A leaf of a Jacobian's output: a number or an array, or an engine's value (a dual of an outer
    differentiation, an outer tape's tracked value)."""
    return _is_number(y) or isinstance(y, ActiveValue)


def _structured_reverse_jacobian(x, y, back_full):
    """The Jacobian of a structured output, at a structured input, or at another engine's values,
    one pullback per output entry. Each block stacks its rows, as an outer differentiation's values
    written into a plain array would drop what they carry."""
    ins = leaves(x, _is_forward_leaf)
    outs = leaves(y, _is_output_leaf)
    blocks = []
    for k, out in enumerate(outs):
        out_shape, out_dtype = np.shape(out), _leaf_dtype(out)
        dtypes = [np.promote_types(out_dtype, _leaf_dtype(v)) for v in ins]
        rows = [[] for _ in ins]
        # an integer output has no derivative: its blocks stay zero
        for i in range(math.prod(out_shape) if _is_inexact(_innermost_value(out)) else 0):
            # complex values: real parts of pullbacks, of e_i and, for a complex output, of 1j * e_i
            # (see `_complex_rows`)
            real = _pulled_back_unit(x, y, outs, k, i, 1.0, back_full)
            imag = _pulled_back_unit(x, y, outs, k, i, 1j, back_full) if out_dtype.kind == "c" else None
            for j, v in enumerate(ins):
                rows[j].append(_jacobian_row(real[j], None if imag is None else imag[j], np.shape(v), dtypes[j]))
        row = [_stacked_block(r, out_shape + np.shape(v), dtype) for r, v, dtype in zip(rows, ins, dtypes)]
        # an input with nothing to differentiate (a tuple of integer settings) has no derivative at
        # all, as its gradient and forward mode say
        blocks.append(tangent_like(x, _is_forward_leaf, row, NoTangent()) if ins else NoTangent())
    return tangent_like(y, _is_output_leaf, blocks, NoTangent())


def _pulled_back_unit(x, y, outs: list, k: int, i: int, unit, back_full) -> list:
    """The cotangents of ``x``'s leaves from the pullback of ``unit`` at entry ``i`` of output leaf ``k``."""
    seed = np.zeros(np.shape(outs[k]), dtype=_leaf_dtype(outs[k]))  # fresh: an outer tape may keep it
    seed.reshape(-1)[i] = unit
    cotangents = [ZeroTangent()] * len(outs)
    cotangents[k] = seed if seed.ndim else seed[()]  # a Python number output takes a scalar cotangent
    dx = back_full(tangent_like(y, _is_output_leaf, cotangents, NoTangent()))[1]
    return [part if isinstance(part, AbstractZero) else _deep_unthunk(part) for part in _tangent_leaves(dx, x)]


def _jacobian_row(real, imag, shape: tuple, dtype):
    """A Jacobian row from the pullbacks of a unit ``real`` and of ``1j`` times it ``imag`` (``None``
    for a real output): the real part of the first plus ``1j`` times that of the second."""
    row = np.zeros(shape, dtype=dtype) if isinstance(real, AbstractZero) else real
    if np.iscomplexobj(row):
        row = np.real(row)
    if imag is not None and not isinstance(imag, AbstractZero):
        row = row + 1j * np.real(imag)
    return row


def _stacked_block(rows: list, shape: tuple, dtype):
    """A Jacobian's block of ``shape`` from its rows: a plain array of ``dtype``, or an engine's value
    where the rows are (complex, as forward mode's Jacobian of complex values)."""
    if not rows:
        return np.zeros(shape, dtype=dtype)
    block = np.reshape(np.stack(rows), shape)
    if not isinstance(block, ActiveValue):
        return block.astype(dtype, copy=False)
    return block + 0j if dtype.kind == "c" and not np.iscomplexobj(block) else block


def _owns_block(a: np.ndarray) -> bool:
    """Whether ``a`` is its own memory or a reshape of a block made for it (not a view of a user's array)."""
    base = a.base
    return base is None or (type(base) is np.ndarray and base.base is None and base.size == a.size)


def hessian(f: Callable, x, *, engine: str = DEFAULT_ENGINE):
    """The Hessian of a real-scalar ``f`` at ``x``: forward mode over the reverse-mode gradient.

    Where the reverse engine refuses ``f`` (a callable with a forward rule only; where the source
    engine refuses ``f``'s Python, the gradient is the tape's), at a number or an array ``x``, it is
    forward mode over forward mode.

    At a structured ``x`` (tuple, list, dict, namedtuple, dataclass) it is laid out as ``jacobian``
    lays out the Jacobian of the gradient: a ``Tangent`` of ``x``'s structure whose leaves are
    again ``Tangent`` values of ``x``'s structure, down to blocks of shape ``leaf_i.shape + leaf_j.shape``.

    >>> import numpy as np, chainrules as cr
    >>> cr.hessian(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    >>> cr.hessian(lambda t: t[0] ** 2 * t[1], (1.0, 3.0))
    Tangent[tuple](Tangent[tuple](array(6.), array(2.)), Tangent[tuple](array(2.), array(0.)))
    """
    _check_callable(f, "hessian")
    if not _is_numeric(x) and is_structure(x):
        # the gradient at a structured x is a Tangent of x's structure: read it back into that
        # structure, whose Jacobian forward mode lays out as it lays out any structured output
        return _forward_jacobian(lambda z: _with_leaves(z, _hessian_gradient(f, z, engine)), x)

    def dense_gradient(z):
        g = _hessian_gradient(f, z, engine)
        # an f that does not depend on x has a zero gradient, whose Jacobian is zeros
        return np.zeros(np.shape(z), dtype=_leaf_dtype(z)) if isinstance(g, AbstractZero) else g

    try:
        H = _forward_engine().jacobian(dense_gradient, x)
    except (UnsupportedSyntaxError, NoRuleError) as refusal:
        H = _forward_over_forward(f, x, refusal)
    return _as_number_of(x, H)


def _hessian_gradient(f: Callable, z, engine: str):
    """``cr.gradient(f, z)[0]``, its errors naming ``hessian``."""
    return _value_and_gradient(f, (z,), {}, engine, None, False, "hessian")[1][0]


def _forward_over_forward(f: Callable, x, refusal: Exception):
    """The Hessian of a real-scalar ``f`` by forward mode over forward mode (its gradient a
    Jacobian of one output), where the reverse engine refuses ``f`` (a callable with a forward rule
    only; ``try`` where the tape refuses too); ``refusal`` is raised where this fails too."""
    forward = _forward_engine()

    def forward_gradient(z):
        g = forward.jacobian(f, z)
        if np.shape(g) != np.shape(z):
            raise refusal  # f's output is not one number: the reverse engine's refusal stands
        return g

    try:
        return forward.jacobian(forward_gradient, x)
    except Exception as error:
        if error is not refusal:
            refusal.add_note(f"Forward mode over forward mode failed too: {type(error).__name__}: {error}")
        raise refusal from None


def _with_leaves(x, t, top: bool = True):
    """A value of ``x``'s structure holding the tangent ``t`` of ``x`` at its leaves (see
    ``_is_forward_leaf``), zeros of the leaf's shape where ``t`` is zero, and ``NoTangent()`` at its
    other parts (strings, bools, integers: no derivative reaches them)."""
    if _is_forward_leaf(x, top):
        t = unthunk(t)
        if not isinstance(t, AbstractZero):
            return t
        return np.zeros(np.shape(x), dtype=_leaf_dtype(x))[()]
    if not is_structure(x):
        return NoTangent()
    items = structure_items(x)
    parts = item_tangents(t, x)
    if isinstance(items, list):
        values = [_with_leaves(v, d, False) for v, d in zip(items, parts)]
        return type(x)(values) if type(x) in (tuple, list) else type(x)(*values)
    values = {k: _with_leaves(v, parts[k], False) for k, v in items.items()}
    if type(x) is dict:
        return values
    if _is_namedtuple_type(type(x)):
        return namedtuple_with(x, values)
    return with_fields(x, values)


def show(f: Callable, *args, **kwargs) -> str:
    """The primal and pullback code the source engine generates for ``f(*args, **kwargs)``, as Python source.

    >>> import chainrules as cr
    >>> def f(a, b):
    ...     return a / (a + b * b)
    >>> "def " in cr.show(f, 2.0, 3.0)
    True
    """
    return _reverse_engine("source").show(f, *args, **kwargs)


__all__ = [
    "DEFAULT_ENGINE",
    "REVERSE_ENGINES",
    "derivative",
    "gradient",
    "hessian",
    "jacobian",
    "jvp",
    "pullback",
    "show",
    "value_and_gradient",
]


# ----- nested reverse mode -----------------------------------------------------------------------
#
# A `gradient`, `value_and_gradient` or `pullback` call inside a function that a reverse engine
# differentiates by its rules (the source engine) is differentiated by these rules. The output of
# `gradient(f, x)` is g(x) = ∇f(x); its pullback along a cotangent v is Hᵀv = Hv, the
# Hessian-vector product, because the Hessian of a scalar function is symmetric. Hv is the
# directional derivative of the gradient along v: forward mode over the reverse-mode gradient
# (Pearlmutter, "Fast exact multiplication by the Hessian", 1994). The gradient taken is the *full*
# one, including the tangent of `f` itself (what a closure or a model captured), so the captured
# values get their cotangents from the same product: the Hessian over (captures, x) is symmetric
# too, and v has no component along the captures. A pullback `back(dy) = Jᵀdy` is the gradient of
# the scalar ⟨dy, f(x)⟩: its cotangent along w is J w for `dy` and the same Hessian-vector product
# of ⟨dy, f⟩ for x and the captures.


def _items(d, n: int) -> list:
    """The cotangents of the ``n`` items of a tuple output, from the tuple's cotangent."""
    d = unthunk(d)
    if isinstance(d, AbstractZero):
        return [ZeroTangent()] * n
    items = list(d.backing if isinstance(d, Tangent) else d)
    if len(items) != n:
        raise ValueError(f"a cotangent of {len(items)} items for a tuple of {n}")
    return items


def _is_zero(d) -> bool:
    return isinstance(unthunk(d), AbstractZero)


def _inner_pullback_full(engine: str, f: Callable, *args, **kwargs):
    """``_pullback_full`` for the rule of an entry point called inside a function being
    differentiated: ``f``'s tangent ``df`` must carry what it captured from that function, whose
    variables may be plain values there (``CAPTURES_WANTED``)."""
    token = CAPTURES_WANTED.set(True)
    try:
        return _pullback_full(engine, f, *args, **kwargs)
    finally:
        CAPTURES_WANTED.reset(token)


def _full_cotangents(engine: str, f: Callable, args: tuple, kwargs: dict, seed) -> tuple:
    """``(df, dx1, ..., dxn)``: the full pullback of ``f`` at ``args`` along ``seed`` (``seed(y)``
    for a seed that depends on the output), unthunked; run by the forward engine's duals too."""
    y, back = _inner_pullback_full(engine, f, *args, **kwargs)
    return tuple(_deep_unthunk(d) for d in back(seed(y) if callable(seed) else seed))


def _hessian_vector(engine: str, f: Callable, args: tuple, kwargs: dict, seed, direction: list) -> tuple:
    """``(df, dx1, ...)``: the derivative of ``f``'s full pullback along ``seed`` when the arguments
    move along ``direction`` (forward over reverse); zeros where nothing moves."""
    if all(_is_zero(d) for d in direction):
        return (ZeroTangent(),) * (len(args) + 1)
    _, tangents = jvp(lambda *xs: _full_cotangents(engine, f, xs, kwargs, seed), tuple(args), tuple(direction))
    return tuple(_items(tangents, len(args) + 1))


def _sum_cotangents(a: tuple, b: tuple) -> tuple:
    return tuple(y if _is_zero(x) else x if _is_zero(y) else add(x, y) for x, y in zip(a, b))


def _matched(args: tuple, cotangents: tuple) -> tuple:
    """``(df, dx1, ...)`` with each argument's cotangent in that argument's own type, as a rule's are:
    the forward pass of a Hessian-vector product computes in NumPy scalars, and a float argument
    gets a float (``np.float64`` would reach the user through the outer differentiation)."""
    return (cotangents[0],) + tuple(
        match_input(x, d) if _is_numeric(x) and not _is_zero(d) else d for x, d in zip(args, cotangents[1:])
    )


def _scalar_part(has_aux: bool):
    """The seed pulling back the differentiated scalar of ``f``'s output (``(y, aux)`` with aux)."""

    def seed(out):
        if has_aux:
            return Tangent[tuple](_seed_for(out[0], None), ZeroTangent())
        return _seed_for(out, None)

    return seed


def _nested_gradient_rule(f, args: tuple, kwargs: dict, engine: str, argnums, has_aux: bool):
    """``(value, grads)`` as ``value_and_gradient`` returns them, and ``pull(d_value, d_grads)``
    giving the cotangents ``(df, dx1, ...)``."""
    y, back = _inner_pullback_full(engine, f, *args, **kwargs)
    seed = _scalar_part(has_aux)
    full = tuple(_deep_unthunk(d) for d in back(seed(y)))
    grads = _gradients(f, full, args, argnums)
    positions = range(len(args))
    selected = [positions[argnums]] if isinstance(argnums, int) else [positions[i] for i in (argnums or positions)]

    def pull(d_value, d_grads) -> tuple:
        total = (ZeroTangent(),) * (len(args) + 1)
        if not _is_zero(d_value):  # the value itself (and aux) pulled back: first order
            total = tuple(_deep_unthunk(d) for d in back(d_value))
        direction = [ZeroTangent()] * len(args)
        per_grad = [d_grads] if isinstance(argnums, int) else _items(d_grads, len(selected))
        for i, d in zip(selected, per_grad):
            if not isinstance(unthunk(d), NoTangent):
                direction[i] = add(direction[i], d) if not _is_zero(direction[i]) else d
        second = _hessian_vector(engine, f, args, kwargs, seed, direction)
        return _matched(args, _sum_cotangents(total, second))

    return (y, grads), pull


def rrule_value_and_gradient(f, *args, engine=DEFAULT_ENGINE, argnums=None, has_aux=False, **kwargs):
    """``value_and_gradient`` inside a function being differentiated (reverse over reverse)."""
    (y, grads), pull = _nested_gradient_rule(f, args, kwargs, engine, argnums, has_aux)

    def value_and_gradient_pullback(d_out):
        d_value, d_grads = _items(d_out, 2)
        return (NoTangent(), *pull(d_value, d_grads))

    return (y, grads), value_and_gradient_pullback


def rrule_gradient(f, *args, engine=DEFAULT_ENGINE, argnums=None, has_aux=False, **kwargs):
    """``gradient`` inside a function being differentiated: its pullback is a Hessian-vector product."""
    (y, grads), pull = _nested_gradient_rule(f, args, kwargs, engine, argnums, has_aux)

    def gradient_pullback(d_out):
        if has_aux:  # (grads, aux): aux is part of f's output, pulled back with it
            d_grads, d_aux = _items(d_out, 2)
            d_value = ZeroTangent() if _is_zero(d_aux) else Tangent[tuple](ZeroTangent(), d_aux)
        else:
            d_grads, d_value = d_out, ZeroTangent()
        return (NoTangent(), *pull(d_value, d_grads))

    return ((grads, y[1]) if has_aux else grads), gradient_pullback


class NestedPullback:
    """The ``back`` that ``pullback`` returns inside a function being differentiated: calling it
    gives the cotangents of ``f``'s arguments, and it has a rule, so that they are differentiated
    too (its tangent, ``Tangent[NestedPullback]``, holds those of ``f`` and the arguments)."""

    __slots__ = ("f", "args", "kwargs", "engine", "back")

    def __init__(self, f, args: tuple, kwargs: dict, engine: str, back: Callable):
        self.f, self.args, self.kwargs, self.engine, self.back = f, args, kwargs, engine, back

    def __call__(self, dy):
        return _unthunked(self.back(dy), self.args)


def rrule_pullback(f, *args, engine=DEFAULT_ENGINE, **kwargs):
    """``pullback`` inside a function being differentiated: ``(y, back)`` where ``back`` has a rule."""
    y, back = _inner_pullback_full(engine, f, *args, **kwargs)
    nested = NestedPullback(f, args, kwargs, engine, back)

    def pullback_pullback(d_out):
        dy, d_back = _items(d_out, 2)
        total = (ZeroTangent(),) * (len(args) + 1)
        if not _is_zero(dy):
            total = tuple(_deep_unthunk(d) for d in back(dy))
        d_back = unthunk(d_back)
        if not isinstance(d_back, AbstractZero):  # what the calls of `back` sent to f and the arguments
            total = _sum_cotangents(total, (d_back.f, *_items(d_back.args, len(args))))
        return (NoTangent(), *_matched(args, total))

    return (y, nested), pullback_pullback


def rrule_call_nested_pullback(nested: NestedPullback, dy):
    """``back(dy)``: linear in ``dy`` (its cotangent along w is J w, forward mode), and a gradient
    of ⟨dy, f(x)⟩ in the arguments (their cotangents: a Hessian-vector product)."""
    f, args, kwargs, engine = nested.f, nested.args, nested.kwargs, nested.engine
    out = nested(dy)

    def nested_pullback_pullback(d_out):
        direction = [ZeroTangent() if isinstance(unthunk(d), NoTangent) else d for d in _items(d_out, len(args))]
        if all(_is_zero(d) for d in direction):
            return ZeroTangent(), ZeroTangent()
        _, d_dy = jvp(lambda *xs: f(*xs, **kwargs), tuple(args), tuple(direction))
        second = _hessian_vector(engine, f, args, kwargs, dy, direction)
        d_nested = Tangent[NestedPullback](f=second[0], args=Tangent[tuple](*second[1:]))
        d_dy = _deep_unthunk(d_dy)
        return d_nested, match_input(dy, d_dy) if _is_numeric(dy) and not _is_zero(d_dy) else d_dy

    return out, nested_pullback_pullback


rrule.register(gradient)(rrule_gradient)
rrule.register(value_and_gradient)(rrule_value_and_gradient)
rrule.register(pullback)(rrule_pullback)
rrule.register(NestedPullback)(rrule_call_nested_pullback)
# An outer engine's values (a tape's tracked arrays) reach this rule as they are, so that the `back` it
# makes computes on them and the outer engine follows its dependence on the arguments. Run by the outer
# engine's own rule on plain values (the source engine's ``_by_both_rules``), `back` would hold those:
# an object the tape cannot follow through, whose derivative it read as zero.
rrule_pullback.on_engine_values = True


# ----- Jacobians and directional derivatives inside differentiated functions -----------------------
#
# The output of `jacobian(f, x)` is J(x); its pullback along a cotangent dJ is ∇_x ⟨dJ, J(x)⟩ =
# Σ_i ∇²f_i(x) dJ_i, a sum of Hessian-vector products: one per output entry i (seed e_i, direction
# dJ_i), or, the same double sum taken the other way round, one per input entry k (seed dJ[:, k],
# direction e_k); whichever is fewer. Each is forward mode over f's full pullback, so what f captured
# gets its cotangent from the same products (as for `gradient` above). When f captured nothing that
# is differentiated (its pullback gives f itself no tangent), the sum is instead the gradient of the
# scalar ⟨dJ, J(z)⟩ by forward mode over the Jacobian: one chunked pass for all of it.
# For complex values, row i of J is Re(pullback(e_i)) + 1j Re(pullback(1j e_i)) (see `_complex_rows`),
# so ⟨dJ_i, J_i⟩ = ⟨Re dJ_i, pullback(e_i)⟩ + ⟨Im dJ_i, pullback(1j e_i)⟩: a row takes two products
# (seed e_i, direction Re dJ_i; seed 1j e_i, direction Im dJ_i); a column's seed dJ[:, k] is as above,
# since Σ_i Re(dJ_ik) pullback(e_i) + Im(dJ_ik) pullback(1j e_i) = pullback(dJ[:, k]).
# `jvp(f, primals, tangents)` is J v; its pullback along (dy, d_Jv) gives v the cotangent Jᵀ d_Jv and
# the primals f's pullback of dy plus the Hessian-vector product of ⟨d_Jv, f⟩ along v.

_JACOBIAN_PARAMETERS = inspect.signature(jacobian)

#: the most numbers ⟨dJ, J(z)⟩'s forward pass may hold per Jacobian entry times inputs (m * n * n);
#: a larger Jacobian's pullback takes one Hessian-vector product per row or column instead
NESTED_JACOBIAN_BUDGET = 2**20


def _is_array_value(x) -> bool:
    """A number or an array, plain or an engine's (a dual, a tracked array), not a structure."""
    return _is_numeric(x) or isinstance(x, ActiveValue)


def rrule_jacobian(f, x, *options, **keywords):
    """``jacobian`` inside a function being differentiated: its pullback is a sum of Hessian-vector products."""
    J = jacobian(f, x, *options, **keywords)
    if not _is_array_value(x):
        where = user_location()
        raise ChainRulesError(
            f"cr.jacobian({callable_label(f)}, x) inside a function being differentiated"
            f"{' (at ' + where + ')' if where else ''} takes a number or an array x; "
            "its Jacobian at a structured input has no rule: pass the arrays themselves"
        )
    chosen = _JACOBIAN_PARAMETERS.bind(f, x, *options, **keywords)
    chosen.apply_defaults()
    mode, engine, chunk_size = (chosen.arguments[k] for k in ("mode", "engine", "chunk_size"))
    options_tangents = (NoTangent(),) * len(options)

    def jacobian_pullback(dJ):
        dJ = unthunk(dJ)
        if isinstance(dJ, AbstractZero):
            return (NoTangent(), ZeroTangent(), ZeroTangent(), *options_tangents)
        df, dx = _jacobian_cotangents(f, x, dJ, mode, engine, chunk_size)
        return (NoTangent(), df, match_input(x, dx) if _is_numeric(x) and not _is_zero(dx) else dx, *options_tangents)

    return J, jacobian_pullback


def _unit(shape: tuple, i: int, like):
    """The ``i``-th unit tangent or cotangent of a value of ``shape`` (a Python float for a number)."""
    if not shape:
        return 1.0
    e = np.zeros(shape, dtype=np.result_type(_leaf_dtype(_innermost_value(like)), np.float64))
    e.reshape(-1)[i] = 1.0
    return e


def _innermost_value(x):
    """A value's plain dtype carrier: an engine's value answers ``dtype`` as the array inside it does."""
    return np.zeros((), dtype=x.dtype) if isinstance(x, ActiveValue) else x


class _OutputRows:
    """The rows of the Jacobian of an output ``y`` (an array, or a structure of them): the entries of
    its leaves with a derivative (not integer ones), in leaf order, and cotangents of ``y`` made of rows.

    >>> rows = _OutputRows({"a": np.zeros(2), "n": 3, "b": 1.0})
    >>> rows.size, rows.cotangent(np.array([1.0, 2.0, 3.0]))
    (3, Tangent[dict]({'a': array([1., 2.]), 'n': ZeroTangent(), 'b': array(3.)}))
    """

    def __init__(self, y):
        self.y, self.outs = y, leaves(y, _is_output_leaf)
        self.differentiable = [_is_inexact(_innermost_value(out)) for out in self.outs]
        self.starts, self.size = [], 0
        for out, inexact in zip(self.outs, self.differentiable):
            self.starts.append(self.size)
            self.size += math.prod(np.shape(out)) if inexact else 0

    def is_complex(self) -> bool:
        return any(np.iscomplexobj(out) for out in self.outs)

    def flat(self, J, n: int):
        """The Jacobian ``J`` (or a cotangent of it) with ``n`` columns, as a matrix of these rows."""
        parts = []
        for out, block, inexact in zip(self.outs, _tangent_leaves(J, self.y, _is_output_leaf), self.differentiable):
            if inexact:
                shape = (math.prod(np.shape(out)), n)
                zero = isinstance(block, AbstractZero)
                parts.append(np.zeros(shape, _leaf_dtype(out)) if zero else np.reshape(block, shape))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _cotangent(self, pieces: list):
        return tangent_like(self.y, _is_output_leaf, pieces, NoTangent())

    def unit(self, i: int, scale=1.0):
        """The cotangent of ``y`` pulling back row ``i`` (times ``scale``), and whether that row is complex."""
        k = max(k for k, start in enumerate(self.starts) if start <= i and self.differentiable[k])
        out = self.outs[k]
        pieces = [ZeroTangent()] * len(self.outs)
        pieces[k] = scale * _unit(np.shape(out), i - self.starts[k], out)
        return self._cotangent(pieces), np.iscomplexobj(out)

    def cotangent(self, column):
        """The cotangent of ``y`` holding ``column``, one entry per row (a real leaf takes the real part)."""
        pieces = []
        for out, start, inexact in zip(self.outs, self.starts, self.differentiable):
            part = column[start : start + math.prod(np.shape(out))] if inexact else None
            if part is None:
                pieces.append(ZeroTangent())
            else:
                pieces.append(np.reshape(part if np.iscomplexobj(out) else np.real(part), np.shape(out)))
        return self._cotangent(pieces)


def _jacobian_cotangents(f, x, dJ, mode: str, engine: str, chunk_size) -> tuple:
    """``(df, dx)``: the pullback of ``jacobian(f, x)`` along ``dJ`` (see the section's comment)."""
    y, back = _inner_pullback_full(engine, f, x)
    rows, x_shape = _OutputRows(y), np.shape(x)
    m, n = rows.size, math.prod(x_shape)
    if m == 0 or n == 0:  # an empty Jacobian
        return ZeroTangent(), ZeroTangent()
    flat = rows.flat(dJ, n)
    real = not (rows.is_complex() or np.iscomplexobj(x) or np.iscomplexobj(flat))
    if real and m * n * n <= NESTED_JACOBIAN_BUDGET:
        captured = unthunk(back(rows.unit(0)[0])[0])
        if isinstance(captured, AbstractZero):  # f captured nothing differentiated: one forward pass

            def paired_with_jacobian(z):
                return np.sum(flat * rows.flat(jacobian(f, z, mode=mode, engine=engine, chunk_size=chunk_size), n))

            return ZeroTangent(), _forward_engine().jacobian(paired_with_jacobian, x)
    total = (ZeroTangent(), ZeroTangent())
    by_rows = m <= n
    for i in range(m if by_rows else n):
        part = flat[i] if by_rows else flat[:, i]
        if not np.any(part != 0):
            continue
        if by_rows and not real:  # complex values: rows of real parts (see `_complex_rows`), two products
            unit, complex_row = rows.unit(i)
            products = [(unit, np.real(part))]
            if complex_row and np.any(np.imag(part) != 0):
                products.append((rows.unit(i, 1j)[0], np.imag(part)))
            for seed, direction in products:
                direction = np.reshape(direction, x_shape)
                total = _sum_cotangents(total, _hessian_vector(engine, f, (x,), {}, seed, [direction]))
            continue
        if by_rows:
            seed, direction = rows.unit(i)[0], np.reshape(part, x_shape)
        else:  # (a real output's J is real: the imaginary part of dJ meets nothing)
            seed, direction = rows.cotangent(part), _unit(x_shape, i, x)
        total = _sum_cotangents(total, _hessian_vector(engine, f, (x,), {}, seed, [direction]))
    return total


def rrule_jvp(f, primals: tuple, tangents: tuple):
    """``jvp`` inside a function being differentiated (reverse over forward, by forward over reverse)."""
    return jvp(f, primals, tangents), _jvp_pullback(f, primals, tangents)


def _jvp_pullback(f, primals: tuple, tangents: tuple):
    """The pullback of ``jvp(f, primals, tangents)``: ``d_out -> (NoTangent(), df, d_primals, d_tangents)``."""
    n = len(primals)

    def jvp_pullback(d_out):
        d_y, d_dy = _items(d_out, 2)
        total = (ZeroTangent(),) * (n + 1)
        if not _is_zero(d_y):
            total = _full_cotangents(DEFAULT_ENGINE, f, primals, {}, d_y)
        d_tangents = (ZeroTangent(),) * n
        if not _is_zero(d_dy):
            first = _full_cotangents(DEFAULT_ENGINE, f, primals, {}, d_dy)
            d_tangents = _matched(tangents, (None, *first[1:]))[1:]
            direction = [ZeroTangent() if isinstance(unthunk(t), NoTangent) else t for t in tangents]
            total = _sum_cotangents(total, _hessian_vector(DEFAULT_ENGINE, f, primals, {}, d_dy, direction))
        total = _matched(primals, total)
        return NoTangent(), total[0], Tangent[tuple](*total[1:]), Tangent[tuple](*d_tangents)

    return jvp_pullback


def rrule_derivative(f, x):
    """``derivative`` inside a function being differentiated: f'(x), whose pullback is f''(x) times the cotangent."""
    d = derivative(f, x)
    pull = _jvp_pullback(f, (x,), (1.0 if not isinstance(x, complex) else 1.0 + 0j,))

    def derivative_pullback(dd):
        _, df, dxs, _ = pull(Tangent[tuple](ZeroTangent(), dd))
        return NoTangent(), df, dxs.backing[0]

    return d, derivative_pullback


# `hessian(f, x)` is the Jacobian of the gradient z -> ∇f(z), so its pullback along dH is that
# Jacobian's: ∇_x ⟨dH, H(x)⟩, the third derivative of f contracted with dH, taken by the rule of
# `jacobian` above on the gradient function, whose own reverse pass runs the rule of `gradient`.

_HESSIAN_PARAMETERS = inspect.signature(hessian)


class _GradientOf:
    """``z -> gradient(f, z)[0]``, whose forward Jacobian is ``hessian(f, z)``: an object with a rule
    (below), where a closure would be chainrules' code, which the source engine does not transform."""

    def __init__(self, f: Callable, engine: str):
        self.f, self.engine = f, engine

    def __call__(self, z):
        return gradient(self.f, z, engine=self.engine)[0]


@rrule.register(_GradientOf)
def rrule_gradient_of(g: _GradientOf, z):
    (grad,), gradient_pullback = rrule_gradient(g.f, z, engine=g.engine)

    def gradient_of_pullback(d_grad):
        _, df, dz = gradient_pullback(Tangent[tuple](d_grad))
        return (df if _is_zero(df) else Tangent[_GradientOf](f=df)), dz

    return grad, gradient_of_pullback


def rrule_hessian(f, x, *options, **keywords):
    """``hessian`` inside a function being differentiated: the rule of the forward Jacobian of the gradient."""
    where = user_location()
    if not _is_array_value(x):
        raise ChainRulesError(
            f"cr.hessian({callable_label(f)}, x) inside a function being differentiated"
            f"{' (at ' + where + ')' if where else ''} takes a number or an array x; its Hessian at structured "
            "inputs has no rule: pass the array itself"
        )
    chosen = _HESSIAN_PARAMETERS.bind(f, x, *options, **keywords)
    chosen.apply_defaults()
    engine = chosen.arguments["engine"]
    H, jacobian_pullback = rrule_jacobian(_GradientOf(f, engine), x, mode="forward", engine=engine)
    options_tangents = (NoTangent(),) * len(options)

    def hessian_pullback(dH):
        try:
            _, d_gradient_of, dx = jacobian_pullback(dH)
        except TypeError as error:  # an engine's refusal (a buffer of nested duals): say which derivative needed it
            raise TypeError(
                f"the derivative of cr.hessian({callable_label(f)}, x){' at ' + where if where else ''} takes third "
                f"derivatives of {callable_label(f)}, which the engines could not take: {error}"
            ) from error
        df = d_gradient_of if _is_zero(d_gradient_of) else unthunk(d_gradient_of).f
        return (NoTangent(), df, dx, *options_tangents)

    return _as_number_of(x, H), hessian_pullback


rrule.register(jacobian)(rrule_jacobian)
rrule.register(jvp)(rrule_jvp)
rrule.register(derivative)(rrule_derivative)
rrule.register(hessian)(rrule_hessian)
