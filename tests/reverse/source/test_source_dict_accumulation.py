"""Accumulating into a dict the function made, reading with ``d.get(key, default)`` before the
write (a histogram, sums by key): ``get`` reads an element, as ``d[key]`` does, so the write that
follows is followed, not refused."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.source import pullback_full
from chainrules.testing import fd_jacobian


def sums_by_key(x):
    d = {}
    for i in range(3):
        key = "a" if i % 2 else "b"
        d[key] = d.get(key, 0.0) + x[i] * x[i]
    return d["a"] * d["b"]


def sums_by_key_without_a_default(x):
    d = {"a": 0.0, "b": 1.0}
    for i in range(3):
        key = "a" if i % 2 else "b"
        d[key] = d.get(key) * x[i] + x[i]
    return d["a"] + d["b"] ** 2


@pytest.mark.parametrize("f", [sums_by_key, sums_by_key_without_a_default], ids=lambda f: f.__name__)
def test_dict_accumulation_with_get(f):
    x = np.array([0.5, 1.0, 1.5])
    expected = fd_jacobian(f, x)[0]
    np.testing.assert_allclose(pullback_full(f, x)[1](1.0)[1], expected, rtol=1e-8)
    np.testing.assert_allclose(cr.gradient(f, x, engine="tape")[0], expected, rtol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-8)


def test_a_dict_handed_to_a_call_before_the_write_is_still_refused():
    def f(x):
        d = {"a": x[0]}
        seen = [d]  # another reference to d
        d["a"] = d.get("a") * 2.0
        return seen[0]["a"]

    with pytest.raises(cr.UnsupportedSyntaxError, match="writing into `d`"):
        pullback_full(f, np.array([0.5]))
