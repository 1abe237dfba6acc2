"""Writes into a buffer after reads viewed other parts of it: filling row after row while reading
earlier rows (an explicit Euler scheme, a running sum over the rows written) runs; a write into a
part a read viewed is refused, naming the line (the view would see it; the pullbacks keeping the
view need the values it saw)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.views import ViewedParts
from chainrules.reverse import source

X = np.array([0.5, 1.0, -2.0])


def rhs(u, k):
    return -k * u + np.sin(u)


def euler(x):
    u = np.zeros((5, 3))
    u[0] = x
    for t in range(4):
        u[t + 1] = u[t] + 0.1 * rhs(u[t], 2.0)
    return np.sum(u[-1] ** 2)


def euler_named_step(x):
    u = np.zeros((5, 3))
    u[0] = x
    for t in range(4):
        previous = u[t]
        u[t + 1] = previous + 0.1 * rhs(previous, 2.0)
    return np.sum(u[-1] ** 2) + np.sum(previous * x)


def running_sum_of_rows(x):
    buf = np.zeros((3, 3))
    s = 0.0
    for i in range(3):
        buf[i] = x * (i + 1.0)
        s = s + np.sum(np.sin(buf[i]) ** 2)  # (the pullbacks keep the row they read)
    return s + np.sum(buf * buf)


def disjoint_parts_of_one_row(x):
    A = np.zeros((2, 4))
    A[0, :3] = x
    head = A[0, :2]
    A[0, 3] = np.sum(np.exp(head))  # the entry after the part viewed
    A[1, 1:] = head[1] * x
    return np.sum(A**2) + np.sum(head * x[:2])


def fd_gradient(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


@pytest.mark.parametrize("f", [euler, euler_named_step, running_sum_of_rows, disjoint_parts_of_one_row])
def test_writes_beside_the_parts_reads_viewed_are_differentiated(f):
    y, back = source.pullback_full(f, X)
    assert y == f(X)
    gradient = back(1.0)[1]
    np.testing.assert_allclose(gradient, fd_gradient(f, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.gradient(f, X)[0], gradient, rtol=1e-14)
    # forward mode runs the function as the source engine's primal (its writes into a plain buffer)
    np.testing.assert_allclose(cr.jacobian(lambda x: np.atleast_1d(f(x)), X, mode="forward")[0], gradient, rtol=1e-12)
    hessian = np.array([(cr.gradient(f, X + 1e-5 * e)[0] - cr.gradient(f, X - 1e-5 * e)[0]) / 2e-5 for e in np.eye(3)])
    np.testing.assert_allclose(cr.hessian(f, X), hessian, rtol=1e-5, atol=1e-6)


def a_row_read_then_overwritten(x):
    u = np.zeros((2, 3))
    u[0] = x
    row = u[0]
    u[0] = row * 2.0  # <- the view `row` sees this write
    return np.sum(row * x)


def a_column_then_a_row(x):
    A = np.zeros((3, 3))
    A[0] = x
    column = A[:, 0]  # spans every row
    A[2] = np.sin(column)  # <- into the part the column views
    return np.sum(A)


def reversed_then_written(x):
    u = np.zeros(4)
    u[:3] = x
    back_to_front = u[::-1]
    u[3] = np.sum(back_to_front[1:])  # <- the reversed view spans the whole buffer
    return np.sum(u)


def an_index_array_write_after_a_read(x):
    u = np.zeros(4)
    u[:3] = x
    first = u[:1]
    u[[3, 2]] = np.sum(first) * x[:2]  # <- entries picked by an index array: any part counts
    return np.sum(u**2)


@pytest.mark.parametrize(
    "f", [a_row_read_then_overwritten, a_column_then_a_row, reversed_then_written, an_index_array_write_after_a_read]
)
def test_a_write_into_a_part_a_read_viewed_is_refused_naming_the_line(f):
    with pytest.raises(cr.UnsupportedSyntaxError, match="a part of it that a read viewed") as info:
        source.pullback_full(f, X)
    lines = [n for n, text in enumerate(open(__file__).read().splitlines(), 1) if "# <-" in text]
    assert any(f"{__file__}:{n}:" in str(info.value) for n in lines), str(info.value)


def moved_into_an_outer_buffer(x):
    u = np.zeros(3)
    head = u[0:2]
    u[2] = x[2]  # (in a Hessian a dual is written: the buffer becomes a dual array of new memory)
    u[0] = x[0]  # <- `head` views this entry
    return np.sum(head * x[:2]) + np.sum(u)


def test_a_write_into_a_viewed_part_is_refused_after_the_buffer_moved():
    with pytest.raises(cr.UnsupportedSyntaxError, match="a part of it that a read viewed"):
        source.pullback_full(moved_into_an_outer_buffer, X)
    with pytest.raises(cr.UnsupportedSyntaxError, match="a part of it that a read viewed"):
        cr.hessian(moved_into_an_outer_buffer, X, engine="source")


def test_viewed_parts_merge_and_overlap():
    parts = ViewedParts(np.zeros(1))
    parts.add(10, 20)
    parts.add(30, 40)
    assert (parts.starts, parts.ends) == ([10, 30], [20, 40])
    assert not parts.overlaps(20, 30) and not parts.overlaps(0, 10) and not parts.overlaps(40, 50)
    assert parts.overlaps(19, 21) and parts.overlaps(0, 11) and parts.overlaps(39, 41) and parts.overlaps(0, 100)
    parts.add(20, 30)  # touching both: one range
    assert (parts.starts, parts.ends) == ([10], [40])
    parts.add(50, 60)
    parts.add(0, 5)
    assert (parts.starts, parts.ends) == ([0, 10, 50], [5, 40, 60])
    parts.add(4, 55)
    assert (parts.starts, parts.ends) == ([0], [60])
