"""The intermediate representation: a Wengert list with structured control flow.

Every statement does one thing to operands that are variable names or constants:

- ``Assign(target, expr)``: ``expr`` is one of ``Copy``, ``Call``, ``MethodCall``, ``Op`` (an
  operator of the ``operator`` module), ``GetAttr``, ``GetItem``, ``Build`` (tuple, list or
  set display), ``BuildDict``, ``BuildSlice``, ``MakeFunction`` (a nested ``def`` or
  ``lambda``) or ``Opaque`` (an expression with no derivative, such as an f-string);
- ``Unpack(targets, value)``: ``a, *b, c = value``;
- ``If(test, body, orelse)``; ``For(target, iterable, body)``; ``While(test_block, test, body)``
  (``test_block`` computes ``test`` before each iteration); ``Break`` (only last in a branch);
  ``With(contexts, body)``; ``Try(body, handlers, orelse, finalbody)``;
- ``SetItem(obj, key, value)`` and ``Mutate(obj, "append" | "extend", value)``: writes into a
  list, dict or array the function created;
- ``Return(value)`` (only as the last statement of the function); ``Raise`` and ``Plain``
  (``import``), which carry no derivative.

Each statement remembers the line of the user's source it came from and gets a number
(``index``) that names what the later passes generate for it (``pb_3``, ``dy_3``). The IR
prints as a Wengert list:

>>> print(Assign("y_1", Op("mul", ("b", "b")), line=2, index=1))
y_1 = mul(b, b)
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from typing import Any


@dataclasses.dataclass(frozen=True)
class Const:
    """A constant operand."""

    value: Any

    def __str__(self) -> str:
        return repr(self.value)


Operand = str | Const


def operand_str(x: Operand) -> str:
    return x if isinstance(x, str) else repr(x.value)


@dataclasses.dataclass(frozen=True)
class Arg:
    """A positional argument or display item; ``starred`` for ``*value``."""

    value: Operand
    starred: bool = False

    def __str__(self) -> str:
        return ("*" if self.starred else "") + operand_str(self.value)


@dataclasses.dataclass(frozen=True)
class Kwarg:
    """A keyword argument ``name=value``; ``name`` is None for ``**value``."""

    name: str | None
    value: Operand

    def __str__(self) -> str:
        return f"{self.name}={operand_str(self.value)}" if self.name else f"**{operand_str(self.value)}"


# ----- expressions ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Copy:
    value: Operand

    def operands(self) -> tuple[Operand, ...]:
        return (self.value,)

    def __str__(self) -> str:
        return operand_str(self.value)


@dataclasses.dataclass(frozen=True)
class Call:
    func: Operand
    args: tuple[Arg, ...] = ()
    kwargs: tuple[Kwarg, ...] = ()

    def operands(self) -> tuple[Operand, ...]:
        return (self.func, *(a.value for a in self.args), *(k.value for k in self.kwargs))

    def __str__(self) -> str:
        return f"{operand_str(self.func)}({', '.join(map(str, self.args + self.kwargs))})"


@dataclasses.dataclass(frozen=True)
class MethodCall:
    obj: Operand
    name: str
    args: tuple[Arg, ...] = ()
    kwargs: tuple[Kwarg, ...] = ()

    def operands(self) -> tuple[Operand, ...]:
        return (self.obj, *(a.value for a in self.args), *(k.value for k in self.kwargs))

    def __str__(self) -> str:
        return f"{operand_str(self.obj)}.{self.name}({', '.join(map(str, self.args + self.kwargs))})"


@dataclasses.dataclass(frozen=True)
class Op:
    """``operator.<op>(*operands)``: arithmetic, comparison, ``not``, ``is``, ``in``."""

    op: str
    operands_: tuple[Operand, ...]

    def operands(self) -> tuple[Operand, ...]:
        return self.operands_

    def __str__(self) -> str:
        return f"{self.op}({', '.join(map(operand_str, self.operands_))})"


@dataclasses.dataclass(frozen=True)
class GetAttr:
    obj: Operand
    name: str

    def operands(self) -> tuple[Operand, ...]:
        return (self.obj,)

    def __str__(self) -> str:
        return f"getattr({operand_str(self.obj)}, {self.name!r})"


@dataclasses.dataclass(frozen=True)
class GetItem:
    obj: Operand
    index: Operand

    def operands(self) -> tuple[Operand, ...]:
        return (self.obj, self.index)

    def __str__(self) -> str:
        return f"getitem({operand_str(self.obj)}, {operand_str(self.index)})"


_BRACKETS = {"tuple": ("(", ")"), "list": ("[", "]"), "set": ("{", "}")}


@dataclasses.dataclass(frozen=True)
class Build:
    """A tuple, list or set display."""

    kind: str
    items: tuple[Arg, ...]

    def operands(self) -> tuple[Operand, ...]:
        return tuple(a.value for a in self.items)

    def __str__(self) -> str:
        left, right = _BRACKETS[self.kind]
        inner = ", ".join(map(str, self.items))
        if self.kind == "tuple" and len(self.items) == 1:
            inner += ","
        return f"{left}{inner}{right}" if self.items or self.kind != "set" else "set()"


@dataclasses.dataclass(frozen=True)
class BuildDict:
    """A dict display; a key of None is ``**value``."""

    items: tuple[tuple[Operand | None, Operand], ...]

    def operands(self) -> tuple[Operand, ...]:
        return tuple(x for k, v in self.items for x in ((v,) if k is None else (k, v)))

    def __str__(self) -> str:
        parts = [f"**{operand_str(v)}" if k is None else f"{operand_str(k)}: {operand_str(v)}" for k, v in self.items]
        return "{" + ", ".join(parts) + "}"


@dataclasses.dataclass(frozen=True)
class BuildSlice:
    lower: Operand
    upper: Operand
    step: Operand

    def operands(self) -> tuple[Operand, ...]:
        return (self.lower, self.upper, self.step)

    def __str__(self) -> str:
        return f"slice({', '.join(map(operand_str, self.operands()))})"


@dataclasses.dataclass(frozen=True, eq=False)
class MakeFunction:
    """A nested ``def`` or ``lambda``: a closure over the enclosing function's variables.

    ``defaults``/``kwdefaults`` are the evaluated default values; ``captures`` the enclosing
    function's variables that the closure reads."""

    node: ast.FunctionDef | ast.Lambda
    name: str
    defaults: tuple[Operand, ...] = ()
    kwdefaults: tuple[tuple[str, Operand], ...] = ()
    captures: tuple[str, ...] = ()
    code: Any = None  # the nested function's code object, from the enclosing one's constants

    def operands(self) -> tuple[Operand, ...]:
        return (*self.defaults, *(v for _, v in self.kwdefaults), *self.captures)

    def __str__(self) -> str:
        return f"closure({self.name}, captures=({', '.join(self.captures)}))"


