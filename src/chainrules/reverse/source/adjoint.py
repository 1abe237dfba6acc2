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
Around an ``if`` or a loop, the cotangents that its body touches and that live on after it are
given a value first (``dx = ZERO``), so that every path can add into them; only the Wengert
list's temporaries, which live within one iteration, stay static inside.

A loop runs backwards as many times as it ran (``n_3``): over the same ``range`` reversed when
it ran over a range (its variable is then available again), else over ``range(n_3)``. Values
saved once per iteration come back from their stacks (``pb_5 = next(pb_5_rev)``), in reverse
order. The cotangent of a loop's variable goes back to the iterable it came from, element by
element. Writes into containers the function made (``x[i] = v``, ``lst.append(v)``) take the
written element's cotangent out of the container's (``dv, dx, dx_own = pb_7(dx, dx_own)``).
"""

from __future__ import annotations

from . import ir
from .codegen import Line
from .names import Namer
from .primal import Helpers, Stacked, _is_apply
from .simplify import INACTIVE_TYPES, ArrayType, class_of, is_real

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
        self.rev: set[Stacked] = set()  # stacks read back: each needs its reversed iterator
        self.first: dict[str, int] = {}
        for stmt in ir.walk(plan.fn.body):
            for name in stmt.targets():
                self.first.setdefault(name, stmt.index)
        # the elements of structures passed in whose cotangents are kept one per element (see
        # `Plan.elements`): each is a variable of its own here, `p['W']` (not a Python name, so
        # that it never meets one), with its cotangent `dp_W`, built into `dp` at the end
        self.element_types: dict[str, object] = {}
        self.element_vars: dict[str, dict[object, str]] = {}
        for name, struct in plan.elements.items():
            self.element_vars[name] = {}
            for i, (key, t) in enumerate(struct.items):
                var = f"{name}[{key!r}]"
                self.element_vars[name][key] = var
                self.element_types[var] = class_of(t)
                suffix = _suffix(struct, key, i)
                self.dnames[var] = namer.fresh(f"d{name}_{suffix}")

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
        return is_real(self.element_types[v] if v in self.element_types else self.plan.types.get(v))

    def wants(self, v: ir.Operand) -> bool:
        return isinstance(v, str) and (v in self.plan.active or v in self.element_types)

    def elements_read(self, stmt: ir.Stmt) -> list[str]:
        """The element variables (see ``element_vars``) that a statement of mode ``element`` reads."""
        obj = stmt.value if isinstance(stmt, ir.Unpack) else stmt.expr.obj
        return [self.element_vars[obj][key] for key in self.plan.element_keys[stmt.index]]

    def contribute(self, v: ir.Operand, expr: str, indent: int, line: int):
        """Add ``expr`` into the cotangent of ``v``."""
        if not self.wants(v):
            return
        dv = self.d(v)
        if self.real(v):
            last = self.lines[-1] if self.lines else None
            if last is not None and last.indent == indent and last.text == f"{dv} = {self.zero()}":
                self.lines[-1] = Line(indent, f"{dv} = {expr}", line)  # reset, then one contribution
            elif self.state.get(v, ZERO_STATE) == ZERO_STATE and v not in self.dynamic:
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

    def reset(self, v: str, indent: int, line: int, index: int = 0, each_iteration: bool = False):
        """``v`` is bound here: its earlier value is another variable, whose cotangent starts at zero.
        ``each_iteration``: by a loop's own target, bound again at every iteration of that loop."""
        if self.plan.stable(v) or not self.wants(v):
            return
        repeated = each_iteration or self.plan.loops_of.get(index)
        if self.first.get(v) == index and v not in self.inputs and not repeated:
            return  # no earlier value: nothing reads this cotangent again (outside loops)
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
        ran = self.saved.get(stmt.index, {}).get("ran")
        if ran is None:
            self.unguarded(stmt, indent)
            return
        # a statement of a `try` body: its adjoint runs if it ran (see `primal.tracked`)
        owner, number = ran
        outer = dict(self.state), dict(self.owned)
        self.guarded(f"{self.saved[owner]['progress']} >= {number}", [stmt], indent, outer, unguarded=True)
        self.state, self.owned = outer

    def unguarded(self, stmt: ir.Stmt, indent: int):
        mode = self.plan.mode.get(stmt.index, "plain")
        if mode == "return":
            return
        if mode == "plain":
            # no adjoint, but an active variable bound here starts a new value
            for name in stmt.targets():
                if not isinstance(stmt, (ir.SetItem, ir.Mutate)):
                    self.reset(name, indent, stmt.line, stmt.index)
            return
        self.load(stmt, indent)
        if isinstance(stmt, ir.If):
            self.branch(stmt, indent)
        elif isinstance(stmt, (ir.For, ir.While)):
            self.loop(stmt, indent)
        elif isinstance(stmt, ir.With):
            self.block(stmt.body, indent)  # (the primal refuses a body stopped half way)
        elif isinstance(stmt, ir.Try):
            self.try_statement(stmt, indent)
        elif isinstance(stmt, (ir.SetItem, ir.Mutate)):
            self.write(stmt, indent)
        elif isinstance(stmt, ir.Unpack) and mode == "element":
            self.unpack_elements(stmt, indent)
        elif isinstance(stmt, ir.Unpack):
            self.unpack(stmt, indent)
        elif isinstance(stmt, ir.Assign):
            self.assign(stmt, mode, indent)

    def load(self, stmt: ir.Stmt, indent: int):
        """Take this statement's values saved in a loop off their stacks (also when the adjoint
        turns out to have nothing to do, so that every stack stays in step)."""
        saved = self.saved.get(stmt.index, {})
        for role, value in list(saved.items()):
            if isinstance(value, Stacked) and role != "count":
                self.emit(indent, f"{value.name} = next({value.rev})", stmt.line)
                self.rev.add(value)
                saved[role] = value.name

    def value(self, stmt: ir.Stmt, role: str) -> str:
        return self.saved[stmt.index][role]

    def assign(self, stmt: ir.Assign, mode: str, indent: int):
        y, expr, line = stmt.target, stmt.expr, stmt.line
        dy = self.read(y)
        if mode == "inline" and dy is not None and _carries(expr, y):
            # `s = s + x`: the new s's cotangent is the old one's; only x's is added
            xs = list(expr.operands_)
            xs.remove(y)  # the operand that carries the cotangent over
            sign = "-" if expr.op == "sub" else ""
            for x in xs:
                self.contribute(x, f"{sign}{dy}", indent, line)
            return
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
        elif mode == "element":  # `p["W"]`: into the cotangent of that element of p
            (element,) = self.elements_read(stmt)
            self.contribute(element, dy, indent, line)
        elif mode == "inline":
            self.inline(expr, dy, saved, stmt, indent)
        elif mode == "pullback":
            self.pullback(expr, dy, saved["pb"], stmt, indent)
        elif mode == "scalar":
            forward = self.h.const(self.plan.direct[stmt.index])
            args = [saved[f"arg{i}"] for i in range(len(expr.args))]
            for i, a in enumerate(expr.args):
                if self.wants(a.value):
                    tangents = ", ".join(dy if j == i else self.zero() for j in range(len(args)))
                    term = f"{forward}(({self.h('NO')}, {tangents}), {', '.join(args)})[1]"
                    self.contribute(a.value, term, indent, line)
        elif mode == "index":
            obj = expr.obj
            if self.wants(obj):
                flag = self.own(obj)
                owned = flag if self.owned.get(obj) == "flag" else "False"
                current = self.read(obj) or self.zero()
                at = f"{self.h('add_at')}({current}, {owned}, {saved['obj']}, {saved['key']}, {dy})"
                self.emit(indent, f"{self.d(obj)}, {flag} = {at}", line)
                self.state[obj], self.owned[obj] = SET, "flag"
        elif mode == "recompute":
            obj = self.operand(expr.obj)
            if isinstance(expr, ir.GetItem):
                made = f"{self.h('pullback')}({self.h('operator')}.getitem, {obj}, {self.operand(expr.index)})[1]"
            else:
                made = f"{self.h('pullback')}({self.h('getattr')}, {obj}, {expr.name!r})[1]"
            self.pullback(expr, dy, made, stmt, indent)
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

    def write(self, stmt, indent: int):
        """``obj[i] = v`` / ``obj.append(v)`` / ``obj.extend(vs)``: the written element's
        cotangent comes out of ``obj``'s, which the helper owns afterwards."""
        obj, line = stmt.obj, stmt.line
        dobj = self.read(obj) or self.zero()
        flag = self.own(obj)
        owned = flag if self.owned.get(obj) == "flag" else "False"
        if isinstance(stmt, ir.Mutate) and stmt.method == "append":
            call = f"{self.h('append_pullback')}({dobj}, {owned})"
        else:
            call = f"{self.value(stmt, 'pb')}({dobj}, {owned})"
        wanted = self.wants(stmt.value)
        dvalue = self.namer.fresh(f"d{stmt.value}_{stmt.index}") if wanted else "_"
        self.emit(indent, f"{dvalue}, {self.d(obj)}, {flag} = {call}", line)
        self.state[obj], self.owned[obj] = SET, "flag"
        if wanted:
            self.contribute(stmt.value, dvalue, indent, line)

    def loop(self, stmt, indent: int):
        saved = self.saved.get(stmt.index, {})
        line = stmt.line
        # in a `try` body (see `primal.tracked`), the statements of the last iteration that ran
        # may be a part of the body: the first iteration backwards tests each one
        progress = saved.get("progress")
        if progress is not None:  # a local of the reverse pass, which sets it once the first iteration is done
            left = saved["progress"] = self.namer.fresh(f"{progress}_left")
            self.emit(indent, f"{left} = {progress}", line)
            progress = left
        touched = self.touched(stmt, temporaries=progress is not None)
        for v in sorted(touched):
            self.materialize(v, indent, line)
        count = saved["count"]
        if isinstance(count, Stacked):
            self.emit(indent, f"{count.name} = next({count.rev})", line)
            self.rev.add(count)
            count = count.name
        routed = (
            isinstance(stmt, ir.For)
            and stmt.index not in self.plan.range_loops
            and self.wants(stmt.target)
            and self.wants(stmt.iterable)
        )
        items = None
        if routed:
            iterable = saved["iterable"]
            if isinstance(iterable, Stacked):
                self.emit(indent, f"{iterable.name} = next({iterable.rev})", line)
                self.rev.add(iterable)
                iterable = iterable.name
            start = saved["start"]
            if isinstance(start, Stacked):
                self.emit(indent, f"{start.name} = next({start.rev})", line)
                self.rev.add(start)
                start = start.name
            items = self.namer.fresh(f"d{stmt.target}_items")
            self.emit(indent, f"{items} = {self.h('item_cotangents')}({iterable}, {count}, {start})", line)
        if isinstance(stmt, ir.For) and stmt.index in self.plan.range_loops:
            range_value = saved["range"]
            if isinstance(range_value, Stacked):
                self.emit(indent, f"{range_value.name} = next({range_value.rev})", line)
                self.rev.add(range_value)
                range_value = range_value.name
            self.emit(indent, f"for {stmt.target} in {self.h('reversed')}({range_value}[:{count}]):", line)
        elif routed:
            position = self.namer.fresh(f"i_{stmt.index}")
            self.emit(indent, f"for {position} in {self.h('range')}({count} - 1, -1, -1):", line)
        else:
            self.emit(indent, f"for _ in {self.h('range')}({count}):", line)
        outer = dict(self.state), dict(self.owned)
        start = len(self.lines)
        self.block(stmt.body, indent + 1)
        if progress is not None and len(self.lines) > start:
            self.emit(indent + 1, f"{progress} = {saved['complete']}", 0)  # earlier iterations ran to their end
        if routed:
            target = self.d(stmt.target)
            self.emit(indent + 1, f"{items}.put({position}, {target})", line)
            self.emit(indent + 1, f"{target} = {self.zero()}", line)
        elif isinstance(stmt, ir.For):  # each iteration bound the target to a constant
            self.reset(stmt.target, indent + 1, line, stmt.index, each_iteration=True)
        if len(self.lines) == start:
            self.emit(indent + 1, "pass", 0)
        self.state, self.owned = outer
        for v in touched:
            self.state[v], self.owned[v] = SET, ("flag" if not self.real(v) else False)
        if routed:
            self.contribute(stmt.iterable, f"{items}.result()", indent, line)

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

    def unpack_elements(self, stmt: ir.Unpack, indent: int):
        """``a, b = p`` for a structure passed in whose elements' cotangents are kept apart: each
        name's cotangent goes into its element's."""
        for n, element in zip(stmt.names, self.elements_read(stmt)):
            dn = self.read(n)
            if dn is not None:
                self.contribute(element, dn, indent, stmt.line)
        for n in stmt.names:
            self.reset(n, indent, stmt.line, stmt.index)

    def build_elements(self, indent: int):
        """``dp = struct_cotangent(p, keys, elements, cotangents)`` for each structure passed in
        whose elements' cotangents were kept apart: built once, from the elements that received one."""
        for name, variables in self.element_vars.items():
            read = [(key, var) for key, var in variables.items() if self.read(var) is not None]
            if not read:
                continue
            tail = "," if len(read) == 1 else ""
            keys = ", ".join(repr(key) for key, _ in read) + tail
            values = ", ".join(self.element_value(name, key) for key, _ in read) + tail
            tangents = ", ".join(self.read(var) for _, var in read) + tail
            unpacked = any(isinstance(stmt, ir.Unpack) for stmt in self.element_stmts(name))
            # (a namedtuple unpacked has all its fields in its tangent, zeros included, as `unpack` gives)
            fields = ", all_fields=True" if unpacked and hasattr(self.plan.elements[name].cls, "_fields") else ""
            call = f"{self.h('struct_cotangent')}({name}, ({keys}), ({values}), ({tangents}){fields})"
            self.emit(indent, f"{self.d(name)} = {call}", 0)
            self.state[name], self.owned[name] = SET, False

    def element_stmts(self, name: str) -> list[ir.Stmt]:
        """The statements of mode ``element`` reading elements of ``name``."""
        found = []
        for stmt in ir.walk(self.plan.fn.body):
            if self.plan.mode.get(stmt.index) == "element":
                obj = stmt.value if isinstance(stmt, ir.Unpack) else stmt.expr.obj
                if obj == name:
                    found.append(stmt)
        return found

    def element_value(self, name: str, key) -> str:
        """The element of ``name`` at ``key`` as the function read it (its cotangent is matched to
        it): the variable it was read into when that keeps its value, else read again."""
        struct = self.plan.elements[name]
        for stmt in self.plan.fn.body:  # the statements that always run, up to the first block or return
            if not isinstance(stmt, (ir.Assign, ir.Unpack, ir.SetItem, ir.Mutate)):
                break
            if self.plan.mode.get(stmt.index) != "element" or key not in self.plan.element_keys[stmt.index]:
                continue
            obj = stmt.value if isinstance(stmt, ir.Unpack) else stmt.expr.obj
            target = stmt.names[key] if isinstance(stmt, ir.Unpack) else stmt.target
            if obj == name and self.plan.stable(target):
                return target
        if struct.kind == "fields":
            return f"{name}.{key}"
        return f"{name}[{key!r}]"

    def branch(self, stmt: ir.If, indent: int):
        touched = self.touched(stmt)
        for v in sorted(touched):
            self.materialize(v, indent, stmt.line)
        test = self.saved.get(stmt.index, {}).get("test", self.operand(stmt.test))
        outer = dict(self.state), dict(self.owned)
        self.emit(indent, f"if {test}:", stmt.line)
        self.branch_block(stmt.body, indent + 1, outer)
        # the else block's adjoint even where its statements are all plain: a constant bound
        # there (`a = 0.0`) resets a cotangent that a later iteration of a loop may have left
        start = len(self.lines)
        self.emit(indent, "else:", 0)
        self.branch_block(stmt.orelse, indent + 1, outer)
        if len(self.lines) == start + 2 and self.lines[-1].text == "pass":
            del self.lines[start:]
        self.state, self.owned = outer
        for v in touched:
            self.state[v], self.owned[v] = SET, ("flag" if not self.real(v) else False)

    def try_statement(self, stmt: ir.Try, indent: int):
        """Back through what ran, last first: the ``finally`` block; the ``else`` block if the body
        ran to its end; the handler that ran; the body's statements that ran (each under its test:
        see ``statement``). The cotangents of every variable inside are given a value first,
        temporaries too: a statement's adjoint may run while a later one's, which would have set
        them, did not."""
        saved = self.saved.get(stmt.index, {})
        touched = self.touched(stmt, temporaries=True)
        for v in sorted(touched):
            self.materialize(v, indent, stmt.line)
        outer = dict(self.state), dict(self.owned)
        self.guarded(None, stmt.finalbody, indent, outer)
        self.guarded(f"{saved['progress']} == {saved['complete']}", stmt.orelse, indent, outer)
        for i, handler in enumerate(stmt.handlers, 1):
            self.guarded(f"{saved['handled']} == {i}", handler.body, indent, outer)
        self.guarded(None, stmt.body, indent, outer)
        self.state, self.owned = outer
        for v in touched:
            self.state[v], self.owned[v] = SET, ("flag" if not self.real(v) else False)

    def guarded(self, test: str | None, block: list[ir.Stmt], indent: int, outer, unguarded: bool = False):
        """The adjoint of ``block`` under ``if test:`` (``None``: always), left out when it does
        nothing; ``unguarded``: of its one statement, without that statement's own test."""
        start = len(self.lines)
        if test is not None:
            self.emit(indent, f"if {test}:", 0)
        self.state, self.owned = dict(outer[0]), dict(outer[1])
        if unguarded:
            self.unguarded(block[0], indent + 1)
        else:
            self.block(block, indent + (test is not None))
        if test is not None and len(self.lines) == start + 1:
            self.lines.pop()

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

    def touched(self, stmt, temporaries: bool = False) -> set[str]:
        """Active variables whose cotangents the body of an ``if`` or a loop changes and that
        live on after it: all but the temporaries bound only inside (they live in one pass),
        unless ``temporaries``."""
        inside = [s for block in stmt.blocks() for s in ir.walk(block)]
        counts: dict[str, int] = {}
        found: set[str] = set()
        for s in inside:
            for t in s.targets():
                counts[t] = counts.get(t, 0) + 1
            if isinstance(s, ir.For) and self.plan.mode.get(s.index) == "loop":
                found.add(s.target)  # a loop's variable, and the iterable its cotangents go back to
                found.update(x for x in s.operands() if isinstance(x, str))
            if self.plan.mode.get(s.index, "plain") in ("return", "branch", "loop", "block"):
                continue
            if self.plan.mode.get(s.index, "plain") == "plain":
                found.update(t for t in s.targets() if not self.plan.stable(t))  # resets
                continue
            if self.plan.mode.get(s.index) == "element":
                found.update(self.elements_read(s))  # the elements' cotangents, not the structure's
            else:
                found.update(x for x in s.operands() if isinstance(x, str))
            found.update(s.targets())
        if isinstance(stmt, ir.For):
            found.add(stmt.target)
            found.add(stmt.iterable) if isinstance(stmt.iterable, str) else None
        temps = self.plan.fn.temps
        local = {v for v, n in counts.items() if v in temps and n == self.plan.assignments.get(v, 0)}
        if temporaries:
            local = set()
        return {v for v in found if self.wants(v) and v not in local}


