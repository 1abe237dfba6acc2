"""Pass 4, lower: a normalized function to the Wengert-list IR (``ir.py``).

Every call and operator goes on its own line and binds a fresh temporary (``y_<n>``, where
``n`` is the statement's number); operands are names or constants (A-normal form). Operators
become ``Op`` statements named after the ``operator`` module's functions; ``x.attr`` and
``x[i]`` become ``GetAttr`` and ``GetItem``; ``obj.method(...)`` stays a ``MethodCall``, so that
the engine can pass ``obj`` to the method's rule or source. Expressions with control flow
(``a if c else b``, ``and``, ``or``, comparison chains) become ``If`` blocks assigning one
variable on each path, so the order and laziness of evaluation are Python's.

>>> import ast
>>> from chainrules.reverse.source.names import Namer
>>> node = ast.parse("def f(a, b):\\n    return a / (a + b * b)").body[0]
>>> print(lower(node, Namer.for_function(node), "<doc>"))
def f(a, b):
    y_1 = mul(b, b)
    y_2 = add(a, y_1)
    y_3 = truediv(a, y_2)
    return y_3
"""

from __future__ import annotations

import ast
import types

from ...core.errors import UnsupportedSyntaxError
from . import ir
from .names import Namer, identifiers
from .parse import find_definition

BINARY = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.BitOr: "or_",
    ast.BitXor: "xor",
    ast.BitAnd: "and_",
}
UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not_", ast.Invert: "invert"}
MUTATORS = frozenset({"append", "extend"})
#: the names of the code objects comprehensions compile to (before Python 3.12, which inlines them)
COMPREHENSIONS = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})
COMPARE = {
    ast.Eq: "eq",
    ast.NotEq: "ne",
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
    ast.Is: "is_",
    ast.IsNot: "is_not",
    ast.In: "contains",  # operands swapped: contains(container, item)
    ast.NotIn: "not_contains",
}


