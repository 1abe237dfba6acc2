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
stock one), ``index`` (``x[i]`` on a float array with an integer index, likewise: its partial
adds the cotangent at ``i``), ``pullback`` (through the rule, or the source engine, at run
time; a call whose callee and argument types are known here calls its rule directly),
``recompute`` (an indexing in a loop whose pullback the reverse pass makes again), ``scalar``
(a call of a real function of real scalars: the reverse pass takes its partials from the
function's ``frule``, so nothing but the arguments is kept), ``copy``,
``struct`` (tuple/list/dict displays and unpacking, handled by the engine), ``element``
(``p["W"]``, ``p.W``, ``a, b = p`` on a structure passed in that is read only so: read as
Python, its cotangent kept element by element, see ``element_inputs``), ``closure``
(a nested function), ``branch`` (an ``if`` with adjoint code inside) or ``return``. Global names
bound to modules, built-ins and classes are resolved once here; the specialization is used
only while they stay bound to the same objects (``guards``).
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import functools
import itertools
import math
import operator
import types
import warnings

import numpy as np

from ...core.active import ActiveValue
from ...core.errors import UnsupportedSyntaxError
from ...core.pullback_results import checked_rule
from ...core.registry import OPT_OUT, _nondiff_rrule, frule, is_users_rule, rrule
from . import codegen, ir


def reads_only(f) -> bool:
    """Whether a call ``f(x)`` keeps no reference to the container ``x`` in what it returns: its
    length, or a copy (which holds the values again, not the container)."""
    return f is len or f is copy.copy or f is copy.deepcopy


class _Real:
    """The type of a value known to be an int, a float or a numpy.float64 (not a bool)."""

    def __repr__(self) -> str:
        return "real"


class _Any:
    def __repr__(self) -> str:
        return "any"


class _Shape:
    """The type of an array's shape or strides: a tuple of ints."""

    def __repr__(self) -> str:
        return "shape"


class _ArrayLike:
    """The type of a value known to be a NumPy array or scalar, or an engine's stand-in for one,
    of unknown dtype and shape: what a ufunc, an operator or an array function returns for arrays.
    Nothing but its storage facts (``.shape``, ``.dtype``, ...) is told by it: it is otherwise as
    unknown as ``ANY``."""

    def __repr__(self) -> str:
        return "array"


REAL, ANY, SHAPE, ARRAYLIKE = _Real(), _Any(), _Shape(), _ArrayLike()


@dataclasses.dataclass(frozen=True)
class ArrayType:
    """The type of a NumPy array with a known dtype and number of dimensions."""

    dtype: np.dtype
    ndim: int

    def __repr__(self) -> str:
        return f"ndarray[{self.dtype}, {self.ndim}d]"

    def element(self, axes: int = 1):
        """The type of ``a[i]`` for an integer ``i`` (and of the rows a loop over ``a`` gives), or
        of ``a[i, j, ...]`` for ``axes`` integers."""
        return self.dtype.type if self.ndim == axes else ArrayType(self.dtype, self.ndim - axes)


@dataclasses.dataclass(frozen=True)
class StructType:
    """The type of a tuple, a namedtuple, a list, a dict with string keys or a dataclass instance
    whose elements have known types: ``kind`` is ``"tuple"`` (tuples and namedtuples, indexed by
    position), ``"list"``, ``"dict"`` (by key) or ``"fields"`` (a dataclass's fields, by name);
    ``items`` pairs each index, key or field name with its element's type.

    >>> type_of_value((np.zeros(3), 2.0))
    tuple(ndarray[float64, 1d], float)
    """

    kind: str
    cls: type
    items: tuple[tuple[object, object], ...]

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{k}: {_type_name(t)}" if self.kind in ("dict", "fields") else _type_name(t) for k, t in self.items
        )
        return f"{self.cls.__name__}({inner})"

    def item(self, key):
        """The type of the element at ``key`` (a position, a key or a field name), or None."""
        if self.kind in ("tuple", "list") and isinstance(key, int) and not isinstance(key, bool):
            n = len(self.items)
            if -n <= key < n:
                return self.items[key][1]
            return None
        if self.kind == "tuple" and isinstance(key, str):  # a namedtuple's field
            fields = getattr(self.cls, "_fields", ())
            return self.items[fields.index(key)][1] if key in fields else None
        for k, t in self.items:
            if k == key and isinstance(key, str):
                return t
        return None

    def position(self, key):
        """The index, key or field name under which ``item(key)`` is stored (a namedtuple's field
        name and a negative index name a position)."""
        if isinstance(key, str) and self.kind == "tuple":
            return self.cls._fields.index(key)
        if isinstance(key, int) and key < 0:
            return key + len(self.items)
        return key


#: a structure is typed element by element only up to this many elements and this depth; beyond,
#: it has its class as its type (a tuple of a thousand arrays would make a long key and guard)
STRUCT_ITEMS_AT_MOST = 16
STRUCT_DEPTH = 2
_STRUCT_KINDS: dict[type, str | None] = {tuple: "tuple", list: "list", dict: "dict"}


def struct_kind(t: type) -> str | None:
    """How values of the class ``t`` are typed element by element (see ``StructType``), or None."""
    kind = _STRUCT_KINDS.get(t, _MISSING)
    if kind is _MISSING:
        if issubclass(t, tuple) and isinstance(getattr(t, "_fields", None), tuple):
            kind = "tuple"
        elif dataclasses.is_dataclass(t):
            kind = "fields"
        else:
            kind = None
        _STRUCT_KINDS[t] = kind
    return kind


def type_of_value(value, depth: int = STRUCT_DEPTH):
    """The type the analysis specializes on: ``ArrayType`` for arrays, ``StructType`` for small
    tuples, lists, dicts with string keys and dataclass instances, else the Python type."""
    t = type(value)
    if t is np.ndarray:
        return ArrayType(value.dtype, value.ndim)
    if depth and struct_kind(t) is not None:
        return _struct_type(value, t, depth - 1)
    return t


def _struct_type(value, t: type, depth: int):
    kind = struct_kind(t)
    if kind == "fields":
        names = _field_names(t)
        if len(names) > STRUCT_ITEMS_AT_MOST:
            return t
        items = []
        for name in names:
            item = getattr(value, name, _MISSING)
            if item is _MISSING:
                return t
            items.append((name, type_of_value(item, depth)))
        return StructType(kind, t, tuple(items))
    if len(value) > STRUCT_ITEMS_AT_MOST:
        return t
    if kind == "dict":
        if not all(type(k) is str for k in value):
            return t
        return StructType(kind, t, tuple((k, type_of_value(v, depth)) for k, v in value.items()))
    return StructType(kind, t, tuple((i, type_of_value(v, depth)) for i, v in enumerate(value)))


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def class_of(t):
    """The Python class of values of the analysis type ``t`` when it is a ``StructType``, else ``t``."""
    return t.cls if isinstance(t, StructType) else t


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
        SHAPE,
    }
)
NONDIFF_OPS = frozenset(
    {"eq", "ne", "lt", "le", "gt", "ge", "is_", "is_not", "contains", "not_", "and_", "or_", "xor", "invert"}
    | {"lshift", "rshift"}
)
INLINE_OPS = frozenset({"add", "sub", "mul", "truediv", "neg", "pos", "pow"})
_NONDIFF_CODE = _nondiff_rrule(len, False).__code__
_MATH_INT = frozenset({"floor", "ceil", "trunc", "isqrt", "factorial", "comb", "perm", "gcd", "lcm"})
_MATH_BOOL = frozenset({"isnan", "isinf", "isfinite", "isclose"})
_MATH_PAIRS = frozenset({"modf", "frexp"})  # (a tuple: not a real function of reals)
# attributes of an array that describe its storage, not values with derivatives
# (their types; ``flags`` is an object of its own, written by ``setflags``)
_ARRAY_METADATA = {
    "shape": SHAPE,
    "strides": SHAPE,
    "ndim": int,
    "size": int,
    "itemsize": int,
    "nbytes": int,
    "dtype": np.dtype,
    "flags": ANY,
}
#: of those, the ones read off a value of unknown type as an array's, with a check when it runs
_CHECKED_METADATA = frozenset({"shape", "strides", "ndim", "size", "itemsize", "nbytes", "dtype"})
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
    if is_arraylike(a) and is_arraylike(b):
        return ARRAYLIKE
    return ANY


