"""Pass 9, cache: each function is parsed once, and compiled once per kind of call.

``transformed(fn)`` runs parse, fence, normalize and lower once per code object and keeps the
IR. ``Transformed.specialization`` analyzes, generates and compiles the primal/pullback pair
once per *call signature*: the types of the positional arguments, the names and types of the
keyword arguments, the types of the captured variables, and whether the function was called
as a method. A specialization stays valid while the global names it resolved (modules,
built-ins, classes) keep their values and no rule is registered; otherwise it is rebuilt.

``stats`` counts parses and compilations, so tests can check that a second call does neither.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import inspect
import os
import types

import numpy as np

from ...core.active import ActiveValue
from ...core.errors import UnsupportedSyntaxError
from ...core.registry import rrule
from . import adjoint as adjoint_pass
from . import codegen, fence, ir, lower, normalize, parse, primal
from .names import Namer
from .simplify import ArrayType, analyze, class_of, struct_kind, type_of_value

#: helpers that generated code may call, by name (the engine adds its dispatchers)
RUNTIME: dict[str, object] = {}

stats = {"parsed": 0, "compiled": 0}
# keyed by the code object's id (hashing a code object hashes its contents, which is slow);
# an entry holds its code object, so the id cannot be reused while the entry lives
_transformed: dict[int, Transformed] = {}
_MISSING = object()


class Transformed:
    """One function's source, passed through parse, fence, normalize and lower."""

    def __init__(self, fn: types.FunctionType):
        code = self.code = fn.__code__
        self.source = parse.function_source(fn)
        stats["parsed"] += 1
        node = self.source.node
        self.cellvars = _captured_by_functions(code)
        fence.check(node, self.source.filename, captured=self.cellvars, in_class="__class__" in code.co_freevars)
        self.namer = Namer.for_function(node, extra=set(code.co_freevars) | set(code.co_names))
        self.normalized = normalize.normalize(node, self.namer)
        self.ir = lower.lower(self.normalized, self.namer, self.source.filename, code, root=node)
        self.ir.name = self.source.name
        self.freevars = tuple(code.co_freevars)
        self.signature = inspect.signature(fn, follow_wrapped=False)  # the code's own, not a decorated function's
        self.specializations: dict[tuple, Specialization] = {}
        #: number of positional arguments -> the last call's (function, rule version, defaults,
        #: generated function, specialization if it has global guards, whether it calls out)
        self.fast: dict[int, tuple] = {}

    def specialization(
        self, fn, args: tuple, kwargs: dict, bound: bool, key: tuple, constants: frozenset = frozenset()
    ) -> Specialization:
        """The specialization for ``key`` (``call_key``'s, with ``constants``, the positions of the
        arguments that carry no derivative, where there are any)."""
        spec = self.specializations.get(key)
        if spec is None or not spec.valid(fn):
            spec = Specialization(self, fn, args, kwargs, bound, constants)
            self.specializations[key] = spec
        return spec


def _captured_by_functions(code: types.CodeType) -> tuple[str, ...]:
    """The variables of ``code`` that its nested functions and lambdas capture. Comprehensions
    are compiled as functions too, but lowering inlines them, so what only they read is not
    captured."""
    own = set(code.co_cellvars)
    captured: set[str] = set()
    stack = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    while stack:
        inner = stack.pop()
        if inner.co_name in lower.COMPREHENSIONS:
            stack.extend(c for c in inner.co_consts if isinstance(c, types.CodeType))
        else:
            captured.update(name for name in inner.co_freevars if name in own)
    return tuple(name for name in code.co_cellvars if name in captured)


def transformed(fn: types.FunctionType) -> Transformed:
    """The cached transformation of ``fn``'s code (parsed on first use only)."""
    entry = _transformed.get(id(fn.__code__))
    if entry is None:
        entry = _transformed[id(fn.__code__)] = Transformed(fn)
    return entry


def _cell_type(cell):
    """The type a captured value is specialized on: as an argument's (an array's dtype and
    dimensions, so that what is computed from it has known types too; a structure's element types)."""
    try:
        value = cell.cell_contents
    except ValueError:  # an empty cell (a closure not yet bound)
        return type(_MISSING)
    return type_of_value(value)


