"""Pass 3, normalize: desugar a function into the subset of Python that lowering understands.

The result is an ordinary ``ast.FunctionDef`` that prints (``ast.unparse``) as Python with the
same meaning as the original, in which:

- a ``lambda`` is a ``def`` whose body is one ``return``;
- docstrings, ``pass`` and annotations without value are gone; ``x: T = v`` is ``x = v``;
- ``x op= v`` on a name is ``x = x op v`` (the node is marked ``augmented`` so that the engine
  can refuse an in-place update of a mutable value that something else refers to);
- ``a = b = v`` is ``a = v`` followed by ``b = a``;
- ``return`` appears at most once, as the last statement. An ``if`` whose one branch always
  returns (or raises) takes the rest of the block into its other branch; where returns are
  nested deeper, a flag (``returned``) guards the statements after them. The returned value is
  held in a variable (``retval``).

Every new statement carries the line and column of the original statement it replaces.
"""

from __future__ import annotations

import ast
import copy

from .names import Namer

NEVER, ALWAYS, MAYBE = "never", "always", "maybe"


def _exits(block: list[ast.stmt]) -> str:
    """Whether control leaves the function from this block: never, always or on some paths."""
    found = False
    for stmt in block:
        if isinstance(stmt, (ast.Return, ast.Raise)):
            return ALWAYS
        if isinstance(stmt, ast.If):
            body, orelse = _exits(stmt.body), _exits(stmt.orelse)
            if body == ALWAYS and orelse == ALWAYS:
                return ALWAYS
            found = found or body != NEVER or orelse != NEVER
    return MAYBE if found else NEVER


class _Normalizer:
    def __init__(self, namer: Namer):
        self.namer = namer
        self.retval: str | None = None
        self.flag: str | None = None

    # -- statements that are rewritten one by one --
    def statement(self, stmt: ast.stmt) -> list[ast.stmt]:
        if isinstance(stmt, ast.Pass):
            return []
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return []  # docstrings and other bare constants
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                return []
            return [ast.copy_location(ast.Assign(targets=[stmt.target], value=stmt.value), stmt)]
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            load = ast.copy_location(ast.Name(stmt.target.id, ast.Load()), stmt.target)
            value = ast.copy_location(ast.BinOp(load, stmt.op, stmt.value), stmt)
            new = ast.copy_location(ast.Assign(targets=[stmt.target], value=value), stmt)
            new.augmented = True
            return [new]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) > 1:
            # `a = b = v` assigns v to a, then to b: through the first name, or a fresh one
            first = stmt.targets[0]
            holder = first.id if isinstance(first, ast.Name) else self.namer.fresh("value")
            out = [ast.copy_location(ast.Assign(targets=[ast.Name(holder, ast.Store())], value=stmt.value), stmt)]
            for target in stmt.targets[0 if holder != getattr(first, "id", None) else 1 :]:
                value = ast.copy_location(ast.Name(holder, ast.Load()), stmt)
                out.append(ast.copy_location(ast.Assign(targets=[target], value=value), stmt))
            return out
        if isinstance(stmt, ast.If):
            stmt.body = self.block(stmt.body)
            stmt.orelse = self.block(stmt.orelse)
            return [stmt]
        return [stmt]

    def block(self, block: list[ast.stmt]) -> list[ast.stmt]:
        return [new for stmt in block for new in self.statement(stmt)]

    # -- a single exit --
    def returns(self, block: list[ast.stmt], flagged: bool) -> list[ast.stmt]:
        """``block`` with every ``return v`` made ``retval = v`` (and the flag set, if ``flagged``),
        and the statements after a possible return run only when it did not happen."""
        out: list[ast.stmt] = []
        for i, stmt in enumerate(block):
            if isinstance(stmt, ast.Return):
                out += self._return(stmt, flagged)
                return out
            if isinstance(stmt, ast.Raise):
                out.append(stmt)
                return out
            if not isinstance(stmt, ast.If) or _exits([stmt]) == NEVER:
                out.append(stmt)
                continue
            rest = block[i + 1 :]
            body, orelse = _exits(stmt.body), _exits(stmt.orelse)
            if body == ALWAYS and orelse == NEVER:
                stmt.body = self.returns(stmt.body, flagged)
                stmt.orelse = self.returns(stmt.orelse + rest, flagged)
            elif orelse == ALWAYS and body == NEVER:
                stmt.body = self.returns(stmt.body + rest, flagged)
                stmt.orelse = self.returns(stmt.orelse, flagged)
            elif body == ALWAYS and orelse == ALWAYS:
                stmt.body = self.returns(stmt.body, flagged)
                stmt.orelse = self.returns(stmt.orelse, flagged)
            else:  # returns nested deeper on some paths: a flag guards what follows
                stmt.body = self.returns(stmt.body, True)
                stmt.orelse = self.returns(stmt.orelse, True)
                out.append(stmt)
                if rest:
                    guard = ast.UnaryOp(ast.Not(), ast.Name(self._flag(), ast.Load()))
                    out.append(
                        ast.copy_location(ast.If(test=guard, body=self.returns(rest, flagged), orelse=[]), rest[0])
                    )
                return out
            out.append(stmt)
            return out
        return out

    def _return(self, stmt: ast.Return, flagged: bool) -> list[ast.stmt]:
        value = stmt.value if stmt.value is not None else ast.Constant(None)
        out = [ast.copy_location(ast.Assign(targets=[ast.Name(self._retval(), ast.Store())], value=value), stmt)]
        if flagged:
            flag = ast.Assign(targets=[ast.Name(self._flag(), ast.Store())], value=ast.Constant(True))
            out.append(ast.copy_location(flag, stmt))
        return out

    def _retval(self) -> str:
        if self.retval is None:
            self.retval = self.namer.fresh("retval")
        return self.retval

    def _flag(self) -> str:
        if self.flag is None:
            self.flag = self.namer.fresh("returned")
        return self.flag


