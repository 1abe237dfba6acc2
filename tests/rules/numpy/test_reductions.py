"""Rules of NumPy's reductions and scans, checked against finite differences from spec tables."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt


def arr(*shape, dtype=np.float64, lo=-2.0, hi=2.0, zeros=0, nans=0, ties=False):
    """A maker of a random array, optionally with some entries set to zero or NaN (first along the flat order)."""

    def make(rng):
        if np.dtype(dtype).kind == "c":
            x = rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)
        else:
            x = rng.uniform(lo, hi, shape)
        flat = x.reshape(-1)
        positions = rng.permutation(flat.size)
        flat[positions[:zeros]] = 0.0
        flat[positions[zeros : zeros + nans]] = np.nan
        return x.astype(dtype)

    return make


def fixed(value):
    return lambda rng: value


X = arr(2, 3, 4)
X32 = arr(3, 4, dtype=np.float32)
XC = arr(2, 3, dtype=np.complex128)
AXES = [{}, {"axis": 0}, {"axis": -1}, {"axis": (0, 2)}, {"axis": 1, "keepdims": True}, {"keepdims": True}]


def _family(fs, makers_list, kwargs_list, label=""):
    for f in fs:
        for makers in makers_list:
            for kwargs in kwargs_list:
                shape = "x".join(str(s) for s in np.shape(makers[0](np.random.default_rng(0))))
                tag = ",".join(f"{k}={v}" for k, v in kwargs.items())
                owner = getattr(f, "__self__", None)
                name = f"{owner.__name__}.{f.__name__}" if isinstance(owner, np.ufunc) else f.__qualname__
                yield pytest.param(f, makers, kwargs, id=f"{name}-{shape}{label}-{tag}")


def _cases():
    positive = arr(2, 3, 4, lo=0.5, hi=1.5)
    # sum, mean, prod, max, min on a 3-d array with every axis variant, as functions and methods
    yield from _family([np.sum, np.mean, np.ndarray.sum, np.ndarray.mean], [[X]], AXES)
    yield from _family([np.prod, np.ndarray.prod], [[positive]], AXES)
    yield from _family([np.max, np.min, np.amax, np.amin, np.ndarray.max, np.ndarray.min, np.ptp], [[X]], AXES)
    yield from _family([np.var, np.std, np.ndarray.var, np.ndarray.std], [[X]], AXES + [{"axis": 1, "ddof": 1}])
    yield from _family([np.var, np.std], [[X]], [{"correction": 1}])
    # float32 stays float32; dtype= asks for float64
    yield from _family([np.sum, np.mean, np.prod, np.max, np.var, np.std], [[X32]], [{}, {"axis": 1}])
    yield from _family([np.sum, np.mean, np.prod, np.cumsum, np.cumprod], [[X32]], [{"dtype": np.float64}])
    # complex where the function supports it
    yield from _family([np.sum, np.mean, np.prod, np.var, np.std, np.cumsum, np.cumprod], [[XC]], [{}, {"axis": 1}])
    # zeros in products: one zero per slice, several zeros, zeros everywhere
    for zeros in (1, 2, 5):
        yield from _family(
            [np.prod, np.cumprod], [[arr(3, 4, zeros=zeros)]], [{}, {"axis": 0}, {"axis": 1}], label=f"-{zeros}zeros"
        )
    yield from _family(
        [np.prod, np.cumprod], [[arr(3, 4, zeros=2, dtype=np.complex128)]], [{"axis": 1}], label="-zeros"
    )
    # scans
    yield from _family(
        [np.cumsum, np.cumprod, np.ndarray.cumsum, np.ndarray.cumprod], [[X]], [{}, {"axis": 0}, {"axis": -1}]
    )
    if hasattr(np, "cumulative_sum"):  # the array API's scans (NumPy 2.1), with the identity in front or not
        scans = [np.cumulative_sum, np.cumulative_prod]
        positive2d = arr(3, 4, lo=0.5, hi=1.5)
        options = [{"axis": 0}, {"axis": -1, "include_initial": True}, {"axis": 1, "dtype": np.float64}]
        yield from _family(scans, [[positive2d]], options)
        yield from _family(scans, [[arr(5, lo=0.5, hi=1.5)]], [{}, {"include_initial": True}], label="-1d")
        yield from _family(scans, [[X32]], [{"axis": 1, "include_initial": True}], label="-f32")
        yield from _family(scans, [[arr(3, 4, zeros=2)]], [{"axis": 1, "include_initial": True}], label="-zeros")
    # nan-functions skip NaNs
    for f in (np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanprod):
        yield from _family([f], [[arr(3, 4, nans=3)]], [{}, {"axis": 0}, {"axis": 1, "keepdims": True}], label="-nans")
    # where= for sum, mean, prod, max and min (with the initial= NumPy needs there), initial= for sum, prod and max
    mask = np.array([[True, False, True, True], [False, False, True, False], [True, True, True, True]])
    yield from _family([np.sum, np.mean, np.prod], [[arr(3, 4)]], [{"where": mask}, {"where": mask, "axis": 1}])
    yield from _family(
        [np.var, np.std],
        [[arr(3, 4)]],
        [
            {"where": mask},
            {"where": mask, "axis": 1, "keepdims": True},
            {"where": mask, "ddof": 1},
            {"where": mask, "axis": 0},
        ],
    )
    yield from _family([np.sum, np.max], [[arr(3, 4)]], [{"initial": 0.5}, {"initial": -5.0, "axis": 0}])
    yield from _family([np.prod, np.nanprod], [[arr(3, 4)]], [{"initial": 1.7}, {"initial": -0.5, "axis": 0}])
    yield from _family([np.prod], [[arr(3, 4, zeros=2)]], [{"initial": 2.5, "axis": 1}], label="-zeros")
    yield from _family(
        [np.max, np.min, np.nanmax, np.ndarray.min],
        [[arr(3, 4)]],
        [{"where": mask, "initial": -5.0}, {"where": mask, "initial": 5.0, "axis": 1}],
    )
    none = np.zeros((3, 4), bool)  # nothing takes part: the result is initial, whose derivative in x is 0
    yield from _family([np.max, np.prod], [[arr(3, 4)]], [{"where": none, "initial": 0.5, "axis": 0}], label="-none")
    # average, with and without weights (weights given by position get a cotangent)
    yield from _family([np.average], [[X]], [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}])
    weights1 = arr(3, lo=0.5, hi=1.5)
    weights_full = arr(2, 3, 4, lo=0.5, hi=1.5)
    yield from _family([np.average], [[X, fixed(1), weights1]], [{}], label="-weights1d")
    yield from _family([np.average], [[X, fixed(None), weights_full]], [{}], label="-weights-full")
    yield from _family(
        [np.average], [[X, fixed((0, 2)), arr(2, 4, lo=0.5, hi=1.5)]], [{"keepdims": True}], label="-w2d"
    )
    yield from _family([np.average], [[X]], [{"axis": 1, "weights": np.array([1.0, 2.0, 3.0])}], label="-wkw")
    # methods of ufuncs: axis 0 by default
    yield from _family([np.add.reduce, np.maximum.reduce, np.fmin.reduce], [[X]], [{}, {"axis": (0, 2)}])
    yield from _family([np.multiply.reduce], [[positive]], [{}, {"axis": -1, "keepdims": True}])
    yield from _family([np.add.accumulate, np.multiply.accumulate], [[X]], [{}, {"axis": 1}])
    yield from _family([np.logaddexp.accumulate], [[X], [X32]], [{}, {"axis": -1}])
    # segment sums, a segment of one entry where the next index is not larger
    segments = [[X, fixed([0, 2, 2, 1])], [X, fixed(np.array([1, 3]))], [X32, fixed([0, 3])]]
    yield from _family([np.add.reduceat], segments, [{"axis": -1}])
    yield from _family([np.add.reduceat], [[X, fixed([1])]], [{}])
    running = [np.maximum.accumulate, np.minimum.accumulate]
    yield from _family(running, [[X]], [{}, {"axis": 1}, {"axis": -1}])
    yield from _family(running, [[X32]], [{"axis": 1}], label="-float32")
    log_sums = [np.logaddexp.reduce, np.logaddexp2.reduce]
    yield from _family(log_sums, [[X]], [{}, {"axis": None}, {"axis": (0, 2), "keepdims": True}, {"axis": -1}])
    yield from _family(log_sums, [[arr(3, 4)]], [{"where": mask, "axis": 1, "initial": -np.inf}, {"initial": 0.5}])
    yield from _family(log_sums, [[X32]], [{"axis": 1}], label="-float32")
    # positional options, integer input, scalar input
    yield from _family([np.sum, np.ndarray.sum], [[X, fixed(1)]], [{}], label="-positional-axis")
    yield from _family([np.var], [[X, fixed(0), fixed(None), fixed(None), fixed(1.0)]], [{}], label="-positional-ddof")
    yield from _family(
        [np.sum, np.mean, np.prod, np.max, np.cumsum, np.var], [[fixed(np.array([[1, 2], [3, 4]]))]], [{}]
    )
    yield from _family([np.sum, np.prod, np.cumprod], [[fixed(1.5)]], [{}], label="-scalar")


CASES = list(_cases())


def _args(makers, seed=0):
    rng = np.random.default_rng(seed)
    return [m(rng) for m in makers]


def _diff(f, args):
    """The data (and positional weights of average, var's ddof) carry derivatives; the options do not."""
    mask = [True] + [False] * (len(args) - 1)
    if f is np.average and len(args) >= 3 and args[2] is not None:
        mask[2] = True
    if f is np.var and len(args) >= 5:
        mask[4] = True
    return mask


def _marked(f, args):
    return [a if d else crt.nondiff(a) for a, d in zip(args, _diff(f, args))]


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
    return t.astype(x.dtype) if isinstance(x, np.ndarray) and x.dtype.kind in "fc" else t


@pytest.mark.parametrize("f, makers, kwargs", CASES)
def test_batched_frule_matches_rows(f, makers, kwargs):
    """A batch of tangents (leading axis) gives, row by row, what one tangent at a time gives."""
    args = _args(makers)
    diff = _diff(f, args)
    rng = np.random.default_rng(3)
    batch = 3
    tangents = [_tangent(rng, a, batch) if d else cr.NoTangent() for a, d in zip(args, diff)]
    assert cr.frule.lookup(f, tuple(args)).batched
    y, dy = cr.frule((cr.NoTangent(), *tangents), f, *args, **kwargs)
    assert np.shape(dy) == (batch,) + np.shape(y)
    for b in range(batch):
        row = [t[b] if isinstance(t, np.ndarray) else t for t in tangents]
        _, expected = cr.frule((cr.NoTangent(), *row), f, *args, **kwargs)
        crt.assert_approx(dy[b], expected, rtol=1e-12 if np.result_type(dy) == np.float64 else 1e-5, atol=1e-12)


# ----- conventions ---------------------------------------------------------------------------


def _grad(f, x, dy, **kwargs):
    _, back = cr.rrule(f, x, **kwargs)
    return cr.unthunk(back(dy)[1])


TIES = [
    # (function, x, kwargs, cotangent, expected gradient): ties share the cotangent equally
    (np.max, np.array([1.0, 3.0, 3.0]), {}, 1.0, [0.0, 0.5, 0.5]),
    (np.min, np.array([[1.0, 1.0], [1.0, 2.0]]), {}, 3.0, [[1.0, 1.0], [1.0, 0.0]]),
    (np.amax, np.array([[2.0, 2.0], [0.0, 5.0]]), {"axis": 1}, np.array([1.0, 1.0]), [[0.5, 0.5], [0.0, 1.0]]),
    (np.max, np.array([1.0, np.nan, 2.0]), {}, 1.0, [0.0, 1.0, 0.0]),
    (np.nanmax, np.array([1.0, np.nan, 2.0, 2.0]), {}, 1.0, [0.0, 0.0, 0.5, 0.5]),
    (np.nanmin, np.array([[np.nan, np.nan], [1.0, 2.0]]), {"axis": 1}, np.array([1.0, 1.0]), [[0, 0], [1, 0]]),
    (np.min, np.array([[np.nan, np.nan], [1.0, 2.0]]), {"axis": 1}, np.array([1.0, 1.0]), [[0.5, 0.5], [1, 0]]),
    (np.ptp, np.array([1.0, 1.0, 4.0]), {}, 1.0, [-0.5, -0.5, 1.0]),
    (np.max, np.array([1.0, 2.0]), {"initial": 5.0}, 1.0, [0.0, 0.0]),
    # as many winners as slices, but a tie in one and initial= the maximum of the other
    (np.max, np.array([[5.0, 5.0], [1.0, 1.0]]), {"axis": 1, "initial": 3.0}, np.ones(2), [[0.5, 0.5], [0, 0]]),
    (np.nanmax, np.array([[5.0, 5.0], [np.nan, np.nan]]), {"axis": 1}, np.ones(2), [[0.5, 0.5], [0, 0]]),
    (np.std, np.array([2.0, 2.0, 2.0]), {}, 1.0, [0.0, 0.0, 0.0]),
    # products with zeros, exactly: one zero takes the product of the rest, two zeros give zero
    (np.prod, np.array([2.0, 0.0, 3.0]), {}, 1.0, [0.0, 6.0, 0.0]),
    (np.prod, np.array([0.0, 0.0, 3.0]), {}, 1.0, [0.0, 0.0, 0.0]),
    (np.prod, np.array([[0.0, 2.0], [3.0, 4.0]]), {"axis": 0}, np.array([1.0, 1.0]), [[3.0, 4.0], [0.0, 2.0]]),
    (np.cumprod, np.array([2.0, 0.0, 3.0, 0.0, 5.0]), {}, np.ones(5), [1.0, 8.0, 0.0, 0.0, 0.0]),
    (np.cumprod, np.array([0.0, 2.0, 3.0]), {}, np.ones(3), [9.0, 0.0, 0.0]),
]


@pytest.mark.filterwarnings("ignore:All-NaN slice")
@pytest.mark.parametrize("f, x, kwargs, dy, expected", TIES)
def test_conventions(f, x, kwargs, dy, expected):
    np.testing.assert_allclose(_grad(f, x, dy, **kwargs), expected, atol=1e-15)


def test_max_finds_its_winners_only_when_differentiated():
    x = np.array([[1.0, 4.0], [3.0, 2.0]])
    y, back = cr.rrule(np.max, x, axis=1)
    # inputs are not mutated in practice; here the mutation shows that the primal did not look for
    # the winners: the pullback finds none in row 0 (4 is gone), where the primal would have found 4
    x[0, 1] = 0.0
    np.testing.assert_array_equal(cr.unthunk(back(np.ones(2))[1]), [[0.0, 0.0], [1.0, 0.0]])


def test_tied_max_pushforward_averages():
    _, dy = cr.frule((cr.NoTangent(), np.array([1.0, 2.0, 4.0])), np.max, np.array([0.0, 3.0, 3.0]))
    assert dy == 3.0


def test_cumprod_zero_pushforward():
    # y = [2, 0, 0, 0] for x = [2, 0, 3, 4]: dy_i for i >= 1 is x_0 * x_2..x_i * dx_1
    _, dy = cr.frule((cr.NoTangent(), np.array([1.0, 1.0, 0.0, 0.0])), np.cumprod, np.array([2.0, 0.0, 3.0, 4.0]))
    np.testing.assert_allclose(dy, [1.0, 2.0, 6.0, 24.0])


def test_float32_cotangent_and_tangent():
    x = np.ones((2, 3), dtype=np.float32)
    for f in (np.sum, np.mean, np.prod, np.max, np.var, np.std, np.cumsum, np.cumprod):
        y, back = cr.rrule(f, x, axis=0)
        assert back(np.ones_like(y))[1].dtype == np.float32, f
        _, dy = cr.frule((cr.NoTangent(), np.ones_like(x)), f, x, axis=0)
        assert dy.dtype == np.float32, f


def test_integer_input_gets_float_cotangent():
    g = _grad(np.mean, np.array([1, 2, 3, 4]), 1.0)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 0.25)


