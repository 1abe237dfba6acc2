"""Pass 6, primal: the forward code, which computes the value and keeps what the adjoint needs.

Each statement becomes Python according to its mode (see ``simplify``):

- ``plain``/``copy``/``inline``: the statement as Python (``y_1 = b * b``);
- ``pullback``: ``y_3, pb_3 = pullback(f, a, b)`` — the rule of ``f`` if there is one, else the
  engine's own transformation of ``f`` — with ``pullback_method(obj, "name", ...)`` for method
  calls, ``pullback(getattr, obj, "name")`` and ``pullback(operator.getitem, x, i)`` for field
  and item reads, and ``pullback_apply(f, args, kwargs)`` for calls with ``*``/``**`` or keyword
  arguments that are variables;
- ``struct``: tuple/list/dict displays as Python; ``a, b = t`` as ``(a, b), pb_4 = unpack(t, 2, None)``;
- ``element``: ``p["W"]``, ``p.W`` and ``a, b = p`` as Python, the adjoint keeping the cotangent
  of each element of ``p`` apart;
- ``closure``: ``g = make_closure(...)`` from the nested function's original code object, with
  cells that the enclosing function keeps up to date.

A value the adjoint reads (an operand of an inlined operator, a branch's test) is read from its
variable when that variable is bound once; otherwise a copy is taken where it is used
(``x_5 = x``). What was kept for each statement is recorded in ``saved``.
"""

from __future__ import annotations

import dataclasses
import math
import types

import numpy as np

from . import ir
from .codegen import Line
from .names import Namer
from .simplify import INACTIVE_TYPES, NONDIFF_OPS, ArrayType, StructType, class_of, is_arraylike, is_real, reads_only

LITERALS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))

PY_BINARY = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    "matmul": "@",
    "lshift": "<<",
    "rshift": ">>",
    "or_": "|",
    "xor": "^",
    "and_": "&",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "is_": "is",
    "is_not": "is not",
}
PY_UNARY = {"neg": "-", "pos": "+", "not_": "not ", "invert": "~"}


@dataclasses.dataclass(frozen=True)
class Stacked:
    """A value saved once per loop iteration: the primal appends it to ``stack``; the adjoint
    takes it back as ``name`` from ``rev``, an iterator over the stack from its end."""

    stack: str
    name: str
    rev: str


_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype"})


def _use_of(stmt, name: str, plan) -> str | None:
    """How ``stmt`` uses the written-in-place container ``name``: not at all, reading it (an
    element, its length or shape), ``maybe_view`` (an element that may be a view of it), or
    ``escape`` (any other use lets another reference reach it)."""
    if name not in stmt.operands():
        return None
    if isinstance(stmt, (ir.SetItem, ir.Mutate)):
        return "escape" if name in (stmt.key if isinstance(stmt, ir.SetItem) else None, stmt.value) else None
    if isinstance(stmt, ir.Assign):
        expr = stmt.expr
        if isinstance(expr, ir.Op) and expr.op in NONDIFF_OPS:
            return None  # a comparison or a membership test
        if isinstance(expr, ir.GetItem) and expr.obj == name and expr.index != name:
            return "maybe_view"
        if _element_read(expr, name, plan):
            return "maybe_view"  # d.get(key, default): an element, as d[key] reads it
        if isinstance(expr, ir.GetAttr) and expr.name in _SHAPE_ATTRIBUTES:
            return None
        if isinstance(expr, (ir.Call, ir.MethodCall)) and reads_only(plan.call_target(expr)) and len(expr.args) == 1:
            return None  # its length, or a copy
    if isinstance(stmt, ir.For) and stmt.iterable == name:
        return "maybe_view"
    if isinstance(stmt, (ir.If, ir.While, ir.Try)):
        return None  # the test's truth value; a handler's exception class
    return "escape"


def _may_hold_memory(t) -> bool:
    """Whether a value of the analysis type ``t`` may be an array whose memory a view shares (not a
    number, a string, a shape or a module)."""
    return t is not None and not is_real(t) and t not in INACTIVE_TYPES and t not in (int, tuple)


def _element_read(expr, name: str, plan) -> bool:
    """Whether ``expr`` is ``name.get(key[, default])`` on a dict: it reads an element (or gives the
    default), keeping no reference to the dict."""
    return (
        isinstance(expr, ir.MethodCall)
        and expr.obj == name
        and expr.name == "get"
        and 1 <= len(expr.args) <= 2
        and not expr.kwargs
        and not any(a.starred or a.value == name for a in expr.args)
        and class_of(plan.types.get(name)) is dict
    )


class _Track:
    """The counter of the statements that ran in a ``try`` body (or in an iteration of a loop in
    one), and the index of the ``try`` or loop statement it belongs to."""

    def __init__(self, counter: str, owner: int):
        self.counter, self.owner, self.count = counter, owner, 0

    def next(self) -> int:
        self.count += 1
        return self.count