def is_arraylike(t) -> bool:
    """Whether a value of the static type ``t`` is a NumPy array or scalar (or an engine's stand-in for one)."""
    if t is ARRAYLIKE or isinstance(t, ArrayType):
        return True
    return isinstance(t, type) and issubclass(t, (np.ndarray, np.generic, ActiveValue))


#: operators that give an array when an operand is one (and the others are arrays or numbers)
_ARRAY_OPS = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos", "abs"})
#: NumPy functions that return an array (or a NumPy scalar) whatever their arguments
_MAKES_ARRAY = frozenset(
    {np.array, np.asarray, np.asanyarray, np.zeros, np.ones, np.empty, np.full, np.arange, np.linspace, np.eye}
    | {np.identity, np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.copy}
)
#: NumPy functions that return an array (or a NumPy scalar) when given arrays and numbers
_ARRAY_FUNCTIONS = frozenset(
    {np.where, np.clip, np.dot, np.einsum, np.concatenate, np.stack, np.vstack, np.hstack, np.reshape}
    | {np.transpose, np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.std, np.var, np.cumsum}
    | {np.cumprod, np.diff, np.outer, np.inner, np.tensordot, np.squeeze, np.expand_dims, np.take, np.sort}
    | {np.flip, np.roll, np.pad, np.tile, np.repeat, np.tril, np.triu, np.diag, np.trace, np.kron, np.convolve}
    | {np.linalg.inv, np.linalg.solve, np.linalg.cholesky, np.linalg.det, np.linalg.norm, np.linalg.pinv}
)


#: array functions whose result's dtype and dimensions follow from their arguments' (and options')
#: alone, never from their sizes (unlike ``np.squeeze``), so a run on small arrays tells them
_EVALUABLE = frozenset(
    {np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.std, np.var, np.cumsum, np.cumprod}
    | {np.dot, np.inner, np.outer, np.tensordot, np.einsum, np.transpose, np.clip, np.where, np.flip, np.roll}
    | {np.sort, np.tril, np.triu, np.trace, np.kron, np.diff}
    | {np.linalg.inv, np.linalg.solve, np.linalg.det, np.linalg.norm, np.linalg.cholesky, np.linalg.pinv}
)
#: the array methods of the same kind
_ARRAY_METHODS = frozenset(
    {"sum", "mean", "prod", "max", "min", "std", "var", "cumsum", "cumprod", "transpose", "copy", "conj"}
    | {"conjugate", "dot", "clip", "ravel", "flatten"}
)


def _keywords(expr) -> tuple:
    return tuple((k.name, k.value) for k in expr.kwargs)


def _users_class(f) -> bool:
    """Whether ``f`` is a plain class of the user's (not of Python or NumPy, no metaclass), whose
    call makes an instance of it."""
    if type(f) is not type or issubclass(f, (np.ndarray, np.generic)):
        return False
    module = getattr(f, "__module__", "") or ""
    return module != "builtins" and module.split(".")[0] != "numpy"


