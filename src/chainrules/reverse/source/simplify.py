"""Pass 5, simplify: decide, per specialization, what each statement of the IR needs.

Given the types of the arguments (the engine specializes a function per argument types, as
Julia does), three flow-insensitive analyses run over the IR to a fixed point:

- **types**: Python ``int``/``float``/``numpy.float64`` values are *real scalars*; operators on
  them give real scalars, ``math`` functions give floats, comparisons give ``bool``;
- **activity**: a variable is active when it may depend on an argument or a captured
  variable through something differentiable (constants, globals, ``None``, booleans,
  strings, comparisons and non-differentiable calls are not);
- **usefulness**: a variable is useful when its cotangent may reach the returned value.

Each statement then gets a *mode*: ``plain`` (run as written, no adjoint: inactive or not
useful), ``inline`` (an arithmetic operator on real scalars, whose partials the adjoint
computes directly, guarded by the specialization's types and by the operator's rule being the
stock one), ``pullback`` (through the rule, or the source engine, at run time), ``copy``,
``struct`` (tuple/list/dict displays and unpacking, handled by the engine), ``closure``
(a nested function), ``branch`` (an ``if`` with adjoint code inside) or ``return``. Global names
bound to modules, built-ins and classes are resolved once here; the specialization is used
only while they stay bound to the same objects (``guards``).
"""

from __future__ import annotations

import builtins
import dataclasses
import math
import operator
import types

import numpy as np

from ...core.errors import UnsupportedSyntaxError
from ...core.registry import _nondiff_rrule, rrule
from . import ir


class _Real:
    """The type of a value known to be an int, a float or a numpy.float64 (not a bool)."""

    def __repr__(self) -> str:
        return "real"


class _Any:
    def __repr__(self) -> str:
        return "any"


REAL, ANY = _Real(), _Any()
_REALISH = (int, float, np.float64, REAL)
INACTIVE_TYPES = frozenset(
    {
        type(None),
        bool,
        np.bool_,
        str,
        bytes,
        range,
        slice,
        type(Ellipsis),
        type,
        types.ModuleType,
        types.BuiltinFunctionType,
        np.ufunc,
    }
)
NONDIFF_OPS = frozenset(
    {"eq", "ne", "lt", "le", "gt", "ge", "is_", "is_not", "contains", "not_", "and_", "or_", "xor", "invert"}
    | {"lshift", "rshift"}
)
INLINE_OPS = frozenset({"add", "sub", "mul", "truediv", "neg", "pos", "pow"})
_NONDIFF_CODE = _nondiff_rrule(len).__code__
_MATH_INT = frozenset({"floor", "ceil", "trunc", "isqrt", "factorial", "comb", "perm", "gcd", "lcm"})
_MATH_BOOL = frozenset({"isnan", "isinf", "isfinite", "isclose"})
_MISSING = object()


def join(a, b):
    if a is b or a == b:
        return a
    if a is None:
        return b
    if b is None:
        return a
    if a in _REALISH and b in _REALISH:
        return REAL
    return ANY


def is_real(t) -> bool:
    return t in _REALISH


def _arith_type(op: str, ts: list) -> object:
    if not all(is_real(t) for t in ts):
        return ANY
    if any(t is REAL for t in ts):
        return REAL
    if any(t is np.float64 for t in ts):
        return np.float64
    if op == "truediv" or any(t is float for t in ts):
        return float
    return int


@dataclasses.dataclass
class Plan:
    """What the primal and adjoint passes generate for one specialization of a function."""

    fn: ir.Function
    types: dict[str, object]
    active: set[str]
    useful: set[str]
    mode: dict[int, str]
    static: dict[str, object]
    guards: tuple[tuple[str, object], ...]
    assignments: dict[str, int]
    freevars: tuple[str, ...] = ()
    param_types: dict[str, type] = dataclasses.field(default_factory=dict)

    def stable(self, name: str) -> bool:
        """Whether ``name`` keeps one value for the whole call (bound at most once)."""
        return self.assignments.get(name, 0) <= 1

    def is_active(self, x: ir.Operand) -> bool:
        return isinstance(x, str) and x in self.active

    def static_module(self, x: ir.Operand) -> bool:
        """Whether ``x`` is a global name bound to a module (``np`` in ``np.sin(x)``)."""
        return isinstance(x, str) and isinstance(self.static.get(x), types.ModuleType)

    def __str__(self) -> str:
        """The IR with each statement's mode, and the types of the active variables."""
        lines = [f"def {self.fn.name}(...):"]
        lines += _annotated(self.fn.body, self.mode, 1)
        active = sorted(self.active)
        lines.append("# active: " + ", ".join(f"{v}: {_type_name(self.types.get(v))}" for v in active))
        return "\n".join(lines)


