"""Hessians (forward over reverse) and tape-over-source second derivatives through ``np.convolve``
and ``np.interp``: their pullbacks run on dual numbers and tracked arrays, so they place and
scatter cotangents with NumPy functions that have rules, never by writing into plain arrays."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

SIGNAL = np.array([0.3, -1.2, 0.8, 2.0, 0.5])


def _check_second_order(f, x):
    expected = fd_jacobian(lambda z: cr.gradient(f, z)[0], x).reshape(np.shape(x) * 2)
    np.testing.assert_allclose(cr.hessian(f, x), expected, rtol=1e-6, atol=1e-8)
    weights = np.linspace(0.5, 1.5, np.size(x)).reshape(np.shape(x))
    by_tape = cr.gradient(lambda z: np.sum(cr.gradient(f, z)[0] * weights), x, engine="tape")[0]
    np.testing.assert_allclose(by_tape, np.tensordot(weights, expected, axes=np.ndim(x)), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_second_derivatives_through_convolve(mode):
    def smoothed_energy(kernel):
        return np.sum(np.convolve(SIGNAL * kernel[1], kernel, mode) ** 3)

    _check_second_order(smoothed_energy, np.array([0.25, 0.5, -0.25]))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_second_derivatives_through_correlate(mode):
    def matched_filter(kernel):
        return np.sum(np.correlate(SIGNAL * kernel[0], kernel, mode) ** 3)

    _check_second_order(matched_filter, np.array([0.25, 0.5, -0.25]))


KNOTS = np.array([0.0, 0.5, 1.0, 1.5])


def interpolated_fit(theta):
    x = np.array([0.2, 0.7, 1.2]) + 0.1 * theta[:3]  # inside the segments, away from the knots
    table = theta[3:]
    return np.sum(np.interp(x, KNOTS, table) ** 2 * x) + np.interp(0.9, KNOTS, table) ** 3


def test_second_derivatives_through_interp_in_the_points_and_the_table():
    _check_second_order(interpolated_fit, np.array([0.3, -0.2, 0.5, 1.0, 2.0, -1.0, 0.5]))
