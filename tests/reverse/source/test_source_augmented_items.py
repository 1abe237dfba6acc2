"""``x[i] op= v``: the source engine computes ``x[i] = x[i] op v``. Python updates a mutable
element (an array held by a list or dict) in place, which every other holder of it sees; the
source engine refuses that naming the line, and the entry points differentiate on the tape.
Numbers, and the elements of arrays (numbers, or new views written back), keep the rewrite."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.source import pullback_full
from chainrules.testing import fd_jacobian

HERE = pathlib.Path(__file__).resolve()


def line_of(marker: str) -> int:
    """The line of this file that contains ``marker`` (in a comment)."""
    for number, line in enumerate(HERE.read_text().splitlines(), start=1):
        if marker in line and "line_of" not in line:
            return number
    raise LookupError(marker)


def updates_an_array_another_name_holds(a):
    b = a * 1.0
    held = [b]
    held[0] += 1.0  # <- b changes too
    return np.sum(held[0] * b)


def updates_an_array_the_list_holds_twice(a):
    b = a * 1.0
    held = [b, b]
    held[0] *= 2.0  # <- held[1] changes too
    return np.sum(held[1])


def updates_an_array_of_a_copied_dict(p):
    d = dict(p)
    d["w"] += 1.0  # <- p["w"] changes too
    return np.sum(p["w"] * d["w"])


def updates_a_number_in_a_list(a):
    held = [1.0, a[0]]
    held[0] += a[1]
    held[1] *= held[0]
    return held[0] * held[1]


def updates_blocks_and_rows_of_an_array(a):
    K = np.zeros((3, 3))
    K[0:2, 0:2] += np.outer(a, a)
    K[1] += a[0]
    return np.sum(K * K)


@pytest.mark.parametrize(
    "f, arg, marker",
    [
        (updates_an_array_another_name_holds, np.array([1.0, 2.0]), "<- b changes too"),
        (updates_an_array_the_list_holds_twice, np.array([1.0, 2.0]), "<- held[1] changes too"),
        (updates_an_array_of_a_copied_dict, {"w": np.array([1.0, 2.0])}, '<- p["w"] changes too'),
    ],
)
def test_an_array_element_updated_in_place_is_refused_at_its_line(f, arg, marker):
    with pytest.raises(
        cr.UnsupportedSyntaxError, match=rf"{HERE}:{line_of(marker)}:\d+: .*updates the ndarray in place"
    ):
        pullback_full(f, arg)


def test_the_entry_point_differentiates_a_shared_element_update_on_the_tape():
    a = np.array([1.0, 2.0])
    value, (grad,) = cr.value_and_gradient(updates_an_array_another_name_holds, a)
    assert value == updates_an_array_another_name_holds(a.copy()) == 13.0
    np.testing.assert_allclose(grad, 2.0 * (a + 1.0))
    value, (grad,) = cr.value_and_gradient(updates_an_array_the_list_holds_twice, a)
    assert value == 6.0
    np.testing.assert_allclose(grad, [2.0, 2.0])


@pytest.mark.parametrize("f", [updates_a_number_in_a_list, updates_blocks_and_rows_of_an_array])
def test_numbers_and_parts_of_arrays_are_updated_by_the_source_engine(f):
    a = np.array([0.7, -1.3])
    y, back = pullback_full(f, a)
    assert y == pytest.approx(f(a.copy()))
    np.testing.assert_allclose(back(1.0)[1], fd_jacobian(lambda z: f(z.copy()), a)[0], rtol=1e-7)