def _type_name(t) -> str:
    if isinstance(t, type):
        return t.__name__ if t.__module__ == "builtins" else f"{t.__module__.split('.')[0]}.{t.__name__}"
    return repr(t)


def _annotated(block, mode, indent) -> list[str]:
    out = []
    pad = "    " * indent
    for stmt in block:
        out.append(f"{pad}{stmt}".ljust(48) + f"  # {mode.get(stmt.index, 'plain')}")
        if isinstance(stmt, ir.If):
            out += _annotated(stmt.body, mode, indent + 1) or [f"{pad}    pass"]
            if stmt.orelse:
                out.append(f"{pad}else:")
                out += _annotated(stmt.orelse, mode, indent + 1)
    return out


class _Analysis:
    def __init__(self, fn: ir.Function, param_types: dict, free_types: dict, globals_: dict, filename: str):
        self.fn = fn
        self.filename = filename
        self.globals = globals_
        self.types: dict[str, object] = {}
        self.active: set[str] = set()
        self.local = set(fn.params()) | set(free_types)
        for stmt in ir.walk(fn.body):
            self.local.update(stmt.targets())
        for name, t in {**param_types, **free_types}.items():
            self.types[name] = t
            if t not in INACTIVE_TYPES:
                self.active.add(name)
        self.static: dict[str, object] = {}
        self.guards: dict[str, object] = {}

    # -- globals --
    def resolve(self, x: ir.Operand):
        """The value of a constant or of a global name bound to a module, built-in or class."""
        if isinstance(x, ir.Const):
            return x.value
        if x in self.local:
            return _MISSING
        if x in self.static:
            return self.static[x]
        value = self.globals.get(x, _MISSING)
        if value is _MISSING:
            value = getattr(builtins, x, _MISSING)
        if isinstance(value, (types.ModuleType, types.BuiltinFunctionType, type, np.ufunc)):
            self.static[x] = value
            return value
        return _MISSING

    def type_of(self, x: ir.Operand):
        if isinstance(x, ir.Const):
            return type(x.value)
        if x in self.local:
            return self.types.get(x)
        value = self.resolve(x)
        return ANY if value is _MISSING else type(value)

    def is_active(self, x: ir.Operand) -> bool:
        return isinstance(x, str) and x in self.active

    # -- one expression --
    def callee(self, expr) -> object:
        if isinstance(expr, ir.Call):
            return self.resolve(expr.func)
        if isinstance(expr, ir.GetAttr):
            owner = self.resolve(expr.obj)
            if isinstance(owner, types.ModuleType):
                return getattr(owner, expr.name, _MISSING)
        return _MISSING

    def call_target(self, expr: ir.Call | ir.MethodCall):
        """The callee of a call when it is statically known (a global built-in, or module.function)."""
        if isinstance(expr, ir.MethodCall):
            owner = self.resolve(expr.obj)
            if isinstance(owner, types.ModuleType):
                return getattr(owner, expr.name, _MISSING)
            return _MISSING
        value = self.resolve(expr.func)
        if value is not _MISSING:
            return value
        return self.attr_values.get(expr.func, _MISSING)

    def expr_type(self, expr) -> object:
        if isinstance(expr, ir.Copy):
            return self.type_of(expr.value)
        if isinstance(expr, ir.Op):
            ts = [self.type_of(x) for x in expr.operands_]
            if expr.op in NONDIFF_OPS:
                return bool if all(is_real(t) or t is bool for t in ts) else ANY
            if expr.op in ("neg", "pos"):
                return ts[0] if is_real(ts[0]) else ANY
            if expr.op in ("add", "sub", "mul", "truediv"):
                return _arith_type(expr.op, ts)
            if expr.op == "pow" and self._int_exponent(expr.operands_[1]):
                if not is_real(ts[0]):
                    return ANY
                if ts[0] is int and isinstance(expr.operands_[1], ir.Const) and expr.operands_[1].value >= 0:
                    return int
                return _arith_type("truediv", ts[:1])
            return ANY
        if isinstance(expr, (ir.Call, ir.MethodCall)):
            return self.call_type(expr)
        if isinstance(expr, ir.GetAttr):
            owner = self.resolve(expr.obj)
            if isinstance(owner, types.ModuleType):
                value = getattr(owner, expr.name, _MISSING)
                return type(value) if value is not _MISSING else ANY
            return ANY
        if isinstance(expr, ir.Build):
            return {"tuple": tuple, "list": list, "set": set}[expr.kind]
        if isinstance(expr, ir.BuildDict):
            return dict
        if isinstance(expr, ir.BuildSlice):
            return slice
        if isinstance(expr, ir.MakeFunction):
            return types.FunctionType
        if isinstance(expr, ir.Opaque):
            return str
        return ANY

    def _int_exponent(self, x: ir.Operand) -> bool:
        return self.type_of(x) is int and not self.is_active(x)

    def call_type(self, expr: ir.Call | ir.MethodCall) -> object:
        f = self.call_target(expr)
        if f is _MISSING:
            return ANY
        args = [self.type_of(a.value) for a in expr.args]
        if getattr(f, "__module__", None) == "math" or getattr(f, "__self__", None) is math:
            name = f.__name__
            if name in _MATH_BOOL:
                return bool
            if name in _MATH_INT:
                return int
            return float if all(is_real(t) for t in args) else ANY
        known = {len: int, float: float, int: int, bool: bool, isinstance: bool, range: range, str: str}
        if f in known:
            return known[f]
        if f is abs and len(args) == 1 and is_real(args[0]):
            return args[0]
        return ANY

    def nondifferentiable(self, expr) -> bool:
        if isinstance(expr, ir.Op):
            return expr.op in NONDIFF_OPS
        if isinstance(expr, (ir.Call, ir.MethodCall)):
            f = self.call_target(expr)
            if f is not _MISSING:
                try:
                    rule = rrule.lookup(f, ())
                except TypeError:
                    return False
                return getattr(rule, "__code__", None) is _NONDIFF_CODE
        return isinstance(expr, (ir.BuildSlice, ir.Opaque))

    def expr_active(self, expr) -> bool:
        if self.nondifferentiable(expr):
            return False
        return any(self.is_active(x) for x in expr.operands())

    # -- the fixed points --
    def run(self) -> Plan:
        self.attr_values: dict[str, object] = {}
        stmts = list(ir.walk(self.fn.body))
        changed = True
        while changed:
            changed = False
            for stmt in stmts:
                for target, t, active in self.effects(stmt):
                    new_t = join(self.types.get(target), t)
                    if new_t != self.types.get(target):
                        self.types[target] = new_t
                        changed = True
                    if active and new_t not in INACTIVE_TYPES and target not in self.active:
                        self.active.add(target)
                        changed = True
        useful = self.usefulness(stmts)
        mode = self.modes(stmts, useful)
        assignments: dict[str, int] = {p: 1 for p in self.fn.params()}
        for stmt in stmts:
            for target in stmt.targets():
                assignments[target] = assignments.get(target, 0) + 1
        guards = tuple((name, value) for name, value in sorted(self.static.items(), key=lambda kv: kv[0]))
        return Plan(self.fn, self.types, self.active, useful, mode, self.static, guards, assignments)

    def effects(self, stmt):
        if isinstance(stmt, ir.Assign):
            expr = stmt.expr
            callee = self.callee(expr)
            if callee is not _MISSING and isinstance(expr, ir.GetAttr):
                self.attr_values[stmt.target] = callee
            return [(stmt.target, self.expr_type(expr), self.expr_active(expr))]
        if isinstance(stmt, ir.Unpack):
            active = self.is_active(stmt.value)
            return [(name, ANY, active) for name in stmt.names]
        if isinstance(stmt, ir.Plain):
            return [(name, types.ModuleType, False) for name in stmt.names]
        return []

    def usefulness(self, stmts) -> set[str]:
        useful: set[str] = set()
        for stmt in stmts:
            if isinstance(stmt, ir.Return) and self.is_active(stmt.value):
                useful.add(stmt.value)
        changed = True
        while changed:
            changed = False
            for stmt in stmts:
                feeds = []
                if isinstance(stmt, ir.Assign) and stmt.target in useful and stmt.target in self.active:
                    if not self.nondifferentiable(stmt.expr):
                        feeds = stmt.expr.operands()
                elif isinstance(stmt, ir.Unpack) and any(n in useful for n in stmt.names):
                    feeds = (stmt.value,)
                for x in feeds:
                    if self.is_active(x) and x not in useful:
                        useful.add(x)
                        changed = True
        return useful

    def modes(self, stmts, useful) -> dict[int, str]:
        self.position = {stmt: i for i, stmt in enumerate(stmts)}
        self.first_binding: dict[str, int] = {}
        for i, stmt in enumerate(stmts):
            for name in stmt.targets():
                self.first_binding.setdefault(name, i)
        mode: dict[int, str] = {}
        for stmt in stmts:
            mode[stmt.index] = self.mode(stmt, useful)
        # an `if` needs its branch replayed when anything inside it has an adjoint
        for stmt in reversed(stmts):
            if isinstance(stmt, ir.If):
                inner = [s for block in stmt.blocks() for s in ir.walk(block)]
                if any(mode[s.index] != "plain" for s in inner):
                    mode[stmt.index] = "branch"
        return mode

    def mode(self, stmt, useful) -> str:
        if isinstance(stmt, ir.Return):
            return "return"
        if isinstance(stmt, ir.Unpack):
            return "struct" if any(n in useful and n in self.active for n in stmt.names) else "plain"
        if not isinstance(stmt, ir.Assign):
            return "plain"
        if stmt.target not in self.active or stmt.target not in useful or not self.expr_active(stmt.expr):
            return "plain"
        expr = stmt.expr
        if isinstance(expr, ir.Copy):
            return "copy"
        if isinstance(expr, ir.Op) and self.inlinable(expr):
            return "inline"
        if isinstance(expr, (ir.Op, ir.Call, ir.MethodCall, ir.GetAttr, ir.GetItem)):
            return "pullback"
        if isinstance(expr, ir.Build) and expr.kind == "set":
            self.refuse(stmt, "a set of differentiated values has no tangent (sets are unordered); use a tuple")
        if isinstance(expr, (ir.Build, ir.BuildDict)):
            return "struct"
        if isinstance(expr, ir.MakeFunction):
            for name in expr.captures:
                first = self.first_binding.get(name)
                if name != stmt.target and name in self.active and first is not None and first > self.position[stmt]:
                    self.refuse(
                        stmt,
                        f"the nested function `{expr.name}` reads `{name}`, which is bound after the function is "
                        "defined; define the function after it",
                    )
            defaults = (*expr.defaults, *(v for _, v in expr.kwdefaults))
            if any(self.is_active(d) for d in defaults):
                self.refuse(
                    stmt, f"a default value of the nested function `{expr.name}` depends on differentiated values"
                )
            return "closure"
        return "plain"

    def inlinable(self, expr: ir.Op) -> bool:
        if expr.op not in INLINE_OPS:
            return False
        ts = [self.type_of(x) for x in expr.operands_]
        if not all(is_real(t) for t in ts):
            return False
        if expr.op == "pow" and (self.is_active(expr.operands_[1]) or not self._int_exponent(expr.operands_[1])):
            return False
        return _stock_rule(expr.op, ts)

    def refuse(self, stmt, message):
        raise UnsupportedSyntaxError(message, self.filename, stmt.line, 1)


