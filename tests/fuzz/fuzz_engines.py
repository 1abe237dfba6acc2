"""Fuzz the engines against each other: random programs, written out as Python source, run by
every engine and compared.

    python tests/fuzz/fuzz_engines.py [--seed N] [--count K] [--only-engine source] [--show]

Each program is a module written to a temporary directory and imported (the source engine reads
its functions' source). It has a scalar-valued ``f`` and a vector-valued ``f_vec`` with the same
body: 3-15 statements over array inputs (float64 or float32, one dtype per program) and a Python
float, drawn from a small grammar: elementwise ufuncs on safe domains, ``@``/``np.dot``,
``sum``/``mean``/``max`` along axes, reshapes, transposes, slices, constant indices,
``np.concatenate``/``np.stack``, ``np.where`` of a comparison, ``if``/``else`` on a reduction's
value, ``for`` loops over ``range`` accumulating, ``while`` loops with a counter, early
returns, tuples and lists, helper functions (with default arguments) and closures, ``+=`` on the
function's own arrays, and buffers filled by index.

What each program must satisfy at a random input (``CHECKS`` names each check):

- ``source``, ``tape``: ``cr.pullback``'s value equals the plain call's, and its gradient the
  central finite differences' (computed in float64), with the input's dtype;
- ``jvp``: ``cr.jvp`` along a random tangent equals the gradient's inner product with it;
- ``jacobian-forward``, ``jacobian-reverse``, ``jacobian-reverse-tape``: ``cr.jacobian`` of
  ``f_vec`` in its first argument equals finite differences;
- ``hessian-source``, ``hessian-tape`` (one program in three): ``cr.hessian`` of ``f`` in its
  first argument equals finite differences of the source engine's gradient.

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
)

# what docs/engines.md's "Limits and errors" sections say each engine refuses, as the message says it
# `x += v` on an array that something else may hold (as far as the source engine's analysis can tell)
_SOURCE_REFUSALS = (
    "an augmented assignment updates the ndarray in place",
    "a default value of the nested function",  # `def inner(u, k=v)` with a differentiated v
    "must be bound to a new object here",  # a write through a second name or a view
    "writes its result into an existing array",  # an `out=` argument
    "is read by a nested function and bound",  # a closure over a variable bound twice or in a loop
)
_TAPE_REFUSALS = (
    "would drop its derivative",  # out[i] = tracked value into a plain array, float(x)
    "came to share its memory",  # a write after a reshape or a transpose shares the array
    "writes into an array in place",  # `v += tracked` into a plain array
    "may share memory",  # `v += w` on an array that may be a view
)
# a dual stored into a plain np.zeros buffer, `v += dual` into a plain array
_FORWARD_REFUSALS = (
    "would drop its derivative",
    "writes in place, which dual numbers do not support",
    "may share memory",  # `v += w` on a dual array that may be a view
)
DOCUMENTED_REFUSALS = {
    "source": _SOURCE_REFUSALS,
    "tape": _TAPE_REFUSALS,
    "jvp": _FORWARD_REFUSALS,
    "jacobian-forward": _FORWARD_REFUSALS,
    "jacobian-reverse": _SOURCE_REFUSALS,
    "jacobian-reverse-tape": _TAPE_REFUSALS,
    "hessian-source": _SOURCE_REFUSALS,
    "hessian-tape": _TAPE_REFUSALS + ("may share memory",),
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
        lines = ["import numpy as np", "", ""]
        for helper in self.helpers:
            lines += [helper, ""]
        for name, finish in (("f", finish_scalar), ("f_vec", "np.ravel({e})")):
            lines.append(f"def {name}({', '.join(self.params)}):")
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
    except (TypeError, cr.ChainRulesError) as err:
        text = str(err)
        documented = any(fragment in text for fragment in DOCUMENTED_REFUSALS[check])
        if documented and path in text:
            outcome.count(check, 1)
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
        return f"value: {bad}" if bad else close(dy, want, rtol)

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

    bodies = {
        "source": reverse("source"),
        "tape": reverse("tape"),
        "jvp": jvp,
        "jacobian-forward": jacobian("forward"),
        "jacobian-reverse": jacobian("reverse"),
        "jacobian-reverse-tape": jacobian("reverse", "tape"),
        "hessian-source": hessian("source"),
        "hessian-tape": hessian("tape"),
    }
    for check in wanted:
        if check.startswith("hessian") and not hessian_draw:
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
