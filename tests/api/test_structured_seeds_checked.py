"""The cotangent of a structured output (``back`` of ``cr.pullback``) and the tangent of a
structured argument (``cr.jvp``) are checked part by part, as a whole output's or argument's
are: each number or array has its part's shape and holds numbers, a list is taken as an array,
and the structure is the output's (its length, its keys and fields). A mistake is a ValueError or
TypeError naming the function and the part, not a silent broadcast or an error from inside."""

import dataclasses

import numpy as np
import pytest

import chainrules as cr

X = np.array([1.0, 2.0])
ENGINES = ["source", "tape"]


@dataclasses.dataclass
class Fit:
    w: np.ndarray
    b: float


def scaled_and_total(x):
    return x * 2.0, np.sum(x)


def named_parts(x):
    return {"a": x, "fit": Fit(x * 3.0, x[0])}


def fit_value(p):
    return np.sum(p.w) * p.b


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "dy, error, match",
    [
        ((1.0, 0.0), ValueError, r"scaled_and_total: a cotangent of shape \(\) for output\[0\] of shape \(2,\)"),
        ((np.ones(1), 0.0), ValueError, r"a cotangent of shape \(1,\) for output\[0\] of shape \(2,\)"),
        ((np.ones(2), np.ones(2)), ValueError, r"a cotangent of shape \(2,\) for output\[1\] of shape \(\)"),
        ((np.ones(2), "one"), TypeError, r"must be a number or an array like output\[1\], got str"),
        ((["a", "b"], 0.0), TypeError, r"a cotangent of dtype <U1 for output\[0\]; give numbers"),
        ((np.ones(2),), ValueError, "a cotangent of length 1 for output, a tuple of length 2"),
        (1.0, TypeError, "the cotangent of output, a tuple, must be laid out as it"),
        (cr.Tangent[tuple](np.ones(3), 1.0), ValueError, r"shape \(3,\) for output\[0\]"),
    ],
)
def test_a_tuple_outputs_cotangent_is_checked_item_by_item(engine, dy, error, match):
    _, back = cr.pullback(scaled_and_total, X, engine=engine)
    with pytest.raises(error, match=match):
        back(dy)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "dy, error, match",
    [
        ({"zz": 1.0}, ValueError, r"named_parts: a cotangent for output\['zz'\], which output does not have"),
        ({"fit": Fit(np.ones(3), 1.0)}, ValueError, r"shape \(3,\) for output\['fit'\].w of shape \(2,\)"),
        ({"fit": {"w": X, "c": 1.0}}, ValueError, r"output\['fit'\].c, which output\['fit'\] does not have"),
        ({"fit": (X, 1.0)}, TypeError, r"the cotangent of output\['fit'\], a Fit, must be laid out as it"),
    ],
)
def test_keys_and_fields_the_output_has_not_are_refused(engine, dy, error, match):
    _, back = cr.pullback(named_parts, X, engine=engine)
    with pytest.raises(error, match=match):
        back(dy)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_list_in_a_structured_cotangent_is_an_array(engine):
    _, back = cr.pullback(scaled_and_total, X, engine=engine)
    np.testing.assert_array_equal(back(([1.0, 3.0], 0.0))[0], [2.0, 6.0])  # (a list times 2 would repeat it)
    np.testing.assert_array_equal(back([np.ones(2), 1.0])[0], [3.0, 3.0])
    _, back = cr.pullback(named_parts, X, engine=engine)
    np.testing.assert_array_equal(back({"fit": {"b": 1.0}})[0], [1.0, 0.0])  # (fields not given are zero)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_discrete_output_part_takes_nothing_whatever_is_given(engine):
    _, back = cr.pullback(lambda x: (x * 2.0, "label", True), X, engine=engine)
    np.testing.assert_array_equal(back((np.ones(2), "label", True))[0], [2.0, 2.0])


@pytest.mark.parametrize(
    "tangent, match",
    [
        (
            Fit(np.ones(3), 1.0),
            r"jvp\(fit_value, \.\.\.\): the tangent of primals\[0\].w has shape \(3,\), its primal \(2,\)",
        ),
        (Fit(X, 1j), r"the tangent of primals\[0\].b is complex and its primal is real"),
        ({"zz": 1.0}, r"a tangent for primals\[0\].zz, which primals\[0\] does not have"),
        ((X, 1.0), r"the tangent of primals\[0\], a Fit, must be laid out as it"),
    ],
)
def test_a_structured_tangent_is_checked_part_by_part(tangent, match):
    with pytest.raises((ValueError, TypeError), match=match):
        cr.jvp(fit_value, (Fit(X, 2.0),), (tangent,))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_part_not_given_or_given_lazily(engine):
    _, back = cr.pullback(named_parts, X, engine=engine)
    np.testing.assert_array_equal(back({"a": X})[0], X)  # (the whole Fit is zero)
    _, back = cr.pullback(scaled_and_total, X, engine=engine)
    np.testing.assert_array_equal(back(cr.Thunk(lambda: ([1.0, 1.0], 1.0)))[0], [3.0, 3.0])


def _pulled_back_by_a_list(s):
    _, back = cr.pullback(lambda x: (x * s, x * x), np.array([2.0, 1.0]))
    return np.sum(back(([1.0, 1.0], np.ones(2)))[0])


def _pushed_inside(s):
    return cr.jvp(lambda p: p[0] * p[1] * p[0], ((s, 2.0),), ((1.0, 0.0),))[1]


@pytest.mark.parametrize("outer", ["forward", "tape"])
def test_seeds_of_engine_values_inside_a_differentiated_function(outer):
    # the output's items and the argument's are the outer differentiation's values there
    def derivative(f, s):
        return cr.derivative(f, s) if outer == "forward" else cr.gradient(f, s, engine="tape")[0]

    assert _pulled_back_by_a_list(3.0) == 12.0 and derivative(_pulled_back_by_a_list, 3.0) == 2.0
    assert _pushed_inside(3.0) == 12.0 and derivative(_pushed_inside, 3.0) == 4.0


def test_none_for_a_part_is_a_zero_and_an_array_may_seed_a_tuple_of_numbers():
    x = np.array([1.0, 2.0])

    class Opaque:
        pass

    for f, seed in (
        (lambda x: (np.sum(x), 3), (1.0, None)),
        (lambda x: (np.sum(x), Opaque()), (1.0, None)),
        (lambda x: {"y": np.sum(x), "n": 3}, {"y": 1.0, "n": None}),
        (lambda x: (np.sum(x), np.sum(x**2)), np.array([1.0, 0.0])),
    ):
        np.testing.assert_array_equal(cr.pullback(f, x)[1](seed)[0], [1.0, 1.0])
    with pytest.raises(ValueError, match="length 3"):
        cr.pullback(lambda x: (np.sum(x), np.sum(x**2)), x)[1](np.array([1.0, 0.0, 0.0]))