def _array_result(ts: list) -> bool:
    """Whether operands of the static types ``ts`` make an array: one is, and the rest are arrays or numbers."""
    return any(is_arraylike(t) for t in ts) and all(is_arraylike(t) or is_real(t) or t is bool for t in ts)


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
    loops_of: dict = dataclasses.field(default_factory=dict)
    bound_in: dict = dataclasses.field(default_factory=dict)
    range_loops: set = dataclasses.field(default_factory=set)
    buffers: dict = dataclasses.field(default_factory=dict)
    available: object = None
    direct: dict = dataclasses.field(default_factory=dict)
    effects: object = None  # effects.Effects: calls made through the dispatcher, checked writes
    #: statements reading an array's metadata off a value of unknown type, checked when they run
    metadata_checks: set = dataclasses.field(default_factory=set)
    #: argument or captured variable -> path -> type: the elements of structures passed in whose
    #: types the plan relies on, which the guard checks (see ``_Analysis.relied``)
    relied: dict = dataclasses.field(default_factory=dict)
    #: argument or captured variable -> its ``StructType``: the structures passed in that are read
    #: only element by element with constant keys (mode ``element``), whose cotangents the adjoint
    #: keeps one per element and builds once (see ``_Analysis.element_inputs``)
    elements: dict = dataclasses.field(default_factory=dict)
    #: statement of mode ``element`` -> the keys it reads: ``(key,)`` for ``p[key]``/``p.key``, the
    #: positions for ``a, b = p`` (a position for a tuple's or list's element, a namedtuple's
    #: included; the key of a dict's; the field name of a dataclass's)
    element_keys: dict = dataclasses.field(default_factory=dict)

    def stable(self, name: str) -> bool:
        """Whether ``name`` keeps one value for the whole call (bound at most once, not in a loop)."""
        return self.assignments.get(name, 0) <= 1 and not any(name in bound for bound in self.bound_in.values())

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
    def __init__(
        self,
        fn: ir.Function,
        param_types: dict,
        free_types: dict,
        globals_: dict,
        filename: str,
        constants: frozenset = frozenset(),
    ):
        self.fn = fn
        self.freevars = set(free_types)
        self.filename = filename
        self.globals = globals_
        self.types: dict[str, object] = {}
        self.active: set[str] = set()
        self.local = set(fn.params()) | set(free_types)
        for stmt in ir.walk(fn.body):
            self.local.update(stmt.targets())
        #: variables bound to a structure whose element types are known (see ``struct_of``), each
        #: with where it comes from: the argument or captured variable and the path to it inside
        self.structs: dict[str, StructType] = {}
        self.origin: dict[str, tuple[str, tuple]] = {}
        #: argument or captured variable -> the paths of the elements whose types the plan relies
        #: on, with their types: what the guard of the specialization checks
        self.relied: dict[str, dict[tuple, object]] = {}
        for name, t in {**param_types, **free_types}.items():
            if isinstance(t, StructType):
                self.structs[name], self.origin[name] = t, (name, ())
            self.types[name] = class_of(t)
            if t not in INACTIVE_TYPES and name not in constants:
                self.active.add(name)
        # no argument or captured value is an engine's stand-in (a dual number), so no value here is
        # one either: rules typed on stand-ins are never selected (see `_untyped_only`)
        self.plain_inputs = all(_is_plain_type(t) for t in (*param_types.values(), *free_types.values()))
        self.static: dict[str, object] = {}
        self.guards: dict[str, object] = {}
        self.direct: dict[int, object] = {}
        self.checked_rules: dict[int, object] = {}  # id of a user's rule called directly -> its checked form
        #: the statements reading an element of a known type (``Unpack``: all the elements)
        self.struct_reads: set[int] = set()
        self.evaluated: dict[tuple, object] = {}  # see `evaluated_type`

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
            if expr.op in ("neg", "pos") and is_real(ts[0]):
                return ts[0]
            if expr.op in ("add", "sub", "mul", "truediv") and all(is_real(t) for t in ts):
                return _arith_type(expr.op, ts)
            if expr.op == "pow" and self._int_exponent(expr.operands_[1]) and is_real(ts[0]):
                if ts[0] is int and isinstance(expr.operands_[1], ir.Const) and expr.operands_[1].value >= 0:
                    return int
                return _arith_type("truediv", ts[:1])
            if expr.op in _ARRAY_OPS and _array_result(ts):
                return self.evaluated_type(getattr(operator, expr.op), expr.operands_)
            return ANY
        if isinstance(expr, (ir.Call, ir.MethodCall)):
            return self.call_type(expr)
        if isinstance(expr, ir.GetAttr):
            owner = self.resolve(expr.obj)
            if isinstance(owner, types.ModuleType):
                value = getattr(owner, expr.name, _MISSING)
                return type(value) if value is not _MISSING else ANY
            if self.array_metadata(expr):
                return _ARRAY_METADATA[expr.name]
            if expr.name in ("T", "real", "imag") and isinstance(self.type_of(expr.obj), ArrayType):
                return self.evaluated_type(("attribute", expr.name), [expr.obj])
            return ANY
        if isinstance(expr, ir.GetItem):
            owner = self.type_of(expr.obj)
            if isinstance(owner, ArrayType) and self.integer_key(expr.index, owner):
                return owner.element(self.integer_key(expr.index, owner))
            if isinstance(owner, ArrayType) and self.type_of(expr.index) is slice:
                return owner  # a view: x[1:], x[::2]
            if owner is SHAPE:  # x.shape[0], x.shape[1:]
                return {int: int, slice: SHAPE}.get(self.type_of(expr.index), ANY)
            if owner is ARRAYLIKE or isinstance(owner, ArrayType):
                return ARRAYLIKE  # an element or a part of an array
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

    @staticmethod
    def plain_call(expr: ir.Call | ir.MethodCall) -> bool:
        """No ``*args``, ``**kwargs`` or ``out=``."""
        return not any(a.starred for a in expr.args) and all(k.name not in (None, "out") for k in expr.kwargs)

    def evaluated_type(self, f, operands, keywords=()) -> object:
        """The type of ``f(*operands, **keywords)`` (an operator, a ufunc or an array function of
        arrays, numbers and constant options) when the operands' types fix it: ``f`` run on small
        arrays of the operands' dtypes and dimensions (and on the constants themselves), with every
        run-time type a real scalar may have; else ``ARRAYLIKE``. NumPy's result dtype and
        dimensions depend on the operands' only (NEP 50), so the guard on the arguments' types
        covers what follows from them. ``f`` may be ``("method", name)`` or ``("attribute", name)``
        of the first operand."""
        choices, key = [], []
        for x in (*operands, *(value for _, value in keywords)):
            if isinstance(x, ir.Const):
                if not _option(x.value):
                    return ARRAYLIKE
                choices.append((x.value,))
                key.append(("const", type(x.value), x.value))
            else:
                samples = _result_samples(self.type_of(x))
                if not samples:
                    return ARRAYLIKE
                choices.append(samples)
                key.append(tuple((type(v), getattr(v, "dtype", None), np.ndim(v)) for v in samples))
        names = tuple(name for name, _ in keywords)
        key = (f, names, tuple(key))
        found = self.evaluated.get(key, _MISSING)
        if found is _MISSING:
            found = self.evaluated[key] = _evaluate_type(f, choices, len(operands), names)
        return found

    def _int_exponent(self, x: ir.Operand) -> bool:
        return self.type_of(x) is int and not self.is_active(x)

    def call_type(self, expr: ir.Call | ir.MethodCall) -> object:
        f = self.call_target(expr)
        if f is _MISSING:
            if isinstance(expr, ir.MethodCall) and expr.name in _ARRAY_METHODS:
                if isinstance(self.type_of(expr.obj), ArrayType) and self.plain_call(expr):
                    return self.evaluated_type(
                        ("method", expr.name), [expr.obj, *(a.value for a in expr.args)], _keywords(expr)
                    )
            return ANY
        args = [self.type_of(a.value) for a in expr.args]
        if getattr(f, "__module__", None) == "math" or getattr(f, "__self__", None) is math:
            name = f.__name__
            if name in _MATH_BOOL:
                return bool
            if name in _MATH_INT:
                return int
            if name in _MATH_PAIRS:
                return ANY
            return float if all(is_real(t) for t in args) else ANY
        known = {len: int, float: float, int: int, bool: bool, isinstance: bool, range: range, str: str}
        if f is float and not self.plain_inputs and any(self.is_active(a.value) for a in expr.args):
            return ANY  # (float() of an engine's value, a dual under a Hessian, is that value: see rrule_float)
        if f in known:
            return known[f]
        if f is abs and len(args) == 1 and is_real(args[0]):
            return args[0]
        try:
            if (isinstance(f, np.ufunc) or f in _EVALUABLE) and _array_result(args):
                if not self.plain_call(expr) or (isinstance(f, np.ufunc) and expr.kwargs):
                    return ARRAYLIKE
                return self.evaluated_type(f, [a.value for a in expr.args], _keywords(expr))
            if f in _MAKES_ARRAY or f in _ARRAY_FUNCTIONS and _array_result(args):
                return ARRAYLIKE
        except TypeError:  # an unhashable callable
            pass
        if _users_class(f):
            return f  # its instance: an object of the user's, whose attributes are followed as they are
        return ANY

    def nondifferentiable(self, expr) -> bool:
        if isinstance(expr, ir.Op):
            return expr.op in NONDIFF_OPS
        if isinstance(expr, ir.GetAttr):
            return self.array_metadata(expr)
        if isinstance(expr, (ir.Call, ir.MethodCall)):
            f = self.call_target(expr)
            if f is not _MISSING:
                rule = _MISSING
                if not any(a.starred for a in expr.args):
                    rule = static_lookup(rrule, f, [self.type_of(a.value) for a in expr.args])
                if rule is _MISSING:
                    if has_typed_rules(f):
                        return False  # the rule depends on argument types not known here
                    try:
                        rule = rrule.lookup(f, ())
                    except TypeError:
                        return False
                return getattr(rule, "__code__", None) is _NONDIFF_CODE
        return isinstance(expr, (ir.BuildSlice, ir.Opaque))

    def array_metadata(self, expr: ir.GetAttr) -> bool:
        """Whether ``expr`` reads a fact about an array's storage (``x.shape``, ``x.dtype``): a plain
        value, with no derivative. So it is of an array or an engine's stand-in for one, and taken
        to be of a value of unknown type (what a call of a library returned), which the primal then
        checks when it runs (see ``assumed_metadata``)."""
        if expr.name not in _ARRAY_METADATA:
            return False
        return is_arraylike(self.type_of(expr.obj)) or self.assumed_metadata(expr)

    def assumed_metadata(self, expr: ir.GetAttr) -> bool:
        """Whether ``expr`` reads ``.shape``, ``.ndim``, ``.size``, ``.dtype``, ... of a value of
        unknown type: almost always an array's (``np.tanh(X @ w).shape``), a size or an option with
        no derivative, which a call may take without a rule (``rng.normal(0, 1, h.shape)``). The
        generated primal checks that the value read is one (``check_metadata``), and refuses it
        otherwise, so a number of an object of the user's never loses its derivative."""
        return expr.name in _CHECKED_METADATA and self.type_of(expr.obj) is ANY

    def expr_active(self, expr) -> bool:
        if self.nondifferentiable(expr):
            return False
        return any(self.is_active(x) for x in expr.operands())

    # -- loops --
    def structure(self, stmts):
        """For each statement the loops around it (outermost first); for each loop the
        variables bound inside it; the ``for`` loops over a ``range``."""
        self.loops_of: dict[int, tuple] = {}
        self.bound_in: dict[int, set[str]] = {}
        self.counts: dict[str, int] = {p: 1 for p in self.fn.params()}
        for stmt in stmts:
            for target in stmt.targets():
                self.counts[target] = self.counts.get(target, 0) + 1

        def visit(block, loops):
            for stmt in block:
                self.loops_of[stmt.index] = loops
                for loop in loops:
                    self.bound_in[loop.index].update(stmt.targets())
                inner = loops
                if isinstance(stmt, (ir.For, ir.While)):
                    self.bound_in[stmt.index] = set(stmt.targets())
                    inner = (*loops, stmt)
                    if isinstance(stmt, ir.While):
                        visit(stmt.test_block, inner)
                        visit(stmt.body, inner)
                        continue
                for sub in stmt.blocks():
                    visit(sub, inner)

        visit(self.fn.body, ())
        definitions = {s.target: s for s in stmts if isinstance(s, ir.Assign)}
        self.range_loops = set()
        for stmt in stmts:
            if isinstance(stmt, ir.For) and isinstance(stmt.iterable, str):
                made = definitions.get(stmt.iterable)
                if (
                    isinstance(made, ir.Assign)
                    and isinstance(made.expr, ir.Call)
                    and self.counts.get(stmt.iterable) == 1
                ):
                    if self.call_target(made.expr) is range:
                        self.range_loops.add(stmt.index)

    def available(self, x: ir.Operand, stmt) -> bool:
        """Whether the reverse pass can read ``x``'s value at ``stmt`` without saving it: a
        constant, a variable bound once outside the loops around ``stmt``, or the target of an
        enclosing loop over a ``range`` (the reverse loop runs over it backwards)."""
        if not isinstance(x, str) or x not in self.local:
            return True
        loops = self.loops_of.get(stmt.index, ())
        if self.counts.get(x, 0) <= 1 and not any(x in self.bound_in[loop.index] for loop in loops):
            return True
        for loop in loops:
            if isinstance(loop, ir.For) and loop.target == x and loop.index in self.range_loops:
                return self.counts.get(x, 0) == 1
        return False

    # -- the elements of structures --
    def prepare_structs(self, stmts) -> None:
        """Where the element types of structures hold: a name keeps its structure's type only when
        it is bound once (an argument or captured variable never rebound); a list, a dict or a
        dataclass instance may be changed by a statement that writes into a container or calls
        code that might (``may_write``), so its elements are typed only where no such statement
        can have run before (see ``struct_of``)."""
        for name in list(self.structs):
            bound = self.counts.get(name, 0) - (name in self.fn.params())
            if bound:
                del self.structs[name], self.origin[name]
        self.functions = {s.target for s in stmts if isinstance(s, ir.Assign) and isinstance(s.expr, ir.MakeFunction)}
        self.definitions = {s.target: s for s in stmts if isinstance(s, ir.Assign)}
        self.position = {stmt.index: i for i, stmt in enumerate(stmts)}
        writes = [stmt for stmt in stmts if self.may_write(stmt)]
        self.first_write = min((self.position[s.index] for s in writes), default=len(stmts))
        self.loops_writing = {loop.index for s in writes for loop in self.loops_of[s.index]}

    def may_write(self, stmt) -> bool:
        """Whether ``stmt`` may change a structure passed in: it runs a context manager, writes into
        a container not made here, or calls something not known to write into nothing (a rule, a
        ufunc, a pure built-in type, given no output argument and no function of the user's)."""
        if isinstance(stmt, ir.With):
            return True
        if isinstance(stmt, (ir.SetItem, ir.Mutate)):
            return stmt.obj not in self.local or stmt.obj in self.fn.params() or stmt.obj in self.freevars
        if not (isinstance(stmt, ir.Assign) and isinstance(stmt.expr, (ir.Call, ir.MethodCall))):
            return False
        from .effects import _PURE_TYPES, _has_pure_rule, _is_record_type, _may_call_back, known_write

        expr = stmt.expr
        f = self.call_target(expr)
        if f is _MISSING or any(a.starred for a in expr.args) or any(k.name in (None, "out") for k in expr.kwargs):
            return True
        if isinstance(f, np.ufunc) and len(expr.args) > f.nin:  # an output given positionally
            return True
        for x in expr.operands()[1:] if isinstance(expr, ir.Call) else expr.operands():
            if not isinstance(x, str):
                continue
            if x in self.local:  # (a local variable is a function when the function binds it to one)
                t = self.types.get(x) if x in self.fn.params() or x in self.freevars else None
                callback = x in self.functions or (t is not None and _may_call_back(t))
            else:  # a global function of the user's (not a module, a built-in, a class, a ufunc)
                callback = self.resolve(x) is _MISSING and callable(self.globals.get(x))
            if callback:
                return True  # a callable the callee might call
        if known_write(f) is not None:
            return True
        if isinstance(f, type):
            return not (f in _PURE_TYPES or _is_record_type(f))
        return not (isinstance(f, np.ufunc) or _has_pure_rule(f, [ANY] * len(expr.args)))

    def struct_of(self, x: ir.Operand, stmt) -> StructType | None:
        """The type of the structure ``x`` at ``stmt`` when its elements' types are known there: a
        tuple's elements never change (a captured variable may be rebound by the code a call runs);
        anything else's, only while nothing that may write into it (``may_write``) can have run."""
        t = self.structs.get(x) if isinstance(x, str) else None
        if t is None:
            return None
        if t.kind == "tuple" and x not in self.freevars:
            return t
        if self.position[stmt.index] < self.first_write and not any(
            loop.index in self.loops_writing for loop in self.loops_of[stmt.index]
        ):
            return t
        return None

    def element(self, x: str, struct: StructType, key, target: str | None):
        """The type of ``x``'s element at ``key`` (a constant index, key or field name), noted as
        relied on by the guard, and given to ``target`` when it is a structure; None when unknown."""
        t = struct.item(key)
        if t is None:
            return None
        origin = self.origin[x]
        if origin is not None:  # (a display the function built relies on nothing passed in)
            root, path = origin
            origin = (root, (*path, struct.position(key)))
            self.relied.setdefault(root, {})[origin[1]] = t
        if target is not None and isinstance(t, StructType) and self.counts.get(target, 0) == 1:
            self.structs[target], self.origin[target] = t, origin
        return class_of(t)

    def struct_read(self, stmt: ir.Assign):
        """The type of the value ``stmt`` reads out of a structure of known element types (``p[0]``,
        ``p["W"]``, ``p.W``, or ``q = p``), or None."""
        expr = stmt.expr
        if isinstance(expr, ir.Build) and expr.kind in ("tuple", "list") and self.counts.get(stmt.target, 0) == 1:
            # a display (`W, b = p["W"], p["b"]` unpacks one): the types of its items, as they are now
            items = [self.type_of(item.value) for item in expr.items]
            if not any(item.starred for item in expr.items) and None not in items:
                cls = tuple if expr.kind == "tuple" else list
                self.structs[stmt.target] = StructType(expr.kind, cls, tuple(enumerate(items)))
                self.origin[stmt.target] = None
            return None
        if isinstance(expr, ir.BuildDict) and self.counts.get(stmt.target, 0) == 1:
            keys = [k.value if isinstance(k, ir.Const) and type(k.value) is str else None for k, _ in expr.items]
            items = [self.type_of(v) for _, v in expr.items]
            if None not in keys and None not in items and len(set(keys)) == len(keys):
                self.structs[stmt.target] = StructType("dict", dict, tuple(zip(keys, items)))
                self.origin[stmt.target] = None
            return None
        if isinstance(expr, ir.Copy):
            struct = self.struct_of(expr.value, stmt)
            if struct is not None and self.counts.get(stmt.target, 0) == 1:
                self.structs[stmt.target], self.origin[stmt.target] = struct, self.origin[expr.value]
            return None  # its type is its class, as for any copy
        t = None
        key = self.constant(expr.index) if isinstance(expr, ir.GetItem) else _MISSING
        if key is not _MISSING:
            struct = self.struct_of(expr.obj, stmt)
            if struct is not None and struct.kind != "fields" and type(key) in (int, str):
                if (struct.kind == "dict") == isinstance(key, str):
                    t = self.element(expr.obj, struct, key, stmt.target)
        if isinstance(expr, ir.GetAttr):
            struct = self.struct_of(expr.obj, stmt)
            if struct is not None and (struct.kind == "fields" or hasattr(struct.cls, "_fields")):
                t = self.element(expr.obj, struct, expr.name, stmt.target)
        if t is not None:
            self.struct_reads.add(stmt.index)
        return t

    def constant(self, x: ir.Operand):
        """The value of a constant index: ``ir.Const``, or a variable bound once to a negated integer
        constant (``p[-1]`` is lowered to ``y_1 = neg(1); p[y_1]``); else ``_MISSING``."""
        if isinstance(x, ir.Const):
            return x.value
        made = self.definitions.get(x)
        if made is not None and self.counts.get(x) == 1 and isinstance(made.expr, ir.Op) and made.expr.op == "neg":
            (operand,) = made.expr.operands_
            if isinstance(operand, ir.Const) and type(operand.value) is int:
                return -operand.value
        return _MISSING

    def struct_items(self, stmt):
        """The types of the names an ``Unpack`` or ``For`` over a tuple or list of known element types
        binds (``a, b = p``; ``for w in p`` when every element has the same type), or None."""
        value = stmt.value if isinstance(stmt, ir.Unpack) else stmt.iterable
        struct = self.struct_of(value, stmt)
        if struct is None or struct.kind not in ("tuple", "list"):
            return None
        if isinstance(stmt, ir.Unpack):
            if stmt.star is not None or len(stmt.names) != len(struct.items):
                return None
            self.struct_reads.add(stmt.index)
            return [self.element(value, struct, i, name) for i, name in enumerate(stmt.names)]
        kinds = {t for _, t in struct.items}
        if len(kinds) != 1:
            return None
        if (struct.kind != "tuple" or value in self.freevars) and stmt.index in self.loops_writing:
            return None  # the loop reads each element after its body ran, which may write into the list
        # (each element noted; the loop's variable is not followed as a structure: it is each in turn)
        return [[self.element(value, struct, i, None) for i in range(len(struct.items))][0]]

    # -- the fixed points --
    def run(self) -> Plan:
        self.attr_values: dict[str, object] = {}
        stmts = list(ir.walk(self.fn.body))
        self.structure(stmts)
        self.prepare_structs(stmts)
        changed = True
        while changed:
            changed = False
            known = dict(self.structs)
            for stmt in stmts:
                for target, t, active in self.effects(stmt):
                    new_t = join(self.types.get(target), t)
                    if new_t != self.types.get(target):
                        self.types[target] = new_t
                        changed = True
                    if active and new_t not in INACTIVE_TYPES and target not in self.active:
                        self.active.add(target)
                        changed = True
            changed = changed or self.structs != known
        useful = self.usefulness(stmts)
        mode = self.modes(stmts, useful)
        elements, element_keys = self.element_inputs(stmts, mode)
        assignments: dict[str, int] = {p: 1 for p in self.fn.params()}
        for stmt in stmts:
            for target in stmt.targets():
                assignments[target] = assignments.get(target, 0) + 1
        guards = tuple((name, value) for name, value in sorted(self.static.items(), key=lambda kv: kv[0]))
        buffers = self.buffers(stmts)
        plan = Plan(self.fn, self.types, self.active, useful, mode, self.static, guards, assignments)
        plan.loops_of, plan.bound_in, plan.range_loops = self.loops_of, self.bound_in, self.range_loops
        plan.available = self.available
        plan.buffers = buffers
        plan.direct = self.direct
        plan.call_target = self.call_target
        plan.relied = self.relied
        plan.elements, plan.element_keys = elements, element_keys
        plan.metadata_checks = {
            stmt.index
            for stmt in stmts
            if isinstance(stmt, ir.Assign) and isinstance(stmt.expr, ir.GetAttr) and self.assumed_metadata(stmt.expr)
        }
        from . import effects  # effects builds on this module's analysis

        plan.effects = effects.analyze(self, stmts, mode, buffers)
        return plan

    def element_inputs(self, stmts, mode: dict) -> tuple[dict, dict]:
        """The active structures passed in (arguments and captured variables) that the function reads
        only element by element with constant keys (``p["W"]``, ``p.W``, ``p[0]``, ``a, b = p``),
        where their element types are known: each such read gets the mode ``element`` (the
        element is read as Python; its cotangent is added into a cotangent kept for that element
        alone, and the structure's is built once from them). A structure also used whole (passed
        to a call, returned, iterated, captured, read with another key) keeps the reads' pullbacks.
        Returns ``(elements, element_keys)`` (see ``Plan``)."""
        inputs = {
            name: t
            for name, t in self.structs.items()
            if self.origin.get(name) == (name, ())
            and name in self.active
            and (name in self.fn.params() or name in self.freevars)
        }
        reads: dict[str, list] = {name: [] for name in inputs}
        for stmt in stmts:
            for name in {x for x in stmt.operands() if isinstance(x, str) and x in reads}:
                keys = self.element_read(stmt, name, inputs[name])
                if keys is None:
                    del reads[name]
                else:
                    reads[name].append((stmt, keys))
        elements, element_keys = {}, {}
        for name, found in reads.items():
            used = [(stmt, keys) for stmt, keys in found if mode[stmt.index] != "plain"]
            if not used:
                continue
            elements[name] = inputs[name]
            for stmt, keys in used:
                mode[stmt.index] = "element"
                element_keys[stmt.index] = keys
                self.direct.pop(stmt.index, None)
        return elements, element_keys

    def element_read(self, stmt, name: str, struct: StructType) -> tuple | None:
        """The keys of ``name``'s elements that ``stmt`` reads when it reads only elements of it, each
        at a constant key where its type is known (see ``element_inputs``); else None."""
        if isinstance(stmt, ir.Assign) and stmt.index in self.struct_reads and stmt.expr.obj == name:
            expr = stmt.expr
            if isinstance(expr, ir.GetItem) and expr.index != name:
                key = struct.position(self.constant(expr.index))
            elif isinstance(expr, ir.GetAttr):
                key = struct.position(expr.name)
            else:
                return None
            return (key,)
        if isinstance(stmt, ir.Unpack) and stmt.index in self.struct_reads and stmt.value == name:
            return tuple(range(len(struct.items)))
        return None

    # -- containers written in place --
    def buffers(self, stmts) -> dict[str, str]:
        """The variables written in place (``x[i] = v``, ``x.append(v)``), each with how it is
        first bound. Each must be a local variable bound to a new object (a call's result, an
        operator's, a display or a comprehension): a parameter, a captured or global variable,
        or another name for an existing object would be written behind someone's back."""
        written: dict[str, ir.Stmt] = {}
        for stmt in stmts:
            if isinstance(stmt, (ir.SetItem, ir.Mutate)):
                written.setdefault(stmt.obj, stmt)
        found = {}
        params = set(self.fn.params())
        bound = {t for stmt in stmts if not isinstance(stmt, (ir.SetItem, ir.Mutate)) for t in stmt.targets()}
        for name, write in written.items():
            if name not in params and name not in bound and name not in self.freevars:
                # a global container (a log, a cache): written as it is; the effects pass refuses
                # the write where the function reads it back or a pullback may hold it
                continue
            if (name in params and not self.copied_first(name, stmts)) or name not in bound or name in self.freevars:
                what = "argument" if name in params else "captured or global variable"
                self.refuse(
                    write,
                    f"writing into the {what} `{name}` in place is not supported: work on a copy "
                    f"(`{name} = {name}.copy()`) or build a new value",
                )
            for stmt in stmts:
                if isinstance(stmt, ir.Assign) and stmt.target == name:
                    if not isinstance(
                        stmt.expr, (ir.Call, ir.MethodCall, ir.Op, ir.Build, ir.BuildDict)
                    ) and not self.handed_over(stmt, stmts):
                        self.refuse(
                            stmt,
                            f"`{name}` is written in place later, so it must be bound to a new object here "
                            f"(for example `{name} = ....copy()`), not to an existing one",
                        )
                elif isinstance(stmt, (ir.Unpack, ir.For, ir.With, ir.Try, ir.Plain)) and name in stmt.targets():
                    self.refuse(stmt, f"`{name}` is written in place later, so it must be bound to a new object")
            found[name] = "new"
        return found

    def copied_first(self, name: str, stmts) -> bool:
        """Whether the parameter ``name`` is bound to its copy (``A = A.copy()``) by a statement of the
        function's own body (in no branch or loop) before every write into it: the writes go into
        the copy, never into the caller's argument."""
        first = next((s for s in self.fn.body if isinstance(s, ir.Assign) and s.target == name), None)
        if first is None or not ir.copies_itself(first):
            return False
        for stmt in stmts:
            if stmt is first:
                return True
            if isinstance(stmt, (ir.SetItem, ir.Mutate)) and stmt.obj == name:
                return False
        return False

    def handed_over(self, binding: ir.Assign, stmts) -> bool:
        """Whether ``binding`` is ``name = other`` where ``other`` is a local variable bound only to
        new containers (a comprehension's list, ``[]``, ``{}``) that nothing but writes into it and
        this binding uses: ``name`` becomes the one holder of the object (``xs = [... for ...]``)."""
        other = binding.expr.value if isinstance(binding.expr, ir.Copy) else None
        if not isinstance(other, str) or other in self.fn.params() or other in self.freevars or other not in self.local:
            return False
        for stmt in stmts:
            if stmt is binding:
                continue
            if isinstance(stmt, (ir.SetItem, ir.Mutate)) and stmt.obj == other:
                if other in (getattr(stmt, "key", None), stmt.value):
                    return False
                continue
            if other in stmt.targets():
                if not (isinstance(stmt, ir.Assign) and isinstance(stmt.expr, (ir.Build, ir.BuildDict))):
                    return False
            elif other in stmt.operands():
                return False
        return True

    def effects(self, stmt):
        if isinstance(stmt, ir.Assign):
            expr = stmt.expr
            callee = self.callee(expr)
            if callee is not _MISSING and isinstance(expr, ir.GetAttr):
                self.attr_values[stmt.target] = callee
            t = self.struct_read(stmt)
            return [(stmt.target, self.expr_type(expr) if t is None else t, self.expr_active(expr))]
        if isinstance(stmt, ir.Unpack):
            active = self.is_active(stmt.value)
            items = self.struct_items(stmt)
            if items is not None:
                return [(name, t, active) for name, t in zip(stmt.names, items)]
            item = int if self.type_of(stmt.value) is SHAPE else ANY  # n, m = x.shape
            return [(name, item, active) for name in stmt.names]
        if isinstance(stmt, ir.Plain):
            return [(name, types.ModuleType, False) for name in stmt.names]
        if isinstance(stmt, ir.For):
            iterable = self.type_of(stmt.iterable)
            target = int if iterable is range else iterable.element() if isinstance(iterable, ArrayType) else ANY
            items = self.struct_items(stmt)
            target = target if items is None else items[0]
            return [(stmt.target, target, self.is_active(stmt.iterable))]
        if isinstance(stmt, (ir.SetItem, ir.Mutate)):
            # a write makes the container active when the value is; its type stays
            return [(stmt.obj, self.types.get(stmt.obj), self.is_active(stmt.value))]
        if isinstance(stmt, ir.With):
            for context, name in stmt.contexts:
                if name and self.is_active(context):
                    self.refuse(
                        stmt,
                        f"`with ... as {name}` binds what the context manager's __enter__ returns, which depends "
                        "on differentiated values here and which the engine cannot differentiate; bind the value "
                        "before the `with` statement",
                    )
            return [(name, ANY, False) for name in stmt.targets()]  # a context
        if isinstance(stmt, ir.Try):
            # an exception, which may carry differentiated values (`raise Found(t)`): what is read
            # out of it goes through rules, which refuse it, rather than count as a constant
            return [(name, ANY, True) for name in stmt.targets()]
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
                elif isinstance(stmt, (ir.SetItem, ir.Mutate)) and stmt.obj in useful:
                    feeds = (stmt.value,)
                elif isinstance(stmt, ir.For) and stmt.target in useful:
                    feeds = (stmt.iterable,)
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
        # a compound statement needs its adjoint when anything inside it has one, or when it
        # rebinds a variable whose cotangent is live (`y = 0.0` in a branch): on the paths
        # through it, the adjoint resets that cotangent, as the earlier value of `y` is gone
        compound = {ir.If: "branch", ir.For: "loop", ir.While: "loop", ir.With: "block", ir.Try: "block"}
        for stmt in reversed(stmts):
            kind = compound.get(type(stmt))
            if kind is not None:
                inner = [s for block in stmt.blocks() for s in ir.walk(block)]
                if any(mode[s.index] != "plain" or self.rebinds_live(s, useful) for s in inner) or (
                    isinstance(stmt, ir.For) and self.binds_live_target(stmt, useful)
                ):
                    mode[stmt.index] = kind
                if isinstance(stmt, ir.While) and any(mode[s.index] != "plain" for s in ir.walk(stmt.test_block)):
                    self.refuse(stmt, "the condition of a `while` loop computes a value the result depends on")
        return mode

    def rebinds_live(self, stmt, useful) -> bool:
        """Whether ``stmt`` binds a variable that is also bound elsewhere (or again in a loop) and
        whose cotangent may reach the result: its adjoint must reset that cotangent there."""
        if isinstance(stmt, (ir.SetItem, ir.Mutate)):
            return False  # a write changes a container, whose cotangent the write's own adjoint takes
        return any(
            name in self.active and name in useful and (self.counts.get(name, 0) > 1 or self.loops_of.get(stmt.index))
            for name in stmt.targets()
        )

    def binds_live_target(self, stmt: ir.For, useful) -> bool:
        """Whether the loop's target carries a cotangent out of it (`for v in x: ...` then `v * 2.0`
        after the loop: the last item's), or rebinds a variable whose cotangent is live."""
        target = stmt.target
        return target in useful and (self.is_active(stmt.iterable) or self.rebinds_live(stmt, useful))

    def mode(self, stmt, useful) -> str:
        if isinstance(stmt, ir.Return):
            return "return"
        if isinstance(stmt, (ir.SetItem, ir.Mutate)):
            return "mutate" if stmt.obj in self.active and stmt.obj in useful else "plain"
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
        if isinstance(expr, ir.GetItem) and self.indexable(expr):
            return "index"
        if isinstance(expr, (ir.GetAttr, ir.GetItem)) and self.loops_of[stmt.index]:
            if all(self.available(x, stmt) for x in expr.operands()):
                return "recompute"  # indexing is cheap: its pullback is made again in the reverse pass
        if isinstance(expr, (ir.Call, ir.MethodCall)) and not _has_keywords(expr):
            forward = self.scalar_frule(expr)
            if forward is not None:
                self.direct[stmt.index] = forward
                return "scalar"
        if isinstance(expr, (ir.Call, ir.MethodCall, ir.Op)):
            rule = self.static_rule(expr)
            if rule is not None:
                self.direct[stmt.index] = rule
                return "pullback"
        if stmt.index in self.struct_reads:  # an element of a structure of a known class: its rule is known
            key = self.constant(expr.index) if isinstance(expr, ir.GetItem) else expr.name
            f = operator.getitem if isinstance(expr, ir.GetItem) else getattr
            rule = class_lookup(rrule, f, (self.types[expr.obj], type(key)))
            if rule is not _MISSING:
                self.direct[stmt.index] = rule
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
                    if name == expr.name and getattr(expr.node, "decorator_list", None):
                        # its decorators' result, bound after it: its tangent would come back too late
                        self.refuse(
                            stmt,
                            f"the decorated nested function `{name}` calls itself by its name, which holds what "
                            "the decorators made of it; this is not supported: recurse in an undecorated nested "
                            "function and decorate another that calls it",
                        )
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

    def static_rule(self, expr):
        """The rule a call (or an operator) will use, when its callee is known here and the rule
        is known for its argument types (or is the same for all of them); the specialization is
        rebuilt when a rule is registered or a global rebound. Keywords are passed on as written;
        ``out=``, which the dispatcher refuses, and ``**`` keep the call on the dispatcher. A rule of
        the user's (``is_users_rule``) is called with its pullback checked (``checked_rule``)."""
        if isinstance(expr, ir.Op):
            f = getattr(operator, expr.op, _MISSING)
            values = list(expr.operands_)
        else:
            f = self.call_target(expr)
            if any(a.starred for a in expr.args) or any(k.name in (None, "out") for k in expr.kwargs):
                return None
            values = [a.value for a in expr.args]
        if f is _MISSING or isinstance(f, type):
            return None
        rule = static_lookup(rrule, f, [self.type_of(v) for v in values], self.plain_inputs)
        if rule is None or rule is _MISSING:
            return None
        if is_users_rule(rule):  # what its pullback returns is checked, as the dispatcher checks it
            checked = self.checked_rules.get(id(rule))
            if checked is None:
                checked = self.checked_rules[id(rule)] = checked_rule(f, rule, codegen.calling_location)
            return checked
        return rule

    def scalar_frule(self, expr):
        """For a call of a real function of real scalars (``math.sin(x)``) with rules: its
        ``frule``, from which the reverse pass takes the partials (for a real scalar function
        the pullback of ``dy`` is the pushforward of ``dy``), so that no pullback is kept."""
        if not is_real(self.expr_type(expr)) or any(a.starred for a in expr.args) or not expr.args:
            return None
        ts = [self.type_of(a.value) for a in expr.args]
        if not all(is_real(t) for t in ts):
            return None
        f = self.call_target(expr)
        if f is _MISSING or isinstance(f, type):
            return None
        forward, reverse = static_lookup(frule, f, ts), static_lookup(rrule, f, ts)
        if forward in (None, _MISSING) or reverse in (None, _MISSING):
            return None
        if getattr(reverse, "__code__", None) is _NONDIFF_CODE or not _one_derivative(forward, reverse):
            return None
        return forward

    def indexable(self, expr: ir.GetItem) -> bool:
        """``x[i]`` (or ``x[i, j]``) on an array of known dtype with integer indices, whose rule is
        chainrules' own: its partial (add the cotangent at ``i``) is written out, like an operator's."""
        owner = self.type_of(expr.obj)
        if not isinstance(owner, ArrayType) or owner.dtype.kind != "f" or not self.integer_key(expr.index, owner):
            return False
        rule = rrule.lookup(operator.getitem, (_sample(owner), 0))
        return getattr(rule, "__module__", "").startswith("chainrules.rules.")

    def integer_key(self, key: ir.Operand, owner: ArrayType) -> int:
        """How many of ``owner``'s axes the key ``key`` takes away: 1 for an int, k for a tuple of k
        ints (``x[i, j]``: a display the function built) with k at most ``owner.ndim``; else 0."""
        if self.type_of(key) is int:
            return 1 if owner.ndim else 0
        struct = self.structs.get(key) if isinstance(key, str) else None
        if struct is None or struct.cls is not tuple or self.origin.get(key, ()) is not None:
            return 0  # (a tuple passed in has no guard on its elements here)
        if not 0 < len(struct.items) <= owner.ndim or any(t is not int for _, t in struct.items):
            return 0
        return len(struct.items)

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
        raise UnsupportedSyntaxError(message, self.filename, stmt.line, stmt.col or 1)


