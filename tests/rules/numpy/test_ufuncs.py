"""Rules of NumPy's elementwise functions, checked against finite differences from spec tables."""

import math
import warnings

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

# ----- argument makers: domain and shape, drawn from a seeded generator per case ----------


def real(*shape, lo=-2.0, hi=2.0, dtype=np.float64):
    def make(rng):
        if shape == ("scalar",):
            return float(rng.uniform(lo, hi))
        return rng.uniform(lo, hi, shape).astype(dtype)

    make.complex = False
    return make


def cplx(*shape, lo=-1.5, hi=1.5, dtype=np.complex128):
    def make(rng):
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dtype)

    make.complex = True
    return make


def fixed(value):
    def make(rng):
        return value

    make.complex = False
    return make


ANY = {"lo": -2.0, "hi": 2.0}
POS = {"lo": 0.5, "hi": 2.0}
UNIT = {"lo": -0.9, "hi": 0.9}
ABOVE1 = {"lo": 1.2, "hi": 3.0}
AWAY = {"lo": 0.3, "hi": 2.0}  # nonzero with either sign, see `signed`


def signed(*shape, dtype=np.float64):
    """Values of either sign, bounded away from zero (for abs, sign-dependent partials)."""

    def make(rng):
        if shape == ("scalar",):
            return float(rng.choice([-1, 1]) * rng.uniform(0.3, 2.0))
        return (rng.choice([-1, 1], shape) * rng.uniform(0.3, 2.0, shape)).astype(dtype)

    make.complex = False
    return make


# (function, domain of x, holomorphic for complex input (tested with complex values))
UNARY = [
    (np.negative, ANY, True),
    (np.positive, ANY, True),
    (np.absolute, "signed", True),
    (np.fabs, "signed", False),
    (np.reciprocal, POS, True),
    (np.exp, ANY, True),
    (np.exp2, ANY, True),
    (np.expm1, ANY, True),
    (np.log, POS, True),
    (np.log2, POS, True),
    (np.log10, POS, True),
    (np.log1p, POS, True),
    (np.sqrt, POS, True),
    (np.cbrt, "signed", False),
    (np.square, ANY, True),
    (np.sin, ANY, True),
    (np.cos, ANY, True),
    (np.tan, UNIT, True),
    (np.arcsin, UNIT, True),
    (np.arccos, UNIT, True),
    (np.arctan, ANY, True),
    (np.sinh, ANY, True),
    (np.cosh, ANY, True),
    (np.tanh, ANY, True),
    (np.arcsinh, ANY, True),
    (np.arccosh, ABOVE1, True),
    (np.arctanh, UNIT, True),
    (np.deg2rad, ANY, False),
    (np.radians, ANY, False),
    (np.rad2deg, ANY, False),
    (np.degrees, ANY, False),
    (np.sinc, ANY, True),
    (np.real, ANY, True),
    (np.imag, ANY, True),
    (np.conjugate, ANY, True),
    (np.angle, "signed", True),
    (np.real_if_close, ANY, True),
    (np.nan_to_num, ANY, True),
]


def _unary_maker(domain, shape, dtype):
    if domain == "signed":
        return signed(*shape, dtype=dtype)
    return real(*shape, dtype=dtype, **domain)


def _unary_cases():
    for f, domain, complex_ok in UNARY:
        name = f.__name__
        yield pytest.param(f, [_unary_maker(domain, (4,), np.float64)], {}, id=f"{name}-f64")
        yield pytest.param(f, [_unary_maker(domain, (2, 3), np.float32)], {}, id=f"{name}-f32")
        if complex_ok:
            lo, hi = (0.3, 1.5) if domain in (POS, ABOVE1, "signed") else (-0.7, 0.7)
            yield pytest.param(f, [cplx(3, lo=lo, hi=hi)], {}, id=f"{name}-complex")


@pytest.mark.parametrize("f, domain, complex_ok", UNARY, ids=lambda v: getattr(v, "__name__", ""))
def test_unary_at_scalar_points(f, domain, complex_ok):
    """Python floats in, with a complex point too where NumPy takes complex input."""
    x = _unary_maker(domain, ("scalar",), np.float64)(np.random.default_rng(0))
    crt.test_scalar(f, x, holomorphic=complex_ok)


# (function, domain of a, domain of b, holomorphic in both)
BINARY = [
    (np.add, ANY, ANY, True),
    (np.subtract, ANY, ANY, True),
    (np.multiply, ANY, ANY, True),
    (np.divide, ANY, "signed", True),
    (np.power, POS, ANY, True),
    (np.float_power, POS, ANY, True),
    (np.arctan2, ANY, POS, False),
    (np.hypot, "signed", "signed", False),
    (np.logaddexp, ANY, ANY, False),
    (np.logaddexp2, ANY, ANY, False),
    (np.maximum, ANY, ANY, False),
    (np.minimum, ANY, ANY, False),
    (np.fmax, ANY, ANY, False),
    (np.fmin, ANY, ANY, False),
    (np.mod, ANY, {"lo": 1.1, "hi": 1.9}, False),
    (np.fmod, ANY, {"lo": 1.1, "hi": 1.9}, False),
    (np.copysign, "signed", "signed", False),
    (np.heaviside, "signed", ANY, False),
    (np.nextafter, ANY, ANY, False),
]

BINARY_SHAPES = [
    ("scalars", ("scalar",), ("scalar",), np.float64),
    ("same", (3,), (3,), np.float64),
    ("bcast", (3, 1), (1, 4), np.float64),
    ("scalar-array", ("scalar",), (2, 3), np.float64),
    ("rank", (2, 3), (3,), np.float32),
]


def _binary_cases():
    for f, da, db, complex_ok in BINARY:
        for label, sa, sb, dtype in BINARY_SHAPES:
            makers = [_unary_maker(da, sa, dtype), _unary_maker(db, sb, dtype)]
            yield pytest.param(f, makers, {}, id=f"{f.__name__}-{label}")
        if complex_ok:
            yield pytest.param(f, [cplx(3, lo=0.3), cplx(1, lo=0.3)], {}, id=f"{f.__name__}-complex")


