"""Rules for ``scipy.signal``'s recurrences: ``lfilter`` (with and without initial states, in
``b``, ``a``, ``x`` and ``zi``), ``lfilter_zi``, ``sosfilt``, ``sosfilt_zi``, ``filtfilt`` and
``sosfiltfilt`` in each padding, ``savgol_filter`` in each mode, ``detrend`` and ``hilbert``,
against finite differences; the engines (source gradients, the tape given the function, forward
and reverse Jacobians, Hessians); the refusals of ``method='gust'`` and of ``lfilter_zi`` with ``a[0] = 0``."""

import numpy as np
import pytest
import scipy.signal as ss

import chainrules as cr
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

R = np.random.default_rng(31)
B = np.array([0.4, -0.3, 0.2])
A = np.array([1.5, 0.3, -0.2, 0.1])  # (a[0] != 1: the filter normalizes by it)
X = R.standard_normal(7)
ZI = R.standard_normal(3)
SOS = ss.butter(4, 0.3, output="sos")


def _both(f, *args, **kwargs):
    test_rrule(f, *args, **kwargs)
    test_frule(f, *args, **kwargs)


def _in_x(f, sos):
    """``f(sos, x, ...)`` as a function of ``x`` with its rules: SciPy takes no ``sos[:, 3]`` but ones,
    so finite differences cannot move ``sos`` (the engines' tests below differentiate the others)."""

    def in_x(x, *rest, **kwargs):
        return f(sos, x, *rest, **kwargs)

    def in_x_rrule(_, x, *rest, **kwargs):
        y, back = cr.rrule(f, sos, x, *rest, **kwargs)
        return y, lambda dy: (cr.NoTangent(), *back(dy)[2:])

    def in_x_frule(tangents, _, x, *rest, **kwargs):
        return cr.frule((tangents[0], cr.ZeroTangent(), *tangents[1:]), f, sos, x, *rest, **kwargs)

    return in_x, in_x_rrule, in_x_frule


def _both_in_x(f, sos, *args, **kwargs):
    in_x, in_x_rrule, in_x_frule = _in_x(f, sos)
    test_rrule(in_x, *args, rule=in_x_rrule, **kwargs)
    test_frule(in_x, *args, rule=in_x_frule, **kwargs)


@pytest.mark.parametrize("n", [7, 2], ids=["long", "shorter-than-the-states"])
def test_lfilter(n):
    _both(ss.lfilter, B, A, X[:n])
    _both(ss.lfilter, B, A, X[:n], nondiff(-1), ZI)  # (y, zf): both cotangents, zi's too


def test_lfilter_along_an_axis_complex_and_broadcast_states():
    X2, Z2 = R.standard_normal((6, 2)), R.standard_normal((3, 2))
    _both(ss.lfilter, A[:2], B, X2, nondiff(0), Z2[:2])
    _both(ss.lfilter, B, A, X2.T, nondiff(-1), Z2[:, :1].T)  # zi broadcast along the other axis
    bc, ac = B + 1j * R.standard_normal(3), A + 0.2j
    _both(ss.lfilter, bc, ac, X + 1j * X[::-1], nondiff(-1), ZI + 0.5j)
    _both(ss.lfilter, bc, A, X)  # a real signal through a complex filter


def test_coefficients_as_a_list_and_a_number():
    _both(ss.lfilter, [0.5, 0.2], 2.0, X)
    _both(ss.lfilter, 0.5, [1.0, -0.3], X)
    _both(ss.filtfilt, [0.5, 0.2], 1.5, X, fkwargs={"padlen": 2})


def test_a_signal_as_a_list():
    """A list's cotangent is a list's (sosfilt's sections and filtfilt's extension read it along
    the axis as an array, which had failed on the list)."""
    _both(ss.lfilter, B, A, list(X))
    _both_in_x(ss.sosfilt, SOS, list(X))
    _both(ss.filtfilt, B, A, list(X), fkwargs={"padlen": 2})
    _both_in_x(ss.sosfiltfilt, SOS, list(X), fkwargs={"padlen": 2})


def test_step_states():
    _both(ss.lfilter_zi, B, A)
    _both(ss.lfilter_zi, A[:3], B[:2] + 1.0)  # b longer than a
    sos = SOS + 0.01 * R.standard_normal(SOS.shape)
    _both(ss.sosfilt_zi, sos)
    with pytest.raises(cr.NoRuleError, match=r"lfilter_zi\(.*\) at .*test_signal_filters\.py.*a\[0\] = 0"):
        cr.rrule(ss.lfilter_zi, B, np.array([0.0, 1.0, 0.5]))


