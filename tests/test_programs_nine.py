"""The ninth corpus (``programs_corpus_nine.py``): float32 and Jacobian-mode agreement across
engines on vector-valued numerical programs (``test_programs.py`` runs its programs through every
engine and mode)."""

from __future__ import annotations

import numpy as np
import program_checks as checks
import pytest
import scipy.signal
import scipy.stats
from programs_corpus_nine import PROGRAMS

import chainrules as cr

BY_NAME = {p.name: p for p in PROGRAMS}


# ----- float32: the gradient keeps the argument's dtype, and every engine agrees ------------------

FLOAT32 = [p.name for p in PROGRAMS if p.name.startswith("float32_")]


@pytest.mark.parametrize("engine", checks.REVERSE)
@pytest.mark.parametrize("name", FLOAT32)
def test_float32_gradients_stay_float32(name, engine):
    p = BY_NAME[name]
    y = p.f(*p.args)
    if engine in p.refuses:
        pytest.skip(f"the {engine} engine refuses {name}")
    value, grads = cr.value_and_gradient(p.f, *p.args, engine=engine)
    assert np.asarray(value).dtype == np.asarray(y).dtype, (np.asarray(value).dtype, np.asarray(y).dtype)
    for arg, g in zip(p.args, grads):
        assert np.asarray(g).dtype == np.float32, f"d({np.asarray(arg).dtype}) is {np.asarray(g).dtype}"
        assert np.shape(g) == np.shape(arg)


@pytest.mark.parametrize("name", FLOAT32)
def test_float32_forward_jacobian_stays_float32(name):
    f = checks.first_argument_function(BY_NAME[name])
    x = BY_NAME[name].args[0]
    J = cr.jacobian(f, x, mode="forward")
    assert J.dtype == np.result_type(f(x), x), J.dtype  # float32 where the output is float32 too


@pytest.mark.parametrize("name", FLOAT32)
def test_float32_engines_agree(name):
    p = BY_NAME[name]
    f = checks.first_argument_function(p)
    x = p.args[0]
    by_source = cr.gradient(f, x, engine="source")[0]
    others = [cr.jacobian(f, x, mode="forward").reshape(np.shape(x)).astype(np.result_type(f(x), x))]
    if "tape" not in p.refuses:
        others.append(cr.gradient(f, x, engine="tape")[0])
        assert others[-1].dtype == np.float32
    assert by_source.dtype == np.float32
    for g in others:
        np.testing.assert_allclose(g, by_source, rtol=1e-4, atol=1e-5)
    reference = cr.gradient(lambda z: f(z.astype(np.float32)), x.astype(np.float64))[0]
    np.testing.assert_allclose(by_source, reference, rtol=3e-3, atol=1e-4)


# ----- Jacobians of vector-valued programs in every mode ------------------------------------------


def spectral_filter(x):
    X = np.fft.rfft(x)
    return np.fft.irfft(X * np.exp(-0.3 * np.arange(X.size)), n=x.size) * x


def sorted_squares(x):
    return np.sort(x**2 - x)


def quantile_summary(x):
    return np.stack([np.median(x), np.percentile(x, 20.0), np.quantile(x, 0.85), np.mean(x)])


def complex_magnitudes(x):
    z = x[:3] + 1j * x[3:]
    return np.concatenate([np.abs(z * z), np.angle(z + 2.0), (z @ np.conj(z[::-1])).real[None]])


def einsum_features(x):
    A = x.reshape(2, 3)
    return np.einsum("ij,kj->ik", A, A).ravel() + np.einsum("ij->j", A**2).sum()


def signal_smoothing(x):
    return scipy.signal.fftconvolve(x, np.array([0.2, 0.5, 0.3]), mode="same") + np.cumsum(x) * 0.1


def stats_vector(theta):
    return scipy.stats.norm.logpdf(np.array([0.1, 0.7, 1.4]), loc=theta[0], scale=np.exp(theta[1]))


def interp_values(fp):
    return np.interp(np.array([0.2, 1.3, 2.7, 3.9, 0.8]), np.arange(5.0), fp**2)


ON_THE_TAPE = {"signal_smoothing": False, "stats_vector": False}  # SciPy wrappers: the tape refuses them

VECTOR_FUNCTIONS = [
    (spectral_filter, np.array([0.3, 1.1, -0.4, 0.8, 1.6, -0.9, 0.2])),
    (sorted_squares, np.array([0.3, 1.1, -0.4, 0.8, 1.6])),
    (quantile_summary, np.array([0.3, 1.1, -0.4, 0.8, 1.6, -0.9, 0.25])),
    (complex_magnitudes, np.array([0.3, 1.1, -0.4, 0.8, 0.6, -0.9])),
    (einsum_features, np.array([0.3, 1.1, -0.4, 0.8, 1.6, -0.9])),
    (signal_smoothing, np.array([0.3, 1.1, -0.4, 0.8, 1.6])),
    (stats_vector, np.array([0.4, -0.2])),
    (interp_values, np.array([0.3, 1.1, -0.4, 0.8, 1.6])),
]


@pytest.mark.parametrize("f, x", VECTOR_FUNCTIONS, ids=[f.__name__ for f, _ in VECTOR_FUNCTIONS])
def test_jacobian_modes_agree(f, x):
    reference = checks.crt.fd_jacobian(f, x).reshape(np.size(f(x)), x.size)
    for mode in ("forward", "reverse", "auto"):
        J = cr.jacobian(f, x, mode=mode)
        np.testing.assert_allclose(J, reference, rtol=1e-6, atol=1e-8, err_msg=mode)
    if not ON_THE_TAPE.get(f.__name__, True):
        return
    J_tape = cr.jacobian(f, x, mode="reverse", engine="tape")
    np.testing.assert_allclose(J_tape, reference, rtol=1e-6, atol=1e-8, err_msg="tape")


@pytest.mark.parametrize("f, x", VECTOR_FUNCTIONS, ids=[f.__name__ for f, _ in VECTOR_FUNCTIONS])
def test_float32_jacobian_modes_agree_in_dtype(f, x):
    x32 = x.astype(np.float32)
    y32 = f(x32)
    J = {mode: cr.jacobian(f, x32, mode=mode) for mode in ("forward", "reverse", "auto")}
    for mode, Jm in J.items():
        assert Jm.dtype == np.result_type(y32.dtype, np.float32), (mode, Jm.dtype, y32.dtype)
        np.testing.assert_allclose(Jm, J["reverse"], rtol=1e-4, atol=1e-5, err_msg=mode)