def _other_cases():
    cond = fixed(np.array([[True, False, True], [False, False, True]]))
    yield pytest.param(np.where, [cond, real(2, 3), real(3)], {}, id="where")
    yield pytest.param(np.where, [cond, real(2, 1), real("scalar")], {}, id="where-bcast")
    yield pytest.param(np.where, [cond, cplx(2, 3), cplx(2, 3)], {}, id="where-complex")
    x = real(3, 4, lo=-3, hi=3)
    yield pytest.param(np.clip, [x, fixed(-1.0), fixed(1.0)], {}, id="clip-scalars")
    yield pytest.param(np.clip, [x, real(3, 1, lo=-1.5, hi=-0.5), real(4, lo=0.5, hi=1.5)], {}, id="clip-arrays")
    yield pytest.param(np.clip, [x, fixed(None), real(4, lo=-1, hi=1)], {}, id="clip-no-min")
    yield pytest.param(np.clip, [x, real(1, 4, lo=-1, hi=1), fixed(None)], {}, id="clip-no-max")
    yield pytest.param(np.clip, [x], {"a_min": -1.0, "a_max": 1.0}, id="clip-keywords")
    yield pytest.param(np.clip, [real(2, 3, lo=-3, hi=3, dtype=np.float32)], {"min": -1.0}, id="clip-f32")
    yield pytest.param(np.ndarray.clip, [x, fixed(-1.0), fixed(1.0)], {}, id="ndarray.clip")
    yield pytest.param(np.ndarray.clip, [x], {"max": 0.5}, id="ndarray.clip-kw")
    yield pytest.param(np.ndarray.conj, [cplx(2, 2)], {}, id="ndarray.conj")
    yield pytest.param(np.ndarray.conjugate, [real(3)], {}, id="ndarray.conjugate-real")
    yield pytest.param(np.angle, [cplx(3, lo=0.3), fixed(True)], {}, id="angle-deg")
    yield pytest.param(np.angle, [cplx(3, lo=0.3)], {"deg": True}, id="angle-deg-kw")
    yield pytest.param(np.ldexp, [real(2, 3), fixed(np.array([1, -2, 3]))], {}, id="ldexp")
    yield pytest.param(np.full_like, [real(2, 3), real(3)], {}, id="full_like")
    yield pytest.param(np.full_like, [real(2, 3), real("scalar")], {}, id="full_like-scalar")
    yield pytest.param(np.full, [fixed((2, 3)), real(3)], {}, id="full")
    yield pytest.param(np.full, [fixed(4), real("scalar")], {"dtype": np.float32}, id="full-scalar-f32")
    yield pytest.param(np.exp, [real(3, dtype=np.float32)], {"dtype": np.float64}, id="exp-dtype")
    yield pytest.param(np.add, [real(3), real(2, 1)], {"dtype": np.complex128}, id="add-dtype-complex")
    yield pytest.param(np.exp, [fixed(np.array([1, 2, 3]))], {}, id="exp-int")
    yield pytest.param(np.multiply, [fixed(np.array([1, 2, 3])), real(3)], {}, id="multiply-int")
    yield pytest.param(np.sqrt, [real(2, 2, lo=0.5)], {"casting": "same_kind"}, id="sqrt-casting")
    yield pytest.param(np.sin, [real(3)], {"out": None}, id="sin-out-None")
    # np.sign(z) = z / |z| for complex z (NumPy 2): smooth away from 0, and not holomorphic
    yield pytest.param(np.sign, [cplx(3, lo=0.3)], {}, id="sign-complex")
    yield pytest.param(np.sign, [cplx(2, 3, lo=0.3)], {}, id="sign-complex-2d")
    yield pytest.param(np.sign, [cplx(4, lo=0.3, dtype=np.complex64)], {}, id="sign-complex64")


CASES = list(_unary_cases()) + list(_binary_cases()) + list(_other_cases())


def _args(makers, seed=0):
    rng = np.random.default_rng(seed)
    return [m(rng) for m in makers]


def _diff_mask(f, args):
    """Which positional arguments carry a derivative (conditions, bounds given as None, flags, exponents do not)."""
    if f is np.where:
        return [False, True, True]
    if f is np.ldexp:
        return [True, False]
    if f is np.angle:
        return [True, False][: len(args)]
    if f is np.full_like or f is np.full:
        return [False, True]
    return [a is not None for a in args]


def _marked(f, args):
    return [a if d else crt.nondiff(a) for a, d in zip(args, _diff_mask(f, args))]


@pytest.mark.parametrize("f, makers, kwargs", CASES)
def test_rrule_table(f, makers, kwargs):
    crt.test_rrule(f, *_marked(f, _args(makers)), fkwargs=kwargs)


@pytest.mark.parametrize("f, makers, kwargs", CASES)
def test_frule_table(f, makers, kwargs):
    crt.test_frule(f, *_marked(f, _args(makers)), fkwargs=kwargs)


def _tangent(rng, x, batch=None):
    shape = np.shape(x) if batch is None else (batch,) + np.shape(x)
    t = rng.standard_normal(shape)
    if np.iscomplexobj(x):
        t = t + 1j * rng.standard_normal(shape)
    if isinstance(x, np.ndarray):
        return t.astype(x.dtype) if x.dtype.kind in "fc" else t
    return t if batch is not None else complex(t) if isinstance(x, complex) else float(t)


@pytest.mark.parametrize("mode", ["all-batched", "first-batched", "pre-aligned"])
@pytest.mark.parametrize("f, makers, kwargs", CASES)
def test_batched_frule_matches_rows(f, makers, kwargs, mode):
    """A batch of tangents (leading axis) gives, row by row, what one tangent at a time gives.

    "pre-aligned" batches come with length-1 axes between the batch axis and a lower-rank
    input's own axes, up to the rank of the output, as the forward engine lays them out.
    """
    args = _args(makers)
    diff = _diff_mask(f, args)
    rng = np.random.default_rng(2)
    batch = 3
    first = diff.index(True)
    tangents = [
        _tangent(rng, a, batch)
        if d and (mode != "first-batched" or i == first)
        else cr.ZeroTangent()
        if d
        else cr.NoTangent()
        for i, (a, d) in enumerate(zip(args, diff))
    ]
    assert cr.frule.lookup(f, tuple(args)).batched
    rank = max(np.ndim(a) for a in args)
    given = [
        np.reshape(t, (batch,) + (1,) * (rank - np.ndim(a)) + np.shape(a))
        if mode == "pre-aligned" and isinstance(t, np.ndarray)
        else t
        for a, t in zip(args, tangents)
    ]
    y, dy = cr.frule((cr.NoTangent(), *given), f, *args, **kwargs)
    dy = cr.unthunk(dy)
    assert np.shape(dy) == (batch,) + np.shape(y)
    for b in range(batch):
        row = [t[b] if isinstance(t, np.ndarray) else t for t in tangents]
        if not isinstance(args[first], np.ndarray):  # a scalar's tangent row is a scalar
            row[first] = row[first].item()
        _, expected = cr.frule((cr.NoTangent(), *row), f, *args, **kwargs)
        expected = np.broadcast_to(cr.unthunk(expected), np.shape(y))
        crt.assert_approx(dy[b], expected, rtol=1e-12 if np.result_type(dy) == np.float64 else 1e-6, atol=1e-12)



# ----- ufunc.outer -----------------------------------------------------------------------------

