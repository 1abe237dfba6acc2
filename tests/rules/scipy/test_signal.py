"""Rules for ``scipy.signal.convolve``, ``correlate`` and ``fftconvolve``: finite differences in
every mode, 1-D and 2-D, either operand the larger, float32 and complex; the engines (source
gradients, forward Jacobians, Hessians); the refusal of ``fftconvolve``'s ``axes``."""

import numpy as np
import pytest
import scipy.signal as ss

import chainrules as cr
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

R = np.random.default_rng(29)


def _r(*shape, dtype=np.float64):
    value = R.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * R.standard_normal(shape)
    return value.astype(dtype)


SHAPES = [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((6,), (4,)), ((3, 4), (2, 3)), ((2, 3), (3, 4)), ((4, 5), (2, 2))]
FUNCTIONS = [ss.convolve, ss.correlate, ss.fftconvolve]


def _valid_mode_allowed(s1, s2):
    return all(a >= b for a, b in zip(s1, s2)) or all(b >= a for a, b in zip(s1, s2))


CASES = [
    (f, s1, s2, mode, dtype)
    for f in FUNCTIONS
    for s1, s2 in SHAPES
    for mode in ("full", "same", "valid")
    if mode != "valid" or _valid_mode_allowed(s1, s2)
    for dtype in (np.float64, np.complex128)
]


def _id(case):
    f, s1, s2, mode, dtype = case
    return f"{f.__name__}-{s1}-{s2}-{mode}-{np.dtype(dtype).name}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_against_finite_differences(case):
    f, s1, s2, mode, dtype = case
    a, b = _r(*s1, dtype=dtype), _r(*s2, dtype=dtype)
    np.testing.assert_allclose(cr.rrule(f, a, b, mode=mode)[0], f(a, b, mode=mode))
    test_rrule(f, a, b, fkwargs={"mode": mode})
    test_frule(f, a, b, fkwargs={"mode": mode})


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_float32_mixed_and_positional(f, mode):
    a, b = _r(6, dtype=np.float32), _r(3, dtype=np.float32)
    test_rrule(f, a, b, nondiff(mode))
    test_frule(f, a, b, nondiff(mode))
    test_rrule(f, _r(4, 3), _r(2, 2, dtype=np.complex128), fkwargs={"mode": mode})  # a real, b complex
    test_frule(f, _r(2, 2, dtype=np.complex128), _r(4, 3), fkwargs={"mode": mode})


@pytest.mark.parametrize("method", ["direct", "fft"])
def test_methods(method):
    for f in (ss.convolve, ss.correlate):
        test_rrule(f, _r(3, 4), _r(2, 3), fkwargs={"mode": "same", "method": method})
        test_frule(f, _r(3, 4), _r(2, 3), fkwargs={"mode": "same", "method": method})


def test_fftconvolve_refuses_axes():
    with pytest.raises(cr.NoRuleError, match=r"fftconvolve\(numpy\.ndarray, numpy\.ndarray\) at .*test_signal\.py"):
        cr.rrule(ss.fftconvolve, _r(2, 4), _r(1, 3), axes=1)
    with pytest.raises(cr.NoRuleError, match="axes=None"):
        cr.frule((cr.NoTangent(), _r(2, 4), _r(1, 3)), ss.fftconvolve, _r(2, 4), _r(1, 3), axes=1)


# ----- engines ------------------------------------------------------------------------------

IMAGE = R.standard_normal((5, 6))


def filtered_energy(kernel):
    """A small image pipeline: blur, match against the kernel itself, an FFT convolution."""
    blurred = ss.convolve(IMAGE * kernel[0, 0], kernel, mode="same")
    matched = ss.correlate(blurred, kernel, mode="valid")
    smoothed = ss.fftconvolve(matched, kernel**2, mode="full")
    return np.sum(matched**2) + np.sum(np.tanh(smoothed))


K0 = np.array([[0.3, -0.2, 0.1], [0.5, 0.4, -0.3]])


def test_source_gradient():
    g = cr.gradient(filtered_energy, K0, engine="source")[0]
    np.testing.assert_allclose(g, fd_jacobian(filtered_energy, K0).reshape(K0.shape), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_forward_jacobian(mode):
    def program(x):
        return ss.convolve(x, x[:3] ** 2, mode=mode) + ss.correlate(x, np.cos(x[1:4]), mode=mode)

    x = R.standard_normal(6)
    expected = fd_jacobian(program, x)
    np.testing.assert_allclose(cr.jacobian(program, x, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(program, x, mode="reverse"), expected, rtol=1e-6, atol=1e-8)


def test_hessian():
    expected = fd_jacobian(lambda z: cr.gradient(filtered_energy, z)[0], K0).reshape(K0.shape * 2)
    np.testing.assert_allclose(cr.hessian(filtered_energy, K0), expected, rtol=1e-5, atol=1e-7)


SIGNAL = R.standard_normal(7) + 1j * R.standard_normal(7)


def complex_response(h):
    """A real loss of a complex filtering, in a real parameter vector."""
    kernel = h[:3] + 1j * h[3:]
    return np.sum(np.abs(ss.correlate(SIGNAL, kernel, mode="same")) ** 2) + np.sum(
        np.real(ss.fftconvolve(SIGNAL, kernel, mode="valid")) ** 3
    )


def test_complex_gradient_and_hessian():
    h = R.standard_normal(6)
    g = cr.gradient(complex_response, h)[0]
    np.testing.assert_allclose(g, fd_jacobian(complex_response, h)[0], rtol=1e-6, atol=1e-8)
    expected = fd_jacobian(lambda z: cr.gradient(complex_response, z)[0], h)
    np.testing.assert_allclose(cr.hessian(complex_response, h), expected, rtol=1e-5, atol=1e-7)