def test_sosfilt():
    x, zi = R.standard_normal(9), R.standard_normal((2, 2))
    np.testing.assert_allclose(cr.rrule(ss.sosfilt, SOS, x)[0], ss.sosfilt(SOS, x), rtol=1e-12)
    _both_in_x(ss.sosfilt, SOS, x)
    _both_in_x(ss.sosfilt, SOS, np.stack([x, -x], axis=1), nondiff(0), R.standard_normal((2, 2, 2)))
    _both_in_x(ss.sosfilt, SOS, x, nondiff(-1), zi)


@pytest.mark.parametrize(
    "kwargs", [{}, {"padtype": "even"}, {"padtype": "constant", "padlen": 3}, {"padtype": None}], ids=str
)
def test_filtfilt(kwargs):
    b, a = ss.butter(2, 0.3)
    x = R.standard_normal(12)
    np.testing.assert_allclose(cr.rrule(ss.filtfilt, b, a, x, **kwargs)[0], ss.filtfilt(b, a, x, **kwargs))
    _both(ss.filtfilt, b, a, x, fkwargs=kwargs)


def test_filtfilt_along_an_axis_and_sosfiltfilt():
    b, a = ss.butter(2, 0.3)
    _both(ss.filtfilt, b, a, R.standard_normal((10, 2)), nondiff(0), fkwargs={"padlen": 2})
    x = R.standard_normal(12)
    np.testing.assert_allclose(cr.rrule(ss.sosfiltfilt, SOS, x, padlen=4)[0], ss.sosfiltfilt(SOS, x, padlen=4))
    _both_in_x(ss.sosfiltfilt, SOS, x, fkwargs={"padlen": 4, "padtype": "even"})


def test_filtfilt_refuses_gust():
    b, a = ss.butter(2, 0.3)
    with pytest.raises(cr.NoRuleError, match=r"filtfilt\(.*\) at .*test_signal_filters\.py.*method='gust'"):
        cr.rrule(ss.filtfilt, b, a, X, method="gust")
    with pytest.raises(cr.NoRuleError, match="method='pad' only"):
        cr.frule((cr.NoTangent(), b, a, X), ss.filtfilt, b, a, X, method="gust")


# ----- engines ------------------------------------------------------------------------------

SIGNAL = R.standard_normal(14)


def filter_bank(p):
    """Filters whose coefficients, states and input all depend on ``p``."""
    b, a = p[:3], np.concatenate([np.ones(1), 0.3 * p[3:5]])
    y, zf = ss.lfilter(b, a, SIGNAL * p[0], zi=p[5:7])
    smooth = ss.filtfilt(b, a, y, padlen=5)
    sos = np.concatenate([SOS[:, :3] * p[5], SOS[:, 3:4], SOS[:, 4:] * (1 + 0.1 * p[6])], axis=1)
    w = ss.sosfiltfilt(sos, smooth, padlen=4) + ss.sosfilt(sos, smooth * p[1])
    return np.sum(w**2) + np.sum(np.sin(zf)) + np.sum(ss.lfilter_zi(b, a) * ss.sosfilt_zi(sos)[0])


P0 = R.standard_normal(7) * 0.5