def test_zero_and_thunked_cotangents():
    _, back = cr.rrule(np.sum, np.ones((2, 2)), axis=0)
    assert back(cr.ZeroTangent()) == (cr.NoTangent(), cr.ZeroTangent())
    np.testing.assert_allclose(back(cr.Thunk(lambda: np.array([1.0, 2.0])))[1], [[1.0, 2.0], [1.0, 2.0]])
    assert cr.frule((cr.NoTangent(), cr.ZeroTangent()), np.sum, np.ones(2))[1] == cr.ZeroTangent()


def test_pullback_does_not_mutate_its_cotangent():
    dy = np.array([1.0, 2.0, 3.0])
    for f in (np.cumsum, np.cumprod):
        _, back = cr.rrule(f, np.array([1.0, 0.0, 2.0]))
        back(dy)
        np.testing.assert_array_equal(dy, [1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: cr.rrule(np.sum, np.ones(2), out=np.empty(())), "out="),
        (lambda: cr.rrule(np.ndarray.sum, np.ones(2), 0, None, np.empty(())), "out="),
        (lambda: cr.rrule(np.var, np.ones(2), mean=np.ones(1)), "mean="),
        (lambda: cr.rrule(np.average, np.ones(2), returned=True), "returned=True"),
        (lambda: cr.frule((None, np.ones(2)), np.cumsum, np.ones(2), out=np.empty(2)), "out="),
    ],
)
def test_unsupported_arguments_are_refused(call, message):
    with pytest.raises(TypeError, match=message):
        call()