@dataclasses.dataclass(frozen=True, eq=False)
class Opaque:
    """An expression without derivative (an f-string), its names already atoms."""

    node: ast.expr
    names: tuple[str, ...] = ()

    def operands(self) -> tuple[Operand, ...]:
        return self.names

    def __str__(self) -> str:
        return ast.unparse(self.node)


Expr = Copy | Call | MethodCall | Op | GetAttr | GetItem | Build | BuildDict | BuildSlice | MakeFunction | Opaque


# ----- statements ----------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class Stmt:
    line: int = 0
    index: int = 0
    col: int = 0

    def blocks(self) -> tuple[list[Stmt], ...]:
        return ()

    def operands(self) -> tuple[Operand, ...]:
        return ()

    def targets(self) -> tuple[str, ...]:
        return ()


@dataclasses.dataclass(eq=False)
class Assign(Stmt):
    target: str = ""
    expr: Expr = None

    def __init__(self, target: str, expr: Expr, line: int = 0, index: int = 0, col: int = 0):
        self.target, self.expr, self.line, self.index, self.col = target, expr, line, index, col

    def operands(self) -> tuple[Operand, ...]:
        return self.expr.operands()

    def targets(self) -> tuple[str, ...]:
        return (self.target,)

    def __str__(self) -> str:
        return f"{self.target} = {self.expr}"


@dataclasses.dataclass(eq=False)
class Unpack(Stmt):
    """``t_1, *t_2, t_3 = value``; ``star`` is the position of the starred target or None."""

    names: tuple[str, ...] = ()
    value: Operand = ""
    star: int | None = None

    def operands(self) -> tuple[Operand, ...]:
        return (self.value,)

    def targets(self) -> tuple[str, ...]:
        return self.names

    def __str__(self) -> str:
        names = [("*" if i == self.star else "") + n for i, n in enumerate(self.names)]
        return f"{', '.join(names)}{',' if len(names) == 1 else ''} = {operand_str(self.value)}"


