"""Pass 2, fence: refuse what the engine does not differentiate, before anything is generated.

Each refusal is a ``chainrules.UnsupportedSyntaxError`` whose message starts with the
``file:line:col`` of the construct (the column counts from 1) and says what to do instead.
Nested functions are fenced when they are differentiated themselves; here only their
definitions are checked.

>>> import ast
>>> from chainrules.core import UnsupportedSyntaxError
>>> tree = ast.parse("def f(x):\\n    yield x")
>>> try:
...     check(tree.body[0], "model.py")
... except UnsupportedSyntaxError as err:
...     print(err)
model.py:2:5: `yield` is not supported: a generator cannot be differentiated; return a list instead
"""

from __future__ import annotations

import ast

from ...core.errors import UnsupportedSyntaxError
from .effects import delete_advice

_STATEMENTS = {
    ast.AsyncFor: ("`async for`", "a coroutine cannot be differentiated"),
    ast.AsyncWith: ("`async with`", "a coroutine cannot be differentiated"),
    ast.AsyncFunctionDef: ("`async def`", "a coroutine cannot be differentiated"),
    ast.ClassDef: ("a class definition inside a differentiated function", "define the class outside"),
    ast.Delete: ("`del`", "rebind the name instead"),
    ast.Match: ("`match`", "write it with `if`/`elif`"),
}
if hasattr(ast, "TryStar"):
    _STATEMENTS[ast.TryStar] = (
        "`try`/`except*`",
        'an exception group is not followed; differentiate the function with engine="tape", or write `except`',
    )

_EXPRESSIONS = {
    ast.Yield: ("`yield`", "a generator cannot be differentiated; return a list instead"),
    ast.YieldFrom: ("`yield from`", "a generator cannot be differentiated; return a list instead"),
    ast.Await: ("`await`", "a coroutine cannot be differentiated"),
}

_INTROSPECTION = {
    "locals": "it would see the engine's variables",
    "vars": "it would see the engine's variables",
    "eval": "code in a string cannot be differentiated",
    "exec": "code in a string cannot be differentiated",
}


class _Fence(ast.NodeVisitor):
    def __init__(self, filename: str, root: ast.AST, in_class: bool = True):
        self.filename = filename
        self.root = root
        self.in_class = in_class

    def refuse(self, node: ast.AST, message: str):
        raise UnsupportedSyntaxError(message, self.filename, node.lineno, node.col_offset + 1)

    # nested definitions are fenced on their own, when they are called
    def visit_FunctionDef(self, node: ast.FunctionDef):
        if node is self.root:
            self.generic_visit(node)
            return
        for decorator in node.decorator_list:
            self.visit(decorator)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)

    def visit_Lambda(self, node: ast.Lambda):
        if node is self.root:
            self.generic_visit(node)
            return
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)

    def visit_Delete(self, node: ast.Delete):
        for target in node.targets:
            if isinstance(target, ast.Subscript):
                self.refuse(node, delete_advice(ast.unparse(target.value)))
        self.generic_visit(node)

    def generic_visit(self, node: ast.AST):
        kind = type(node)
        if kind in _STATEMENTS:
            what, hint = _STATEMENTS[kind]
            self.refuse(node, f"{what} is not supported by the source engine: {hint}")
        if kind in _EXPRESSIONS:
            what, hint = _EXPRESSIONS[kind]
            self.refuse(node, f"{what} is not supported" + (f": {hint}" if hint else " by the source engine"))
        super().generic_visit(node)

    def visit_Assign(self, node: ast.Assign):
        for target in node.targets:
            self.target(target)
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        self.target(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign):
        self.target(node.target)
        self.visit(node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr):
        self.visit(node.value)

    def target(self, node: ast.expr):
        if isinstance(node, ast.Name):
            return
        if isinstance(node, (ast.Tuple, ast.List)):
            starred = [e for e in node.elts if isinstance(e, ast.Starred)]
            if len(starred) > 1:
                self.refuse(starred[1], "two starred targets in one assignment")
            for elt in node.elts:
                self.target(elt.value if isinstance(elt, ast.Starred) else elt)
            return
        if isinstance(node, ast.Subscript):
            self.visit(node.value)
            self.visit(node.slice)
            return
        if isinstance(node, ast.Attribute):
            self.refuse(
                node,
                "assigning to an attribute mutates an object in place, which is not supported here; keep the value "
                "in a variable, or build a new object (a dataclass: `obj = dataclasses.replace(obj, name=value)`)",
            )
        self.refuse(node, f"cannot assign to {type(node).__name__}")

    def visit_With(self, node: ast.With):
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.target(item.optional_vars)
        for stmt in node.body:
            self.visit(stmt)

    def visit_Try(self, node: ast.Try):
        jump = _jump_out_of(node.finalbody)
        if jump is not None:
            self.refuse(
                jump,
                f"`{type(jump).__name__.lower()}` inside `finally` is not supported by the source engine: it would "
                "discard the exception being raised; move it after the `try` statement",
            )
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            if func.id == "super" and not node.args and not self.in_class:
                self.refuse(node, "`super()` without arguments outside a method of a class has no class to start from")
            if func.id in _INTROSPECTION:
                self.refuse(node, f"`{func.id}()` is not supported: {_INTROSPECTION[func.id]}")
        self.generic_visit(node)