@pytest.mark.parametrize(
    "f, kwargs",
    [
        (np.sum, {"out": None}),
        (np.max, {"where": True}),
        (np.mean, {"keepdims": np._NoValue}),
        (np.ndarray.max, {"out": None, "initial": None}),
    ],
)
def test_default_values_of_unsupported_arguments_are_accepted(f, kwargs):
    x = np.array([[1.0, 4.0], [3.0, 2.0]])
    y, back = cr.rrule(f, x, **kwargs)
    assert np.array_equal(y, f(x, **kwargs))
    crt.assert_approx(back(1.0)[1], cr.rrule(f, x)[1](1.0)[1])


@pytest.mark.parametrize("f", [np.sum, np.ndarray.sum, np.max, np.amax, np.ndarray.max, np.min, np.ndarray.min])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_])
@pytest.mark.parametrize(
    "kwargs", [{}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"keepdims": True}, {"axis": None}]
)
def test_the_primal_is_numpys_result_with_its_dtype(f, dtype, kwargs):
    # an ndarray's sum/max/min call the ufunc reduction directly; it must be NumPy's call exactly
    # (its default axis is None, small integers and bools sum in the platform integer)
    x = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    y, _ = cr.rrule(f, x, **kwargs)
    want = f(x, **kwargs)
    assert type(y) is type(want) and np.shape(y) == np.shape(want) and y.dtype == want.dtype
    assert np.array_equal(y, want)


def test_the_primal_takes_the_sum_dtype():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    y, back = cr.rrule(np.sum, x, axis=1, dtype=np.float64)
    assert y.dtype == np.float64 and np.array_equal(y, np.sum(x, axis=1, dtype=np.float64))
    assert back(np.ones(2))[1].dtype == np.float32


def test_log_cumsum_exp_far_apart_and_at_minus_infinity():
    x = np.array([-800.0, 0.0, 700.0, 705.0])
    crt.test_rrule(np.logaddexp.accumulate, x)
    crt.test_frule(np.logaddexp.accumulate, x)
    _, back = cr.rrule(np.logaddexp.accumulate, np.array([-np.inf, -np.inf, 0.0, 1.0]))
    np.testing.assert_allclose(back(np.ones(4))[1], [0.0, 0.0, 1.0 + 1 / (1 + np.e), np.e / (1 + np.e)])


SCANS_IN_PROGRAMS = {
    "log partition": lambda z: np.sum(np.sin(np.logaddexp.accumulate(z))) + np.logaddexp.reduce(z),
    "segment sums": lambda z: np.sum(np.add.reduceat(z, [0, 2, 2, 4, 1]) ** 3),
}


@pytest.mark.parametrize("name", SCANS_IN_PROGRAMS)
def test_scans_through_the_engines(name):
    from _array_checks import check_engines

    check_engines(SCANS_IN_PROGRAMS[name], np.array([0.4, -1.2, 2.1, 0.3, 0.7]))


# ----- diff, ediff1d, trapezoid: several differentiated arguments -------------------------------------

R = np.random.default_rng(7)


def _r(*shape, dtype=np.float64):
    value = R.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * R.standard_normal(shape)
    return value.astype(dtype)


ND = crt.nondiff
SEVERAL = [
    (np.diff, (_r(5),), {}),
    (np.diff, (_r(3, 5), ND(2)), {}),
    (np.diff, (_r(4, 3), ND(1), ND(0)), {}),
    (np.diff, (_r(3, 4), ND(3), ND(-1)), {}),
    (np.diff, (_r(3, 4), ND(0)), {}),
    (np.diff, (_r(2, 4, dtype=np.float32),), {"axis": 0}),
    (np.diff, (_r(2, 4, dtype=np.complex128), ND(2)), {}),
    (np.diff, (_r(3, 4), ND(1), ND(1), 0.5, _r(3, 2)), {}),  # prepend (a scalar) and append, positional
    (np.diff, (_r(3, 4), ND(2), ND(0), _r(2, 4)), {}),
    (np.diff, (_r(3, 4),), {"prepend": 0.0, "append": np.ones((3, 1))}),  # by keyword: constants
    (np.ediff1d, (_r(5),), {}),
    (np.ediff1d, (_r(2, 3), _r(2), 0.5), {}),  # to_end, to_begin (a scalar) by position; ary flattened
    (np.ediff1d, (_r(3, 2), ND(None), _r(2, 2)), {}),
    (np.ediff1d, (_r(4), 1.5), {"to_begin": np.ones(2)}),  # by keyword: a constant
    (np.ediff1d, (_r(1), _r(2), _r(1)), {}),  # no differences left, only the ends
    (np.ediff1d, (np.zeros(0), _r(2), _r(1)), {}),
    (np.ediff1d, ([1.0, 3.0, 2.5], [0.5, 2.0]), {}),  # lists
    (np.ediff1d, (_r(4, dtype=np.float32), _r(2, dtype=np.float32)), {}),
    (np.ediff1d, (_r(4, dtype=np.float32), _r(2)), {}),  # to_end cast to ary's float32
    (np.ediff1d, (_r(2, 2, dtype=np.complex128), _r(3, dtype=np.complex128)), {}),
    (np.trapezoid, (_r(6),), {}),
    (np.trapezoid, (_r(3, 5),), {"axis": 0}),
    (np.trapezoid, (_r(3, 5), np.sort(_r(5))), {}),
    (np.trapezoid, (_r(5, 3), np.sort(_r(5)), ND(1.0), ND(0)), {}),
    (np.trapezoid, (_r(3, 5), np.sort(_r(3, 5), axis=1)), {}),
    (np.trapezoid, (_r(3, 5), ND(None), 0.3), {}),
    (np.trapezoid, (_r(4, dtype=np.float32),), {"dx": 0.5}),
    (np.trapezoid, (_r(3, 4, dtype=np.float32), _r(4, dtype=np.float32)), {}),
    (np.trapezoid, (_r(2, 4, dtype=np.complex128), np.sort(_r(4))), {}),
    (np.trapezoid, ([0.3, 1.2, -0.7], [0.2, -0.4, 1.1]), {}),  # lists, as NumPy takes them
    (np.trapezoid, ([[0.3, 1.2], [-0.7, 2.0]], ND(None), 0.5), {"axis": 0}),
]


