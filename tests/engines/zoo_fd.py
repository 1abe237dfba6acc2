"""Finite-difference reference for whole functions over structured values (the zoo runner's oracle).

``flatten`` lays a value's differentiable leaves out as one real vector (complex numbers as two
reals); ``tangent_vector`` lays a tangent out the same way; ``fd_vjp`` is the gradient of
``<dy, f(x)>`` by a 5-point central stencil, one coordinate at a time.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import chainrules as cr


def _fields(x):
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [f.name for f in dataclasses.fields(x)]
    d = getattr(x, "__dict__", None)
    if isinstance(d, dict) and not callable(x) and type(x).__module__ not in ("builtins", "numpy"):
        return list(d)
    return None


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def flatten(x, perturb_ints: bool = False):
    """``(vector, rebuild)``: the differentiable leaves of ``x`` as reals, and the inverse map."""
    if isinstance(x, (bool, np.bool_, str, bytes)) or x is None:
        return np.zeros(0), lambda v: x
    if _is_int(x):
        if not perturb_ints:
            return np.zeros(0), lambda v: x
        return np.array([float(x)]), lambda v: float(v[0])
    if isinstance(x, (float, np.floating)):
        T = type(x)
        return np.array([float(x)]), lambda v: T(v[0])
    if isinstance(x, (complex, np.complexfloating)):
        T = type(x)
        return np.array([x.real, x.imag]), lambda v: T(complex(v[0], v[1]))
    if isinstance(x, np.ndarray):
        kind = x.dtype.kind
        if kind == "f" or (kind in "iu" and perturb_ints):
            dtype = x.dtype if kind == "f" else np.float64
            return x.astype(np.float64).ravel(), lambda v: v.reshape(x.shape).astype(dtype)
        if kind == "c":
            flat = x.ravel()
            return np.concatenate([flat.real, flat.imag]), lambda v: (v[: x.size] + 1j * v[x.size :]).reshape(x.shape)
        return np.zeros(0), lambda v: x
    if isinstance(x, (tuple, list)):
        return _flatten_items(list(x), perturb_ints, lambda items: _rebuild_sequence(x, items))
    if isinstance(x, dict):
        keys = list(x)
        return _flatten_items([x[k] for k in keys], perturb_ints, lambda items: {**x, **dict(zip(keys, items))})
    names = _fields(x)
    if names:

        def rebuild(items):
            new = object.__new__(type(x))
            new.__dict__.update(x.__dict__)
            for k, v in zip(names, items):
                object.__setattr__(new, k, v)
            return new

        return _flatten_items([getattr(x, k) for k in names], perturb_ints, rebuild)
    return np.zeros(0), lambda v: x


def _rebuild_sequence(x, items):
    if hasattr(type(x), "_fields"):
        return type(x)(*items)
    return type(x)(items)


def _flatten_items(items, perturb_ints, rebuild):
    parts = [flatten(item, perturb_ints) for item in items]
    sizes = [len(p[0]) for p in parts]
    vec = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0)

    def unflatten(v):
        out, start = [], 0
        for (_, back), n in zip(parts, sizes):
            out.append(back(v[start : start + n]))
            start += n
        return rebuild(out)

    return vec, unflatten


def _field(dx, key, index):
    dx = cr.unthunk(dx)
    if isinstance(dx, cr.AbstractZero):
        return dx
    if isinstance(dx, cr.Tangent):
        backing = dx.backing
        return backing[index] if isinstance(backing, tuple) else dx[key]
    if isinstance(dx, dict):
        return dx.get(key, cr.ZeroTangent())
    if isinstance(dx, (tuple, list)):
        return dx[index]
    raise AssertionError(f"a {type(dx).__name__} is not a tangent of a structure")


def tangent_vector(x, dx, perturb_ints: bool = False) -> np.ndarray:
    """The tangent ``dx`` of ``x`` laid out like ``flatten(x)``; wrong kinds and shapes fail."""
    dx = cr.unthunk(dx)
    n = len(flatten(x, perturb_ints)[0])
    if isinstance(dx, cr.AbstractZero):
        return np.zeros(n)
    if isinstance(x, (bool, np.bool_, str, bytes)) or x is None:
        raise AssertionError(f"a non-differentiable {type(x).__name__} got the tangent {dx!r}")
    if _is_int(x) or (isinstance(x, np.ndarray) and x.dtype.kind in "iu"):
        if not perturb_ints:
            return np.zeros(0)  # an integer's derivative is not checked unless the case perturbs it
    if isinstance(x, (float, int, np.floating, np.integer)):
        assert np.ndim(dx) == 0 and not np.iscomplexobj(dx), f"a real scalar got the tangent {dx!r}"
        return np.array([float(dx)])
    if isinstance(x, (complex, np.complexfloating)):
        dx = complex(dx)
        return np.array([dx.real, dx.imag])
    if isinstance(x, np.ndarray):
        assert isinstance(dx, np.ndarray), f"an array got a {type(dx).__name__} tangent"
        assert dx.shape == x.shape, f"an array of shape {x.shape} got a tangent of shape {dx.shape}"
        if x.dtype.kind in "fc":
            assert dx.dtype == x.dtype, f"a {x.dtype} array got a {dx.dtype} tangent"
        if x.dtype.kind == "c":
            flat = dx.ravel()
            return np.concatenate([flat.real, flat.imag])
        return dx.astype(np.float64).ravel()
    if isinstance(x, (tuple, list)):
        keys = list(getattr(type(x), "_fields", range(len(x))))
        return _concat(
            [tangent_vector(item, _field(dx, k, i), perturb_ints) for i, (k, item) in enumerate(zip(keys, x))]
        )
    if isinstance(x, dict):
        return _concat([tangent_vector(x[k], _field(dx, k, i), perturb_ints) for i, k in enumerate(x)])
    names = _fields(x)
    if names:
        return _concat([tangent_vector(getattr(x, k), _field(dx, k, i), perturb_ints) for i, k in enumerate(names)])
    raise AssertionError(f"a {type(x).__name__} got the tangent {dx!r}")


def _concat(parts):
    return np.concatenate(parts) if parts else np.zeros(0)


def rand_tangent(y, rng: np.random.Generator):
    """A random cotangent for the output ``y``, in the natural form for each kind of leaf."""
    if isinstance(y, (bool, np.bool_, str, bytes)) or y is None or _is_int(y):
        return cr.NoTangent()
    if isinstance(y, (float, np.floating)):
        return type(y)(rng.standard_normal())
    if isinstance(y, (complex, np.complexfloating)):
        return complex(rng.standard_normal(), rng.standard_normal())
    if isinstance(y, np.ndarray):
        if y.dtype.kind == "f":
            return rng.standard_normal(y.shape).astype(y.dtype)
        if y.dtype.kind == "c":
            return (rng.standard_normal(y.shape) + 1j * rng.standard_normal(y.shape)).astype(y.dtype)
        return cr.NoTangent()
    if isinstance(y, (tuple, list)) and not hasattr(type(y), "_fields"):
        return type(y)(rand_tangent(v, rng) for v in y)
    if isinstance(y, tuple):
        return cr.Tangent[type(y)](**{k: rand_tangent(v, rng) for k, v in zip(type(y)._fields, y)})
    if isinstance(y, dict):
        return {k: rand_tangent(v, rng) for k, v in y.items()}
    names = _fields(y)
    if names:
        return cr.Tangent[type(y)](**{k: rand_tangent(getattr(y, k), rng) for k in names})
    raise AssertionError(f"no random tangent for a {type(y).__name__}")


def fd_vjp(f, dy, args: tuple, kwargs: dict, perturb_ints: bool = False) -> list[np.ndarray]:
    """``d<dy, f(*args)>/d args`` by finite differences, one flat vector per argument."""
    y = f(*args, **kwargs)
    weights = tangent_vector(y, dy)

    def scalar(i, v):
        new = list(args)
        new[i] = rebuilds[i](v)
        return float(weights @ flatten(f(*new, **kwargs))[0])

    flats = [flatten(a, perturb_ints) for a in args]
    rebuilds = [r for _, r in flats]
    grads = []
    for i, (vec, _) in enumerate(flats):
        g = np.zeros(len(vec))
        for j in range(len(vec)):
            h = 1e-3 * max(1.0, abs(vec[j]))
            values = []
            for step in (-2, -1, 1, 2):
                v = vec.copy()
                v[j] += step * h
                values.append(scalar(i, v))
            g[j] = (values[0] - 8 * values[1] + 8 * values[2] - values[3]) / (12 * h)
        grads.append(g)
    return grads