@dataclasses.dataclass(eq=False)
class If(Stmt):
    test: Operand = ""
    body: list[Stmt] = dataclasses.field(default_factory=list)
    orelse: list[Stmt] = dataclasses.field(default_factory=list)

    def blocks(self) -> tuple[list[Stmt], ...]:
        return (self.body, self.orelse)

    def operands(self) -> tuple[Operand, ...]:
        return (self.test,)

    def __str__(self) -> str:
        return f"if {operand_str(self.test)}:"


@dataclasses.dataclass(eq=False)
class For(Stmt):
    """``for target in iterable: body`` (no ``else``: normalization moved it after the loop)."""

    target: str = ""
    iterable: Operand = ""
    body: list[Stmt] = dataclasses.field(default_factory=list)

    def blocks(self) -> tuple[list[Stmt], ...]:
        return (self.body,)

    def operands(self) -> tuple[Operand, ...]:
        return (self.iterable,)

    def targets(self) -> tuple[str, ...]:
        return (self.target,)

    def __str__(self) -> str:
        return f"for {self.target} in {operand_str(self.iterable)}:"


@dataclasses.dataclass(eq=False)
class While(Stmt):
    """``while test: body``; ``test_block`` computes ``test`` before every iteration."""

    test_block: list[Stmt] = dataclasses.field(default_factory=list)
    test: Operand = ""
    body: list[Stmt] = dataclasses.field(default_factory=list)

    def blocks(self) -> tuple[list[Stmt], ...]:
        return (self.test_block, self.body)

    def operands(self) -> tuple[Operand, ...]:
        return (self.test,)

    def __str__(self) -> str:
        return f"while {operand_str(self.test)}:"


@dataclasses.dataclass(eq=False)
class Break(Stmt):
    """Leave the innermost loop (only last in a branch of its body)."""

    def __str__(self) -> str:
        return "break"


@dataclasses.dataclass(eq=False)
class SetItem(Stmt):
    """``obj[key] = value`` into a list, dict or array the function created."""

    obj: str = ""
    key: Operand = ""
    value: Operand = ""

    def operands(self) -> tuple[Operand, ...]:
        return (self.obj, self.key, self.value)

    def targets(self) -> tuple[str, ...]:
        return (self.obj,)

    def __str__(self) -> str:
        return f"{self.obj}[{operand_str(self.key)}] = {operand_str(self.value)}"


@dataclasses.dataclass(eq=False)
class Mutate(Stmt):
    """``obj.append(value)`` or ``obj.extend(value)`` on a list the function created."""

    obj: str = ""
    method: str = ""
    value: Operand = ""

    def operands(self) -> tuple[Operand, ...]:
        return (self.obj, self.value)

    def targets(self) -> tuple[str, ...]:
        return (self.obj,)

    def __str__(self) -> str:
        return f"{self.obj}.{self.method}({operand_str(self.value)})"


@dataclasses.dataclass(eq=False)
class With(Stmt):
    """``with context [as name]: body``; the contexts carry no derivative."""

    contexts: tuple[tuple[Operand, str | None], ...] = ()
    body: list[Stmt] = dataclasses.field(default_factory=list)

    def blocks(self) -> tuple[list[Stmt], ...]:
        return (self.body,)

    def operands(self) -> tuple[Operand, ...]:
        return tuple(c for c, _ in self.contexts)

    def targets(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.contexts if name)

    def __str__(self) -> str:
        items = ", ".join(operand_str(c) + (f" as {n}" if n else "") for c, n in self.contexts)
        return f"with {items}:"


@dataclasses.dataclass(frozen=True, eq=False)
class Handler:
    """``except kind as name: body``; ``kind`` (an operand computed before the ``try``) and ``name``
    may be None. The exception carries no derivative."""

    kind: Operand | None
    name: str | None
    body: list[Stmt]
    line: int = 0


@dataclasses.dataclass(eq=False)
class Try(Stmt):
    """``try: body`` with its ``except`` handlers, ``else`` and ``finally`` blocks."""

    body: list[Stmt] = dataclasses.field(default_factory=list)
    handlers: tuple[Handler, ...] = ()
    orelse: list[Stmt] = dataclasses.field(default_factory=list)
    finalbody: list[Stmt] = dataclasses.field(default_factory=list)

    def blocks(self) -> tuple[list[Stmt], ...]:
        return (self.body, *(h.body for h in self.handlers), self.orelse, self.finalbody)

    def operands(self) -> tuple[Operand, ...]:
        return tuple(h.kind for h in self.handlers if h.kind is not None)

    def targets(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.handlers if h.name)

    def __str__(self) -> str:
        return "try:"


