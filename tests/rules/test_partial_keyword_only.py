"""A ``functools.partial`` holding a number for a keyword-only parameter: the source engine cannot
pass its derivative back through a keyword, and its refusal says what to write instead (storing
it positionally is impossible for a keyword-only parameter); the entry points take the tape."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source


def model(x, w, *, bias=0.0):
    return np.tanh(w * x + bias)


def with_partial(x, w):
    g = functools.partial(model, bias=0.1)
    return np.sum(g(x, w) ** 2)


def with_lambda(x, w):
    g = lambda v, u: model(v, u, bias=0.1)  # noqa: E731 (what the message advises)
    return np.sum(g(x, w) ** 2)


def test_the_refusal_advises_a_lambda_for_a_keyword_only_parameter():
    x = np.array([0.3, -0.7])
    with pytest.raises(cr.NoRuleError, match="keyword-only parameter, call .*model in a lambda or def"):
        source.pullback_full(with_partial, x, 0.8)
    expected = cr.gradient(with_partial, x, 0.8, engine="tape")
    for got, want in zip(cr.gradient(with_partial, x, 0.8), expected):  # the entry points take the tape
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(cr.gradient(with_lambda, x, 0.8), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)