_R = np.random.default_rng(7)
OUTER = [
    (np.multiply, _R.normal(size=(2, 3)), _R.normal(size=4)),
    (np.subtract, _R.normal(size=3), _R.normal(size=(2, 2))),
    (np.add, 0.7, _R.normal(size=3)),
    (np.divide, _R.normal(size=3), [0.5, -1.5]),
    (np.power, _R.uniform(0.5, 2.0, 3), _R.normal(size=2)),
    (np.arctan2, _R.normal(size=2), _R.normal(size=3)),
    (np.maximum, _R.normal(size=3), _R.normal(size=2)),
    (np.logaddexp, _R.normal(size=(2, 1)), _R.normal(size=3)),
    (np.multiply, _R.normal(size=2) + 1j * _R.normal(size=2), _R.normal(size=3)),
]


@pytest.mark.parametrize("f, a, b", OUTER, ids=lambda v: getattr(v, "__name__", ""))
def test_outer_of_a_binary_ufunc(f, a, b):
    crt.test_rrule(f.outer, a, b)
    crt.test_frule(f.outer, a, b)


@pytest.mark.parametrize("f, a, b", OUTER[:3], ids=lambda v: getattr(v, "__name__", ""))
def test_outer_batched(f, a, b, batched_pullback):
    from _array_checks import check_batched_frule

    check_batched_frule(f.outer, a, b)
    batched_pullback(f.outer, a, b)


def test_outer_refuses_out_as_the_ufunc_does():
    with pytest.raises(cr.ChainRulesError, match="out="):
        cr.rrule(np.multiply.outer, _R.normal(size=3), _R.normal(size=2), out=np.zeros((3, 2)))


@pytest.mark.parametrize("f", [np.multiply, np.subtract, np.divide])
def test_outer_through_the_engines(f):
    from _array_checks import check_engines

    b = np.array([0.5, -0.6, 1.3])
    check_engines(lambda x: np.sum(np.sin(f.outer(x, b)) * f.outer(b, x).T), np.array([0.2, 0.9, -0.4, 1.1]))


# ----- conventions at kinks and special points ---------------------------------------------


def _grads(f, *args, dy=1.0, **kwargs):
    _, back = cr.rrule(f, *args, **kwargs)
    return tuple(cr.unthunk(c) for c in back(dy)[1:])


def _push(f, args, tangents, **kwargs):
    return cr.unthunk(cr.frule((cr.NoTangent(), *tangents), f, *args, **kwargs)[1])


KINKS = [
    # (function, args, expected gradient of each argument for dy = 1)
    (np.maximum, (np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 0.0])), ([0.5, 0.0, 1.0], [0.5, 1.0, 0.0])),
    (np.minimum, (np.array([1.0, 2.0]), np.array([1.0, 5.0])), ([0.5, 1.0], [0.5, 0.0])),
    (np.maximum, (np.array([np.nan, 1.0]), np.array([1.0, np.nan])), ([1.0, 0.0], [0.0, 1.0])),
    (np.fmax, (np.array([np.nan, 2.0]), np.array([1.0, 2.0])), ([0.0, 0.5], [1.0, 0.5])),
    (np.fmin, (np.array([np.nan, 1.0]), np.array([1.0, np.nan])), ([0.0, 1.0], [1.0, 0.0])),
    (np.absolute, (np.array([0.0, -2.0]),), ([0.0, -1.0],)),
    (np.absolute, (np.array([0j, 3 + 4j]),), ([0.0, 0.6 + 0.8j],)),
    (np.hypot, (np.array([0.0]), np.array([0.0])), ([0.0], [0.0])),
    (np.arctan2, (np.array([0.0, 1.0]), np.array([0.0, 1.0])), ([0.0, 0.5], [0.0, -0.5])),  # as math.atan2's
    (np.sinc, (np.array([0.0]),), ([0.0],)),
    (np.power, (np.array([0.0, 0.0, 2.0]), np.array([2.0, 0.0, 0.0])), ([0.0, 0.0, 0.0], [0.0, 0.0, np.log(2.0)])),
    (np.power, (np.array([0.0, 1.0]), np.array([1.0, 2.0])), ([1.0, 2.0], [0.0, 0.0])),
    (np.power, (np.array([-2.0]), np.array([2.0])), ([-4.0], [4.0 * np.log(2.0)])),
    (np.heaviside, (np.array([0.0, 1.0]), np.array([0.5, 0.5])), ([0.0, 0.0], [1.0, 0.0])),
    (np.copysign, (np.array([2.0, -2.0]), np.array([-1.0, -1.0])), ([-1.0, 1.0], [0.0, 0.0])),
    (np.angle, (np.array([0j, 2.0 + 0j]),), ([0.0, 0.5j],)),
    (np.angle, (np.array([-1.0, 2.0]),), ([0.0, 0.0],)),
    (np.imag, (np.array([1.0, 2.0]),), ([0.0, 0.0],)),
    (np.imag, (np.array([1.0 + 2j]),), ([1j],)),
    (np.real, (np.array([1.0 + 2j]),), ([1.0 + 0j],)),
    (np.nan_to_num, (np.array([np.nan, np.inf, 2.0]),), ([0.0, 0.0, 1.0],)),
    # clip: a bound equal to `a` passes the cotangent to `a`; lo > hi gives hi
    (np.clip, (np.array([0.0, 1.0, 0.5]), 0.0, 1.0), ([1.0, 1.0, 1.0], 0.0, 0.0)),
    (np.clip, (np.array([0.0, 5.0]), np.array([2.0, 2.0]), np.array([1.0, 1.0])), ([0.0, 0.0], [0.0, 0.0], [1.0, 1.0])),
]


@pytest.mark.parametrize("f, args, expected", KINKS, ids=lambda v: getattr(v, "__name__", ""))
def test_conventions(f, args, expected):
    got = _grads(f, *args, dy=np.ones(np.broadcast_shapes(*(np.shape(a) for a in args))))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, atol=1e-15)


