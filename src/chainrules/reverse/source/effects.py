"""Pass 5b, effects: calls that may write into containers the derivative depends on.

Python changes lists, dicts, arrays and objects in place through calls: ``np.copyto(buf, x)``,
``np.add.at(buf, i, v)``, ``np.sin(x, out=buf)``, ``d.update(...)``, ``lst.sort()``,
``setattr(obj, "w", v)``, or a function of the user's that does so. The reverse pass knows only
the writes the Wengert list shows (``x[i] = v``, ``lst.append(v)``); a write it does not know
about would give a wrong derivative without a word. So, per specialization:

- a call is *known not to write* when its callee is resolved here and is pure: it has a rule
  (rules never write into their arguments), or it is a built-in type, a dataclass or a
  namedtuple; and it passes no output argument (``out=``, or a ufunc's output positionally) and
  no callable that it might call (a closure would run unchecked);
- any other call may write into every container reachable from its operands (its arguments, the
  object whose method it is, what a closure captured; not the tuple and dict it gets its ``*``
  and ``**`` arguments in, which are new), which changes every variable bound before it that
  reaches one of them (a second name, a view, a list holding it): a variable first bound after
  the call is made from what the write left;
- such a call is made *through the dispatcher* (``dispatched``) when the write could matter:
  when a value being differentiated is involved (an operand, or a container it may change, is
  active) and a container it may change is read afterwards or is seen outside (an argument, a
  captured or global variable), or when a container it may change was used before by a
  statement whose pullback may hold it. The dispatcher runs the callee's rule (pure) or
  differentiates its source (whose own analysis refuses writes into its arguments), and refuses
  anything else with ``NoRuleError`` naming the line;
- a call in ``KNOWN_WRITES`` (the one table of calls known to write in place, each with what to
  write instead), or one that passes an output argument, is refused here with
  ``UnsupportedSyntaxError`` and the call's file:line:col under the same conditions, or when a
  value being differentiated goes through it; where the static types do not reveal the callee,
  the dispatcher refuses it from the same table when it runs.

Writes the function makes itself are followed by the primal and adjoint passes; this pass also
says which containers written in place that carry no derivative still need the run-time check
that they are not written after a pullback took them (``flagged``), and which augmented
assignments (``x += v``) must check that they do not update a shared mutable object in place
(``rebind_checks``): the generated code rebinds ``x``, which others holding the object would not
see.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
import operator
import types

import numpy as np

from ...core.errors import callable_name
from ...core.registry import OPT_OUT, rrule
from . import ir
from .simplify import _MISSING, INACTIVE_TYPES, ArrayType, is_arraylike, is_real, reads_only, static_lookup

#: built-in types whose construction copies (or only reads) its arguments
_PURE_TYPES = frozenset(
    {tuple, list, dict, set, frozenset, float, int, complex, bool, str, bytes, range, slice, object}
    | {enumerate, zip, reversed, map, filter, type}
)
#: what no call can change: numbers, strings, types, modules, functions of libraries
_IMMUTABLE = (numbers.Number, np.generic, str, bytes, type(None), range, slice, type, types.ModuleType, np.dtype)
_IMMUTABLE_TYPES = (types.BuiltinFunctionType, np.ufunc, type(Ellipsis))
#: the modes whose pullbacks (or reverse code) may hold the objects of their operands
_NOT_HOLDING = frozenset({"plain", "return", "branch", "loop", "block"})


@dataclasses.dataclass(frozen=True)
class Write:
    """A call known to change one of its operands in place, and what to write instead."""

    name: str  #: how the user writes the call
    target: int  #: the positional argument written into; -1 for the object whose method it is
    instead: str  #: what to write instead, in the user's terms


#: Calls known to change a container in place. The reverse pass follows only the writes the
#: Wengert list shows (``x[i] = v``, ``x[i] += v``, ``lst.append(v)``, ``lst.extend(v)``,
#: ``d[k] = v``); where one of these calls could change a derivative, the effects pass refuses
#: it with the advice here (at run time, the dispatcher uses the same advice).
KNOWN_WRITES = {
    np.copyto: Write("np.copyto(dst, src)", 0, "write `dst[...] = src` into an array the function made"),
    np.put: Write(
        "np.put(a, idx, v)",
        0,
        "write `a[idx] = v` (for an array of more than one dimension, index it with `np.unravel_index(idx, a.shape)`)",
    ),
    np.put_along_axis: Write(
        "np.put_along_axis(a, idx, v, axis)",
        0,
        "write `a[i] = v` with the index it stands for (for axis=1 of a 2-d array, "
        "`a[np.arange(a.shape[0])[:, None], idx] = v`)",
    ),
    np.fill_diagonal: Write(
        "np.fill_diagonal(a, v)", 0, "write `a[np.arange(n), np.arange(n)] = v`, or build `a + np.diag(v)`"
    ),
    np.place: Write("np.place(a, mask, v)", 0, "build `a = np.where(mask, v, a)`"),
    np.putmask: Write("np.putmask(a, mask, v)", 0, "build `a = np.where(mask, v, a)`"),
    np.ufunc.at: Write(
        "ufunc.at(a, idx, v)",
        0,
        "write the loop it stands for, `for j in range(len(idx)): a[idx[j]] += v[j]` (for np.add.at into a 1-d "
        "array, `a = a + np.bincount(idx, weights=v, minlength=a.size)`)",
    ),
    np.ndarray.fill: Write("a.fill(v)", -1, "write `a[...] = v`"),
    np.ndarray.sort: Write("a.sort()", -1, "build `a = np.sort(a)`"),
    np.ndarray.partition: Write("a.partition(k)", -1, "build `a = np.partition(a, k)`"),
    np.ndarray.put: Write("a.put(idx, v)", -1, "write `a[idx] = v`"),
    np.ndarray.resize: Write("a.resize(shape)", -1, "build `a = np.resize(a, shape)`"),
    setattr: Write(
        "setattr(obj, name, v)",
        0,
        "build the object with its attributes (pass them to its constructor, "
        "or use `dataclasses.replace(obj, name=v)`)",
    ),
    delattr: Write("delattr(obj, name)", 0, "build a new object without the attribute"),
    functools.update_wrapper: Write(
        "functools.update_wrapper(wrapper, wrapped)",
        0,
        "assign its result: `wrapper = functools.update_wrapper(wrapper, wrapped)`",
    ),
    list.insert: Write("lst.insert(i, v)", -1, "build `lst = lst[:i] + [v] + lst[i:]`"),
    list.sort: Write("lst.sort()", -1, "build `lst = sorted(lst)`"),
    list.reverse: Write("lst.reverse()", -1, "build `lst = lst[::-1]`"),
    list.pop: Write("lst.pop(i)", -1, "read `v = lst[i]`, then build `lst = lst[:i] + lst[i + 1:]`"),
    list.remove: Write("lst.remove(v)", -1, "build a new list without it, `lst = lst[:i] + lst[i + 1:]`"),
    list.clear: Write("lst.clear()", -1, "bind a new list, `lst = []`"),
    dict.update: Write("d.update(other)", -1, "build `d = {**d, **other}`, or assign `d[k] = v` for each item"),
    dict.setdefault: Write("d.setdefault(k, v)", -1, "write `if k not in d: d[k] = v`, then read `d[k]`"),
    dict.pop: Write("d.pop(k)", -1, "read `v = d[k]`, then build `d = {j: u for j, u in d.items() if j != k}`"),
    dict.popitem: Write("d.popitem()", -1, "read the item, then build a new dict without it"),
    dict.clear: Write("d.clear()", -1, "bind a new dict, `d = {}`"),
    set.add: Write("s.add(v)", -1, "build `s = s | {v}`"),
    set.update: Write("s.update(other)", -1, "build `s = s | set(other)`"),
    set.discard: Write("s.discard(v)", -1, "build `s = s - {v}`"),
    set.remove: Write("s.remove(v)", -1, "build `s = s - {v}`"),
    set.pop: Write("s.pop()", -1, "build a new set without the element"),
    set.clear: Write("s.clear()", -1, "bind a new set, `s = set()`"),
    # the functions of augmented assignment change an array, list or dict in place (a number they
    # only compute with, see `known_entry`); `x op= v` itself is followed
    **{
        getattr(operator, f"i{name}"): Write(
            f"operator.i{name}(x, v)", 0, f"write `x = x {symbol} v` (or `x {symbol}= v`)"
        )
        for name, symbol in (
            ("add", "+"),
            ("sub", "-"),
            ("mul", "*"),
            ("truediv", "/"),
            ("floordiv", "//"),
            ("mod", "%"),
            ("pow", "**"),
            ("matmul", "@"),
            ("and", "&"),
            ("or", "|"),
            ("xor", "^"),
            ("lshift", "<<"),
            ("rshift", ">>"),
            ("concat", "+"),
        )
    },
}
_AUGMENTED = frozenset(f for f in KNOWN_WRITES if getattr(f, "__module__", None) in ("operator", "_operator"))


def delete_advice(name: str) -> str:
    """The refusal of ``del name[key]`` (by the fence, which knows no types: the advice names each kind)."""
    return (
        f"`del {name}[...]` changes `{name}` in place, which the reverse pass would not follow: build a new "
        f"one, `{name} = {name}[:i] + {name}[i + 1:]` (a list), `{name} = np.delete({name}, i)` (an array) or "
        f"`{name} = {{k: v for k, v in {name}.items() if k != key}}` (a dict), or rebind the name"
    )


#: a call given an output argument (``out=``, or a ufunc's outputs positionally)
OUTPUT_ADVICE = (
    "assign the result instead (`buf = np.sin(x)`, or `buf[...] = np.sin(x)` into an array the function made)"
)


def known_write(f) -> Write | None:
    """The entry of ``KNOWN_WRITES`` for the callable ``f``, or None.

    >>> known_write(list.sort).instead
    'build `lst = sorted(lst)`'
    """
    try:
        return KNOWN_WRITES.get(f)
    except TypeError:  # an unhashable callable
        return None


def write_message(entry: Write, written: str | None = None) -> str:
    """Why a call of ``entry`` is refused, naming the container ``written`` when known."""
    what = f"`{written}`" if written else "a container"
    return f"`{entry.name}` changes {what} in place, which the reverse pass would not follow; {entry.instead}"


@dataclasses.dataclass
class Effects:
    """What the effects pass decided for one specialization."""

    #: statement index -> the user's names of the containers the call may write into
    dispatched: dict[int, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    #: containers written in place that carry no derivative but that a pullback may hold
    flagged: set[str] = dataclasses.field(default_factory=set)
    #: augmented assignments whose target may be a mutable object someone else holds
    rebind_checks: set[int] = dataclasses.field(default_factory=set)
    #: elements read from a container in the statement that writes into it (``x[1] = x[0] * 2``),
    #: whose reads may take a copy when they are views (see ``_Effects.copied_reads``)
    copied_reads: set[int] = dataclasses.field(default_factory=set)
    #: augmented assignments ``x op= v`` on an array or list the function made and nothing else
    #: holds, where rebinding ``x`` gives what updating it in place would (see ``_Effects.fresh_rebinds``)
    fresh_rebinds: set[int] = dataclasses.field(default_factory=set)
    #: the element reads of the updates ``x[k] op= v`` among ``fresh_rebinds`` (``x`` a list or dict
    #: the function made, whose elements nothing else holds: see ``_Effects.fresh_item_updates``)
    fresh_items: set[int] = dataclasses.field(default_factory=set)


def _immutable_type(t) -> bool:
    """Whether a value of the static type ``t`` cannot be changed in place."""
    if t in INACTIVE_TYPES or is_real(t) or t in _IMMUTABLE_TYPES:
        return True
    return isinstance(t, type) and issubclass(t, _IMMUTABLE) and t not in (np.ndarray,)


def _may_call_back(t) -> bool:
    """Whether a value of static type ``t`` may be a callable of the user's (a function, an
    object with ``__call__``), which a callee could call."""
    if t is None or isinstance(t, ArrayType) or _immutable_type(t):
        return False
    if t in (tuple, list, dict, set, frozenset):
        return False
    return True


class _Effects:
    def __init__(self, analysis, stmts: list, mode: dict, buffers: dict):
        self.a = analysis
        self.stmts = stmts
        self.mode = mode
        self.buffers = buffers
        self.position = {stmt.index: i for i, stmt in enumerate(stmts)}
        self.params = set(analysis.fn.params())
        self.temps = analysis.fn.temps
        self.edges: dict[str, set[str]] = {}
        self.users: dict[str, list] = {}
        self.bindings: dict[str, list] = {}
        # the temporaries that hold a call's packed arguments (``f(*y_1, **y_2)``)
        self.displays = {
            stmt.target: stmt.expr
            for stmt in stmts
            if isinstance(stmt, ir.Assign)
            and stmt.target in self.temps
            and isinstance(stmt.expr, (ir.Build, ir.BuildDict))
        }
        for stmt in stmts:
            for x in self.names(_operands(stmt)):
                self.users.setdefault(x, []).append(stmt)
            for x in stmt.targets():
                self.bindings.setdefault(x, []).append(stmt)

    # -- names and what they may hold --
    def name(self, x) -> str | None:
        """``x`` when it is a variable whose object may be changed in place (not a constant, not a
        module, built-in or class resolved statically, not a number or a string)."""
        if not isinstance(x, str):
            return None
        if x not in self.a.local and self.a.resolve(x) is not _MISSING:
            return None
        if _immutable_type(self.a.type_of(x)):
            return None
        return x

    def names(self, operands) -> list[str]:
        return [n for n in map(self.name, operands) if n is not None]

    def link(self, holder: str | None, held) -> None:
        if holder is not None:
            self.edges.setdefault(holder, set()).update(self.names(held))

    def build_edges(self, untrusted: list) -> None:
        """``x -> y``: the object of ``x`` may hold (or view) the object of ``y``."""
        for stmt in self.stmts:
            if isinstance(stmt, ir.Assign):
                expr = stmt.expr
                entry, written = self.known_entry(expr) if isinstance(expr, (ir.Call, ir.MethodCall)) else (None, None)
                if entry is not None and isinstance(written, str):
                    # it stores its operands into the container it writes, and returns an element of it
                    # (``lst.pop()``) or nothing: not the container itself
                    self.link(self.name(written), (*expr.operands(), stmt.target))
                    continue
                if isinstance(expr, ir.GetAttr) and self.a.array_metadata(expr):
                    held = ()  # a fact about the array (its shape, its dtype), not a view of it
                elif isinstance(expr, ir.GetItem) and self.copies(expr):
                    held = ()  # numbers copied out of the array, not a view of it
                elif isinstance(expr, (ir.GetItem, ir.GetAttr)):
                    held = (expr.obj,)
                elif isinstance(expr, (ir.BuildSlice, ir.Opaque)):
                    held = ()
                else:
                    held = expr.operands()
                self.link(self.name(stmt.target), held)
            elif isinstance(stmt, ir.Unpack):
                for n in stmt.names:
                    self.link(self.name(n), (stmt.value,))
            elif isinstance(stmt, ir.For):
                self.link(self.name(stmt.target), (stmt.iterable,))
            elif isinstance(stmt, (ir.SetItem, ir.Mutate)):
                self.link(stmt.obj, (stmt.value,))
            elif isinstance(stmt, ir.With):
                for context, target in stmt.contexts:
                    self.link(self.name(target), (context,))
        for stmt in untrusted:  # the callee may store any operand into any container among them
            operands = self.call_operands(stmt)
            for holder in self.names(operands):
                self.link(holder, operands)

    def copies(self, expr: ir.GetItem) -> bool:
        """Whether ``y[key]`` is NumPy's advanced indexing of an array of numbers (``y[mask]``,
        ``y[np.array([0, 2])]``): a new array, holding nothing of ``y``'s."""
        owner, key = self.a.type_of(expr.obj), self.a.type_of(expr.index)
        numbers = isinstance(owner, ArrayType) and owner.dtype.kind in "biufc"
        return numbers and isinstance(key, ArrayType) and key.dtype.kind in "biu"

    def mutable(self, name: str) -> bool:
        """Whether the object of ``name`` itself may be changed (a tuple cannot: what it holds can)."""
        return self.a.type_of(name) not in (tuple, frozenset)

    def roots(self, stmt, later: frozenset = frozenset()) -> list[str]:
        """The objects a call may change: a method of a list, dict, set or array changes the object
        it is called on (and an array given for its output); any other call, whatever it can reach
        from its operands (through variables bound before it: see ``bound_later``)."""
        expr = stmt.expr
        if isinstance(expr, ir.MethodCall) and isinstance(expr.obj, str):
            owner = self.a.type_of(expr.obj)
            if owner in (list, dict, set) or isinstance(owner, ArrayType):
                arrays = [x for x in _call_arguments(expr) if isinstance(self.a.type_of(x), ArrayType)]
                held = [v for x in (expr.obj, *arrays) for v in self.held_by(x, later)]
                return self.names([expr.obj, *arrays, *held])
        return [v for v in self.reach(self.names(self.call_operands(stmt)), later) if self.mutable(v)]

    def held_by(self, name: str, later: frozenset) -> list[str]:
        """For ``name`` read out of a list, tuple, dict or object (``row = rows[0]``, ``rows[0].reverse()``):
        every variable whose object that container may hold, any of which ``name``'s may be. For an
        array (``y[1:3]``, ``y.reshape(2, 2)[0]``, ``y.T``, a row a loop took): every variable whose
        array it may view, whose memory a write into it changes."""
        if is_arraylike(self.a.type_of(name)):
            return sorted(self.reach([name], later) - {name})
        held = []
        for binding in self.bindings.get(name, ()):
            expr = getattr(binding, "expr", None)
            if isinstance(expr, (ir.GetItem, ir.GetAttr)) and not isinstance(self.a.type_of(expr.obj), ArrayType):
                held.extend(self.reach(self.names([expr.obj]), later))
        return held

    def call_operands(self, stmt) -> tuple:
        """The operands whose objects the callee of ``stmt`` receives (the callee itself included: a
        closure or a callable object may write into what it holds).

        ``f(*t, **d)`` hands the callee new tuple and dict objects holding the elements of ``t`` and
        the items of ``d``, never ``t`` or ``d`` themselves; so a display the lowering built only to
        pass to this call (``y_4 = (a, b)``, ``y_5 = {'dtype': c}``) stands for what it holds. An
        element that is itself unpacked into the display (``*lst``, ``**kw``) stays as it is: unpacking
        it runs its iterator."""
        expr = stmt.expr
        unpacked = {a.value for a in expr.args if a.starred} | {k.value for k in expr.kwargs if k.name is None}
        out = []
        for x in expr.operands():
            display = self.displays.get(x) if x in unpacked else None
            if display is None or any(user is not stmt for user in self.users.get(x, ())):
                out.append(x)
            elif isinstance(display, ir.Build):
                out.extend(item.value for item in display.items)
            else:
                out.extend(part for key, value in display.items for part in (key, value) if part is not None)
        return tuple(out)

    def bound_later(self, stmt) -> frozenset:
        """The local variables every binding of which runs after ``stmt`` (not in a loop around it).

        A write made during ``stmt`` changes objects that exist when it runs. Such a variable is
        unbound then: no statement that ran before ``stmt`` can have read it (it would have raised),
        so no object existing at ``stmt`` holds its object through a path that goes through it, and
        its own object is made from what the write left, as the primal computes it. So it neither
        sees the write nor carries it to another variable: the pass leaves it out of what the write
        changes. (The call's own target counts when the call is not in a loop: it is bound when the
        write is over.)"""
        here = self.position[stmt.index]
        around = self.loop_body(stmt)
        later = set()
        for name, binders in self.bindings.items():
            if name in self.params or name in self.a.freevars or name not in self.a.local:
                continue
            if all(b.index not in around and (self.position[b.index] > here or b is stmt) for b in binders):
                later.add(name)
        return frozenset(later)

    def reach(self, start, later: frozenset = frozenset()) -> set[str]:
        """Every variable whose object may be reached from the objects of ``start`` (not going
        through the variables in ``later``)."""
        seen, stack = set(), [v for v in start if v not in later]
        while stack:
            v = stack.pop()
            if v not in seen:
                seen.add(v)
                stack.extend(w for w in self.edges.get(v, ()) if w not in later)
        return seen

    def affected(self, roots: list[str], later: frozenset = frozenset()) -> set[str]:
        """The variables that may see a change to the objects of ``roots``: those that reach them
        (but those in ``later``, bound only after the change)."""
        changed = set(roots)
        return {v for v in self.every_name() - later if self.reach([v], later) & changed} | changed

    def every_name(self) -> set[str]:
        return set(self.edges) | set(self.users)

    # -- where a statement stands --
    def loop_body(self, stmt) -> set[int]:
        """The statements of the outermost loop around ``stmt`` (they run both before and after it)."""
        loops = self.a.loops_of.get(stmt.index, ())
        if not loops:
            return set()
        return {s.index for block in loops[0].blocks() for s in ir.walk(block)}

    def used(self, names: set[str], stmt, when: str, holding: bool = False) -> bool:
        """Whether a statement other than ``stmt`` that runs ``before`` or ``after`` it uses one of
        ``names`` (``holding``: only statements whose pullbacks may keep the object)."""
        here = self.position[stmt.index]
        around = self.loop_body(stmt)
        for name in names:
            for user in self.users.get(name, ()):
                if user is stmt or (isinstance(user, (ir.SetItem, ir.Mutate)) and user.obj == name):
                    continue  # a write into it reads nothing out of it
                where = self.position[user.index]
                if not (user.index in around or (where < here if when == "before" else where > here)):
                    continue
                if holding and self.mode.get(user.index, "plain") in _NOT_HOLDING:
                    continue
                return True
        return False

    def seen_outside(self, names: set[str]) -> bool:
        return any(n in self.params or n in self.a.freevars or n not in self.a.local for n in names)

    # -- calls --
    def trusted(self, expr) -> bool:
        """Whether the call is known not to write into its operands."""
        f = self.a.call_target(expr)
        if f is _MISSING or self.writes_output(expr, f) or any(a.starred for a in expr.args):
            return False
        if any(_may_call_back(self.a.type_of(x)) for x in _call_arguments(expr) if isinstance(x, str)):
            return False
        if isinstance(f, type):
            return f in _PURE_TYPES or _is_record_type(f)
        if _hashable(f) and f in _AUGMENTED:  # (its rule computes the new value, not the write)
            return self.known_entry(expr)[0] is None
        return _has_pure_rule(f, [self.a.type_of(a.value) for a in expr.args])

    def arguments(self, expr) -> tuple[list | None, dict | None]:
        """The call's positional operands and keyword operands by name, looking into the displays
        its arguments were packed into; None where one is unknown (a starred argument of a user's)."""
        positional, keywords = [], {}
        for a in expr.args:
            if not a.starred:
                positional.append(a.value)
                continue
            display = self.displays.get(a.value)
            if not isinstance(display, ir.Build) or any(item.starred for item in display.items):
                positional = None
                break
            positional.extend(item.value for item in display.items)
        for k in expr.kwargs:
            if k.name is not None:
                keywords[k.name] = k.value
                continue
            display = self.displays.get(k.value)
            if not isinstance(display, ir.BuildDict) or any(
                not isinstance(key, ir.Const) or not isinstance(key.value, str) for key, _ in display.items
            ):
                return positional, None
            keywords.update((key.value, value) for key, value in display.items)
        return positional, keywords

    def writes_output(self, expr, f) -> bool:
        """Whether the call passes an output argument: ``out=``, or a ufunc's output positionally.
        Arguments a user packed (``f(*args, **kwargs)``) are checked at run time by the dispatcher."""
        positional, keywords = self.arguments(expr)
        out = (keywords or {}).get("out")
        if out is not None and not (isinstance(out, ir.Const) and out.value is None):
            return True
        return isinstance(f, np.ufunc) and positional is not None and len(positional) > f.nin

    def known_entry(self, expr) -> tuple[Write | None, object]:
        """The call's entry in ``KNOWN_WRITES`` (or None) and the operand it writes into."""
        f = self.a.call_target(expr)
        if f is _MISSING and isinstance(expr, ir.MethodCall) and isinstance(expr.obj, str):
            owner = self.a.type_of(expr.obj)
            if isinstance(owner, ArrayType):
                owner = np.ndarray
            f = getattr(owner, expr.name, _MISSING) if isinstance(owner, type) else _MISSING
        entry = known_write(f) if f is not _MISSING else None
        if entry is None:
            return None, None
        if entry.target < 0:
            return entry, expr.obj
        positional = self.arguments(expr)[0] or ()
        written = positional[entry.target] if entry.target < len(positional) else None
        if f in _AUGMENTED and (not isinstance(written, str) or is_real(self.a.type_of(written))):
            return None, None  # (operator.imul(2.0, x): a number is not changed, the result is new)
        return entry, written

    def known(self, expr) -> str | None:
        """Why the call is refused when its write could matter: it is in ``KNOWN_WRITES`` or it
        passes an output argument; None for any other call."""
        f = self.a.call_target(expr)
        if f is not _MISSING and self.writes_output(expr, f):
            return (
                f"`{callable_name(f)}` writes its result into an existing array (an output argument), which the "
                "reverse pass would not follow; " + OUTPUT_ADVICE
            )
        entry, written = self.known_entry(expr)
        if entry is None:
            return None
        if written in self.a.fn.set_comprehensions:  # (the user wrote no `add`: a set of differentiated values)
            return "a set of differentiated values has no tangent (sets are unordered); use a tuple"
        return write_message(entry, self.users_name(written))

    def users_name(self, x) -> str | None:
        """The user's name of the container ``x``: ``x`` itself, or for a part of one the lowering
        read into a temporary (``y[1:3].fill(0.0)``, ``y.T[0].sort()``, ``rows[0].reverse()``), the
        container it is a part (or a view) of."""
        while isinstance(x, str) and x in self.temps:
            bindings = self.bindings.get(x, ())
            expr = getattr(bindings[0], "expr", None) if len(bindings) == 1 else None
            if not isinstance(expr, (ir.GetItem, ir.GetAttr)):
                return None
            x = expr.obj
        return x if isinstance(x, str) else None

    def run(self) -> Effects:
        out = Effects()
        calls = [s for s in self.stmts if isinstance(s, ir.Assign) and isinstance(s.expr, (ir.Call, ir.MethodCall))]
        untrusted = [s for s in calls if not self.trusted(s.expr)]
        self.build_edges(untrusted)
        for stmt in untrusted:
            known = self.known(stmt.expr)
            if self.mode.get(stmt.index, "plain") != "plain":
                # differentiated through its rule, which a call that writes in place has none of
                if known is not None:
                    self.a.refuse(stmt, known)
                continue
            entry, written = self.known_entry(stmt.expr)
            later = self.bound_later(stmt)
            if entry is not None:
                held = self.held_by(written, later) if isinstance(written, str) else []
                roots = self.names([written, *held])
            else:
                roots = self.roots(stmt, later)
            if not roots:
                continue
            changed = self.affected(roots, later)
            involved = any(self.a.is_active(x) for x in stmt.expr.operands()) or bool(changed & self.a.active)
            matters = involved and (self.used(changed, stmt, "after") or self.seen_outside(changed))
            if matters or self.used(changed, stmt, "before", holding=True):
                if known is not None:
                    self.a.refuse(stmt, known)
                # the object whose method it is first: the container a known writing method changes
                first = self.users_name(stmt.expr.obj) if isinstance(stmt.expr, ir.MethodCall) else None
                shown = sorted((n != first, n) for n in roots if n not in self.temps and n not in self.a.fn.made)
                out.dispatched[stmt.index] = tuple(n for _, n in shown)
        for stmt in self.stmts:
            if isinstance(stmt, (ir.SetItem, ir.Mutate)) and stmt.obj not in self.buffers:
                # a write into a global container: fine for a log the function does not read back
                changed = self.affected([stmt.obj])
                involved = self.a.is_active(stmt.value) or stmt.obj in self.a.active
                read_back = involved and self.used(changed, stmt, "after")
                if read_back or self.used(changed, stmt, "before", holding=True):
                    self.a.refuse(
                        stmt,
                        f"writing into the global `{stmt.obj}` in place, which the function also reads, is not "
                        "supported: the reverse pass would not follow it; build a local value instead",
                    )
        for name in self.buffers:
            if name not in self.a.active:
                holders = {v for v in self.every_name() if name in self.reach([v])}
                users = [u for v in holders for u in self.users.get(v, ())]
                if any(self.mode.get(u.index, "plain") not in _NOT_HOLDING for u in users):
                    out.flagged.add(name)
        out.copied_reads = self.copied_reads(untrusted)
        out.fresh_rebinds = self.fresh_rebinds()
        for update, read in self.fresh_item_updates():
            out.fresh_rebinds.add(update.index)
            out.fresh_items.add(read.index)
        for stmt in self.stmts:
            if isinstance(stmt, ir.Assign) and getattr(stmt, "augmented", False) and stmt.expr.operands():
                old = stmt.expr.operands()[0]
                target = self.name(old)
                if target is None:
                    continue
                others = {v for v in self.every_name() if v != target and target in self.reach([v])}
                shared = others or self.edges.get(target) or self.seen_outside({target})
                if stmt.index in out.fresh_rebinds:
                    continue
                if shared or self.used({target}, stmt, "before", holding=True):
                    out.rebind_checks.add(stmt.index)
        return out

    def copied_reads(self, untrusted: list) -> set[int]:
        """The element reads ``t = x[i]`` of the statements ``x[j] = f(..., x[i], ...)`` that may
        read a copy when the element is a view of ``x``, so that writing into ``x`` at the end of the
        statement is not refused as a write into a viewed container (as for ``x[i] += v``).

        A copy gives the same values wherever ``t`` (or a view of it) is read, as long as nothing
        writes into ``x`` between the read and the last use of ``t``, and ``t``'s object reaches no
        one who could read it after the write. The temporary ``t`` lives in this one statement
        (every user is in it, checked here), which ends with the write; nothing in it rebinds
        ``x`` (a walrus) and no call in it may write into anything (an untrusted call could write
        into ``x`` through ``t``, or keep ``t``). A pullback that holds ``t`` then holds the values
        read, which is what the derivative needs."""
        suspect = {s.index for s in untrusted}
        by_index = {s.index: s for s in self.stmts}
        copied = set()
        for stmt in self.stmts:
            found = getattr(stmt, "write_back", None)
            if found is None:
                continue
            write, indices = found
            statement = [by_index[i] for i in indices if i in by_index]
            if len(statement) != len(indices) or indices & suspect:
                continue
            if any(s is not write and write.obj in s.targets() for s in statement):
                continue
            if all(user.index in indices for user in self.users.get(stmt.target, ())):
                copied.add(stmt.index)
        return copied

    def captured(self) -> set[str]:
        """The variables a nested function (a lambda, a ``def``) captures: it may read their objects later."""
        return {
            name
            for s in self.stmts
            if isinstance(s, ir.Assign) and isinstance(s.expr, ir.MakeFunction)
            for name in s.expr.captures
        }

    def fresh_rebinds(self) -> set[int]:
        """The augmented assignments ``x op= v`` (``x = x op v`` here, marked ``augmented``) where
        rebinding ``x`` gives what Python's update in place would: ``x`` is a local array or list
        that no one else can hold when the statement runs.

        - every binding of ``x`` makes a new array or list: an allocating call (``np.zeros``,
          ``list``, an array's or list's ``.copy()``), a list display, or such an augmented
          assignment (its result is checked to keep the type: see below);
        - every statement that may run before it (earlier, or in a loop around it) and uses ``x``
          only reads it: an operator whose other operands are arrays, numbers or lists (its result
          is new), ``x``'s shape or dtype, ``len(x)``, a test, an element of a list (not of an array:
          a view), or a write into it; so no other name, container, view, closure or callee holds
          its object, and none could see that the update was not made in place. A pullback holding
          the old object is then right: it needs the values from before the update.

        The generated code checks, when it runs, that ``v`` is an array or a number (for an array)
        or a list (for a list), so that ``x op v`` means what ``x op= v`` does, and that the result
        keeps ``x``'s shape and dtype (in place, NumPy would have cast it or refused)."""
        captured = self.captured()
        candidates = {}
        for stmt in self.stmts:
            if not (isinstance(stmt, ir.Assign) and getattr(stmt, "augmented", False)):
                continue
            expr, target = stmt.expr, stmt.target
            if isinstance(expr, ir.Op) and len(expr.operands()) == 2 and expr.operands()[0] == target:
                if target not in captured and target in self.a.local and not self.seen_outside({target}):
                    candidates[stmt.index] = stmt
        fresh = set()
        for index, stmt in candidates.items():
            target = stmt.target
            if not all(b.index in candidates or self.makes_new(b, target) for b in self.bindings.get(target, ())):
                continue
            here, around = self.position[index], self.loop_body(stmt)
            before = [
                u
                for u in self.users.get(target, ())
                if u.index not in candidates and (u.index in around or self.position[u.index] < here)
            ]
            if all(self.only_reads(u, target) for u in before):
                fresh.add(index)
        return fresh

    def fresh_item_updates(self) -> list[tuple]:
        """The element updates ``x[k] op= v`` (here ``t = x[k]``, ``u = t op v``, ``x[k] = u``, the
        ``(u, t)`` statements returned) where writing ``u`` back gives what Python's update of the
        element in place would, as ``fresh_rebinds`` does for a variable: no one else can hold the
        element when the update runs.

        - ``x`` is a local list or dict that every binding makes new: a display (a comprehension's
          list) whose elements are fresh, or a variable handed over to it (``xs = [... for ...]``);
        - every element put into it (display items, ``append``, ``x[j] = w``, the updates' results) is
          fresh: a number, or a variable every binding of which makes a new array or list and which
          nothing but the store (and writes into it) uses;
        - every statement that may run before the update (earlier, or in a loop around it) and uses
          ``x`` only reads it: its length, a test, a dict's keys, or an element into a temporary of
          one statement that only operators, ufuncs and the like read (they make new values).

        The generated code checks, when it runs, what ``fresh_rebinds`` checks: ``v`` fits the element
        and the result keeps its type, shape and dtype."""
        captured = self.captured()
        found, verdicts = [], {}
        for update in self.stmts:
            if not getattr(update, "item_update", False):
                continue
            reads = self.bindings.get(update.expr.operands()[0], ())
            if len(reads) != 1:
                continue
            read = reads[0]
            container = read.expr.obj
            if container not in verdicts:
                group = self.fresh_container(container, captured)
                # the elements read out of it are new arrays, lists or numbers (see `fresh_container`)
                elements = frozenset(
                    u.target for name in group or () for u in self.users.get(name, ()) if _reads_element_of(u, name)
                )
                verdicts[container] = group, elements
            group, elements = verdicts[container]
            if group is None:
                continue
            here, around = self.position[update.index], self.loop_body(update)
            if all(
                self.reads_elements_only(u, name, group, elements)
                for name in group
                for u in self.users.get(name, ())
                if u.index in around or self.position[u.index] < here
            ):
                found.append((update, read))
        return found

    def fresh_container(self, name: str, captured: set) -> set[str] | None:
        """The variables that held the object of ``name`` (a list or dict the function made, whose
        elements are fresh: see ``fresh_item_updates``) before ``name`` did; None when it is not one."""
        group, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n in group:
                continue
            if n in captured or n not in self.a.local or self.seen_outside({n}):
                return None
            if self.a.type_of(n) not in (list, dict):
                return None
            group.add(n)
            for binding in self.bindings.get(n, ()):
                if isinstance(binding, (ir.SetItem, ir.Mutate)):
                    stored = binding.value
                    if (isinstance(binding, ir.Mutate) and binding.method != "append") or n in (
                        stored,
                        getattr(binding, "key", None),
                    ):
                        return None
                    if not self.fresh_element(stored, binding, captured):
                        return None
                    continue
                expr = getattr(binding, "expr", None)
                if isinstance(binding, ir.Assign) and isinstance(expr, ir.Copy) and isinstance(expr.value, str):
                    if not all(
                        u is binding or (isinstance(u, (ir.SetItem, ir.Mutate)) and u.obj == expr.value)
                        for u in self.users.get(expr.value, ())
                    ):
                        return None  # (another holder of the object)
                    todo.append(expr.value)
                    continue
                if isinstance(expr, ir.Build) and expr.kind == "list" and not any(a.starred for a in expr.items):
                    items = [a.value for a in expr.items]
                elif isinstance(expr, ir.BuildDict) and all(k is not None for k, _ in expr.items):
                    items = [v for _, v in expr.items]
                else:
                    return None
                if not all(self.fresh_element(v, binding, captured) for v in items):
                    return None
        return group

    def fresh_element(self, value, store, captured: set) -> bool:
        """Whether ``value``, which ``store`` puts into a container, is a number or a new array or
        list that nothing but ``store`` (and writes into it) uses."""
        if not isinstance(value, str):
            return _number(value)
        if is_real(self.a.type_of(value)):
            return True
        if value in captured or value not in self.a.local or self.seen_outside({value}):
            return False
        users = self.users.get(value, ())
        if sum(1 for u in users if u is store) != 1:  # (stored once, not also as the key)
            return False
        if not all(u is store or (isinstance(u, (ir.SetItem, ir.Mutate)) and u.obj == value) for u in users):
            return False
        # an update's result is checked to be new when it runs (see `fresh_item_updates`)
        return all(getattr(b, "item_update", False) or self.makes_new(b, value) for b in self.bindings.get(value, ()))

    def reads_elements_only(self, stmt, name: str, group: set, elements: frozenset) -> bool:
        """Whether ``stmt`` uses the container ``name`` without keeping it or an element of it (see
        ``fresh_item_updates``): writes into it are checked there."""
        if isinstance(stmt, (ir.SetItem, ir.Mutate)) and stmt.obj == name:
            return name not in (getattr(stmt, "key", None), stmt.value)
        if isinstance(stmt, (ir.If, ir.While)):
            return True
        if isinstance(stmt, ir.For):
            return stmt.iterable == name and self.a.type_of(name) is dict  # (its keys)
        if not isinstance(stmt, ir.Assign):
            return False
        expr = stmt.expr
        if isinstance(expr, ir.Copy):
            return stmt.target in group  # (the hand-over to the container's variable)
        if _reads_element_of(stmt, name):
            element = stmt.target
            return element in self.temps and all(
                self.only_reads(u, element, elements)
                # another update's `t op v`: checked when it runs to be an operator on arrays or numbers
                or (getattr(u, "item_update", False) and u.expr.operands()[0] == element)
                for u in self.users.get(element, ())
            )
        if isinstance(expr, ir.Call):
            return self.a.call_target(expr) is len and len(expr.args) == 1 and not expr.kwargs
        return False

    def makes_new(self, stmt, name: str) -> bool:
        """Whether ``stmt``, a binding of ``name`` (or a write into it), binds it to a new array or
        list."""
        if isinstance(stmt, (ir.SetItem, ir.Mutate)):
            return stmt.obj == name  # a write into it, not a binding
        if not isinstance(stmt, ir.Assign):
            return False
        expr = stmt.expr
        if isinstance(expr, ir.Build):
            return expr.kind == "list"
        if isinstance(expr, ir.Op):
            # an operator on arrays, numbers and lists returns a new object (`y = x * 2.0`)
            return all(self.plain_value(x) for x in expr.operands())
        if isinstance(expr, ir.MethodCall) and expr.name == "copy" and not expr.args and not expr.kwargs:
            owner = self.a.type_of(expr.obj) if isinstance(expr.obj, str) else None
            return isinstance(owner, ArrayType) or owner is list
        if isinstance(expr, (ir.Call, ir.MethodCall)):
            f = self.a.call_target(expr)  # `np.zeros(n)` is a method call on the module
            # (arguments the lowering packed are looked into; a user's `*args` or `**options` may hold `out=`)
            positional, keywords = self.arguments(expr)
            if f is _MISSING or not _hashable(f) or positional is None or keywords is None:
                return False
            if f in _NEW_ARRAYS or f in _ALLOCATORS:  # with any keyword but `out=`
                return "out" not in keywords
            # a ufunc without an output argument returns a new array (or an immutable scalar): `y = np.cos(x)`
            return isinstance(f, np.ufunc) and not keywords and len(positional) <= f.nin
        return False

    def plain_value(self, x) -> bool:
        """An array (or an engine's stand-in for one: a dual array), a number or a list: what an
        operator makes a new object of."""
        if not isinstance(x, str):
            return _number(x) or isinstance(x.value, (list, tuple))
        t = self.a.type_of(x)
        return is_arraylike(t) or is_real(t) or t in (list, tuple)

    def only_reads(self, stmt, name: str, plain: frozenset = frozenset()) -> bool:
        """Whether ``stmt`` uses ``name``'s object (an array or a list) without keeping it or handing
        it on (``plain``: more variables known to hold arrays, numbers or lists)."""
        if isinstance(stmt, (ir.SetItem, ir.Mutate)):
            return stmt.obj == name and name not in (getattr(stmt, "key", None), stmt.value)
        if isinstance(stmt, (ir.If, ir.While)):
            return True  # the test's truth value
        if not isinstance(stmt, ir.Assign):
            return False
        expr = stmt.expr
        if isinstance(expr, ir.Op):
            return all(x == name or x in plain or self.plain_value(x) for x in expr.operands())
        if isinstance(expr, ir.GetAttr):
            return expr.name in ("shape", "ndim", "size", "dtype")
        if isinstance(expr, ir.GetItem):
            return False  # an array's element may be a view; a list's may be built on later
        if isinstance(expr, (ir.Call, ir.MethodCall)):
            f = self.a.call_target(expr)  # `np.sin(x)` is a method call on the module
            if isinstance(f, np.ufunc):  # it returns a new array and keeps none of its arguments
                return not expr.kwargs and not any(a.starred for a in expr.args)
            return reads_only(f) and len(expr.args) == 1 and not expr.kwargs
        return False


