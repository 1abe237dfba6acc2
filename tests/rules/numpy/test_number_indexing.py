"""Indexing a NumPy number (``s[None]``, ``s[()]``, ``s[...]``), the result of a full reduction:
the number itself or an array of copies of it, whose cotangents add up to the number's."""

import operator

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

INDICES = [None, (), Ellipsis, (None, None), (None, Ellipsis), True, False]
NUMBERS = [np.float64(1.5), np.float32(-0.5), np.complex128(0.5 - 1.5j)]


@pytest.mark.parametrize("index", INDICES, ids=repr)
@pytest.mark.parametrize("s", NUMBERS, ids=lambda s: type(s).__name__)
def test_rules_of_indexing_a_number(s, index):
    tolerance = {"rtol": 1e-3, "atol": 1e-3} if s.dtype == np.float32 else {}
    crt.test_rrule(operator.getitem, s, crt.nondiff(index), **tolerance)
    crt.test_frule(operator.getitem, s, crt.nondiff(index), **tolerance)
    crt.test_rrule(np.generic.__getitem__, s, crt.nondiff(index), **tolerance)


def test_indexing_an_integer_or_a_boolean_number_passes_no_derivative():
    _, back = cr.rrule(operator.getitem, np.int64(3), None)
    assert back(np.ones(1))[1] == np.float64(1.0)
    _, back = cr.rrule(operator.getitem, np.True_, None)
    assert back(np.ones(1))[1] == cr.NoTangent()


def _fd_hessian(f, x):
    return crt.fd_jacobian(lambda v: cr.gradient(f, v)[0], x).reshape(np.shape(x) * 2)


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_gradient_and_hessian_through_an_indexed_reduction(index):
    x = np.array([1.0, 2.0])

    def f(x):
        return np.sum(np.sum(x**2)[index] * 3.0) + np.sum(x**3)

    np.testing.assert_allclose(cr.gradient(f, x)[0], crt.fd_jacobian(f, x).reshape(x.shape), rtol=1e-8)
    np.testing.assert_allclose(cr.hessian(f, x), _fd_hessian(f, x), rtol=1e-6, atol=1e-8)


def test_the_example_of_a_weighted_copy():
    x = np.array([1.0, 2.0])
    (g,) = cr.gradient(lambda x: np.sum(np.sum(x**2)[None] * np.array([1.0, 3.0])), x)
    np.testing.assert_allclose(g, [8.0, 16.0])