class Helpers:
    """The names generated code uses for the engine's helpers and for non-literal constants."""

    def __init__(self, namer: Namer):
        self.namer = namer
        self.names: dict[str, str] = {}
        self.constants: dict[str, object] = {}
        self._const_ids: dict[int, str] = {}

    def __call__(self, helper: str) -> str:
        if helper not in self.names:
            self.names[helper] = self.namer.fresh(helper)
        return self.names[helper]

    def const(self, value) -> str:
        text = _literal(value)
        if text is not None:
            negative = isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0
            return f"({text})" if negative else text
        key = id(value)
        if key not in self._const_ids:
            if isinstance(value, types.CodeType):
                stem = f"{value.co_name}_code" if value.co_name.isidentifier() else "lambda_code"
            else:
                stem = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or "const"
                stem = stem.rsplit(".", 1)[-1]
            name = self.namer.fresh(stem if stem.isidentifier() else "const")
            self._const_ids[key] = name
            self.constants[name] = value
        return self._const_ids[key]


def _literal(value) -> str | None:
    """``value`` as Python source where it is a literal (tuples of literals included), else None."""
    if type(value) is tuple:
        items = [_literal(v) for v in value]
        if None in items:
            return None
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, LITERALS) and not (isinstance(value, float) and not math.isfinite(value)):
        return repr(value)
    return None


