"""Pass 3, normalize: desugar a function into the subset of Python that lowering understands.

The result is an ordinary ``ast.FunctionDef`` that prints (``ast.unparse``) as Python with the
same meaning as the original, in which:

- a ``lambda`` is a ``def`` whose body is one ``return``;
- docstrings, ``pass`` and annotations without value are gone; ``x: T = v`` is ``x = v``; a
  ``try`` without handlers whose ``finally`` block is empty is its body;
- ``x op= v`` on a name is ``x = x op v`` (the node is marked ``augmented`` so that the engine
  can refuse an in-place update of a mutable value that something else refers to);
- ``a = b = v`` is ``a = v`` followed by ``b = a``;
- ``return`` appears at most once, as the last statement; ``continue`` never; ``break`` only as
  the last statement of a branch of a loop's body; a loop has no ``else``. An ``if`` whose one
  branch always jumps takes the rest of the block into its other branch; where jumps are
  nested deeper, flags guard the statements after them (``returned`` for the function,
  ``skip``/``stop`` for a loop, reset at each iteration); so does a jump out of a ``with``
  or ``try`` block, which then runs to its end (a ``try``'s ``else`` block is skipped). The
  returned value is held in a variable (``retval``); a loop's ``else`` runs under ``not stop``.
  A ``raise`` is left as it is: Python skips what follows it by itself.

Every new statement carries the line and column of the original statement it replaces.
"""

from __future__ import annotations

import ast
import copy

from .names import Namer

NEVER, ALWAYS, MAYBE = "never", "always", "maybe"
_LOOPS = (ast.For, ast.While)
FUNCTION_JUMPS = (ast.Return, ast.Raise)
# the jumps that `jumps` rewrites: a `raise` needs no flags, as Python skips what follows it (to
# a handler, or out of the function) by itself
REWRITTEN_JUMPS = (ast.Return,)
REWRITTEN_LOOP_JUMPS = (ast.Return, ast.Break, ast.Continue)


def _has_loop_else(node: ast.AST) -> bool:
    """Whether a loop with an ``else`` clause occurs in ``node``, outside nested function definitions."""
    stack = [node]
    while stack:
        sub = stack.pop()
        if isinstance(sub, _LOOPS) and sub.orelse:
            return True
        for child in ast.iter_child_nodes(sub):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)
    return False


def _contains(node: ast.AST, kind: type) -> bool:
    """Whether ``kind`` occurs in ``node``, outside nested function definitions."""
    stack = [node]
    while stack:
        sub = stack.pop()
        if isinstance(sub, kind):
            return True
        for child in ast.iter_child_nodes(sub):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)
    return False


def _exits(block: list[ast.stmt], kinds: tuple = FUNCTION_JUMPS) -> str:
    """Whether a jump of ``kinds`` leaves this block: never, always or on some paths. A loop inside
    may return; its own ``break``/``continue`` stay inside it."""
    found = False
    for stmt in block:
        if isinstance(stmt, kinds):
            return ALWAYS
        if isinstance(stmt, ast.If):
            body, orelse = _exits(stmt.body, kinds), _exits(stmt.orelse, kinds)
            if body == ALWAYS and orelse == ALWAYS:
                return ALWAYS
            found = found or body != NEVER or orelse != NEVER
        elif isinstance(stmt, _LOOPS) and ast.Return in kinds and _contains(stmt, ast.Return):
            found = True
        elif isinstance(stmt, (ast.With, ast.Try)):
            # a jump out of a `with` or `try` block runs to the block's end under flags (see `jumps`)
            found = found or any(_exits(block, kinds) != NEVER for block in _blocks(stmt))
    return MAYBE if found else NEVER


def _blocks(stmt: ast.With | ast.Try) -> list[list[ast.stmt]]:
    """The blocks of a ``with`` or ``try`` statement (a ``finally`` block has no jumps: see the fence)."""
    if isinstance(stmt, ast.With):
        return [stmt.body]
    return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse]


def _set_blocks(stmt: ast.With | ast.Try, blocks: list[list[ast.stmt]]) -> None:
    """Put the normalized ``blocks`` (as ``_blocks`` lists them) back; an empty one gets a ``pass``."""
    blocks = [block or [ast.copy_location(ast.Pass(), stmt)] for block in blocks]
    stmt.body = blocks[0]
    if isinstance(stmt, ast.Try):
        for handler, block in zip(stmt.handlers, blocks[1:]):
            handler.body = block
        stmt.orelse = blocks[-1] if stmt.orelse else []


class _Loop:
    """The flags of one loop: ``skip`` (the rest of this iteration is skipped) and ``stop`` (the
    loop ends after this iteration), created when a jump needs them."""

    def __init__(self, namer: Namer, has_else: bool):
        self.namer = namer
        self.has_else = has_else
        self.skip: str | None = None
        self.stop: str | None = None

    def skip_flag(self) -> str:
        if self.skip is None:
            self.skip = self.namer.fresh("skip")
        return self.skip

    def stop_flag(self) -> str:
        if self.stop is None:
            self.stop = self.namer.fresh("stop")
        return self.stop