def _own_nodes(fn: ast.AST):
    """The nodes of ``fn`` outside its nested functions (which are fenced on their own)."""
    stack = list(fn.body) if isinstance(fn.body, list) else [fn.body]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _bound_in_loops(fn: ast.AST) -> dict[str, ast.AST]:
    """The names ``fn`` binds inside its loops, each with one place where it does."""
    found: dict[str, ast.AST] = {}
    for loop in _own_nodes(fn):
        if isinstance(loop, (ast.For, ast.While)):
            for name, places in _assignments(ast.FunctionDef(name="", args=_NO_ARGS, body=[loop])).items():
                found.setdefault(name, places[0])
    return found


_NO_ARGS = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _assignments(fn: ast.AST) -> dict[str, list[ast.AST]]:
    """Where each name is bound in ``fn`` itself (parameters, targets, defs, imports), in order."""
    found: dict[str, list[ast.AST]] = {}
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [x for x in (args.vararg, args.kwarg) if x]:
        found.setdefault(a.arg, []).append(a)
    stack = list(fn.body) if isinstance(fn.body, list) else [fn.body]
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.setdefault(node.id, []).append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.setdefault(node.name, []).append(node)
            stack.extend(node.decorator_list)
            continue
        elif isinstance(node, ast.Lambda):
            continue
        elif isinstance(node, ast.alias):
            found.setdefault((node.asname or node.name).split(".")[0], []).append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def check(
    fn: ast.FunctionDef | ast.Lambda, filename: str, captured: tuple[str, ...] = (), in_class: bool = True
) -> None:
    """Raise ``UnsupportedSyntaxError`` for the first construct of ``fn`` the engine refuses.

    ``captured`` names the variables of ``fn`` that nested functions close over; each must be
    bound once, because a closure sees the variable, not its value when it was created.
    ``in_class``: ``fn`` was defined in a class (it has the ``__class__`` cell ``super()`` reads).
    """
    fence = _Fence(filename, fn, in_class)
    fence.visit(fn)
    bindings = _assignments(fn)
    for stmt in _own_nodes(fn):
        if isinstance(stmt, (ast.Global, ast.Nonlocal)):
            for name in stmt.names:
                if name in bindings:
                    node = bindings[name][0]
                    keyword = "global" if isinstance(stmt, ast.Global) else "nonlocal"
                    fence.refuse(
                        node,
                        f"assigning to the {keyword} variable `{name}` is not supported; return the new value "
                        f"and assign it where `{name}` is defined",
                    )
    # a nested function that rebinds one of our variables (`nonlocal`) changes it behind the
    # engine's back, even when the call itself carries no derivative
    for node in ast.walk(fn):
        if node is fn or not isinstance(node, (ast.FunctionDef, ast.Lambda)):
            continue
        declared = {n for sub in ast.walk(node) if isinstance(sub, ast.Nonlocal) for n in sub.names}
        for name in sorted(declared & set(bindings)):
            inner = _assignments(node).get(name, [])
            where = next((p for p in inner if not isinstance(p, ast.arg)), None) or node
            fence.refuse(
                where,
                f"the nested function writes the variable `{name}` (`nonlocal`), which is not supported; return the "
                f"new value from it and assign it where `{name}` is defined (`{name} = update({name}, ...)`)",
            )
    in_loops = _bound_in_loops(fn)
    for name in captured:
        places = bindings.get(name, [])
        if name in in_loops:
            fence.refuse(
                in_loops[name],
                f"`{name}` is read by a nested function and bound in a loop; a closure sees the variable, "
                "not its value when the closure was made: pass it as a default argument (`k=k`)",
            )
        if len(places) > 1:
            fence.refuse(
                places[1],
                f"`{name}` is read by a nested function and bound more than once; a closure sees the "
                "variable, not its value when the closure was made: bind it once",
            )


def _jump_out_of(block: list[ast.stmt]) -> ast.stmt | None:
    """A ``return``, or a ``break``/``continue`` of an enclosing loop, in ``block`` (outside
    nested functions and, for ``break``/``continue``, outside loops of its own)."""
    stack = [(stmt, False) for stmt in block]
    while stack:
        node, in_loop = stack.pop()
        if isinstance(node, ast.Return) or (isinstance(node, (ast.Break, ast.Continue)) and not in_loop):
            return node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        inner = in_loop or isinstance(node, (ast.For, ast.While, ast.AsyncFor))
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return None