#: calls that return a new array or container, never one of their arguments
_ALLOCATORS = frozenset(
    {np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like, np.full_like}
    | {np.arange, np.linspace, np.eye, np.identity, list}
)

#: NumPy functions whose result is a new array (or an immutable scalar), never a view of an argument
_NEW_ARRAYS = frozenset(
    {np.stack, np.concatenate, np.vstack, np.hstack, np.where, np.dot, np.outer, np.inner, np.einsum}
    | {np.sum, np.mean, np.max, np.min, np.prod, np.cumsum, np.cumprod}
)


def _reads_element_of(stmt, name: str) -> bool:
    """Whether ``stmt`` is ``t = name[k]``."""
    return (
        isinstance(stmt, ir.Assign)
        and isinstance(stmt.expr, ir.GetItem)
        and stmt.expr.obj == name
        and stmt.expr.index != name
    )


def _hashable(f) -> bool:
    try:
        hash(f)
    except TypeError:
        return False
    return True


def _number(x) -> bool:
    return (
        isinstance(x, ir.Const)
        and isinstance(x.value, (int, float, complex, np.number))
        and not isinstance(x.value, bool)
    )


def _operands(stmt) -> tuple:
    if isinstance(stmt, ir.With):
        return tuple(c for c, _ in stmt.contexts)
    return stmt.operands()


def _call_arguments(expr) -> tuple:
    return (*(a.value for a in expr.args), *(k.value for k in expr.kwargs))


def _is_record_type(cls: type) -> bool:
    """A dataclass or namedtuple, whose construction stores its arguments and calls nothing else."""
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return True
    return dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__")


def _has_pure_rule(f, arg_types: list) -> bool:
    """Whether calls of ``f`` with these argument types use a rule (rules write into nothing)."""
    rule = static_lookup(rrule, f, arg_types)
    if rule is not _MISSING:
        return rule is not None
    try:
        entries = rrule._entries_for(f, False)
    except TypeError:
        return False
    if entries is None or entries.untyped in (None, OPT_OUT):
        return False
    return all(r is not OPT_OUT for _, r in entries.typed)


def analyze(analysis, stmts: list, mode: dict, buffers: dict) -> Effects:
    """The effects of ``analysis``'s function for its specialization (see the module's docstring)."""
    return _Effects(analysis, stmts, mode, buffers).run()
