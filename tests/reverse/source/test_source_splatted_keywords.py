"""Keyword arguments passed with ``**mapping`` to a callable with a rule: a rule differentiates
positional arguments only, so those that carry derivatives are passed by position (the keys of
the mapping are known when the call runs), or the call is refused where no position takes them,
as for keyword arguments written out."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.tangents import unthunk
from chainrules.reverse.source import pullback_full

X, Y = np.array([1.0, 2.0]), np.array([3.0, 4.0])


def dot_of_a_mapping(p):
    return np.dot(**p)


def dot_of_a_displayed_mapping(a, b):
    return np.dot(a, **{"b": b})


def sum_by_keyword(x):
    return np.sum(**{"a": x})


def average_with_options(a, options):
    return np.sum(np.average(a, **options))


def dict_of_keywords(p):
    return dict(**p)["w"] * 2.0


def test_the_values_of_a_splatted_mapping_get_their_cotangents():
    _, back = pullback_full(dot_of_a_mapping, {"a": X, "b": Y})
    d = back(1.0)[1]
    np.testing.assert_allclose(unthunk(d["a"]), Y)
    np.testing.assert_allclose(unthunk(d["b"]), X)


def test_a_splatted_display_passes_its_differentiated_value_by_position():
    _, back = pullback_full(dot_of_a_displayed_mapping, X, Y)
    _, da, db = back(1.0)
    np.testing.assert_allclose(unthunk(da), Y)
    np.testing.assert_allclose(unthunk(db), X)


def test_a_splatted_keyword_is_the_rules_positional_parameter():
    y, back = pullback_full(sum_by_keyword, X)
    assert y == 3.0
    np.testing.assert_allclose(back(1.0)[1], [1.0, 1.0])


def test_only_the_splatted_values_that_carry_numbers_move_to_their_positions():
    options = {"weights": Y, "axis": 0}
    y, back = pullback_full(average_with_options, X, options)
    assert y == pytest.approx(np.average(X, weights=Y))
    _, da, doptions = back(1.0)
    expected = cr.gradient(average_with_options, X, options, engine="tape")
    np.testing.assert_allclose(da, expected[0])
    np.testing.assert_allclose(doptions["weights"], expected[1]["weights"])


def test_a_splatted_keyword_no_position_takes_is_refused_and_the_tape_differentiates():
    with pytest.raises(cr.NoRuleError, match=r"builtins\.dict.*'w' depends on differentiated values"):
        pullback_full(dict_of_keywords, {"w": 0.5})
    (d,) = cr.gradient(dict_of_keywords, {"w": 0.5})
    assert d["w"] == 2.0
