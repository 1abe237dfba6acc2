"""NumPy functions given a list holding values being differentiated, as NumPy code often writes
them (``np.clip([a, b, c], lo, hi)``): the list's cotangent comes back structural from every rule,
so one list passed to several functions, and a batch of cotangents (a reverse Jacobian), split
back onto its entries."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

X = np.array([0.3, 1.2, -0.7])


def _sum_and_polyval(x):
    entries = [x[0], x[1], x[2]]
    return np.sum(entries) + np.sum(np.polyval(entries, [0.5, 2.0]))


def _clip_and_mean(x):
    entries = [x[0], x[1], x[2]]
    return np.sum(np.clip(entries, -0.5, 0.5)) + np.mean(entries)


def _trapezoid_and_norm(x):
    entries = [x[0], x[1], x[2]]
    return np.trapezoid(entries, [0.0, 1.0, 3.0]) + np.linalg.norm(entries)


def _maximum_and_max(x):
    entries = [x[0], x[1], x[2]]
    return np.sum(np.maximum(entries, 0.0)) + np.max(entries) + np.sum(np.sin(entries))


def _nested_det_and_sum(x):
    m = [[x[0] + 2.0, x[1]], [x[2], 1.5]]
    return np.linalg.det(m) + np.sum(np.sum(m, axis=0) ** 2)


@pytest.mark.parametrize(
    "f", [_sum_and_polyval, _clip_and_mean, _trapezoid_and_norm, _maximum_and_max, _nested_det_and_sum]
)
def test_one_list_passed_to_several_numpy_functions(f):
    np.testing.assert_allclose(cr.gradient(f, X)[0], crt.fd_jacobian(f, X)[0], rtol=1e-6, atol=1e-8)


def _three_outputs(x):
    entries = [x[0], x[1], x[2]]
    return np.stack([np.sum(entries), np.polyval(entries, 0.5), np.max(np.maximum(entries, 0.0))])


def _row_sums(x):
    return np.sum([[x[0], x[1]], [x[2], 1.0], [1.0, 2.0]], axis=1)


@pytest.mark.parametrize("f", [_three_outputs, _row_sums])
def test_reverse_jacobian_of_numpy_functions_of_lists(f):
    # a batch of cotangents of the list: as an array its batch axis would be taken for the entries
    np.testing.assert_allclose(cr.jacobian(f, X, mode="reverse"), crt.fd_jacobian(f, X), rtol=1e-6, atol=1e-8)
