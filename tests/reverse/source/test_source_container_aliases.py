"""Writes into an object reached through a container (``rows[0].reverse()``, ``row =
operator.getitem(m, 0); row[1] = v``): the object may be one another variable holds, so the source
engine refuses the write (the entry points then take the tape), where it had differentiated the
function as if nothing had changed."""

from __future__ import annotations

import functools
import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source


def reversed_through_an_element(x):
    a = [3.0 * x, 1.0]
    rows = [a]
    rows[0].reverse()
    return a[0] * 2.0 + a[1]


def sorted_through_an_element(x):
    a = [3.0 * x, 1.0]
    rows = [a]
    rows[0].sort()
    return a[0] * 2.0 + a[1]


def appended_through_an_element(x):
    a = [x, 1.0]
    rows = [a]
    rows[0].append(x * x)
    return a[-1]


def appended_through_a_dict_entry(x):
    d = {"k": [x]}
    d["k"].append(x * x)
    return d["k"][-1]


def flip_first(rows):
    rows[0].reverse()


def reversed_in_a_helper(x):
    a = [3.0 * x, 1.0]
    flip_first([a])
    return a[0] * 2.0 + a[1]


def row_of_getitem(x):
    m = [[x, 1.0], [2.0, x]]
    row = operator.getitem(m, 0)
    row[1] = x * x
    return m[0][1]


def entry_of_dict_get(x):
    state = {"h": [x, 1.0]}
    h = state.get("h")
    h[0] = 5.0
    return state["h"][0] * x


def longest_of_max(x):
    a = [x, 1.0]
    b = max(a, [0.0], key=len)
    b[0] = 5.0
    return a[0] * x


def first_of_reduce(x):
    a = [x, 1.0]
    b = functools.reduce(lambda p, q: p, [a, [2.0]])
    b[0] = 5.0
    return a[0] * x


CASES = [
    reversed_through_an_element,
    sorted_through_an_element,
    appended_through_an_element,
    appended_through_a_dict_entry,
    reversed_in_a_helper,
    row_of_getitem,
    entry_of_dict_get,
    longest_of_max,
    first_of_reduce,
]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_the_source_engine_refuses_and_the_gradient_is_the_tapes(f):
    with pytest.raises((cr.NoRuleError, cr.UnsupportedSyntaxError)):
        source.pullback_full(f, 1.5)
    h = 1e-6
    expected = (f(1.5 + h) - f(1.5 - h)) / (2 * h)
    (gradient,) = cr.gradient(f, 1.5)
    assert gradient == pytest.approx(expected, rel=1e-6)


def test_elements_read_and_fresh_lists_appended_stay_with_the_source_engine():
    def appended(x):
        out = []
        for i in range(3):
            out.append(x * i)
        return sum(out)

    def rows_read(x):
        rows = [[x, 1.0], [2.0, x]]
        return sum(r[0] * r[1] for r in rows)

    for f, expected in ((appended, 3.0), (rows_read, 3.0)):
        y, back = source.pullback_full(f, 1.5)
        assert back(1.0)[1] == pytest.approx(expected)
    np.testing.assert_allclose(cr.gradient(rows_read, 1.5)[0], 3.0)
