"""Hessians (forward over reverse) and tape-over-source second derivatives through the rules whose
pullbacks scatter (``np.convolve``, ``np.interp``, running extrema, ``np.repeat`` with counts,
``np.pad`` by copying entries): their pullbacks run on dual numbers and tracked arrays, so they
place and scatter cotangents with NumPy functions that have rules (``scatter_add``), never by
writing into plain arrays."""

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


PRICES = np.array([1.0, 1.2, 0.9, 1.3, 1.1, 1.25])


@pytest.mark.parametrize("extremum", [np.maximum, np.minimum])
def test_second_derivatives_through_running_extrema(extremum):
    def drawdown_energy(prices):
        peak = extremum.accumulate(prices)
        return np.sum(peak**3 * prices) + np.sum(extremum.accumulate(prices.reshape(2, 3), axis=1) ** 2)

    _check_second_order(drawdown_energy, PRICES)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_second_derivatives_through_repeat_with_counts(axis):
    counts = [1, 3] if axis == 0 else [2, 1, 3] if axis == 1 else [1, 2, 1, 3, 1, 2]

    def repeated(x):
        return np.sum(np.repeat(x.reshape(2, 3), counts, axis=axis) ** 3)

    _check_second_order(repeated, PRICES)


@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric", "wrap"])
def test_second_derivatives_through_pad_by_copies(mode):
    def padded_smoothness(x):
        padded = np.pad(x.reshape(2, 3), ((1, 1), (2, 1)), mode=mode)
        return np.sum(np.diff(padded, axis=1) ** 2 * padded[:, 1:])

    _check_second_order(padded_smoothness, PRICES)


def test_scatter_add_sums_repeats_for_plain_and_engine_values():
    from chainrules.rules.numpy._arrays import scatter_add

    index = np.array([0, 2, 0, 2, 1])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(scatter_add((3,), index, values), [4.0, 5.0, 6.0])
    # through an engine's values: the Jacobian of the scatter is its 0/1 matrix
    J = cr.jacobian(lambda v: scatter_add((3,), index, v), values, mode="forward")
    np.testing.assert_array_equal(J, (index == np.arange(3)[:, None]).astype(float))
    complex_values = values * (1 + 2j)
    by_dual = cr.jvp(lambda v: scatter_add((3,), index, v * (1 + 2j)), (values,), (np.ones(5),))[1]
    np.testing.assert_allclose(by_dual, scatter_add((3,), index, complex_values / values))


def test_second_derivatives_through_delete_resize_and_full():
    def trimmed(v):
        kept = np.delete(v.reshape(2, 3), [0, 4])  # flat positions
        tiled = np.resize(v[:4], (3, 3))  # entries copied more than once
        return np.sum(kept**3) + np.sum(tiled**2 * v[1]) + np.sum(np.full((2, 2), v[0]) ** 3)

    _check_second_order(trimmed, PRICES)
