"""Two constructs of everyday numerical code: a power whose integer exponent is a loop counter
(``x ** k`` in a series, at ``x = 0`` too), and writes into a list through a slice or a NumPy
integer index. Each is checked against finite differences, the tape and forward mode."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.source import pullback_full
from chainrules.testing import fd_jacobian


def series(x):
    s = 0.0
    for k in range(4):  # 1 + x + x^2 + x^3: the k = 0 term's partial is 0, not 0 * x ** -1
        s = s + x**k
    return s


def series_of_an_element(x):
    s = 0.0
    for k in range(4):
        s = s + x[0] ** k * x[1]
    return s


def exp_taylor(x):
    return sum(x**k / float(np.prod(np.arange(1, k + 1))) for k in range(10))


@pytest.mark.parametrize("x", [0.0, 0.5, -1.5])
def test_a_power_by_a_loop_counter_at_zero_and_elsewhere(x):
    expected = 1.0 + 2.0 * x + 3.0 * x**2
    assert pullback_full(series, x)[1](1.0)[1] == pytest.approx(expected, abs=1e-14)
    assert cr.gradient(series, x)[0] == pytest.approx(expected, abs=1e-14)
    truncated = sum(x**k / float(np.prod(np.arange(1, k + 1))) for k in range(9))  # the series' derivative
    assert cr.gradient(exp_taylor, x)[0] == pytest.approx(truncated, rel=1e-13)


@pytest.mark.parametrize("x0", [0.0, 0.7])
def test_a_power_of_an_array_element_by_a_loop_counter(x0):
    x = np.array([x0, 2.0])
    with np.errstate(all="raise"):  # no 0 * inf on the way
        g = pullback_full(series_of_an_element, x)[1](1.0)[1]
    np.testing.assert_allclose(g, [2.0 * (1.0 + 2.0 * x0 + 3.0 * x0**2), 1.0 + x0 + x0**2 + x0**3], atol=1e-14)
    np.testing.assert_allclose(g, cr.gradient(series_of_an_element, x, engine="tape")[0], atol=1e-14)


# ----- list writes through slices and NumPy integers -------------------------------------------


def replace_a_slice(x):
    items = [x[0], x[1], x[2]]
    items[1:3] = [x[2] ** 2, x[1]]
    return items[0] * items[1] + items[2]


def shrink_by_a_slice(x):
    items = [x[0], x[1], x[2], x[0] * x[1]]
    items[1:3] = (x[2] ** 3,)
    return items[0] * items[1] + items[2] * 2.0 + len(items)


def insert_by_an_empty_slice(x):
    items = [x[0], x[1]]
    items[1:1] = [x[2], x[0] * 2.0]
    return items[0] * items[1] + items[2] * items[3]


def write_an_extended_slice(x):
    items = [x[0], x[1], x[2], 1.0]
    items[::2] = [x[1] * 3.0, x[2] ** 2]
    return items[0] * items[1] + items[2] + items[3]


def write_at_a_numpy_integer(x):
    items = [x[0], x[1], x[2]]
    items[np.argmax(x)] = x[0] * 5.0
    return items[0] + items[1] * items[2]


def write_a_negative_slice_from_a_comprehension(x):
    items = [x[0], x[1], x[2]]
    items[-2:] = [v * 2.0 for v in items[:2]]
    return items[0] * items[1] * items[2]


LIST_WRITES = [
    replace_a_slice,
    shrink_by_a_slice,
    insert_by_an_empty_slice,
    write_an_extended_slice,
    write_at_a_numpy_integer,
    write_a_negative_slice_from_a_comprehension,
]


@pytest.mark.parametrize("f", LIST_WRITES, ids=lambda f: f.__name__)
def test_list_writes_through_slices_and_numpy_integers(f):
    x = np.array([0.3, 0.7, 0.4])
    expected = fd_jacobian(f, x)[0]
    np.testing.assert_allclose(pullback_full(f, x)[1](1.0)[1], expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.gradient(f, x, engine="tape")[0], expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-7, atol=1e-9)


def test_a_list_written_at_a_float_index_is_refused_clearly():
    def f(x):
        items = [x[0], x[1]]
        items[1.0] = x[0]
        return items[0]

    with pytest.raises(TypeError, match="integers or slices, not float"):
        pullback_full(f, np.array([0.3, 0.7]))