_SAMPLE = {int: 1, float: 1.0, np.float64: np.float64(1.0), REAL: 1.0}
# a real scalar may be any of int, float and numpy.float64 at run time: a typed rule may tell them apart
_SAMPLES = {int: (1,), float: (1.0,), np.float64: (np.float64(1.0),), REAL: (1, 1.0, np.float64(1.0))}
_LOOKUPS_AT_MOST = 64
# NumPy 2 casts by dtypes alone (NEP 50); NumPy 1 by the values of scalars, which a sample cannot stand for
_DTYPES_DECIDE = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _result_samples(t) -> tuple:
    """Values standing for every run-time value of the static type ``t`` whose dtype and
    dimensions fix a ufunc's or operator's result type (none: not known)."""
    if isinstance(t, ArrayType):
        return (np.ones((1,) * t.ndim, dtype=t.dtype),)
    if t in _SAMPLES and (_DTYPES_DECIDE or t is np.float64):
        return _SAMPLES[t]
    if isinstance(t, type) and issubclass(t, np.generic) and t is not np.object_ and _DTYPES_DECIDE:
        return (t(1),)
    return ()


def _option(value) -> bool:
    """A constant an array function's result type may be worked out with: a number, a string, a
    bool, None or a tuple of ints (``axis=(0, 1)``)."""
    if isinstance(value, tuple):
        return all(type(v) is int for v in value)
    return value is None or isinstance(value, (int, float, complex, str, np.generic))