def test_arctan2_at_the_origin_is_zero_in_every_engine():
    """np.arctan2 and math.atan2 have no derivative at the origin; every engine gives 0 there, with
    no warning, as math.atan2's rule (and ChainRules.jl's atan) does, not nan."""

    def numpy_angle(v):
        return np.sum(np.arctan2(v[:2], v[2:]))

    def math_angle(v):
        return math.atan2(v[0], v[2]) + math.atan2(v[1], v[3])

    v = np.array([0.0, 1.0, 0.0, 1.0])
    expected = [0.0, 0.5, 0.0, -0.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f in (numpy_angle, math_angle):
            np.testing.assert_allclose(cr.gradient(f, v)[0], expected, atol=1e-15)
            np.testing.assert_allclose(cr.jacobian(f, v, mode="forward"), expected, atol=1e-15)
            assert np.isfinite(cr.hessian(f, v)).all()
        np.testing.assert_allclose(cr.gradient(numpy_angle, v, engine="tape")[0], expected, atol=1e-15)


def test_maximum_tie_pushforward_averages():
    a, b = np.array([1.0, 2.0]), np.array([1.0, 0.0])
    got = _push(np.maximum, (a, b), (np.array([2.0, 2.0]), np.array([4.0, 4.0])))
    np.testing.assert_allclose(got, [3.0, 2.0])


@pytest.mark.parametrize("f", [np.maximum, np.minimum, np.fmax, np.fmin])
def test_extrema_cast_by_dtype_pick_the_entries_numpy_picked(f):
    """With dtype=np.float32 NumPy compares float64 inputs cast to float32: no input equals the
    float32 output, which had left every winner mask empty (zero derivatives)."""
    a, b = np.array([0.3, 2.1, 5.7]), np.array([1.1, 0.2, 0.4])
    crt.test_rrule(f, a, b, fkwargs={"dtype": np.float32})
    crt.test_frule(f, a, b, fkwargs={"dtype": np.float32})

    def g(a):
        return np.sum(np.sin(f(a, b, dtype=np.float32)))

    expected = crt.fd_jacobian(g, a)[0]
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(g, a, engine=engine)[0], expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        cr.jacobian(lambda a: f(a, b, dtype=np.float32), a, mode="forward"),
        crt.fd_jacobian(lambda a: f(a, b, dtype=np.float32), a),
        rtol=1e-4,
        atol=1e-4,
    )
    # tied in float32 though not in float64: tied as NumPy compared them, the cotangent is shared
    np.testing.assert_array_equal(_grads(f, np.array([0.1]), np.array([0.1 + 1e-12]), dtype=np.float32), [[0.5], [0.5]])


def test_where_one_argument_has_no_derivative():
    y, back = cr.rrule(np.where, np.array([True, False, True]))
    np.testing.assert_array_equal(y[0], [0, 2])
    assert back(None) == (cr.NoTangent(), cr.NoTangent())
    assert cr.frule((cr.NoTangent(), cr.NoTangent()), np.where, np.array([True]))[1] == cr.NoTangent()


def test_where_keyword_zeroes_unselected_entries():
    x = np.array([1.0, 2.0, 3.0])
    mask = np.array([True, False, True])
    (g,) = _grads(np.exp, x, dy=np.ones(3), where=mask, out=None)
    np.testing.assert_allclose(g, [np.exp(1.0), 0.0, np.exp(3.0)])
    dy = _push(np.exp, (x,), (np.ones(3),), where=mask, out=None)
    np.testing.assert_allclose(dy, [np.exp(1.0), 0.0, np.exp(3.0)])


def test_dtype_keyword_sets_the_tangent_dtype():
    x = np.ones(3, dtype=np.float32)
    y, back = cr.rrule(np.exp, x, dtype=np.float64)
    assert y.dtype == np.float64 and back(np.ones(3))[1].dtype == np.float32
    assert _push(np.exp, (x,), (np.ones(3, np.float32),), dtype=np.float64).dtype == np.float64


def test_integer_inputs_get_float_cotangents():
    (g,) = _grads(np.square, np.array([1, 2, 3]), dy=np.ones(3))
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, [2.0, 4.0, 6.0])
    ga, gb = _grads(np.power, np.array([2, 3]), np.array([0, 1]), dy=np.ones(2))
    np.testing.assert_allclose(ga, [0.0, 1.0])
    np.testing.assert_allclose(gb, [np.log(2.0), 3 * np.log(3.0)])


def test_bool_inputs_get_no_tangent():
    _, gb = _grads(np.multiply, np.ones(2), np.array([True, False]), dy=np.ones(2))
    assert gb == cr.NoTangent()


def test_zero_cotangent_gives_zeros():
    _, back = cr.rrule(np.ldexp, np.ones(2), np.array([1, 2]))
    assert back(cr.ZeroTangent()) == (cr.NoTangent(), cr.ZeroTangent(), cr.NoTangent())
    assert cr.frule((cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent()), np.add, 1.0, 2.0)[1] == cr.ZeroTangent()


def test_thunked_cotangent():
    _, back = cr.rrule(np.sin, np.array([0.0, 1.0]))
    np.testing.assert_allclose(back(cr.Thunk(lambda: np.ones(2)))[1], np.cos([0.0, 1.0]))


def test_complex_cotangent_of_real_output_is_projected():
    _, back = cr.rrule(np.abs, np.array([-2.0, 3.0]))
    np.testing.assert_allclose(back(np.array([1.0 + 5j, 1.0 - 1j]))[1], [-1.0, 1.0])


@pytest.mark.parametrize(
    "call",
    [
        lambda: cr.rrule(np.exp, np.ones(2), out=np.empty(2)),
        lambda: cr.rrule(np.add, np.ones(2), np.ones(2), np.empty(2)),
        lambda: cr.frule((None, np.ones(2)), np.sin, np.ones(2), out=(np.empty(2),)),
        lambda: cr.rrule(np.conjugate, np.ones(2), out=np.empty(2)),
        lambda: cr.rrule(np.clip, np.ones(2), 0.0, 1.0, np.empty(2)),
    ],
)
def test_out_is_refused(call):
    with pytest.raises(TypeError, match="out="):
        call()


def test_nan_to_num_without_copy_is_refused():
    with pytest.raises(TypeError, match="copy=False"):
        cr.rrule(np.nan_to_num, np.ones(2), copy=False)


_SPECIAL = np.array([0.4, np.nan, np.inf, -1.3, -np.inf, np.nan, 2.0])


@pytest.mark.parametrize(
    "x, values",
    [
        (_SPECIAL, (0.7, 5.0, -6.0)),
        (_SPECIAL[np.isfinite(_SPECIAL) | np.isnan(_SPECIAL)], (0.7,)),  # (the default posinf= is too large for
        (_SPECIAL[_SPECIAL != np.inf], (0.7, None, -6.0)),  # finite differences)
        (np.array([complex(np.nan, np.nan), 0.2 + 0.5j]), (0.3,)),  # (both parts: a real value replaces them)
    ],
    ids=["all", "nan", "no-posinf", "complex"],
)
def test_nan_to_num_replacements_are_differentiated(x, values):
    """nan=, posinf= and neginf= (given by position, as the engines pass a value being differentiated)
    move the entries they replace; they had been given no derivative."""
    crt.test_rrule(np.nan_to_num, x, crt.nondiff(True), *(crt.nondiff(v) if v is None else v for v in values))
    crt.test_frule(np.nan_to_num, x, crt.nondiff(True), *(crt.nondiff(v) if v is None else v for v in values))