def _assign(name: str, value, where: ast.AST) -> ast.Assign:
    node = ast.Assign(
        targets=[ast.Name(name, ast.Store())], value=ast.Constant(value) if type(value) is bool else value
    )
    return ast.copy_location(node, where)


def _not(name: str) -> ast.expr:
    return ast.UnaryOp(ast.Not(), ast.Name(name, ast.Load()))


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
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            stmt.body = self.block(stmt.body)
            if not isinstance(stmt, ast.With):
                stmt.orelse = self.block(stmt.orelse)
            if isinstance(stmt, ast.Try):
                for handler in stmt.handlers:
                    handler.body = self.block(handler.body) or [ast.copy_location(ast.Pass(), handler)]
                stmt.finalbody = self.block(stmt.finalbody)
                if not stmt.handlers and not stmt.finalbody:
                    return stmt.body  # `try: ... finally: pass` is its body
                stmt.body = stmt.body or [ast.copy_location(ast.Pass(), stmt)]
            return [stmt]
        return [stmt]

    def block(self, block: list[ast.stmt]) -> list[ast.stmt]:
        return [new for stmt in block for new in self.statement(stmt)]

    # -- jumps: one exit from the function, breaks only at the end of an iteration --
    def jumps(self, block: list[ast.stmt], loop: _Loop | None, flagged: bool) -> list[ast.stmt]:
        """``block`` without ``return``/``continue`` and with ``break`` only last in a branch: a
        jump ends its branch, and the statements after a possible jump move into the branch
        that does not jump or run under a flag. ``flagged``: a jump must set the flags, because
        the statements after the enclosing ``if`` are guarded by them."""
        kinds = REWRITTEN_LOOP_JUMPS if loop is not None else REWRITTEN_JUMPS
        out: list[ast.stmt] = []
        for i, stmt in enumerate(block):
            rest = block[i + 1 :]
            if isinstance(stmt, ast.Raise):
                out.append(stmt)
                return out
            if isinstance(stmt, (ast.Return, ast.Break, ast.Continue)):
                out += self.jump(stmt, loop, flagged)
                return out
            if isinstance(stmt, _LOOPS):
                may_return = _contains(stmt, ast.Return)
                normalized, after = self.loop(stmt)
                out += normalized
                rest = after + rest  # the loop's `else`, whose jumps are the enclosing block's
                if may_return and loop is not None:
                    # a return in the inner loop leaves this loop too: `if returned: break`
                    leave = ast.If(test=ast.Name(self._flag(), ast.Load()), body=[ast.Break()], orelse=rest)
                    out += self.jumps([ast.copy_location(leave, stmt)], loop, flagged)
                    return out
                if rest and may_return:  # the loop may have returned
                    out += self.guarded(rest, self._flag(), loop, flagged, stmt)
                    return out
                if after:
                    out += self.jumps(rest, loop, flagged)
                    return out
                continue
            if isinstance(stmt, (ast.With, ast.Try)) and _exits([stmt], kinds) != NEVER:
                # a jump out of the block: it sets the flags and the block runs to its end (so its
                # context manager exits, or its `finally` block runs, as Python's jump makes it),
                # then the flags guard the rest; a `try`'s `else` block does not run after a jump
                flag = loop.skip_flag() if loop is not None else self._flag()
                body_jumps = _exits(stmt.body, kinds) != NEVER  # (before `jumps` rewrites the jumps)
                blocks = [self.jumps(block, loop, True) for block in _blocks(stmt)]
                if isinstance(stmt, ast.Try) and stmt.orelse and body_jumps:
                    blocks[-1] = [
                        ast.copy_location(ast.If(test=_not(flag), body=blocks[-1], orelse=[]), stmt.orelse[0])
                    ]
                _set_blocks(stmt, blocks)
                out.append(stmt)
                if rest:
                    out += self.guarded(rest, flag, loop, flagged, rest[0])
                return out
            if not isinstance(stmt, ast.If) or _exits([stmt], kinds) == NEVER:
                if (
                    isinstance(stmt, (ast.If, ast.With, ast.Try))
                    and _exits(stmt.body, kinds) == NEVER
                    and _contains(stmt, _LOOPS)
                ):
                    # no jump leaves this block, but a loop inside it gets its own jumps and
                    # `else` normalized, as a loop here does
                    if isinstance(stmt, ast.If):
                        stmt.body = self.jumps(stmt.body, loop, flagged) or [ast.copy_location(ast.Pass(), stmt)]
                        stmt.orelse = self.jumps(stmt.orelse, loop, flagged)
                    else:
                        _set_blocks(stmt, [self.jumps(block, loop, flagged) for block in _blocks(stmt)])
                        if isinstance(stmt, ast.Try):
                            stmt.finalbody = self.jumps(stmt.finalbody, loop, flagged)
                out.append(stmt)
                continue
            body, orelse = _exits(stmt.body, kinds), _exits(stmt.orelse, kinds)
            if body == ALWAYS and orelse == NEVER:
                stmt.body = self.jumps(stmt.body, loop, flagged)
                stmt.orelse = self.jumps(stmt.orelse + rest, loop, flagged)
            elif orelse == ALWAYS and body == NEVER:
                stmt.body = self.jumps(stmt.body + rest, loop, flagged)
                stmt.orelse = self.jumps(stmt.orelse, loop, flagged)
            elif body == ALWAYS and orelse == ALWAYS:
                stmt.body = self.jumps(stmt.body, loop, flagged)
                stmt.orelse = self.jumps(stmt.orelse, loop, flagged)
            else:  # jumps nested deeper on some paths: a flag guards what follows
                stmt.body = self.jumps(stmt.body, loop, True)
                stmt.orelse = self.jumps(stmt.orelse, loop, True)
                out.append(self.branch(stmt))
                if rest:
                    flag = loop.skip_flag() if loop is not None else self._flag()
                    out += self.guarded(rest, flag, loop, flagged, rest[0])
                return out
            out.append(self.branch(stmt))
            return out
        return out

    def branch(self, stmt: ast.If) -> ast.If:
        """Empty branches get a ``pass`` so that the normalized function prints as Python."""
        if not stmt.body:
            stmt.body = [ast.copy_location(ast.Pass(), stmt)]
        return stmt

    def guarded(self, rest, flag: str, loop, flagged: bool, where) -> list[ast.stmt]:
        body = self.jumps(rest, loop, flagged)
        return [ast.copy_location(ast.If(test=_not(flag), body=body, orelse=[]), where)] if body else []

    def jump(self, stmt: ast.stmt, loop: _Loop | None, flagged: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        if isinstance(stmt, ast.Return):
            value = stmt.value if stmt.value is not None else ast.Constant(None)
            out.append(_assign(self._retval(), value, stmt))
            if flagged or loop is not None:
                out.append(_assign(self._flag(), True, stmt))
        if loop is None:
            return out
        if flagged:  # the rest of the iteration is guarded by `skip`; `stop` ends the loop
            out.append(_assign(loop.skip_flag(), True, stmt))
            if not isinstance(stmt, ast.Continue):
                out.append(_assign(loop.stop_flag(), True, stmt))
        elif not isinstance(stmt, ast.Continue):
            if loop.has_else:
                out.append(_assign(loop.stop_flag(), True, stmt))
            out.append(ast.copy_location(ast.Break(), stmt))
        return out

    def loop(self, stmt: ast.For | ast.While) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """The loop with its body normalized and its flags set up, and its ``else`` as the
        statements to run after it (under ``not stop`` where a ``break`` may skip them)."""
        loop = _Loop(self.namer, bool(stmt.orelse))
        body = self.jumps(stmt.body, loop, False)
        if loop.skip is not None:
            body.insert(0, _assign(loop.skip, False, stmt.body[0]))
        if loop.stop is not None and (loop.skip is not None):
            body.append(
                ast.copy_location(ast.If(test=ast.Name(loop.stop, ast.Load()), body=[ast.Break()], orelse=[]), stmt)
            )
        orelse = stmt.orelse
        stmt.body, stmt.orelse = body or [ast.Pass()], []
        out: list[ast.stmt] = []
        if loop.stop is not None:
            out.append(_assign(loop.stop, False, stmt))
        out.append(stmt)
        if orelse and loop.stop is not None:
            return out, [ast.copy_location(ast.If(test=_not(loop.stop), body=orelse, orelse=[]), orelse[0])]
        return out, orelse

    def _retval(self) -> str:
        if self.retval is None:
            self.retval = self.namer.fresh("retval")
        return self.retval

    def _flag(self) -> str:
        if self.flag is None:
            self.flag = self.namer.fresh("returned")
        return self.flag


def _explicit_super(fn: ast.FunctionDef) -> None:
    """``super()`` in a method is ``super(__class__, self)``: the class Python keeps for it in the
    method's ``__class__`` cell, and its first parameter. Written out, it is an ordinary call of
    ``super`` on variables, which the engine follows (the zero-argument form reads the frame)."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    if not params:
        return
    first = params[0].arg
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "super"
            and not node.args
            and not node.keywords
        ):
            node.args = [
                ast.copy_location(ast.Name("__class__", ast.Load()), node),
                ast.copy_location(ast.Name(first, ast.Load()), node),
            ]
        stack.extend(ast.iter_child_nodes(node))


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
    _explicit_super(fn)
    normalizer = _Normalizer(namer)
    body = normalizer.block(fn.body)
    falls_off_end = _exits(body) != ALWAYS
    last = body[-1] if body else None
    # loop jumps and loops' `else` clauses are normalized by `jumps`
    simple = not any(_contains(s, (ast.Break, ast.Continue)) or _has_loop_else(s) for s in body)
    if isinstance(last, ast.Return) and _exits(body[:-1]) == NEVER and simple:
        fn.body = body  # one return, at the end, and no loop jumps: nothing to do
        return fn
    body = normalizer.jumps(body, None, False)
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
