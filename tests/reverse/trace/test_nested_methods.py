"""Array methods called on the results of array methods, on the tape.

Each method of a tracked array goes through the rule of its ``np.ndarray`` counterpart; a
method of a method's result must do the same, including on the NumPy scalar a full reduction
returns. Checked against finite differences and the source engine.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_vjp

RNG = np.random.default_rng(7)
X = RNG.normal(size=(3, 4))
Y = RNG.normal(size=(3, 2))

CHAINS = {
    "sum_then_mean": lambda x, y: x.sum(axis=0).mean(),
    "transpose_dot_sum": lambda x, y: x.T.dot(y).sum(),
    "reshape_max": lambda x, y: x.reshape(4, 3).max(),
    "reshape_max_axis_squared": lambda x, y: (x.reshape(2, 6).max(axis=1) ** 2).sum(),
    "mean_then_std": lambda x, y: x.mean(axis=1).std(),
    "cumsum_then_prod": lambda x, y: x.cumsum(axis=0).prod(),
    "ravel_and_flatten": lambda x, y: (x.ravel()[::2] * x.flatten()[1::2]).sum(),
    "swapaxes_sum_sum": lambda x, y: (x.swapaxes(0, 1).sum(axis=1) ** 2).sum(),
    "transpose_clip_sum": lambda x, y: x.transpose().clip(-0.5, 0.5).sum(),
    "keepdims_normalized_var": lambda x, y: (x / x.sum(axis=1, keepdims=True)).var(),
    "dot_trace": lambda x, y: x.dot(x.T).trace(),
    "dot_diagonal_sum": lambda x, y: x.dot(x.T).diagonal().sum(),
    "dot_dot_sum": lambda x, y: x.dot(x.T).dot(y).sum(),
    "squeeze_sum_min": lambda x, y: x[None].squeeze(0).sum(axis=-1).min(),
    "repeat_sum_prod": lambda x, y: x.repeat(2, axis=0).sum(axis=1).prod(),
    "take_argsort": lambda x, y: x.take(x.argsort(axis=None)[:3]).sum(),
    "reshape_sum_reshape_max": lambda x, y: x.reshape(2, 2, 3).sum(axis=1).reshape(-1).max(),
    "transpose_reshape_transpose": lambda x, y: x.T.reshape(3, 4).T.sum(0).sum(),
    "keepdims_transpose_dot": lambda x, y: x.sum(axis=1, keepdims=True).T.dot(x).sum(),
    # methods of the NumPy scalar a full reduction returns
    "scalar_sum": lambda x, y: x.sum(axis=(0, 1)).sum() * x.max(),
    "scalar_mean_times_sum": lambda x, y: x.max().mean() * x.sum(),
    "scalar_reshape_dot": lambda x, y: x.sum().reshape(1).dot(x[0, :1]),
    "scalar_clip": lambda x, y: x.prod().clip(-1e-3, 1e-3) * x.sum(),
    "scalar_astype": lambda x, y: x.mean().astype(np.float64) * x.min(),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_nested_methods_agree_with_finite_differences(name):
    f = CHAINS[name]
    dx, dy = cr.gradient(f, X, Y, engine="tape")
    fd_dx, fd_dy = fd_vjp(lambda xy: f(*xy), 1.0, (X, Y))
    np.testing.assert_allclose(dx, fd_dx, rtol=1e-6, atol=1e-9)
    if not isinstance(dy, cr.ZeroTangent):
        np.testing.assert_allclose(dy, fd_dy, rtol=1e-6, atol=1e-9)
    else:
        np.testing.assert_allclose(fd_dy, 0.0, atol=1e-9)


@pytest.mark.parametrize("name", sorted(n for n in CHAINS if not n.startswith("scalar_")))
def test_nested_methods_agree_with_the_source_engine(name):
    f = CHAINS[name]
    tape = cr.gradient(f, X, Y, engine="tape")
    source = cr.gradient(f, X, Y, engine="source")
    for t, s in zip(tape, source):
        if isinstance(t, cr.ZeroTangent) or isinstance(s, cr.ZeroTangent):
            assert isinstance(t, cr.ZeroTangent) and isinstance(s, cr.ZeroTangent)
        else:
            np.testing.assert_allclose(t, s, rtol=1e-12, atol=1e-14)


HERE = r"test_nested_methods\.py:\d+"
NO_RULE = {
    r"ndarray\.tobytes.*" + HERE: lambda x: x.sum(axis=0).tobytes(),
    r"ndarray\.view.*" + HERE: lambda x: x.T.view().sum(),
    r"ndarray\.byteswap.*" + HERE: lambda x: x.T.byteswap().sum(),
    r"getattr\(numpy\.ndarray, str\) at .*" + HERE + r" \(ndarray\.flat": lambda x: sum(x.T.flat),
    r"getattr\(numpy\.ndarray, str\) at .*" + HERE + r" \(ndarray\.base": lambda x: x.T.base.sum(),
}


@pytest.mark.parametrize("expected", sorted(NO_RULE))
def test_a_method_or_attribute_without_a_rule_is_a_clear_error(expected):
    with pytest.raises(cr.NoRuleError, match=expected):
        cr.gradient(NO_RULE[expected], X, engine="tape")


def test_methods_that_write_or_do_not_exist_are_refused():
    with pytest.raises(cr.NoRuleError, match=r"numpy\.generic\.fill"):  # a scalar's fill writes nothing
        cr.gradient(lambda x: x.sum().fill(0.0), X, engine="tape")
    y, _ = cr.pullback(lambda x: x.sum().astype(np.float32), X, engine="tape")
    assert type(y) is np.float32  # what the scalar's own method returns, not a 0-d array
    with pytest.raises(AttributeError, match="'float' object .* has no attribute 'sum'"):
        cr.gradient(lambda a: a.sum(), 2.0, engine="tape")
