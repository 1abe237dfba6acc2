"""``argnums=`` leaves the other positional arguments out of the differentiation: each reverse
engine takes them as constants, so code with no rule may read them (a library's filter of the
data, ``np.hanning(n)`` of an integer), as it may read values the function closes over."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

import chainrules as cr
from chainrules.testing import fd_jacobian

DATA = np.sin(np.linspace(0.0, 3.0, 12))
W = np.array([0.5, -0.2])


def spectral_model(w, x, nfft):
    smooth = scipy.signal.wiener(x, 3)  # no rule: the data's preprocessing
    window = np.hanning(nfft)  # an integer length, converted by NumPy's Python code
    spectrum = np.abs(np.fft.rfft((w[0] * smooth[:nfft] + w[1]) * window)) ** 2
    return np.sum(spectrum) + np.sum(np.arange(nfft) * x[:nfft] * w[0])


def expected_gradient(w):
    return fd_jacobian(lambda v: spectral_model(v, DATA, 8), w).ravel()


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("argnums", [0, (0,), -3])
def test_arguments_left_out_are_constants(engine, argnums):
    data = DATA.copy()
    grads = cr.gradient(spectral_model, W, data, 8, argnums=argnums, engine=engine)
    grad = grads if isinstance(argnums, int) else grads[0]
    np.testing.assert_allclose(grad, expected_gradient(W), rtol=1e-6)
    np.testing.assert_array_equal(data, DATA)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_value_and_gradient_and_aux_with_argnums(engine):
    def with_aux(nfft, w, x):
        value = spectral_model(w, x, nfft)
        return value, {"value": value}

    (value, aux), grad = cr.value_and_gradient(with_aux, 8, W, DATA, argnums=1, has_aux=True, engine=engine)
    assert value == aux["value"] == pytest.approx(spectral_model(W, DATA, 8))
    np.testing.assert_allclose(grad, expected_gradient(W), rtol=1e-6)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_the_engines_own_entries_take_the_positions_as_constants(engine):
    module = cr.api._reverse_engine(engine)
    y, back = module.pullback_with_constants(spectral_model, (W, DATA, 8), {}, frozenset({1, 2}))
    assert y == pytest.approx(spectral_model(W, DATA, 8))
    cotangents = back(1.0)
    np.testing.assert_allclose(cotangents[1], expected_gradient(W), rtol=1e-6)
    assert all(isinstance(d, cr.AbstractZero) for d in cotangents[2:])
    # the same specialization again, and one for other types
    y32, back32 = module.pullback_with_constants(spectral_model, (W.astype(np.float32), DATA, 8), {}, frozenset({1, 2}))
    np.testing.assert_allclose(back32(1.0)[1], expected_gradient(W), rtol=1e-4)


def test_a_selected_argument_is_still_differentiated_through_every_engine():
    """With every argument selected, nothing is a constant: the library filter is refused as before."""
    with pytest.raises(cr.NoRuleError, match="wiener"):
        cr.gradient(spectral_model, W, DATA, 8, argnums=(0, 1))


def scaled_model(w, x, nfft, scale=1.0, offset=0.0):
    return scale * spectral_model(w, x, nfft) + offset


def scaled_product(x, w, scale=1.0):
    return np.sum(x * w) * scale


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_argnums_with_keyword_arguments(engine):
    """Keyword arguments are constants too; the cotangents come one per positional argument."""
    grad = cr.gradient(scaled_model, W, DATA, 8, scale=2.0, offset=1.0, argnums=0, engine=engine)
    np.testing.assert_allclose(grad, 2.0 * expected_gradient(W), rtol=1e-6)
    grads = cr.gradient(scaled_model, W, DATA, 8, scale=2.0, argnums=(0,), engine=engine)
    np.testing.assert_allclose(grads[0], 2.0 * expected_gradient(W), rtol=1e-6)
    x = np.array([0.8, 0.4])
    np.testing.assert_allclose(cr.gradient(scaled_product, x, 0.8, scale=0.5, argnums=0, engine=engine), [0.4, 0.4])
    assert cr.gradient(scaled_product, x, 0.8, scale=0.5, argnums=1, engine=engine) == pytest.approx(0.6)