def handler_header(handler: Handler) -> str:
    """``except kind as name:`` as Python."""
    kind = "" if handler.kind is None else f" {operand_str(handler.kind)}"
    return f"except{kind}" + (f" as {handler.name}:" if handler.name else ":")


@dataclasses.dataclass(eq=False)
class Return(Stmt):
    value: Operand = Const(None)

    def operands(self) -> tuple[Operand, ...]:
        return (self.value,)

    def __str__(self) -> str:
        return f"return {operand_str(self.value)}"


@dataclasses.dataclass(eq=False)
class Raise(Stmt):
    exc: Operand | None = None
    cause: Operand | None = None

    def operands(self) -> tuple[Operand, ...]:
        return tuple(x for x in (self.exc, self.cause) if x is not None)

    def __str__(self) -> str:
        text = "raise" if self.exc is None else f"raise {operand_str(self.exc)}"
        return text if self.cause is None else f"{text} from {operand_str(self.cause)}"


@dataclasses.dataclass(eq=False)
class Plain(Stmt):
    """A statement run as it is, with no derivative (``import``)."""

    node: ast.stmt = None
    names: tuple[str, ...] = ()

    def targets(self) -> tuple[str, ...]:
        return self.names

    def __str__(self) -> str:
        return ast.unparse(self.node)


# ----- the function --------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class Function:
    """A lowered function: its signature (``ast.arguments``), its body and where it came from."""

    name: str
    args: ast.arguments
    body: list[Stmt]
    filename: str = "<unknown>"
    firstlineno: int = 0
    #: temporaries of the Wengert list: each lives within one iteration of any loop around it
    temps: frozenset[str] = frozenset()
    #: the sets that set comprehensions fill (their elements are added one by one)
    set_comprehensions: frozenset[str] = frozenset()
    #: the variables the passes made (``item`` for a tuple target, ``retval``): not the user's
    made: frozenset[str] = frozenset()

    def params(self) -> list[str]:
        """Every parameter name, in signature order (``*args`` and ``**kwargs`` included)."""
        a = self.args
        names = [p.arg for p in a.posonlyargs + a.args]
        if a.vararg:
            names.append(a.vararg.arg)
        names += [p.arg for p in a.kwonlyargs]
        if a.kwarg:
            names.append(a.kwarg.arg)
        return names

    def __str__(self) -> str:
        return "\n".join(format_function(self))


def copies_itself(stmt: Stmt) -> bool:
    """Whether ``stmt`` is ``x = x.copy()``: ``x`` is bound to a new object made from its old one."""
    if not isinstance(stmt, Assign):
        return False
    expr = stmt.expr
    return isinstance(expr, MethodCall) and expr.name == "copy" and expr.obj == stmt.target and not expr.args


def walk(block: list[Stmt]) -> Iterator[Stmt]:
    """Every statement of a block, nested blocks included, in source order."""
    for stmt in block:
        yield stmt
        for inner in stmt.blocks():
            yield from walk(inner)


def format_block(block: list[Stmt], indent: int = 1) -> list[str]:
    lines = []
    pad = "    " * indent
    for stmt in block:
        if isinstance(stmt, While):
            lines.append(f"{pad}while True:")
            lines += format_block(stmt.test_block, indent + 1)
            lines.append(f"{pad}    if not {operand_str(stmt.test)}: break")
            lines += format_block(stmt.body, indent + 1)
            continue
        lines.append(f"{pad}{stmt}")
        if isinstance(stmt, (If, For, With, Try)):
            lines += format_block(stmt.body, indent + 1) or [f"{pad}    pass"]
        if isinstance(stmt, Try):
            for handler in stmt.handlers:
                lines.append(f"{pad}{handler_header(handler)}")
                lines += format_block(handler.body, indent + 1) or [f"{pad}    pass"]
        if isinstance(stmt, (If, Try)) and stmt.orelse:
            lines.append(f"{pad}else:")
            lines += format_block(stmt.orelse, indent + 1)
        if isinstance(stmt, Try) and stmt.finalbody:
            lines.append(f"{pad}finally:")
            lines += format_block(stmt.finalbody, indent + 1)
    return lines


def format_function(fn: Function) -> list[str]:
    return [f"def {fn.name}({ast.unparse(fn.args)}):", *format_block(fn.body)]