def _as_function(node: ast.FunctionDef | ast.Lambda) -> ast.FunctionDef:
    if isinstance(node, ast.Lambda):
        ret = ast.copy_location(ast.Return(value=node.body), node.body)
        fn = ast.FunctionDef(name="<lambda>", args=node.args, body=[ret], decorator_list=[], returns=None)
        return ast.copy_location(fn, node)
    return node


def normalize(node: ast.FunctionDef | ast.Lambda, namer: Namer) -> ast.FunctionDef:
    """A desugared copy of the function ``node`` (the original is left as it is).

    >>> import ast
    >>> from chainrules.reverse.source.names import Namer
    >>> tree = ast.parse("def f(x):\\n    if x > 0:\\n        return x\\n    x += 1\\n    return -x")
    >>> print(ast.unparse(normalize(tree.body[0], Namer.for_function(tree.body[0]))))
    def f(x):
        if x > 0:
            retval = x
        else:
            x = x + 1
            retval = -x
        return retval
    """
    fn = copy.deepcopy(_as_function(node))
    normalizer = _Normalizer(namer)
    body = normalizer.block(fn.body)
    falls_off_end = _exits(body) != ALWAYS
    last = body[-1] if body else None
    if isinstance(last, ast.Return) and _exits(body[:-1]) == NEVER:
        fn.body = body  # one return, at the end: nothing to do
        return fn
    body = normalizer.returns(body, False)
    prologue = []
    if normalizer.flag is not None:
        prologue.append(ast.Assign(targets=[ast.Name(normalizer.flag, ast.Store())], value=ast.Constant(False)))
    if normalizer.retval is not None and (normalizer.flag is not None or falls_off_end):
        prologue.append(ast.Assign(targets=[ast.Name(normalizer.retval, ast.Store())], value=ast.Constant(None)))
    for stmt in prologue:
        ast.copy_location(stmt, fn)
        stmt.synthetic = True
    result = ast.Name(normalizer.retval, ast.Load()) if normalizer.retval else ast.Constant(None)
    end = body[-1] if body else fn
    ret = ast.Return(value=result)
    ret.lineno, ret.col_offset = getattr(end, "end_lineno", end.lineno) or end.lineno, 0
    ret.synthetic = True
    fn.body = prologue + body + [ret]
    ast.fix_missing_locations(fn)
    return fn