class Primal:
    def __init__(self, plan, namer: Namer, helpers: Helpers, cellvars: tuple[str, ...], freevars: tuple[str, ...]):
        self.plan = plan
        self.namer = namer
        self.h = helpers
        self.lines: list[Line] = []
        self.saved: dict[int, dict[str, str]] = {}
        self.cellvars = cellvars
        self.freevars = freevars
        self.cells = {v: namer.fresh(f"cell_{v}") for v in cellvars}
        self.uses_fcells = False
        self.definitions = {s.target: s for s in ir.walk(plan.fn.body) if isinstance(s, ir.Assign)}
        # the names the function binds; a container it writes into without binding it is a global's
        # or a captured one, written in place (binding the name would make it a local of the code)
        self.bound = set(plan.fn.params()).union(
            *(s.targets() for s in ir.walk(plan.fn.body) if not isinstance(s, (ir.SetItem, ir.Mutate)))
        )
        self.loops: list = []
        self.stacks: list[Stacked] = []
        #: the counter of the `try` body being emitted (see `tracked`), and whether a simple
        #: statement of it is
        self.track: _Track | None = None
        self.deferring = False
        # containers written in place whose writes must not reach what a pullback holds: those
        # carrying derivatives, and those the effects pass found a pullback may hold
        watched = [name for name in plan.buffers if name in plan.active or name in plan.effects.flagged]
        self.buffers = {name: namer.fresh(f"{name}_shared") for name in watched}

    # -- rendering --
    def operand(self, x: ir.Operand) -> str:
        return x if isinstance(x, str) else self.h.const(x.value)

    def attr_base(self, x: ir.Operand) -> str:
        text = self.operand(x)
        return text if isinstance(x, str) else f"({text})"

    def args(self, args, kwargs) -> str:
        parts = [("*" if a.starred else "") + self.operand(a.value) for a in args]
        parts += [f"{k.name}={self.operand(k.value)}" if k.name else f"**{self.operand(k.value)}" for k in kwargs]
        return ", ".join(parts)

    def python(self, expr) -> str:
        """``expr`` as a Python expression, exactly as the user wrote it."""
        if isinstance(expr, ir.Copy):
            return self.operand(expr.value)
        if isinstance(expr, ir.Op):
            xs = [self.operand(x) for x in expr.operands_]
            if expr.op in PY_UNARY:
                return f"{PY_UNARY[expr.op]}{xs[0]}"
            if expr.op == "contains":
                return f"{xs[1]} in {xs[0]}"
            return f"{xs[0]} {PY_BINARY[expr.op]} {xs[1]}"
        if isinstance(expr, ir.Call):
            return f"{self.operand(expr.func)}({self.args(expr.args, expr.kwargs)})"
        if isinstance(expr, ir.MethodCall):
            return f"{self.attr_base(expr.obj)}.{expr.name}({self.args(expr.args, expr.kwargs)})"
        if isinstance(expr, ir.GetAttr):
            return f"{self.attr_base(expr.obj)}.{expr.name}"
        if isinstance(expr, ir.GetItem):
            return f"{self.attr_base(expr.obj)}[{self.operand(expr.index)}]"
        if isinstance(expr, ir.Build):
            items = self.args(expr.items, ())
            if expr.kind == "tuple":
                return f"({items},)" if len(expr.items) == 1 else f"({items})"
            if expr.kind == "list":
                return f"[{items}]"
            return f"{{{items}}}" if expr.items else f"{self.h('set')}()"
        if isinstance(expr, ir.BuildDict):
            parts = [
                f"**{self.operand(v)}" if k is None else f"{self.operand(k)}: {self.operand(v)}" for k, v in expr.items
            ]
            return "{" + ", ".join(parts) + "}"
        if isinstance(expr, ir.BuildSlice):
            return f"{self.h('slice')}({', '.join(self.operand(x) for x in expr.operands())})"
        if isinstance(expr, ir.Opaque):
            import ast

            return ast.unparse(expr.node)
        if isinstance(expr, ir.MakeFunction):
            return self.closure(expr)
        raise TypeError(f"cannot render {expr!r}")

    def closure(self, expr: ir.MakeFunction) -> str:
        code = self.plan_code(expr)
        cells = []
        for name in expr.captures:
            if name in self.cells:
                cells.append(self.cells[name])
            else:
                self.uses_fcells = True
                cells.append(f"{self.h('fcells')}[{name!r}]")
        defaults = ", ".join(self.operand(d) for d in expr.defaults)
        defaults = f"({defaults},)" if len(expr.defaults) == 1 else f"({defaults})"
        kwdefaults = "{" + ", ".join(f"{k!r}: {self.operand(v)}" for k, v in expr.kwdefaults) + "}"
        cell_tuple = f"({', '.join(cells)},)" if len(cells) == 1 else f"({', '.join(cells)})"
        return (
            f"{self.h('make_closure')}({code}, {self.h('globals')}(), {expr.name!r}, {defaults}, {kwdefaults}, "
            f"{cell_tuple})"
        )

    def plan_code(self, expr: ir.MakeFunction) -> str:
        return self.h.const(expr.code)

    # -- emitting --
    def emit(self, indent: int, text: str, line: int):
        self.lines.append(Line(indent, text, line))

    def keep(self, stmt: ir.Stmt, name: str, indent: int, before: bool = True):
        """How the adjoint reads ``name``'s value at ``stmt``: the variable itself when nothing
        changes it later, a copy taken here otherwise, or, inside a loop, a stack the value is
        pushed on here (``Stacked``)."""
        if self.loops:
            if self.plan.available(name, stmt):
                return name
            return self.push(stmt, name, name, indent, before)
        if self.plan.stable(name):
            return name
        copy = self.namer.fresh(f"{name}_{stmt.index}")
        line = (indent, f"{copy} = {name}", stmt.line)
        self.emit(*line) if before else self._after.append(line)
        return copy

    def push(self, stmt: ir.Stmt, value: str, stem: str, indent: int, before: bool = True) -> Stacked:
        """Push ``value`` on a stack of the function call, once per execution of ``stmt``; the
        adjoint takes it back as ``<stem>`` (a pullback's own name) or ``<stem>_<n>``."""
        name = stem if stem.startswith("pb_") or stem.startswith("n_") else self.namer.fresh(f"{stem}_{stmt.index}")
        stacked = Stacked(self.namer.fresh(f"{name}_stack"), name, self.namer.fresh(f"{name}_rev"))
        self.stacks.append(stacked)
        if before and self.deferring:  # held now, pushed once the statement ran (see `tracked`)
            held = self.namer.fresh(f"{name}_held")
            self.emit(indent, f"{held} = {value}", stmt.line)
            value, before = held, False
        line = (indent, f"{stacked.stack}.append({value})", stmt.line)
        self.emit(*line) if before else self._after.append(line)
        return stacked

    def pullback_name(self, stmt: ir.Stmt, indent: int):
        """The name of ``stmt``'s pullback, and how the adjoint gets it back (pushed in a loop)."""
        pb = self.namer.fresh(f"pb_{stmt.index}")
        return pb, (self.push(stmt, pb, pb, indent, before=False) if self.loops else pb)

    def block(self, block: list[ir.Stmt], indent: int):
        start = len(self.lines)
        if self.track is not None:
            self.tracked(block, indent)
        else:
            for stmt in block:
                self.statement(stmt, indent)
        if len(self.lines) == start:
            self.emit(indent, "pass", 0)

    def statement(self, stmt: ir.Stmt, indent: int):
        mode = self.plan.mode.get(stmt.index, "plain")
        saved = self.saved.setdefault(stmt.index, {})
        self._after: list = []
        line = stmt.line
        if isinstance(stmt, ir.Return):
            return  # the code generator returns the value with the pullback
        if isinstance(stmt, ir.If):
            test = self.operand(stmt.test)
            if mode == "branch" and isinstance(stmt.test, str):
                saved["test"] = self.keep(stmt, stmt.test, indent)
            if self.track is not None:  # a branch of a `try` body starts (see `tracked`)
                self.emit(indent, f"{self.track.counter} = {saved['ran'][1]}", 0)
            self.emit(indent, f"if {test}:", line)
            self.block(stmt.body, indent + 1)
            if stmt.orelse:
                self.emit(indent, "else:", 0)
                self.block(stmt.orelse, indent + 1)
            return
        if isinstance(stmt, (ir.For, ir.While)):
            self.loop(stmt, mode, saved, indent)
            return
        if isinstance(stmt, ir.With):
            # a context manager may suppress an exception that stopped the body half way: the
            # adjoint follows a body that ran to its end, and any other is refused
            ran = None if mode == "plain" else self.namer.fresh(f"ran_{stmt.index}")
            if ran is not None:
                self.emit(indent, f"{ran} = 0", line)
            items = ", ".join(self.operand(c) + (f" as {n}" if n else "") for c, n in stmt.contexts)
            if self.track is not None:  # a block of a `try` body starts (see `tracked`)
                self.emit(indent, f"{self.track.counter} = {saved['ran'][1]}", 0)
            self.emit(indent, f"with {items}:", line)
            self.block(stmt.body, indent + 1)
            if ran is not None:
                self.emit(indent + 1, f"{ran} = 1", 0)
                self.emit(indent, f"if {ran} != 1:", 0)
                self.emit(indent + 1, f"{self.h('suppressed_inside')}({self.plan.fn.filename!r}, {line})", 0)
            return
        if isinstance(stmt, ir.Try):
            self.try_statement(stmt, mode, saved, indent)
            return
        if isinstance(stmt, ir.Break):
            self.emit(indent, "break", line)
            return
        if isinstance(stmt, (ir.SetItem, ir.Mutate)):
            self.write(stmt, mode, saved, indent)
            self.escapes(stmt, indent)
            return
        if isinstance(stmt, ir.Raise):
            text = "raise" if stmt.exc is None else f"raise {self.operand(stmt.exc)}"
            if stmt.cause is not None:
                text += f" from {self.operand(stmt.cause)}"
            self.emit(indent, text, line)
            return
        if isinstance(stmt, ir.Plain):
            import ast

            self.emit(indent, ast.unparse(stmt.node), line)
        elif isinstance(stmt, ir.Unpack):
            names = list(stmt.names)
            if mode == "struct":
                pb, saved["pb"] = self.pullback_name(stmt, indent)
                target = f"({', '.join(names)},)" if len(names) == 1 else f"({', '.join(names)})"
                star = "None" if stmt.star is None else str(stmt.star)
                value = self.operand(stmt.value)
                self.emit(indent, f"{target}, {pb} = {self.h('unpack')}({value}, {len(names)}, {star})", line)
            else:
                targets = [("*" if i == stmt.star else "") + n for i, n in enumerate(names)]
                self.emit(
                    indent, f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = {self.operand(stmt.value)}", line
                )
        elif isinstance(stmt, ir.Assign):
            self.assign(stmt, mode, saved, indent)
            if getattr(stmt, "augmented_read", False):
                self.item_update_check(stmt, indent)
        for entry in self._after:
            self.emit(*entry)
        for name in stmt.targets():
            if name in self.cells:
                self.emit(indent, f"{self.cells[name]}.cell_contents = {name}", line)
        self.escapes(stmt, indent)

    # -- blocks an exception may stop: `try` and `with` --
    def try_statement(self, stmt: ir.Try, mode: str, saved: dict, indent: int):
        """``try`` as written, keeping for the adjoint how far the body ran (see ``tracked``) and
        which handler ran; the engine's own errors (a missing rule, say) pass through the user's
        handlers. Inside the body of another ``try``, its handlers, ``else`` and ``finally``
        blocks count their statements with that one's counter, and what it keeps is pushed (in a
        loop) as ``finally`` starts, however the ``try`` ends."""
        outer = self.track
        if mode == "plain":
            ran = handled = None
        else:
            ran = self.namer.fresh(f"ran_{stmt.index}")
            self.emit(indent, f"{ran} = 0", stmt.line)
            handled = self.namer.fresh(f"handled_{stmt.index}") if stmt.handlers else None
            if handled:
                self.emit(indent, f"{handled} = 0", stmt.line)
            if outer is not None:  # (see `tracked`)
                self.emit(indent, f"{outer.counter} = {saved['ran'][1]}", 0)
        kept = [(role, name) for role, name in (("progress", ran), ("handled", handled)) if name]
        pushed_finally = outer is not None and bool(self.loops) and bool(kept)
        self.emit(indent, "try:", stmt.line)
        self.track = None if ran is None else _Track(ran, stmt.index)
        self.block(stmt.body, indent + 1)
        if ran is not None:
            last = self.lines[-1]
            if last.indent == indent + 1 and last.text == f"{ran} = {self.track.count}":
                saved["complete"] = self.track.count  # the body's last statement, which has the highest number
            else:
                saved["complete"] = self.track.next()
                self.emit(indent + 1, f"{ran} = {saved['complete']}", 0)
        self.track = outer
        if handled:
            self.emit(indent, f"except {self.h('ChainRulesError')}:", 0)
            self.emit(indent + 1, "raise", 0)
        for i, handler in enumerate(stmt.handlers, 1):
            kind = "" if handler.kind is None else f" {self.operand(handler.kind)}"
            self.emit(indent, f"except{kind}" + (f" as {handler.name}:" if handler.name else ":"), handler.line)
            if handled:
                self.emit(indent + 1, f"{handled} = {i}", 0)
            self.block(handler.body, indent + 1)
        if stmt.orelse:
            self.emit(indent, "else:", 0)
            self.block(stmt.orelse, indent + 1)
        if stmt.finalbody or pushed_finally:
            self.emit(indent, "finally:", 0)
            if pushed_finally:
                for role, name in kept:
                    saved[role] = self.push(stmt, name, name, indent + 1)
            if stmt.finalbody:
                self.block(stmt.finalbody, indent + 1)
        if not pushed_finally:
            for role, name in kept:
                saved[role] = self.push(stmt, name, name, indent) if self.loops else name

    def tracked(self, block: list[ir.Stmt], indent: int):
        """A block of a ``try`` body, numbering its statements in the order they run and setting
        the body's counter to each one's number once it ran, so that the adjoint goes back
        through those that ran. A compound statement sets the counter to its number as it
        starts; the statements of its blocks are numbered after it: a branch's (``if bad: raise
        ...`` stops the body inside one), a ``with`` block's, a nested ``try``'s handlers, ``else``
        and ``finally`` (its body has a counter of its own), and a loop's body has a counter of
        its own, reset at each iteration (see ``loop``). A statement's values kept in a loop are
        pushed once it ran, so that a stopped one pushes nothing."""
        track = self.track
        for stmt in block:
            mode = self.plan.mode.get(stmt.index, "plain")
            number = track.next()
            self.saved.setdefault(stmt.index, {})["ran"] = (track.owner, number)
            if stmt.blocks() and mode != "plain":
                self.statement(stmt, indent)  # (it sets the counter as it starts: `statement`, `loop`, ...)
                continue
            self.track, self.deferring = None, not stmt.blocks()
            self.statement(stmt, indent)
            self.track, self.deferring = track, False
            self.emit(indent, f"{track.counter} = {number}", 0)

    # -- loops --
    def loop(self, stmt, mode: str, saved: dict, indent: int):
        line = stmt.line
        counted = mode == "loop"
        over = None  # what the loop goes over, where it is not its iterable itself
        if counted:
            count = saved["count_name"] = self.namer.fresh(f"n_{stmt.index}")
            self.emit(indent, f"{count} = 0", line)
            if isinstance(stmt, ir.For) and stmt.index in self.plan.range_loops:
                saved["range"] = self.keep(stmt, stmt.iterable, indent)
            elif isinstance(stmt, ir.For) and self.plan.is_active(stmt.iterable) and self.plan.is_active(stmt.target):
                # the loop goes over the values an object of the user's class gives by its
                # __iter__, differentiated (see runtime.loop_iterable), not over the object
                iterated = self.namer.fresh(f"{stmt.iterable}_{stmt.index}")
                start = self.namer.fresh(f"start_{stmt.index}")
                self.emit(indent, f"{iterated}, {start} = {self.h('loop_iterable')}({stmt.iterable})", line)
                over = iterated
                saved["iterable"] = self.push(stmt, iterated, iterated, indent) if self.loops else iterated
                saved["start"] = self.push(stmt, start, start, indent) if self.loops else start
        if isinstance(stmt, ir.For) and stmt.iterable in self.buffers:
            flag = self.buffers[stmt.iterable]
            self.emit(indent, f"{flag} = True if {self.h('iterates_views')}({stmt.iterable}) else {flag}", line)
        # in a `try` body, an exception may stop the loop in any iteration: each iteration counts
        # the statements of its body that ran (see `tracked`), and the count of iterations and
        # the last one's progress are kept however the loop ends
        outer, step = self.track, None
        if counted and outer is not None:
            step = self.namer.fresh(f"step_{stmt.index}")
            self.emit(indent, f"{step} = 0", 0)
            self.emit(indent, f"{outer.counter} = {saved['ran'][1]}", 0)
            kept = (("count", count), ("progress", step))
            if self.loops:
                self.emit(indent, "try:", 0)
                indent += 1
        self.loops.append(stmt)
        self.track = None  # (a `while` test has no derivative)
        if isinstance(stmt, ir.For):
            self.emit(indent, f"for {stmt.target} in {over or self.operand(stmt.iterable)}:", line)
        elif stmt.test_block:
            self.emit(indent, "while True:", line)
            self.block(stmt.test_block, indent + 1)
            self.emit(indent + 1, f"if not {self.operand(stmt.test)}:", line)
            self.emit(indent + 2, "break", line)
        else:
            self.emit(indent, f"while {self.operand(stmt.test)}:", line)
        if counted:
            self.emit(indent + 1, f"{count} += 1", line)
        if step is not None:
            self.emit(indent + 1, f"{step} = 0", 0)
            self.track = _Track(step, stmt.index)
        self.block(stmt.body, indent + 1)
        if step is not None:
            saved["complete"] = self.track.next()
        self.track = outer
        self.loops.pop()
        if step is not None:
            if self.loops:
                indent -= 1
                self.emit(indent, "finally:", 0)
                for role, name in kept:
                    saved[role] = self.push(stmt, name, name, indent + 1)
            else:
                saved["count"], saved["progress"] = count, step
        elif counted and self.loops:
            saved["count"] = self.push(stmt, count, count, indent)
        elif counted:
            saved["count"] = count

    # -- writes into containers the function made --
    def write(self, stmt, mode: str, saved: dict, indent: int):
        obj, line = stmt.obj, stmt.line
        value = self.operand(stmt.value)
        if obj in self.buffers:
            where = f"{obj!r}, {line}, {stmt.col or 1}"
            flag = self.buffers[obj]
            if isinstance(stmt, ir.SetItem):  # refused where it overwrites a part a read viewed
                key = self.operand(stmt.key)
                self.emit(indent, f"if {flag} and {self.h('writes_viewed')}({flag}, {obj}, {key}):", line)
            else:
                self.emit(indent, f"if {flag}:", line)
            self.emit(indent + 1, f"{self.h('refuse_write')}({where})", line)
        if mode == "plain":
            if isinstance(stmt, ir.SetItem):
                # (an outer differentiation's value, a dual in a Hessian, may still be written)
                key = self.operand(stmt.key)
                if obj in self.bound:
                    self.emit(indent, f"{obj} = {self.h('plain_setitem')}({obj}, {key}, {value})", line)
                    self.rebound_cell(obj, indent, line)
                else:  # (a global's list or dict: as the user's line writes it)
                    self.emit(indent, f"{obj}[{key}] = {value}", line)
            else:
                self.emit(indent, f"{obj}.{stmt.method}({value})", line)
            return
        if isinstance(stmt, ir.Mutate) and stmt.method == "append":
            self.emit(indent, f"{self.h('append')}({obj}, {value})", line)
            return
        pb, saved["pb"] = self.pullback_name(stmt, indent)
        if isinstance(stmt, ir.SetItem):
            self.emit(indent, f"{obj}, {pb} = {self.h('setitem')}({obj}, {self.operand(stmt.key)}, {value})", line)
            self.rebound_cell(obj, indent, line)
        else:
            self.emit(indent, f"{pb} = {self.h('extend')}({obj}, {value})", line)
        for entry in self._after:
            self.emit(*entry)
        self._after = []

    def rebound_cell(self, obj: str, indent: int, line: int):
        """A write may rebind ``obj`` to an outer differentiation's array holding the same numbers
        (``setitem``): a closure reading ``obj`` reads it through its cell, which must follow."""
        if obj in self.cells:
            self.emit(indent, f"{self.cells[obj]}.cell_contents = {obj}", line)

    def escapes(self, stmt, indent: int):
        """Keep track of whether a container written in place may be seen through another
        reference (passed to a call, stored: writing into it then is refused) or which parts of it
        reads viewed (``core.views.ViewedParts``: writing into those is refused)."""
        if not self.buffers:
            return
        line = stmt.line
        if isinstance(stmt, ir.Assign) and stmt.target in self.buffers:
            flag = self.buffers[stmt.target]
            self.emit(indent, f"{flag} = False", line)
            if isinstance(stmt.expr, (ir.Call, ir.MethodCall)):
                # the arguments, and the call's own operands: a view of either is no new object
                types = self.plan.types
                given = [
                    x
                    for x in stmt.expr.operands()
                    if isinstance(x, str) and (_may_hold_memory(types.get(x)) or types.get(x) is tuple)
                ]
                params = list(dict.fromkeys([*self.plan.fn.params(), *given]))
                if stmt.target in params:  # (an argument bound to its copy, `A = A.copy()`: the name is the copy now)
                    params.remove(stmt.target)
                args = f"({', '.join(params)}{',' if len(params) == 1 else ''})"
                where = f"{stmt.target!r}, {line}, {stmt.col or 1}"
                self.emit(indent, f"{self.h('check_new')}({stmt.target}, {args}, {where})", line)
        copied = getattr(stmt, "augmented_read", False) or stmt.index in self.plan.effects.copied_reads
        if copied and stmt.expr.obj in self.buffers:
            # `x[i] += v`, `x[j] = x[i] * 2`: the element read is used only before the write that
            # ends the statement; reading a copy keeps a view of x from reaching the pullbacks,
            # so the write is not refused
            self.emit(indent, f"{stmt.target} = {self.h('copy_if_view')}({stmt.target})", line)
            return
        # (`out = out + 1.0`, `A = A.copy()`: the old array escapes, not the new)
        rebound = None
        if isinstance(stmt, ir.Assign) and (isinstance(stmt.expr, ir.Op) or ir.copies_itself(stmt)):
            rebound = stmt.target
        for name, flag in self.buffers.items():
            kind = _use_of(stmt, name, self.plan)
            if kind == "escape" and name != rebound:
                self.emit(indent, f"{flag} = True", line)
            elif kind == "maybe_view":
                self.emit(indent, f"{flag} = {self.h('viewed')}({flag}, {stmt.target}, {name})", line)

    def assign(self, stmt: ir.Assign, mode: str, saved: dict, indent: int):
        expr, target, line = stmt.expr, stmt.target, stmt.line
        if stmt.index in self.plan.effects.fresh_rebinds:
            # `x op= v` on the function's own array or list, which nothing else holds: rebinding
            # gives what the update in place would, when the result keeps x's type, shape and dtype
            old = self.namer.fresh(f"{target}_{stmt.index}_old")
            where = f"{self.plan.fn.filename!r}, {stmt.line}, {getattr(stmt, 'col', 1)}"
            value = self.operand(expr.operands()[1])
            self.emit(
                indent, f"{old} = {self.h('check_update')}({self.operand(expr.operands()[0])}, {value}, {where})", line
            )
            self._after.append((indent, f"{self.h('check_rebound')}({old}, {target}, {where})", line))
        if mode == "scalar":
            for i, a in enumerate(expr.args):
                role = f"arg{i}"
                saved[role] = self.keep(stmt, a.value, indent) if isinstance(a.value, str) else self.operand(a.value)
            self.emit(indent, f"{target} = {self.python(expr)}", line)
            return
        if mode == "index":
            for role, x in (("obj", expr.obj), ("key", expr.index)):
                saved[role] = self.keep(stmt, x, indent) if isinstance(x, str) else self.operand(x)
            self.emit(indent, f"{target} = {self.python(expr)}", line)
            return
        if mode == "inline":
            for role, x in _inline_needs(expr, target, self.plan):
                if isinstance(x, str):
                    saved[role] = self.keep(stmt, x, indent, before=role != "y")
                else:
                    saved[role] = self.operand(x)
            self.emit(indent, f"{target} = {self.python(expr)}", line)
            return
        if mode == "struct" and isinstance(expr, ir.Build) and any(a.starred for a in expr.items):
            pb, saved["pb"] = self.pullback_name(stmt, indent)
            parts = ", ".join(self.operand(a.value) for a in expr.items)
            flags = ", ".join(str(a.starred) for a in expr.items)
            tail = "," if len(expr.items) == 1 else ""
            self.emit(
                indent, f"{target}, {pb} = {self.h('pack')}({expr.kind!r}, ({parts}{tail}), ({flags}{tail}))", line
            )
            return
        if mode == "struct" and isinstance(expr, ir.BuildDict) and any(k is None for k, _ in expr.items):
            pb, saved["pb"] = self.pullback_name(stmt, indent)
            keys = ", ".join("None" if k is None else self.operand(k) for k, _ in expr.items)
            values = ", ".join(self.operand(v) for _, v in expr.items)
            tail = "," if len(expr.items) == 1 else ""
            self.emit(indent, f"{target}, {pb} = {self.h('pack_dict')}(({keys}{tail}), ({values}{tail}))", line)
            return
        if stmt.index in self.plan.effects.dispatched:  # a call that may write into a container
            names = self.plan.effects.dispatched[stmt.index]
            where = (names, stmt.line, stmt.col or 1)
            self.emit(indent, f"{target} = {self.dispatch_call(expr, where)}", line)
            return
        if stmt.index in self.plan.effects.rebind_checks:
            old = self.operand(expr.operands()[0])
            where = f"{self.plan.fn.filename!r}, {stmt.line}, {getattr(stmt, 'col', 1)}"
            self.emit(indent, f"{self.h('check_rebind')}({old}, {where})", line)
        if mode != "pullback":  # plain, copy, struct, closure; recompute makes its pullback in the reverse pass
            self.emit(indent, f"{target} = {self.python(expr)}", line)
            if stmt.index in self.plan.metadata_checks:  # taken for an array's shape (or dtype, ...): checked
                where = f"{self.operand(expr.obj)!r}, {expr.name!r}, {line}, {stmt.col or 1}"
                self.emit(indent, f"{self.h('check_metadata')}({target}, {where})", line)
            return
        if (
            getattr(stmt, "augmented", False)
            and not _real(self.plan.types.get(target))
            and stmt.index not in self.plan.effects.fresh_rebinds
        ):
            old = self.operand(expr.operands()[0])
            where = f"{self.plan.fn.filename!r}, {stmt.line}, {getattr(stmt, 'col', 1)}"
            self.emit(indent, f"{self.h('check_rebind')}({old}, {where})", line)
        pb, saved["pb"] = self.pullback_name(stmt, indent)
        self.emit(indent, f"{target}, {pb} = {self.pullback_call(expr, stmt)}", line)

    def item_update_check(self, stmt: ir.Assign, indent: int):
        """``x[i] op= v`` reads ``x[i]`` (``stmt``) to write ``x[i] op v`` back: checked where the
        element may be a mutable object that Python would update in place (see ``check_item_update``)."""
        obj = stmt.expr.obj  # (a variable: `subscript_target`)
        if stmt.index in self.plan.effects.fresh_items:
            return  # rebinding the element is the update in place (the update's own checks follow)
        if _real(self.plan.types.get(stmt.target)) or is_arraylike(self.plan.types.get(obj)):
            return
        where = f"{self.plan.fn.filename!r}, {stmt.line}, {stmt.col or 1}"
        self.emit(indent, f"{self.h('check_item_update')}({obj}, {stmt.target}, {where})", stmt.line)

    def dispatch_call(self, expr, where: tuple) -> str:
        """The call through the dispatcher, keeping only its value (see ``effects``)."""
        args = self.args(expr.args, expr.kwargs)
        tail = f", {args}" if args else ""
        if isinstance(expr, ir.Call):
            return f"{self.h('dispatch')}({where!r}, {self.operand(expr.func)}{tail})"
        if self.plan.static_module(expr.obj):
            return f"{self.h('dispatch')}({where!r}, {self.attr_base(expr.obj)}.{expr.name}{tail})"
        return f"{self.h('dispatch_method')}({where!r}, {self.operand(expr.obj)}, {expr.name!r}{tail})"

    def active_keywords(self, expr) -> str:
        """``, ('name', ...)``: the keyword arguments whose values are active (a rule would
        ignore them, which the dispatcher refuses), or nothing. The keys of an active mapping
        passed with ``**`` are known only when the call runs: ``(..., *mapping)``."""
        built = self.definitions.get(expr.kwargs[0].value)
        if not isinstance(built, ir.Assign) or not isinstance(built.expr, ir.BuildDict):
            return ""
        names = [
            repr(k.value) if isinstance(k, ir.Const) else f"*{self.operand(v)}"
            for k, v in built.expr.items
            if (k is None or isinstance(k, ir.Const)) and self.plan.is_active(v)
        ]
        return f", ({', '.join(names)},)" if names else ""

    def pullback_call(self, expr, stmt=None) -> str:
        pullback = self.h("pullback")
        rule = self.plan.direct.get(stmt.index) if stmt is not None else None
        if rule is not None:  # the rule itself: its callee and argument types are fixed here
            if isinstance(expr, ir.Op):
                args = ", ".join(self.operand(x) for x in expr.operands_)
            elif isinstance(expr, ir.GetItem):
                args = f"{self.operand(expr.obj)}, {self.operand(expr.index)}"
            elif isinstance(expr, ir.GetAttr):
                args = f"{self.operand(expr.obj)}, {expr.name!r}"
            else:
                args = self.args(expr.args, expr.kwargs)
            return f"{self.h.const(rule)}({args})"
        if isinstance(expr, ir.Op):
            operands = ", ".join(self.operand(x) for x in expr.operands_)
            return f"{pullback}({self.h('operator')}.{expr.op}, {operands})"
        if isinstance(expr, ir.GetAttr):
            return f"{pullback}({self.h('getattr')}, {self.operand(expr.obj)}, {expr.name!r})"
        if isinstance(expr, ir.GetItem):
            return f"{pullback}({self.h('operator')}.getitem, {self.operand(expr.obj)}, {self.operand(expr.index)})"
        if isinstance(expr, ir.Call):
            if _is_apply(expr):
                t, d = self.operand(expr.args[0].value), self.operand(expr.kwargs[0].value)
                return f"{self.h('pullback_apply')}({self.operand(expr.func)}, {t}, {d}{self.active_keywords(expr)})"
            args = self.args(expr.args, expr.kwargs)
            return f"{pullback}({self.operand(expr.func)}{', ' if args else ''}{args})"
        if isinstance(expr, ir.MethodCall):
            if self.plan.static_module(expr.obj):
                callee = f"{self.attr_base(expr.obj)}.{expr.name}"
                args = self.args(expr.args, expr.kwargs)
                if _is_apply(expr):
                    t, d = self.operand(expr.args[0].value), self.operand(expr.kwargs[0].value)
                    return f"{self.h('pullback_apply')}({callee}, {t}, {d}{self.active_keywords(expr)})"
                return f"{pullback}({callee}{', ' if args else ''}{args})"
            if _is_apply(expr):
                t, d = self.operand(expr.args[0].value), self.operand(expr.kwargs[0].value)
                obj, active = self.operand(expr.obj), self.active_keywords(expr)
                return f"{self.h('pullback_method_apply')}({obj}, {expr.name!r}, {t}, {d}{active})"
            args = self.args(expr.args, expr.kwargs)
            return f"{self.h('pullback_method')}({self.operand(expr.obj)}, {expr.name!r}{', ' if args else ''}{args})"
        raise TypeError(f"no pullback form for {expr!r}")