class _Lowerer:
    def __init__(self, namer: Namer, filename: str, code: types.CodeType | None, root: ast.AST):
        self.namer = namer
        self.filename = filename
        self.code = code
        self.root = root
        self.count = 0
        self.block: list[ir.Stmt] = []
        self.line = 0
        self.temps: set[str] = set()
        self.set_comprehensions: set[str] = set()
        #: the variables of the comprehensions being lowered (their names in the source)
        self.comprehension_targets: frozenset[str] = frozenset()

    # -- emitting --
    def number(self) -> int:
        self.count += 1
        return self.count

    def emit(self, stmt: ir.Stmt) -> ir.Stmt:
        if not stmt.index:
            stmt.index = self.number()
        if not stmt.line:
            stmt.line = self.line
        self.block.append(stmt)
        return stmt

    def assign(self, expr: ir.Expr, target: str | None = None, col: int = 0) -> str:
        index = self.number()
        name = target or self.temp(f"y_{index}")
        self.emit(ir.Assign(name, expr, line=self.line, index=index, col=col))
        return name

    def temp(self, stem: str) -> str:
        """A fresh temporary: it lives within one statement's expansion (one loop iteration)."""
        name = self.namer.fresh(stem)
        self.temps.add(name)
        return name

    def nested(self, statements) -> list[ir.Stmt]:
        """Lower statements (or a callable emitting them) into a fresh block."""
        outer, self.block = self.block, []
        try:
            if callable(statements):
                statements()
            else:
                for stmt in statements:
                    self.statement(stmt)
            return self.block
        finally:
            self.block = outer

    def refuse(self, node: ast.AST, message: str):
        raise UnsupportedSyntaxError(message, self.filename, node.lineno, node.col_offset + 1)

    # -- expressions --
    def atom(self, node: ast.expr) -> ir.Operand:
        """Lower an expression; its value is a name or a constant."""
        return self.expr(node, None)

    def expr(self, node: ast.expr, target: str | None) -> ir.Operand:
        """Lower ``node``, binding its value to ``target`` when one is given (else a temporary)."""
        if isinstance(node, ast.Constant):
            return self._bind(ir.Const(node.value), target)
        if isinstance(node, ast.Name):
            return self._bind(node.id, target)
        if isinstance(node, (ast.IfExp, ast.BoolOp)) or (isinstance(node, ast.Compare) and len(node.ops) > 1):
            return self.branching(node, target)
        expr = self.simple(node)
        # a call's column, for the refusals that name it (the effects pass)
        col = getattr(node, "col_offset", -1) + 1 if isinstance(node, ast.Call) else 0
        return self.assign(expr, target, col)

    def _bind(self, value: ir.Operand, target: str | None) -> ir.Operand:
        if target is None or value == target:
            return value
        return self.assign(ir.Copy(value), target)

    def simple(self, node: ast.expr) -> ir.Expr:
        if isinstance(node, ast.BinOp):
            return ir.Op(BINARY[type(node.op)], (self.atom(node.left), self.atom(node.right)))
        if isinstance(node, ast.UnaryOp):
            return ir.Op(UNARY[type(node.op)], (self.atom(node.operand),))
        if isinstance(node, ast.Compare):
            return self.compare(node.ops[0], self.atom(node.left), self.atom(node.comparators[0]))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Attribute):
            return ir.GetAttr(self.atom(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            return ir.GetItem(self.atom(node.value), self.index(node.slice))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            kind = {ast.Tuple: "tuple", ast.List: "list", ast.Set: "set"}[type(node)]
            return ir.Build(kind, self.items(node.elts))
        if isinstance(node, ast.Dict):
            return ir.BuildDict(
                tuple((None if k is None else self.atom(k), self.atom(v)) for k, v in zip(node.keys, node.values))
            )
        if isinstance(node, ast.Slice):
            return self.slice(node)
        if isinstance(node, ast.Lambda):
            return self.make_function(node, "<lambda>")
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value, node.target.id)
            return ir.Copy(value)
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        if isinstance(node, ast.GeneratorExp) and not getattr(node, "consumed_by_call", False):
            self.refuse(
                node,
                "a generator expression computes its values as they are consumed, which the source engine "
                "follows only where they are consumed at once, by a call (sum(v * v for v in xs)) or an "
                "unpacking (a, b = (...)): pass it to the call, or make it a list comprehension",
            )
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            return ir.Copy(self.comprehension(node))
        if isinstance(node, ast.Starred):
            self.refuse(node, "a starred expression is only allowed in calls, displays and assignments")
        self.refuse(node, f"{type(node).__name__} expressions are not supported by the source engine")

    def compare(self, op: ast.cmpop, left: ir.Operand, right: ir.Operand) -> ir.Expr:
        name = COMPARE[type(op)]
        if name in ("contains", "not_contains"):
            left, right = right, left
        if name == "not_contains":
            inside = self.assign(ir.Op("contains", (left, right)))
            return ir.Op("not_", (inside,))
        return ir.Op(name, (left, right))

    def items(self, elts) -> tuple[ir.Arg, ...]:
        return tuple(
            ir.Arg(self.atom(e.value), True) if isinstance(e, ast.Starred) else ir.Arg(self.atom(e)) for e in elts
        )

    def index(self, node: ast.expr) -> ir.Operand:
        if isinstance(node, ast.Slice):
            return self.assign(self.slice(node))
        if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts):
            return self.assign(ir.Build("tuple", tuple(ir.Arg(self.index(e)) for e in node.elts)))
        return self.atom(node)

    def slice(self, node: ast.Slice) -> ir.Expr:
        parts = [ir.Const(None) if p is None else self.atom(p) for p in (node.lower, node.upper, node.step)]
        return ir.BuildSlice(*parts)

    def call(self, node: ast.Call) -> ir.Expr:
        func = node.func
        if isinstance(func, ast.Attribute):
            obj = self.atom(func.value)
            args, kwargs = self.arguments(node)
            return ir.MethodCall(obj, func.attr, args, kwargs)
        callee = self.atom(func)
        args, kwargs = self.arguments(node)
        return ir.Call(callee, args, kwargs)

    def arguments(self, node: ast.Call):
        """Positional and keyword arguments; with ``*``, ``**`` or a keyword whose value is a
        variable (it may need a cotangent), the call takes the form ``f(*args, **kwargs)``."""
        for value in (*node.args, *(k.value for k in node.keywords)):
            value = value.value if isinstance(value, ast.Starred) else value
            if isinstance(value, ast.GeneratorExp):
                # the call consumes it before anything else runs: a list of its values is the same
                value.consumed_by_call = True
        args = self.items(node.args)
        kwargs = tuple(ir.Kwarg(k.arg, self.keyword_value(k.value)) for k in node.keywords)
        if any(a.starred for a in args) or any(k.name is None or isinstance(k.value, str) for k in kwargs):
            items = tuple((None if k.name is None else ir.Const(k.name), k.value) for k in kwargs)
            packed = self.assign(ir.Build("tuple", args))
            named = self.assign(ir.BuildDict(items))
            return (ir.Arg(packed, True),), (ir.Kwarg(None, named),)
        return args, kwargs

    def keyword_value(self, node: ast.expr) -> ir.Operand:
        """A keyword argument's value: a literal (``axis=-1``, ``axes=(0, 1)``) is a constant, which
        keeps the call in its direct form (a rule called with its options); anything else an atom."""
        try:
            return ir.Const(ast.literal_eval(node)) if _is_literal(node) else self.atom(node)
        except ValueError:  # not a literal after all (``ast.literal_eval`` decides)
            return self.atom(node)

    def fstring(self, node: ast.JoinedStr) -> ir.Expr:
        names = []
        new = ast.JoinedStr(values=[])
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                value = self.atom(part.value)
                spec = self.fstring(part.format_spec).node if part.format_spec is not None else None
                if isinstance(value, str):
                    names.append(value)
                    value_node = ast.Name(value, ast.Load())
                else:
                    value_node = ast.Constant(value.value)
                new.values.append(ast.FormattedValue(value_node, part.conversion, spec))
            else:
                new.values.append(part)
        return ir.Opaque(new, tuple(names))

    def branching(self, node: ast.expr, target: str | None) -> str:
        """``a if c else b``, ``a and b``, ``a or b``, ``a < b < c`` as ``If`` blocks."""
        if target is not None and target in identifiers(node):
            result = self.branching(node, None)  # the target is read inside: bind it last
            return self.assign(ir.Copy(result), target)
        index = self.number()
        result = target or self.temp(f"y_{index}")
        if isinstance(node, ast.IfExp):
            test = self.atom(node.test)
            body = self.nested(lambda: self.expr(node.body, result))
            orelse = self.nested(lambda: self.expr(node.orelse, result))
        elif isinstance(node, ast.BoolOp):
            first, *rest = node.values
            self.expr(first, result)
            test = result
            remainder = ast.BoolOp(node.op, rest) if len(rest) > 1 else rest[0]
            ast.copy_location(remainder, rest[0])
            more = self.nested(lambda: self.expr(remainder, result))
            body, orelse = (more, []) if isinstance(node.op, ast.And) else ([], more)
        else:  # a < b < c: a < b and b < c, with b evaluated once
            left = self.atom(node.left)
            middle = self.atom(node.comparators[0])
            self.assign(self.compare(node.ops[0], left, middle), result)
            test = result
            body = self.nested(lambda: self._chain(middle, node.ops[1:], node.comparators[1:], result))
            orelse = []
        self.emit(ir.If(test=test, body=body, orelse=orelse, line=self.line, index=index))
        return result

    def _chain(self, left: ir.Operand, ops, comparators, result: str):
        right = self.atom(comparators[0])
        self.assign(self.compare(ops[0], left, right), result)
        if len(ops) > 1:
            body = self.nested(lambda: self._chain(right, ops[1:], comparators[1:], result))
            self.emit(ir.If(test=result, body=body, orelse=[], line=self.line))

    def make_function(self, node: ast.FunctionDef | ast.Lambda, name: str) -> ir.MakeFunction:
        defaults = tuple(self.atom(d) for d in node.args.defaults)
        kwdefaults = tuple(
            (a.arg, self.atom(d)) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None
        )
        code = self.nested_code(node)
        if code is None:
            self.refuse(node, f"the code of the nested function `{name}` cannot be found")
        bound_here = [v for v in code.co_freevars if v in self.comprehension_targets]
        if bound_here:
            # lowered, a comprehension is a loop of this function: its variable is a plain local
            # (or a cell of this function, rebound each iteration), not the comprehension's own cell
            self.refuse(
                node,
                f"`{bound_here[0]}` is read by a nested function and bound in a comprehension; a closure sees the "
                "variable, not its value when the closure was made: pass it as a default argument (`k=k`)",
            )
        return ir.MakeFunction(node, name, defaults, kwdefaults, tuple(code.co_freevars), code)

    def nested_code(self, node) -> types.CodeType | None:
        if self.code is None:
            return None
        # before Python 3.12 a comprehension is compiled as a function of its own: a function
        # defined inside it is among that code object's constants, not the enclosing function's
        outer = [self.code]
        while outer:
            for const in outer.pop().co_consts:
                if not isinstance(const, types.CodeType):
                    continue
                if const.co_name in COMPREHENSIONS:
                    outer.append(const)
                elif const.co_firstlineno in (node.lineno, _first_line(node)):
                    found = find_definition(const, self.root)
                    if found is not None and (found.lineno, found.col_offset) == (node.lineno, node.col_offset):
                        return const
        return None

    # -- statements --
    def statement(self, node: ast.stmt):
        # statements normalization added (a flag's initial value) belong to no user line
        self.line = 0 if getattr(node, "synthetic", False) else node.lineno
        if isinstance(node, ast.Assign):
            self.assignment(node.targets[0], node.value, node)
        elif isinstance(node, ast.Expr):
            call = node.value
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in MUTATORS
                and isinstance(call.func.value, ast.Name)
                and len(call.args) == 1
                and not call.keywords
                and not isinstance(call.args[0], ast.Starred)
            ):
                value = self.atom(call.args[0])
                self.emit(
                    ir.Mutate(obj=call.func.value.id, method=call.func.attr, value=value, col=node.col_offset + 1)
                )
            else:
                self.atom(node.value)
        elif isinstance(node, ast.For):
            iterable = self.atom(node.iter)
            index = self.number()
            target, unpack_target = (node.target.id, None) if isinstance(node.target, ast.Name) else (None, node.target)
            if target is None:
                target = self.namer.fresh("item")

            def body():
                if unpack_target is not None:
                    self.assignment(unpack_target, ast.Name(target, ast.Load()), node)
                for stmt in node.body:
                    self.statement(stmt)

            block = self.nested(body)
            self.line = node.lineno
            self.emit(ir.For(target=target, iterable=iterable, body=block, line=node.lineno, index=index))
        elif isinstance(node, ast.While):
            index = self.number()
            holder = {}
            test_block = self.nested(lambda: holder.setdefault("test", self.atom(node.test)))
            block = self.nested(node.body)
            self.line = node.lineno
            self.emit(ir.While(test_block=test_block, test=holder["test"], body=block, line=node.lineno, index=index))
        elif isinstance(node, ast.Break):
            self.emit(ir.Break(line=node.lineno))
        elif isinstance(node, ast.Pass):
            pass
        elif isinstance(node, ast.With):
            contexts = []
            for item in node.items:
                context = self.atom(item.context_expr)
                if item.optional_vars is not None and not isinstance(item.optional_vars, ast.Name):
                    self.refuse(item.optional_vars, "`with ... as` must bind a single name")
                contexts.append((context, item.optional_vars.id if item.optional_vars is not None else None))
            index = self.number()
            block = self.nested(node.body)
            self.line = node.lineno
            self.emit(ir.With(contexts=tuple(contexts), body=block, line=node.lineno, index=index))
        elif isinstance(node, ast.Try):
            # the handlers' exception classes are looked up before the `try` (a name or an
            # attribute: Python would look them up only when an exception reaches them)
            kinds = [None if h.type is None else self.atom(h.type) for h in node.handlers]
            index = self.number()
            body = self.nested(node.body)
            handlers = tuple(ir.Handler(k, h.name, self.nested(h.body), h.lineno) for k, h in zip(kinds, node.handlers))
            orelse, finalbody = self.nested(node.orelse), self.nested(node.finalbody)
            self.line = node.lineno
            self.emit(
                ir.Try(body=body, handlers=handlers, orelse=orelse, finalbody=finalbody, line=node.lineno, index=index)
            )
        elif isinstance(node, ast.If):
            test = self.atom(node.test)
            index = self.number()
            body = self.nested(node.body)
            orelse = self.nested(node.orelse)
            self.line = node.lineno
            self.emit(ir.If(test=test, body=body, orelse=orelse, line=node.lineno, index=index))
        elif isinstance(node, ast.Return):
            value = self.atom(node.value) if node.value is not None else ir.Const(None)
            self.emit(ir.Return(value=value, line=node.lineno))
        elif isinstance(node, ast.Raise):
            exc = self.atom(node.exc) if node.exc is not None else None
            cause = self.atom(node.cause) if node.cause is not None else None
            self.emit(ir.Raise(exc=exc, cause=cause))
        elif isinstance(node, ast.Assert):
            test = self.atom(node.test)
            index = self.number()

            def failing():
                args = (ir.Arg(self.atom(node.msg)),) if node.msg is not None else ()
                error = self.assign(ir.Call(ir.Const(AssertionError), args))
                self.emit(ir.Raise(exc=error))

            self.emit(ir.If(test=test, body=[], orelse=self.nested(failing), line=node.lineno, index=index))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = tuple((a.asname or a.name).split(".")[0] for a in node.names)
            self.emit(ir.Plain(node=node, names=names))
        elif isinstance(node, ast.FunctionDef):
            self.definition(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            pass  # declarations only: the fence refused writes
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript):
            self.augmented_item(node)
        else:
            self.refuse(node, f"{type(node).__name__} statements are not supported by the source engine")

    def definition(self, node: ast.FunctionDef):
        """``@d1 @d2 def f`` is ``f = d1(d2(<the closure>))``: the decorators are evaluated first, top
        to bottom, then applied bottom-up, each an ordinary call."""
        decorators = []
        for decorator in node.decorator_list:
            self.line = decorator.lineno
            decorators.append((self.atom(decorator), decorator))
        self.line = node.lineno
        value = self.assign(self.make_function(node, node.name), None if decorators else node.name)
        for i, (decorator, where) in reversed(list(enumerate(decorators))):
            self.line = where.lineno
            target = node.name if i == 0 else None
            value = self.assign(ir.Call(decorator, (ir.Arg(value),)), target, where.col_offset + 1)

    def assignment(self, target: ast.expr, value: ast.expr, node: ast.stmt):
        if isinstance(target, ast.Subscript):
            start = len(self.block)
            obj, index = self.subscript_target(target)
            write = self.emit(ir.SetItem(obj=obj, key=index, value=self.atom(value), col=target.col_offset + 1))
            statement = self.block[start:]
            if all(isinstance(s, ir.Assign) for s in statement[:-1]):
                # `x[j] = f(x[i])`: the elements of `x` read here are used only before the write
                # (temporaries live within their statement); the effects pass decides whether
                # reading copies of them is the same (see `effects.copied_reads`)
                indices = frozenset(s.index for s in statement)
                for s in statement[:-1]:
                    if isinstance(s.expr, ir.GetItem) and s.expr.obj == obj and s.target in self.temps:
                        s.write_back = (write, indices)
            return
        if isinstance(target, ast.Name):
            self.expr(value, target.id)
            if getattr(node, "augmented", False):
                self.block[-1].augmented = True
                self.block[-1].col = node.col_offset + 1
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, ast.GeneratorExp):
                value.consumed_by_call = True  # unpacked at once, as a call consumes it
            self.unpack(target, self.atom(value))
            return
        self.refuse(target, f"cannot assign to {type(target).__name__}")

    def subscript_target(self, target: ast.Subscript) -> tuple[str, ir.Operand]:
        """``name[index]`` as an assignment target: only a variable's element can be written."""
        if not isinstance(target.value, ast.Name):
            self.refuse(
                target,
                "assigning into an element of an attribute or of an element aliases another object; "
                "bind the container to a variable the function creates, or index with a tuple (a[i, j])",
            )
        return target.value.id, self.index(target.slice)

    def augmented_item(self, node: ast.AugAssign):
        """``x[i] op= v``: ``x[i] = x[i] op v``, with ``x`` and ``i`` evaluated once."""
        obj, index = self.subscript_target(node.target)
        old = self.assign(ir.GetItem(obj, index), col=node.target.col_offset + 1)
        # read, changed and written back: a copy will do, unless Python would update the element
        # in place (the primal checks that it does not: `check_item_update`)
        self.block[-1].augmented_read = True
        new = self.assign(ir.Op(BINARY[type(node.op)], (old, self.atom(node.value))))
        self.block[-1].item_update = True  # (see `effects.fresh_item_updates`)
        self.block[-1].col = node.target.col_offset + 1
        self.emit(ir.SetItem(obj=obj, key=index, value=new, col=node.target.col_offset + 1))

    def comprehension(self, node) -> str:
        """A list, set or dict comprehension (or a generator expression, made a list) as loops
        that fill a new container; its variables are renamed, as they are local to it."""
        kind = {ast.ListComp: "list", ast.GeneratorExp: "list", ast.SetComp: "set", ast.DictComp: "dict"}[type(node)]
        renamed = _rename_comprehension(node, self.namer, self.name_counts)
        result = self.namer.fresh("comprehension")
        if kind == "set":
            self.set_comprehensions.add(result)
        empty = {"list": ir.Build("list", ()), "set": ir.Build("set", ()), "dict": ir.BuildDict(())}[kind]
        self.assign(empty, result)

        def innermost():
            if kind == "dict":
                key = self.atom(renamed.key)
                self.emit(ir.SetItem(obj=result, key=key, value=self.atom(renamed.value)))
            elif kind == "set":
                self.assign(ir.MethodCall(result, "add", (ir.Arg(self.atom(renamed.elt)),)))
            else:
                self.emit(ir.Mutate(obj=result, method="append", value=self.atom(renamed.elt)))

        def level(generators):
            if not generators:
                innermost()
                return
            gen, rest = generators[0], generators[1:]
            if gen.is_async:
                self.refuse(gen, "an async comprehension is not supported")
            iterable = self.atom(gen.iter)
            index = self.number()

            def body():
                if not isinstance(gen.target, ast.Name):
                    self.assignment(gen.target, ast.Name(target, ast.Load()), node)
                self.conditions(gen.ifs, lambda: level(rest))

            target = gen.target.id if isinstance(gen.target, ast.Name) else self.namer.fresh("item")
            block = self.nested(body)
            self.emit(ir.For(target=target, iterable=iterable, body=block, line=self.line, index=index))

        outer_targets = self.comprehension_targets
        self.comprehension_targets = outer_targets | {
            sub.id for gen in node.generators for sub in ast.walk(gen.target) if isinstance(sub, ast.Name)
        }
        level(renamed.generators)
        self.comprehension_targets = outer_targets
        return result

    def conditions(self, tests, then):
        if not tests:
            then()
            return
        test = self.atom(tests[0])
        index = self.number()
        body = self.nested(lambda: self.conditions(tests[1:], then))
        self.emit(ir.If(test=test, body=body, orelse=[], line=self.line, index=index))

    def unpack(self, target: ast.Tuple | ast.List, value: ir.Operand):
        names, star, inner = [], None, []
        for i, elt in enumerate(target.elts):
            if isinstance(elt, ast.Starred):
                star, elt = i, elt.value
            if isinstance(elt, ast.Name):
                names.append(elt.id)
            else:
                temp = self.temp("item")
                names.append(temp)
                inner.append((elt, temp))
        self.emit(ir.Unpack(names=tuple(names), value=value, star=star))
        for elt, temp in inner:
            self.assignment(elt, ast.Name(temp, ast.Load()), target)