def test_source_gradient_and_forward_jacobian():
    expected = fd_jacobian(filter_bank, P0)
    np.testing.assert_allclose(cr.gradient(filter_bank, P0, engine="source")[0], expected[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(filter_bank, P0, mode="forward"), expected[0], rtol=1e-6, atol=1e-8)


def test_hessian():
    expected = fd_jacobian(lambda z: cr.gradient(filter_bank, z)[0], P0)
    np.testing.assert_allclose(cr.hessian(filter_bank, P0), expected, rtol=1e-5, atol=1e-6)


def test_reverse_jacobian():
    def response(p):
        return ss.lfilter(p[:2], np.concatenate([np.ones(1), p[2:]]), SIGNAL)

    p = np.array([0.5, -0.2, 0.3])
    np.testing.assert_allclose(cr.jacobian(response, p, mode="reverse"), fd_jacobian(response, p), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_reverse_engines_given_the_filters(engine):
    dy = R.standard_normal(7)
    for f, args in ((ss.lfilter, (B, A, X)), (ss.filtfilt, (B, A, X, -1, "odd", 2))):
        _, back = cr.pullback(f, *args, engine=engine)
        expected = [dy @ fd_jacobian(lambda v, i=i: f(*args[:i], v, *args[i + 1 :]), args[i]) for i in range(3)]
        for got, want in zip(back(dy), expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# ----- savgol_filter ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["interp", "mirror", "constant", "nearest", "wrap"])
def test_savgol_filter(mode):
    """In x, delta (the coefficients scale as delta ** -deriv) and cval; mode 'interp' fits
    polynomials at the edges."""
    x = R.standard_normal(9)
    _both(ss.savgol_filter, x, nondiff(5), nondiff(3), nondiff(2), 0.7, nondiff(-1), nondiff(mode), 0.4)


def test_savgol_filter_along_an_axis():
    _both(ss.savgol_filter, R.standard_normal((7, 2)), 4, 2, fkwargs={"axis": 0, "deriv": 1})
    _both(ss.savgol_filter, R.standard_normal((2, 7)), 3, 1, fkwargs={"mode": "mirror"})


def test_savgol_filter_of_a_list():
    """A list's cotangent is a list's; in mode 'interp' the interior's cotangent is added to the
    edges' fits' as an array (the interior's, taken as the list's, did not add to it)."""
    _both(ss.savgol_filter, list(R.standard_normal(7)), nondiff(5), nondiff(2))
    _both(ss.savgol_filter, list(R.standard_normal(6)), nondiff(3), nondiff(1), fkwargs={"mode": "nearest"})


def smoothed(p):
    x = SIGNAL * p[0] + p[1] * SIGNAL**2
    u = ss.savgol_filter(x, 5, 2, deriv=1, delta=p[2])
    v = ss.savgol_filter(u, 4, 2, mode="constant", cval=p[1])
    return np.sum(np.tanh(u) * v) + np.sum(ss.savgol_filter(x * p[0], 3, 1, mode="wrap") ** 2)


def test_savgol_filter_engines():
    p = np.array([0.7, -0.3, 0.9])
    expected = fd_jacobian(smoothed, p)[0]
    np.testing.assert_allclose(cr.gradient(smoothed, p)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(smoothed, p, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda z: cr.gradient(smoothed, z)[0], p)
    np.testing.assert_allclose(cr.hessian(smoothed, p), hessian, rtol=1e-5, atol=1e-6)
    dy = R.standard_normal(14)
    _, back = cr.pullback(ss.savgol_filter, SIGNAL, 5, 2, engine="tape")
    jacobian = fd_jacobian(lambda z: ss.savgol_filter(z, 5, 2), SIGNAL)
    np.testing.assert_allclose(back(dy)[0], dy @ jacobian, rtol=1e-6, atol=1e-8)


# ----- detrend and hilbert ------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"type": "constant"}, {"bp": [3, 6]}], ids=str)
def test_detrend(kwargs):
    _both(ss.detrend, R.standard_normal(9), fkwargs=kwargs)
    _both(ss.detrend, R.standard_normal((7, 2)), nondiff(0), fkwargs=kwargs)


@pytest.mark.parametrize("n", [None, 12, 6, 9])
def test_hilbert(n):
    """A complex output of a real input, ``N`` longer or shorter than it."""
    _both(ss.hilbert, R.standard_normal(9), nondiff(n))
    _both(ss.hilbert, R.standard_normal((6, 2)), fkwargs={"axis": 0, "N": n})


def envelope(p):
    z = ss.hilbert(ss.detrend(SIGNAL * p[0] + p[1] * SIGNAL**2, bp=4))
    return np.sum(np.abs(z) ** 2 * p[1]) + np.sum(np.angle(z[1:]) * p[0])


def test_detrend_and_hilbert_engines():
    p = np.array([0.8, -0.4])
    expected = fd_jacobian(envelope, p)[0]
    np.testing.assert_allclose(cr.gradient(envelope, p)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(envelope, p, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda z: cr.gradient(envelope, z)[0], p)
    np.testing.assert_allclose(cr.hessian(envelope, p), hessian, rtol=1e-5, atol=1e-6)

    def response(x):
        return ss.detrend(ss.hilbert(x, 12).real, type="constant")

    x = R.standard_normal(9)
    np.testing.assert_allclose(cr.jacobian(response, x, mode="reverse"), fd_jacobian(response, x), rtol=1e-6, atol=1e-8)
    for f, dy in ((ss.detrend, R.standard_normal(9)), (ss.hilbert, R.standard_normal(9) + 1j * R.standard_normal(9))):
        _, back = cr.pullback(f, x, engine="tape")
        want = fd_jacobian(lambda u: np.real(np.sum(np.conj(dy) * f(u))), x)[0]
        np.testing.assert_allclose(back(dy)[0], want, rtol=1e-6, atol=1e-8)
