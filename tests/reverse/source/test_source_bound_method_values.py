"""A method read as a value and called later (``m = x.sum; m()``) runs as the call ``x.sum()``
would, by its rule, and its cotangent reaches the object it is bound to: an array's, a NumPy
number's, a SciPy distribution's. Each is checked against finite differences and the tape."""

import numpy as np
import pytest
import scipy.stats as st

import chainrules as cr
from chainrules.reverse.source import pullback_full
from chainrules.testing import fd_jacobian


def method_of_an_array(v):
    m = v.sum
    return m()


def method_with_arguments(v):
    m = v.reshape
    return (m(3, 1) * 2.0).sum()


def method_with_keywords(v):
    m = v.sum
    return m(axis=0, keepdims=False) * 1.5


def method_taking_the_array(v):
    m = v.dot
    return m(v)


def method_from_a_list(v):
    return [v.sum, v.mean][1]() * 3.0


def method_of_a_number(v):
    s = v[0] * 2.0
    m = s.conjugate
    return m() * v[1]


def method_of_a_distribution(v):
    m = st.norm.logpdf
    return np.sum(m(v))


def method_given_a_differentiated_keyword(v):
    m = st.uniform.ppf
    return np.sum(m(np.array([0.2, 0.5, 0.7]), loc=v[0], scale=v[1] + 2.0) * v[2])


CASES = [
    method_given_a_differentiated_keyword,
    method_of_an_array,
    method_with_arguments,
    method_with_keywords,
    method_taking_the_array,
    method_from_a_list,
    method_of_a_number,
    method_of_a_distribution,
]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_a_bound_method_called_as_a_value(f):
    x = np.array([0.5, 1.0, 1.5])
    expected = fd_jacobian(f, x)[0]
    np.testing.assert_allclose(pullback_full(f, x)[1](1.0)[1], expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-7, atol=1e-9)
    if f not in (method_of_a_distribution, method_given_a_differentiated_keyword):
        # (the tape refuses a Python function with a rule called inside f)
        np.testing.assert_allclose(cr.gradient(f, x, engine="tape")[0], expected, rtol=1e-7, atol=1e-9)


def _call_it(g):
    return g() * 2.0


def method_passed_to_a_function(v):
    return _call_it(v.max)


def test_a_method_of_an_array_passed_to_a_function_is_refused_and_taken_by_the_tape():
    x = np.array([0.5, 1.0, 1.5])
    with pytest.raises(cr.UnsupportedSyntaxError, match="the argument `g` of _call_it is the method max"):
        pullback_full(method_passed_to_a_function, x)
    np.testing.assert_allclose(cr.gradient(method_passed_to_a_function, x)[0], [0.0, 0.0, 2.0])