def _evaluate_type(f, choices: list, positional: int, names: tuple) -> object:
    """The one type (as ``type_of_value`` gives it) of ``f``'s results on every combination of
    the sample values ``choices`` (``positional`` of them positional, then the keywords
    ``names``), or ``ARRAYLIKE``."""
    found = _MISSING
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for combination in itertools.product(*choices):
            args, kwargs = combination[:positional], dict(zip(names, combination[positional:]))
            try:
                if isinstance(f, tuple):  # ("method", name) or ("attribute", name) of the first operand
                    value = getattr(args[0], f[1])
                    result = value(*args[1:], **kwargs) if f[0] == "method" else value
                else:
                    result = f(*args, **kwargs)
                t = type_of_value(result)
            except Exception:  # (an operation NumPy refuses for these dtypes: left to run time)
                return ARRAYLIKE
            if not (isinstance(t, ArrayType) or (isinstance(t, type) and issubclass(t, np.generic))):
                return ARRAYLIKE  # a tuple of outputs (np.modf), an object array's element
            if found is not _MISSING and t != found:
                return ARRAYLIKE
            found = t
    return ARRAYLIKE if found is _MISSING or getattr(found, "dtype", None) == np.dtype(object) else found


def _sample(t):
    """A value of type ``t`` to select a typed rule with (None when there is none to make)."""
    if t in _SAMPLE:
        return _SAMPLE[t]
    if isinstance(t, ArrayType):
        return np.zeros((1,) * t.ndim, dtype=t.dtype)
    if t is np.ndarray:  # a captured array, of any dtype and shape: rules are chosen by type alone
        return np.zeros(())
    if t in (bool, type(None), str):
        return {bool: True, type(None): None, str: ""}[t]
    return _MISSING