def call_key(fn, args: tuple, kwargs: dict, bound: bool) -> tuple:
    """What a specialization depends on: argument types (with dtype and dimensions for arrays,
    and element types for small structures: see ``simplify.type_of_value``)."""
    key = tuple(map(type, args))
    if np.ndarray in key or any(struct_kind(t) is not None for t in key):
        key = tuple(map(type_of_value, args))
    if kwargs:
        key = (key, tuple((k, type_of_value(v)) for k, v in kwargs.items()))
    if fn.__closure__:
        key = (key, tuple(map(_cell_type, fn.__closure__)))
    if fn.__defaults__ or fn.__kwdefaults__:
        # a parameter left to its default has the default's type (a nested function's default may
        # be a value of this differentiation one call and of an outer one the next)
        defaults = tuple(map(type_of_value, fn.__defaults__ or ()))
        key = (key, defaults, tuple((k, type_of_value(v)) for k, v in (fn.__kwdefaults__ or {}).items()))
    return (bound, key)


def _refuse_methods_of_values(entry: Transformed, fn, arguments: dict) -> None:
    """A method of a NumPy array or number passed as an argument (``apply(x.max)``) has the type
    of a built-in function, which the analysis takes as carrying no derivative: refused, so that
    the entry points take the tape (a method read and called in place, ``m = x.max; m()``, is
    followed)."""
    for name, value in arguments.items():
        if type(value) is types.BuiltinMethodType and isinstance(value.__self__, (np.ndarray, np.generic, ActiveValue)):
            raise UnsupportedSyntaxError(
                f"the argument `{name}` of {fn.__qualname__} is the method {value.__name__} of an array or number, "
                "whose derivative the engine does not follow into a function; pass a lambda "
                f"(lambda *a: x.{value.__name__}(*a)) or call the method where it is read",
                entry.source.filename,
                fn.__code__.co_firstlineno,
                0,
            )