def _suffix(struct, key, i: int) -> str:
    """The part of an element's cotangent name that names the element: its key or field name when
    that fits in a name (``dp_W1``), else its position (``dp_0``)."""
    if struct.kind == "tuple" and hasattr(struct.cls, "_fields"):
        return struct.cls._fields[key]
    text = str(key)
    return text if text.isidentifier() else str(i)


def _carries(expr: ir.Op, y: str) -> bool:
    """Whether ``y = expr`` passes ``y``'s cotangent to its old value unchanged: ``y = y + x``,
    ``y = y - x``, ``y = +y``."""
    xs = expr.operands_
    return (expr.op in ("add", "sub", "pos") and xs[0] == y) or (expr.op == "add" and xs[1] == y and xs[0] != y)


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
    # k = 0 (a loop's first power) has partial 0, not 0 * a ** -1: nan, or a ZeroDivisionError, at a = 0
    return f"(0 if {b} == 0 else {b} * {a} ** ({b} - 1))"


def param_cotangent(adj: Adjoint, name: str) -> str:
    t = adj.plan.types.get(name)
    if t in INACTIVE_TYPES:
        return adj.h("NO")
    d = adj.read(name)
    if adj.plan.param_types.get(name) is int:
        # an integer that only counts has no derivative; one used arithmetically gets a float
        return f"{adj.h('integer_cotangent')}({d})" if d else adj.h("NO")
    param_type = adj.plan.param_types.get(name)
    if d and isinstance(param_type, ArrayType) and param_type.ndim == 0:
        # rules may answer a 0-d array with a NumPy scalar; the argument's cotangent is a 0-d array
        return f"{adj.h('project_0d')}({d}, {adj.h.const(param_type.dtype.type)})"
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
    start = len(adj.lines)
    adj.block(plan.fn.body, 2)
    adj.build_elements(2)
    prologue = [
        Line(2, f"{s.rev} = {helpers('reversed')}({s.stack})", 0) for s in sorted(adj.rev, key=lambda s: s.stack)
    ]
    adj.lines[start:start] = prologue
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

    def reads(text: str, flag: str) -> bool:
        _, _, right = text.partition(" = ")
        return any(flag == token for token in right.replace("(", " ").replace(")", " ").replace(",", " ").split())

    read = {flag for flag in adj.ownnames.values() if any(reads(line.text, flag) for line in adj.lines)}
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
