"""Writes into a function's own array after an operation took it through a route other than a
plain positional operand (a view ``W[0]``, ``W.T``, ``c.reshape(3)``; a keyword argument; an index
array inside a tuple key): a pullback keeps the array, so the source engine refuses the write,
naming its line, as it does for ``x * c`` then ``c[0] = 5.0``."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source


def row_view(x):
    W = np.ones((2, 3))
    y = x * W[0]
    W[0, 0] = 5.0
    return y.sum()


def keyword_weights(x):
    c = np.array([1.0, 2.0, 3.0])
    y = np.average(x * x, weights=c)
    c[0] = 10.0
    return y


def reshaped_operand(x):
    c = np.ones(3)
    y = np.dot(c.reshape(3), x)
    c[0] = 5.0
    return y


def index_in_a_tuple_key(x):
    X = np.stack([x, x * x])
    idx = np.array([0, 1])
    y = X[1, idx]
    idx[0] = 2
    return (y * y).sum()


def transposed_operand(x):
    W = np.ones((3, 3))
    y = W.T @ x
    W[0, 1] = 5.0
    return y.sum()


def rows_rescaled_in_a_loop(x):
    W = np.ones((2, 3))
    s = 0.0
    for i in range(2):
        s = s + np.sum((x * W[i]) ** 2)
        W[i] = W[i] * 2.0
    return s


CASES = [
    row_view,
    keyword_weights,
    reshaped_operand,
    index_in_a_tuple_key,
    transposed_operand,
    rows_rescaled_in_a_loop,
]


def _write_line(f) -> int:
    """The line of the function's last statement that writes into an element (``name[...] =``)."""
    lines, first = inspect.getsourcelines(f)
    writes = [first + i for i, text in enumerate(lines) if "] = " in text]
    return writes[-1]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_the_write_after_the_use_is_refused_at_its_line(f):
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(cr.UnsupportedSyntaxError, match=rf":{_write_line(f)}:\d+: writing into `\w+` after it"):
        source.pullback_full(f, x)


def test_a_write_before_the_view_is_read_stays_with_the_source_engine():
    def written_then_read(x):
        W = np.ones((2, 3))
        W[0, 0] = 5.0
        y = x * W[0]
        return y.sum()

    x = np.array([1.0, 2.0, 3.0])
    y, back = source.pullback_full(written_then_read, x)
    assert y == pytest.approx(10.0)
    np.testing.assert_allclose(cr.unthunk(back(1.0)[1]), [5.0, 1.0, 1.0])
