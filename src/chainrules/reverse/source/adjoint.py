"""Pass 7, adjoint: the reverse code, which pulls the output's cotangent back to the inputs.

The statements are visited backwards. For ``y = f(a, b)`` the adjoint reads ``dy``, the
cotangent of ``y``, calls what the primal kept (``_, da, db = pb_3(dy)``, or the inlined
partials ``da = dy / b``) and adds each result into the operand's cotangent. A variable bound
more than once gets its cotangent reset where it is bound (the earlier value is a different
variable). Cotangents of real scalars are added with ``+``; all others with
``chainrules.accumulate(acc, owned, dx)``, which follows the ownership rule (a borrowed array
is copied once, an owned one is added into in place), so a flag ``d<name>_own`` travels with
each accumulator that receives more than one contribution.

In straight-line code the pass knows statically which cotangents are still zero: the first
contribution is a plain assignment and an adjoint whose output cotangent is zero is left out.
Around an ``if``, the cotangents that its branches touch and that live on after it are given
a value first (``dx = ZERO``), so that both branches can add into them.
"""

from __future__ import annotations

from . import ir
from .codegen import Line
from .names import Namer
from .primal import Helpers, _is_apply
from .simplify import INACTIVE_TYPES, is_real

ZERO_STATE, SET = "zero", "set"


