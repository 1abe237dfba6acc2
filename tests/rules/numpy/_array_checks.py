"""Checks shared by the array rule tests, beside ``chainrules.testing``'s ``test_rrule``/``test_frule``:

- ``check_batched_frule``: an frule called once with a leading batch axis on its tangents equals
  it called row by row;
- ``check_accumulation_layouts``: an ``InplaceableThunk`` cotangent added into C-ordered,
  Fortran-ordered and strided accumulators equals adding its value;
- ``check_rrule_on_wrapped``: a rule runs on values that implement NumPy's protocols only;
- ``check_engines``: a scalar program's gradient from both reverse engines, its forward Jacobian
  and its Hessian against finite differences;
- ``check_rrule``/``check_frule``: finite differences that keep the primal's memory layout, for
  rules whose result depends on it (``order="A"``/``"K"``), which the generic checks copy away.
  Rules here are linear in each argument, so a central difference is exact up to rounding.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import chainrules as cr
import chainrules.testing as crt

RNG = np.random.default_rng(20240611)


@dataclasses.dataclass(frozen=True)
class Const:
    """Marks an argument that is not perturbed (an index, a shape, an axis given positionally)."""

    value: object


def unwrap(args):
    return tuple(a.value if isinstance(a, Const) else a for a in args)


def rand(*shape, dtype=np.float64):
    """A random array (complex dtypes get random imaginary parts)."""
    value = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * RNG.standard_normal(shape)
    return value.astype(dtype)


@dataclasses.dataclass
class Case:
    """One row of a rule spec table: ``f(*args, **kwargs)``; ``Const`` marks non-differentiable arguments."""

    f: object
    args: tuple
    kwargs: dict

    def __init__(self, f, *args, **kwargs):
        self.f, self.args, self.kwargs = f, args, kwargs

    def testing_args(self) -> tuple:
        """The arguments for ``chainrules.testing``: constants wrapped in ``nondiff``."""
        return tuple(crt.nondiff(a.value) if isinstance(a, Const) else a for a in self.args)

    def __str__(self) -> str:
        name = getattr(self.f, "__qualname__", None) or getattr(self.f, "__name__", str(self.f))
        parts = [_describe(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{name}({', '.join(parts)})"


def _describe(a) -> str:
    if isinstance(a, Const):
        v = a.value
        return f"{v.dtype}{list(v.shape)}" if isinstance(v, np.ndarray) else repr(v)
    if isinstance(a, np.ndarray):
        return f"{a.dtype}{list(a.shape)}" + ("" if a.flags.c_contiguous else "strided")
    if isinstance(a, (list, tuple)):
        inner = ",".join(_describe(e) for e in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner})"
    return type(a).__name__


def snapshot(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, (list, tuple)):
        return type(x)(snapshot(e) for e in x)
    return x


def assert_unchanged(before, after, what):
    if isinstance(before, np.ndarray):
        assert np.array_equal(before, after, equal_nan=True), f"{what} was modified"
    elif isinstance(before, (list, tuple)):
        for b, a in zip(before, after):
            assert_unchanged(b, a, what)


# ----- flattening primals and tangents to real vectors ----------------------------------------


def perturbable(x) -> bool:
    if isinstance(x, Const) or isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, np.ndarray | np.generic):
        return x.dtype.kind in "fc"
    if isinstance(x, (list, tuple)):
        return any(perturbable(e) for e in x)
    return isinstance(x, (float, complex))


def to_vec(x) -> np.ndarray:
    """The perturbable real coordinates of ``x`` (complex numbers as real and imaginary parts)."""
    if isinstance(x, (list, tuple)):
        parts = [to_vec(e) for e in x]
        return np.concatenate(parts) if parts else np.zeros(0)
    if not perturbable(x):
        return np.zeros(0)
    a = np.asarray(x)
    if a.dtype.kind == "c":
        return np.concatenate([a.real.ravel(), a.imag.ravel()]).astype(np.float64)
    return a.ravel().astype(np.float64)


def from_vec(x, v: np.ndarray):
    """The inverse of ``to_vec``: a value like ``x`` with coordinates ``v``."""
    if isinstance(x, (list, tuple)):
        out, k = [], 0
        for e in x:
            n = to_vec(e).size
            out.append(from_vec(e, v[k : k + n]))
            k += n
        return type(x)(out)
    if not perturbable(x):
        return x
    a = np.asarray(x)
    if a.dtype.kind == "c":
        n = a.size
        value = (v[:n] + 1j * v[n:]).reshape(a.shape)
    else:
        value = v.reshape(a.shape)
    if isinstance(x, np.ndarray):
        out = np.empty_like(x)  # keeps a Fortran layout, which order="A" and "K" read
        out[...] = value
        return out
    if isinstance(x, np.generic):
        return x.dtype.type(value)
    return type(x)(value)


def tangent_to_vec(x, dx) -> np.ndarray:
    """A tangent of ``x`` as a vector of ``x``'s real coordinates (zeros for zero tangents)."""
    dx = cr.unthunk(dx)
    if isinstance(dx, cr.AbstractZero):
        return np.zeros(to_vec(x).size)
    if isinstance(x, (list, tuple)):
        items = dx.backing if isinstance(dx, cr.Tangent) else dx
        assert len(items) == len(x), f"a tangent of {len(items)} items for {len(x)}"
        parts = [tangent_to_vec(e, d) for e, d in zip(x, items)]
        return np.concatenate(parts) if parts else np.zeros(0)
    if not perturbable(x):
        return np.zeros(0)
    a, d = np.asarray(x), np.asarray(dx)
    assert d.shape == a.shape, f"tangent shape {d.shape} for a primal of shape {a.shape}"
    if a.dtype.kind == "c":
        d = d.astype(np.complex128)
        return np.concatenate([d.real.ravel(), d.imag.ravel()])
    assert not np.iscomplexobj(d), "a complex tangent for a real primal"
    return d.ravel().astype(np.float64)