def _real(t) -> bool:
    from .simplify import is_real

    return is_real(t)


def _is_apply(expr) -> bool:
    """``f(*t, **d)``: the form lowering gives calls with ``*``, ``**`` or variable keywords."""
    return len(expr.args) == 1 and expr.args[0].starred and len(expr.kwargs) == 1 and expr.kwargs[0].name is None


def _inline_needs(expr: ir.Op, target: str, plan) -> list[tuple[str, ir.Operand]]:
    """The values the inlined partials of ``expr`` read in the adjoint, by role: the operands
    ``a`` and ``b`` (before the statement) and the result ``y`` (after it)."""
    xs = expr.operands_
    if expr.op == "mul":  # d(a * b) = b da + a db: each operand is needed for the other's partial
        return [(role, x) for role, x, other in (("a", xs[0], xs[1]), ("b", xs[1], xs[0])) if plan.is_active(other)]
    if expr.op == "truediv":
        return [("b", xs[1])] + ([("y", target)] if plan.is_active(xs[1]) else [])
    if expr.op == "pow":
        return [("a", xs[0]), ("b", xs[1])]
    return []


def guard(helpers: Helpers, checks: list[tuple[str, type]], call: str, relied: dict | None = None) -> list[Line]:
    """The first lines of a specialization: arguments of other types go back to the engine. For
    a structure, the elements whose types the plan relies on (``relied``: name -> path -> type)
    are checked too, each after its container's class and length."""
    if not checks:
        return []
    tests = []
    for name, t in checks:
        tests += _type_tests(helpers, name, t, (relied or {}).get(name, {}), ())
    tests = " or ".join(tests)
    return [Line(1, f"if {tests}:", 0), Line(2, f"return {helpers('respecialize')}({call})", 0)]