class Specialization:
    """The compiled primal/pullback of one function for one call signature."""

    def __init__(self, entry: Transformed, fn, args: tuple, kwargs: dict, bound: bool, constants: frozenset):
        stats["compiled"] += 1
        self.entry = entry
        self.version = rrule.version
        fn_ir = entry.ir
        try:
            # (the defaults of this function object: a nested function's differ from call to call)
            signature = (
                entry.signature
                if fn.__defaults__ is None and fn.__kwdefaults__ is None
                else inspect.signature(fn, follow_wrapped=False)
            )
            bound_args = signature.bind(*args, **kwargs)
        except TypeError as exc:  # what calling fn would say, with its name
            raise TypeError(f"{fn.__qualname__}(): {exc}") from None
        bound_args.apply_defaults()
        _refuse_methods_of_values(entry, fn, bound_args.arguments)
        result = self._result(entry, args, kwargs, bound)
        # (``*args`` and ``**kwargs`` are not checked by the guard: their elements are not typed)
        unchecked = (result["varargs_param"], result["varkw"])
        param_types = {
            name: class_of(type_of_value(value)) if name in unchecked else type_of_value(value)
            for name, value in bound_args.arguments.items()
        }
        free_types = {}
        for name, cell in zip(entry.freevars, fn.__closure__ or ()):
            free_types[name] = _cell_type(cell)
        #: the positions of the arguments that carry no derivative (``argnums`` left them out)
        self.constants = constants
        named = result["positional"]
        constant_params = frozenset(named[i] for i in constants if i < len(named))
        self.plan = analyze(fn_ir, param_types, free_types, fn.__globals__, entry.source.filename, constant_params)
        self.globals_id = id(fn.__globals__)
        self.bound = bound
        self.calls_out = any(mode == "pullback" for mode in self.plan.mode.values())
        namer = copy.deepcopy(entry.namer)
        helpers = primal.Helpers(namer)
        self.batched = _batchable(self.plan, result)
        checks = [
            (name, t) for name, t in param_types.items() if name not in (result["varargs_param"], result["varkw"])
        ]
        checks += [(name, t) for name, t in free_types.items() if t is not type(_MISSING)]
        guard = primal.guard(helpers, checks, _respecialize_call(result), self.plan.relied)
        self.primal = primal.generate(self.plan, namer, helpers, entry.cellvars, entry.freevars, guard)
        ret = fn_ir.body[-1] if fn_ir.body and isinstance(fn_ir.body[-1], ir.Return) else ir.Return()
        self.adjoint = adjoint_pass.generate(self.plan, namer, helpers, self.primal.saved, ret, result)
        self.label = _label(entry, args, kwargs, bound)
        name = namer.fresh(f"{_identifier(entry.source.name)}_primal")
        back = namer.fresh(f"{_identifier(entry.source.name)}_pullback")
        header = [f"# {self.label}"]
        self.text, origins = codegen.assemble(
            name,
            _signature(fn_ir.args),
            header,
            self.primal.lines,
            back,
            self.adjoint.seed,
            self.adjoint.lines,
            primal.Primal.operand(self.primal, ret.value),
            entry.source.line,
        )
        self.respecialize_name = helpers.names.get("respecialize")
        self.self_fn_name = helpers.names.get("self_fn")
        per_instance = ("fcells", "respecialize", "self_fn")
        self.helper_values = {helpers.names[h]: _helper(h) for h in helpers.names if h not in per_instance}
        self.helper_values.update(helpers.constants)
        self.fcells_name = helpers.names.get("fcells")
        per_instance_names = tuple(n for n in (self.respecialize_name, self.fcells_name, self.self_fn_name) if n)
        outer = tuple(self.helper_values) + entry.freevars + per_instance_names
        self.code, self.filename = codegen.compile_function(
            self.text, origins, entry.source.filename, self.label, name, outer
        )
        self.helper_cells = {k: types.CellType(v) for k, v in self.helper_values.items()}
        self._last = (None, None, None, None)

    @staticmethod
    def _result(entry: Transformed, args, kwargs, bound) -> dict:
        params = list(entry.signature.parameters.values())
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        used = positional[: len(args)]
        named = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        varargs = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
        varkw = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
        return {
            "positional": used,
            "bound": bound,
            "keywords": list(kwargs),
            "named_keywords": [k for k in kwargs if k in named],
            "varargs": (varargs, len(args) - len(positional)) if len(args) > len(positional) else None,
            "varargs_param": varargs,
            "varkw": varkw,
        }

    def valid(self, fn) -> bool:
        """Whether this specialization still applies: no new rules, globals unchanged."""
        if rrule.version != self.version:
            return False
        if not self.plan.guards:
            return True
        g = fn.__globals__
        for name, value in self.plan.guards:
            current = g.get(name, _MISSING)
            if current is _MISSING:
                current = getattr(builtins, name, _MISSING)
            if current is not value:
                return False
        return True

    def instance(self, fn) -> types.FunctionType:
        """The generated function bound to ``fn``'s globals, defaults and closure cells."""
        closure, defaults, kwdefaults = fn.__closure__, fn.__defaults__, fn.__kwdefaults__
        last = self._last
        if last[0] is closure and last[1] is defaults and last[2] is kwdefaults and last[3] is not None:
            return last[3]
        cells = dict(self.helper_cells)
        if self.self_fn_name:
            cells[self.self_fn_name] = types.CellType(fn)
        if self.respecialize_name:
            respecialize = (
                functools.partial(RUNTIME["respecialize_constants"], fn, self.bound, self.constants)
                if self.constants
                else functools.partial(RUNTIME["respecialize"], fn, self.bound)
            )
            cells[self.respecialize_name] = types.CellType(respecialize)
        if closure:
            cells.update(zip(self.entry.freevars, closure))
            if self.fcells_name:
                cells[self.fcells_name] = types.CellType(dict(zip(self.entry.freevars, closure)))
        elif self.fcells_name:
            cells[self.fcells_name] = types.CellType({})
        inner = types.FunctionType(
            self.code,
            fn.__globals__,
            self.code.co_name,
            defaults,
            tuple(cells[name] for name in self.code.co_freevars),
        )
        if kwdefaults:
            inner.__kwdefaults__ = dict(kwdefaults)
        self._last = (closure, defaults, kwdefaults, inner)
        return inner


