"""A small finite-difference checker for the Python rules, used until ``chainrules.testing`` lands."""

from __future__ import annotations

import dataclasses

import numpy as np

import chainrules as cr

RNG = np.random.default_rng(0)


def _leaves(x):
    """(path, value) of every float/complex leaf of x; ints, bools and strings are not perturbed."""
    if isinstance(x, (bool, np.bool_, int, np.integer, str, bytes)) or x is None:
        return []
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return [((), x)]
    if isinstance(x, np.ndarray):
        return [((), x)] if x.dtype.kind in "fc" else []
    if isinstance(x, dict):
        return [((k, *p), v) for k in x for p, v in _leaves(x[k])]
    if isinstance(x, (tuple, list)):
        return [((i, *p), v) for i, e in enumerate(x) for p, v in _leaves(e)]
    if dataclasses.is_dataclass(x):
        return [((f.name, *p), v) for f in dataclasses.fields(x) for p, v in _leaves(getattr(x, f.name))]
    return []


def _get(dx, path):
    """The entry of the tangent dx at a primal path (zero when dx is zero there)."""
    for k in path:
        dx = cr.unthunk(dx)
        if isinstance(dx, cr.AbstractZero):
            return dx
        if isinstance(dx, cr.Tangent) and isinstance(dx.backing, dict):
            fields = getattr(type(dx).primal_type, "_fields", None)
            key = fields[k] if fields is not None and isinstance(k, int) else k
            dx = dx.backing.get(key, cr.ZeroTangent())
        elif dataclasses.is_dataclass(dx):
            dx = getattr(dx, k)
        else:
            dx = dx[k]
    return cr.unthunk(dx)


def _vec(value) -> np.ndarray:
    a = np.asarray(value)
    if a.dtype.kind == "c":
        return np.concatenate([a.real.ravel(), a.imag.ravel()])
    return a.astype(float).ravel()


def _set(x, path, value):
    if not path:
        return value
    k, rest = path[0], path[1:]
    if isinstance(x, dict):
        return {**x, k: _set(x[k], rest, value)}
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return type(x)(*(_set(e, rest, value) if i == k else e for i, e in enumerate(x)))
    if isinstance(x, (tuple, list)):
        return type(x)(_set(e, rest, value) if i == k else e for i, e in enumerate(x))
    return dataclasses.replace(x, **{k: _set(getattr(x, k), rest, value)})


def to_vec(x):
    """The perturbable coordinates of x as a real vector, and the inverse."""
    leaves = _leaves(x)
    parts = [_vec(v) for _, v in leaves]
    sizes = [len(p) for p in parts]

    def from_vec(v):
        out, i = x, 0
        for (path, leaf), n in zip(leaves, sizes):
            chunk = v[i : i + n]
            i += n
            if isinstance(leaf, (complex, np.complexfloating)) or np.iscomplexobj(leaf):
                half = n // 2
                new = chunk[:half] + 1j * chunk[half:]
            else:
                new = chunk
            if isinstance(leaf, np.ndarray):
                new = new.reshape(leaf.shape).astype(leaf.dtype)
            else:
                new = type(leaf)(new[0])
            out = _set(out, path, new)
        return out

    return (np.concatenate(parts) if parts else np.zeros(0)), from_vec, leaves


def tangent_vec(x, dx) -> np.ndarray:
    """A tangent of x as a real vector aligned with to_vec(x) (zeros where it is zero)."""
    parts = []
    for path, leaf in _leaves(x):
        t = _get(dx, path)
        if isinstance(t, cr.AbstractZero):
            parts.append(np.zeros_like(_vec(leaf)))
        else:
            t = np.asarray(t)
            if np.iscomplexobj(leaf):
                t = t.astype(complex)
            assert np.shape(t) == np.shape(leaf), f"tangent shape {np.shape(t)} for primal shape {np.shape(leaf)}"
            parts.append(_vec(t))
    return np.concatenate(parts) if parts else np.zeros(0)


def _random_like(x):
    v, from_vec, _ = to_vec(x)
    return from_vec(RNG.standard_normal(len(v)))


def _jacobian(f, args, fkwargs):
    """Central 5-point finite-difference Jacobian of vec(f) with respect to vec(args)."""
    xv, from_vec, _ = to_vec(tuple(args))

    def g(v):
        return to_vec(f(*from_vec(v), **fkwargs))[0]

    cols = []
    for i in range(len(xv)):
        h = 1e-3 * max(1.0, abs(xv[i]))
        e = np.zeros_like(xv)
        e[i] = h
        cols.append((-g(xv + 2 * e) + 8 * g(xv + e) - 8 * g(xv - e) + g(xv - 2 * e)) / (12 * h))
    return np.stack(cols, axis=1) if cols else np.zeros((len(g(xv)), 0))


def _args_vec(args, dargs):
    return np.concatenate([tangent_vec(a, d) for a, d in zip(args, dargs)] + [np.zeros(0)])


def check_rrule(f, *args, fkwargs=None, rtol=1e-6, atol=1e-8, output_tangent=None):
    fkwargs = fkwargs or {}
    y, back = cr.rrule(f, *args, **fkwargs)
    expected = f(*args, **fkwargs)
    np.testing.assert_allclose(to_vec(y)[0], to_vec(expected)[0], rtol=1e-12, atol=1e-12)
    dy = _random_like(y) if output_tangent is None else output_tangent
    grads = back(dy)
    assert isinstance(grads, tuple) and len(grads) == 1 + len(args), grads
    assert isinstance(grads[0], cr.NoTangent)
    for a, d in zip(args, grads[1:]):
        d = cr.unthunk(d)
        if isinstance(a, (bool, str)) or a is None:
            assert isinstance(d, cr.NoTangent), (a, d)
        elif isinstance(a, float) and not isinstance(d, cr.AbstractZero):
            assert isinstance(d, (float, np.floating)) and not isinstance(d, np.complexfloating), (a, d)
    J = _jacobian(f, args, fkwargs)
    got = _args_vec(args, grads[1:])
    want = J.T @ tangent_vec(y, dy)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    # zero and thunked seeds
    zeros = back(cr.ZeroTangent())
    assert all(cr.iszero(cr.unthunk(z)) or np.all(_args_vec([a], [z]) == 0) for a, z in zip(args, zeros[1:]))
    thunked = back(cr.Thunk(lambda: dy))
    np.testing.assert_allclose(_args_vec(args, thunked[1:]), got, rtol=1e-12, atol=1e-12)
    return grads


def check_frule(f, *args, fkwargs=None, rtol=1e-6, atol=1e-8, tangents=None):
    fkwargs = fkwargs or {}
    dargs = tuple(_random_like(a) for a in args) if tangents is None else tangents
    dargs = tuple(cr.NoTangent() if len(to_vec(a)[0]) == 0 else d for a, d in zip(args, dargs))
    y, dy = cr.frule((cr.NoTangent(), *dargs), f, *args, **fkwargs)
    expected = f(*args, **fkwargs)
    np.testing.assert_allclose(to_vec(y)[0], to_vec(expected)[0], rtol=1e-12, atol=1e-12)
    J = _jacobian(f, args, fkwargs)
    want = J @ _args_vec(args, dargs)
    np.testing.assert_allclose(tangent_vec(y, dy), want, rtol=rtol, atol=atol)
    return dy


def check_scalar(f, x, holomorphic=False, **kw):
    for z in (x, complex(x, 0.5)) if holomorphic and not isinstance(x, complex) else (x,):
        check_rrule(f, z, **kw)
        check_frule(f, z, **kw)