class Adjoint:
    def __init__(self, plan, namer: Namer, helpers: Helpers, saved: dict):
        self.plan = plan
        self.namer = namer
        self.h = helpers
        self.saved = saved
        self.lines: list[Line] = []
        self.dnames: dict[str, str] = {}
        self.ownnames: dict[str, str] = {}
        self.state: dict[str, str] = {}  # var -> zero | set
        self.owned: dict[str, object] = {}  # var -> False (borrowed) | "flag" (a runtime flag exists)
        self.dynamic: set[str] = set()  # cotangents given a value before an `if`, updated with flags
        self.inputs = set(plan.fn.params()) | set(plan.freevars)
        self.first: dict[str, int] = {}
        for stmt in ir.walk(plan.fn.body):
            for name in stmt.targets():
                self.first.setdefault(name, stmt.index)

    # -- names and state --
    def d(self, v: str) -> str:
        if v not in self.dnames:
            self.dnames[v] = self.namer.fresh(f"d{v}")
        return self.dnames[v]

    def own(self, v: str) -> str:
        if v not in self.ownnames:
            self.ownnames[v] = self.namer.fresh(f"{self.d(v)}_own")
        return self.ownnames[v]

    def emit(self, indent: int, text: str, line: int):
        self.lines.append(Line(indent, text, line))

    def zero(self) -> str:
        return self.h("ZERO")

    def read(self, v: ir.Operand) -> str | None:
        """The cotangent of ``v`` as an expression, or None when it is statically zero."""
        if not isinstance(v, str) or self.state.get(v, ZERO_STATE) == ZERO_STATE:
            return None
        return self.d(v)

    def real(self, v: str) -> bool:
        return is_real(self.plan.types.get(v))

    def wants(self, v: ir.Operand) -> bool:
        return isinstance(v, str) and v in self.plan.active

    def contribute(self, v: ir.Operand, expr: str, indent: int, line: int):
        """Add ``expr`` into the cotangent of ``v``."""
        if not self.wants(v):
            return
        dv = self.d(v)
        if self.real(v):
            if self.state.get(v, ZERO_STATE) == ZERO_STATE and v not in self.dynamic:
                self.emit(indent, f"{dv} = {expr}", line)
            elif expr.startswith("-"):
                self.emit(indent, f"{dv} = {dv} - {expr[1:]}", line)
            else:
                self.emit(indent, f"{dv} = {dv} + {expr}", line)
            self.state[v] = SET
            return
        if self.state.get(v, ZERO_STATE) == ZERO_STATE and v not in self.dynamic:
            self.emit(indent, f"{dv} = {expr}", line)
            self.state[v], self.owned[v] = SET, False
            return
        flag = self.own(v)
        owned = flag if self.owned.get(v) == "flag" else "False"
        self.emit(indent, f"{dv}, {flag} = {self.h('accumulate')}({dv}, {owned}, {expr})", line)
        self.state[v], self.owned[v] = SET, "flag"

    def reset(self, v: str, indent: int, line: int, index: int = 0):
        """``v`` is bound here: its earlier value is another variable, whose cotangent starts at zero."""
        if self.plan.stable(v) or not self.wants(v):
            return
        if self.first.get(v) == index and v not in self.inputs:
            return  # no earlier value: nothing reads this cotangent again
        if v in self.dynamic:
            self.emit(indent, f"{self.d(v)} = {self.zero()}", line)
            if not self.real(v):
                self.emit(indent, f"{self.own(v)} = False", line)
            self.state[v], self.owned[v] = SET, "flag"
        else:
            self.state[v], self.owned[v] = ZERO_STATE, False

    def target(self, v: ir.Operand, index: int, taken: set) -> tuple[str, bool]:
        """Where a pullback's result for operand ``v`` goes, and whether that is ``dv`` itself:
        ``_`` (no cotangent wanted), ``dv`` (its first contribution) or a temporary added into ``dv``."""
        if not self.wants(v):
            return "_", False
        if v not in taken and v not in self.dynamic and self.state.get(v, ZERO_STATE) == ZERO_STATE:
            taken.add(v)
            return self.d(v), True
        return self.namer.fresh(f"{self.d(v)}_{index}"), False

    def unpack_into(self, values: list[ir.Operand], call: str, stmt: ir.Stmt, indent: int):
        taken: set = set()
        targets = [self.target(v, stmt.index, taken) for v in values]
        if all(t == "_" for t, _ in targets):
            return
        lhs = ", ".join(t for t, _ in targets) + ("," if len(targets) == 1 else "")
        self.emit(indent, f"{lhs} = {call}", stmt.line)
        for v, (t, direct) in zip(values, targets):
            if direct:
                self.state[v], self.owned[v] = SET, False
            elif t != "_":
                self.contribute(v, t, indent, stmt.line)

    # -- statements --
    def block(self, block: list[ir.Stmt], indent: int):
        for stmt in reversed(block):
            self.statement(stmt, indent)

    def statement(self, stmt: ir.Stmt, indent: int):
        mode = self.plan.mode.get(stmt.index, "plain")
        if mode == "return":
            return
        if mode == "plain":
            # no adjoint, but an active variable bound here starts a new value
            for name in stmt.targets():
                self.reset(name, indent, stmt.line, stmt.index)
            return
        if isinstance(stmt, ir.If):
            self.branch(stmt, indent)
        elif isinstance(stmt, ir.Unpack):
            self.unpack(stmt, indent)
        elif isinstance(stmt, ir.Assign):
            self.assign(stmt, mode, indent)

    def assign(self, stmt: ir.Assign, mode: str, indent: int):
        y, expr, line = stmt.target, stmt.expr, stmt.line
        dy = self.read(y)
        deferred = False
        if dy is not None and y in self.dynamic and not self.plan.stable(y):
            # the reset is code: it must not clobber dy before the partials read it
            if y in expr.operands():
                held = self.namer.fresh(f"{dy}_{stmt.index}")
                self.emit(indent, f"{held} = {dy}", line)
                dy = held
                self.reset(y, indent, line, stmt.index)
            else:
                deferred = True
        else:
            self.reset(y, indent, line, stmt.index)
        if dy is None:
            return  # nothing flows back through this statement
        self.partials(stmt, mode, dy, indent)
        if deferred:
            self.reset(y, indent, line, stmt.index)

    def partials(self, stmt: ir.Assign, mode: str, dy: str, indent: int):
        expr, line = stmt.expr, stmt.line
        saved = self.saved.get(stmt.index, {})
        if mode == "copy":
            self.contribute(expr.value, dy, indent, line)
        elif mode == "inline":
            self.inline(expr, dy, saved, stmt, indent)
        elif mode == "pullback":
            self.pullback(expr, dy, saved["pb"], stmt, indent)
        elif mode == "struct":
            self.struct(expr, dy, saved, stmt, indent)
        elif mode == "closure":
            for name in expr.captures:
                if self.wants(name):
                    self.contribute(name, f"{self.h('field')}({dy}, {name!r})", indent, line)

    def inline(self, expr: ir.Op, dy: str, saved: dict, stmt: ir.Assign, indent: int):
        """The partials of an arithmetic operator on real scalars, written out.

        A contribution to the statement's own target (``s = s * x``) is made last, after the
        others have read ``dy``."""
        xs, line, op, y = expr.operands_, stmt.line, expr.op, stmt.target
        terms: list[tuple[ir.Operand, str]] = []
        if op in ("add", "pos"):
            terms = [(x, dy) for x in xs]
        elif op == "sub":
            terms = [(xs[0], dy), (xs[1], f"-{dy}")]
        elif op == "neg":
            terms = [(xs[0], f"-{dy}")]
        elif op == "mul":
            if xs[0] == xs[1]:
                terms = [(xs[0], f"2 * {dy} * {saved['a']}")]
            else:
                terms = [(xs[0], f"{dy} * {saved['b']}")] if self.wants(xs[0]) else []
                terms += [(xs[1], f"{saved['a']} * {dy}")] if self.wants(xs[1]) else []
        elif op == "truediv":
            a, b = xs
            if a == b:
                return  # x / x is constant
            ratio = f"{dy} / {saved['b']}"
            if self.wants(a) and self.wants(b):
                if a != y and a not in self.dynamic and self.state.get(a, ZERO_STATE) == ZERO_STATE:
                    self.contribute(a, ratio, indent, line)  # da = dy / b, reused for db
                    ratio = self.d(a)
                    terms = [(b, f"-{ratio} * {saved['y']}")]
                else:
                    held = self.namer.fresh(f"{self.d(a)}_{stmt.index}")
                    self.emit(indent, f"{held} = {ratio}", line)
                    terms = [(b, f"-{held} * {saved['y']}"), (a, held)]
            else:
                terms = [(b, f"-{ratio} * {saved['y']}")] if self.wants(b) else [(a, ratio)]
        elif op == "pow":
            partial = _power_partial(saved["a"], xs[1], saved["b"])
            terms = [(xs[0], f"{dy} * {partial}")] if partial else []
        terms = [t for t in terms if self.wants(t[0]) and t[1] is not None]
        for v, term in sorted(terms, key=lambda t: t[0] == y):
            if v == y and term == dy and self.state.get(v, ZERO_STATE) == ZERO_STATE and v not in self.dynamic:
                self.state[v] = SET  # `s = s + x`: ds carries over unchanged
                continue
            self.contribute(v, term, indent, line)

    def pullback(self, expr, dy: str, pb: str, stmt: ir.Stmt, indent: int):
        call = f"{pb}({dy})"
        if isinstance(expr, ir.Op):
            values = [ir.Const(None), *expr.operands_]
        elif isinstance(expr, ir.GetAttr):
            values = [ir.Const(None), expr.obj, ir.Const(None)]
        elif isinstance(expr, ir.GetItem):
            values = [ir.Const(None), expr.obj, expr.index]
        elif isinstance(expr, ir.Call):
            if _is_apply(expr):
                values = [expr.func, expr.args[0].value, expr.kwargs[0].value]
            else:
                values = [expr.func, *(a.value for a in expr.args)]
        else:  # MethodCall: the object's cotangent comes first
            first = ir.Const(None) if self.plan.static_module(expr.obj) else expr.obj
            if _is_apply(expr):
                values = [first, expr.args[0].value, expr.kwargs[0].value]
            else:
                values = [first, *(a.value for a in expr.args)]
        self.unpack_into(values, call, stmt, indent)

    def struct(self, expr, dy: str, saved: dict, stmt: ir.Stmt, indent: int):
        line = stmt.line
        if "pb" in saved:  # displays with * or ** items
            values = [a.value for a in expr.items] if isinstance(expr, ir.Build) else [v for _, v in expr.items]
            self.unpack_into(values, f"{saved['pb']}({dy})", stmt, indent)
        elif isinstance(expr, ir.Build):
            values = [a.value for a in expr.items]
            self.unpack_into(values, f"{self.h('split')}({dy}, {len(values)})", stmt, indent)
        else:
            for i, (key, value) in enumerate(expr.items):
                if self.wants(value):
                    key_ref = saved.get(f"key{i}", self.operand(key))
                    self.contribute(value, f"{self.h('field')}({dy}, {key_ref})", indent, line)

    def operand(self, x: ir.Operand) -> str:
        return x if isinstance(x, str) else self.h.const(x.value)

    def unpack(self, stmt: ir.Unpack, indent: int):
        parts = [self.read(n) or self.zero() for n in stmt.names]
        if all(self.read(n) is None for n in stmt.names):
            for n in stmt.names:
                self.reset(n, indent, stmt.line, stmt.index)
            return
        items = ", ".join(parts) + ("," if len(parts) == 1 else "")
        pulled = f"{self.saved[stmt.index]['pb']}(({items}))"
        if any(n in self.dynamic for n in stmt.names) or stmt.value in stmt.names:
            held = self.namer.fresh(f"d{stmt.value}_{stmt.index}" if isinstance(stmt.value, str) else "d_items")
            self.emit(indent, f"{held} = {pulled}", stmt.line)
            pulled = held
        for n in stmt.names:
            self.reset(n, indent, stmt.line, stmt.index)
        self.contribute(stmt.value, pulled, indent, stmt.line)

    def branch(self, stmt: ir.If, indent: int):
        touched = self.touched(stmt)
        for v in sorted(touched):
            self.materialize(v, indent, stmt.line)
        test = self.saved.get(stmt.index, {}).get("test", self.operand(stmt.test))
        outer = dict(self.state), dict(self.owned)
        self.emit(indent, f"if {test}:", stmt.line)
        self.branch_block(stmt.body, indent + 1, outer)
        if any(self.plan.mode.get(s.index, "plain") != "plain" for s in ir.walk(stmt.orelse)):
            self.emit(indent, "else:", 0)
            self.branch_block(stmt.orelse, indent + 1, outer)
        self.state, self.owned = outer
        for v in touched:
            self.state[v], self.owned[v] = SET, ("flag" if not self.real(v) else False)

    def branch_block(self, block, indent, outer):
        self.state, self.owned = dict(outer[0]), dict(outer[1])
        start = len(self.lines)
        self.block(block, indent)
        if len(self.lines) == start:
            self.emit(indent, "pass", 0)

    def materialize(self, v: str, indent: int, line: int):
        """Give ``v``'s cotangent (and ownership flag) a value, so that branches may add into it."""
        if v in self.dynamic:
            return
        if self.state.get(v, ZERO_STATE) == ZERO_STATE:
            self.emit(indent, f"{self.d(v)} = {self.zero()}", line)
            if not self.real(v):
                self.emit(indent, f"{self.own(v)} = False", line)
        elif not self.real(v) and self.owned.get(v) != "flag":
            self.emit(indent, f"{self.own(v)} = False", line)
        self.state[v], self.owned[v] = SET, ("flag" if not self.real(v) else False)
        self.dynamic.add(v)

    def touched(self, stmt: ir.If) -> set[str]:
        """Active variables whose cotangents the branches change and that live on after the ``if``."""
        inside = [s for block in stmt.blocks() for s in ir.walk(block)]
        counts: dict[str, int] = {}
        found: set[str] = set()
        for s in inside:
            for t in s.targets():
                counts[t] = counts.get(t, 0) + 1
            if self.plan.mode.get(s.index, "plain") in ("plain", "return", "branch"):
                continue
            found.update(x for x in s.operands() if isinstance(x, str))
            found.update(s.targets())
        params = set(self.plan.fn.params()) | set(self.plan.freevars)
        local = {v for v, n in counts.items() if n == self.plan.assignments.get(v, 0) and v not in params}
        return {v for v in found if self.wants(v) and v not in local}