def test_nan_to_num_keeps_the_finite_part_of_a_complex_entry():
    """A complex entry's parts are replaced apart: the finite part of one whose other part is not
    passes its derivative, which the rules had given to neither part (their partial was whether the
    whole entry is finite). Through the engines: finite differences cannot step across a part that is
    not finite."""
    from _array_checks import check_engines

    special = np.array([complex(np.inf, 0.0), complex(0.0, np.nan), complex(-np.inf, np.inf), 0j])

    def f(x):
        z = special + x * np.array([0.0, 1.0, 0.0, 1.0]) + 1j * x * np.array([1.0, 0.0, 0.0, 1.0])
        return np.sum(np.abs(np.nan_to_num(z, posinf=x[2] * 2, neginf=1.5, nan=x[0] ** 2)) ** 2 * np.arange(1.0, 5.0))

    check_engines(f, np.array([0.3, 1.7, -0.4, 0.8]))


def test_nan_to_num_replacements_through_the_engines():
    """``np.nan_to_num(y, nan=x[1], ...)`` with replacements computed from the values differentiated."""
    from _array_checks import check_engines

    special = np.array([0.0, np.nan, np.inf, 0.0, -np.inf, np.nan])

    def f(x):
        y = np.nan_to_num(np.where(np.isfinite(special), x, special), nan=x[1] ** 2, posinf=np.sin(x[0]), neginf=x[3])
        nans = np.nan_to_num(np.where(np.isnan(special), special, x), True, x[2])
        return np.sum(y * np.arange(1.0, 7.0)) + np.sum(nans)

    check_engines(f, np.array([0.4, -1.1, 0.9, 1.3, -0.2, 0.6]))


@pytest.mark.parametrize("f", [np.imag, np.real, np.conjugate, np.angle, np.absolute])
def test_complex64_scalars_get_complex64_cotangents(f):
    """A complex64 scalar's cotangent stays complex64: np.imag's partial, the Python constant -1j,
    had promoted it to complex128 (match_input keeps a NumPy scalar's type as it comes)."""
    z = np.complex64(0.3 + 0.2j)
    crt.test_rrule(f, z)
    crt.test_frule(f, z)
    _, back = cr.rrule(f, z)
    assert type(back(f(z) ** 0)[1]) is np.complex64  # (a seed of the output's type: float32 or complex64)
    for engine in ("source", "tape"):
        assert type(cr.gradient(lambda z: np.real(f(z)), z, engine=engine)[0]) is np.complex64
    fd = crt.fd_jacobian(lambda z: np.real(f(z)), z)[0]
    np.testing.assert_allclose(cr.gradient(lambda z: np.real(f(z)), z)[0], fd[0] + 1j * fd[1], rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(cr.jacobian(lambda z: np.real(f(z)), z, mode="forward"), fd[0], rtol=1e-3, atol=1e-5)


def test_primal_of_rrule_is_the_plain_call():
    x = np.linspace(-1, 1, 5)
    for f in (np.exp, np.tanh, np.abs, np.sinc):
        np.testing.assert_array_equal(cr.rrule(f, x)[0], f(x))


# ----- no derivative -----------------------------------------------------------------------

x3 = np.array([0.5, -1.5, 2.5])
NONDIFF = [
    (np.sign, (x3,)), (np.floor, (x3,)), (np.ceil, (x3,)), (np.rint, (x3,)), (np.trunc, (x3,)),
    (np.round, (x3,)), (np.around, (x3, 1)), (np.fix, (x3,)), (np.signbit, (x3,)), (np.floor_divide, (x3, 2.0)),
    (np.spacing, (x3,)),
    (np.isnan, (x3,)), (np.isinf, (x3,)), (np.isfinite, (x3,)), (np.isneginf, (x3,)), (np.isposinf, (x3,)),
    (np.greater, (x3, 0.0)), (np.greater_equal, (x3, 0.0)), (np.less, (x3, 0.0)), (np.less_equal, (x3, 0.0)),
    (np.equal, (x3, 0.5)), (np.not_equal, (x3, 0.5)), (np.logical_and, (x3, x3)), (np.logical_or, (x3, x3)),
    (np.logical_not, (x3,)), (np.logical_xor, (x3, x3)), (np.isclose, (x3, x3)), (np.allclose, (x3, x3)),
    (np.array_equal, (x3, x3)), (np.array_equiv, (x3, x3)), (np.iscomplex, (x3,)), (np.iscomplexobj, (x3,)),
    (np.isreal, (x3,)), (np.isrealobj, (x3,)), (np.isscalar, (1.0,)), (np.all, (x3,)), (np.any, (x3,)),
    (np.argmax, (x3,)), (np.argmin, (x3,)), (np.argsort, (x3,)), (np.argpartition, (x3, 1)),
    (np.argwhere, (x3,)), (np.nonzero, (x3,)), (np.flatnonzero, (x3,)), (np.count_nonzero, (x3,)),
    (np.searchsorted, (np.sort(x3), 0.0)), (np.lexsort, ((x3, np.array([1, 0, 1])),)),
    (np.digitize, (x3, np.array([0.0, 1.0]))), (np.nanargmax, (x3,)), (np.nanargmin, (x3,)),
    (np.zeros_like, (x3,)), (np.ones_like, (x3,)),
    (np.empty_like, (x3,)), (np.shape, (x3,)), (np.ndim, (x3,)), (np.size, (x3,)), (np.result_type, (x3,)),
    (np.bitwise_and, (np.array([3]), 1)), (np.invert, (np.array([3]),)), (np.gcd, (np.array([4]), 6)),
    (np.ndarray.round, (x3,)), (np.ndarray.argmax, (x3,)), (np.ndarray.argmin, (x3,)),
    (np.ndarray.argsort, (x3,)), (np.ndarray.nonzero, (x3,)), (np.ndarray.all, (x3,)), (np.ndarray.any, (x3,)),
]  # fmt: skip


@pytest.mark.parametrize("f, args", NONDIFF, ids=lambda v: getattr(v, "__name__", ""))
def test_non_differentiable(f, args):
    y, back = cr.rrule(f, *args)
    expected = f(*args)
    if f is not np.empty_like:
        for got, want in zip(y if isinstance(y, tuple) else (y,), expected if isinstance(y, tuple) else (expected,)):
            np.testing.assert_array_equal(got, want)
    assert back(1.0) == (cr.NoTangent(),) * (len(args) + 1)
    assert cr.frule((cr.NoTangent(),) * (len(args) + 1), f, *args)[1] == cr.NoTangent()


_GROUPS = np.array([1, 0, 1, 0, 1])
_EDGES = np.array([0.0, 1.0])
INTEGER_VALUED = {  # programs using integer results of their argument, which carry no derivative
    "lexsort": lambda x: np.sum(x[np.lexsort((x, _GROUPS))] * np.arange(5.0) * x),
    "digitize": lambda x: np.sum(np.digitize(x, _EDGES) * x**2),
    "nanargmax": lambda x: x[np.nanargmax(x)] * np.sum(x**2),
    "nanargmin": lambda x: x[np.nanargmin(x)] ** 3 * x[0],
}


@pytest.mark.parametrize("name", INTEGER_VALUED)
def test_integer_valued_functions_through_the_engines(name):
    from _array_checks import check_engines

    check_engines(INTEGER_VALUED[name], np.array([0.7, -0.3, 1.4, 0.2, 0.9]))


# ----- interp -------------------------------------------------------------------------------

_XP = np.array([-1.0, -0.2, 0.5, 1.3, 2.0])
_XS = np.array([[-1.5, -0.6, 0.1], [0.9, 1.7, 2.4]])  # below, inside every segment, above
INTERP = [
    (_XS, _XP, np.array([0.3, -1.0, 2.0, 0.5, 1.5])),
    (0.4, _XP, np.array([0.3, -1.0, 2.0, 0.5, 1.5])),
    (_XS.astype(np.float32), _XP, np.array([0.3, -1.0, 2.0, 0.5, 1.5], dtype=np.float32)),
    (_XS, _XP, np.array([0.3, -1.0, 2.0, 0.5, 1.5]) + 1j * np.arange(5.0)),
    (_XS, _XP, np.array([0.3, -1.0, 2.0, 0.5, 1.5]), -3.0, 4.0),  # left and right by position
    (_XS, _XP, np.array([0.3, -1.0, 2.0, 0.5, 1.5]), crt.nondiff(None), 4.0),
]


@pytest.mark.parametrize("args", INTERP, ids=lambda a: f"{np.shape(a[0])}-{len(a)}-{np.result_type(a[2])}")
def test_interp(args):
    crt.test_rrule(np.interp, *args)
    crt.test_frule(np.interp, *args)
    crt.test_frule(np.interp, *args[:3], fkwargs={"left": 0.0, "right": 1.0})


def test_interp_batched_frule():
    from _array_checks import Const, check_batched_frule

    check_batched_frule(np.interp, _XS, Const(_XP), np.arange(5.0), -3.0, 4.0)


def test_interp_at_the_knots_takes_the_segment_to_the_right():
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0])
    _, back = cr.rrule(np.interp, np.array([0.0, 1.0, 3.0, 5.0]), xp, fp)
    dx, _, dfp = back(np.ones(4))[1:]
    np.testing.assert_array_equal(dx, [2.0, 0.5, 0.5, 0.0])  # at the last knot: the last segment
    np.testing.assert_array_equal(dfp, [1.0, 1.0, 2.0])  # the point beyond reads fp[-1]


