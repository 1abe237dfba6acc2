"""``match_input`` on arrays: sums over broadcast axes (leading and length-1), keeps the input's
float dtype, takes the real part for a real input."""

import numpy as np
import pytest

import chainrules as cr


@pytest.mark.parametrize(
    "x_shape, dx_shape",
    [((3, 1), (3, 4)), ((4,), (2, 3, 4)), ((1, 4), (3, 4)), ((2, 1, 4), (5, 2, 3, 4)), ((3, 4), (3, 4)), ((), (2,))],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_over_broadcast_axes_and_keeps_the_dtype(x_shape, dx_shape, dtype):
    x = np.ones(x_shape, dtype)
    dx = np.arange(np.prod(dx_shape), dtype=np.float64).reshape(dx_shape)
    got = cr.match_input(x, dx)
    extra = len(dx_shape) - len(x_shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(x_shape) if n == 1 and dx_shape[i + extra] != 1)
    expected = dx.sum(axis=axes).reshape(x_shape)
    assert type(got) is np.ndarray and got.dtype == dtype and got.shape == x_shape
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_a_real_input_gets_the_real_part_and_an_array_of_its_shape_passes_as_it_is():
    x = np.ones((2, 3), np.float32)
    got = cr.match_input(x, np.full((2, 3), 1.0 + 2.0j, np.complex64))
    assert got.dtype == np.float32 and np.all(got == 1.0)
    same = np.ones((2, 3), np.float32)
    assert cr.match_input(x, same) is same
    z = np.ones(3, np.complex128)
    assert cr.match_input(z, np.full((2, 3), 1j)).tolist() == [2j, 2j, 2j]