_SAMPLE = {int: 1, float: 1.0, np.float64: np.float64(1.0), REAL: 1.0}


def _stock_rule(op: str, ts: list) -> bool:
    """Whether the rule registered for ``operator.<op>`` on these types is chainrules' own."""
    samples = tuple(_SAMPLE[t] for t in ts)
    rule = rrule.lookup(getattr(operator, op), samples)
    return getattr(rule, "__module__", None) == "chainrules.rules.operators"


def analyze(fn: ir.Function, param_types: dict, free_types: dict, globals_: dict, filename: str) -> Plan:
    """The plan for ``fn`` called with arguments of ``param_types`` and captured values of ``free_types``.

    >>> import ast
    >>> from chainrules.reverse.source.names import Namer
    >>> from chainrules.reverse.source.lower import lower
    >>> node = ast.parse("def f(a, b):\\n    return a / (a + b * b)").body[0]
    >>> fn = lower(node, Namer.for_function(node), "<doc>")
    >>> print(analyze(fn, {"a": float, "b": float}, {}, {}, "<doc>"))
    def f(...):
        y_1 = mul(b, b)                                 # inline
        y_2 = add(a, y_1)                               # inline
        y_3 = truediv(a, y_2)                           # inline
        return y_3                                      # return
    # active: a: float, b: float, y_1: float, y_2: float, y_3: float
    """
    plan = _Analysis(fn, param_types, free_types, globals_, filename).run()
    plan.freevars = tuple(free_types)
    plan.param_types = dict(param_types)
    return plan