# unsorted, and sorted 1, 2.5, 4, 5.5, 7 modulo 10; x in a middle segment, below the first point
# (0.4), past the last (8, 9.9) and a period or more away (13.6, -7.4)
_PERIODIC = (np.array([1.0, -3.0, 5.5, 4.0, 12.5]), np.array([0.3, -1.0, 2.0, 0.5, 1.5]))
_XS_PERIODIC = np.array([[3.1, -2.0, 13.6], [0.4, 9.9, -7.4]])


@pytest.mark.parametrize(
    "args",
    [
        (_XS_PERIODIC, *_PERIODIC),
        (8.0, *_PERIODIC),
        (_XS_PERIODIC, _PERIODIC[0], _PERIODIC[1] + 1j * np.arange(5.0)),
        (_XS_PERIODIC, *_PERIODIC, -3.0, 4.0),  # left and right are ignored with a period
    ],
    ids=["array", "number", "complex", "bounds"],
)
def test_interp_with_a_period(args, batched_pullback):
    """x and xp are taken modulo the period, the table sorted and wrapped round at both ends."""
    crt.test_rrule(np.interp, *args, fkwargs={"period": 10.0})
    crt.test_frule(np.interp, *args, fkwargs={"period": 10.0})
    batched_pullback(np.interp, *args, kwargs={"period": 10.0}, rtol=1e-12)
    for period in (10.0, -10.0):  # by position, as the engines pass one being differentiated (its sign is ignored)
        crt.test_rrule(np.interp, *args[:3], -3.0, 4.0, period)
        crt.test_frule(np.interp, *args[:3], -3.0, 4.0, period)


def test_interp_with_a_period_batched_frule():
    from _array_checks import Const, check_batched_frule

    check_batched_frule(np.interp, _XS_PERIODIC, *_PERIODIC, fkwargs={"period": 10.0})
    check_batched_frule(np.interp, _XS_PERIODIC, Const(_PERIODIC[0]), _PERIODIC[1], None, None, 10.0)


def test_interp_with_a_period_through_the_engines():
    from _array_checks import check_engines

    def daily_cycle(theta):
        hours = np.array([18.0, 0.0, 6.0, 12.0]) + theta[:4]
        y = np.interp(np.array([3.0, 22.5, 25.0, -11.0]) * theta[4], hours, np.sin(theta[:4]), period=24.0)
        return np.sum(y**2 * theta[:4])

    check_engines(daily_cycle, np.array([0.5, -1.0, 2.0, 0.3, 1.1]))


def test_interp_with_a_period_being_differentiated():
    """x and xp taken modulo the period move with it (by -floor(v / period)), and so do the table's points
    wrapped round at both ends; the rules had given the period no derivative: np.interp(2 x, xp, fp,
    period=4 + x[0]) had the gradient [2, 2, 2] for [1, 2, 2] under every engine."""
    from _array_checks import check_engines

    def f(x):
        by_keyword = np.interp(x * 5.0, [-1.0, 0.0, 7.0, 2.0], np.cos(x[:4]), period=-(4.0 + x[0] ** 2))
        return np.sum(by_keyword**2) + np.sum(np.interp(x, [-1.0, 0.0, 2.0], [0.0, 1.0, 3.0], None, None, 1.5 + x[4]))

    check_engines(f, np.array([0.3, 1.7, -0.4, 2.9, 0.8]))



def test_clip_bounds_given_as_min_and_max():
    """np.clip's min= and max= are keyword-only: the engines had refused bounds being differentiated
    given there; they pass them by the positions declared for them, after out."""
    from _array_checks import check_engines

    def f(x):
        y = np.clip(np.sin(x * 3), min=x[0] - 0.5, max=x[1] ** 2) + np.clip(x, max=np.cos(x[2]))
        return np.sum(y * np.arange(1.0, 5.0))

    check_engines(f, np.array([0.3, 0.7, -0.4, 0.9]))


