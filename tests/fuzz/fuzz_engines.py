"""Fuzz the engines against each other: random programs, written out as Python source, run by
every engine and compared.

    python tests/fuzz/fuzz_engines.py [--seed N] [--count K] [--only-engine source] [--show]

Each program is a module written to a temporary directory and imported (the source engine reads
its functions' source). It has a scalar-valued ``f`` and a vector-valued ``f_vec`` with the same
body: 3-15 statements over array inputs (float64 or float32, one dtype per program) and a Python
float, drawn from a small grammar: elementwise ufuncs on safe domains, ``@``/``np.dot``,
``sum``/``mean``/``max`` along axes, reshapes, transposes, slices, constant indices,
``np.concatenate``/``np.stack``, ``np.where`` of a comparison, ``if``/``else`` on a reduction's
value, ``for`` loops over ``range`` accumulating, ``while`` loops with a counter, with ``break``
and ``continue``, nested loops, early returns, tuples and lists, comprehensions (a list, a
generator in ``sum``, over ``enumerate``/``zip`` of arrays), helper functions (with default
arguments, recursive with a depth bound) and closures, ``+=`` on the function's own arrays and
on the arrays in its own lists and dicts,
buffers filled by index, ``np.linalg`` (``solve``, ``inv``, ``det``, ``slogdet``, ``norm``) on
well-conditioned matrices, ``scipy.special`` (``logsumexp``, ``expit``, ``gammaln``), ``np.cumsum``,
``np.sort``, ``np.clip`` and ``np.einsum`` with fixed specs; a loop's variable read after the
loop (over an array, a reshaped array's rows, a list, an empty sequence, constants that rebind
it), ``for``/``while`` with ``else`` (a ``break`` skips it; it may return), writes through an
integer-array index that repeats a position, a list or tuple of constants beside an array in a
NumPy operation, generator expressions consumed at once (``sum``, ``max(..., key=abs)``, an
unpacking) or kept and consumed after a value they read was rebound, an early return in
``try``/``finally: pass``, and a plain class of the module built from values being differentiated
(the source engine refuses a kept generator and a plain class, and the entry points take the tape).

The same body also makes ``f_struct(p)``, whose inputs come in one structure (a tuple, dict,
dataclass or namedtuple), ``f_struct_out(p)``, which returns a tuple or dict (the raveled output
and the scalar), and ``f_api(..., scale=1.0)``, whose keyword argument scales the output and
which, drawn with ``has_aux``, returns ``(value, aux)`` with aux an intermediate (or a dict of it
and the keyword argument). Structures are tuples, lists, dicts, a dict holding a tuple,
dataclasses and namedtuples; outputs tuples, dicts and namedtuples.

What each program must satisfy at a random input (``CHECKS`` names each check):

- ``source``, ``tape``: ``cr.pullback``'s value equals the plain call's, and its gradient the
  central finite differences' (computed in float64), with the input's dtype;
- ``jvp``: ``cr.jvp`` along a random tangent equals the gradient's inner product with it;
- ``jacobian-forward``, ``jacobian-reverse``, ``jacobian-reverse-tape``: ``cr.jacobian`` of
  ``f_vec`` in its first argument equals finite differences;
- ``hessian-source``, ``hessian-tape`` (one program in three): ``cr.hessian`` of ``f`` in its
  first argument equals finite differences of the source engine's gradient (forward mode over
  the engine: what either refuses is a documented refusal).
- ``struct-source``, ``struct-tape``: ``cr.gradient`` of ``f_struct`` is a ``Tangent`` of the
  structure whose fields equal finite differences;
- ``struct-jvp``: ``cr.jvp`` of ``f_struct`` along a tangent of the same structure (for a
  dataclass or namedtuple, a ``Tangent[P]`` or a value of the class);
- ``struct-jacobian-forward``, ``struct-jacobian-mode``, ``struct-jacobian-reverse-tape``:
  ``cr.jacobian`` of ``f_struct_out`` at the structure, block by block (the second in the mode the
  program draws: forward, reverse or auto);
- ``struct-hessian`` (one program in three): ``cr.hessian`` of ``f_struct`` at the structure,
  block by block, equals finite differences of the source engine's gradient;
- ``api-source``, ``api-tape``: ``cr.value_and_gradient`` or ``cr.gradient`` of ``f_api`` with
  the program's ``argnums`` (none, an int, -1 or a tuple), ``has_aux`` and ``scale=0.8`` (a float,
  a NumPy scalar or a 0-d array).

An engine may refuse a program only as docs/engines.md says it does (``DOCUMENTED_REFUSALS``),
with a ``TypeError`` or ``cr.ChainRulesError`` whose message names the program's file and line.
A draw where finite differences at two steps disagree (the input sits on a kink: a branch, a
``max``) is dropped. Failures are printed with the program's source, the input and the checks
that disagree; the seed reproduces everything.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import re
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))  # run by hand from anywhere
import chainrules as cr  # noqa: E402

CHECKS = (
    "source",
    "tape",
    "jvp",
    "jacobian-forward",
    "jacobian-reverse",
    "jacobian-reverse-tape",
    "hessian-source",
    "hessian-tape",
    "struct-source",
    "struct-tape",
    "struct-jvp",
    "struct-jacobian-forward",
    "struct-jacobian-mode",
    "struct-jacobian-reverse-tape",
    "api-source",
    "api-tape",
    "struct-hessian",
)

# what docs/engines.md's "Limits and errors" sections say each engine refuses, as the message says it
# `x += v` on an array that something else may hold (as far as the source engine's analysis can tell)
_SOURCE_REFUSALS = (
    "an augmented assignment updates the ndarray in place",
    "a default value of the nested function",  # `def inner(u, k=v)` with a differentiated v
    "must be bound to a new object here",  # a write through a second name or a view
    "writes its result into an existing array",  # an `out=` argument
    "is read by a nested function and bound",  # a closure over a variable bound twice or in a loop
    # refusals the entry points hand to the tape, raised where the tape refuses the function too:
    "a generator expression computes its values as they are consumed",  # one kept, consumed later
    "constructing it has no rule",  # a plain class built (NoRuleError)
)
_TAPE_REFUSALS = (
    "would drop its derivative",  # out[i] = tracked value into a plain array, float(x)
    "came to share its memory",  # a write after a reshape or a transpose shares the array
    "writes into an array in place",  # `v += tracked` into a plain array
    "may share memory",  # `v += w` on an array that may be a view
    "has a rule that the tape engine cannot use here",  # a ruled library function (logsumexp) inside f
    "a write whose index repeats a position",  # buf[[0, 0]] = v
)
# a dual stored into a plain np.zeros buffer, `v += dual` into a plain array
_FORWARD_REFUSALS = (
    "would drop its derivative",
    "writes in place, which dual numbers do not support",
    "may share memory",  # `v += w` on a dual array that may be a view
    "has a rule that forward mode cannot use here",  # a ruled library function inside f
)
DOCUMENTED_REFUSALS = {
    "source": _SOURCE_REFUSALS,
    "tape": _TAPE_REFUSALS,
    "jvp": _FORWARD_REFUSALS,
    "jacobian-forward": _FORWARD_REFUSALS,
    "jacobian-reverse": _SOURCE_REFUSALS,
    "jacobian-reverse-tape": _TAPE_REFUSALS,
    # forward mode over a reverse engine: what either refuses
    "hessian-source": _SOURCE_REFUSALS + _FORWARD_REFUSALS,
    "hessian-tape": _TAPE_REFUSALS + _FORWARD_REFUSALS,
    "struct-source": _SOURCE_REFUSALS,
    "struct-tape": _TAPE_REFUSALS,
    "struct-jvp": _FORWARD_REFUSALS,
    "struct-jacobian-forward": _FORWARD_REFUSALS,
    "struct-jacobian-mode": _SOURCE_REFUSALS + _FORWARD_REFUSALS,  # forward, reverse or auto
    "struct-jacobian-reverse-tape": _TAPE_REFUSALS,
    "api-source": _SOURCE_REFUSALS,
    "api-tape": _TAPE_REFUSALS,
    "struct-hessian": _SOURCE_REFUSALS + _FORWARD_REFUSALS,
}

TOLERANCE = {np.float64: 1e-6, np.float32: 2e-3}


# ----- the grammar --------------------------------------------------------------------------------

UNARY = (
    "np.sin({a})",
    "np.cos({a})",
    "np.tanh({a})",
    "np.arctan({a})",
    "np.exp(0.5 * np.sin({a}))",
    "np.log(1.0 + {a} * {a})",
    "np.sqrt({a} * {a} + 1.0)",
    "{a} / (1.0 + {a} * {a})",
    "{a} ** 2",
    "np.square({a})",
    "{a} * 1.5 - 0.25",
    "-{a}",
    "np.abs({a})",
)
BINARY = ("{a} + {b}", "{a} - {b}", "{a} * {b}", "np.maximum({a}, {b})", "{a} * np.cos({b})", "np.hypot({a}, {b})")
HELPERS = (
    "return np.tanh(u * c) + u * u",
    "return np.sin(u) * c - u",
    "v = u * c\n    if np.sum(v) > 0.0:\n        return v * v\n    return np.cos(v)",
    "total = u * 0.0\n    for k in range(2):\n        total = total + np.sin(u + k) * c\n    return total",
)


@dataclasses.dataclass
class Var:
    name: str
    shape: tuple
    owned: bool  # an array the function made and nothing else holds: `v += w` may write into it
    rebound: bool = False  # bound more than once (a loop's accumulator): no closure reads it


class Program:
    """A random program: ``source`` (the module's text) and ``args`` (one input)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.dtype = np.float32 if self.chance(0.3) else np.float64
        self.helpers: list[str] = []
        self.lines: list[str] = []
        self.vars: list[Var] = []
        self.counter = 0
        self.n = int(rng.integers(2, 5))
        self.m = int(rng.integers(2, 4))
        self.params: list[str] = []
        self.args: list = []
        self.returns: list[str] = []  # the expressions returned (early returns, then the last)
        self.uses = set()  # constructs used, for the summary
        self._inputs()
        for _ in range(int(rng.integers(3, 16))):
            self.statement(self.lines, "    ")
        self.returns.append(self.final())
        # how the API is called: the structure that holds the inputs (for f_struct) and the
        # output's (f_struct_out), the arguments chosen, an aux output, a keyword argument
        self.structure = self.pick(["tuple", "list", "dict", "nested", "dataclass", "namedtuple"])
        if self.structure == "nested" and len(self.params) == 1:
            self.structure = "list"
        self.out_structure = self.pick(["tuple", "dict", "namedtuple"])
        self.tangent_as_value = self.chance(0.5)  # a dataclass's tangent given as a value of the class
        self.jacobian_mode = self.pick(["forward", "reverse", "auto"])  # (struct-jacobian-reverse's mode)
        k = len(self.params)
        chosen = sorted({int(i) for i in self.rng.integers(k, size=2)})
        self.argnums = self.pick([None, int(self.rng.integers(k)), -1, tuple(chosen)])
        self.has_aux = self.pick([None, "value", "dict"])
        self.api_call = self.pick(["value_and_gradient", "gradient"])
        self.scale = self.pick([0.8, np.float64(0.8), np.array(0.8)])  # a keyword argument: no gradient

    # -- drawing
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def array(self, shape) -> np.ndarray:
        return self.rng.uniform(-1.2, 1.2, shape).astype(self.dtype)

    def _inputs(self) -> None:
        first = (self.n,) if self.chance(0.5) else (self.m, self.n)
        self.params.append("x")
        self.args.append(self.array(first))
        self.vars.append(Var("x", first, False))
        if self.chance(0.6):
            self.params.append("s")
            self.args.append(float(self.rng.uniform(0.3, 1.5)))
            self.vars.append(Var("s", (), False))
        if self.chance(0.5):
            shape = self.pick([(self.n,), (self.n, self.m)])
            self.params.append("w")
            self.args.append(self.array(shape))
            self.vars.append(Var("w", shape, False))

    # -- expressions
    def of_shape(self, shape) -> list[Var]:
        return [v for v in self.vars if v.shape == shape]

    def var(self, ndim: int | None = None, min_len: int = 1) -> Var | None:
        options = [
            v for v in self.vars if (ndim is None or len(v.shape) == ndim) and (not v.shape or v.shape[0] >= min_len)
        ]
        return self.pick(options) if options else None

    def expr(self, shape, depth: int = 0) -> str:
        """An expression of ``shape`` over the variables (one of that shape exists)."""
        a = self.pick(self.of_shape(shape)).name
        if depth > 1 or self.chance(0.3):
            return self.pick(UNARY).format(a=a)
        partners = self.of_shape(shape) + self.of_shape(())
        b = self.pick(partners).name
        inner = self.pick(UNARY).format(a=b) if self.chance(0.4) else b
        return self.pick(BINARY).format(a=a, b=f"({inner})")

    def define(self, body: list[str], indent: str, shape, text: str, owned: bool = True) -> Var:
        v = Var(self.fresh(), shape, owned)
        body.append(f"{indent}{v.name} = {text}")
        self.vars.append(v)
        return v

    # -- statements
    def statement(self, body: list[str], indent: str) -> None:
        kinds = [
            self.s_unary,
            self.s_binary,
            self.s_matmul,
            self.s_reduce,
            self.s_shape,
            self.s_join,
            self.s_where,
            self.s_if,
            self.s_for,
            self.s_while,
            self.s_early_return,
            self.s_tuple,
            self.s_list,
            self.s_helper,
            self.s_closure,
            self.s_iadd,
            self.s_buffer,
            self.s_rows,
            self.s_break,
            self.s_centered,
            self.s_default_closure,
            self.s_view_update,
            self.s_dtype_mix,
            self.s_unpack,
            self.s_nested_helper,
            self.s_linalg,
            self.s_special,
            self.s_einsum,
            self.s_while_continue,
            self.s_nested_loops,
            self.s_recursion,
            self.s_comprehension,
            self.s_rebind_constant,
            self.s_try,
            self.s_guarded_conversion,
            self.s_isinstance,
            self.s_loop_variable,
            self.s_loop_else,
            self.s_scatter,
            self.s_list_operand,
            self.s_generator,
            self.s_try_finally_return,
            self.s_plain_class,
            self.s_bound_method,
            self.s_list_slice_write,
            self.s_dict_get,
            self.s_power_by_counter,
            self.s_time_steps,
            self.s_element_updates,
        ]
        self.pick(kinds)(body, indent)

    def s_unary(self, body, indent):
        v = self.var()
        self.define(body, indent, v.shape, self.pick(UNARY).format(a=v.name))
        self.uses.add("ufunc")

    def s_binary(self, body, indent):
        v = self.var()
        self.define(body, indent, v.shape, self.expr(v.shape))
        self.uses.add("ufunc")

    def s_matmul(self, body, indent):
        v = self.var(ndim=2)
        if v is None:
            return self.s_unary(body, indent)
        rows, cols = v.shape
        vectors = self.of_shape((cols,))
        if vectors and self.chance(0.6):
            u = self.pick(vectors)
            text = f"{v.name} @ {u.name}" if self.chance(0.5) else f"np.dot({v.name}, {u.name})"
            self.define(body, indent, (rows,), text)
        elif self.chance(0.5):
            self.define(body, indent, (rows, rows), f"{v.name} @ {v.name}.T")
        else:
            self.define(body, indent, (cols, cols), f"np.dot({v.name}.T, {v.name})")
        self.uses.add("matmul")

    def s_reduce(self, body, indent):
        v = self.var()
        if not v.shape:
            return self.s_unary(body, indent)
        op = self.pick(["sum", "mean", "max"])
        if len(v.shape) == 2 and self.chance(0.6):
            axis = int(self.rng.integers(2))
            shape = (v.shape[1 - axis],)
            text = f"np.{op}({v.name}, axis={axis})" if self.chance(0.5) else f"{v.name}.{op}(axis={axis})"
        else:
            shape, text = (), f"np.{op}({v.name})"
        self.define(body, indent, shape, text)
        self.uses.add("reduce")

    def s_shape(self, body, indent):
        v = self.var()
        if not v.shape:
            return self.s_unary(body, indent)
        if len(v.shape) > 2:
            self.define(body, indent, (int(np.prod(v.shape)),), f"{v.name}.reshape(-1)", owned=False)
            return
        if len(v.shape) == 2:
            r, c = v.shape
            options = [
                ((c, r), f"{v.name}.T"),
                ((c, r), f"np.transpose({v.name})"),
                ((r * c,), f"{v.name}.reshape(-1)"),
                ((c, r), f"np.reshape({v.name}, ({c}, {r}))"),
                ((r - 1, c), f"{v.name}[1:]"),
                ((r,), f"{v.name}[:, {int(self.rng.integers(c))}]"),
                ((c,), f"{v.name}[{int(self.rng.integers(r))}]"),
                ((), f"{v.name}[{int(self.rng.integers(r))}, {int(self.rng.integers(c))}]"),
            ]
        else:
            (n,) = v.shape
            options = [
                ((n,), f"{v.name}[::-1]"),
                ((n - 1,), f"{v.name}[1:]"),
                ((n - 1,), f"{v.name}[:-1]"),
                ((), f"{v.name}[{int(self.rng.integers(n))}]"),
                ((), f"{v.name}[-1]"),
            ]
            if n % 2 == 0:
                options.append(((2, n // 2), f"{v.name}.reshape(2, {n // 2})"))
        shape, text = self.pick(options)
        if 0 in shape:
            return self.s_unary(body, indent)
        self.define(body, indent, shape, text, owned=False)  # a view
        self.uses.add("shape")

    def s_join(self, body, indent):
        v = self.var()
        if not v.shape:
            return self.s_unary(body, indent)
        u = self.pick(self.of_shape(v.shape))
        if len(v.shape) == 1 and self.chance(0.5):
            self.define(body, indent, (2 * v.shape[0],), f"np.concatenate([{v.name}, {u.name}])")
        elif self.chance(0.5):
            self.define(body, indent, (2, *v.shape), f"np.stack([{v.name}, {self.expr(v.shape, 1)}])")
        else:
            self.define(body, indent, (*v.shape, 2), f"np.stack(({v.name}, {u.name}), axis=-1)")
        self.uses.add("join")

    def s_where(self, body, indent):
        v = self.var()
        mask = f"{v.name} > {self.pick(self.of_shape(v.shape) + self.of_shape(())).name}"
        if self.chance(0.5):
            mask = f"{v.name} > {float(np.round(self.rng.uniform(-0.5, 0.5), 2))}"
        self.define(body, indent, v.shape, f"np.where({mask}, {self.expr(v.shape, 1)}, {self.expr(v.shape, 1)})")
        self.uses.add("where")

    def condition(self) -> str:
        v = self.var()
        reduction = self.pick(["np.sum", "np.mean", "np.max"]) if v.shape else ""
        value = f"{reduction}({v.name})" if reduction else v.name
        return f"{value} > {float(np.round(self.rng.uniform(-0.6, 0.6), 2))}"

    def s_if(self, body, indent):
        v = self.var()
        name = self.fresh()
        body.append(f"{indent}if {self.condition()}:")
        body.append(f"{indent}    {name} = {self.expr(v.shape)}")
        if self.chance(0.5):
            body.append(f"{indent}elif {self.condition()}:")
            body.append(f"{indent}    {name} = {self.expr(v.shape)}")
        body.append(f"{indent}else:")
        body.append(f"{indent}    {name} = {self.expr(v.shape)}")
        self.vars.append(Var(name, v.shape, False, rebound=True))
        self.uses.add("if")

    def s_for(self, body, indent):
        v = self.var()
        acc = self.define(body, indent, v.shape, self.expr(v.shape, 1))
        acc.rebound = True
        vectors = [u for u in self.vars if len(u.shape) == 1 and u is not acc]
        if vectors and self.chance(0.5):
            u = self.pick(vectors)
            body.append(f"{indent}for i in range({u.shape[0]}):")
            term = f"{self.pick(UNARY).format(a=f'{u.name}[i]')}"
        else:
            body.append(f"{indent}for i in range({int(self.rng.integers(1, 4))}):")
            term = f"np.sin({v.name} + 0.5 * i)"
        if acc.owned and self.chance(0.5):
            body.append(f"{indent}    {acc.name} += {term} * 0.5")
            self.uses.add("+=")
        else:
            body.append(f"{indent}    {acc.name} = {acc.name} * 0.8 + {term}")
        acc.owned = False
        self.uses.add("for")

    def s_while(self, body, indent):
        v = self.var()
        acc = self.define(body, indent, v.shape, self.expr(v.shape, 1), owned=False)
        acc.rebound = True
        counter = self.fresh("k")
        body.append(f"{indent}{counter} = 0")
        body.append(f"{indent}while {counter} < {int(self.rng.integers(1, 4))}:")
        body.append(f"{indent}    {acc.name} = np.tanh({acc.name}) * 0.9 + {v.name} * 0.1")
        body.append(f"{indent}    {counter} += 1")
        self.uses.add("while")

    def s_early_return(self, body, indent):
        v = self.var()
        body.append(f"{indent}if {self.condition()}:")
        self.returns.append(self.expr(v.shape))
        body.append(f"{indent}    return FINISH{len(self.returns) - 1}")
        self.uses.add("early return")

    def s_rebind_constant(self, body, indent):
        """A value rebound to a constant on some paths (a cap in a branch, a reset on one
        iteration of a loop, a fallback in a ``with`` block): no derivative flows back past it."""
        v = self.var()
        acc = self.define(body, indent, v.shape, self.expr(v.shape, 1), owned=False)
        acc.rebound = True
        constant = "0.5" if not v.shape else f"np.full({v.shape}, 0.5)"
        style = self.pick(["branch", "loop", "with"])
        if style == "branch":
            body.append(f"{indent}if {self.condition()}:")
            body.append(f"{indent}    {acc.name} = {constant}")
        elif style == "loop":
            n = int(self.rng.integers(2, 4))
            body.append(f"{indent}for i in range({n}):")
            body.append(f"{indent}    if i == {int(self.rng.integers(0, n))}:")
            body.append(f"{indent}        {acc.name} = {constant}")
            body.append(f"{indent}    {acc.name} = {acc.name} * 0.9 + np.sin({v.name})")
        else:
            body.append(f'{indent}with np.errstate(invalid="ignore"):')
            body.append(f"{indent}    {acc.name} = {constant}")
        self.uses.add("rebound to a constant")

    def s_try(self, body, indent):
        """``try`` whose body may raise after some of its statements ran (``if ...: raise``), with a
        handler, and ``else``/``finally`` blocks at random."""
        v = self.var()
        name = self.fresh()
        body.append(f"{indent}try:")
        body.append(f"{indent}    {name} = {self.expr(v.shape)}")
        inner = indent + "    "
        if self.chance(0.5):  # the exception may stop a loop in any iteration
            body.append(f"{inner}for i in range({int(self.rng.integers(1, 4))}):")
            inner += "    "
            body.append(f"{inner}{name} = {name} * 0.8 + np.sin({v.name} + 0.5 * i)")
        body.append(f"{inner}if {self.condition()}:")
        body.append(f"{inner}    raise ValueError")
        body.append(f"{inner}{name} = {name} * 0.9 + {self.expr(v.shape)}")
        body.append(f"{indent}except ValueError:")
        body.append(f"{indent}    {name} = {name} * 0.5 + {self.expr(v.shape)}")
        if self.chance(0.4):
            body.append(f"{indent}else:")
            body.append(f"{indent}    {name} = {name} + 0.25")
        if self.chance(0.4):
            body.append(f"{indent}finally:")
            body.append(f"{indent}    {name} = {name} * 1.1")
        self.vars.append(Var(name, v.shape, False, rebound=True))
        self.uses.add("try")

    def s_guarded_conversion(self, body, indent):
        """A conversion that a dual number or a tracked value refuses (``math.sqrt``, ``float``),
        inside ``try`` with a handler that catches the ``TypeError``: Python takes the first path,
        which every engine must follow or refuse, never the handler's."""
        v = self.var(ndim=0)
        if v is None:
            return
        name = self.fresh()
        body.append(f"{indent}try:")
        body.append(f"{indent}    {name} = math.sqrt(float({v.name}) ** 2 + 1.0) * {v.name}")
        body.append(f"{indent}except TypeError:")
        body.append(f"{indent}    {name} = {v.name} * 0.0")
        self.vars.append(Var(name, (), False, rebound=True))
        self.uses.add("guarded conversion")

    def s_isinstance(self, body, indent):
        """A branch on the class of a value being differentiated (``isinstance(v, np.ndarray)``,
        ``isinstance(v, float)``): every engine's own values must take the plain value's branch."""
        v = self.var()
        name = self.fresh()
        # (a number's test holds for float32 and float64 alike: finite differences run in float64)
        kind = "np.ndarray" if v.shape else "(float, np.floating)"
        body.append(f"{indent}if isinstance({v.name}, {kind}):")
        body.append(f"{indent}    {name} = {self.expr(v.shape)}")
        body.append(f"{indent}else:")
        body.append(f"{indent}    {name} = {v.name} * 0.0")
        self.vars.append(Var(name, v.shape, False, rebound=True))
        self.uses.add("isinstance")

    def s_loop_variable(self, body, indent):
        """A loop's variable read after the loop: the last item, or the one a ``break`` stopped at
        (over an array, a reshaped array's rows, a list of values); a variable bound before a loop
        over an empty sequence, which leaves it; one that a loop over constants rebinds."""
        v = self.var()
        item, k = self.fresh("t"), float(np.round(self.rng.uniform(0.5, 1.5), 2))
        style = self.pick(["array", "array", "reshape", "list", "empty", "constants"])
        if style in ("array", "reshape") and not v.shape:
            style = "list"
        self.uses.add(f"loop variable ({style})")
        if style in ("empty", "constants"):
            body.append(f"{indent}{item} = {self.expr(v.shape, 1)}")
            if style == "empty":  # the loop binds nothing: the value before it stays
                empty = ["[]", "()"] + ([f"{v.name}[:0]"] if v.shape else [])
                body.append(f"{indent}for {item} in {self.pick(empty)}:")
                body.append(f"{indent}    pass")
                self.vars.append(Var(item, v.shape, False, rebound=True))
                self.define(body, indent, v.shape, f"np.sin({item}) * {k}")
                return
            name = self.fresh()  # the active value is read, then rebound to 0.5, then to 1.5
            body.append(f"{indent}{name} = np.sin({item})")
            body.append(f"{indent}for {item} in {self.pick(['[0.5, 1.5]', '(0.5, 1.5)'])}:")
            body.append(f"{indent}    {name} = {name} * {item}" if self.chance(0.5) else f"{indent}    pass")
            self.vars += [Var(item, (), False, rebound=True), Var(name, v.shape, False, rebound=True)]
            return
        if style == "array":
            iterable, shape = v.name, v.shape[1:]
        elif style == "reshape":
            size = int(np.prod(v.shape))
            rows = self.pick([d for d in range(1, size + 1) if size % d == 0])
            iterable, shape = f"{v.name}.reshape({rows}, -1)", (size // rows,)
        else:
            same = self.of_shape(v.shape)
            iterable, shape = (
                f"[{', '.join(self.pick(same).name for _ in range(int(self.rng.integers(1, 4))))}]",
                v.shape,
            )
        acc = self.define(body, indent, (), "0.0", owned=False)
        acc.rebound = True
        body.append(f"{indent}for {item} in {iterable}:")
        work = self.pick(["pass", "acc", "break", "acc break"])
        if "acc" in work:
            body.append(f"{indent}    {acc.name} = {acc.name} * 0.8 + np.sum({self.pick(UNARY).format(a=item)})")
        if "break" in work:
            total = f"np.sum({item})" if shape else item
            body.append(f"{indent}    if {total} > {float(np.round(self.rng.uniform(-0.5, 0.5), 2))}:")
            body.append(f"{indent}        break")
        elif work == "pass":
            body.append(f"{indent}    pass")
        self.vars.append(Var(item, shape, False, rebound=True))
        self.define(body, indent, shape, f"{acc.name} + {item} * {k}")

    def s_loop_else(self, body, indent):
        """``for ... else`` and ``while ... else``: a ``break`` skips the ``else`` block, which
        updates a value or returns early."""
        v = self.var()
        acc = self.define(body, indent, v.shape, self.expr(v.shape, 1), owned=False)
        acc.rebound = True
        n, inner = int(self.rng.integers(1, 4)), indent + "    "
        if self.chance(0.5):
            body.append(f"{indent}for i in range({n}):")
            body.append(f"{inner}{acc.name} = {acc.name} * 0.7 + np.sin({v.name} * (i + 1))")
        else:
            counter = self.fresh("k")
            body.append(f"{indent}{counter} = 0")
            body.append(f"{indent}while {counter} < {n}:")
            body.append(f"{inner}{acc.name} = {acc.name} * 1.3 + {v.name} * 0.2")
            body.append(f"{inner}{counter} += 1")
        if self.chance(0.8):
            body.append(f"{inner}if np.sum(np.abs({acc.name})) > {float(np.round(self.rng.uniform(0.5, 3.0), 2))}:")
            body.append(f"{inner}    break")
        body.append(f"{indent}else:")
        if self.chance(0.35):
            self.returns.append(f"{acc.name} * 0.5 + {self.expr(v.shape, 1)}")
            body.append(f"{inner}return FINISH{len(self.returns) - 1}")
            self.uses.add("loop else (return)")
        else:
            body.append(f"{inner}{acc.name} = {acc.name} * 0.5 + {self.expr(v.shape, 1)}")
            self.uses.add("loop else")

    def s_scatter(self, body, indent):
        """Writes through an integer-array index that repeats a position (``buf[[0, 0, 2]] = vals``,
        ``buf[idx] += v``: NumPy keeps one of the values, adds once) into a buffer the function made,
        1-D or 2-D (by rows or by pairs of indexes); the tape and forward mode refuse a plain
        ``np.zeros`` buffer by design."""
        u = self.var(min_len=2)
        if u is None or not u.shape:
            return self.s_buffer(body, indent)
        n, buf = u.shape[0], self.fresh("out")
        if self.chance(0.5):
            body.append(f"{indent}{buf} = np.zeros_like({u.name})")
            self.uses.add("scatter zeros_like")
        else:
            dtype = "" if self.dtype is np.float64 else f", dtype={u.name}.dtype"
            body.append(f"{indent}{buf} = np.zeros({n if len(u.shape) == 1 else u.shape}{dtype})")
            self.uses.add("scatter zeros")
        rows = [int(i) for i in self.rng.integers(0, n, int(self.rng.integers(2, 4)))]
        at = int(self.rng.integers(len(rows) + 1))
        rows.insert(at, rows[0])  # a repeated position
        rows = [i - n if self.chance(0.2) else i for i in rows]  # (maybe a negative alias of it)
        picked = [int(i) for i in self.rng.integers(0, n, len(rows))]  # the rows of u written
        j = int(self.rng.integers(n))
        if len(u.shape) == 2 and self.chance(0.4):  # buf[[i, i, k], [c, c, d]]: elements
            cols = [int(i) for i in self.rng.integers(0, u.shape[1], len(rows))]
            cols[at] = cols[0]
            index, array = f"{rows}, {cols}", f"(np.array({rows}), np.array({cols}))"
            block, single = f"{u.name}[{picked}, {cols}]", f"{u.name}[{j}, {cols[0]}]"
        else:
            index, array = str(rows), f"np.array({rows})"
            block, single = f"{u.name}[{picked}]", f"{u.name}[{j}]"  # (a row, broadcast)
        if self.chance(0.3):  # the index held in a variable
            idx = self.fresh("idx")
            body.append(f"{indent}{idx} = {array}")
            index = idx
        values = [self.pick(UNARY).format(a=block), f"{single} * 1.5"]
        values += [f"{s.name} * 0.5" for s in self.of_shape(())]  # a scalar, broadcast
        for op in self.pick([["="], ["+="], ["=", "+="], ["=", "-="]]):
            body.append(f"{indent}{buf}[{index}] {op} {self.pick(values)}")
        self.vars.append(Var(buf, u.shape, False))
        self.uses.add("scatter " + ("pairs" if "," in index and "idx" not in index else "rows"))

    def s_list_operand(self, body, indent):
        """A Python list or tuple of constants beside an array in a NumPy binary operation
        (``x * [1.0, 2.0]``, ``x ** [...]``, ``np.divide(x, (...))``, ``[...] - x``): NumPy makes an
        array of it (float64: a float32 program's value is promoted)."""
        v = self.var()
        if not v.shape:
            return self.s_binary(body, indent)

        def constants(low: float, high: float) -> str:
            shape = v.shape if len(v.shape) == 2 and self.chance(0.3) else v.shape[-1:]
            values = np.round(self.rng.uniform(low, high, shape), 2).tolist()
            if self.chance(0.3) and len(shape) == 1:  # a tuple
                return f"({', '.join(map(str, values))}{',' if len(values) == 1 else ''})"
            return str(values)

        a = v.name if self.chance(0.6) else f"({self.pick(UNARY).format(a=v.name)})"  # (an operand of * and -)
        options = [
            f"{a} * {constants(-1.5, 1.5)}",
            f"{constants(-1.5, 1.5)} * {a}",
            f"{constants(-1.0, 1.0)} - {a}",
            f"{a} + {constants(-1.0, 1.0)}",
            f"({v.name} * {v.name} + 0.5) ** {constants(0.5, 2.5)}",
            f"np.power(np.abs({v.name}) + 0.5, {constants(0.5, 2.5)})",
            f"np.divide({a}, {constants(0.5, 2.0)})",
            f"np.divide({constants(0.5, 2.0)}, {v.name} * {v.name} + 1.0)",
            f"np.arctan2({a}, {constants(0.5, 2.0)})",
            f"np.arctan2({constants(0.5, 2.0)}, {a})",
            f"np.multiply({constants(-1.5, 1.5)}, {a})",
        ]
        self.define(body, indent, v.shape, self.pick(options))
        self.uses.add("list operand")

    def s_generator(self, body, indent):
        """Generator expressions consumed at once by a call (``sum``, ``max(..., key=abs)``) or an
        unpacking, and one kept in a variable and consumed later, after a value it reads was rebound
        (the source engine refuses that: the entry points take the tape)."""
        u = self.var()
        style = self.pick(["sum", "max", "unpack", "later"])
        if style == "unpack" or not u.shape:
            w = self.var()
            a, b = self.fresh("a"), self.fresh("b")
            pair = self.pick([f"({u.name}, {w.name})", f"[{u.name}, {w.name}]"])
            body.append(f"{indent}{a}, {b} = ({self.pick(UNARY).format(a='t')} for t in {pair})")
            self.vars += [Var(a, u.shape, False), Var(b, w.shape, False)]
            self.uses.add("generator (unpack)")
            return
        term = self.pick(UNARY).format(a="t")
        if style == "sum":
            self.define(body, indent, u.shape[1:], f"sum({term} * 0.5 for t in {u.name})", owned=False)
        elif style == "max" and len(u.shape) == 1:
            op = self.pick(["max", "min"])
            self.define(body, indent, (), f"{op}(({term} for t in {u.name}), key=abs)", owned=False)
        else:
            style = "later"
            k, g = self.fresh("k"), self.fresh("g")
            scalars = [s for s in self.of_shape(()) if s.name != "s" or self.chance(0.5)]
            body.append(f"{indent}{k} = {self.pick(scalars).name + ' * 0.5' if scalars else '0.5'}")
            body.append(f"{indent}{g} = ({term} * {k} for t in {u.name})")
            body.append(f"{indent}{k} = {self.pick([f'{k} * 2.0', '2.0', f'np.cos({k})'])}")
            self.define(body, indent, u.shape[1:], f"sum({g})", owned=False)
            self.vars.append(Var(k, (), False, rebound=True))
        self.uses.add(f"generator ({style})")

    def s_try_finally_return(self, body, indent):
        """``try`` with an early ``return`` in its body and an empty ``finally``."""
        v = self.var()
        name = self.fresh()
        body.append(f"{indent}try:")
        body.append(f"{indent}    {name} = {self.expr(v.shape)}")
        body.append(f"{indent}    if {self.condition()}:")
        self.returns.append(f"{name} * 0.5 + {self.expr(v.shape, 1)}")
        body.append(f"{indent}        return FINISH{len(self.returns) - 1}")
        if self.chance(0.5):
            body.append(f"{indent}    {name} = {name} * 0.9 + {self.expr(v.shape, 1)}")
        body.append(f"{indent}finally:")
        body.append(f"{indent}    pass")
        self.vars.append(Var(name, v.shape, False, rebound=True))
        self.uses.add("try/finally return")

    def s_plain_class(self, body, indent):
        """A plain class (not a dataclass) of the module, built in the function from values being
        differentiated, with a method and ``__mul__``: the source engine refuses building it
        (``NoRuleError``), and the entry points differentiate the function on the tape."""
        if self.chance(0.6):  # (drawn less: a program with one is no longer the source engine's)
            return self.s_binary(body, indent)
        name = f"Scaled{len(self.helpers)}"
        self.helpers.append(
            f"class {name}:\n"
            "    def __init__(self, a, b):\n        self.a = a\n        self.b = b\n\n"
            f"    def combine(self):\n        return {self.pick(UNARY).format(a='self.a')} * self.b + self.a\n\n"
            f"    def __mul__(self, other):\n        return {name}(self.a * other, self.b)\n"
        )
        v = self.var()
        factor = self.pick(self.of_shape(()) + self.of_shape(v.shape) + [Var("0.7", (), False)]).name
        obj = self.fresh("obj")
        body.append(f"{indent}{obj} = {name}({v.name}, {factor})")
        other = self.pick(self.of_shape(()) + self.of_shape(v.shape)).name
        text = self.pick([f"{obj}.combine()", f"({obj} * 1.5).combine()", f"({obj} * {other}).a", f"{obj}.a * {obj}.b"])
        self.define(body, indent, v.shape, text, owned=False)
        self.uses.add("plain class")

    def s_bound_method(self, body, indent):
        """A method of an array read as a value and called later (``m = v.sum; m()``), or one of
        a list of methods picked by position."""
        v = self.var()
        if not v.shape:
            return self.s_unary(body, indent)
        m = self.fresh("m")
        style = self.pick(["sum", "mean", "pick", "reshape"])
        self.uses.add(f"bound method ({style})")
        if style == "pick":
            body.append(f"{indent}{m} = [{v.name}.sum, {v.name}.max, {v.name}.mean][{self.pick([0, 2])}]")
            self.define(body, indent, (), f"{m}() * 0.5")
        elif style == "reshape":
            body.append(f"{indent}{m} = {v.name}.reshape")
            self.define(body, indent, v.shape, f"{m}({v.shape}) * 1.5")
        else:
            body.append(f"{indent}{m} = {v.name}.{style}")
            self.define(body, indent, (), f"{m}() + 0.25")

    def s_list_slice_write(self, body, indent):
        """Items of a list written through a slice (replacing, shrinking, inserting) and read back."""
        v = self.var()
        a, b = self.expr(v.shape, 1), self.expr(v.shape, 1)
        items = self.fresh("items")
        body.append(f"{indent}{items} = [{v.name}, {a}, {b}]")
        slot, value = self.pick(
            [("1:3", f"[{b} * 2.0, {v.name}]"), ("1:3", f"({a} * {a},)"), ("1:1", f"[{b}]"), ("::2", f"[{b}, {a}]")]
        )
        self.uses.add(f"list slice write [{slot}]")
        body.append(f"{indent}{items}[{slot}] = {value}")
        self.define(body, indent, v.shape, f"{items}[0] * {items}[1] + {items}[-1]")

    def s_dict_get(self, body, indent):
        """Sums by key in a dict the function made, read back with ``d.get(key, 0.0)``."""
        v = self.var()
        d, k = self.fresh("d"), self.fresh("k")
        self.uses.add("dict get accumulation")
        body.append(f"{indent}{d} = {{}}")
        body.append(f"{indent}for {k} in range(3):")
        body.append(f"{indent}    {d}[{k} % 2] = {d}.get({k} % 2, 0.0) + {v.name} * ({k} + 1.0)")
        self.define(body, indent, v.shape, f"{d}[0] * {d}.get(1, 1.0)")

    def s_element_updates(self, body, indent):
        """Accumulators in a list or dict the function made (a display, a comprehension), updated
        in place by ``acc[k] += ...`` in a loop (the source engine writes the result back)."""
        v = self.var()
        acc, k = self.fresh("acc"), self.fresh("k")
        zeros = f"np.zeros({v.shape}, dtype={v.name}.dtype)" if v.shape else "0.0"
        kind = self.pick(["display", "comprehension", "dict"])
        self.uses.add(f"element updates ({kind})")
        keys = ["0", "1"] if kind != "dict" else ["'a'", "'b'"]
        if kind == "display":
            body.append(f"{indent}{acc} = [{zeros}, {zeros}]")
        elif kind == "comprehension":
            body.append(f"{indent}{acc} = [{zeros} for _ in range(2)]")
        else:
            body.append(f"{indent}{acc} = {{'a': {zeros}, 'b': {zeros}}}")
        body.append(f"{indent}for {k} in range({self.pick([2, 3])}):")
        key = f"{keys[0]} if {k} % 2 == 0 else {keys[1]}"
        body.append(f"{indent}    {acc}[{key}] {self.pick(['+=', '-='])} np.sin({v.name} * ({k} + 1.0))")
        body.append(f"{indent}    {acc}[{keys[1]}] *= 0.5")
        self.define(body, indent, v.shape, f"{acc}[{keys[0]}] * 0.7 + {acc}[{keys[1]}]")

    def s_power_by_counter(self, body, indent):
        """A polynomial in a value by a loop counter's powers (``x ** k``, the first power 0), at
        a value that may be 0 (its elements clipped to a grid that holds 0)."""
        v = self.var()
        x, s, k = self.fresh("z"), self.fresh("s"), self.fresh("k")
        self.uses.add("power by loop counter")
        body.append(f"{indent}{x} = {v.name} * {self.pick(['0.0', '1.0', '0.5'])}")
        body.append(f"{indent}{s} = {x} * 0.0")
        body.append(f"{indent}for {k} in range({self.pick([3, 4])}):")
        body.append(f"{indent}    {s} = {s} + {x} ** {k} * 0.5")
        self.vars.append(Var(s, v.shape, False, rebound=True))

    def s_tuple(self, body, indent):
        a, b = self.var(), self.var()
        pair = self.fresh("pair")
        body.append(f"{indent}{pair} = ({a.name}, {b.name})")
        p, q = self.fresh("p"), self.fresh("q")
        body.append(f"{indent}{p}, {q} = {pair}")
        a.owned = b.owned = False
        self.vars += [Var(p, a.shape, False), Var(q, b.shape, False)]
        self.uses.add("tuple")

    def s_list(self, body, indent):
        u = self.var(ndim=1)
        if u is None:
            return self.s_tuple(body, indent)
        vals = self.fresh("vals")
        body.append(f"{indent}{vals} = []")
        body.append(f"{indent}for i in range({u.shape[0]}):")
        body.append(f"{indent}    {vals}.append({self.pick(UNARY).format(a=f'{u.name}[i]')})")
        if self.chance(0.5):
            self.define(body, indent, (u.shape[0],), f"np.stack({vals})")
        else:
            self.define(body, indent, (), f"sum({vals})", owned=False)
        self.uses.add("list")

    def s_helper(self, body, indent):
        name = f"helper{len(self.helpers)}"
        text = self.pick(HELPERS)
        self.helpers.append(f"def {name}(u, c=0.7):\n    {text}\n")
        v = self.var()
        call = self.pick([f"{name}({v.name})", f"{name}({v.name}, 1.3)", f"{name}({v.name}, c=0.4)"])
        self.define(body, indent, v.shape, call)
        self.uses.add("helper")

    def s_closure(self, body, indent):
        v = self.var()
        once = [u for u in self.of_shape(()) + self.of_shape(v.shape) if not u.rebound]
        if not once:
            return self.s_unary(body, indent)
        captured = self.pick(once)
        captured.owned = False  # a closure reads it: `+=` would be seen by the closure
        name = self.fresh("scaled")
        factor = captured.name
        body.append(f"{indent}def {name}(u):")
        body.append(f"{indent}    return np.sin(u) * {factor} + u")
        self.define(body, indent, v.shape, f"{name}({v.name})")
        self.uses.add("closure")

    def s_iadd(self, body, indent):
        own = [v for v in self.vars if v.owned and v.shape]
        if not own:
            return self.s_binary(body, indent)
        v = self.pick(own)
        body.append(f"{indent}{v.name} += {self.expr(v.shape, 1)}")
        v.rebound = True
        self.uses.add("+=")

    def s_buffer(self, body, indent):
        u = self.var(ndim=1)
        if u is None:
            return self.s_unary(body, indent)
        n = u.shape[0]
        buf = self.fresh("out")
        if self.chance(0.4):
            body.append(f"{indent}{buf} = np.zeros_like({u.name})")
            self.uses.add("buffer zeros_like")
        else:
            dtype = "" if self.dtype is np.float64 else f", dtype={u.name}.dtype"
            body.append(f"{indent}{buf} = np.zeros({n}{dtype})")
            self.uses.add("buffer zeros")
        value = self.pick(UNARY).format(a=f"{u.name}[i]")
        style = self.pick(["set", "set", "add", "slice"])
        if style == "slice" and n > 1:
            body.append(f"{indent}{buf}[1:] = {self.pick(UNARY).format(a=f'{u.name}[:-1]')}")
            body.append(f"{indent}{buf}[0] = {u.name}[-1]")
        else:
            body.append(f"{indent}for i in range({n}):")
            if style == "add":
                body.append(f"{indent}    {buf}[i] += {value}")
                body.append(f"{indent}    {buf}[i] += {u.name}[(i + 1) % {n}] * 0.5")
            else:
                if self.chance(0.5):
                    value += f" + ({buf}[i - 1] if i > 0 else 0.0)"
                body.append(f"{indent}    {buf}[i] = {value}")
        self.vars.append(Var(buf, (n,), False))

    def s_time_steps(self, body, indent):
        """Rows of a buffer filled one after another from the rows before (an explicit Euler
        scheme), through a helper or inline, sometimes with a running sum over the rows written."""
        u = self.var(ndim=1)
        if u is None:
            return self.s_buffer(body, indent)
        n, steps = u.shape[0], int(self.rng.integers(2, 5))
        buf = self.fresh("traj")
        dtype = "" if self.dtype is np.float64 else f", dtype={u.name}.dtype"
        body.append(f"{indent}{buf} = np.zeros(({steps}, {n}){dtype})")
        body.append(f"{indent}{buf}[0] = {u.name}")
        if self.chance(0.5):
            name = f"helper{len(self.helpers)}"
            self.helpers.append(f"def {name}(u, c=0.7):\n    {self.pick(HELPERS)}\n")
            step = f"{name}({buf}[t])"
        else:
            step = self.pick(UNARY).format(a=f"{buf}[t]")
        total = self.define(body, indent, (), "0.0", owned=False) if self.chance(0.5) else None
        body.append(f"{indent}for t in range({steps - 1}):")
        body.append(f"{indent}    {buf}[t + 1] = {buf}[t] * 0.9 + 0.1 * {step}")
        if total is not None:
            total.rebound = True
            row = self.pick(UNARY).format(a=f"{buf}[t + 1]")
            body.append(f"{indent}    {total.name} = {total.name} + np.sum({row})")
        self.define(body, indent, (n,), f"{buf}[-1] + 0.5 * np.sum({buf}, axis=0)")
        self.uses.add("time steps")

    def s_rows(self, body, indent):
        m = self.var(ndim=2)
        if m is None:
            return self.s_list(body, indent)
        acc = self.define(body, indent, (), "0.0", owned=False)
        acc.rebound = True
        body.append(f"{indent}for row in {m.name}:")
        body.append(f"{indent}    {acc.name} = {acc.name} + np.sum({self.pick(UNARY).format(a='row')})")
        self.uses.add("for row")

    def s_break(self, body, indent):
        v = self.var()
        acc = self.define(body, indent, v.shape, self.expr(v.shape, 1), owned=False)
        acc.rebound = True
        limit = float(np.round(self.rng.uniform(0.5, 3.0), 2))
        if self.chance(0.5):
            body.append(f"{indent}for i in range({int(self.rng.integers(2, 5))}):")
            body.append(f"{indent}    {acc.name} = {acc.name} * 0.7 + np.sin({v.name} * (i + 1))")
            body.append(f"{indent}    if np.sum(np.abs({acc.name})) > {limit}:")
            body.append(f"{indent}        break")
        else:
            counter = self.fresh("k")
            body.append(f"{indent}{counter} = 0")
            body.append(f"{indent}while {counter} < 4 and np.sum(np.abs({acc.name})) < {limit}:")
            body.append(f"{indent}    {acc.name} = {acc.name} * 1.3 + {v.name} * 0.2")
            body.append(f"{indent}    {counter} += 1")
        self.uses.add("break")

    def s_centered(self, body, indent):
        m = self.var(ndim=2)
        if m is None:
            return self.s_reduce(body, indent)
        axis = int(self.rng.integers(2))
        op = self.pick(["mean", "sum", "max"])
        self.define(body, indent, m.shape, f"{m.name} - np.{op}({m.name}, axis={axis}, keepdims=True)")
        self.uses.add("keepdims")

    def s_default_closure(self, body, indent):
        v = self.var()
        k = self.pick(self.of_shape(()) + self.of_shape(v.shape))
        name = self.fresh("inner")
        body.append(f"{indent}def {name}(u, k={k.name}):")
        body.append(f"{indent}    return {self.pick(UNARY).format(a='u')} * k")
        self.define(body, indent, v.shape, f"{name}({v.name})")
        self.uses.add("default closure")

    def s_view_update(self, body, indent):
        """Writes through views: into a buffer the function made (np.zeros_like, a copy), by a
        slice, a slice's name or ``out=``; and, rarely, into a view of a computed array (refused)."""
        u = self.var(min_len=2)
        if u is None or not u.shape or self.chance(0.4):  # (the reverse engines refuse most of these: drawn less)
            return self.s_binary(body, indent)
        head, tail = f"{u.name}[1:]", f"{u.name}[:-1]"
        if self.chance(0.1):  # a view of an array that is not a buffer: every engine refuses
            v = self.define(body, indent, u.shape, self.pick(UNARY).format(a=u.name), owned=False)
            view = self.fresh("r")
            body.append(f"{indent}{view} = {v.name}[1:]")
            body.append(f"{indent}{view} += {self.pick(UNARY).format(a=tail)}")
            self.uses.add("+= on a view")
            return
        buf = self.fresh("b")
        if self.chance(0.5):
            body.append(f"{indent}{buf} = np.zeros_like({u.name})")
        else:
            body.append(f"{indent}{buf} = ({self.expr(u.shape, 1)}).copy()")
        # (`out=` is refused by every engine: drawn rarely)
        style = self.pick(["slice", "slice", "view", "view", "reshape", "column", "column", "out"])
        if style == "column" and (len(u.shape) != 2 or u.shape[1] < 2):
            style = "slice"
        if style == "slice":
            op = self.pick(["+=", "-=", "*="])
            value = self.pick(UNARY).format(a=head) if op != "*=" else "1.5"
            body.append(f"{indent}{buf}[:-1] {op} {value}")
        elif style == "view":
            view = self.fresh("r")
            body.append(f"{indent}{view} = {buf}[1:]")
            body.append(f"{indent}{view} += {self.pick(UNARY).format(a=tail)}")
            if self.chance(0.5):
                body.append(f"{indent}{view} *= 0.5")
            self.vars.append(Var(view, (u.shape[0] - 1, *u.shape[1:]), False, rebound=True))
        elif style == "reshape":  # a view taken before the write sees it
            flat = self.fresh("t")
            body.append(f"{indent}{flat} = {buf}.reshape(-1)")
            body.append(f"{indent}{buf} += {self.pick(UNARY).format(a=u.name)}")
            self.vars.append(Var(flat, (int(np.prod(u.shape)),), False))
        elif style == "column":
            body.append(f"{indent}{buf}[:, 0] += {self.pick(UNARY).format(a=f'{u.name}[:, 1]')}")
        else:
            body.append(f"{indent}np.add({buf}, {self.pick(UNARY).format(a=u.name)}, out={buf})")
            self.uses.add("out=")
        self.vars.append(Var(buf, u.shape, False, rebound=style == "reshape"))  # (`buf += v` binds it again)
        self.uses.add(f"view write ({style})")

    def s_dtype_mix(self, body, indent):
        """NumPy's promotion: a NumPy float64 scalar or array with the program's (maybe float32) values."""
        v = self.var()
        options = [f"{v.name} + np.float64(0.25)", f"np.float64(1.5) * {v.name}"]
        if v.shape:
            options.append(f"{v.name} * np.linspace(0.5, 1.5, {v.shape[-1]})")
            options.append(f"np.sum({v.name}) + np.sin(np.float64(0.3))")
        if any(w.name == "s" for w in self.vars):
            options.append(f"{v.name} * np.cos(s)")  # np.cos of a Python float is np.float64
        text = self.pick(options)
        self.define(body, indent, () if text.startswith("np.sum") else v.shape, text)
        self.uses.add("dtype mix")

    def s_unpack(self, body, indent):
        v, w = self.var(), self.var()
        a, b, c = self.fresh("a"), self.fresh("b"), self.fresh("c")
        style = self.pick(["pair", "nested", "star"])
        if style == "pair":
            body.append(f"{indent}{a}, {b} = {self.pick(UNARY).format(a=v.name)}, {self.pick(UNARY).format(a=w.name)}")
            self.vars += [Var(a, v.shape, True), Var(b, w.shape, True)]
        elif style == "nested":
            body.append(f"{indent}({a}, {b}), {c} = ({v.name}, {w.name}), np.sin({v.name})")
            self.vars += [Var(a, v.shape, False), Var(b, w.shape, False), Var(c, v.shape, True)]
        else:
            body.append(f"{indent}{a}, *{b} = [np.tanh({v.name}), {w.name}, {v.name}]")
            self.vars += [Var(a, v.shape, True)]
            if v.shape == w.shape or not w.shape:
                body.append(f"{indent}{c} = {b}[1] * {b}[0] if len({b}) == 2 else {a}")
                self.vars.append(Var(c, v.shape, False))
        v.owned = w.owned = False
        self.uses.add(f"unpack ({style})")

    def s_nested_helper(self, body, indent):
        v = self.var()
        name = self.fresh("outer")
        body.append(f"{indent}def {name}(u):")
        body.append(f"{indent}    def twice(t):")
        body.append(f"{indent}        return {self.pick(UNARY).format(a='t')} * 0.5 + t")
        body.append(f"{indent}    return twice(twice(u))")
        self.define(body, indent, v.shape, f"{name}({v.name})")
        self.uses.add("nested helper")

    def square(self, body, indent) -> Var | None:
        """A well-conditioned square matrix made from a variable: 2 I plus a small perturbation."""
        v = self.pick([u for u in self.vars if 1 <= len(u.shape) <= 2] or [None])
        if v is None:
            return None
        if len(v.shape) == 1:
            (n,) = v.shape
            text = f"2.0 * np.eye({n}) + 0.2 * np.outer(np.tanh({v.name}), np.cos({v.name}))"
        else:
            n = v.shape[0]
            text = f"2.0 * np.eye({n}) + 0.1 * np.tanh({v.name} @ {v.name}.T)"
        return self.define(body, indent, (n, n), text)

    def s_linalg(self, body, indent):
        """np.linalg on a well-conditioned matrix: solve, inv, det, slogdet, and norms."""
        A = self.square(body, indent)
        if A is None:
            return self.s_unary(body, indent)
        n = A.shape[0]
        rhs = [u.name for u in self.of_shape((n,))] + [f"np.sum({A.name}, axis=1)"]
        b = self.pick(rhs)
        style = self.pick(["solve", "solve-matrix", "inv", "det", "slogdet", "norm", "norm-fro", "norm-axis"])
        if style == "solve":
            self.define(body, indent, (n,), f"np.linalg.solve({A.name}, {b})")
        elif style == "solve-matrix":
            self.define(body, indent, (n, n), f"np.linalg.solve({A.name}, np.sin({A.name}))")
        elif style == "inv":
            self.define(body, indent, (n,), f"np.linalg.inv({A.name}) @ {b}")
        elif style == "det":
            self.define(body, indent, (), f"np.linalg.det({A.name}) * 0.1")
        elif style == "slogdet":
            sign, logdet = self.fresh("sign"), self.fresh("logdet")
            body.append(f"{indent}{sign}, {logdet} = np.linalg.slogdet({A.name})")
            self.vars.append(Var(logdet, (), False))
        elif style == "norm":
            self.define(body, indent, (), f"np.linalg.norm({b})")
        elif style == "norm-fro":
            self.define(body, indent, (), f"np.linalg.norm({A.name})")
        else:
            self.define(body, indent, (n,), f"np.linalg.norm({A.name}, axis={int(self.rng.integers(2))})")
        self.uses.add(f"linalg ({style})")

    def s_special(self, body, indent):
        """SciPy's special functions and NumPy's cumulative, sorting and clipping functions."""
        v = self.var()
        if not v.shape:
            options = [((), f"expit({v.name})"), ((), f"gammaln({v.name} * {v.name} + 1.0)")]
        else:
            options = [
                ((), f"logsumexp({v.name})"),
                (v.shape, f"expit({v.name})"),
                (v.shape, f"gammaln({v.name} * {v.name} + 0.5)"),
                (v.shape, f"np.clip({v.name}, -0.5, 0.6)"),
                (v.shape, f"np.abs({v.name} - 2.0)"),
                ((int(np.prod(v.shape)),), f"np.cumsum({v.name})"),
                (v.shape, f"np.sort({v.name})"),
            ]
            if len(v.shape) == 2:
                axis = int(self.rng.integers(2))
                options += [
                    ((v.shape[1 - axis],), f"logsumexp({v.name}, axis={axis})"),
                    (v.shape, f"np.cumsum({v.name}, axis={axis})"),
                    (v.shape, f"np.sort({v.name}, axis={axis})"),
                ]
        shape, text = self.pick(options)
        self.define(body, indent, shape, text)
        self.uses.add("special " + text.split("(")[0])

    def s_einsum(self, body, indent):
        v = self.var()
        if not v.shape or len(v.shape) > 2:
            return self.s_unary(body, indent)
        if len(v.shape) == 1:
            (n,) = v.shape
            u = self.pick(self.of_shape(v.shape))
            spec, shape, operands = self.pick(
                [("i,i->", (), [v, u]), ("i,j->ij", (n, n), [v, u]), ("i->", (), [v]), ("i,i->i", (n,), [v, u])]
            )
        else:
            r, c = v.shape
            vectors = self.of_shape((c,))
            options = [
                ("ij->ji", (c, r), [v]),
                ("ij->i", (r,), [v]),
                ("ij,ij->", (), [v, v]),
                ("ij,kj->ik", (r, r), [v, v]),
            ]
            if vectors:
                options.append(("ij,j->i", (r,), [v, self.pick(vectors)]))
            spec, shape, operands = self.pick(options)
        names = ", ".join(o.name for o in operands)
        self.define(body, indent, shape, f"np.einsum('{spec}', {names})", owned=False)
        self.uses.add("einsum")

    def s_while_continue(self, body, indent):
        v = self.var()
        acc = self.define(body, indent, v.shape, self.expr(v.shape, 1), owned=False)
        acc.rebound = True
        k, skip = self.fresh("k"), int(self.rng.integers(1, 4))
        body.append(f"{indent}{k} = 0")
        body.append(f"{indent}while True:")
        body.append(f"{indent}    {k} += 1")
        body.append(f"{indent}    if {k} > {int(self.rng.integers(2, 5))}:")
        body.append(f"{indent}        break")
        body.append(f"{indent}    if {k} == {skip}:")
        body.append(f"{indent}        continue")
        body.append(f"{indent}    {acc.name} = {acc.name} * 0.8 + np.sin({v.name} * {k})")
        self.uses.add("while break/continue")

    def s_nested_loops(self, body, indent):
        v = self.var()
        acc = self.define(body, indent, v.shape, self.expr(v.shape, 1), owned=False)
        acc.rebound = True
        body.append(f"{indent}for i in range({int(self.rng.integers(1, 3))}):")
        body.append(f"{indent}    for j in range({int(self.rng.integers(1, 3))}):")
        if self.chance(0.5):
            body.append(f"{indent}        if i == j:")
            body.append(f"{indent}            continue")
        body.append(f"{indent}        {acc.name} = {acc.name} * 0.9 + np.cos({v.name} * (i - j)) * 0.3")
        self.uses.add("nested loops")

    def s_recursion(self, body, indent):
        name = f"rec{len(self.helpers)}"
        step = self.pick(["np.sin(u) * 0.8 + u * 0.1", "np.tanh(u * 1.2) - u * 0.2", "u * u * 0.3 + np.cos(u)"])
        self.helpers.append(
            f"def {name}(u, depth):\n    if depth == 0:\n        return u\n    return {name}({step}, depth - 1)\n"
        )
        v = self.var()
        self.define(body, indent, v.shape, f"{name}({v.name}, {int(self.rng.integers(1, 4))})")
        self.uses.add("recursion")

    def s_comprehension(self, body, indent):
        u = self.var(ndim=1)
        m = self.var(ndim=2)
        options = []
        if u is not None:
            (n,) = u.shape
            term = self.pick(UNARY).format(a="t")
            options += [
                ((n,), f"np.stack([{term} for t in {u.name}])"),
                ((), f"sum({self.pick(UNARY).format(a=f'{u.name}[i]')} for i in range({n}))"),
                ((n,), f"np.array([t * (i + 1) for i, t in enumerate({u.name})])"),
                ((), f"sum([{term} * 0.5 for t in {u.name}])"),
            ]
            partners = [w for w in self.of_shape(u.shape) if w is not u] or [u]
            w = self.pick(partners)
            options.append(((), f"sum(a * np.sin(b) for a, b in zip({u.name}, {w.name}))"))
        if m is not None:
            options.append(((), f"sum(np.sum(np.sin(row)) * (k + 1) for k, row in enumerate({m.name}))"))
            options.append(((m.shape[1],), f"np.stack([row * 0.5 for row in {m.name}]).sum(axis=0)"))
        if not options:
            return self.s_unary(body, indent)
        shape, text = self.pick(options)
        self.define(body, indent, shape, text, owned=False)
        self.uses.add("comprehension")

    def final(self) -> str:
        last = self.vars[-1]
        if len(self.vars) > 2 and self.chance(0.5):
            other = self.pick(self.vars[:-1])
            if other.shape == last.shape or not other.shape:
                return f"{last.name} + {other.name}"
        return last.name

    # -- the module
    def source(self) -> str:
        finish_scalar = self.pick(["np.sum(({e}) ** 2)", "np.sum(np.sin({e}))", "np.mean(np.tanh({e})) * 3.0"])
        lines = ["import math", "import numpy as np", "from scipy.special import expit, gammaln, logsumexp", "", ""]
        for helper in self.helpers:
            lines += [helper, ""]
        for name, finish in (("f", finish_scalar), ("f_vec", "np.ravel({e})")):
            lines.append(f"def {name}({', '.join(self.params)}):")
            for line in self.lines + [f"    return FINISH{len(self.returns) - 1}"]:
                lines.append(re.sub(r"FINISH(\d+)", lambda m: finish.format(e=self.returns[int(m[1])]), line))
            lines += ["", ""]
        names = ", ".join(f'"{p}"' for p in self.params)
        header = ["import collections", "import dataclasses", "", ""]
        if self.structure == "dataclass":
            fields = "".join(f"\n    {p}: {'float' if p == 's' else 'np.ndarray'}" for p in self.params)
            header += ["@dataclasses.dataclass", f"class Inputs:{fields}", "", ""]
        elif self.structure == "namedtuple":
            header += [f"Inputs = collections.namedtuple('Inputs', [{names}])", ""]
        header += ["Outputs = collections.namedtuple('Outputs', ['vec', 'total'])", ""]
        lines[2:2] = header
        if self.structure in ("tuple", "list"):
            unpack = [f"    {', '.join(self.params)}{',' if len(self.params) == 1 else ''} = p"]
        elif self.structure == "dict":
            unpack = [f'    {p} = p["{p}"]' for p in self.params]
        elif self.structure == "nested":  # {"x": x, "rest": (s, w)}
            rest = self.params[1:]
            unpack = [f'    {self.params[0]} = p["{self.params[0]}"]']
            unpack.append(f"    {', '.join(rest)}{',' if len(rest) == 1 else ''} = p['rest']")
        else:
            unpack = [f"    {p} = p.{p}" for p in self.params]
        vec = "np.ravel({e})"
        pair = {
            "tuple": f"({vec}, {finish_scalar})",
            "dict": f'{{{{"vec": {vec}, "total": {finish_scalar}}}}}',
            "namedtuple": f"Outputs({vec}, total={finish_scalar})",
        }[self.out_structure]
        api = {
            None: f"({finish_scalar}) * scale",
            "value": f"(({finish_scalar}) * scale, {{e}})",
            "dict": f'(({finish_scalar}) * scale, {{{{"last": {{e}}, "scale": scale}}}})',
        }[self.has_aux]
        signatures = (
            ("f_struct(p)", unpack, finish_scalar),
            ("f_struct_out(p)", unpack, pair),
            (f"f_api({', '.join(self.params)}, scale=1.0)", [], api),
        )
        for signature, head, finish in signatures:
            lines.append(f"def {signature}:")
            lines += head
            for line in self.lines + [f"    return FINISH{len(self.returns) - 1}"]:
                lines.append(re.sub(r"FINISH(\d+)", lambda m: finish.format(e=self.returns[int(m[1])]), line))
            lines += ["", ""]
        return "\n".join(lines)


# ----- running one program ----------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    programs: int = 0
    dropped: int = 0  # non-finite values, or a kink under the input
    checks: dict = dataclasses.field(default_factory=dict)  # check -> [passed, refused]
    failures: list = dataclasses.field(default_factory=list)  # (label, source, args, [(check, message)])
    refusals: dict = dataclasses.field(default_factory=dict)  # documented refusal -> count

    def count(self, check: str, slot: int) -> None:
        self.checks.setdefault(check, [0, 0])[slot] += 1


def load(source: str, directory: Path, name: str):
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, str(path)


def fd_gradient(f: Callable, args: tuple, i: int, h: float) -> np.ndarray | float:
    """Central differences of scalar ``f`` in argument ``i``, in float64."""
    x = np.asarray(args[i], dtype=np.float64)
    flat = x.reshape(-1)
    out = np.zeros(flat.size)
    for k in range(flat.size):
        results = []
        for sign in (1.0, -1.0):
            z = flat.copy()
            z[k] += sign * h
            arg = z.reshape(x.shape) if isinstance(args[i], np.ndarray) else float(z[0])
            results.append(np.asarray(f(*args[:i], arg, *args[i + 1 :]), dtype=np.float64))
        out[k] = (results[0] - results[1]).sum() / (2 * h)
    return out.reshape(x.shape)


def fd_jacobian(f: Callable, x: np.ndarray, h: float) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    columns = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        columns.append((np.ravel(f(x + e.reshape(x.shape))) - np.ravel(f(x - e.reshape(x.shape)))) / (2 * h))
    return np.stack(columns, axis=-1).reshape(np.shape(f(x)) + x.shape)


def fd_jacobian_in(f: Callable, args: tuple, i: int, h: float) -> np.ndarray:
    """Central differences of ``f``'s raveled output in argument ``i``: shape ``out.shape + args[i].shape``."""
    x = np.asarray(args[i], dtype=np.float64)

    def at(z):
        arg = z if isinstance(args[i], np.ndarray) else float(z)
        return np.ravel(np.asarray(f(*args[:i], arg, *args[i + 1 :]), dtype=np.float64))

    return fd_jacobian(at, x, h)


def part(t, key, index: int):
    """The part of a structural tangent (``Tangent[P]``) for a field or key (or position ``index``)."""
    if isinstance(t, cr.AbstractZero):
        return t
    backing = t.backing
    return backing[index] if isinstance(backing, tuple) else backing.get(key, cr.ZeroTangent())


def dense(t, like) -> np.ndarray:
    """A tangent as an array of ``like``'s shape (a zero is zeros)."""
    return np.zeros(np.shape(like)) if isinstance(t, cr.AbstractZero) else np.asarray(t)


def close(got, want, rtol: float) -> str | None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    err = float(np.max(np.abs(got - want), initial=0.0))
    if not np.all(np.isfinite(got)) or err > rtol * scale:
        shown = f"\n      got      {got.ravel()[:8]}\n      expected {want.ravel()[:8]}"
        return f"max error {err:.3g} (scale {scale:.3g}):{shown}"
    return None


def as64(args: tuple) -> tuple:
    return tuple(np.asarray(a, dtype=np.float64) if isinstance(a, np.ndarray) else a for a in args)


def run_check(check: str, body: Callable, path: str, outcome: Outcome, problems: list) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            message = body()
    except (TypeError, ValueError, cr.ChainRulesError) as err:
        text = str(err)
        if isinstance(err, ValueError) and not isinstance(err, cr.ChainRulesError):
            problems.append((check, f"crash: {type(err).__name__}: {err}\n{traceback.format_exc()[-1500:]}"))
            return
        documented = any(fragment in text for fragment in DOCUMENTED_REFUSALS[check])
        if documented and path in text:
            outcome.count(check, 1)
            reason = next(fragment for fragment in DOCUMENTED_REFUSALS[check] if fragment in text)
            outcome.refusals[reason] = outcome.refusals.get(reason, 0) + 1
            return
        why = "an undocumented refusal" if path in text else "a refusal that does not name the program's line"
        problems.append((check, f"{why}: {type(err).__name__}: {text[:600]}"))
        return
    except Exception as err:  # noqa: BLE001 - any other exception on valid code is a crash
        problems.append((check, f"crash: {type(err).__name__}: {err}\n{traceback.format_exc()[-1500:]}"))
        return
    if message:
        problems.append((check, message))
    else:
        outcome.count(check, 0)


def check_program(program: Program, directory: Path, label: str, outcome: Outcome, only: list[str] | None) -> None:
    source = program.source()
    module, path = load(source, directory, re.sub(r"\W", "_", label))
    f, f_vec, args = module.f, module.f_vec, tuple(program.args)
    rtol = TOLERANCE[program.dtype]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = f(*args)
        y64 = f(*as64(args))
        if not np.all(np.isfinite(y64)) or abs(float(y64)) > 1e6:
            outcome.dropped += 1
            return
        differentiable = [i for i, a in enumerate(args)]
        fd = [fd_gradient(f, as64(args), i, 1e-6) for i in differentiable]
        fd_coarse = [fd_gradient(f, as64(args), i, 1e-4) for i in differentiable]
    if any(close(a, b, 1e-5) for a, b in zip(fd, fd_coarse)):
        outcome.dropped += 1  # the input sits on (or next to) a kink: finite differences are no reference
        return
    outcome.programs += 1
    problems: list = []
    wanted = [c for c in CHECKS if only is None or c in only]
    first = args[0]
    rest = args[1:]
    hessian_draw = program.rng.random() < 1 / 3

    def reverse(engine: str) -> Callable:
        def body():
            value, back = cr.pullback(f, *args, engine=engine)
            grads = back(1.0)
            bad = close(value, y, 1e-5 if program.dtype is np.float32 else 1e-10)
            if bad:
                return f"value: {bad}"
            for i, (g, want, arg) in enumerate(zip(grads, fd, args)):
                if isinstance(g, cr.AbstractZero):  # documented: an output that does not depend on the input
                    g = np.zeros(np.shape(arg), dtype=getattr(arg, "dtype", np.float64))
                    bad = close(g, want, rtol)
                    if bad:
                        return f"d(argument {i}) is {type(grads[i]).__name__}: {bad}"
                    continue
                if isinstance(arg, np.ndarray) and (not isinstance(g, np.ndarray) or g.dtype != arg.dtype):
                    return f"d(argument {i}) is {type(g).__name__} {getattr(g, 'dtype', '')}, the input {arg.dtype}"
                bad = close(g, want, rtol)
                if bad:
                    return f"d(argument {i}): {bad}"
            return None

        return body

    def jvp():
        tangents = tuple(
            program.rng.standard_normal(np.shape(a)).astype(program.dtype) if isinstance(a, np.ndarray) else 0.6
            for a in args
        )
        value, dy = cr.jvp(f, args, tangents)
        want = sum(float(np.sum(g * np.asarray(t, dtype=np.float64))) for g, t in zip(fd, tangents))
        bad = close(value, y, 1e-5 if program.dtype is np.float32 else 1e-10)
        return f"value: {bad}" if bad else close(dense(dy, value), want, rtol)

    def first_argument(g: Callable) -> Callable:
        return lambda z: g(z, *rest)

    jacobian_reference = []

    def jacobian(mode: str, engine: str = "source") -> Callable:
        def body():
            J = cr.jacobian(first_argument(f_vec), first, mode=mode, engine=engine)
            if not jacobian_reference:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    jacobian_reference.append(fd_jacobian(lambda z: f_vec(z, *as64(rest)), first, 1e-6))
            expected = np.result_type(first.dtype, np.asarray(f_vec(*args)).dtype)  # float32 only if both are
            if np.asarray(J).dtype != expected:
                return f"the Jacobian is {np.asarray(J).dtype}, expected {expected}"
            return close(J, jacobian_reference[0], rtol)

        return body

    def hessian(engine: str) -> Callable:
        def body():
            H = cr.hessian(first_argument(f), first, engine=engine)
            x64 = np.asarray(first, dtype=np.float64)

            def gradient(z):
                g = cr.gradient(f, z, *as64(rest), engine=engine)[0]
                return np.zeros(np.shape(z)) if isinstance(g, cr.AbstractZero) else g

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                reference = fd_jacobian(gradient, x64, 1e-5)
            return close(H, reference, max(rtol, 1e-4))

        return body

    structure = {"tuple": tuple, "list": list, "dict": dict, "nested": dict}.get(program.structure)
    structure = structure or module.Inputs

    def structured(values: list):
        if program.structure in ("tuple", "list"):
            return structure(values)
        if program.structure == "nested":
            return {program.params[0]: values[0], "rest": tuple(values[1:])}
        fields = dict(zip(program.params, values))
        return fields if program.structure == "dict" else structure(**fields)

    def leaf(t, i: int):
        """The part of a tangent of ``p`` for argument ``i``."""
        if program.structure == "nested":
            return part(t, program.params[0], 0) if i == 0 else part(part(t, "rest", 1), None, i - 1)
        return part(t, program.params[i], i)

    p = structured(list(args))

    def struct_gradient(engine: str) -> Callable:
        def body():
            (g,) = cr.gradient(module.f_struct, p, engine=engine)
            # (documented: ZeroTangent() when the output does not depend on the input)
            if not isinstance(g, (cr.Tangent[structure], cr.AbstractZero)):
                return f"the gradient is a {type(g).__name__}, expected a Tangent[{structure.__name__}]"
            for i, (name, arg) in enumerate(zip(program.params, args)):
                got = leaf(g, i)
                if isinstance(arg, np.ndarray) and not isinstance(got, cr.AbstractZero) and got.dtype != arg.dtype:
                    return f"d{name} is {getattr(got, 'dtype', type(got).__name__)}, the input {arg.dtype}"
                bad = close(dense(got, arg), fd[i], rtol)
                if bad:
                    return f"d{name}: {bad}"
            return None

        return body

    def struct_jvp():
        tangents = [
            program.rng.standard_normal(np.shape(a)).astype(program.dtype) if isinstance(a, np.ndarray) else 0.6
            for a in args
        ]
        if program.structure in ("dataclass", "namedtuple") and not program.tangent_as_value:
            tangent = cr.Tangent[structure](**dict(zip(program.params, tangents)))
        else:
            tangent = structured(tangents)
        value, dy = cr.jvp(module.f_struct, (p,), (tangent,))
        want = sum(float(np.sum(g * np.asarray(t, dtype=np.float64))) for g, t in zip(fd, tangents))
        bad = close(value, y, 1e-5 if program.dtype is np.float32 else 1e-10)
        return f"value: {bad}" if bad else close(dense(dy, value), want, rtol)

    jacobians_in = []

    def struct_jacobian(mode: str, engine: str = "source") -> Callable:
        def body():
            J = cr.jacobian(module.f_struct_out, p, mode=mode, engine=engine)
            if not jacobians_in:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    jacobians_in.extend(fd_jacobian_in(f_vec, as64(args), i, 1e-6) for i in range(len(args)))
            for k, (key, reference) in enumerate((("vec", jacobians_in), ("total", fd))):
                block = part(J, key, k)
                for i, name in enumerate(program.params):
                    got = leaf(block, i)
                    bad = close(dense(got, reference[i]), reference[i], rtol)
                    if bad:
                        return f"d{key}/d{name}: {bad}"
            return None

        return body

    def struct_hessian():
        H = cr.hessian(module.f_struct, p)
        for i, arg in enumerate(args):

            def gradient_in(*values, i=i):  # the gradient in argument i, as an array, as the Hessian takes it:
                g = cr.gradient(f, *values)[i]  # every argument differentiated (argnums=i makes the others constants)
                return np.zeros(np.shape(values[i])) if isinstance(g, cr.AbstractZero) else g

            for j, other in enumerate(args):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    reference = fd_jacobian_in(gradient_in, as64(args), j, 1e-5)
                block = leaf(leaf(H, i), j)
                want = reference.reshape(np.shape(arg) + np.shape(other))
                bad = close(dense(block, want), want, max(rtol, 1e-4))
                if bad:
                    return f"d2/d{program.params[i]}d{program.params[j]}: {bad}"
        return None

    def api(engine: str) -> Callable:
        def body():
            has_aux = program.has_aux is not None
            options = {"engine": engine, "argnums": program.argnums, "has_aux": has_aux, "scale": program.scale}
            if program.api_call == "value_and_gradient":
                value, grads = cr.value_and_gradient(module.f_api, *args, **options)
            else:
                value, grads = None, cr.gradient(module.f_api, *args, **options)
                if has_aux:
                    grads, aux = grads
                    value = (None, aux)
            if has_aux:
                plain_value, plain_aux = module.f_api(*args, scale=program.scale)
                parts = list(value[1].values()) if isinstance(value[1], dict) else [value[1]]
                if any(type(a).__module__.startswith("chainrules") for a in parts):  # a tracked value or a dual
                    return f"aux holds an engine's value: {value[1]!r}"
                if program.has_aux == "dict":
                    if not isinstance(value[1], dict) or value[1]["scale"] is not program.scale:
                        return f"aux: {value[1]!r}, expected the dict f_api returns"
                    value, plain_aux = (value[0], value[1]["last"]), plain_aux["last"]
                bad = close(value[1], plain_aux, 1e-5 if program.dtype is np.float32 else 1e-10)
                if bad:
                    return f"aux: {bad}"
                value = value[0] if value[0] is not None else plain_value
            if value is not None:
                bad = close(value, y * 0.8, 1e-5 if program.dtype is np.float32 else 1e-10)
                if bad:
                    return f"value: {bad}"
            chosen = range(len(args)) if program.argnums is None else program.argnums
            if isinstance(chosen, int):
                chosen, grads = [range(len(args))[chosen]], (grads,)
            if not isinstance(grads, tuple) or len(grads) != len(chosen):
                return f"argnums={program.argnums}: got {grads!r}"
            for i, g in zip(chosen, grads):
                arg = args[i]
                zero = isinstance(g, cr.AbstractZero)
                if isinstance(arg, np.ndarray) and not zero and (not isinstance(g, np.ndarray) or g.dtype != arg.dtype):
                    return f"d(argument {i}) is {type(g).__name__} {getattr(g, 'dtype', '')}, the input {arg.dtype}"
                bad = close(dense(g, arg), fd[i] * 0.8, rtol)
                if bad:
                    return f"d(argument {i}): {bad}"
            return None

        return body

    bodies = {
        "source": reverse("source"),
        "tape": reverse("tape"),
        "jvp": jvp,
        "jacobian-forward": jacobian("forward"),
        "jacobian-reverse": jacobian("reverse"),
        "jacobian-reverse-tape": jacobian("reverse", "tape"),
        "hessian-source": hessian("source"),
        "hessian-tape": hessian("tape"),
        "struct-source": struct_gradient("source"),
        "struct-tape": struct_gradient("tape"),
        "struct-jvp": struct_jvp,
        "struct-jacobian-forward": struct_jacobian("forward"),
        "struct-jacobian-mode": struct_jacobian(program.jacobian_mode),
        "struct-jacobian-reverse-tape": struct_jacobian("reverse", "tape"),
        "api-source": api("source"),
        "api-tape": api("tape"),
        "struct-hessian": struct_hessian,
    }
    for check in wanted:
        if "hessian" in check and not hessian_draw:
            continue
        run_check(check, bodies[check], path, outcome, problems)
    if problems:
        outcome.failures.append((label, source, args, problems))


def fuzz(seed: int = 0, count: int = 100, only: list[str] | None = None, out=sys.stdout, show: bool = False) -> Outcome:
    """Run ``count`` programs drawn from ``seed``; print failures and a summary; return the counts."""
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="fuzz_engines_") as tmp:
        for k in range(count):
            program = Program(np.random.default_rng([seed, k]))
            label = f"seed {seed} program {k}"
            if show:
                print(f"# {label}\n{program.source()}", file=out)
            check_program(program, Path(tmp), label, outcome, only)
    for label, source, args, problems in outcome.failures:
        print(f"\n===== {label} (--seed {seed}, program {label.split()[-1]}) =====", file=out)
        print(source, file=out)
        print(f"input: {args!r}", file=out)
        for check, message in problems:
            print(f"  [{check}] {message}", file=out)
    print(
        f"\nseed {seed}: {outcome.programs} programs checked, {outcome.dropped} draws dropped, "
        f"{len(outcome.failures)} failing",
        file=out,
    )
    for check in CHECKS:
        passed, refused = outcome.checks.get(check, (0, 0))
        failed = sum(any(c == check for c, _ in problems) for *_, problems in outcome.failures)
        if passed or refused or failed:
            print(f"  {check:22} passed {passed:4}  refused by design {refused:4}  failed {failed:4}", file=out)
    for reason, n in sorted(outcome.refusals.items(), key=lambda item: -item[1]):
        print(f"  refused {n:4}: {reason}", file=out)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=100, help="programs per seed")
    parser.add_argument("--seeds", type=int, default=1, help="run seeds seed, seed+1, ...")
    parser.add_argument("--only-engine", action="append", choices=CHECKS, help="run only these checks")
    parser.add_argument("--show", action="store_true", help="print every program")
    ns = parser.parse_args(argv)
    failing = 0
    for seed in range(ns.seed, ns.seed + ns.seeds):
        failing += len(fuzz(ns.seed if ns.seeds == 1 else seed, ns.count, ns.only_engine, show=ns.show).failures)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