def test_trapezoid_of_a_list_of_entries_through_the_source_engine():
    t = np.array([0.2, -0.4, 1.1])

    def f(x):
        return np.trapezoid([x[0], x[1] ** 2, x[2]], [x[0], 0.0, 1.0])

    x = np.array([0.3, 1.2, -0.7])
    np.testing.assert_allclose(cr.gradient(f, x)[0], crt.fd_jacobian(f, x)[0], atol=1e-8)
    np.testing.assert_allclose(cr.gradient(lambda x: np.trapezoid([x[0], x[1], x[2]], t), x)[0], [-0.3, 0.45, 0.75])


def _several_id(case):
    f, args, kwargs = case
    return f"{f.__name__}-" + "-".join(str(np.shape(crt_unwrap(a))) for a in args) + f"-{sorted(kwargs)}"


def crt_unwrap(a):
    return getattr(a, "value", a)


@pytest.mark.parametrize("case", SEVERAL, ids=_several_id)
def test_several_arguments_rrule(case):
    f, args, kwargs = case
    crt.test_rrule(f, *args, fkwargs=kwargs)


@pytest.mark.parametrize("case", SEVERAL, ids=_several_id)
def test_several_arguments_frule(case):
    f, args, kwargs = case
    crt.test_frule(f, *args, fkwargs=kwargs)


@pytest.mark.parametrize("case", SEVERAL, ids=_several_id)
def test_several_arguments_batched_frule(case):
    from _array_checks import Const, check_batched_frule

    f, args, kwargs = case
    args = [Const(crt_unwrap(a)) if a is not crt_unwrap(a) else a for a in args]
    check_batched_frule(f, *args, fkwargs=kwargs)


@pytest.mark.parametrize("case", [c for c in SEVERAL if c[0] is np.diff], ids=_several_id)
def test_diff_batched_pullback(case, batched_pullback):
    f, args, kwargs = case
    batched_pullback(f, *(crt_unwrap(a) for a in args), kwargs=kwargs, rtol=1e-5)


@pytest.mark.parametrize("case", [c for c in SEVERAL if c[0] is np.ediff1d], ids=_several_id)
def test_ediff1d_batched_pullback(case, batched_pullback):
    f, args, kwargs = case
    batched_pullback(f, *(crt_unwrap(a) for a in args), kwargs=kwargs, rtol=1e-5)