LISTS_OF_VALUES_BEING_DIFFERENTIATED = {
    "interp by keyword": lambda x: np.sum(np.interp(x=x, xp=[-1.0, 0.0, 2.0], fp=[x[0], 1.0, x[1]]) ** 2),
    "interp points": lambda x: np.sum(np.interp(x, [-1.0, x[0] - 0.5, 2.0], [x[2], 1.0, 3.0])),
    "polyval": lambda x: np.sum(np.polyval([x[0], 1.0, x[1]], x)) + np.sum(np.polyval(x, [x[2], 0.5])),
    "choose": lambda x: np.sum(np.choose([0, 1, 0], [x, [x[1], 2.0, x[2] ** 2]]) ** 2),
    "where": lambda x: np.sum(np.where(x > 0, x, [x[0], 1.0, x[1] ** 2]) ** 2),
    "clip": lambda x: np.sum(np.clip(x, [x[2] + 1.0, -1.0, -1.0], 1.0) * np.arange(1.0, 4.0)),
}


@pytest.mark.parametrize("name", LISTS_OF_VALUES_BEING_DIFFERENTIATED)
def test_lists_of_values_being_differentiated(name):
    """A list holding values being differentiated, passed after the first argument: forward mode gives
    its rule the list's tangent as a structure of its entries' tangents, which np.interp's, np.polyval's
    and the elementwise rules' pushforwards had indexed as an array (a TypeError or a ValueError); np.clip's
    rules had compared a list of bounds with a number (a TypeError, under every engine)."""
    f, x = LISTS_OF_VALUES_BEING_DIFFERENTIATED[name], np.array([0.3, 1.7, -0.4])
    expected = crt.fd_jacobian(f, x)[0]
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-7, atol=1e-9)
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(f, x, engine=engine)[0], expected, rtol=1e-7, atol=1e-9)


# ----- edge cases found by fuzzing (tests/fuzz/fuzz_rules.py) ---------------------------------


@pytest.mark.parametrize("f", [np.ndarray.conj, np.ndarray.conjugate])
def test_conj_method_gives_what_the_method_gives(f):
    """A real 0-d array's conj() is a 0-d array (the ufunc's is a NumPy scalar)."""
    for x in [np.array(1.5), np.array(1.5 + 2j)]:
        assert type(cr.rrule(f, x)[0]) is type(f(x))
        assert type(cr.frule((cr.NoTangent(), np.array(1.0 + 0j)), f, x)[0]) is type(f(x))
        crt.test_rrule(f, x)
        crt.test_frule(f, x)


@pytest.mark.parametrize(
    "f, args, kwargs",
    [
        (np.sinh, (np.array(2),), {}),
        (np.subtract, (1.5, np.array(2)), {}),
        (np.multiply, (np.complex128(1 + 1j), np.array(2)), {}),
        (np.exp, (np.array([[1], [2]]),), {"dtype": np.complex128}),
    ],
)
def test_integer_arrays_get_real_cotangents_of_their_shape(f, args, kwargs, batched_pullback):
    """An integer array used arithmetically gets a real float array, a 0-d one for a 0-d array."""
    crt.test_rrule(f, *args, fkwargs=kwargs)
    batched_pullback(f, *args, kwargs=kwargs)
    _, back = cr.rrule(f, *args, **kwargs)
    dx = cr.unthunk(back(np.ones((2, 1), dtype=complex) if f is np.exp else 1.0)[-1])
    assert isinstance(dx, np.ndarray) and dx.dtype.kind == "f" and dx.shape == np.shape(args[-1])


def test_interp_differentiates_the_sample_points(batched_pullback):
    """Moving a segment's ends moves the points read from it: xp has a derivative too."""
    fp = np.array([0.3, -1.0, 2.0, 0.5, 1.5])
    for args in [(_XS, _XP, fp), (0.4, _XP, fp), (_XS, _XP, fp + 1j * np.arange(5.0)), (_XS, _XP, fp, -3.0, 4.0)]:
        crt.test_rrule(np.interp, *args)
        crt.test_frule(np.interp, *args)
        batched_pullback(np.interp, *args, rtol=1e-12)
    _, back = cr.rrule(np.interp, 0.25, np.array([0.0, 1.0]), np.array([0.0, 2.0]))
    assert back(1.0)[2].tolist() == [-1.5, -0.5]  # y = 2 (x - xp0) / (xp1 - xp0)
    assert back(1.0)[2] is not None and cr.rrule(np.interp, 0.25, np.array([0, 1]), fp[:2])[1](1.0)[2] == cr.NoTangent()


