"""A small finite-difference checker for rules, used until chainrules.testing is available."""

import numpy as np

import chainrules as cr


def _as64(x):
    if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu":
        return x.astype(np.float64)
    return x


def _coords(x):
    """Real coordinates of a differentiable value: (index, unit) pairs."""
    if isinstance(x, (float, int)) or np.ndim(x) == 0:
        units = [1.0] + ([1j] if np.iscomplexobj(x) else [])
        return [((), u) for u in units]
    units = [1.0] + ([1j] if np.iscomplexobj(x) else [])
    return [(i, u) for i in np.ndindex(np.shape(x)) for u in units]


def _perturb(x, idx, u, h):
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        return x + u * h
    x = np.array(x, dtype=np.result_type(x, u, np.float64))
    x[idx] = x[idx] + u * h
    return x


def _inner(a, b):
    return float(np.sum(np.real(np.conj(np.asarray(a)) * np.asarray(b))))


def _random_like(rng, y):
    shape = np.shape(y)
    r = rng.standard_normal(shape)
    if np.iscomplexobj(y):
        r = r + 1j * rng.standard_normal(shape)
    if isinstance(y, np.ndarray):
        return r.astype(y.dtype) if y.dtype.kind in "fc" else r
    return complex(r) if isinstance(y, complex) else float(r) if np.ndim(r) == 0 else r


def _diff(x):
    return not isinstance(x, (bool, np.bool_, type(None), str)) and (
        isinstance(x, (float, int, complex)) or (isinstance(x, np.ndarray) and x.dtype.kind in "fciu")
    )


def check_rrule(f, *args, diff=None, rtol=1e-6, atol=1e-8, h=1e-6, seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    diff = diff if diff is not None else [_diff(a) for a in args]
    y, back = cr.rrule(f, *args, **kwargs)
    np.testing.assert_allclose(y, f(*args, **kwargs), rtol=1e-6 if _is32(args) else 1e-12)
    dy = _random_like(rng, y)
    cots = back(dy)
    assert len(cots) == len(args) + 1 and isinstance(cots[0], cr.NoTangent)
    args64 = [_as64(a) if d else a for a, d in zip(args, diff)]
    for i, (a, d, c) in enumerate(zip(args, diff, cots[1:])):
        if not d:
            assert isinstance(c, cr.NoTangent), f"argument {i}: expected NoTangent, got {c!r}"
            continue
        c = cr.unthunk(c)
        if isinstance(c, cr.AbstractZero):
            c = np.zeros(np.shape(a))
        else:
            assert np.shape(c) == np.shape(a), f"argument {i}: shape {np.shape(c)} != {np.shape(a)}"
            if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
                assert c.dtype == a.dtype, f"argument {i}: dtype {c.dtype} != {a.dtype}"
            if not np.iscomplexobj(a):
                assert not np.iscomplexobj(c), f"argument {i}: complex cotangent for a real input"
        expected = np.zeros(np.shape(a), dtype=complex if np.iscomplexobj(a) else float)
        for idx, u in _coords(a):
            plus = list(args64)
            minus = list(args64)
            plus[i] = _perturb(args64[i], idx, u, h)
            minus[i] = _perturb(args64[i], idx, u, -h)
            jvp = (np.asarray(f(*plus, **kwargs)) - np.asarray(f(*minus, **kwargs))) / (2 * h)
            value = _inner(dy, jvp)
            if np.ndim(expected) == 0:
                expected = expected + value * u
            else:
                expected[idx] += value * u
        np.testing.assert_allclose(c, expected, rtol=rtol, atol=atol, err_msg=f"{f} argument {i}")
    return cots


def _is32(args):
    return any(isinstance(a, np.ndarray) and a.dtype in (np.float32, np.complex64) for a in args)


def check_frule(f, *args, diff=None, rtol=1e-6, atol=1e-8, h=1e-6, seed=1, **kwargs):
    rng = np.random.default_rng(seed)
    diff = diff if diff is not None else [_diff(a) for a in args]
    dxs = [_random_like(rng, a) if d else cr.NoTangent() for a, d in zip(args, diff)]
    y, dy = cr.frule((cr.NoTangent(), *dxs), f, *args, **kwargs)
    np.testing.assert_allclose(y, f(*args, **kwargs), rtol=1e-6 if _is32(args) else 1e-12)
    args64 = [_as64(a) if d else a for a, d in zip(args, diff)]
    plus = [a + h * _as64(d) if dd else a for a, d, dd in zip(args64, dxs, diff)]
    minus = [a - h * _as64(d) if dd else a for a, d, dd in zip(args64, dxs, diff)]
    expected = (np.asarray(f(*plus, **kwargs)) - np.asarray(f(*minus, **kwargs))) / (2 * h)
    dy = cr.unthunk(dy)
    if isinstance(dy, cr.AbstractZero):
        dy = np.zeros(np.shape(y))
    assert np.shape(dy) == np.shape(y), f"tangent shape {np.shape(dy)} != {np.shape(y)}"
    if isinstance(y, (np.ndarray, np.generic)) and y.dtype.kind in "fc" and isinstance(dy, (np.ndarray, np.generic)):
        assert dy.dtype == y.dtype, f"tangent dtype {dy.dtype} != {y.dtype}"
    np.testing.assert_allclose(dy, expected, rtol=rtol, atol=atol, err_msg=f"{f}")
    return dy