def _type_tests(helpers: Helpers, value: str, t, relied: dict, path: tuple) -> list[str]:
    """Tests that are all false when the expression ``value`` has the analysis type ``t``, as far as
    the plan relies on it (a structure's elements at the paths of ``relied`` below ``path``)."""
    if isinstance(t, ArrayType):
        return [
            f"{helpers('type')}({value}) is not {helpers.const(np.ndarray)}",
            f"{value}.dtype != {helpers.const(t.dtype.type)} or {value}.ndim != {t.ndim}",
        ]
    if not isinstance(t, StructType):
        return [f"{helpers('type')}({value}) is not {helpers.const(t)}"]
    tests = [f"{helpers('type')}({value}) is not {helpers.const(t.cls)}"]
    below = {p[len(path)] for p in relied if len(p) > len(path) and p[: len(path)] == path}
    if not below:
        return tests
    if t.kind in ("tuple", "list"):
        tests.append(f"{helpers('len')}({value}) != {len(t.items)}")
    for key, item in t.items:
        if key not in below:
            continue
        if t.kind == "dict":  # a missing key reads as None, which fails the test of any other type
            element = f"{value}.get({key!r})"
            if item is type(None):
                tests.append(f"{key!r} not in {value}")
        else:
            element = f"{value}.{key}" if t.kind == "fields" else f"{value}[{key}]"
        tests += _type_tests(helpers, element, item, relied, (*path, key))
    return tests


def generate(plan, namer: Namer, helpers: Helpers, cellvars=(), freevars=(), guard_lines=()) -> Primal:
    """The primal code of ``plan``'s function body (without its final ``return``)."""
    primal = Primal(plan, namer, helpers, tuple(cellvars), tuple(freevars))
    primal.lines.extend(guard_lines)
    params = set(plan.fn.params())
    for v in primal.cellvars:
        initial = f"{helpers('Cell')}({v})" if v in params else f"{helpers('Cell')}()"
        primal.emit(1, f"{primal.cells[v]} = {initial}", 0)
    start = len(primal.lines)
    primal.block(plan.fn.body, 1)
    # the stacks of this call: one per value saved inside a loop
    primal.lines[start:start] = [Line(1, f"{s.stack} = []", 0) for s in primal.stacks]
    return primal