#: statement modes whose adjoint code takes a batch of cotangents (a leading batch axis) as it
#: takes one: rules' pullbacks (each one checked for the flag, here or by the dispatcher at run
#: time), real-scalar arithmetic written out (a batch of cotangents of a number is a vector, and
#: the partials multiply it alike), a scalar function's pushforward (when its frule is batched),
#: cotangents handed on, an integer index's partial (added at ``[:, i]``), and branches and
#: loops between them, tuples, lists and dicts built, unpacked and written into, reads made
#: again in the reverse pass (the modes of `_CHECKED_MODES` are checked statement by statement),
#: and nested functions defined (their captured variables' batches are read off the closure's tangent)
_BATCH_MODES = frozenset(
    {
        "plain",
        "closure",
        "return",
        "pullback",
        "inline",
        "index",
        "scalar",
        "copy",
        "branch",
        "block",
        "loop",
        "struct",
        "mutate",
        "recompute",
        "element",
    }
)


def _batchable(plan, result: dict) -> bool:
    """Whether the adjoint of this specialization takes a batch of cotangents: every statement's
    mode is in ``_BATCH_MODES`` (some checked one by one) and every rule called directly is
    registered ``batched=True``. The cotangents of ``self``, ``*args`` and ``**kwargs`` are
    structures holding their entries' batches."""
    statements = None
    for index, mode in plan.mode.items():
        if mode not in _BATCH_MODES:
            return False
        if mode in _CHECKED_MODES:
            if statements is None:
                statements = {s.index: s for s in ir.walk(plan.fn.body)}
            if not _CHECKED_MODES[mode](plan, statements[index]):
                return False
        if mode in ("pullback", "scalar"):  # the rule or frule called directly must take a batch
            rule = plan.direct.get(index)
            if rule is not None and not getattr(rule, "batched", False):
                return False
    return True


def _array_read(plan, stmt) -> bool:
    """Whether a read made again in the reverse pass (``recompute``) takes a batch: indexing an
    array, whose rule is batched. (An attribute's or a container's pullback, made only then,
    could not decline a batch in time.)"""
    return isinstance(stmt.expr, ir.GetItem) and isinstance(plan.types.get(stmt.expr.obj), ArrayType)


#: the modes whose statements are checked one by one (see `_batchable`)
_CHECKED_MODES = {"recompute": _array_read}


def _respecialize_call(result: dict) -> str:
    """The arguments, as the call that made this specialization passed them."""
    parts = list(result["positional"])
    if result["varargs"]:
        parts.append(f"*{result['varargs'][0]}")
    parts += [f"{k}={k}" for k in result["named_keywords"]]
    if result["varkw"] and len(result["named_keywords"]) < len(result["keywords"]):
        parts.append(f"**{result['varkw']}")
    return ", ".join(parts)


def _helper(name: str):
    if name in RUNTIME:
        return RUNTIME[name]
    return getattr(builtins, name)


def _identifier(name: str) -> str:
    return "lambda" if name == "<lambda>" else name


def _signature(args) -> str:
    """The parameter list without defaults or annotations: the generated function takes its
    defaults from the user's function object."""
    plain = copy.deepcopy(args)
    plain.defaults = []
    plain.kw_defaults = [None] * len(plain.kwonlyargs)
    for a in plain.posonlyargs + plain.args + plain.kwonlyargs + [x for x in (plain.vararg, plain.kwarg) if x]:
        a.annotation = None
    return ast.unparse(plain)


def _label(entry: Transformed, args, kwargs, bound) -> str:
    types_ = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    how = "method " if bound else ""
    where = f"{os.path.basename(entry.source.filename)}:{entry.source.node.lineno}"
    return f"{how}{entry.source.name} at {where} for ({', '.join(types_)})"
