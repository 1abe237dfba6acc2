"""Fuzz the rule set: many valid calls per rule, each checked against the plain call, finite
differences (``test_rrule``, ``test_frule``) and, for rules registered ``batched=True``, the
pullback called row by row.

    python tests/fuzz/fuzz_rules.py [--seed N] [--draws K] [--only numpy.sum] [--family linalg] [--hessians]

A draw is a random valid call: shapes with 0-d arrays, length-1 axes, empty arrays and
broadcasting pairs, transposed, strided and Fortran-ordered inputs, float32/float64/complex128 and
integer arrays, Python floats beside NumPy scalars, and the keywords each rule accepts. A draw
that NumPy itself refuses is dropped. What each draw must satisfy:

- the rule's primal equals the plain call: the same values, dtype, shape and type;
- ``test_rrule`` and ``test_frule`` pass, with float32 tolerances for float32 inputs (a draw on a
  kink, where finite differences at two steps disagree, cannot judge the rule: it is counted apart);
- nothing raises but a refusal (``NoRuleError``, ``TypeError``, ``ValueError``) naming the function;
- a batched pullback equals the pullback called once per row;
- with ``--hessians``: the Hessian of a weighted sum of the outputs in one float64 argument (forward
  mode over the reverse pass, which runs the rule on dual numbers) equals finite differences of
  the gradient, wherever those are steady (two steps agree).

Failures are printed grouped by callable with the draw that shows them (``--only NAME --seed N``
replays a callable's draws); callables with a rule and no generator here are listed at the end.
"""

from __future__ import annotations

import argparse
import cmath
import importlib.util
import math
import operator
import re
import sys
import time
import traceback
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.integrate as si
import scipy.linalg as sla
import scipy.signal as ss
import scipy.spatial.distance as ssd
import scipy.special as sp
import scipy.stats as st
from scipy.stats._distn_infrastructure import rv_continuous, rv_continuous_frozen, rv_discrete, rv_discrete_frozen

import chainrules as cr
import chainrules.testing as crt
from chainrules.core.errors import NoRuleError, callable_name
from chainrules.core.twins import astype_in_order

_HERE = Path(__file__).resolve().parent