def _samples(t) -> tuple:
    """Values standing for every run-time type the static type ``t`` covers (none: unknown)."""
    if t in _SAMPLES:
        return _SAMPLES[t]
    sample = _sample(t)
    return () if sample is _MISSING else (sample,)


def static_lookup(dispatcher, f, arg_types: list, plain_values: bool = False):
    """The rule ``dispatcher`` selects for ``f`` called with positional arguments of the static
    types ``arg_types``, when every call with such arguments selects the same rule (``None``: no
    rule); ``_MISSING`` when that is not known here. Typed rules and opt-outs select by the
    run-time types, so a static type standing for several (a real scalar) is looked up for each.
    ``plain_values``: no argument is an engine's stand-in for a number (a dual number), so rules
    typed on those are never selected.
    """
    if plain_values:
        untyped = _untyped_only(dispatcher, f)
        if untyped is not _MISSING:  # one rule whatever the (plain) arguments: no need to know their types
            return untyped
    choices = [_samples(t) for t in arg_types]
    if any(not c for c in choices) or np.prod([len(c) for c in choices]) > _LOOKUPS_AT_MOST:
        return _MISSING
    found = _MISSING
    for combination in itertools.product(*choices):
        try:
            rule = dispatcher.lookup(f, combination)
        except TypeError:
            return _MISSING
        if found is _MISSING:
            found = rule
        elif rule is not found:
            return _MISSING
    return found