@pytest.mark.parametrize(
    "f, args, expected",
    [
        (np.log, (0.0,), (np.inf,)),
        (np.log2, (0.0,), (np.inf,)),
        (np.log10, (-0.0,), (-np.inf,)),
        (np.log1p, (-1.0,), (np.inf,)),
        (np.arctanh, (1.0,), (np.inf,)),
        (np.divide, (1.0, 0.0), (np.inf, -np.inf)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_partials_at_a_python_zero_divide_as_numpy_does(f, args, expected):
    """A partial dividing by a Python number equal to 0 had raised ZeroDivisionError (forward mode's
    scalar path and the reverse rules get Python floats as they are): it is NumPy's inf, as for
    NumPy's numbers and arrays."""
    with np.errstate(divide="ignore", invalid="ignore"):
        assert cr.gradient(f, *args) == expected
        assert cr.gradient(f, *(np.float64(a) for a in args)) == expected
        if len(args) == 1:  # (a zero tangent times an infinite partial is nan, as in any forward mode)
            assert cr.jvp(f, args, (1.0,))[1] == expected[0]


# ----- sign of complex input ------------------------------------------------------------------

_Z = np.array([3 + 4j, 1 - 1j, -0.5 + 2j, -2.0 - 0.1j])


def _fd_along_real_units(f, z):
    """Finite differences of ``f`` at complex ``z`` along each real unit: ``cr.jacobian``'s columns."""
    J = crt.fd_jacobian(f, z)  # (re, im) interleaved on both sides
    return J[0::2, 0::2] + 1j * J[1::2, 0::2]


@pytest.mark.parametrize("z", [np.complex128(1 - 2j), 0.6 - 0.8j, [3 + 4j, -1j]], ids=["numpy", "python", "list"])
def test_sign_of_complex_scalars_and_lists(z):
    crt.test_rrule(np.sign, z)
    crt.test_frule(np.sign, z)


@pytest.mark.parametrize(
    "args, kwargs",
    [
        (([0.3, 1.7, -1.4], -0.5, [1.0, 1.0, 0.5]), {}),  # lists get structural cotangents (Tangent[list])
        ((np.array([[0.3, 1.7, -1.4, 2.0]]),), {"a_min": [-1.0, 0.0, 0.5, 1.5], "a_max": 0.8}),
    ],
    ids=["positional", "keyword-bound"],
)
def test_clip_takes_lists_as_numpy_does(args, kwargs):
    crt.test_rrule(np.clip, *args, fkwargs=kwargs)
    crt.test_frule(np.clip, *args, fkwargs=kwargs)


def test_clip_of_a_list_of_entries_through_the_source_engine():
    def f(x):
        return np.sum(np.clip([x[0], x[1], x[2]], -0.5, 0.5) * np.array([1.0, 2.0, 3.0]))

    x = np.array([0.3, 1.2, -0.1])
    np.testing.assert_allclose(cr.gradient(f, x)[0], crt.fd_jacobian(f, x)[0], atol=1e-8)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_sign_jacobian_of_complex_input_matches_finite_differences(mode):
    J = cr.jacobian(np.sign, _Z, mode=mode)
    np.testing.assert_allclose(J, _fd_along_real_units(np.sign, _Z), atol=1e-9)
    np.testing.assert_allclose(J[0, 0], 0.128 - 0.096j)  # d sign(z) / d Re z at 3 + 4j


def test_sign_gradient_of_a_real_loss_of_complex_input():
    w = np.array([1 + 2j, -1j, 0.5, 2 - 1j])

    def loss(z):
        return np.sum(np.real(w * np.sign(z)))

    fd = crt.fd_jacobian(loss, _Z)[0]
    np.testing.assert_allclose(cr.gradient(loss, _Z)[0], fd[0::2] + 1j * fd[1::2], atol=1e-9)


def test_sign_derivative_is_zero_at_zero_where_unselected_and_for_real_input():
    z = np.array([0j, 1j, 2 + 0j])
    _, back = cr.rrule(np.sign, z)
    assert back(np.ones(3))[1][0] == 0
    _, back = cr.rrule(np.sign, _Z, where=np.array([True, False, True, False]), out=None)
    dz = back(np.ones(4))[1]
    assert dz[1] == 0 and dz[3] == 0 and dz[0] != 0
    _, dy = cr.frule(
        (cr.NoTangent(), np.ones(4) + 0j), np.sign, _Z, where=np.array([False, True, True, True]), out=None
    )
    assert dy[0] == 0 and dy[1] != 0
    x = np.array([0.5, -1.5, 2.5])
    assert cr.rrule(np.sign, x)[1](np.ones(3)) == (cr.NoTangent(), cr.NoTangent())
    assert cr.frule((cr.NoTangent(), np.ones(3)), np.sign, x)[1] == cr.NoTangent()
    for mode in ("forward", "reverse"):
        np.testing.assert_array_equal(cr.jacobian(np.sign, x, mode=mode), np.zeros((3, 3)))


def test_sign_batched_pullback_of_complex_input(batched_pullback):
    batched_pullback(np.sign, _Z)
    batched_pullback(np.sign, _Z.reshape(2, 2))


# ----- arcsin and arccos (and arcsinh, arccosh) on their branch cuts ---------------------------


def _on_axis(re, im):
    """A complex array of one entry, its parts set one by one: ``re + im * 1j`` would make the
    imaginary part ``-0.0`` a ``+0.0``."""
    z = np.zeros(1, dtype=np.complex128)
    z.real, z.imag = re, im
    return z


def _fd_along(f, z, d, h=1e-6):
    """The derivative of ``f`` at ``z`` along ``d`` (1 or 1j), moving only that part of ``z``: the
    other keeps its sign of zero, and so its side of a branch cut."""

    def moved(t):
        w = z.copy()
        if d == 1:
            w.real += t
        else:
            w.imag += t
        return w

    return (f(moved(h)) - f(moved(-h))) / (2 * h)


_CUT_POINTS = [(x, im) for x in (1.4, -1.4, 0.3) for im in (0.0, -0.0, 1e-9, -1e-9)]


@pytest.mark.parametrize("f", [np.arcsin, np.arccos, np.arccosh, np.arcsinh, np.arctanh])
@pytest.mark.parametrize("x, im", _CUT_POINTS, ids=lambda v: repr(v))
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_inverse_trig_derivatives_on_both_sides_of_the_cuts(f, x, im, mode):
    """The derivative along the cut (the real axis; the imaginary one for arcsinh) is the one of
    the side NumPy's value is on: ``x + 0j`` and ``x - 0j`` are on opposite sides for ``|x| > 1``."""
    d = 1j if f is np.arcsinh else 1
    z = _on_axis(im, x) if f is np.arcsinh else _on_axis(x, im)
    got = cr.jacobian(f, z, mode=mode)[0, 0] * d  # (the derivative along 1 is f'(z))
    np.testing.assert_allclose(got, _fd_along(f, z, d)[0], rtol=1e-6)


@pytest.mark.parametrize("f", [np.arcsin, np.arccos])
@pytest.mark.parametrize("z", [np.array([1.4 + 0.1j, -1.4 - 0.1j]), np.array([1.4 - 0.1j, -1.4 + 0.1j])])
def test_arcsin_arccos_rules_near_the_cuts(f, z):
    crt.test_rrule(f, z)
    crt.test_frule(f, z)


def test_arccos_of_a_real_point_past_one_as_complex():
    """The reported case: arccos(1.4 + 0j) is -0.87j, the upper side's value, whose slope is -1.02j."""
    z = np.array([1.4 + 0j])
    slope = -1j / math.sqrt(1.4**2 - 1)
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(cr.jacobian(np.arccos, z, mode=mode)[0, 0], slope)
        np.testing.assert_allclose(cr.jacobian(np.arcsin, z, mode=mode)[0, 0], -slope)
    # the gradient of Im arccos(z): d/dRe Im f + i d/dIm Im f = Im f' + i Re f' (one-sided across the cut)
    np.testing.assert_allclose(cr.gradient(lambda z: np.sum(np.imag(np.arccos(z))), z)[0], [slope.imag])


@pytest.mark.parametrize("b", [np.array(3), np.int64(3)])
def test_a_python_complex_cotangent_keeps_the_complex_outputs_precision(b, batched_pullback):
    """A Python complex cotangent of a complex128 output is complex128: times a float32 partial
    it would be complex64 (NumPy gives Python numbers no precision), so an integer input's
    cotangent would be float32 alone and float64 in a batch."""
    a = np.array(1.5, dtype=np.float32)
    _, back = cr.rrule(np.multiply, a, b, dtype=np.complex128)
    dy = 0.1234567891 + 0.3j
    db = cr.unthunk(back(dy)[2])
    assert np.asarray(db).dtype == np.float64
    assert float(db) == 1.5 * 0.1234567891
    batched_pullback(np.multiply, a, b, kwargs={"dtype": np.complex128})