def _first_line(node) -> int:
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


def lower(
    fn: ast.FunctionDef, namer: Namer, filename: str, code: types.CodeType | None = None, root: ast.AST | None = None
) -> ir.Function:
    """The IR of the normalized function ``fn``.

    ``code`` is the function's code object (to find the code of nested functions); ``root``
    the original definition they are looked up in.
    """
    lowerer = _Lowerer(namer, filename, code, root if root is not None else fn)
    lowerer.name_counts = _name_counts(fn)
    body = lowerer.nested(fn.body)
    return ir.Function(
        fn.name,
        fn.args,
        body,
        filename,
        fn.lineno,
        frozenset(lowerer.temps),
        frozenset(lowerer.set_comprehensions),
        frozenset(namer.made),
    )


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node: ast.Name):
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node

    def visit_Lambda(self, node: ast.Lambda):
        # a lambda's own parameters may shadow, so its body is its own; its defaults are
        # evaluated where it is made (`lambda v, k=k: ...` reads the comprehension's `k`)
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [d if d is None else self.visit(d) for d in node.args.kw_defaults]
        return node

    def visit_FunctionDef(self, node):
        return node


def _name_counts(node: ast.AST) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            counts[sub.id] = counts.get(sub.id, 0) + 1
    return counts


def _rename_comprehension(node, namer: Namer, outer: dict[str, int]):
    """A copy of a comprehension whose loop variables have fresh names (they do not leak)."""
    import copy

    new = copy.deepcopy(node)
    names: dict[str, str] = {}
    inside = _name_counts(node)
    for gen in new.generators:
        for sub in ast.walk(gen.target):
            if isinstance(sub, ast.Name) and sub.id not in names and outer.get(sub.id, 0) > inside.get(sub.id, 0):
                names[sub.id] = namer.fresh(sub.id)  # the name is used outside too: keep them apart
    renamer = _Renamer(names)
    for gen in new.generators:
        gen.target = renamer.visit(gen.target)
        gen.ifs = [renamer.visit(t) for t in gen.ifs]
    for gen in new.generators[1:]:
        gen.iter = renamer.visit(gen.iter)  # later iterables may use earlier variables
    for field in ("elt", "key", "value"):
        if hasattr(new, field):
            setattr(new, field, renamer.visit(getattr(new, field)))
    return new


def _is_literal(node: ast.expr) -> bool:
    """A number (signed), string, bool or None, or a tuple of them: a value fixed by the source."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float, complex)
    return isinstance(node, ast.Tuple) and all(_is_literal(e) for e in node.elts)
