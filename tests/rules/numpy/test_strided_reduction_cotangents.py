"""Reductions whose output has the input's shape (a length-1 axis kept, ``axis=()``) spread a
cotangent with any strides: reversed (``np.flip`` after the reduction) or with gaps (a slice)."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

X = np.array([[1.0], [2.0]])
REVERSED = np.flip(np.array([[3.0], [5.0]]))  # negative strides
GAPPED = np.arange(12.0).reshape(4, 3)[::2, ::3]  # strides that skip entries

REDUCTIONS = [np.sum, np.mean, np.max, np.min, np.prod, np.nansum, np.nanmean, np.nanmax]
KEEPING_THE_SHAPE = [{"axis": 1, "keepdims": True}, {"axis": ()}]


@pytest.mark.parametrize("kwargs", KEEPING_THE_SHAPE, ids=str)
@pytest.mark.parametrize("f", REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dy", [REVERSED, GAPPED], ids=["reversed", "gapped"])
def test_pullback_takes_a_strided_cotangent(f, kwargs, dy):
    assert not dy.flags.c_contiguous and not dy.flags.f_contiguous
    crt.test_rrule(f, X, output_tangent=dy, fkwargs=kwargs)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("kwargs", KEEPING_THE_SHAPE, ids=str)
@pytest.mark.parametrize("f", REDUCTIONS, ids=lambda f: f.__name__)
def test_gradient_through_a_flip_after_the_reduction(f, kwargs, engine):
    weights = np.array([[3.0], [5.0]])

    def loss(x):
        return np.sum(np.flip(f(x, **kwargs)) * weights)

    np.testing.assert_allclose(cr.gradient(loss, X, engine=engine)[0], [[5.0], [3.0]])
    np.testing.assert_allclose(cr.gradient(loss, X, engine=engine)[0], crt.fd_jacobian(loss, X).reshape(X.shape))