def random_like(x):
    """A random tangent (or cotangent) of the natural type for ``x``."""
    if isinstance(x, list):
        return [random_like(e) for e in x]
    if isinstance(x, tuple):
        return tuple(random_like(e) for e in x)
    if isinstance(x, (bool, np.bool_)):
        return cr.NoTangent()
    a = np.asarray(x)
    if a.dtype.kind not in "fciu":
        return cr.NoTangent()
    dtype = a.dtype if a.dtype.kind in "fc" else np.dtype(np.float64)
    value = RNG.standard_normal(a.shape)
    if dtype.kind == "c":
        value = value + 1j * RNG.standard_normal(a.shape)
    value = value.astype(dtype)
    if isinstance(x, np.ndarray):
        return value
    if isinstance(x, np.generic):
        return dtype.type(value)
    return complex(value) if isinstance(x, complex) else float(value)


def structured(x, dx):
    """A random tangent of a list/tuple primal as ``Tangent[list]``/``Tangent[tuple]``."""
    if isinstance(x, (list, tuple)) and perturbable(x):
        return cr.Tangent[type(x)](*(structured(e, d) for e, d in zip(x, dx)))
    return dx


def _tol(args, y):
    single = any(np.asarray(a).dtype in (np.float32, np.complex64) for a in _leaves(args) + _leaves([y]))
    return (2e-3, 2e-3) if single else (1e-7, 1e-8)


def _leaves(xs):
    out = []
    for x in xs:
        if isinstance(x, (list, tuple)):
            out.extend(_leaves(x))
        elif isinstance(x, np.ndarray | np.generic | float | complex):
            out.append(x)
    return out


def _fd_step(args):
    return 1e-3 if any(np.asarray(a).dtype in (np.float32, np.complex64) for a in _leaves(args)) else 1e-6


def _close(got, want, rtol, atol, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    err = np.max(np.abs(got - want), initial=0.0)
    scale = np.max(np.abs(want), initial=0.0)
    assert err <= atol + rtol * scale, f"{what}: max abs error {err:.3g} (scale {scale:.3g})\ngot {got}\nwant {want}"


def _primal_close(got, want, rtol, atol):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want)
        for g, w in zip(got, want):
            _primal_close(g, w, rtol, atol)
        return
    assert np.shape(got) == np.shape(want), f"primal shape {np.shape(got)}, expected {np.shape(want)}"
    assert np.asarray(got).dtype == np.asarray(want).dtype, (
        f"primal dtype {np.asarray(got).dtype} vs {np.asarray(want).dtype}"
    )
    _close(got, want, rtol, atol, "primal")


def _inner(y, dy, dz) -> float:
    """Re <dy, dz> over the real coordinates of the output ``y``."""
    return float(np.dot(tangent_to_vec(y, dy), output_to_vec(y, dz)))