def _batched_checker() -> Callable:
    """``check_batched_pullback`` from ``tests/rules/conftest.py`` (one definition of "equals row by row")."""
    spec = importlib.util.spec_from_file_location("_rules_conftest", _HERE.parent / "rules" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.check_batched_pullback


class Skip(Exception):
    """The generator has no valid call for this draw."""


# ----- drawing values ----------------------------------------------------------------------------

DOMAINS = {
    "any": (-2.0, 2.0),
    "pos": (0.5, 2.0),
    "unit": (-0.9, 0.9),
    "above1": (1.2, 3.0),
    "signed": (0.3, 2.0),  # either sign, away from zero
    "prob": (0.1, 0.9),
    "small": (-1.0, 1.0),
    "scale": (0.5, 3.0),
    "quantile": (0.05, 0.95),
    "shape": (0.5, 4.0),  # a distribution's shape, away from 0 where finite differences break
}


class Draw:
    """A seeded source of shapes, arrays and keywords."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def shape(self, lo: int = 0, hi: int = 3, empty: bool = False) -> tuple[int, ...]:
        ndim = int(self.rng.integers(lo, hi + 1))
        dims = [int(self.rng.integers(1, 4)) for _ in range(ndim)]
        if empty and ndim and self.chance(0.15):
            dims[int(self.rng.integers(ndim))] = 0
        return tuple(dims)

    def dtype(self, complex_ok: bool = True, single_ok: bool = True):
        options = [np.float64, np.float64]
        if single_ok:
            options.append(np.float32)
        if complex_ok:
            options.append(np.complex128)
        return self.pick(options)

    def values(self, shape, domain: str = "any", dtype=np.float64) -> np.ndarray:
        lo, hi = DOMAINS[domain]
        v = self.rng.uniform(lo, hi, shape)
        if domain == "signed":
            v = v * self.rng.choice([-1.0, 1.0], shape)
        if np.dtype(dtype).kind == "c":
            scale = 0.3 if domain in ("unit", "prob", "small") else 0.5
            v = v + 1j * scale * self.rng.uniform(-1, 1, shape)
        if np.dtype(dtype).kind in "iu":
            if domain in ("pos", "above1", "prob"):
                return self.rng.integers(1, 4, shape).astype(dtype)
            values = self.rng.integers(1, 4, shape) * (self.rng.choice([-1, 1], shape) if domain == "signed" else 1)
            return (values if domain == "signed" else self.rng.integers(-3, 4, shape)).astype(dtype)
        return v.astype(dtype)

    def array(self, shape, domain: str = "any", dtype=np.float64) -> np.ndarray:
        """An array of ``shape`` in one of several memory layouts (contiguous, transposed, strided, Fortran)."""
        layout = self.pick(["c", "c", "T", "strided", "F"]) if len(shape) else "c"
        if layout == "T":
            return self.values(shape[::-1], domain, dtype).T
        if layout == "strided":
            big = self.values(tuple(2 * n for n in shape), domain, dtype)
            return big[tuple(slice(None, None, 2) if self.chance(0.5) else slice(None, None, -2) for _ in shape)]
        if layout == "F":
            return np.asfortranarray(self.values(shape, domain, dtype))
        return self.values(shape, domain, dtype)

    def number(self, domain: str = "any", dtype=np.float64):
        """A Python float, a NumPy scalar or a 0-d array."""
        v = self.values((), domain, dtype)
        kind = self.pick(["python", "numpy", "0d"])
        if kind == "python":
            return v.item()
        return v[()] if kind == "numpy" else v

    def operand(self, domain: str = "any", dtype=np.float64, shape=None, empty: bool = True):
        """An array (any rank, maybe empty) or, sometimes, a number."""
        if shape is None and self.chance(0.2):
            return self.number(domain, dtype)
        return self.array(self.shape(empty=empty) if shape is None else shape, domain, dtype)

    def axis(self, ndim: int, tuples: bool = True, none: bool = True):
        options = []
        if none:
            options.append(None)
        if ndim:
            options += [int(self.rng.integers(ndim)), -int(self.rng.integers(1, ndim + 1))]
            if tuples and ndim >= 2:
                k = int(self.rng.integers(1, ndim + 1))
                options.append(tuple(int(a) for a in self.rng.choice(ndim, k, replace=False)))
        if not options:
            raise Skip("no axis of a 0-d array")
        return self.pick(options)

    def square(self, n=None, dtype=None, kind: str = "general", batch: bool = False) -> np.ndarray:
        """A well-conditioned square matrix: general, symmetric positive definite, triangular."""
        n = int(self.rng.integers(1, 4)) if n is None else n
        dtype = dtype or self.dtype(single_ok=False)
        lead = self.shape(0, 1) if batch else ()
        a = self.values((*lead, n, n), "small", dtype) + 2.5 * np.eye(n)
        if kind == "spd":
            a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
        elif kind == "sym":
            a = a + np.conj(np.swapaxes(a, -1, -2))
        elif kind == "lower":
            a = np.tril(a)
        elif kind == "upper":
            a = np.triu(a)
        return self.pick([a, np.ascontiguousarray(a), np.asfortranarray(a)])


# ----- generators, by family -------------------------------------------------------------------
# Each generator takes a ``Draw`` and returns ``(args, kwargs)`` for one valid call (or raises
# ``Skip``). Arguments wrapped in ``crt.nondiff`` are not perturbed by finite differences.

GENERATORS: dict[Callable, tuple[str, Callable]] = {}
#: entries with names of their own, for one callable that serves many cases (``rv_continuous.logpdf``
#: of each distribution): ``name -> (callable, family, generator, a first argument selecting the rule)``
NAMED_GENERATORS: dict[str, tuple[Callable, str, Callable, tuple]] = {}


def family(name: str, *fs):
    def register(gen):
        for f in fs:
            GENERATORS[f] = (name, gen)
        return gen

    return register


def _ufunc_kwargs(d: Draw, f) -> dict:
    kwargs = {}
    if isinstance(f, np.ufunc) and d.chance(0.15):
        kwargs["dtype"] = d.pick([np.float64, np.complex128])
    return kwargs


UNARY_UFUNCS = {
    # function: (domain, takes complex)
    np.negative: ("any", True),
    np.positive: ("any", True),
    np.absolute: ("signed", True),
    np.fabs: ("signed", False),
    np.reciprocal: ("pos", True),
    np.exp: ("any", True),
    np.exp2: ("any", True),
    np.expm1: ("any", True),
    np.log: ("pos", True),
    np.log2: ("pos", True),
    np.log10: ("pos", True),
    np.log1p: ("pos", True),
    np.sqrt: ("pos", True),
    np.cbrt: ("signed", False),
    np.square: ("any", True),
    np.sin: ("any", True),
    np.cos: ("any", True),
    np.tan: ("unit", True),
    np.arcsin: ("unit", True),
    np.arccos: ("unit", True),
    np.arctan: ("small", True),
    np.sinh: ("any", True),
    np.cosh: ("any", True),
    np.tanh: ("any", True),
    np.arcsinh: ("small", True),
    np.arccosh: ("above1", True),
    np.arctanh: ("unit", True),
    np.deg2rad: ("any", False),
    np.radians: ("any", False),
    np.rad2deg: ("any", False),
    np.degrees: ("any", False),
    np.sinc: ("signed", True),
    np.real: ("any", True),
    np.imag: ("any", True),
    np.conjugate: ("any", True),
    np.angle: ("signed", True),
    np.real_if_close: ("any", True),
    np.nan_to_num: ("any", True),
    np.sign: ("signed", False),
    np.floor: ("signed", False),
    np.ceil: ("signed", False),
    np.trunc: ("signed", False),
    np.rint: ("signed", False),
    np.fix: ("signed", False),
    np.around: ("signed", False),
    np.round: ("signed", False),
    np.signbit: ("signed", False),
    np.isfinite: ("any", True),
    np.isnan: ("any", True),
    np.isinf: ("any", True),
    np.isposinf: ("any", False),
    np.isneginf: ("any", False),
    np.iscomplex: ("any", True),
    np.isreal: ("any", True),
    np.logical_not: ("signed", False),
    np.zeros_like: ("any", True),
    np.ones_like: ("any", True),
    np.empty_like: ("any", True),
    np.copy: ("any", True),
    np.asarray: ("any", True),
    np.array: ("any", True),
    np.asanyarray: ("any", True),
    np.ascontiguousarray: ("any", True),
    np.asfortranarray: ("any", True),
    np.atleast_1d: ("any", True),
    np.atleast_2d: ("any", True),
    np.atleast_3d: ("any", True),
    np.shape: ("any", True),
    np.ndim: ("any", True),
    np.size: ("any", True),
    np.iscomplexobj: ("any", True),
    np.isrealobj: ("any", True),
    np.ravel: ("any", True),
    np.squeeze: ("any", True),
    np.ndarray.copy: ("any", True),
    np.ndarray.conj: ("any", True),
    np.ndarray.conjugate: ("any", True),
    np.ndarray.ravel: ("any", True),
    np.ndarray.flatten: ("any", True),
    np.ndarray.squeeze: ("any", True),
    np.ndarray.transpose: ("any", True),
    np.transpose: ("any", True),
}


ROUNDING = (np.floor, np.ceil, np.trunc, np.rint, np.fix, np.around, np.round, np.sign)


@family("elementwise", *UNARY_UFUNCS)
def _unary(d: Draw, f):
    domain, complex_ok = UNARY_UFUNCS[f]
    method = isinstance(f, type(np.ndarray.copy)) and f.__objclass__ is np.ndarray
    kind = d.pick(["float", "float", "float", "int"]) if domain in ("any", "pos", "signed", "above1") else "float"
    dtype = np.int64 if kind == "int" else d.dtype(complex_ok)
    if f in ROUNDING and dtype is np.float32:  # a float32 finite-difference step crosses the jumps
        dtype = np.float64
    x = d.array(d.shape(empty=True), domain, dtype) if method else d.operand(domain, dtype)
    if domain == "above1" and np.issubdtype(np.asarray(x).dtype, np.integer):
        x = x + 1  # integers from 2 up: arccosh is not differentiable at 1
    kwargs = _ufunc_kwargs(d, f)
    if "dtype" in kwargs and (kwargs["dtype"] is np.float64 and np.iscomplexobj(x)):
        kwargs = {}
    if f in (np.around, np.round) and d.chance(0.5):
        kwargs = {"decimals": int(d.rng.integers(-1, 3))}
    if f in ROUNDING:
        x = _off_the_jumps(d, x, kwargs.get("decimals", 0))
    return (x,), kwargs


def _off_the_jumps(d: Draw, x, decimals: int):
    """``x`` (float entries) moved to 0.1-0.4 of a rounding unit above a multiple of it, away from
    the jumps of rounding (at multiples and half multiples of ``10**-decimals``) and of ``sign``
    (at 0), where a finite-difference step would cross one. An array keeps its layout."""
    if np.asarray(x).dtype.kind != "f":
        return x
    scale = 10.0**decimals
    moved = (np.floor(np.asarray(x) * scale) + d.rng.uniform(0.1, 0.4, np.shape(x))) / scale
    if isinstance(x, np.ndarray) and x.ndim:
        x[...] = moved
        return x
    return type(x)(moved) if isinstance(x, (float, np.floating)) else np.asarray(moved, dtype=x.dtype)


BINARY_UFUNCS = {
    # function: (domain of a, domain of b, takes complex)
    np.add: ("any", "any", True),
    np.subtract: ("any", "any", True),
    np.multiply: ("any", "any", True),
    np.divide: ("any", "signed", True),
    np.power: ("pos", "any", True),
    np.float_power: ("pos", "any", True),
    np.arctan2: ("any", "pos", False),
    np.hypot: ("signed", "signed", False),
    np.logaddexp: ("any", "any", False),
    np.logaddexp2: ("any", "any", False),
    np.maximum: ("any", "any", False),
    np.minimum: ("any", "any", False),
    np.fmax: ("any", "any", False),
    np.fmin: ("any", "any", False),
    np.remainder: ("any", "pos", False),
    np.fmod: ("any", "pos", False),
    np.floor_divide: ("any", "pos", False),
    np.copysign: ("signed", "signed", False),
    np.heaviside: ("signed", "any", False),
    np.nextafter: ("any", "any", False),
    np.equal: ("any", "any", True),
    np.not_equal: ("any", "any", True),
    np.less: ("any", "any", False),
    np.less_equal: ("any", "any", False),
    np.greater: ("any", "any", False),
    np.greater_equal: ("any", "any", False),
    np.logical_and: ("signed", "signed", False),
    np.logical_or: ("signed", "signed", False),
    np.logical_xor: ("signed", "signed", False),
    np.isclose: ("any", "any", True),
    np.allclose: ("any", "any", True),
    np.array_equal: ("any", "any", True),
    np.array_equiv: ("any", "any", True),
    np.full_like: ("any", "any", False),
    operator.add: ("any", "any", True),
    operator.sub: ("any", "any", True),
    operator.mul: ("any", "any", True),
    operator.truediv: ("any", "signed", True),
    operator.pow: ("pos", "any", True),
    operator.mod: ("any", "pos", False),
    operator.floordiv: ("any", "pos", False),
    operator.iadd: ("any", "any", True),
    operator.isub: ("any", "any", True),
    operator.imul: ("any", "any", True),
    operator.itruediv: ("any", "signed", True),
    operator.ipow: ("pos", "any", True),
    operator.imod: ("any", "pos", False),
    operator.ifloordiv: ("any", "pos", False),
    operator.eq: ("any", "any", True),
    operator.ne: ("any", "any", True),
    operator.lt: ("any", "any", False),
    operator.le: ("any", "any", False),
    operator.gt: ("any", "any", False),
    operator.ge: ("any", "any", False),
}


def _broadcast_pair(d: Draw):
    a = d.shape(empty=True)
    if d.chance(0.5):
        return a, a
    b = list(a[len(a) - int(d.rng.integers(0, len(a) + 1)) :])
    b = [1 if d.chance(0.3) else n for n in b]
    a = [1 if d.chance(0.2) and n != 0 else n for n in a]
    if d.chance(0.5):
        return tuple(b), tuple(a)
    return tuple(a), tuple(b)


@family("elementwise", *BINARY_UFUNCS)
def _binary(d: Draw, f):
    da, db, complex_ok = BINARY_UFUNCS[f]
    dtype = d.dtype(complex_ok)
    sa, sb = _broadcast_pair(d)
    a = d.number(da, dtype) if d.chance(0.2) else d.array(sa, da, dtype)
    other = d.pick([dtype, dtype, np.float64, np.int64]) if f is not np.full_like else dtype
    if other is np.int64 and f in (np.power, operator.pow, operator.ipow, np.float_power) and db == "any":
        db = "pos"
    b = d.number(db, other) if d.chance(0.2) else d.array(sb, db, other)
    if f in (
        operator.iadd,
        operator.isub,
        operator.imul,
        operator.itruediv,
        operator.ipow,
        operator.imod,
        operator.ifloordiv,
    ):
        # an array on the left is updated in place, as the plain call does (which the testers' no-mutation
        # check cannot tell from a bug): the left operand is a number, the right one anything
        a = d.number(da, dtype)
        a = a[()] if isinstance(a, np.ndarray) else a
    if f is np.full_like:
        b = d.number(db, dtype) if d.chance(0.5) else d.array(np.shape(a)[np.ndim(a) - min(np.ndim(a), 1) :], db)
    if (
        f is np.power
        and np.issubdtype(np.asarray(b).dtype, np.integer)
        and np.issubdtype(np.asarray(a).dtype, np.integer)
    ):
        b = abs(b)
    return (a, b), _ufunc_kwargs(d, f) if isinstance(f, np.ufunc) else {}


def _tuple_axis_ok(f) -> bool:
    return f not in (
        np.cumsum,
        np.cumprod,
        np.ndarray.cumsum,
        np.ndarray.cumprod,
        np.add.accumulate,
        np.multiply.accumulate,
        np.argmax,
        np.argmin,
        np.sort,
        np.diff,
        np.trapezoid,
        sp.softmax,
        sp.log_softmax,
    ) or f in (sp.softmax, sp.log_softmax)


REDUCTIONS = {
    # function: keywords it takes beyond axis (w: where=, i: initial=, k: keepdims, t: dtype=, d: ddof)
    np.sum: "wikt",
    np.ndarray.sum: "wikt",
    np.add.reduce: "wikt",
    np.nansum: "kt",
    np.prod: "wikt",
    np.ndarray.prod: "wikt",
    np.multiply.reduce: "wikt",
    np.nanprod: "kt",
    np.mean: "wkt",
    np.ndarray.mean: "wkt",
    np.nanmean: "kt",
    np.max: "wik",
    np.min: "wik",
    np.amax: "wik",
    np.amin: "wik",
    np.ndarray.max: "wik",
    np.ndarray.min: "wik",
    np.maximum.reduce: "wik",
    np.minimum.reduce: "wik",
    np.fmax.reduce: "wik",
    np.fmin.reduce: "wik",
    np.nanmax: "k",
    np.nanmin: "k",
    np.std: "wkd",
    np.var: "wkd",
    np.ndarray.std: "wkd",
    np.ndarray.var: "wkd",
    np.nanstd: "kd",
    np.nanvar: "kd",
    np.ptp: "k",
    np.median: "k",
    np.nanmedian: "k",
    np.average: "k",
    np.all: "k",
    np.any: "k",
    np.count_nonzero: "k",
    np.argmax: "k",
    np.argmin: "k",
    np.linalg.vector_norm: "k",
    sp.logsumexp: "k",
}
_NAN_REDUCTIONS = (np.nansum, np.nanmean, np.nanprod, np.nanmax, np.nanmin, np.nanstd, np.nanvar, np.nanmedian)
SCANS = [
    np.cumsum,
    np.cumprod,
    np.ndarray.cumsum,
    np.ndarray.cumprod,
    np.add.accumulate,
    np.multiply.accumulate,
    np.sort,
    np.diff,
    np.ediff1d,
    np.trapezoid,
    sp.softmax,
    sp.log_softmax,
    np.argsort,
    np.flip,
    np.roll,
]
CUMULATIVE = [np.cumulative_sum, np.cumulative_prod] if hasattr(np, "cumulative_sum") else []  # NumPy 2.1
SCANS += CUMULATIVE


@family("reductions", *REDUCTIONS)
def _reduction(d: Draw, f):
    keys = REDUCTIONS[f]
    ordered = f in (
        np.max,
        np.min,
        np.amax,
        np.amin,
        np.ndarray.max,
        np.ndarray.min,
        np.maximum.reduce,
        np.minimum.reduce,
        np.fmax.reduce,
        np.fmin.reduce,
        np.nanmax,
        np.nanmin,
        np.ptp,
        np.median,
        np.nanmedian,
        np.argmax,
        np.argmin,
    )
    # (integers tie, and an order statistic's cotangent goes to one of the tied entries, documented:
    # finite differences split it; only the argument-returning ones get integers)
    dtype = (
        d.pick([np.float64, np.float32] + ([np.int64] if f in (np.argmax, np.argmin) else [])) if ordered else d.dtype()
    )
    if f in (np.prod, np.ndarray.prod, np.multiply.reduce, np.nanprod):
        domain = "signed"
    else:
        domain = "any"
    x = d.array(d.shape(empty=True), domain, dtype)
    if f in _NAN_REDUCTIONS and x.size > 1 and x.dtype.kind == "f":
        x = x.copy()
        x.flat[int(d.rng.integers(x.size))] = np.nan
    kwargs = {}
    ufunc_reduce = isinstance(getattr(f, "__self__", None), np.ufunc)
    axis_none = f not in (np.add.reduce, np.multiply.reduce) or d.chance(0.3)
    tuples = f not in (np.argmax, np.argmin)
    try:
        axis = d.axis(x.ndim, tuples=tuples)
    except Skip:
        axis = None
    if ufunc_reduce and x.ndim == 0:
        axis = None
    if axis is not None or axis_none and d.chance(0.5):
        kwargs["axis"] = axis
    if "k" in keys and d.chance(0.4):
        kwargs["keepdims"] = True
    if "w" in keys and x.ndim and d.chance(0.25):
        kwargs["where"] = d.rng.random(x.shape[-1:] if d.chance(0.5) else x.shape) > 0.3
        if ordered or "i" in keys:
            kwargs["initial"] = float(
                d.rng.uniform(-3, -2)
                if f not in (np.min, np.amin, np.ndarray.min, np.minimum.reduce, np.fmin.reduce)
                else 3.0
            )
            if f in (np.prod, np.ndarray.prod, np.multiply.reduce):
                kwargs["initial"] = 1.5
            if f in (np.sum, np.ndarray.sum, np.add.reduce):
                kwargs["initial"] = 0.5
    elif "i" in keys and d.chance(0.15):
        kwargs["initial"] = 0.25 if not ordered else (-5.0 if "max" in getattr(f, "__name__", "") else 5.0)
    if "t" in keys and d.chance(0.2):
        kwargs["dtype"] = np.complex128 if x.dtype.kind == "c" else d.pick([np.float64, np.float32])
    if "d" in keys and d.chance(0.4):
        kwargs["ddof"] = int(d.rng.integers(0, 2))
    if f is np.linalg.vector_norm and d.chance(0.6):
        kwargs["ord"] = d.pick([1, 2, 3, np.inf, -np.inf, 0.5, 0])
    if f is np.average and d.chance(0.5) and kwargs.get("axis", None) is None:
        kwargs["weights"] = d.values(x.shape, "pos")
    if f is sp.logsumexp and d.chance(0.3):
        kwargs["b"] = d.values(x.shape, "pos")
    if f is sp.logsumexp and d.chance(0.2) and x.dtype.kind != "c":
        kwargs["return_sign"] = True
    return (x,), kwargs


@family("reductions", np.bincount)
def _bincount(d: Draw, f):
    n = int(d.rng.integers(0, 7))
    bins = d.rng.integers(0, 5, n)
    weights = d.array((n,), "any", d.dtype(False))
    args = (bins, weights) if d.chance(0.8) else (bins,)
    if d.chance(0.3):
        return (*args, int(d.rng.integers(0, 8))) if len(args) == 2 else args, {}
    return args, ({"minlength": int(d.rng.integers(0, 8))} if d.chance(0.3) else {})


@family("reductions", *SCANS)
def _scan(d: Draw, f):
    complex_ok = f not in (np.sort, np.argsort, sp.softmax, sp.log_softmax)
    x = d.array(d.shape(empty=f not in (sp.softmax, sp.log_softmax)), "signed", d.dtype(complex_ok))
    kwargs = {}
    if f in (sp.softmax, sp.log_softmax):
        try:
            kwargs["axis"] = d.axis(x.ndim)
        except Skip:
            pass
        return (x,), kwargs
    if f is np.roll:
        return (x, int(d.rng.integers(-3, 4))), ({"axis": d.axis(x.ndim)} if x.ndim else {})
    if f is np.flip:
        return (x,), ({"axis": d.axis(x.ndim)} if x.ndim else {})
    if x.ndim == 0 and f in (np.diff, np.trapezoid, np.sort, np.argsort, *CUMULATIVE):
        x = x.reshape(1)
    if f in CUMULATIVE:
        if x.ndim > 1 or d.chance(0.5):
            kwargs["axis"] = d.axis(x.ndim, tuples=False, none=False)
        if d.chance(0.5):
            kwargs["include_initial"] = True
        return (x,), kwargs
    if f is np.diff:
        kwargs["n"] = int(d.rng.integers(0, 3))
        kwargs["axis"] = d.axis(x.ndim, tuples=False, none=False)
        if d.chance(0.3):
            kwargs["prepend"] = 0.5
        return (x,), kwargs
    if f is np.ediff1d:  # to_end, to_begin: none, a number or an array; by position (differentiated) or keyword
        ends = [d.pick([None, d.number("any", x.dtype), d.array(d.shape(1, 2), "any", x.dtype)]) for _ in range(2)]
        if d.chance(0.5):
            return (x, *(crt.nondiff(None) if e is None else e for e in ends)), {}
        return (x,), {k: e for k, e in zip(("to_end", "to_begin"), ends) if e is not None}
    if f is np.trapezoid:
        if d.chance(0.5):
            kwargs["dx"] = 0.5
        kwargs["axis"] = d.axis(x.ndim, tuples=False, none=False)
        return (x,), kwargs
    axis = d.axis(x.ndim, tuples=False, none=f not in (np.add.accumulate, np.multiply.accumulate))
    if axis is not None or d.chance(0.5):
        kwargs["axis"] = axis
    if f in (np.cumsum, np.cumprod) and d.chance(0.2):
        kwargs["dtype"] = np.complex128 if x.dtype.kind == "c" else np.float64
    if f is np.sort and d.chance(0.3):
        kwargs["kind"] = "stable"
    return (x,), kwargs


def _numbered(d: Draw):
    return d.dtype(), d.array(d.shape(1, 3, empty=True), "any")


SHAPE_OPS = [
    np.reshape,
    np.ndarray.reshape,
    np.swapaxes,
    np.ndarray.swapaxes,
    np.moveaxis,
    np.expand_dims,
    np.fliplr,
    np.flipud,
    np.rot90,
    np.tile,
    np.repeat,
    np.ndarray.repeat,
    np.broadcast_to,
    np.diag,
    np.diagonal,
    np.ndarray.diagonal,
    np.trace,
    np.ndarray.trace,
    np.tril,
    np.triu,
    np.pad,
    np.take,
    np.ndarray.take,
    np.take_along_axis,
    np.append,
    np.where,
    np.clip,
    np.ndarray.clip,
    np.astype,
    np.ndarray.astype,
    astype_in_order,
    np.linalg.trace,
    np.ndarray.item,
    np.ndarray.tolist,
    np.percentile,
    np.quantile,
    np.nanpercentile,
    np.nanquantile,
    np.searchsorted,
    np.nonzero,
    np.flatnonzero,
    np.argwhere,
    np.argpartition,
    np.interp,
]


@family("shapes", *SHAPE_OPS)
def _shape_op(d: Draw, f):
    dtype = d.dtype()
    x = d.array(d.shape(1, 3, empty=True), "any", dtype)
    nd = x.ndim
    if f in (np.reshape, np.ndarray.reshape):
        new = list(x.shape[::-1]) if d.chance(0.5) else [x.size]
        if d.chance(0.3) and x.size:
            new[0] = -1
        kw = {"order": d.pick(["C", "F", "A"])} if d.chance(0.3) else {}
        if kw.get("order") == "A":  # finite differences perturb a C-ordered copy: 'A' would read it otherwise
            x = np.ascontiguousarray(x)
        return ((x, tuple(new)) if f is np.reshape else (x, *new)), kw
    if f in (np.swapaxes, np.ndarray.swapaxes):
        return (x, d.axis(nd, tuples=False, none=False), d.axis(nd, tuples=False, none=False)), {}
    if f is np.moveaxis:
        return (x, d.axis(nd, tuples=False, none=False), d.axis(nd, tuples=False, none=False)), {}
    if f is np.expand_dims:
        return (x, d.pick([0, -1, (0, nd + 1)] if nd else [0, -1])), {}
    if (
        f is np.fliplr
        or f is np.rot90
        or f in (np.diagonal, np.ndarray.diagonal, np.trace, np.ndarray.trace, np.linalg.trace, np.tril, np.triu)
    ):
        if nd < 2:
            x = d.array((*x.shape, int(d.rng.integers(1, 4))), "any", dtype)
        if f is np.rot90:
            return (x, int(d.rng.integers(-2, 4))), {}
        if f in (np.tril, np.triu):
            return (x,), {"k": int(d.rng.integers(-1, 2))}
        if f in (np.diagonal, np.ndarray.diagonal, np.trace, np.ndarray.trace):
            return (x,), {"offset": int(d.rng.integers(-1, 2))} if d.chance(0.5) else {}
        if f is np.linalg.trace:
            return (x,), {"offset": int(d.rng.integers(-1, 2))} if d.chance(0.5) else {}
        return (x,), {}
    if f is np.flipud:
        return (x,), {}
    if f is np.tile:
        return (x, d.pick([2, (1, 2), (2, 1, 1)])), {}
    if f in (np.repeat, np.ndarray.repeat):
        reps = int(d.rng.integers(0, 3))
        axis = d.axis(nd, tuples=False)
        if axis is not None and d.chance(0.5):
            reps = d.rng.integers(0, 3, x.shape[axis])
        return (x, reps), ({"axis": axis} if axis is not None else {})
    if f is np.broadcast_to:
        return (x, (2, *[1 if False else n for n in x.shape])), {}
    if f is np.diag:
        if nd > 2:
            x = x[0] if len(x) else x[:, 0]
        return (x,), {"k": int(d.rng.integers(-1, 2))} if d.chance(0.5) else {}
    if f is np.pad:
        mode = d.pick(["constant", "edge", "reflect", "wrap", "symmetric", "mean", "median", "maximum", "minimum"])
        mode = d.pick([mode, "linear_ramp"])
        width = d.pick([1, (0, 2), ((1, 0),) * nd, 4])
        if mode != "constant" and 0 in x.shape:
            mode = "constant"
        kwargs = {"mode": mode}
        if mode in ("mean", "median", "maximum", "minimum") and d.chance(0.5):
            kwargs["stat_length"] = d.pick([1, (2, 1), ((1, 3),) * nd])
        if mode == "linear_ramp" and d.chance(0.5):
            kwargs["end_values"] = d.pick([1.5, (-1.0, 2.0)])
        return (x, width), kwargs
    if f in (np.take, np.ndarray.take):
        n = x.shape[-1]
        if n == 0:
            raise Skip("take from an empty axis")
        index = d.rng.integers(-n, n, d.shape(0, 2))
        return (x, index), {"axis": -1} if d.chance(0.7) or x.ndim == 1 else {}
    if f is np.take_along_axis:
        axis = d.axis(nd, tuples=False, none=False)
        if x.shape[axis] == 0:
            raise Skip("take from an empty axis")
        shape = list(x.shape)
        shape[axis] = int(d.rng.integers(1, 4))
        return (x, d.rng.integers(0, x.shape[axis], shape)), {"axis": axis}
    if f is np.append:
        y = d.array(x.shape, "any", dtype)
        return (x, y), {"axis": d.axis(nd, tuples=False)} if d.chance(0.5) else {}
    if f is np.where:
        cond = d.rng.random(x.shape) > 0.5
        sb = x.shape[-1:] if d.chance(0.5) else x.shape
        return (cond, x, d.array(sb, "any", dtype) if d.chance(0.7) else d.number("any")), {}
    if f in (np.clip, np.ndarray.clip):
        if dtype is np.complex128:
            x = x.real.copy()
        lo, hi = d.pick([(-0.5, 0.5), (None, 0.5), (-0.5, None), (d.values(x.shape[-1:], "small") - 1.0, 1.0)])
        return (x, lo, hi), {}
    if f in (np.astype, np.ndarray.astype):
        return (x, d.pick([np.float32, np.float64, np.complex128])), {}
    if f is astype_in_order:  # (a nested dual's x.astype(dtype, order=..., copy=...))
        return (x, d.pick([np.float32, np.float64, np.complex128]), d.pick("KACF"), d.chance(0.5)), {}
    if f is np.ndarray.item:
        return (x.reshape(-1)[:1] if x.size else np.ones(1)), {}
    if f is np.ndarray.tolist:  # nested lists of numbers; a number for a 0-d array
        return ((x.reshape(-1)[:1].reshape(()) if x.size and d.chance(0.2) else x),), {}
    if f in (np.percentile, np.quantile, np.nanpercentile, np.nanquantile):
        x = x.real.copy() if x.dtype.kind == "c" else x
        if x.size == 0:
            raise Skip("quantile of nothing")
        q = d.pick([0.3, [0.1, 0.9]])
        if f in (np.nanpercentile, np.nanquantile) and x.size > 1 and x.dtype.kind == "f":
            x = x.copy()
            x.flat[int(d.rng.integers(x.size))] = np.nan  # (an entry that takes no part)
            q = d.pick([0.37, [0.13, 0.87]])  # (off the kinks q (n - 1) = k of the entries left)
        q = np.asarray(q) * (100 if f in (np.percentile, np.nanpercentile) else 1)
        kw = {"axis": d.axis(nd)} if d.chance(0.5) else {}
        if d.chance(0.3):
            kw["method"] = d.pick(["linear", "nearest", "midpoint", "lower", "higher"])
        if d.chance(0.3):
            kw["keepdims"] = True
        return (x, q), kw
    if f is np.searchsorted:
        a = np.sort(d.values((int(d.rng.integers(1, 5)),), "any"))
        return (a, d.operand("any", np.float64)), {"side": d.pick(["left", "right"])} if d.chance(0.5) else {}
    if f in (np.nonzero, np.flatnonzero, np.argwhere):
        return (x,), {}
    if f is np.argpartition:
        if x.shape[-1] == 0:
            raise Skip("partition of nothing")
        return (x.real.copy(), int(d.rng.integers(x.shape[-1]))), {}
    if f is np.interp:
        xp = np.sort(d.values((int(d.rng.integers(2, 6)),), "any"))
        fp = d.values(xp.shape, "any", d.pick([np.float64, np.complex128]))
        return (d.operand("small", np.float64), xp, fp), {}
    raise Skip(f"no generator for {f}")


JOINS = [
    np.concatenate,
    np.stack,
    np.hstack,
    np.vstack,
    np.dstack,
    np.column_stack,
    np.split,
    np.array_split,
    np.hsplit,
    np.vsplit,
    np.dsplit,
    np.block if hasattr(np, "block") else np.stack,
]


@family("shapes", *JOINS)
def _join(d: Draw, f):
    dtype = d.dtype()
    shape = d.shape(1, 3, empty=True)
    if f in (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit):
        if f is np.dsplit:
            shape = (*shape[:2], 2) if len(shape) >= 2 else (1, 1, 2)
        if f is np.vsplit and len(shape) < 2:
            shape = (2, *shape)
        x = d.array(shape, "any", dtype)
        axis = {np.hsplit: 1 if x.ndim > 1 else 0, np.vsplit: 0, np.dsplit: 2}.get(f, 0)
        n = x.shape[axis]
        sections = d.pick([[1], [0, 1], 1] if n else [1]) if f is not np.array_split else int(d.rng.integers(1, 4))
        if isinstance(sections, int) and f is not np.array_split and n % sections:
            sections = 1
        return (x, sections), {"axis": -x.ndim} if f in (np.split, np.array_split) and d.chance(0.3) else {}
    if f is np.block:
        return (_blocks(d, dtype),), {}
    k = int(d.rng.integers(1, 4))
    parts = [d.array(shape, "any", d.pick([dtype, np.float64])) for _ in range(k)]
    if f is np.concatenate:
        axis = d.axis(len(shape), tuples=False)
        return (parts,), {"axis": axis} if axis != 0 or d.chance(0.5) else {}
    if f is np.stack:
        return (tuple(parts),), {"axis": int(d.rng.integers(-len(shape) - 1, len(shape) + 1))}
    return (parts,), {}


def _blocks(d: Draw, dtype):
    """A valid argument of np.block: lists nested 1 to 3 deep, cut from one output shape level by
    level (each level's list cuts the extent of its axis among its children), each block given with
    some of its leading length-1 axes dropped (a number or a 0-d array for a block of ones)."""
    depth = int(d.rng.integers(1, 4))
    ndim = max(depth, int(d.rng.integers(1, 4)))
    first = ndim - depth

    def leaf(shape):
        keep = int(d.rng.integers(0, ndim + 1))
        while keep < ndim and any(n != 1 for n in shape[: ndim - keep]):  # (promotion restores 1s only)
            keep += 1
        if keep == 0 and d.chance(0.5):
            return d.number("any", d.pick([dtype, np.float64]))
        return d.array(shape[ndim - keep :], "any", d.pick([dtype, dtype, np.float64]))

    def cut(shape, level):
        if level == depth:
            return leaf(shape)
        axis = first + level
        n = shape[axis]
        bounds = [0, n]
        if n > 1 and d.chance(0.7):
            inner = d.rng.choice(np.arange(1, n), int(d.rng.integers(1, n)), replace=False)
            bounds = [0, *sorted(int(b) for b in inner), n]
        return [cut((*shape[:axis], hi - lo, *shape[axis + 1 :]), level + 1) for lo, hi in zip(bounds, bounds[1:])]

    total = [int(d.rng.integers(1, 5)) for _ in range(ndim)]
    if d.chance(0.1):
        total[int(d.rng.integers(ndim))] = 0
    return cut(tuple(total), 0)


GETITEM = [operator.getitem]


@family("indexing", *GETITEM)
def _getitem(d: Draw, f):
    x = d.array(d.shape(1, 3), "any", d.dtype())
    n0 = x.shape[0]
    index = d.pick(
        [
            int(d.rng.integers(-n0, n0)),
            slice(None, None, -1),
            slice(1, None, 2),
            (Ellipsis, None),
            d.rng.integers(-n0, n0, int(d.rng.integers(0, 4))),
            d.rng.random(x.shape) > 0.5,
            (d.rng.random(n0) > 0.5,),
            [int(i) for i in d.rng.integers(0, n0, 2)],
            (slice(None), d.rng.integers(0, x.shape[-1], 2)) if x.ndim >= 2 else 0,
            (d.rng.integers(0, n0, 2), Ellipsis, d.rng.integers(0, x.shape[-1], 2)) if x.ndim >= 2 else -1,
            () if d.chance(0.5) else Ellipsis,
        ]
    )
    return (x, crt.nondiff(index) if isinstance(index, (list, np.ndarray)) else index), {}


PRODUCTS = [
    np.dot,
    np.ndarray.dot,
    np.matmul,
    np.linalg.matmul,
    operator.matmul,
    np.inner,
    np.outer,
    np.linalg.outer,
    np.vdot,
    np.tensordot,
    np.linalg.tensordot,
    np.kron,
    np.einsum,
    np.cross,
    np.linalg.cross,
    np.vecdot,
    np.linalg.vecdot,
    np.matvec,
    np.vecmat,
    np.convolve,
    np.correlate,
    np.polyval,
    np.polyder,
    np.vander,
    np.polyfit,
    np.linalg.multi_dot,
]


@family("products", *PRODUCTS)
def _product(d: Draw, f):
    dtype = d.dtype()
    other = d.pick([dtype, np.float64])
    n, m, k = (int(d.rng.integers(1, 4)) for _ in range(3))
    if d.chance(0.1):
        k = 0
    a = lambda *s: d.array(s, "any", dtype)  # noqa: E731
    b = lambda *s: d.array(s, "any", other)  # noqa: E731
    if f in (np.dot, np.ndarray.dot):
        return d.pick(
            [
                (a(n, k), b(k, m)),
                (a(k), b(k)),
                (a(n, k), b(k)),
                (a(2, n, k), b(k, m)),
                (a(n, k), d.number("any")) if f is np.dot else (a(n, k), b(k)),
            ]
        ), {}
    if f in (np.matmul, np.linalg.matmul, operator.matmul):
        return d.pick(
            [
                (a(n, k), b(k, m)),
                (a(k), b(k, m)),
                (a(n, k), b(k)),
                (a(2, n, k), b(k, m)),
                (a(1, n, k), b(2, k, m)),
                (a(k), b(k)),
            ]
        ), {}
    if f is np.inner:
        return d.pick([(a(n, k), b(m, k)), (a(k), b(k)), (a(n), d.number("any"))]), {}
    if f in (np.outer, np.linalg.outer):
        return (a(n), b(m)), {}
    if f is np.vdot:
        return (a(n, k), b(n, k)), {}
    if f in (np.tensordot, np.linalg.tensordot):
        return d.pick(
            [
                ((a(n, k), b(k, m)), {"axes": 1}),
                ((a(n, k), b(n, k)), {"axes": 2}),
                ((a(n, k, 2), b(2, k, m)), {"axes": ([1, 2], [1, 0])}),
                ((a(n), b(m)), {"axes": 0}),
            ]
        )
    if f is np.kron:
        return d.pick([(a(n), b(m)), (a(n, k), b(m, 2)), (a(n, k), b(m))]), {}
    if f is np.einsum:
        spec, shapes = d.pick(
            [
                ("ij,jk->ik", [(n, k), (k, m)]),
                ("ij->", [(n, m)]),
                ("ii->i", [(n, n)]),
                ("i,i->", [(n,), (n,)]),
                ("bij,bjk->bik", [(2, n, k), (2, k, m)]),
                ("ij->ji", [(n, m)]),
                ("...i,...i->...", [(2, n), (n,)]),
                ("ij,ij,ij->i", [(n, m)] * 3),
            ]
        )
        return (spec, *[d.array(s, "any", d.pick([dtype, other])) for s in shapes]), {}
    if f in (np.cross, np.linalg.cross):
        c = 3 if f is np.linalg.cross else d.pick([2, 3])
        return d.pick([(a(c), b(c)), (a(n, c), b(c)), (a(n, c), b(n, c))]), {}
    if f in (np.vecdot, np.linalg.vecdot):
        return d.pick([(a(n, k), b(k)), (a(k), b(k)), (a(n, k), b(n, k))]), {}
    if f is np.matvec:
        return (a(n, k), b(k)), {}
    if f is np.vecmat:
        return (a(k), b(k, m)), {}
    if f in (np.convolve, np.correlate):
        return (a(n + 1), b(m)), {"mode": d.pick(["full", "same", "valid"])} if d.chance(0.6) else {}
    if f is np.polyval:
        return (a(n), d.operand("any", other, empty=False)), {}
    if f is np.vander:
        kwargs = {"N": int(d.rng.integers(0, 5))} if d.chance(0.6) else {}
        return (a(n),), ({**kwargs, "increasing": True} if d.chance(0.4) else kwargs)
    if f is np.polyder:
        m = int(d.rng.integers(0, n + 2))  # past the degree too: no coefficient kept
        return ((a(n), m), {}) if d.chance(0.5) else ((a(n),), {"m": m} if d.chance(0.5) else {})
    if f is np.linalg.multi_dot:
        return ([a(n, k), b(k, m), a(m, 2)][: int(d.rng.integers(2, 4))],), {}
    if f is np.polyfit:  # distinct points, at least deg + 1 of them: a full-rank fit (0 stays apart from them)
        points, deg = int(d.rng.integers(1, 7)), int(d.rng.integers(0, 4))
        deg = min(deg, points - 1)
        spread = np.linspace(0.25, 1.5, points) * (-1.0) ** np.arange(points)
        x = (d.rng.permutation(spread) + 0.05 * d.values((points,), "small", dtype)).astype(dtype)
        y = d.array((points,) if d.chance(0.6) else (points, max(k, 1)), "any", d.pick([dtype, other]))
        w = d.values((points,), "pos", other)
        options = (crt.nondiff(deg), crt.nondiff(None), crt.nondiff(False))
        return d.pick([((x, y, deg), {}), ((x, y, *options, w), {}), ((x, y, deg), {"w": w})])
    raise Skip(f"no generator for {f}")


LINALG = [
    np.linalg.inv,
    np.linalg.det,
    np.linalg.slogdet,
    np.linalg.solve,
    np.linalg.cholesky,
    np.linalg.eigh,
    np.linalg.eigvalsh,
    np.linalg.svd,
    np.linalg.svdvals,
    np.linalg.qr,
    np.linalg.pinv,
    np.linalg.norm,
    np.linalg.matrix_norm,
    np.linalg.cond,
    np.linalg.lstsq,
    np.linalg.matrix_power,
    np.linalg.eigvals,
    np.linalg.matrix_rank,
    np.linalg.eig,
    sla.det,
    sla.inv,
    sla.solve,
    sla.solve_triangular,
    sla.cholesky,
    sla.expm,
    sla.sqrtm,
    sla.logm,
    sla.eigh,
    sla.eigvalsh,
    sla.svdvals,
    sla.qr,
    sla.norm,
    sla.pinv,
    sla.pinvh,
    sla.lu_factor,
    sla.cho_factor,
    sla.polar,
    sla.block_diag,
    sla.toeplitz,
    sla.circulant,
    sla.hankel,
    sla.solve_sylvester,
    sla.solve_continuous_lyapunov,
    sla.solve_discrete_lyapunov,
    sla.lstsq,
]


@family("linalg", *LINALG)
def _linalg(d: Draw, f):
    # eigenvectors and singular vectors of complex matrices are defined up to a phase that finite
    # differences do not hold still: those functions get real matrices
    gauge = f in (np.linalg.eigh, sla.eigh, np.linalg.svd, np.linalg.eig)
    dtype = d.dtype(complex_ok=not gauge, single_ok=False)
    batch = f.__module__.startswith("numpy") and f not in (np.linalg.matrix_power, np.linalg.cond)
    n = int(d.rng.integers(1, 4))
    sq = lambda kind="general": d.square(n, dtype, kind, batch=batch)  # noqa: E731
    if f in (np.linalg.inv, np.linalg.det, np.linalg.slogdet, sla.det, sla.inv, sla.expm):
        return (sq(),), {}
    if f in (np.linalg.solve, sla.solve):
        rhs = d.array((n,) if d.chance(0.3) or not batch else (n, int(d.rng.integers(1, 3))), "any", dtype)
        if f is np.linalg.solve and rhs.ndim == 1:
            return (d.square(n, dtype), rhs), {}
        return (sq(), rhs), {}
    if f is sla.solve_triangular:
        lower = d.chance(0.5)
        a = d.square(n, dtype, "lower" if lower else "upper")
        kw = {"lower": lower}
        if d.chance(0.3):
            kw["trans"] = d.pick([0, 1, 2, "T", "C"])
        if d.chance(0.2):
            kw["unit_diagonal"] = True
        return (a, d.array((n, 2) if d.chance(0.5) else (n,), "any", dtype)), kw
    if f in (np.linalg.cholesky, sla.cholesky, sla.cho_factor):
        kw = {"lower": True} if f is not np.linalg.cholesky and d.chance(0.5) else {}
        if f is np.linalg.cholesky and d.chance(0.3):
            kw = {"upper": True}
        return (d.square(n, dtype, "spd", batch=batch),), kw
    if f in (np.linalg.eigh, np.linalg.eigvalsh, sla.eigh, sla.eigvalsh, sla.pinvh):
        kw = {"UPLO": d.pick(["L", "U"])} if f.__module__.startswith("numpy") and d.chance(0.4) else {}
        return (sq("sym") + np.diag(np.arange(n) * 2.0),), kw  # eigenvalues apart
    if f in (
        np.linalg.svd,
        np.linalg.svdvals,
        sla.svdvals,
        np.linalg.pinv,
        np.linalg.qr,
        sla.qr,
        np.linalg.matrix_rank,
        sla.pinv,
        sla.polar,
    ):
        m = int(d.rng.integers(1, 4))
        a = d.array((n, m), "any", dtype) + np.eye(n, m) * 2
        if f is np.linalg.svd:
            return (a,), {"full_matrices": False} if d.chance(0.7) else {"compute_uv": False}
        if f in (np.linalg.qr, sla.qr):
            # the columns of a complete Q past the rank are any orthonormal completion: not differentiable
            if f is np.linalg.qr:
                return (a,), {"mode": d.pick(["reduced", "r"] + (["complete"] if n <= m else []))}
            return (a,), {"mode": "economic"} if d.chance(0.5) or n > m else {}
        if f is sla.polar:
            return (a if n >= m else a.T,), {}
        return (a,), {}
    if f in (np.linalg.norm, sla.norm):
        a = d.array(d.shape(1, 2), "signed", dtype)
        kw = {}
        if a.ndim == 2:
            kw["ord"] = d.pick([None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
        else:
            kw["ord"] = d.pick([None, 1, 2, 3, np.inf, -np.inf, 0.5])
        if d.chance(0.3):
            kw["keepdims"] = True
        if a.ndim == 2 and d.chance(0.3) and kw["ord"] in (None, 1, 2, np.inf):
            kw["axis"] = d.pick([0, -1])
            if kw["ord"] == "nuc":
                kw["ord"] = None
        return (a,), kw
    if f is np.linalg.matrix_norm:
        return (d.array((2, n, n) if batch and d.chance(0.3) else (n, n + 1), "signed", dtype),), {
            "ord": d.pick(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
        }
    if f is np.linalg.cond:
        return (sq(),), {"p": d.pick([None, 1, 2, -2, "fro", np.inf])}
    if f in (np.linalg.lstsq, sla.lstsq):
        m = int(d.rng.integers(1, 4))
        a = d.array((n + m, n), "any", dtype) + np.eye(n + m, n) * 2
        return (a, d.array((n + m,), "any", dtype)), ({"rcond": None} if f is np.linalg.lstsq else {})
    if f is np.linalg.matrix_power:
        return (sq(), int(d.rng.integers(-2, 4))), {}
    if f in (np.linalg.eigvals, np.linalg.eig):  # real eigenvalues far apart stay real under perturbation
        return (d.square(n, np.float64, batch=batch) + np.diag(np.arange(n) * 4.0),), {}
    if f in (sla.sqrtm, sla.logm):
        return (d.square(n, dtype, "spd"),), {}
    if f is sla.block_diag:
        return tuple(d.array(d.shape(1, 2), "any", dtype) for _ in range(int(d.rng.integers(1, 4)))), {}
    if f in (sla.toeplitz, sla.circulant, sla.hankel):
        c = d.array((n,), "any", dtype)
        if f is sla.circulant:
            return (c,), {}
        return ((c, d.array((int(d.rng.integers(1, 4)),), "any", dtype)) if d.chance(0.5) else (c,)), {}
    if f is sla.solve_sylvester:
        m = int(d.rng.integers(1, 4))
        return (d.square(n, dtype), d.square(m, dtype), d.array((n, m), "any", dtype)), {}
    if f in (sla.solve_continuous_lyapunov, sla.solve_discrete_lyapunov):
        a = d.square(n, dtype) * (0.2 if f is sla.solve_discrete_lyapunov else 1.0)
        return (a, d.array((n, n), "any", dtype)), {}
    if f is sla.lu_factor:
        return (sq(),), {}
    raise Skip(f"no generator for {f}")


FFTS = [
    np.fft.fft,
    np.fft.ifft,
    np.fft.rfft,
    np.fft.irfft,
    np.fft.hfft,
    np.fft.ihfft,
    np.fft.fft2,
    np.fft.ifft2,
    np.fft.rfft2,
    np.fft.irfft2,
    np.fft.fftn,
    np.fft.ifftn,
    np.fft.rfftn,
    np.fft.irfftn,
    np.fft.fftshift,
    np.fft.ifftshift,
]


@family("fft", *FFTS)
def _fft(d: Draw, f):
    real_in = f in (np.fft.rfft, np.fft.ihfft, np.fft.rfft2, np.fft.rfftn)
    two = f in (
        np.fft.fft2,
        np.fft.ifft2,
        np.fft.rfft2,
        np.fft.irfft2,
        np.fft.fftn,
        np.fft.ifftn,
        np.fft.rfftn,
        np.fft.irfftn,
    )
    x = d.array(d.shape(2 if two else 1, 3), "any", d.dtype(complex_ok=not real_in))
    kw = {}
    if f in (np.fft.fftshift, np.fft.ifftshift):
        return (x,), {"axes": d.axis(x.ndim)} if d.chance(0.5) else {}
    if d.chance(0.4):
        kw["norm"] = d.pick(["backward", "ortho", "forward"])
    if not two:
        if d.chance(0.4):
            kw["n"] = int(d.rng.integers(1, 6))
        if d.chance(0.4):
            kw["axis"] = d.axis(x.ndim, tuples=False, none=False)
    else:
        if d.chance(0.4):
            kw["axes"] = d.pick(
                [
                    (0, 1),
                    (-1, -2),
                    (-1,) if f not in (np.fft.fft2, np.fft.ifft2, np.fft.rfft2, np.fft.irfft2) else (1, 0),
                ]
            )
        if d.chance(0.3):
            axes = kw.get("axes", (-2, -1))
            kw["s"] = tuple(int(d.rng.integers(1, 5)) for _ in axes)
    return (x,), kw


FFTFREQ = [np.fft.fftfreq, np.fft.rfftfreq]


@family("fft", *FFTFREQ)
def _fftfreq(d: Draw, f):
    return (int(d.rng.integers(1, 6)),), {"d": d.number("pos")} if d.chance(0.5) else {}


SPECIAL_UNARY = {
    sp.erf: "any",
    sp.erfc: "any",
    sp.erfcx: "any",
    sp.erfi: "small",
    sp.erfinv: "unit",
    sp.erfcinv: "prob",
    sp.dawsn: "any",
    sp.expit: "any",
    sp.log_expit: "any",
    sp.logit: "prob",
    sp.ndtr: "any",
    sp.ndtri: "prob",
    sp.log_ndtr: "any",
    sp.gamma: "pos",
    sp.gammaln: "pos",
    sp.loggamma: "pos",
    sp.psi: "pos",
    sp.entr: "pos",
    sp.i0: "any",
    sp.i0e: "any",
    sp.i1: "any",
    sp.i1e: "any",
    sp.j0: "any",
    sp.j1: "any",
    sp.y0: "pos",
    sp.y1: "pos",
    sp.k0: "pos",
    sp.k0e: "pos",
    sp.k1: "pos",
    sp.k1e: "pos",
    sp.exp1: "pos",
    sp.expi: "pos",
    sp.wofz: "any",
    sp.softplus: "any",
    sp.zeta: "above1",
    sp.log1p: "pos",
    sp.expm1: "any",
    sp.exp2: "any",
    sp.exp10: "small",
    sp.cbrt: "pos",
    np.i0: "any",
    sp.lambertw: "pos",
    sp.ellipk: "unit",
    sp.ellipkm1: "pos",
    sp.ellipe: "unit",
    sp.spence: "pos",
    sp.exprel: "any",
    sp.rgamma: "any",
    sp.gammasgn: "pos",
    sp.airy: "any",
    sp.fresnel: "any",
    sp.sici: "pos",
    sp.shichi: "small",
}
SPECIAL_COMPLEX = {
    sp.erf,
    sp.erfc,
    sp.erfcx,
    sp.erfi,
    sp.dawsn,
    sp.expit,
    sp.gamma,
    sp.loggamma,
    sp.psi,
    sp.wofz,
    sp.exp1,
    sp.expi,
    sp.log_ndtr,
    sp.ndtr,
    sp.log1p,
    sp.expm1,
    sp.lambertw,
    sp.rgamma,
    sp.airy,
    sp.fresnel,
    sp.shichi,
}


@family("scipy.special", *SPECIAL_UNARY)
def _special_unary(d: Draw, f):
    domain = SPECIAL_UNARY[f]
    x = d.operand(domain, d.dtype(complex_ok=f in SPECIAL_COMPLEX))
    return (x,), {}


SPECIAL_BINARY = {
    # function: (domain or "order" for an integer order, domain of x)
    sp.xlogy: ("any", "pos"),
    sp.xlog1py: ("any", "pos"),
    sp.beta: ("pos", "pos"),
    sp.betaln: ("pos", "pos"),
    sp.gammainc: ("pos", "pos"),
    sp.gammaincc: ("pos", "pos"),
    sp.gammaincinv: ("pos", "prob"),
    sp.gammainccinv: ("pos", "prob"),
    sp.kl_div: ("pos", "pos"),
    sp.rel_entr: ("pos", "pos"),
    sp.boxcox: ("pos", "small"),
    sp.boxcox1p: ("pos", "small"),
    sp.inv_boxcox: ("small", "small"),
    sp.huber: ("pos", "any"),
    sp.pseudo_huber: ("pos", "any"),
    sp.binom: ("pos", "pos"),
    sp.jv: ("order", "pos"),
    sp.jve: ("order", "pos"),
    sp.yv: ("order", "pos"),
    sp.yve: ("order", "pos"),
    sp.iv: ("order", "pos"),
    sp.ive: ("order", "pos"),
    sp.kv: ("order", "pos"),
    sp.kve: ("order", "pos"),
    sp.kn: ("int", "pos"),
    sp.yn: ("int", "pos"),
    sp.expn: ("int", "pos"),
    sp.polygamma: ("int", "pos"),
    sp.multigammaln: ("pos3", "int"),
    sp.zeta: ("above1", "pos"),
    sp.spherical_jn: ("int", "pos"),
    sp.spherical_yn: ("int", "pos"),
    sp.spherical_in: ("int", "pos"),
    sp.spherical_kn: ("int", "pos"),
    sp.ellipkinc: ("any", "unit"),
    sp.ellipeinc: ("any", "unit"),
    sp.poch: ("pos", "small"),
    sp.owens_t: ("any", "any"),
    sp.struve: ("order", "pos"),
    sp.modstruve: ("order", "pos"),
}


@family("scipy.special", *SPECIAL_BINARY)
def _special_binary(d: Draw, f):
    da, dx = SPECIAL_BINARY[f]
    if f is sp.zeta and d.chance(0.5):
        return (d.operand("above1"),), {}
    if f is sp.multigammaln:
        return (d.operand("above1") + 1.0, int(d.rng.integers(1, 4))), {}
    sa, sx = _broadcast_pair(d)
    x = d.array(sx, dx) if d.chance(0.8) else d.number(dx)
    if da == "int":
        a = d.rng.integers(0, 3, sa) if d.chance(0.7) else int(d.rng.integers(0, 3))
        kw = (
            {"derivative": True}
            if f in (sp.spherical_jn, sp.spherical_yn, sp.spherical_in, sp.spherical_kn) and d.chance(0.4)
            else {}
        )
        return (a, x), kw
    if da == "order":
        a = d.array(sa, "pos") if d.chance(0.5) else float(d.rng.integers(0, 3))
        a = crt.nondiff(a) if d.chance(0.9) else a  # (the order has no closed-form derivative: a refusal)
        dtype = d.dtype(single_ok=False) if f in (sp.jv, sp.iv, sp.kv, sp.jve, sp.ive, sp.kve, sp.yv, sp.yve) else None
        if dtype is np.complex128:
            x = np.asarray(x) + 0.2j
        return (a, x), {}
    a = d.array(sa, da) if d.chance(0.8) else d.number(da)
    if f in (sp.gammainc, sp.gammaincc, sp.gammaincinv, sp.gammainccinv) and d.chance(0.9):
        a = crt.nondiff(a)  # (no closed-form derivative in a: a refusal)
    return (a, x), {}


MATH_UNARY = {
    math.sin: "any",
    math.cos: "any",
    math.tan: "unit",
    math.asin: "unit",
    math.acos: "unit",
    math.atan: "any",
    math.sinh: "any",
    math.cosh: "any",
    math.tanh: "any",
    math.asinh: "any",
    math.acosh: "above1",
    math.atanh: "unit",
    math.exp: "any",
    math.exp2: "any",
    math.expm1: "any",
    math.log: "pos",
    math.log10: "pos",
    math.log2: "pos",
    math.log1p: "pos",
    math.sqrt: "pos",
    math.cbrt: "signed",
    math.erf: "any",
    math.erfc: "any",
    math.gamma: "pos",
    math.lgamma: "pos",
    math.fabs: "signed",
    math.degrees: "any",
    math.radians: "any",
    math.floor: "signed",
    math.ceil: "signed",
    math.trunc: "signed",
    math.frexp: "signed",
    math.modf: "signed",
    math.isfinite: "any",
    math.isnan: "any",
    math.isinf: "any",
    math.ulp: "pos",
    operator.neg: "any",
    operator.pos: "any",
    operator.abs: "signed",
    abs: "signed",
    float: "any",
    round: "signed",
    cmath.sin: "any",
    cmath.cos: "any",
    cmath.tan: "unit",
    cmath.asin: "unit",
    cmath.acos: "unit",
    cmath.atan: "small",
    cmath.sinh: "any",
    cmath.cosh: "any",
    cmath.tanh: "any",
    cmath.asinh: "small",
    cmath.acosh: "above1",
    cmath.atanh: "unit",
    cmath.exp: "any",
    cmath.log: "pos",
    cmath.log10: "pos",
    cmath.sqrt: "pos",
    cmath.phase: "signed",
    cmath.polar: "signed",
    cmath.isfinite: "any",
    cmath.isnan: "any",
    cmath.isinf: "any",
    complex: "any",
}


@family("math/cmath/operator/builtins", *MATH_UNARY)
def _math_unary(d: Draw, f):
    domain = MATH_UNARY[f]
    is_cmath = getattr(f, "__module__", "") == "cmath" or f is complex
    kind = d.pick(
        ["float", "float", "numpy", "int"]
        + (["complex"] if is_cmath or f in (operator.neg, operator.pos, operator.abs, abs) else [])
    )
    if kind == "int" and (domain in ("unit", "small") or f in (math.frexp, math.modf, round)):
        kind = "float"  # (frexp and modf jump at integers)
    if kind == "complex":
        x = complex(d.values((), domain, np.complex128))
    elif kind == "numpy":
        x = d.values((), domain, d.pick([np.float64, np.float32]))[()]
    elif kind == "int":
        x = int(d.values((), "above1" if domain == "above1" else ("pos" if domain == "pos" else "signed"), np.int64))
        if domain == "above1":
            x = abs(x) + 1
    else:
        x = float(d.values((), domain))
    if f is round and d.chance(0.5):
        return (x, int(d.rng.integers(0, 3))), {}
    return (x,), {}


MATH_BINARY = {
    math.atan2: ("any", "pos"),
    math.pow: ("pos", "any"),
    math.hypot: ("signed", "signed"),
    math.copysign: ("signed", "signed"),
    math.fmod: ("any", "pos"),
    math.remainder: ("any", "pos"),
    math.log: ("pos", "above1"),
    math.ldexp: ("any", "int"),
    math.dist: ("vec", "vec"),
    math.fsum: ("list", None),
    math.prod: ("list", None),
    sum: ("list", None),
    max: ("pair", None),
    min: ("pair", None),
    pow: ("pos", "any"),
    divmod: ("any", "pos"),
    math.isclose: ("any", "any"),
    cmath.rect: ("pos", "any"),
    cmath.isclose: ("any", "any"),
    cmath.log: ("pos", "above1"),
    math.nextafter: ("any", "any"),
}


@family("math/cmath/operator/builtins", *MATH_BINARY)
def _math_binary(d: Draw, f):
    da, db = MATH_BINARY[f]
    num = lambda dom: float(d.values((), dom)) if d.chance(0.7) else d.values((), dom)[()]  # noqa: E731
    if da == "list":
        xs = [num("any") for _ in range(int(d.rng.integers(0 if f is not sum else 0, 4)))]
        return (xs,), {}
    if da == "pair":
        return (num("any"), num("any")), {}
    if da == "vec":
        n = int(d.rng.integers(1, 4))
        return ([num("any") for _ in range(n)], [num("any") for _ in range(n)]), {}
    b = int(d.rng.integers(-3, 4)) if db == "int" else num(db)
    return (num(da), b), {}


SCALAR_METHODS = {
    # NumPy scalar methods: (extra positional arguments drawn by name, takes complex)
    "sum": ("axis", True),
    "mean": ("axis", True),
    "std": ("axis", True),
    "var": ("axis", True),
    "prod": ("axis", True),
    "max": ("axis", False),
    "min": ("axis", False),
    "cumsum": ("axis", True),
    "cumprod": ("axis", True),
    "ravel": ("", True),
    "flatten": ("", True),
    "reshape": ("shape", True),
    "squeeze": ("", True),
    "transpose": ("", True),
    "swapaxes": ("swap", True),
    "take": ("index", True),
    "repeat": ("repeats", True),
    "round": ("", False),
    "clip": ("bounds", False),
    "conj": ("", True),
    "conjugate": ("", True),
    "copy": ("", True),
    "astype": ("dtype", True),
    "item": ("", True),
    "tolist": ("", True),
    "all": ("", True),
    "any": ("", True),
    "argmax": ("", False),
    "argmin": ("", False),
    "argsort": ("", False),
    "nonzero": ("", True),
    "searchsorted": ("value", False),
}


@family("NumPy scalar methods", *(getattr(np.generic, name) for name in SCALAR_METHODS))
def _scalar_method(d: Draw, f):
    how, complex_ok = SCALAR_METHODS[f.__name__]
    x = d.values((), "signed", d.dtype(complex_ok))[()]
    extra = {
        "axis": d.pick([(), (None,), (0,), (-1,)]),
        "shape": d.pick([((1,),), ((),), ((1, 1),)]),
        "swap": (0, 0),
        "index": d.pick([(0,), (np.array([0, 0]),)]),
        "repeats": d.pick([(2,), (1,)]),
        "bounds": (-0.5, 0.5),
        "dtype": (d.pick([np.float32, np.float64, np.complex128]),),
        "value": (d.number("any"),),
        "": (),
    }[how]  # the arguments after the scalar itself
    return (x, *extra), {}


ARRAY_METHODS = [
    np.ndarray.argmax,
    np.ndarray.argmin,
    np.ndarray.argsort,
    np.ndarray.argpartition,
    np.ndarray.nonzero,
    np.ndarray.round,
    np.ndarray.searchsorted,
    np.ndarray.all,
    np.ndarray.any,
]


@family("NumPy array methods", *ARRAY_METHODS)
def _array_method(d: Draw, f):
    # (float64 for round: a float32 finite-difference step crosses its jumps, as for the ROUNDING ufuncs)
    x = d.array(d.shape(1, 3), "signed", np.float64 if f is np.ndarray.round else d.pick([np.float64, np.float32]))
    if f is np.ndarray.round:
        kwargs = {"decimals": int(d.rng.integers(0, 3))} if d.chance(0.5) else {}
        return (_off_the_jumps(d, x, kwargs.get("decimals", 0)),), kwargs
    if f is np.ndarray.searchsorted:
        return (np.sort(x.reshape(-1)), d.operand("any", np.float64)), {}
    if f is np.ndarray.argpartition:
        return (x, int(d.rng.integers(x.shape[-1]))), {}
    if f in (np.ndarray.argmax, np.ndarray.argmin, np.ndarray.argsort):
        return (x,), {"axis": d.axis(x.ndim, tuples=False)} if d.chance(0.5) and f is not np.ndarray.argsort else {}
    return (x,), {}


MORE_LINALG = [
    sla.eig,
    sla.eigvals,
    sla.svd,
    sla.lu,
    sla.lu_solve,
    sla.cho_solve,
    sla.solve_banded,
    sla.solveh_banded,
    np.linalg.tensorinv,
    np.linalg.tensorsolve,
    np.ldexp,
]


@family("linalg", *MORE_LINALG)
def _more_linalg(d: Draw, f):
    n = int(d.rng.integers(1, 4))
    if f in (sla.eig, sla.eigvals):  # real eigenvalues far apart; eig's vectors are defined up to a scale
        return (d.square(n, np.float64) + np.diag(np.arange(n) * 4.0),), {} if f is sla.eigvals else {"right": True}
    if f is sla.svd:
        m = int(d.rng.integers(1, 4))
        return (d.array((n, m), "any") + 2 * np.eye(n, m),), {"full_matrices": False}
    if f is sla.lu:
        return (d.square(n, d.dtype(single_ok=False)),), {}
    if f is sla.lu_solve:
        a = d.square(n, np.float64)
        return (
            sla.lu_factor(a),
            d.array((n,) if d.chance(0.5) else (n, 2), "any"),
        ), {}  # (the factors are differentiated)
    if f is sla.cho_solve:
        a = d.square(n, np.float64, "spd")
        return (sla.cho_factor(a), d.array((n,) if d.chance(0.5) else (n, 2), "any")), {}
    if f is sla.solve_banded:
        ab = d.values((3, n), "small") + np.array([[0.0], [4.0], [0.0]])
        return ((1, 1), ab, d.array((n,), "any")), {}
    if f is sla.solveh_banded:
        ab = d.values((2, n), "small") * 0.3 + np.array([[0.0], [3.0]])
        return (ab, d.array((n,), "any")), {}
    if f is np.linalg.tensorinv:
        return (d.square(4, np.float64).reshape(4, 2, 2),), {"ind": 1}
    if f is np.linalg.tensorsolve:
        return (d.square(4, np.float64).reshape(2, 2, 4), d.array((2, 2), "any")), {}
    if f is np.ldexp:
        return (d.operand("any"), d.rng.integers(-2, 3, d.shape(0, 2))), {}
    raise Skip(f"no generator for {f}")


# ----- scipy.stats --------------------------------------------------------------------------------
# One entry per method and distribution, ``scipy.stats.gamma.cdf``: ``rv_continuous.cdf(gamma, x,
# a, loc, scale)`` with the distribution a non-differentiable first argument, x inside the support
# (x = loc + scale * z, z inside the standard form's), shapes away from their boundaries, q away
# from 0 and 1. A shape whose distribution function has no closed-form derivative (gamma's a in
# cdf, sf, ..., ppf) is drawn integer-typed, which the rule takes as discrete; now and then a float
# one, which it refuses.

STATS_CONTINUOUS = {
    # distribution: (z's range inside the standard support, whether F has closed-form shape partials)
    st.norm: ((-2.5, 2.5), True),
    st.halfnorm: ((0.1, 2.5), True),
    st.cauchy: ((-3.0, 3.0), True),
    st.laplace: ((-2.5, 2.5), True),
    st.logistic: ((-3.0, 3.0), True),
    st.gumbel_r: ((-1.5, 3.0), True),
    st.expon: ((0.1, 3.0), True),
    st.uniform: ((0.05, 0.95), True),
    st.t: ((-3.0, 3.0), False),
    st.gamma: ((0.2, 4.0), False),
    st.chi2: ((0.3, 5.0), False),
    st.invgamma: ((0.2, 2.5), False),
    st.beta: ((0.05, 0.95), False),
    st.lognorm: ((0.2, 3.0), True),
    st.weibull_min: ((0.1, 2.5), True),
    st.pareto: ((1.1, 4.0), True),
}
STATS_CONTINUOUS_METHODS = ("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf", "ppf", "isf")
STATS_DISCRETE = (st.poisson, st.binom, st.bernoulli, st.geom, st.nbinom)
STATS_DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "sf", "logcdf", "logsf")


def _stats_layout(d: Draw):
    """The output's shape, and a drawer of shapes that broadcast to it (``None``: a number)."""
    out = d.shape(0, 2, empty=True)

    def part():
        if not out or d.chance(0.35):
            return None
        trailing = out[int(d.rng.integers(len(out) + 1)) :]  # x of shape (3, 4) beside loc of shape (4,)
        return tuple(1 if d.chance(0.2) else n for n in trailing)

    return out, part


def _laid_out(d: Draw, a: np.ndarray) -> np.ndarray:
    """``a`` in one of several memory layouts."""
    if a.ndim == 0:
        return a
    layout = d.pick(["c", "c", "T", "F", "strided"])
    if layout == "T":
        return np.ascontiguousarray(a.T).T
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "strided":
        big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
        big[tuple(slice(None, None, 2) for _ in a.shape)] = a
        return big[tuple(slice(None, None, 2) for _ in a.shape)]
    return a


def _stats_number_or_array(d: Draw, v: np.ndarray, shape, dtype=np.float64):
    """``v`` as a number when ``shape`` is ``None`` (a Python number, a NumPy scalar, a 0-d array), else an array."""
    v = np.asarray(v).astype(dtype)
    if shape is not None or v.ndim:
        return _laid_out(d, v)
    kind = d.pick(["python", "numpy", "0d"])
    return v.item() if kind == "python" else (v[()] if kind == "numpy" else v)


def _stats_real(d: Draw, shape, domain: str, dtype=np.float64):
    lo, hi = DOMAINS[domain]
    return _stats_number_or_array(d, d.rng.uniform(lo, hi, shape or ()), shape, dtype)


def _stats_integer(d: Draw, shape, lo: int, hi: int):
    """An integer-typed parameter: mostly a Python int, else an integer array."""
    if shape is None or d.chance(0.6):
        return int(d.rng.integers(lo, hi + 1))
    return d.rng.integers(lo, hi + 1, shape)


def _stats_call(d: Draw, first, shapes: list, params: dict, names: list, defaults: bool = False):
    """``(first, *shapes, loc[, scale])`` by position, or with some by keyword (constants there);
    ``params`` at their defaults (loc 0, scale 1) may be left out."""
    style = d.pick(["position", "position", "position", "keywords", "defaults", "shape keywords"])
    if style == "keywords":
        return (first, *shapes), params
    if style == "shape keywords":
        return (first,), {**dict(zip(names, shapes)), **params}
    if style == "defaults" and defaults:
        return (first, *shapes), {}
    return (first, *shapes, *params.values()), {}


def _stats_continuous(d: Draw, f, dist):
    method = f.__name__
    z_lo, z_hi = STATS_CONTINUOUS[dist][0]
    names = [n.strip() for n in dist.shapes.split(",")] if dist.shapes else []
    out, part = _stats_layout(d)
    dtype = d.dtype(complex_ok=False)
    quantile = method in ("ppf", "isf")
    # the shapes the rule differentiates; those without a closed-form derivative are integers
    closed = STATS_CONTINUOUS[dist][1] or method in ("logpdf", "pdf")
    shapes = []
    for _ in names:
        shape = part()
        if closed or d.chance(0.1):  # (a float shape without closed form: a refusal)
            shapes.append(_stats_real(d, shape, "shape", d.pick([np.float64, np.float64, dtype])))
        else:
            shapes.append(_stats_integer(d, shape, 1, 4))
    default = d.chance(0.15)  # loc 0 and scale 1, which the call may leave out
    loc = 0.0 if default else _stats_real(d, part(), "any", d.pick([np.float64, dtype]))
    scale = 1.0 if default else _stats_real(d, part(), "scale", d.pick([np.float64, dtype]))
    first_shape = out if d.chance(0.7) else part()
    if quantile:
        first = _stats_real(d, first_shape, "quantile", dtype)
    else:
        z = d.rng.uniform(z_lo, z_hi, first_shape or ())
        if method in ("pdf", "cdf", "sf", "logsf") and np.isfinite(dist.a) and d.chance(0.15):
            # entries below the support, where the value is a constant (0, or 1 for sf) and finite
            z = np.where(d.rng.random(z.shape) < 0.4, dist.a - d.rng.uniform(0.1, 1.0, z.shape), z)
        x = np.asarray(loc, dtype=np.float64) + np.asarray(scale, dtype=np.float64) * z
        first = _stats_number_or_array(d, x, first_shape, dtype)
    args, kwargs = _stats_call(d, first, shapes, {"loc": loc, "scale": scale}, names, default)
    return (crt.nondiff(dist), *args), kwargs


def _stats_discrete(d: Draw, f, dist):
    method = f.__name__
    out, part = _stats_layout(d)
    dtype = d.dtype(complex_ok=False)
    below_top = method in ("sf", "logsf")  # (at the top of the support sf is 0 and logsf -inf)
    steps = method not in ("logpmf", "pmf") and d.chance(0.2)  # cdf, sf: steps between the counts
    k_shape = out if d.chance(0.7) else part()
    size = k_shape or ()
    p = _stats_real(d, part(), "prob", d.pick([np.float64, dtype]))
    if dist is st.poisson:
        mu = _stats_real(d, part(), "shape", d.pick([np.float64, dtype]))
        names, shapes, k = ["mu"], [mu], d.rng.integers(0, 7, size)
    elif dist is st.binom:
        n = _stats_integer(d, part(), 1, 8)
        top = np.asarray(n) - (1 if below_top else 0)
        k = np.floor(d.rng.random(np.broadcast_shapes(size, np.shape(n))) * (top + 1)).astype(np.int64)
        names, shapes = ["n", "p"], [crt.nondiff(n), p]
    elif dist is st.bernoulli:
        names, shapes, k = ["p"], [p], d.rng.integers(0, 1 if below_top else 2, size)
    elif dist is st.geom:
        names, shapes, k = ["p"], [p], d.rng.integers(1, 7, size)
    else:  # nbinom: n has no closed-form derivative in the distribution function
        if method in ("logpmf", "pmf") or d.chance(0.1):
            n = _stats_real(d, part(), "shape", d.pick([np.float64, dtype]))
        else:
            n = _stats_integer(d, part(), 1, 5)
        names, shapes, k = ["n", "p"], [n, p], d.rng.integers(0, 7, size)
    if method in ("pmf", "cdf", "sf", "logsf") and d.chance(0.15):  # counts below the support: finite values
        k = np.where(d.rng.random(np.shape(k)) < 0.4, dist.a - d.rng.integers(1, 3, np.shape(k)), k)
    loc = int(d.rng.integers(-3, 4)) if d.chance(0.3) else 0
    k = k + loc + (0.5 if steps else 0)
    if k_shape is None and not np.ndim(k) and d.chance(0.5):
        k = k.item()
    args, kwargs = _stats_call(d, crt.nondiff(k), shapes, {"loc": crt.nondiff(loc)}, names, loc == 0)
    kwargs = {key: v.value if isinstance(v, crt.NonDifferentiable) else v for key, v in kwargs.items()}
    return (crt.nondiff(dist), *args), kwargs


def _stats_entry(f, dist, gen):
    def stats(d: Draw, _f):
        return gen(d, f, dist)

    NAMED_GENERATORS[f"scipy.stats.{dist.name}.{f.__name__}"] = (f, "stats", stats, (dist,))


for _method in STATS_CONTINUOUS_METHODS:
    for _dist in STATS_CONTINUOUS:
        _stats_entry(getattr(rv_continuous, _method), _dist, _stats_continuous)
for _method in STATS_DISCRETE_METHODS:
    for _dist in STATS_DISCRETE:
        _stats_entry(getattr(rv_discrete, _method), _dist, _stats_discrete)

STATS_FROZEN = [
    *(getattr(rv_continuous_frozen, name) for name in STATS_CONTINUOUS_METHODS),
    *(getattr(rv_discrete_frozen, name) for name in ("logpmf", "pmf")),
]


@family("stats", *STATS_FROZEN)
def _stats_frozen(d: Draw, f):
    """``st.gamma(a, loc, scale).cdf(x)``: the frozen distribution's parameters are differentiated."""
    name = f.__name__
    continuous = name not in ("logpmf", "pmf") and (name in ("ppf", "isf", "logpdf", "pdf") or d.chance(0.7))
    if continuous:
        dist = d.pick(list(STATS_CONTINUOUS))
        (_, *params), kwargs = _stats_continuous(d, getattr(rv_continuous, name), dist)
    else:
        dist = d.pick(list(STATS_DISCRETE))
        (_, *params), kwargs = _stats_discrete(d, getattr(rv_discrete, name), dist)
    first, *params = [v.value if isinstance(v, crt.NonDifferentiable) else v for v in params]
    names = [n.strip() for n in dist.shapes.split(",")] if dist.shapes else []
    params += [kwargs.pop(n) for n in names if n in kwargs]
    params += kwargs.values()  # by position: the frozen's kwds are constants
    # in float64: the tolerances read the dtypes of the arguments, not of the parameters a frozen one holds
    params = [v.astype(np.float64) if np.result_type(v) == np.float32 else v for v in params]
    frozen = dist(*params)
    return (frozen, crt.nondiff(first) if not continuous else first), {}


# ----- scipy.spatial.distance, scipy.integrate, scipy.signal -----------------------------------------

SPATIAL = [ssd.cdist, ssd.pdist, ssd.squareform, ssd.euclidean, ssd.sqeuclidean, ssd.cityblock]


def _distinct_points(d: Draw, n: int, k: int, dtype) -> np.ndarray:
    """``n`` points in ``k`` dimensions, every two apart in every coordinate (a euclidean distance
    has a derivative only between distinct points, a cityblock one only off the coordinate planes
    through the other point), 0 in none of them, so that the Hessian check's special point (an
    entry set to 0) keeps them apart."""
    columns = [d.rng.permutation(np.linspace(0.3, 0.3 + 0.45 * (n - 1), n)) for _ in range(k)]
    signs = d.rng.choice([-1.0, 1.0], k)
    x = np.stack(columns, axis=-1).reshape(n, k) * signs + 0.05 * d.values((n, k), "small")
    x = x.astype(dtype)
    return d.pick([x, x, np.asfortranarray(x), np.repeat(x, 2, axis=0)[::2]])


@family("scipy.spatial", *SPATIAL)
def _spatial(d: Draw, f):
    dtype = d.pick([np.float64, np.float64, np.float32])
    metric = d.pick(["euclidean", "sqeuclidean", "cityblock", "sqe", "cblock"])
    k = int(d.rng.integers(1, 4))
    weights = d.values((k,), "pos") if d.chance(0.3) else None
    if f in (ssd.cdist, ssd.pdist):
        kwargs = {} if weights is None else {"w": weights}
        if f is ssd.cdist:
            m, n = int(d.rng.integers(1, 4)), int(d.rng.integers(1, 4))
            points = _distinct_points(d, m + n, k, dtype)
            first = (points[:m], points[m:])
        else:
            first = (_distinct_points(d, int(d.rng.integers(1, 5)), k, dtype),)
        if d.chance(0.2) and weights is None:  # the default metric
            return first, kwargs
        return ((*first, metric), kwargs) if d.chance(0.5) else (first, {**kwargs, "metric": metric})
    if f is ssd.squareform:
        n = int(d.rng.integers(1, 5))
        if d.chance(0.5):  # a condensed vector to a matrix
            v = d.array((n * (n - 1) // 2,), "any", d.pick([dtype, np.complex128]))
            return ((v,), {"force": "tomatrix"}) if d.chance(0.3) else ((v,), {})
        # a square matrix, read above its diagonal: without checks (finite differences break symmetry)
        return (d.array((n, n), "any", dtype),), d.pick([{"checks": False}, {"checks": False, "force": "tovector"}])
    u, v = _distinct_points(d, 2, k, dtype)
    if weights is None:
        return (u, v), {}
    return d.pick([((u, v, weights.astype(dtype)), {}), ((u, v), {"w": weights})])


INTEGRATE = [si.trapezoid, si.cumulative_trapezoid, si.simpson]


@family("scipy.integrate", *INTEGRATE)
def _integrate(d: Draw, f):
    dtype = d.dtype()
    shape = d.shape(1, 3)
    axis = int(d.rng.integers(len(shape)))
    n = shape[axis]
    if f is si.simpson and d.chance(0.5):  # samples enough for Simpson's pairs and Cartwright's last interval
        n = int(d.rng.integers(3, 7))
        shape = (*shape[:axis], n, *shape[axis + 1 :])
    y = d.array(shape, "any", dtype)
    kwargs = {} if axis == len(shape) - 1 and d.chance(0.5) else {"axis": d.pick([axis, axis - len(shape)])}
    if f is si.cumulative_trapezoid and d.chance(0.4):
        kwargs["initial"] = 0
    # increasing sample points, apart: 1-D along the axis, or one set per lane
    layout = d.pick(["1-d", "1-d", "lanes"] + (["broadcast"] if f is si.trapezoid else []))
    x_shape = {"1-d": (n,), "lanes": shape, "broadcast": tuple(m if i == axis else 1 for i, m in enumerate(shape))}
    x = np.cumsum(d.values(x_shape[layout], "pos"), axis=0 if layout == "1-d" else axis) - 1.0
    spacing = d.pick(["none", "x", "x", "dx"])
    if spacing == "none":
        return (y,), kwargs
    if spacing == "dx":
        dx = d.number("pos")
        if f is si.simpson:  # keyword-only: a constant
            return (y,), {**kwargs, "dx": dx}
        return ((y, None, dx), kwargs) if d.chance(0.6) else ((y,), {**kwargs, "dx": dx})
    if f is si.simpson:  # x held constant: simpson is differentiated in y only
        return ((y, crt.nondiff(x)), kwargs) if d.chance(0.6) else ((y,), {**kwargs, "x": x})
    return ((y, x), kwargs) if d.chance(0.7) else ((y,), {**kwargs, "x": x})


SIGNAL = [ss.convolve, ss.correlate, ss.fftconvolve]


@family("scipy.signal", *SIGNAL)
def _signal(d: Draw, f):
    dtype = d.dtype()
    other = d.pick([dtype, np.float64, np.complex128])
    ndim = int(d.rng.integers(0, 4))
    mode = d.pick(["full", "same", "valid"])
    s1 = [int(d.rng.integers(1, 4)) for _ in range(ndim)]
    s2 = [int(d.rng.integers(1, 4)) for _ in range(ndim)]
    if mode == "valid":  # one operand at least as large as the other along every axis
        big, small = (s1, s2) if d.chance(0.5) else (s2, s1)
        for i in range(ndim):
            big[i], small[i] = max(big[i], small[i]), min(big[i], small[i])
    a, b = d.array(tuple(s1), "any", dtype), d.array(tuple(s2), "any", other)
    if f is ss.fftconvolve:
        options = d.pick([((), {}), ((mode,), {}), ((), {"mode": mode}), ((), {"mode": mode, "axes": None})])
    else:
        method = d.pick(["auto", "direct", "fft"])
        options = d.pick([((), {}), ((mode,), {}), ((mode, method), {}), ((), {"mode": mode, "method": method})])
    return (a, b, *options[0]), options[1]


# ----- running the checks -------------------------------------------------------------------------


def _describe(v) -> str:
    """A short description of an argument, enough to rebuild the draw."""
    v = v.value if isinstance(v, crt.NonDifferentiable) else v
    if isinstance(v, np.ndarray):
        layout = "C" if v.flags.c_contiguous else ("F" if v.flags.f_contiguous else "strided")
        return f"{v.dtype}{list(v.shape)}{'' if layout == 'C' else ' ' + layout}"
    if isinstance(v, np.generic):
        return f"np.{v.dtype}({v!r})"
    if isinstance(v, (list, tuple)) and v and any(isinstance(e, np.ndarray) for e in v):
        inner = ", ".join(_describe(e) for e in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner})"
    if isinstance(v, type):
        return v.__name__
    text = repr(v)
    return text if len(text) < 60 else text[:57] + "..."


def _named(y) -> bool:
    return isinstance(y, tuple) and (hasattr(y, "_fields") or type(y) is not tuple)


def _has_floats(y) -> bool:
    if isinstance(y, (tuple, list)):
        return any(_has_floats(e) for e in y)
    return isinstance(y, (float, complex)) or getattr(np.asarray(y), "dtype", np.dtype(object)).kind in "fc"


#: float64 primals allowed to differ from the plain call by more than 1e-12 of the largest entry:
#: expm's rule evaluates the exponential with the intermediates its derivative reuses, as
#: scipy.linalg.expm_frechet does, which on some draws lies ~3000 ulps from scipy.linalg.expm's
#: value; against a 60-digit reference SciPy's is the one that is off (~1300 ulps, the rule's ~24)
PRIMAL_RTOL = {sla.expm: 1e-11}


def _same_primal(y, y0, values: bool = True, rtol64: float = 1e-12) -> str | None:
    """Why the rule's primal ``y`` is not the plain call's ``y0`` (``None`` when it is)."""
    if isinstance(y0, (tuple, list)) and not isinstance(y0, np.ndarray):
        if type(y) is not type(y0) or len(y) != len(y0):
            return f"the plain call gives {type(y0).__name__} of {len(y0)}, the rule {type(y).__name__}"
        for i, (a, b) in enumerate(zip(y, y0)):
            why = _same_primal(a, b, values, rtol64)
            if why:
                return f"element {i}: {why}"
        return None
    if hasattr(y0, "_fields") or type(y0).__module__.startswith("numpy.linalg"):
        return _same_primal(tuple(y), tuple(y0), values, rtol64) if type(y) is type(y0) else f"type {type(y).__name__}"
    if type(y) is not type(y0):
        return f"the plain call gives a {type(y0).__name__}, the rule a {type(y).__name__}"
    if isinstance(y0, (np.ndarray, np.generic)):
        if y.shape != y0.shape or y.dtype != y0.dtype:
            return f"the plain call gives {y0.dtype}{list(y0.shape)}, the rule {y.dtype}{list(y.shape)}"
        if not values:
            return None
        if y0.dtype.kind in "fc":  # to rounding, relative to the largest entry (a rule may compute differently)
            rtol = 1e-5 if y0.dtype in (np.float32, np.complex64) else rtol64
            scale = float(np.max(np.abs(y0), initial=0.0, where=np.isfinite(y0)))
            if not np.allclose(y, y0, rtol=rtol, atol=rtol * scale, equal_nan=True):
                return "the values differ"
        elif y0.dtype != object and not np.array_equal(y, y0):
            return "the values differ"
        return None
    if isinstance(y0, (float, complex)) and not (
        y == y0 or (y != y and y0 != y0) or cmath.isclose(y, y0, rel_tol=1e-12)
    ):
        return "the values differ"
    return None


def _all_finite(y) -> bool:
    if isinstance(y, (tuple, list)):
        return all(_all_finite(e) for e in y)
    try:
        return bool(np.all(np.isfinite(np.asarray(y))))
    except TypeError:
        return True


def _is_refusal(exc: Exception, f) -> bool:
    """A documented refusal: a ``NoRuleError``, ``TypeError`` or ``ValueError`` whose message names ``f``."""
    if isinstance(exc, NoRuleError):
        return True
    if type(exc) not in (TypeError, ValueError) and not isinstance(
        exc, cr.ChainRulesError if hasattr(cr, "ChainRulesError") else ()
    ):
        return False
    message = str(exc)
    names = {callable_name(f), callable_name(f).rsplit(".", 1)[-1], getattr(f, "__name__", "?")}
    # a whole name: a helper's crash ("_zeta() missing 1 required positional argument") names no function
    return any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", message) for name in names)


#: functions whose output holds eigenvectors of a real symmetric matrix (at this index), defined
#: up to sign. LAPACK's sign is rounding noise: scipy.linalg.eigh (syevr) flips one of them for
#: about one perturbation in eight, of any size from 1e-13 to 1e-3, with the eigenvalues far apart.
#: Finite differences straddling a flip see a jump of 2|v| (estimates of 1e7 where the derivative
#: is 1), and the flip also inflates the adaptive step selection's estimate of the fifth
#: derivative, so it picks a tiny step whose round-off spoils even the eigenvalues' tangents.
#: The checks differentiate the eigenvectors with their signs aligned to the draw's own, which is
#: the function the rule differentiates (d v_k is orthogonal to v_k).
SIGN_GAUGED = {np.linalg.eigh: 1, sla.eigh: 1}


def _sign_aligned(f, plain, kwargs):
    """``(g, rrule_of_g, frule_of_g)``: ``f`` with the eigenvectors it returns turned to point as
    they do at the draw (``g`` equals ``f`` there), and ``f``'s own rules standing for ``g``'s."""
    index = SIGN_GAUGED[f]
    reference = f(*plain, **kwargs)[index]

    def sign_aligned(*args, **kw):
        out = f(*args, **kw)
        v = out[index]
        signs = np.sign(np.real(np.sum(np.conj(reference) * v, axis=-2, keepdims=True))).astype(v.dtype)
        parts = [v * signs if i == index else part for i, part in enumerate(out)]
        return type(out)(*parts) if hasattr(out, "_fields") else type(out)(parts)

    sign_aligned.__name__ = sign_aligned.__qualname__ = f"sign_aligned_{f.__name__}"

    def reverse(_g, *args, **kw):
        return cr.rrule(f, *args, **kw)

    def forward(tangents, _g, *args, **kw):
        return cr.frule(tangents, f, *args, **kw)

    return sign_aligned, reverse, forward


def _tolerances(args, family: str = "") -> dict:
    flat = [e for a in args for e in (a if isinstance(a, (list, tuple)) else [a])]
    single = any(
        np.result_type(a) in (np.float32, np.complex64)
        for a in flat
        if isinstance(a, (np.ndarray, np.generic)) and np.asarray(a).dtype.kind in "fc"
    )
    if single:
        return {"rtol": 2e-3, "atol": 2e-3}
    # decompositions amplify the finite differences' rounding by their conditioning, and a wide step
    # can flip the sign LAPACK gives an eigenvector
    if family == "linalg":
        return {"rtol": 1e-7, "atol": 1e-7, "fdm": crt.central_fdm(5, 1, max_range=1e-4)}
    return {}


#: what test_rrule/test_frule say where finite differences at two steps disagree
_UNSTEADY = "finite differences are unsteady here"


class Outcome:
    def __init__(self):
        self.draws = 0
        self.invalid = 0
        self.unsteady = 0
        self.refusals: dict[str, int] = {}
        self.failures: list[tuple[str, str, str]] = []  # (kind, draw, message)


def _first_line(text: str, limit: int = 600) -> str:
    return text if len(text) < limit else text[:limit] + " ..."


def check_draw(f, args, kwargs, outcome: Outcome, label: str, check_batched, family: str = "") -> None:
    """Every check on one draw; problems go into ``outcome``."""
    plain = [a.value if isinstance(a, crt.NonDifferentiable) else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            y0 = f(*plain, **kwargs)
        except Exception:
            outcome.invalid += 1
            return
        outcome.draws += 1
        # finite differences say nothing where the function is not finite, nor of an integer output
        # (whose zero cotangent comes back as ZeroTangent); empty_like's values are whatever memory held
        differentiable = _all_finite(y0) and _has_floats(y0) and f is not np.empty_like

        def fail(kind: str, message: str):
            if kind.startswith("wrong numbers") and _UNSTEADY in message:
                outcome.unsteady += 1  # the draw sits on a kink (a tie of maximum, clip's bound): not judged
                return
            outcome.failures.append((kind, label, _first_line(message)))

        def refused(exc) -> bool:
            if _is_refusal(exc, f):
                key = f"{type(exc).__name__}: {_first_line(str(exc), 160)}"
                outcome.refusals[key] = outcome.refusals.get(key, 0) + 1
                return True
            return False

        try:
            result = cr.rrule(f, *plain, **kwargs)
        except Exception as exc:
            if not refused(exc):
                fail("crash in rrule", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}")
            return
        if result is None:
            fail("no rule", "rrule returned None")
            return
        why = _same_primal(result[0], y0, f is not np.empty_like, PRIMAL_RTOL.get(f, 1e-12))
        if why:
            fail("primal differs (rrule)", why)
        tol = _tolerances([*plain, *kwargs.values()], family)  # (a float32 keyword rounds the values too)
        for name, tester in (("rrule", crt.test_rrule), ("frule", crt.test_frule)):
            if not differentiable:
                break
            if name == "frule" and cr.frule.lookup(f, tuple(plain)) is None:
                continue
            if name == "frule":
                try:
                    y_forward, _ = cr.frule(
                        (cr.NoTangent(), *[crt.rand_tangent(a, 1) for a in plain]), f, *plain, **kwargs
                    )
                except Exception as exc:
                    if not refused(exc):
                        fail("crash in frule", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}")
                    continue
                why = _same_primal(y_forward, y0, f is not np.empty_like, PRIMAL_RTOL.get(f, 1e-12))
                if why:
                    fail("primal differs (frule)", why)
            try:
                if f in SIGN_GAUGED and isinstance(y0, tuple):
                    aligned, reverse, forward = _sign_aligned(f, plain, kwargs)
                    tester(aligned, *args, fkwargs=kwargs, rule=reverse if name == "rrule" else forward, **tol)
                else:
                    tester(f, *args, fkwargs=kwargs, primal_rtol=PRIMAL_RTOL.get(f), **tol)
            except AssertionError as exc:
                text = str(exc)
                kind = "crash" if " raised " in text else "wrong numbers"
                fail(f"{kind} ({name})", text)
            except Exception as exc:
                if not refused(exc):
                    fail(f"crash ({name})", f"{type(exc).__name__}: {exc}")
        rule = cr.rrule.lookup(f, tuple(plain))
        # (tests/rules/conftest.py's checker builds the cotangents of tuples, not of NumPy's named results)
        if rule is not None and getattr(rule, "batched", False) and not _named(y0):
            try:
                check_batched(f, *plain, kwargs=kwargs, rtol=1e-4 if tol.get("rtol", 0) > 1e-6 else 1e-10)
            except AssertionError as exc:
                fail("batched pullback differs", str(exc))
            except Exception as exc:
                if refused(exc):
                    return
                fail("crash (batched)", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}")


def _output_paths(y, prefix: tuple = ()) -> list:
    """The index paths of the float and complex leaves of an output (a tuple of arrays, say)."""
    if isinstance(y, (tuple, list)):
        paths = []
        for i, item in enumerate(y):
            paths = paths + _output_paths(item, prefix + (i,))
        return paths
    kind = np.asarray(y).dtype.kind if isinstance(y, (np.ndarray, np.generic, float, complex)) else ""
    return [prefix] if kind in ("f", "c") else []


def _leaf(y, path: tuple):
    for i in path:
        y = y[i]
    return y


#: families whose arguments at 0 lie outside their domain or on its edge (a distribution's scale,
#: shapes and probabilities; x at the edge of a support): no special point there
NO_SPECIAL_POINT = {"stats"}


def check_hessian(f, args, kwargs, outcome: Outcome, label: str, k: int, family: str = "") -> None:
    """The Hessian of ``sum(w * Re(output))`` in one float64 argument (the ``k``-th such, cyclically)
    against central differences of the gradient at two steps, judged only where those agree."""
    plain = [a.value if isinstance(a, crt.NonDifferentiable) else a for a in args]
    candidates = [
        i
        for i, a in enumerate(plain)
        if type(a) is float or (type(a) is np.ndarray and a.dtype == np.float64 and 0 < a.size <= 12)
    ]
    if not candidates:
        return
    i = candidates[k % len(candidates)]
    x0 = plain[i]
    if k % 3 == 2 and family not in NO_SPECIAL_POINT:
        # at a special point: an entry set to 0, where partials written with a case for it must keep
        # their own derivatives (a draw where the function has none there is not judged, below)
        x0 = 0.0 if type(x0) is float else np.where(np.arange(x0.size).reshape(x0.shape) == 0, 0.0, x0)
        plain = [*plain[:i], x0, *plain[i + 1 :]]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            paths = _output_paths(f(*plain, **kwargs))
            y0 = f(*plain, **kwargs)
        except Exception:
            return
        weights = [np.random.default_rng(k).standard_normal(np.shape(_leaf(y0, p))) for p in paths]
        if not weights:
            return

        def weighted(x):
            call = list(plain)
            call[i] = x
            y = f(*call, **kwargs)
            total = 0.0
            for w, path in zip(weights, paths):
                total = total + np.sum(w * np.real(_leaf(y, path)))
            return total

        def gradient(x):
            return np.ravel(np.asarray(cr.unthunk(cr.gradient(weighted, x)[0]), dtype=float))

        try:
            g0 = gradient(x0)
        except Exception:
            return  # first order is the other checks' business
        if g0.size != np.size(x0) or not np.all(np.isfinite(g0)):
            return  # a zero tangent (a piecewise-constant function), or no derivative here
        try:
            hessian = np.asarray(cr.hessian(weighted, x0), dtype=float).reshape(g0.size, g0.size)
        except Exception as exc:
            if _is_refusal(exc, f):  # a documented refusal of the second order, naming the function
                key = f"hessian, {type(exc).__name__}: {_first_line(str(exc), 160)}"
                outcome.refusals[key] = outcome.refusals.get(key, 0) + 1
                return
            outcome.failures.append(("hessian raises", label, _first_line(f"{type(exc).__name__}: {exc}")))
            return
        flat = np.ravel(np.asarray(x0, dtype=float))

        def differences(h):
            columns = []
            for e in np.eye(flat.size):
                up, down = (flat + h * e).reshape(np.shape(x0)), (flat - h * e).reshape(np.shape(x0))
                if type(x0) is float:
                    up, down = float(up), float(down)
                columns.append((gradient(up) - gradient(down)) / (2 * h))
            return np.array(columns).T

        try:
            coarse, fine = differences(1e-4), differences(1e-5)
        except Exception:
            return
        scale = max(1.0, float(np.max(np.abs(fine))))
        if not (np.all(np.isfinite(fine)) and np.allclose(coarse, fine, rtol=1e-3, atol=1e-4 * scale)):
            return  # unsteady differences (a kink, an eigenvector's sign) cannot judge the Hessian
        single = any(getattr(v, "dtype", None) == np.float32 for v in (*plain, *(_leaf(y0, p) for p in paths)))
        rtol, atol = (1e-2, 1e-3) if single else (1e-4, 1e-5)  # a float32 output rounds the gradient
        if not np.allclose(hessian, fine, rtol=rtol, atol=atol * scale):
            error = float(np.max(np.abs(hessian - fine)))
            outcome.failures.append(("wrong hessian", label, f"in argument {i}: max error {error:.3g} of {scale:.3g}"))


def _rule_names() -> dict[str, bool]:
    return {name: True for name, has_r, _ in cr.rules.list_rules() if has_r}


def fuzz(
    seed: int = 0,
    draws: int = 8,
    only: list[str] | None = None,
    families: list[str] | None = None,
    out=sys.stdout,
    hessians: bool = False,
) -> dict[str, Outcome]:
    """Fuzz every rule with a generator (or those named in ``only``); print and return the outcomes."""
    check_batched = _batched_checker()
    known = {}
    for f, (fam, gen) in GENERATORS.items():
        name = callable_name(f)
        if cr.rrule.lookup(f) is None and not cr.rrule.has_rule(f):
            continue
        known.setdefault(name, (f, fam, gen))
    for name, (f, fam, gen, probe) in NAMED_GENERATORS.items():
        if cr.rrule.lookup(f, probe) is not None:
            known[name] = (f, fam, gen)
    selected = {n: v for n, v in known.items() if (not only or n in only) and (not families or v[1] in families)}
    outcomes: dict[str, Outcome] = {}
    start = time.perf_counter()
    for name, (f, _family, gen) in sorted(selected.items()):
        outcome = outcomes[name] = Outcome()
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        d = Draw(rng)
        for k in range(draws):
            try:
                args, kwargs = gen(d, f)
            except Skip:
                continue
            except Exception as exc:  # the generator's own mistake: reported, and the run goes on
                outcome.failures.append(("generator error", f"draw {k}: {name}", f"{type(exc).__name__}: {exc}"))
                continue
            label = f"draw {k}: {name}({', '.join(_describe(a) for a in args)}"
            label += "".join(f", {key}={_describe(v)}" for key, v in kwargs.items()) + ")"
            check_draw(f, args, kwargs, outcome, label, check_batched, _family)
            if hessians:
                check_hessian(f, args, kwargs, outcome, label, k, _family)
        bad = len(outcome.failures)
        if bad:
            print(f"{name}: {bad} failure(s) in {outcome.draws} draws", file=out, flush=True)
    elapsed = time.perf_counter() - start
    covered = {*known, *(callable_name(f) for f, *_ in NAMED_GENERATORS.values())}
    _report(outcomes, covered, elapsed, seed, draws, out)
    return outcomes


def _report(outcomes, covered, elapsed, seed, draws, out) -> None:
    print(f"\n== fuzz_rules seed={seed} draws={draws}: {len(outcomes)} callables in {elapsed:.0f} s ==", file=out)
    total = sum(o.draws for o in outcomes.values())
    print(
        f"{total} valid draws checked, {sum(o.invalid for o in outcomes.values())} dropped (NumPy refused them), "
        f"{sum(o.unsteady for o in outcomes.values())} not judged (on a kink: finite differences unsteady)",
        file=out,
    )
    for _name, o in sorted(outcomes.items()):
        for kind, label, message in o.failures:
            print(f"\n[{kind}] {label}\n  " + message.replace("\n", "\n  "), file=out)
    refusals = {(name, r): n for name, o in outcomes.items() for r, n in o.refusals.items()}
    if refusals:
        print("\n-- refusals (documented errors naming the function) --", file=out)
        for (name, r), n in sorted(refusals.items()):
            print(f"{name} x{n}: {r}", file=out)
    unknown = [n for n in _rule_names() if n not in covered]
    print(f"\n-- {len(unknown)} callables with a rule and no generator here --", file=out)
    print(", ".join(unknown), file=out)
    failing = sorted(n for n, o in outcomes.items() if o.failures)
    print(f"\n{len(failing)} callables with failures: {', '.join(failing) or 'none'}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=8, help="draws per callable")
    parser.add_argument(
        "--only",
        action="append",
        help="a callable's name as list_rules() gives it, or an entry's own name (scipy.stats.gamma.cdf) (repeatable)",
    )
    parser.add_argument(
        "--family",
        action="append",
        help="elementwise, reductions, shapes, indexing, products, "
        "linalg, fft, scipy.special, stats, scipy.spatial, scipy.integrate, scipy.signal, "
        "math/cmath/operator/builtins",
    )
    parser.add_argument("--hessians", action="store_true", help="check second derivatives too (slower)")
    options = parser.parse_args(argv)
    outcomes = fuzz(options.seed, options.draws, options.only, options.family, hessians=options.hessians)
    return 1 if any(o.failures for o in outcomes.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