def _entries(dispatcher, f):
    """The rules registered for ``f`` itself (not for instances of a class), or None (none, or an
    unhashable ``f``)."""
    try:
        return dispatcher._entries_for(f, False)
    except TypeError:
        return None


def class_lookup(dispatcher, f, classes: tuple):
    """The rule ``dispatcher`` selects for ``f`` called with arguments of exactly these classes
    (as ``lookup`` would for instances of them), or ``_MISSING`` when there is none."""
    entries = _entries(dispatcher, f)
    if entries is None:
        return _MISSING
    rule = entries.choose_for_classes(classes)
    return _MISSING if rule is None or rule is OPT_OUT else rule


def _untyped_only(dispatcher, f):
    """The rule of ``f`` for arguments none of which is an engine's stand-in for a number, when
    it is registered for all arguments and otherwise only for such stand-ins (the forward engine
    registers rules for dual numbers): the dispatcher selects it for every such call, as
    ``dispatcher.lookup`` does; else ``_MISSING``. A typed rule marked ``untyped_agrees`` (a sparse
    matrix's operators) does not count: the untyped rule reaches the same derivative for those types
    (through the operand's method and its rule), so selecting it is right whatever the types."""
    entries = _entries(dispatcher, f)
    if entries is None or entries.untyped is None:
        return _MISSING
    for types_, typed_rule in entries.typed:  # (one typed on a stand-in at any position needs one there)
        if not any(issubclass(t, ActiveValue) for t in types_) and not getattr(typed_rule, "untyped_agrees", False):
            return _MISSING
    rule = entries.untyped
    return _MISSING if rule is OPT_OUT else rule