def output_to_vec(y, z):
    if isinstance(y, (list, tuple)):
        return np.concatenate([output_to_vec(e, w) for e, w in zip(y, z)])
    a, b = np.asarray(y), np.asarray(z)
    if a.dtype.kind == "c":
        return np.concatenate([b.real.ravel(), b.imag.ravel()]).astype(np.float64)
    return b.real.ravel().astype(np.float64)


# ----- rrule -----------------------------------------------------------------------------------


def check_rrule(f, *args, output_tangent=None, fkwargs=None, rtol=None, atol=None):
    """The rrule of ``f`` at ``args``: primal, cotangent types, finite differences, thunked and
    zero seeds, and in-place accumulation of every cotangent."""
    fkwargs = fkwargs or {}
    primals = unwrap(args)
    y, back = cr.rrule(f, *primals, **fkwargs)
    want = f(*primals, **fkwargs)
    tol_r, tol_a = _tol(primals, want)
    rtol, atol = rtol or tol_r, atol or tol_a
    _primal_close(y, want, rtol, atol)
    dy = random_like(want) if output_tangent is None else output_tangent
    saved_args, saved_dy = snapshot(primals), snapshot(dy)
    grads = back(dy)
    assert isinstance(grads, tuple) and len(grads) == len(args) + 1, f"pullback returned {len(grads)} cotangents"
    assert isinstance(grads[0], cr.NoTangent), f"the function's own tangent is {grads[0]!r}"
    h = _fd_step([*primals, want])
    for i, (arg, g) in enumerate(zip(args, grads[1:])):
        if not perturbable(arg):
            if isinstance(arg, Const):
                assert isinstance(cr.unthunk(g), cr.NoTangent), f"argument {i}: {g!r} for a constant"
            continue
        _check_cotangent_type(arg, g, i)
        x0 = to_vec(arg)
        fd = np.zeros(x0.size)
        for k in range(x0.size):
            step = np.zeros(x0.size)
            step[k] = h
            plus = _call_with(f, primals, i, from_vec(arg, x0 + step), fkwargs)
            minus = _call_with(f, primals, i, from_vec(arg, x0 - step), fkwargs)
            fd[k] = (_inner(want, dy, plus) - _inner(want, dy, minus)) / (2 * h)
        _close(tangent_to_vec(arg, g), fd, rtol, atol, f"cotangent of argument {i}")
        _check_accumulation(arg, g, i)
    # a thunked seed gives the same cotangents, a zero seed zeros
    again = back(cr.Thunk(lambda: dy))
    for i, (arg, g, g2) in enumerate(zip(args, grads[1:], again[1:])):
        if perturbable(arg):
            _close(tangent_to_vec(arg, g2), tangent_to_vec(arg, g), 1e-12, 1e-12, f"thunked seed, argument {i}")
    for i, (arg, g0) in enumerate(zip(args, back(cr.ZeroTangent())[1:])):
        if perturbable(arg):
            assert not np.any(tangent_to_vec(arg, g0)), f"zero seed gives a nonzero cotangent for argument {i}"
    assert_unchanged(saved_args, primals, "an input")
    assert_unchanged(saved_dy, dy, "the output cotangent")
    return grads


def _call_with(f, primals, i, value, fkwargs):
    args = list(primals)
    args[i] = value
    return f(*args, **fkwargs)


def _check_cotangent_type(x, g, i):
    g = cr.unthunk(g)
    if isinstance(g, cr.AbstractZero):
        return
    if isinstance(x, (list, tuple)):
        assert isinstance(g, cr.Tangent) and g.primal_type is type(x), (
            f"argument {i}: {type(g).__name__} for a {type(x).__name__}"
        )
        for e, d in zip(x, g.backing):
            _check_cotangent_type(e, d, i)
        return
    if isinstance(x, np.ndarray):
        assert isinstance(g, np.ndarray), f"argument {i}: a {type(g).__name__} cotangent for an array"
        want = x.dtype if x.dtype.kind in "fc" else np.dtype(np.float64)
        assert g.dtype == want, f"argument {i}: cotangent dtype {g.dtype}, expected {want}"
        assert g.shape == x.shape
    elif isinstance(x, float):
        assert isinstance(g, float), f"argument {i}: a {type(g).__name__} cotangent for a float"
    elif isinstance(x, complex):
        assert isinstance(g, complex), f"argument {i}: a {type(g).__name__} cotangent for a complex"


