"""Rules for ``scipy.signal.convolve``, ``correlate``, ``fftconvolve`` and ``oaconvolve``, and
``convolve2d`` and ``correlate2d``: finite differences in every mode (and boundary, ``fillvalue``
differentiated), 1-D and 2-D, either operand the larger, float32 and complex; the engines (source
gradients, the tape given the function, forward Jacobians, Hessians); the refusal of ``axes``."""

import numpy as np
import pytest
import scipy.signal as ss

import chainrules as cr
from chainrules.core.ruled_calls import IgnoredRuleError
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


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_oaconvolve(mode):
    test_rrule(ss.oaconvolve, _r(4, 5), _r(2, 3), fkwargs={"mode": mode})
    test_frule(ss.oaconvolve, _r(4, 5), _r(2, 3), fkwargs={"mode": mode})
    test_rrule(ss.oaconvolve, _r(6, dtype=np.complex128), _r(3), nondiff(mode))
    test_frule(ss.oaconvolve, _r(6, dtype=np.complex128), _r(3), nondiff(mode))
    with pytest.raises(cr.NoRuleError, match=r"oaconvolve\(numpy\.ndarray, numpy\.ndarray\) at .*test_signal\.py"):
        cr.rrule(ss.oaconvolve, _r(2, 4), _r(1, 3), axes=1)


# ----- convolve2d and correlate2d ----------------------------------------------------------------


@pytest.mark.parametrize("f", [ss.convolve2d, ss.correlate2d], ids=lambda f: f.__name__)
@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
def test_2d_boundaries(f, boundary):
    """Modes 'full' and 'same' extend in1 by the boundary (fillvalue differentiated), a kernel
    larger than the input too; 'valid' ignores it."""
    for s1, s2 in (((4, 5), (2, 3)), ((2, 2), (3, 3))):
        for mode in ("full", "same"):
            test_rrule(f, _r(*s1), _r(*s2), nondiff(mode), nondiff(boundary), 1.5)
            test_frule(f, _r(*s1), _r(*s2), nondiff(mode), nondiff(boundary), 1.5)
    test_rrule(f, _r(3, 4), _r(2, 2), fkwargs={"mode": "valid", "boundary": boundary})


@pytest.mark.parametrize("f", [ss.convolve2d, ss.correlate2d], ids=lambda f: f.__name__)
def test_2d_complex_and_valid_either_way(f):
    a, b = _r(3, 4, dtype=np.complex128), _r(2, 2, dtype=np.complex128)
    for s in ({"mode": "same", "boundary": "symm"}, {"mode": "full", "fillvalue": 0.5 - 1j}):
        test_rrule(f, a, b, fkwargs=s)
        test_frule(f, a, b, fkwargs=s)
    for x, y in ((a, b), (b, a)):  # (in2 the larger: SciPy's correlate2d reverses correlate(in2, in1))
        test_rrule(f, x, y, nondiff("valid"))
        test_frule(f, x, y, nondiff("valid"))


def image_energy(k):
    """Both 2-d functions, each boundary, a differentiated fillvalue (by keyword: the engines pass
    it by position)."""
    u = ss.convolve2d(IMAGE * k[0, 0], k, mode="same", boundary="symm")
    v = ss.correlate2d(u, k, "full", "fill", fillvalue=k[1, 1])
    w = ss.correlate2d(k, v, "valid")
    return np.sum(np.tanh(v)) + np.sum(w**2) + np.sum(ss.convolve2d(u, k**2, boundary="wrap", mode="same") ** 2)


def test_2d_engines_and_hessian():
    k = 0.5 * K0
    expected = fd_jacobian(image_energy, k).reshape(k.shape)
    np.testing.assert_allclose(cr.gradient(image_energy, k)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(image_energy, k, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda z: cr.gradient(image_energy, z)[0], k).reshape(k.shape * 2)
    np.testing.assert_allclose(cr.hessian(image_energy, k), hessian, rtol=1e-5, atol=1e-6)
    dy = _r(5, 6)
    _, back = cr.pullback(ss.convolve2d, IMAGE, k, "same", "wrap", engine="tape")
    jacobian = fd_jacobian(lambda z: ss.convolve2d(IMAGE, z, "same", "wrap"), k).reshape(5, 6, 2, 3)
    np.testing.assert_allclose(back(dy)[1], np.tensordot(dy, jacobian, 2), rtol=1e-6, atol=1e-8)


def test_convolve_of_lists_in_every_engine():
    """A list holding the values being differentiated reads as an array in forward mode too."""

    def f(x):
        return np.sum(ss.convolve([x[0], x[1]], [1.0, 2.0]) ** 2)

    x = np.array([0.3, 1.7])
    expected = fd_jacobian(f, x)[0]
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-6)
    with pytest.raises(IgnoredRuleError, match=r"convolve has a rule that the tape engine cannot use here"):
        cr.gradient(f, x, engine="tape")
    test_frule(ss.convolve, [0.3, 1.7], [1.0, 2.0])
