"""Rules for ``np.fft``: every transform's rrule and frule against finite differences (real and complex
inputs, single precision kept, every norm, ``n``/``s`` padding and truncating, several axes, odd and
even lengths), their batched pullbacks and pushforwards against the same rule row by row, and the
engines (both reverse engines and forward mode) on functions built from them."""

import itertools

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.core import batch_declines
from chainrules.reverse import source, trace

RNG = np.random.default_rng(2024)
NORMS = (None, "backward", "ortho", "forward")


def real(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def cplx(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def check(f, x, kwargs):
    crt.test_rrule(f, x, fkwargs=kwargs)
    crt.test_frule(f, x, fkwargs=kwargs)


def _id(v):
    if isinstance(v, np.ndarray):
        return f"{v.dtype}{list(v.shape)}"
    if callable(v):
        return v.__name__
    return repr(v)


# ----- 1-D transforms ---------------------------------------------------------------------------

EVEN, ODD = real(2, 6), real(3, 5)
EVEN_Z, ODD_Z = cplx(3, 6), cplx(4, 5)
#: options for one axis: default, zero-padding, truncation, another axis, an odd n on axis 0
ONE_D_OPTIONS = [{}, {"n": 9}, {"n": 4}, {"axis": 0}, {"n": 5, "axis": -2}]
COMPLEX_IN = (np.fft.fft, np.fft.ifft, np.fft.irfft, np.fft.hfft)  # rfft and ihfft take real inputs only
ONE_D = [np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.hfft, np.fft.ihfft]


def _one_d_cases():
    """Every function with every norm and option; the inputs (even and odd lengths, real and, where
    the function takes one, complex) taken in turn, so that each meets several norms and options."""
    for f in ONE_D:
        inputs = [EVEN, ODD] + ([EVEN_Z, ODD_Z] if f in COMPLEX_IN else [])
        for i, (norm, options) in enumerate(itertools.product(NORMS, ONE_D_OPTIONS)):
            x = inputs[(i + i // len(inputs)) % len(inputs)]
            yield f, x, {**options, "norm": norm} if norm is not None else options


@pytest.mark.parametrize("f, x, kwargs", list(_one_d_cases()), ids=_id)
def test_one_d_transforms(f, x, kwargs):
    check(f, x, kwargs)


@pytest.mark.parametrize("f", ONE_D, ids=_id)
@pytest.mark.parametrize("n", [None, 6, 7, 1, 2])
def test_real_transforms_at_small_and_odd_lengths(f, n):
    """The DC and Nyquist bins, each counted once, at even and odd output lengths down to one point."""
    x = cplx(2, 4) if f in COMPLEX_IN else real(2, 4)
    if f in (np.fft.irfft, np.fft.hfft) and n is None:
        n = 6
    check(f, x, {"n": n})


@pytest.mark.parametrize("f", ONE_D + [np.fft.fftshift, np.fft.ifftshift], ids=_id)
def test_single_precision_is_kept(f):
    x = cplx(3, 5, dtype=np.complex64) if f in COMPLEX_IN else real(3, 5, dtype=np.float32)
    y, back = cr.rrule(f, x)
    assert y.dtype == f(x).dtype and y.dtype in (np.float32, np.complex64)
    assert cr.unthunk(back(np.ones_like(y))[1]).dtype == x.dtype
    check(f, x, {"norm": "ortho"} if f not in (np.fft.fftshift, np.fft.ifftshift) else {})


def test_integer_and_list_inputs():
    ints = np.arange(6)
    crt.test_rrule(np.fft.fft, ints, fkwargs={"n": 8})
    crt.test_rrule(np.fft.rfft, [1.0, 2.0, -1.0, 0.5])
    crt.test_frule(np.fft.rfft, [1.0, 2.0, -1.0, 0.5])
    crt.test_rrule(np.fft.fftshift, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    crt.test_frule(np.fft.ifftshift, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    _, back = cr.rrule(np.fft.fft, ints)
    assert cr.unthunk(back(np.ones(6, dtype=complex))[1]).dtype == np.float64


def test_positional_options():
    x = real(3, 6)
    check(np.fft.rfft, x, {})  # the options below are positional arguments, without tangents
    crt.test_rrule(np.fft.rfft, x, crt.nondiff(8), crt.nondiff(0), crt.nondiff("ortho"))
    crt.test_frule(np.fft.irfft, cplx(3, 4), crt.nondiff(5), crt.nondiff(-1), crt.nondiff("forward"))
    crt.test_rrule(np.fft.fft2, cplx(3, 4), crt.nondiff((4, 2)), crt.nondiff((1, 0)))
    crt.test_rrule(np.fft.fftshift, real(3, 4), crt.nondiff(1))


# ----- 2-D and n-D transforms ---------------------------------------------------------------

CUBE, CUBE_Z = real(3, 4, 5), cplx(3, 4, 5)
N_D_OPTIONS = [
    {},
    {"axes": (1, 0)},  # the half spectrum of the real transforms along the first axis
    {"s": (5, 7), "axes": (0, 2)},  # padding
    {"s": (2, 3), "axes": (-1, -2)},  # truncation
    {"s": (4, -1), "axes": (2, 1)},  # -1: the input's own length
    {"axes": (1,)},
    {"axes": (2, 0, 2)},  # an axis twice: transformed twice
]
TWO_D_OPTIONS = [{}, {"s": (5, 3)}, {"axes": (0, 2)}, {"s": (2, 6), "axes": (2, 1)}]
N_D = [np.fft.fftn, np.fft.ifftn, np.fft.rfftn, np.fft.irfftn]
TWO_D = [np.fft.fft2, np.fft.ifft2, np.fft.rfft2, np.fft.irfft2]
COMPLEX_N_IN = (np.fft.fftn, np.fft.ifftn, np.fft.irfftn, np.fft.fft2, np.fft.ifft2, np.fft.irfft2)


def _n_d_cases():
    for f, options in itertools.chain(itertools.product(N_D, N_D_OPTIONS), itertools.product(TWO_D, TWO_D_OPTIONS)):
        for x in [CUBE] + ([CUBE_Z] if f in COMPLEX_N_IN else []):
            yield f, x, options
    for f, norm in itertools.product(N_D + TWO_D, NORMS[1:]):
        yield f, CUBE_Z if f in COMPLEX_N_IN else CUBE, {"norm": norm, "axes": (0, 1)}


@pytest.mark.parametrize("f, x, kwargs", list(_n_d_cases()), ids=_id)
def test_n_d_transforms(f, x, kwargs):
    check(f, x, kwargs)


def test_s_without_axes_is_numpys_deprecated_last_axes():
    with pytest.warns(DeprecationWarning):
        check(np.fft.irfftn, cplx(3, 4), {"s": (5,)})
    with pytest.warns(DeprecationWarning):
        check(np.fft.fftn, real(3, 4), {"s": (2, 6)})


@pytest.mark.parametrize("f", [np.fft.fftshift, np.fft.ifftshift], ids=_id)
@pytest.mark.parametrize("axes", [None, 0, -1, (0, 2), [2, 1]])
def test_shifts(f, axes):
    check(f, CUBE, {"axes": axes})
    check(f, CUBE_Z[:, :3], {"axes": axes})


def test_frequencies_depend_on_the_spacing_only():
    for f in (np.fft.fftfreq, np.fft.rfftfreq):
        for n in (6, 7):
            crt.test_rrule(f, crt.nondiff(n), 0.25)
            crt.test_frule(f, crt.nondiff(n), 0.25)
        crt.test_rrule(f, crt.nondiff(5))
        crt.test_rrule(f, crt.nondiff(8), 2)  # an integer spacing gets a float cotangent
        y, back = cr.rrule(f, 8, d=0.5)  # a keyword argument is not differentiated
        assert back(np.ones_like(y)) == (cr.NoTangent(), cr.NoTangent())
    _, back = cr.rrule(np.fft.fftfreq, 4, 0.5)
    # fftfreq(4, 0.5) is [0, 0.5, -1, -0.5]: d/dd of <dy, y> is -<dy, y> / d
    assert back(np.array([1.0, 1.0, 1.0, 0.0]))[2] == pytest.approx(1.0)


# ----- batches: one call for a block of (co)tangents ---------------------------------------------

BATCHED = [
    (np.fft.fft, EVEN_Z, {"n": 8, "axis": 0, "norm": "ortho"}),
    (np.fft.ifft, EVEN, {"n": 4}),
    (np.fft.rfft, ODD, {"axis": 0, "norm": "forward"}),
    (np.fft.rfft, EVEN, {"n": 7}),
    (np.fft.irfft, ODD_Z, {"n": 9, "axis": -2}),
    (np.fft.irfft, EVEN_Z, {}),
    (np.fft.hfft, ODD_Z, {"norm": "ortho"}),
    (np.fft.ihfft, EVEN, {"n": 5, "axis": 0}),
    (np.fft.fft2, CUBE_Z, {"s": (5, 2), "axes": (0, 2)}),
    (np.fft.ifftn, CUBE, {}),
    (np.fft.rfftn, CUBE, {"axes": (2, 0), "norm": "ortho"}),
    (np.fft.irfft2, CUBE_Z, {"s": (3, 7)}),
    (np.fft.irfftn, CUBE_Z, {"axes": (0, 1), "norm": "forward"}),
    (np.fft.fftshift, CUBE, {}),
    (np.fft.ifftshift, CUBE_Z, {"axes": (0, 2)}),
]


@pytest.mark.parametrize("f, x, kwargs", BATCHED, ids=_id)
def test_pullbacks_take_a_batch(f, x, kwargs, batched_pullback):
    batched_pullback(f, x, kwargs=kwargs, batch=3)


@pytest.mark.parametrize("f, x, kwargs", BATCHED, ids=_id)
def test_pushforwards_take_a_batch(f, x, kwargs):
    assert cr.frule.lookup(f, (x,)).batched
    rows = [real(*x.shape) + (1j * real(*x.shape) if np.iscomplexobj(x) else 0) for _ in range(3)]
    y, dys = cr.frule((cr.NoTangent(), np.stack(rows)), f, x, **kwargs)
    assert dys.shape == (3, *y.shape) and dys.dtype == y.dtype
    for k, row in enumerate(rows):
        np.testing.assert_allclose(dys[k], cr.frule((cr.NoTangent(), row), f, x, **kwargs)[1], rtol=1e-12, atol=1e-14)


def test_the_frequencies_take_a_batch(batched_pullback):
    batched_pullback(np.fft.fftfreq, 6, 0.5)
    batched_pullback(np.fft.rfftfreq, 7, 2.0)
    y, dys = cr.frule((cr.NoTangent(), cr.NoTangent(), np.array([1.0, -2.0])), np.fft.rfftfreq, 7, 2.0)
    np.testing.assert_allclose(dys, np.array([[-1.0], [2.0]]) * y / 2.0)


def test_a_list_input_declines_a_batch():
    before = batch_declines()
    cr.rrule(np.fft.fft, [1.0, 2.0])
    cr.rrule(np.fft.fftshift, [1.0, 2.0])
    assert batch_declines() == before + 2
    cr.rrule(np.fft.fft, np.array([1.0, 2.0]))
    assert batch_declines() == before + 2


# ----- errors -----------------------------------------------------------------------------------


def test_out_is_refused_and_numpys_errors_stay():
    x = real(4)
    with pytest.raises(TypeError, match="out="):
        cr.rrule(np.fft.fft, x, out=np.empty(4, dtype=complex))
    with pytest.raises(TypeError, match="out="):
        cr.frule((cr.NoTangent(), x), np.fft.rfftn, x, out=np.empty(3, dtype=complex))
    with pytest.raises(ValueError, match="norm"):
        cr.rrule(np.fft.fft, x, norm="sideways")
    with pytest.raises(TypeError):  # rfft of a complex input
        cr.rrule(np.fft.rfft, x + 1j)


# ----- engines ------------------------------------------------------------------------------------

ENGINES = {"source": source.pullback_full, "tape": trace.pullback_full}
each_engine = pytest.mark.parametrize("engine", list(ENGINES))


def power(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2)


#: shapes and axes given positionally: the source engine takes a call whose keyword values are not literal
#: constants through its general form, which pulls back one cotangent at a time
GRID, PADDED_GRID, BOTH_AXES = (2, 4), (2, 5), (0, 1)
DECAY = np.exp(-0.3 * np.arange(5.0))


def filtered(x):
    """A smoothing filter, a circular autocorrelation (padded, then truncated), a Hermitian
    transform and a centred 2-D spectrum of an 8-vector: a real 8-vector."""
    smooth = np.fft.irfft(np.fft.rfft(x, norm="ortho") * DECAY, n=8, norm="ortho")
    full = np.fft.fft(x, n=10)
    correlation = np.real(np.fft.ifft(full * np.conj(full), n=8, norm="forward"))
    grid = np.abs(np.fft.fftshift(np.fft.fft2(np.reshape(x, GRID), PADDED_GRID)))
    return smooth + correlation * np.fft.hfft(full[:5] * x[:5], n=8) + np.ravel(grid)[:8]


def images(x):
    """Real transforms of a 2-D input along both axes, and back."""
    X = np.fft.rfftn(x, None, BOTH_AXES)
    return np.fft.irfftn(X * np.conj(X) + np.fft.ihfft(x, axis=1), x.shape, BOTH_AXES) ** 2


X8 = real(8)
IMAGE = real(4, 3)


@each_engine
@pytest.mark.parametrize("n", [7, 8])
def test_gradient_of_a_power_spectrum(engine, n):
    x = real(n)
    (g,) = cr.gradient(power, x, engine=engine)
    np.testing.assert_allclose(g, crt.fd_jacobian(power, x)[0], rtol=1e-7, atol=1e-9)
    # Parseval: the half spectrum counts the interior bins once, so the gradient is not 2 n x
    np.testing.assert_allclose(g, 2 * np.fft.irfft(np.fft.rfft(x) * _interior(n), n) * n, rtol=1e-12)


def _interior(n):
    w = np.full(n // 2 + 1, 0.5)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w


@each_engine
@pytest.mark.parametrize("f, x", [(filtered, X8), (images, IMAGE)], ids=_id)
def test_reverse_jacobians_pull_back_one_block(engine, f, x):
    _, back = ENGINES[engine](f, x)
    assert back.batched  # every rule took the whole block at once
    J = cr.jacobian(f, x, mode="reverse", engine=engine)
    y = f(x)
    J_fd = crt.fd_jacobian(f, x).reshape(y.shape + x.shape)
    np.testing.assert_allclose(J, J_fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), J, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, x", [(filtered, X8), (images, IMAGE), (power, X8)], ids=_id)
def test_engines_to_second_order(f, x):
    """Both reverse engines and forward mode, and forward mode over them (the Hessian's way): the
    rules also run on the forward engine's dual numbers."""
    done = crt.check_grads(f, (x,))
    assert any("order 2" in d for d in done) and any("forward order 1" in d for d in done)


def test_hessian_of_a_power_spectrum():
    x = real(6)
    H = cr.hessian(power, x)
    H_fd = crt.fd_jacobian(lambda v: cr.gradient(power, v)[0], x)
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H.T, atol=1e-12)