def check_accumulation_layouts(f, *args, fkwargs=None):
    """Every ``InplaceableThunk`` cotangent of ``f`` at ``args`` adds into accumulators of every layout."""
    primals = unwrap(args)
    y, back = cr.rrule(f, *primals, **(fkwargs or {}))
    grads = back(random_like(y))
    checked = 0
    for i, (x, g) in enumerate(zip(primals, grads[1:])):
        if isinstance(g, cr.InplaceableThunk):
            _check_accumulation(x, g, i)
            checked += 1
    return checked


def _check_accumulation(x, g, i):
    """Adding an InplaceableThunk into C-, Fortran-ordered and strided accumulators equals adding its value."""
    if not isinstance(g, cr.InplaceableThunk) or not isinstance(x, np.ndarray):
        return
    value = np.array(cr.unthunk(g))
    for layout in ("C", "F", "strided"):
        base = np.asarray(random_like(x))
        if base.ndim == 0:
            acc = np.array(base)
        elif layout == "F":
            acc = np.asfortranarray(base)
        elif layout == "strided":
            big = np.zeros(tuple(2 * n for n in base.shape), dtype=base.dtype)
            acc = big[tuple(slice(None, None, 2) for _ in base.shape)]
            acc[...] = base
        else:
            acc = np.ascontiguousarray(base)
        expected = acc + value
        out = cr.iadd(acc, g)
        assert out is acc, f"argument {i}: iadd did not accumulate in place ({layout})"
        _close(acc, expected, *_tol([x], x), f"in-place accumulation of argument {i} ({layout})")


# ----- frule ----------------------------------------------------------------------------------


def check_frule(f, *args, tangents=None, fkwargs=None, rtol=None, atol=None):
    """The frule of ``f`` at ``args`` against a central difference along random tangents."""
    fkwargs = fkwargs or {}
    primals = unwrap(args)
    if tangents is None:
        tangents = tuple(structured(a, random_like(a)) if perturbable(a) else cr.NoTangent() for a in args)
    y, dy = cr.frule((cr.NoTangent(), *tangents), f, *primals, **fkwargs)
    want = f(*primals, **fkwargs)
    tol_r, tol_a = _tol(primals, want)
    rtol, atol = rtol or tol_r, atol or tol_a
    _primal_close(y, want, rtol, atol)
    h = _fd_step([*primals, want])
    plus = f(*_moved(args, tangents, h), **fkwargs)
    minus = f(*_moved(args, tangents, -h), **fkwargs)
    fd = (output_to_vec(want, plus) - output_to_vec(want, minus)) / (2 * h)
    _close(tangent_to_vec(want, dy), fd, rtol, atol, "pushforward")
    return y, dy


def _moved(args, tangents, h):
    out = []
    for a, t in zip(args, tangents):
        if perturbable(a):
            out.append(from_vec(a, to_vec(a) + h * tangent_to_vec(a, t)))
        else:
            out.append(a.value if isinstance(a, Const) else a)
    return out


def check_batched_frule(f, *args, fkwargs=None, batch=3):
    """The frule called once with a leading batch axis on every tangent equals it called per row."""
    fkwargs = fkwargs or {}
    primals = unwrap(args)
    rule = cr.frule.lookup(f, primals)
    assert rule is not None and rule.batched, f"{f} has no frule registered with batched=True"
    rows = [tuple(random_like(a) if perturbable(a) else cr.NoTangent() for a in args) for _ in range(batch)]
    stacked = tuple(_stack(a, [r[i] for r in rows]) for i, a in enumerate(args))
    _, dy = cr.frule((cr.NoTangent(), *stacked), f, *primals, **fkwargs)
    for b, row in enumerate(rows):
        _, dy_b = cr.frule((cr.NoTangent(), *(structured(a, t) for a, t in zip(args, row))), f, *primals, **fkwargs)
        want = f(*primals, **fkwargs)
        got = _row(want, dy, b)
        _close(tangent_to_vec(want, got), tangent_to_vec(want, dy_b), 1e-5, 1e-6, f"batch row {b}")


def _stack(x, tangents):
    if not perturbable(x):
        return tangents[0]
    if isinstance(x, (list, tuple)):
        return cr.Tangent[type(x)](*(_stack(e, [t[k] for t in tangents]) for k, e in enumerate(x)))
    if isinstance(tangents[0], cr.AbstractZero):
        return tangents[0]
    return np.stack([np.asarray(t) for t in tangents])


