"""``np.add.at(buffer, idx, v)`` with ``v`` being differentiated on the tape: refused as a write in
place, naming the line and an out-of-place form, as forward mode refuses it. The tape had answered
that ``ufunc.at`` has no rule and suggested marking it non-differentiable, which would have given
a zero derivative."""

import numpy as np
import pytest

import chainrules as cr


def scatter_sum(v):
    totals = np.zeros(3)
    np.add.at(totals, np.array([0, 2, 0]), v)  # <- add.at
    return np.sum(totals**2)


def test_ufunc_at_is_refused_as_a_write_in_place():
    with pytest.raises(TypeError, match=r"np\.add\.at\(\.\.\.\) writes into an array in place \(at .*\.py:\d+\)") as e:
        cr.gradient(scatter_sum, np.array([1.0, 2.0, 3.0]), engine="tape")
    assert "non_differentiable" not in str(e.value)
    v = np.array([1.0, 2.0, 3.0])
    out_of_place = cr.gradient(lambda v: np.sum((np.eye(3)[np.array([0, 2, 0])].T @ v) ** 2), v, engine="tape")[0]
    np.testing.assert_allclose(out_of_place, [8.0, 4.0, 8.0])