def test_ediff1d_pullback_splits_the_cotangent():
    # ediff1d([1, 4, 2], to_end=[5], to_begin=7) = [7, 3, -2, 5]
    y, back = cr.rrule(np.ediff1d, np.array([1.0, 4.0, 2.0]), np.array([5.0]), 7.0)
    np.testing.assert_array_equal(y, [7.0, 3.0, -2.0, 5.0])
    _, d_ary, d_end, d_begin = back(np.array([1000.0, 1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(d_ary, [-1.0, -9.0, 10.0])
    np.testing.assert_array_equal(d_end, [100.0])
    assert d_begin == 1000.0 and type(d_begin) is float


def _ediff1d_program(x, t):
    # to_begin and to_end by keyword, differentiated: the engines pass them by position
    d = np.ediff1d(x**2, to_begin=t[0] * x[0], to_end=np.sin(t))
    return np.sum(d**3) + d[1] * t[1]


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_ediff1d_gradients_through_the_engines(engine):
    x, t = _r(2, 3), _r(2)
    crt.check_grads(_ediff1d_program, (x, t), engine=engine)


def test_ediff1d_forward_jacobian_and_hessian():
    x = _r(5)

    def vector(x):
        return np.ediff1d(x**3, to_end=x[:2] ** 2, to_begin=np.cos(x[0]))

    np.testing.assert_allclose(cr.jacobian(vector, x, mode="forward"), crt.fd_jacobian(vector, x), rtol=1e-6, atol=1e-8)

    def scalar(x):
        return _ediff1d_program(x, x[:2])

    gradient = lambda v: cr.gradient(scalar, v)[0]  # noqa: E731
    for engine in ("source", "tape"):
        np.testing.assert_allclose(
            np.asarray(cr.hessian(scalar, x, engine=engine)), crt.fd_jacobian(gradient, x), rtol=1e-5, atol=1e-6
        )


def test_diff_pullback_is_the_adjoint_of_differencing():
    # diff([a0, a1, a2]) = [a1 - a0, a2 - a1]: the cotangent [1, 10] gives [-1, -9, 10]
    _, back = cr.rrule(np.diff, np.array([1.0, 4.0, 2.0]))
    np.testing.assert_array_equal(back(np.array([1.0, 10.0]))[1], [-1.0, -9.0, 10.0])
    _, back = cr.rrule(np.diff, np.array([1.0, 4.0, 2.0]), 1, -1, 5.0)
    assert back(np.array([1.0, 2.0, 3.0]))[4] == -1.0  # the prepended value enters once, negated


# ----- unwrap: the identity up to multiples of the period ------------------------------------

_PHASE = np.cumsum(np.random.default_rng(17).uniform(-1.0, 2.5, (3, 8)), axis=1)  # steps below pi: recovered
_WRAPPED = np.angle(np.exp(1j * _PHASE))
UNWRAPS = [
    (np.unwrap, (_WRAPPED,), {}),
    (np.unwrap, (_WRAPPED, ND(2.0)), {}),
    (np.unwrap, (_WRAPPED.T, ND(None), ND(0)), {}),
    (np.unwrap, (_WRAPPED,), {"period": 3.0, "axis": 0}),
    (np.unwrap, (_WRAPPED[0].astype(np.float32),), {}),
]


@pytest.mark.parametrize("case", UNWRAPS, ids=_several_id)
def test_unwrap(case, batched_pullback):
    from _array_checks import Const, check_batched_frule

    f, args, kwargs = case
    tol = {"rtol": 1e-3, "atol": 1e-3} if crt_unwrap(args[0]).dtype == np.float32 else {}
    crt.test_rrule(f, *args, fkwargs=kwargs, **tol)
    crt.test_frule(f, *args, fkwargs=kwargs, **tol)
    batched_pullback(f, *(crt_unwrap(a) for a in args), kwargs=kwargs)
    check_batched_frule(f, *(Const(crt_unwrap(a)) if a is not crt_unwrap(a) else a for a in args), fkwargs=kwargs)


def _unwrapped_energy(x):
    return np.sum(np.unwrap(np.angle(np.exp(1j * x)), axis=0) ** 2 * np.cos(x))


def test_unwrap_through_every_engine():
    x = _PHASE.T[:, :2].copy()
    crt.check_grads(_unwrapped_energy, (x,), order=2)
    expected = crt.fd_jacobian(_unwrapped_energy, x)[0].reshape(x.shape)
    for engine in ("source", "tape"):
        crt.assert_approx(cr.gradient(_unwrapped_energy, x, engine=engine)[0], expected, rtol=1e-6)
    crt.assert_approx(cr.jacobian(_unwrapped_energy, x, mode="forward").reshape(x.shape), expected, rtol=1e-6)


def test_unwrap_refuses_a_differentiated_period():
    """The period is a setting (a keyword: no position of the signature takes it), and the engines say so."""
    with pytest.raises((TypeError, cr.NoRuleError), match="period"):
        cr.gradient(lambda p: np.sum(np.unwrap(_WRAPPED[0], period=p)), 3.0)


# ----- median, quantile, percentile -----------------------------------------------------------

_DISTINCT = R.permutation(24).reshape(2, 3, 4) / 7.0  # no ties: the derivative exists everywhere
ORDER_STATISTICS = [
    (np.median, (_DISTINCT,), {}),
    (np.median, (_DISTINCT,), {"axis": 1}),
    (np.median, (_DISTINCT, ND(-1)), {"keepdims": True}),
    (np.median, (_DISTINCT,), {"axis": (0, 2)}),
    (np.median, (_DISTINCT[0].astype(np.float32),), {"axis": 0}),
    (np.quantile, (_DISTINCT, 0.3), {}),
    (np.quantile, (_DISTINCT, np.array([0.1, 0.55, 0.9])), {"axis": 2}),
    (np.quantile, (_DISTINCT, np.array([[0.2], [0.7]]), ND(1)), {"keepdims": True}),
    (np.quantile, (_DISTINCT,), {"q": 0.25, "axis": (0, 1)}),
    (np.quantile, (_DISTINCT[1].astype(np.float32), np.float32(0.4)), {"axis": 1}),
    (np.percentile, (_DISTINCT, 35.0), {"axis": 0}),
    (np.percentile, (_DISTINCT, np.array([10.0, 80.0])), {}),
]


@pytest.mark.parametrize("case", ORDER_STATISTICS, ids=_several_id)
def test_order_statistics(case):
    f, args, kwargs = case
    crt.test_rrule(f, *args, fkwargs=kwargs)
    crt.test_frule(f, *args, fkwargs=kwargs)


@pytest.mark.parametrize("case", ORDER_STATISTICS, ids=_several_id)
def test_order_statistics_batched_frule(case):
    from _array_checks import Const, check_batched_frule

    f, args, kwargs = case
    check_batched_frule(f, *(Const(crt_unwrap(a)) if a is not crt_unwrap(a) else a for a in args), fkwargs=kwargs)


def test_median_of_complex_entries_keeps_the_imaginary_part_of_its_cotangent():
    """NumPy's median takes complex entries (ordered by real part, then imaginary part); its
    cotangent had been cut to its real part, as if the output were real."""
    z = np.array([1 + 2j, 3 - 1j, 2 + 0.5j])
    zs = np.array([[1 + 2j, 3 - 1j, 2 + 0.5j, 0.5 + 3j], [-1 + 1j, 2 - 2j, 0.3 + 0.1j, 1.5 - 0.4j]])
    crt.test_rrule(np.median, z)
    crt.test_frule(np.median, z)
    crt.test_rrule(np.median, zs, fkwargs={"axis": 1})
    crt.test_frule(np.median, zs, fkwargs={"axis": 1})

    def g(z):
        return np.abs(np.median(z)) ** 2

    fd = crt.fd_jacobian(g, z)[0]  # columns: the real and imaginary part of each entry
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(g, z, engine=engine)[0], fd[0::2] + 1j * fd[1::2], atol=1e-6)
    np.testing.assert_allclose(cr.jacobian(g, z, mode="forward"), fd[0::2], atol=1e-6)  # (real directions)
    np.testing.assert_allclose(cr.jvp(g, (z,), (np.array([0, 0, 1j]),))[1], fd[5], atol=1e-6)


def test_median_and_quantile_conventions():
    # even length: the two middle entries share the cotangent; ties: tied entries keep their order
    # (a stable sort), so the median of [2, 5, 2] is the second 2
    _, back = cr.rrule(np.median, np.array([4.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(back(1.0)[1], [0.0, 0.0, 0.5, 0.5])
    _, back = cr.rrule(np.median, np.array([2.0, 5.0, 2.0]))
    np.testing.assert_array_equal(back(1.0)[1], [0.0, 0.0, 1.0])
    _, back = cr.rrule(np.quantile, np.array([3.0, 1.0, 2.0]), 0.25)
    dx, dq = back(1.0)[1:]
    np.testing.assert_allclose(dx, [0.0, 0.5, 0.5])
    assert dq == 2.0  # (n - 1) (s[1] - s[0])
    _, back = cr.rrule(np.quantile, np.array([3.0, 1.0, 2.0]), 1.0)
    assert back(1.0)[2] == 2.0  # at q = 1 the slope of the last segment
    _, back = cr.rrule(np.quantile, np.array([3.0, 1.0, 2.0, 4.0]), 0.5, method="weibull")
    dx, dq = back(1.0)[1:]
    np.testing.assert_allclose(dx, [0.5, 0.0, 0.5, 0.0])  # v = (n + 1) q - 1 = 1.5: halfway from s[1] to s[2]
    assert dq == 5.0  # (n + 1) (s[2] - s[1])
    _, back = cr.rrule(np.quantile, np.array([3.0, 1.0, 2.0, 4.0]), 0.1, method="weibull")
    assert back(1.0)[2] == 0.0  # v < 0: the smallest entry, which q does not move


# ----- every method of quantile and percentile -------------------------------------------------

QUANTILE_METHODS = [
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "linear",
    "median_unbiased",
    "normal_unbiased",
    "lower",
    "higher",
    "nearest",
    "midpoint",
]
# q away from every method's jumps and kinks for these n (4, 24, 6 and 3 entries): finite differences in q are
# the slope (0.07 of 4 entries: before the first for some methods, which q does not move there)
_QUANTILE_CASES = [
    (np.quantile, (_DISTINCT, np.array([0.07, 0.55, 0.93])), {"axis": 2}),
    (np.quantile, (_DISTINCT, 0.45), {}),
    (np.percentile, (_DISTINCT, 63.0), {"axis": (0, 1), "keepdims": True}),
    (np.percentile, (_DISTINCT, np.array([[12.0], [71.0]])), {"axis": 1}),
    (np.quantile, (_DISTINCT[1].astype(np.float32), np.float32(0.3)), {"axis": 1}),
]


@pytest.mark.parametrize("method", QUANTILE_METHODS)
@pytest.mark.parametrize("case", _QUANTILE_CASES, ids=_several_id)
def test_every_quantile_method(case, method, batched_pullback):
    from _array_checks import check_batched_frule

    f, args, kwargs = case
    kwargs = {**kwargs, "method": method}
    y, _ = cr.rrule(f, *args, **kwargs)
    np.testing.assert_array_equal(y, f(*args, **kwargs))
    crt.test_rrule(f, *args, fkwargs=kwargs)
    crt.test_frule(f, *args, fkwargs=kwargs)
    batched_pullback(f, *args, kwargs=kwargs, rtol=1e-6)
    check_batched_frule(f, *args, fkwargs=kwargs)


def _quantiles_at_the_jumps(n):
    """q at every position where one method or another jumps or changes its rounding, with a few in between."""
    qs = {k / d for d in (n - 1, n, n + 1, 2 * n) if d for k in range(d + 1)}
    return np.array(sorted(qs | {0.0, 1.0, 0.123, 0.5, 0.77}))


@pytest.mark.parametrize("method", QUANTILE_METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_quantile_rules_select_the_entries_numpy_selects(method, dtype):
    """The rules' weights of the sorted entries are NumPy's own: the pushforward of a along a itself
    is NumPy's quantile, at q where one entry gives way to the next (n q or (n - 1) q an integer or
    a half), for percentiles (q / 100, rounded as NumPy rounds it) and rows with NaNs too."""
    rng = np.random.default_rng(3)
    for n in range(1, 10):
        q = _quantiles_at_the_jumps(n).astype(dtype)
        x = rng.permutation(n) + 1.0  # (integers: a selected entry is exact)
        with_nans = np.insert(x, [0, n // 2], np.nan)
        for f, data, at in [
            (np.quantile, x, q),
            (np.percentile, x, q * dtype(100)),
            (np.nanquantile, with_nans, q),
            (np.nanpercentile, with_nans, q * dtype(100)),
        ]:
            y, dy = cr.frule((cr.NoTangent(), np.nan_to_num(data), cr.ZeroTangent()), f, data, at, method=method)
            np.testing.assert_array_equal(y, f(data, at, method=method))
            np.testing.assert_allclose(dy, y, rtol=1e-6 if dtype == np.float32 else 1e-14, err_msg=f"{f.__name__} {n}")


_WEIGHTS = R.uniform(0.1, 2.0, _DISTINCT.shape)
_WEIGHTED = [
    (np.quantile, (_DISTINCT, np.array([0.1, 0.55, 0.9])), {"weights": _WEIGHTS}),
    (np.quantile, (_DISTINCT, 0.3), {"axis": 1, "weights": _WEIGHTS, "keepdims": True}),
    (np.percentile, (_DISTINCT, np.array([20.0, 64.0])), {"axis": 2, "weights": np.array([0.0, 2.0, 0.5, 1.0])}),
    (np.percentile, (_DISTINCT, 45.0), {"axis": (0, 2), "weights": _WEIGHTS}),
    (np.nanquantile, (_DISTINCT, np.array([0.2, 0.8])), {"axis": 0, "weights": _WEIGHTS}),
    (np.quantile, (_DISTINCT[0].astype(np.float32), np.float32(0.6)), {"axis": 0, "weights": _WEIGHTS[0, :, 0]}),
]


@pytest.mark.parametrize("case", _WEIGHTED, ids=_several_id)
def test_weighted_quantiles(case, batched_pullback):
    """With weights (method='inverted_cdf', the one NumPy weighs) the output is the entry at which
    the weights' cumulative share reaches q: it moves with that entry, and with neither q nor the
    weights (settings: a leading zero weight and all)."""
    from _array_checks import check_batched_frule

    f, args, kwargs = case
    kwargs = {**kwargs, "method": "inverted_cdf"}
    y, back = cr.rrule(f, *args, **kwargs)
    np.testing.assert_array_equal(y, f(*args, **kwargs))
    crt.test_rrule(f, *args, fkwargs=kwargs)
    crt.test_frule(f, *args, fkwargs=kwargs)
    batched_pullback(f, *args, kwargs=kwargs)
    check_batched_frule(f, *args, fkwargs=kwargs)
    assert not np.any(back(np.ones(np.shape(y)))[2])


def test_weighted_quantiles_select_the_entries_numpy_selects():
    rng = np.random.default_rng(4)
    for n in range(1, 9):
        x = rng.permutation(n) + 1.0
        for weights in (rng.uniform(0.1, 1.0, n), rng.integers(0, 3, n) + np.eye(n)[-1], np.ones(n)):
            steps = np.cumsum(weights[np.argsort(x)]) / np.sum(weights)  # (q at a step: the entry reaching it)
            q = np.clip(np.concatenate([_quantiles_at_the_jumps(n), steps]), 0.0, 1.0)
            options = {"method": "inverted_cdf", "weights": weights}
            for f, at in [(np.quantile, q), (np.percentile, 100 * q), (np.quantile, q.astype(np.float32))]:
                y, dy = cr.frule((cr.NoTangent(), x, cr.ZeroTangent()), f, x, at, **options)
                np.testing.assert_array_equal(dy, y)
                np.testing.assert_array_equal(y, f(x, at, **options))


def order_statistics_of_each_method(x, q):
    total = np.sum(np.quantile(x, np.array([0.2, 0.6]) + q, axis=1, method="hazen") ** 2)
    total += np.percentile(x, 100 * q, method="median_unbiased") * np.quantile(x, 0.62, method="nearest")
    total += np.sum(np.quantile(x, 0.7 - q, axis=0, method="averaged_inverted_cdf") * x[0])
    total += np.sum(np.percentile(x, [30.0, 65.0], axis=1, method="inverted_cdf", weights=_WEIGHTS[0]) ** 2)
    return total * np.quantile(x, q, method="weibull")


def test_every_engine_differentiates_each_method():
    x, q = _DISTINCT[0] * 1.3, 0.11
    checks = crt.check_grads(order_statistics_of_each_method, (x, q), order=2)
    assert any(c.startswith("reverse[tape]") for c in checks) and any(c.startswith("forward") for c in checks)
    expected = crt.fd_jacobian(lambda v: order_statistics_of_each_method(v, q), x)[0].reshape(x.shape)
    for engine in ("source", "tape"):
        crt.assert_approx(cr.gradient(order_statistics_of_each_method, x, q, engine=engine)[0], expected, rtol=1e-6)
    forward = cr.jacobian(lambda v: order_statistics_of_each_method(v, q), x, mode="forward")
    crt.assert_approx(forward.reshape(x.shape), expected, rtol=1e-6)


def weighted_by_their_own_squares(x):
    return np.sum(np.quantile(x**2, [0.3, 0.8], axis=1, method="inverted_cdf", weights=x**2 + 0.5) * x[:, 0])


def test_weights_being_differentiated_carry_no_derivative():
    """Weights that depend on the differentiated values move the output nowhere: each engine (and
    the Hessian's) passes them to the rules as plain values, as declared options, where they had
    refused them as keyword arguments no position of the signature takes."""
    x = _DISTINCT[0] - 0.8
    checks = crt.check_grads(weighted_by_their_own_squares, (x,), order=2)
    assert any(c.startswith("reverse[tape]") for c in checks) and any(c.startswith("forward") for c in checks)


def test_what_numpy_rejects_stays_an_error():
    """The median has no method; NumPy weighs the inverted_cdf method only."""
    with pytest.raises(TypeError, match="method="):
        cr.rrule(np.median, np.ones(3), method="nearest")
    with pytest.raises(ValueError, match="Only method 'inverted_cdf' supports weights"):
        cr.rrule(np.quantile, np.ones(3), 0.5, weights=np.ones(3))


# ----- edge cases found by fuzzing (tests/fuzz/fuzz_rules.py) ---------------------------------


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((np.ones((1, 0), np.float32),), {"dx": 0.5, "axis": 1}),  # no samples: no trapezoids
        ((np.ones((2, 0)), np.ones(0)), {}),  # no samples at no points
        ((np.ones((2, 0)), np.ones((2, 0))), {}),
    ],
)
def test_trapezoid_of_no_samples(args, kwargs, batched_pullback):
    crt.test_rrule(np.trapezoid, *args, fkwargs=kwargs, rtol=1e-3, atol=1e-3)
    crt.test_frule(np.trapezoid, *args, fkwargs=kwargs, rtol=1e-3, atol=1e-3)
    batched_pullback(np.trapezoid, *args, kwargs=kwargs)


@pytest.mark.parametrize(
    "x, kwargs",
    [
        (np.array([1.0, 2.5]), {"n": 0, "prepend": 0.5}),  # n=0 is x itself: NumPy ignores prepend/append
        (np.array([1.0, 2.5]), {"n": 0, "append": np.ones(2)}),
        (np.ones(0), {"n": 1}),  # differencing past the length leaves nothing
        (np.ones(1), {"n": 2}),
        (np.ones((2, 1)), {"n": 3, "axis": 1, "prepend": 0.5}),
    ],
)
def test_diff_with_nothing_left_to_difference(x, kwargs, batched_pullback):
    crt.test_rrule(np.diff, x, fkwargs=kwargs)
    crt.test_frule(np.diff, x, fkwargs=kwargs)
    batched_pullback(np.diff, x, kwargs=kwargs)


@pytest.mark.parametrize("f", [np.sum, np.prod, np.max, np.add.reduce, np.multiply.reduce, np.maximum.reduce])
@pytest.mark.parametrize("kwargs", [{"axis": 0}, {"axis": -1, "keepdims": True}])
@pytest.mark.parametrize("x", [np.array(2.0), np.float64(2.0)], ids=["0d", "scalar"])
def test_reductions_of_a_number_over_its_axis(f, kwargs, x, batched_pullback):
    """NumPy reduces a number over axis 0 (or -1): nothing to reduce, its tangent passes through."""
    crt.test_frule(f, x, fkwargs=kwargs)
    crt.test_rrule(f, x, fkwargs=kwargs)
    batched_pullback(f, x, kwargs=kwargs)


@pytest.mark.parametrize("f", [np.cumsum, np.cumprod])
def test_scan_of_a_number_over_its_axis(f):
    crt.test_frule(f, np.array(2.0), fkwargs={"axis": 0})
    crt.test_rrule(f, np.array(2.0), fkwargs={"axis": 0})


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's: the median of nothing is NaN)
@pytest.mark.parametrize(
    "x, kwargs", [(np.ones(0, int), {"axis": -1, "keepdims": True}), (np.ones((2, 0)), {"axis": 1})]
)
def test_median_of_no_entries_is_nan_with_an_empty_cotangent(x, kwargs, batched_pullback):
    y, back = cr.rrule(np.median, x, **kwargs)
    np.testing.assert_array_equal(y, np.median(x, **kwargs))
    assert np.shape(cr.unthunk(back(np.ones(np.shape(y)))[1])) == x.shape
    batched_pullback(np.median, x, kwargs=kwargs)


def test_a_running_maximum_sends_each_cotangent_to_the_entry_that_holds_it():
    x = np.array([1.0, 3.0, 2.0, 3.0, 5.0, 4.0])  # a tie at 3.0: the later entry holds the record from there
    y, back = cr.rrule(np.maximum.accumulate, x)
    np.testing.assert_array_equal(y, [1.0, 3.0, 3.0, 3.0, 5.0, 5.0])
    np.testing.assert_array_equal(back(np.arange(1.0, 7.0))[1], [1.0, 2.0 + 3.0, 0.0, 4.0, 5.0 + 6.0, 0.0])
    _, dy = cr.frule((cr.NoTangent(), np.arange(1.0, 7.0)), np.minimum.accumulate, -x)
    np.testing.assert_array_equal(dy, [1.0, 2.0, 2.0, 4.0, 5.0, 5.0])


_CAST_EXTREMA = [np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce]
_CAST_EXTREMA += [np.maximum.accumulate, np.minimum.accumulate]


@pytest.mark.parametrize("f", _CAST_EXTREMA, ids=lambda f: f"{f.__self__.__name__}.{f.__name__}")
@pytest.mark.parametrize(
    "x, kwargs",
    [(np.array([0.3, 2.1, 5.7]), {}), (np.array([[0.3, 2.1, 5.7], [1.1, 0.2, 0.4]]), {"axis": 1})],
    ids=["1d", "2d-axis1"],
)
def test_extrema_cast_by_dtype_pick_the_entries_numpy_picked(f, x, kwargs):
    """With dtype=np.float32 NumPy compares the float64 entries cast to float32: no entry equals the
    float32 result, which had left no winner (zero derivatives; a running one's all on entry 0)."""
    kwargs = {**kwargs, "dtype": np.float32}
    crt.test_rrule(f, x, fkwargs=kwargs)
    crt.test_frule(f, x, fkwargs=kwargs)

    def g(x):
        return np.sum(np.sin(f(x, **kwargs)))

    expected = crt.fd_jacobian(g, x)[0].reshape(x.shape)
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(g, x, engine=engine)[0], expected, rtol=1e-4, atol=1e-4)
    jacobian = cr.jacobian(lambda x: f(x, **kwargs), x, mode="forward")
    fd = crt.fd_jacobian(lambda x: f(x, **kwargs), x)
    np.testing.assert_allclose(np.reshape(jacobian, fd.shape), fd, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("f", [np.maximum.accumulate, np.minimum.accumulate], ids=["maximum", "minimum"])
@pytest.mark.parametrize("x, kwargs", [(np.zeros(0), {}), (np.zeros((3, 0)), {"axis": 1})], ids=["0", "3x0"])
def test_running_extrema_of_no_entries(f, x, kwargs, batched_pullback):
    """An empty scan's pullback had reshaped its cotangent to rows of length 0 with -1 (an error)."""
    crt.test_rrule(f, x, fkwargs=kwargs)
    crt.test_frule(f, x, fkwargs=kwargs)
    batched_pullback(f, x, kwargs=kwargs)

    def g(x):
        return np.sum(f(x, **kwargs))

    for engine in ("source", "tape"):
        np.testing.assert_array_equal(cr.gradient(g, x, engine=engine)[0], np.zeros(x.shape))
    assert np.size(cr.jacobian(lambda x: f(x, **kwargs), x, mode="forward")) == 0


def test_log_sums_of_exponentials_weigh_each_entry_by_its_softmax_share():
    x = np.array([[0.0, np.log(3.0)], [-np.inf, -np.inf]])  # shares 1/4 and 3/4; an empty sum
    y, back = cr.rrule(np.logaddexp.reduce, x, axis=1)
    np.testing.assert_allclose(y, [np.log(4.0), -np.inf])
    np.testing.assert_allclose(back(np.array([2.0, 1.0]))[1], [[0.5, 1.5], [0.0, 0.0]])  # no NaN from -inf - -inf
    _, dy = cr.frule((cr.NoTangent(), np.array([4.0, 8.0])), np.logaddexp2.reduce, np.array([1.0, 1.0]))
    np.testing.assert_allclose(dy, 6.0)  # equal shares of 1/2


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_log_sum_of_exponentials_through_the_engines(engine):
    x = np.array([[0.3, -1.2, 2.0], [1.0, 0.5, -0.5]])

    def f(x):
        return np.sum(np.logaddexp.reduce(x * x, axis=1) ** 2)

    lse = np.logaddexp.reduce(x * x, axis=1, keepdims=True)
    shares = np.exp(x * x - lse)
    np.testing.assert_allclose(cr.gradient(f, x, engine=engine)[0], 2 * lse * shares * 2 * x, rtol=1e-12)
    assert crt.check_grads(f, (x,), modes=("reverse",), order=1, engine=engine)  # raises on a mismatch
    rows = cr.jacobian(lambda x: np.logaddexp.reduce(x, axis=1), x, mode="forward")
    np.testing.assert_allclose(rows[0, 0], np.exp(x[0] - np.logaddexp.reduce(x[0])), rtol=1e-12)
    p = np.exp(x[0] - np.logaddexp.reduce(x[0]))
    hessian = cr.hessian(lambda v: np.logaddexp.reduce(v), x[0], engine=engine)
    np.testing.assert_allclose(hessian, np.diag(p) - np.outer(p, p), atol=1e-12)  # softmax's Jacobian


def _by_position(f, value, x, *options):
    """A reduction's arguments with ``value`` (its initial= or ddof) given by its position after
    ``options``, the only one differentiated besides ``x`` (as the engines pass one being differentiated)."""
    return f, (x, *map(crt.nondiff, options), value)


_FOUR = np.array([[0.3, -1.2, 0.8, 1.9], [1.1, 0.4, -0.7, 0.2], [-0.5, 1.6, 0.9, -1.4]])
_NAN = np.where(np.eye(3, 4, dtype=bool), np.nan, _FOUR)
INITIAL_CASES = [  # max's initial= exceeds some slices' maxima and not others'
    _by_position(np.sum, 0.7, _FOUR, 1, None, None, False),
    _by_position(np.nansum, -0.3, _NAN, 0, None, None, True),
    _by_position(np.prod, -1.3, _FOUR, 0, None, None, False),
    _by_position(np.nanprod, 0.6, _NAN, None, None, None, False),
    _by_position(np.max, 0.95, _FOUR, 0, None, False),
    _by_position(np.min, -0.8, _FOUR, 1, None, True),
    _by_position(np.nanmax, 1.3, _NAN, 1, None, False),
    _by_position(np.ndarray.sum, 2.5, _FOUR, None, None, None, False),
    _by_position(np.add.reduce, 0.7, _FOUR, 0, None, None, False),
    _by_position(np.multiply.reduce, 1.5, _FOUR, 1, None, None, False),
    _by_position(np.maximum.reduce, 1.0, _FOUR, 0, None, None, False),
    _by_position(np.fmin.reduce, -0.9, _NAN, 1, None, None, False),
    _by_position(np.logaddexp.reduce, 0.3, _FOUR, 1, None, None, False),
]
DDOF_CASES = [
    _by_position(np.var, 1.3, _FOUR, 1, None, None),
    _by_position(np.std, 0.5, _FOUR, None, None, None),
    _by_position(np.nanvar, 0.6, _NAN, 0, None, None),
    _by_position(np.nanstd, 1.5, _NAN, 1, None, None),
    _by_position(np.ndarray.var, 2.5, _FOUR, (0, 1), None, None),
]


@pytest.mark.parametrize("f, args", INITIAL_CASES, ids=[str(i) for i in range(len(INITIAL_CASES))])
def test_initial_given_by_position_is_differentiated(f, args):
    """``initial=`` takes part in every slice's reduction: added to a sum (and a log-sum-exp),
    multiplied into a product, the extremum where it wins. The rules had given it no cotangent and no
    tangent (``np.sum(x, initial=x[0])``'s gradient had been 1 at x[0]), and the ufuncs' reduce
    methods, without a signature, had been refused an ``initial=`` being differentiated."""
    crt.test_rrule(f, *args)
    crt.test_frule(f, *args)


@pytest.mark.parametrize("f, args", DDOF_CASES, ids=[str(i) for i in range(len(DDOF_CASES))])
def test_ddof_given_by_position_is_differentiated(f, args):
    """var and std divide the sum of squares by n - ddof, which a ddof being differentiated moves;
    the rules had given it no cotangent and no tangent."""
    crt.test_rrule(f, *args)
    crt.test_frule(f, *args)


def test_ddof_through_the_engines():
    from _array_checks import check_engines

    def f(x):
        spread = np.var(x, axis=0, ddof=x[0, 0] ** 2) @ np.arange(1.0, 4.0) + np.std(x, None, None, None, 1 + x[1, 2])
        return spread + np.sum(np.nanstd(np.where(x > 0, x, np.nan), axis=1, ddof=x[2, 2] * 0.5))

    check_engines(f, np.array([[0.3, -1.2, 0.8], [1.1, 0.4, 0.9], [-0.5, 1.6, 0.7]]))


def test_initial_through_the_engines():
    """An ``initial=`` being differentiated, given by keyword (to the ndarray methods and the ufuncs' reduce
    too, whose signatures hide it), through every engine and the Hessians."""

    def f(x):
        total = np.sum(x**2, axis=0, initial=x[0, 0]) @ np.arange(1.0, 4.0)
        top = np.max(x, axis=1, initial=x[1, 2] ** 2) + np.min(x, initial=x[0, 1] - 1.0)
        positive = np.where(x > 0, x**2, np.nan)
        masked = np.prod(x, where=x > 0, initial=x[2, 1]) + np.nanmax(positive, initial=x[1, 2] + 2.0)
        methods = (x * 2).sum(initial=x[0, 2]) + x.max(initial=x[2, 1] * 2) + x.prod(axis=0, initial=x[1, 1]) @ x[0]
        ends = np.maximum.reduce(x.ravel(), initial=x[2, 2] * 3) + np.minimum.reduce(
            x.ravel(), initial=x[1, 0] * 0.1, where=x.ravel() > 0
        )
        return total + np.sum(top * np.arange(3.0)) + masked + methods + ends

    from _array_checks import check_engines

    check_engines(f, np.array([[0.3, -1.2, 0.8], [1.1, 0.4, 0.9], [-0.5, 1.6, 0.7]]))


def test_masked_reductions_through_the_engines():
    """A masked maximum (NumPy's idiom ``np.max(x, where=mask, initial=-np.inf)``), a masked product
    and masked moments, which had been refused, against finite differences to second order."""
    mask = np.array([[True, False, True], [False, True, True]])

    def f(x):
        top = np.max(x, axis=1, where=mask, initial=-np.inf)
        spread = np.sum(np.std(x, axis=1, where=mask)) + np.var(x, where=mask, ddof=1)
        return np.sum(top**2) + np.prod(x, where=mask, initial=1.5) + np.min(x, where=~mask, initial=np.inf) + spread

    x = np.array([[0.3, 1.2, -0.4], [0.9, -1.1, 0.5]])
    expected = crt.fd_jacobian(f, x)[0].reshape(x.shape)
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(f, x, engine=engine)[0], expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-7, atol=1e-9)
    H = cr.hessian(f, x)
    np.testing.assert_allclose(H, crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x).reshape(H.shape), atol=1e-7)


def test_masked_moments_keep_float32():
    """The masked var/std counted their entries in int64, which promoted a float32 result to float64."""
    x = np.linspace(-1.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    mask = np.array([[True, False, True], [True, True, False]])
    for f in (np.var, np.std):
        crt.test_rrule(f, x, fkwargs={"where": mask, "axis": 1})
        crt.test_frule(f, x, fkwargs={"where": mask, "ddof": 1})


@pytest.mark.parametrize("f", [np.quantile, np.percentile, np.nanquantile, np.nanpercentile])
def test_quantiles_at_a_list_or_tuple_of_q(f):
    """q a tuple of numbers, or a list of values being differentiated: forward Jacobians in chunks
    (their tangents a Tangent[list] of batches), reverse Jacobians and Hessians (a list of dual numbers)."""
    x, scale = _DISTINCT[0] * 1.3, 100.0 if "percent" in f.__name__ else 1.0

    def at_tuple(x):
        return f(x, (0.25 * scale, 0.75 * scale), axis=1)

    def at_list(x):
        return f(x, [scale * x[0, 0] ** 2 / (1 + x[0, 0] ** 2), scale * (0.5 + 0.1 * np.tanh(x[1, 1]))], axis=0)

    for g in (at_tuple, at_list):
        expected = crt.fd_jacobian(g, x)
        for J in (cr.jacobian(g, x, mode="forward", chunk_size=5), cr.jacobian(g, x, mode="reverse")):
            crt.assert_approx(J.reshape(expected.shape), expected, rtol=1e-6)
        for engine in ("source", "tape"):
            gradient = cr.gradient(lambda v: np.sum(g(v) ** 3), x, engine=engine)[0]
            crt.assert_approx(gradient, crt.fd_jacobian(lambda v: np.sum(g(v) ** 3), x)[0].reshape(x.shape), rtol=1e-6)
        hessian = cr.hessian(lambda v: np.sum(g(v) ** 3), x)
        expected = crt.fd_jacobian(lambda v: cr.gradient(lambda w: np.sum(g(w) ** 3), v)[0], x)
        crt.assert_approx(hessian.reshape(expected.shape), expected, rtol=1e-5)
