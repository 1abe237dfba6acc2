"""``match_input`` on arrays: sums over broadcast axes (leading and length-1), keeps the input's
float dtype, takes the real part for a real input."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import match_input_batch


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


def test_a_list_numpy_took_as_an_array_gets_a_structural_cotangent():
    # as an engine splits a list's cotangent by element (an array would be split along a batch axis)
    got = cr.match_input([[1.0, 2], [3.0, True]], np.array([[1.0 + 1j, 2.0], [3.0, 4.0]]))
    assert got == cr.Tangent[list](cr.Tangent[list](1.0, 2.0), cr.Tangent[list](3.0, cr.NoTangent()))
    assert cr.match_input((1.0, 2.0), np.array([[1.0, 2.0], [3.0, 4.0]])) == cr.Tangent[tuple](4.0, 6.0)
    batch = match_input_batch([1.0, np.float32(2.0)], np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    np.testing.assert_array_equal(batch[0], [1.0, 3.0, 5.0])
    assert batch[1].dtype == np.float32 and batch[1].tolist() == [2.0, 4.0, 6.0]
