"""A ufunc's methods (``np.add.reduce``, ``np.maximum.accumulate``, ``np.logaddexp.reduce``) in code the
source engine transforms use their rules, which are registered per ufunc, as every other engine does."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_grads

X = np.array([[0.3, -1.2, 2.0], [1.0, 0.5, -0.5]])


def sum_of_rows(x):
    return np.sum(np.add.reduce(x * x, axis=1) ** 2)


def product_of_columns(x):
    return np.sum(np.multiply.reduce(x + 2.0))


def running_maxima(x):
    return np.sum(np.maximum.accumulate(x * x, axis=1))


def running_sums(x):
    return np.sum(np.add.accumulate(x, axis=1) ** 2)


def log_sum_exp(x):
    return np.sum(np.logaddexp.reduce(x * x, axis=1))


def log2_sum_exp2(x):
    return np.logaddexp2.reduce(x.ravel())


PROGRAMS = [sum_of_rows, product_of_columns, running_maxima, running_sums, log_sum_exp, log2_sum_exp2]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_source_gradients_of_ufunc_methods_agree_with_finite_differences_and_the_tape(f):
    assert check_grads(f, (X,), modes=("reverse",), order=2, engine="source")
    np.testing.assert_allclose(cr.gradient(f, X)[0], cr.gradient(f, X, engine="tape")[0], rtol=1e-13)


def test_a_running_maximum_sends_the_cotangent_to_the_entry_holding_it():
    # row 1 of x * x is [1, 0.25, 0.25]: its running maximum is x[1, 0] ** 2 three times
    expected = [[0.6, -2.4, 4.0], [6.0, 0.0, 0.0]]
    np.testing.assert_allclose(cr.gradient(running_maxima, X)[0], expected, atol=1e-15)


def test_a_ufunc_method_without_a_rule_is_refused_with_its_name_and_line():
    def segment_sums(x):
        return np.sum(np.multiply.reduceat(x, [0, 2]))

    with pytest.raises(cr.NoRuleError, match=r"reduceat.*test_source_ufunc_methods\.py:\d+"):
        cr.gradient(segment_sums, np.arange(4.0))