def _row(y, dy, b):
    dy = cr.unthunk(dy)
    if isinstance(dy, cr.AbstractZero):
        return dy
    if isinstance(y, (list, tuple)):
        items = dy.backing if isinstance(dy, cr.Tangent) else dy
        return type(y)(_row(e, d, b) for e, d in zip(y, items))
    return np.asarray(dy)[b]


# ----- values that implement NumPy's protocols ----------------------------------------------


class Wrapped:
    """An array-like known to NumPy only through ``__array_ufunc__``/``__array_function__`` (as the
    forward engine's dual numbers are): no ``__array__``, no attributes, so a rule that converts
    it with ``np.asarray`` or reads ``.shape`` fails loudly."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = np.asarray(value)

    @staticmethod
    def unwrap(x):
        if isinstance(x, Wrapped):
            return x.value
        if isinstance(x, (list, tuple)):
            return type(x)(Wrapped.unwrap(e) for e in x)
        return x

    @staticmethod
    def wrap(x):
        if isinstance(x, np.ndarray | np.generic):
            return Wrapped(x)
        if isinstance(x, (list, tuple)):
            return type(x)(Wrapped.wrap(e) for e in x)
        return x

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return Wrapped.wrap(getattr(ufunc, method)(*Wrapped.unwrap(inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return Wrapped.wrap(func(*Wrapped.unwrap(args), **{k: Wrapped.unwrap(v) for k, v in kwargs.items()}))

    def __getitem__(self, index):
        return Wrapped(self.value[index])

    def __add__(self, other):
        return np.add(self, other)

    def __radd__(self, other):
        return np.add(other, self)

    def __mul__(self, other):
        return np.multiply(self, other)

    def __rmul__(self, other):
        return np.multiply(other, self)

    def __neg__(self):
        return np.negative(self)

    def __matmul__(self, other):
        return np.matmul(self, other)

    def __rmatmul__(self, other):
        return np.matmul(other, self)


def check_rrule_on_wrapped(f, *args, fkwargs=None):
    """The rrule gives the same primal and cotangents on ``Wrapped`` values as on arrays."""
    fkwargs = fkwargs or {}
    primals = unwrap(args)
    y, back = cr.rrule(f, *primals, **fkwargs)
    dy = random_like(y)
    want = back(dy)
    wrapped = tuple(
        Wrapped.wrap(p) if perturbable(a) and not isinstance(p, float) else p for a, p in zip(args, primals)
    )
    wy, wback = cr.rrule(f, *wrapped, **fkwargs)
    rtol = _tol(primals, y)[0]
    got_ys, want_ys = Wrapped.unwrap(wy), y
    if not isinstance(y, (list, tuple)):
        got_ys, want_ys = [got_ys], [want_ys]
    for got_y, want_y in zip(got_ys, want_ys):
        np.testing.assert_allclose(got_y, want_y, rtol=rtol)
    got = wback(Wrapped.wrap(dy))
    for i, (arg, g, w) in enumerate(zip(args, got[1:], want[1:])):
        if not perturbable(arg):
            continue
        g = cr.unthunk(g)
        if isinstance(arg, (list, tuple)):
            for e, we in zip(g.backing, cr.unthunk(w).backing):
                np.testing.assert_allclose(Wrapped.unwrap(cr.unthunk(e)), cr.unthunk(we), rtol=rtol)
        else:
            assert isinstance(g, Wrapped), f"argument {i}: a {type(g).__name__} cotangent for a wrapped array"
            np.testing.assert_allclose(g.value, cr.unthunk(w), rtol=rtol)


def check_engines(f, x, rtol=1e-6, atol=1e-7, engines=("source", "tape")):
    """A real-valued ``f(x)`` through the engines: ``cr.gradient`` (each reverse engine of ``engines``),
    ``cr.jacobian`` in forward mode and ``cr.hessian`` (each of ``engines``) against finite differences."""
    fd = crt.fd_jacobian(f, x)[0].reshape(np.shape(x))
    for engine in engines:
        np.testing.assert_allclose(cr.gradient(f, x, engine=engine)[0], fd, rtol=rtol, atol=atol, err_msg=engine)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), fd, rtol=rtol, atol=atol, err_msg="forward")
    fd2 = crt.fd_jacobian(lambda v: cr.gradient(f, v)[0], x).reshape(np.shape(x) * 2)
    for engine in engines:
        np.testing.assert_allclose(cr.hessian(f, x, engine=engine), fd2, rtol=1e-5, atol=1e-6, err_msg=engine)