def _is_plain_type(t) -> bool:
    """Whether values of the analysis type ``t`` are never an engine's stand-in for a number."""
    if isinstance(t, StructType):
        return all(_is_plain_type(item) for _, item in t.items)
    if isinstance(t, ArrayType) or t in _REALISH or t in INACTIVE_TYPES:
        return True
    return isinstance(t, type) and issubclass(t, (np.ndarray, np.generic, complex)) and not issubclass(t, ActiveValue)


def has_typed_rules(f) -> bool:
    """Whether rules or opt-outs are registered for ``f`` only for some argument types. Rules
    typed on the engines' stand-ins for numbers (dual numbers, tracked values) do not count: they
    serve the same function for those values (through a twin with the same derivative)."""
    entries = _entries(rrule, f)
    if entries is None:
        return False
    return any(not all(issubclass(t, ActiveValue) for t in types) for types, _ in entries.typed)


def _has_keywords(expr) -> bool:
    return bool(expr.kwargs)


def _one_derivative(forward, reverse) -> bool:
    """Whether a forward and a reverse rule state one derivative, so that the pushforward may
    stand for the pullback: made together by ``scalar_rule`` (the same partials), or both
    chainrules' own. A rule a user registered again for one direction (a clipped or
    straight-through ``rrule`` for ``math.floor``) is its own derivative."""
    partials = getattr(forward, "partials", None)
    if partials is not None and getattr(reverse, "partials", None) is partials:
        return True
    return all(getattr(rule, "__module__", "").startswith("chainrules.rules.") for rule in (forward, reverse))


def _stock_rule(op: str, ts: list) -> bool:
    """Whether the rule registered for ``operator.<op>`` on these types is chainrules' own."""
    rule = static_lookup(rrule, getattr(operator, op), ts)
    return getattr(rule, "__module__", None) == "chainrules.rules.operators"


def analyze(
    fn: ir.Function,
    param_types: dict,
    free_types: dict,
    globals_: dict,
    filename: str,
    constants: frozenset = frozenset(),
) -> Plan:
    """The plan for ``fn`` called with arguments of ``param_types`` and captured values of
    ``free_types``; the parameters named in ``constants`` carry no derivative (the caller's
    ``argnums`` left them out).

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
    plan = _Analysis(fn, param_types, free_types, globals_, filename, constants).run()
    plan.freevars = tuple(free_types)
    plan.param_types = dict(param_types)
    return plan