def _power_partial(a: str, exponent: ir.Operand, b: str) -> str | None:
    """d(a ** k)/da for an integer exponent k."""
    if isinstance(exponent, ir.Const):
        k = exponent.value
        if k == 0:
            return None
        if k == 1:
            return "1"
        if k == 2:
            return f"2 * {a}"
        return f"{k} * {a} ** {k - 1}"
    return f"{b} * {a} ** ({b} - 1)"


def param_cotangent(adj: Adjoint, name: str) -> str:
    t = adj.plan.types.get(name)
    if t in INACTIVE_TYPES:
        return adj.h("NO")
    d = adj.read(name)
    if adj.plan.param_types.get(name) is int:
        # an integer that only counts has no derivative; one used arithmetically gets a float
        return f"{adj.h('integer_cotangent')}({d})" if d else adj.h("NO")
    return d or adj.zero()


def generate(plan, namer: Namer, helpers: Helpers, saved: dict, ret: ir.Return, result: dict) -> Adjoint:
    """The reverse code for ``plan``; ``result`` says which cotangents the pullback returns:
    ``positional`` (parameter names), ``keywords`` (names), ``bound`` (skip the function's own
    tangent: the first parameter is the object the function was called on)."""
    adj = Adjoint(plan, namer, helpers, saved)
    seed_var = ret.value if isinstance(ret.value, str) and ret.value in plan.useful else None
    adj.seed = adj.d(seed_var) if seed_var else namer.fresh("dy")
    if seed_var:
        adj.state[seed_var], adj.owned[seed_var] = SET, False
        if is_real(plan.types.get(seed_var)):
            adj.emit(2, f"if type({adj.seed}) is not float:", ret.line)
            adj.emit(3, f"{adj.seed} = {helpers('project_real')}({adj.seed})", ret.line)
    adj.block(plan.fn.body, 2)
    cotangents = [param_cotangent(adj, p) for p in result["positional"]]
    if result.get("varargs"):
        name, count = result["varargs"]
        cotangents.append(f"*{helpers('split')}({adj.read(name) or adj.zero()}, {count})")
    if not result.get("bound"):
        cotangents.insert(0, function_tangent(adj))
    if result.get("keywords"):
        named = set(result.get("named_keywords", ()))
        varkw = result.get("varkw")
        parts = []
        for k in result["keywords"]:
            if k in named:
                parts.append(f"{k!r}: {param_cotangent(adj, k)}")
            else:
                parts.append(f"{k!r}: {helpers('field')}({adj.read(varkw) or adj.zero()}, {k!r})")
        cotangents.append("{" + ", ".join(parts) + "}")
    adj.emit(2, f"return ({', '.join(cotangents)}{',' if len(cotangents) == 1 else ''})", 0)
    _drop_unread_flags(adj)
    return adj


def _drop_unread_flags(adj: Adjoint):
    """Remove ``d<x>_own = False`` lines for flags that no ``accumulate`` call reads."""
    read = {flag for flag in adj.ownnames.values() if any(f", {flag}, " in line.text for line in adj.lines)}
    unread = set(adj.ownnames.values()) - read
    adj.lines = [line for line in adj.lines if not (line.text.endswith(" = False") and line.text[:-8] in unread)]


def function_tangent(adj: Adjoint) -> str:
    captured = [v for v in adj.plan.freevars if adj.wants(v) and adj.read(v) is not None]
    if not captured:
        return adj.h("NO")
    tail = "," if len(captured) == 1 else ""
    names = ", ".join(repr(v) for v in captured) + tail
    values = ", ".join(captured) + tail
    tangents = ", ".join(adj.read(v) for v in captured) + tail
    return f"{adj.h('closure_tangent')}({adj.h('self_fn')}, ({names}), ({values}), ({tangents}))"
