"""A plain array that a recorded operation took as a constant, changed in place later by the
function: the pullback would read the changed values. The tape keeps the values of such arrays
and, when the function returns, refuses it if one changed; the arrays themselves are left as they
are (writable, views of them too)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr

X = np.array([0.3, 1.2])
CHANGED = r"changed in place an array .* after an operation being differentiated"
WEIGHTS = np.ones(2)


def written_after_use(x):
    c = np.ones(2)
    y = np.sum(c * x)
    c[0] = 5.0  # the line the refusal names
    return y


def masked_in_a_loop(x):
    w = np.ones(2)
    s = 0.0
    for k in range(3):
        s = s + np.dot(w, x)
        if k == 0:
            w[1] = 0.0
    return s


def filled_after_use(x):
    c = np.ones(2)
    y = np.sum(c * x)
    c.fill(5.0)
    return y


def scaled_in_place_after_use(x):
    c = np.ones(2)
    y = np.sum(c * x)
    c *= 5.0
    return y


@pytest.mark.parametrize("f", [written_after_use, masked_in_a_loop, filled_after_use, scaled_in_place_after_use])
def test_a_write_after_use_is_refused_by_the_tape(f):
    with pytest.raises(cr.DroppedDerivativeError, match=CHANGED):
        cr.gradient(f, X, engine="tape")


def test_the_refusal_names_the_function_and_the_array():
    named = r"written_after_use changed in place an array \(of shape \(2,\)"
    with pytest.raises(cr.DroppedDerivativeError, match=named):
        cr.gradient(written_after_use, X, engine="tape")


def test_the_default_engine_refuses_rather_than_give_the_tapes_wrong_gradient():
    with pytest.raises(cr.ChainRulesError):
        cr.gradient(masked_in_a_loop, X)
    with pytest.raises(cr.ChainRulesError):
        cr.jacobian(written_after_use, X, mode="reverse")


def test_a_write_before_use_and_constants_never_written_are_differentiated():
    def written_before_use(x):
        c = np.ones(2)
        c[0] = 5.0
        return np.sum(c * x)

    np.testing.assert_array_equal(cr.gradient(written_before_use, X, engine="tape")[0], [5.0, 1.0])
    np.testing.assert_array_equal(cr.gradient(lambda x: np.sum(WEIGHTS * x), X, engine="tape")[0], [1.0, 1.0])


def test_constants_are_writable_again_after_the_recording():
    view = WEIGHTS[:1]
    y, back = cr.pullback(lambda x: np.sum(WEIGHTS * x) + np.sum(view * x[:1]), X, engine="tape")
    assert WEIGHTS.flags.writeable and view.flags.writeable
    np.testing.assert_array_equal(back(1.0)[0], [2.0, 1.0])
    with pytest.raises(cr.DroppedDerivativeError):
        cr.gradient(written_after_use, X, engine="tape")
    assert WEIGHTS.flags.writeable


DATA = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


def test_a_buffer_refilled_after_a_sum_or_difference_is_differentiated():
    # a sum's or a difference's pullback reads no operand: the buffer is not held
    def refilled(x):
        buf = np.zeros(2)
        total = 0.0
        for row in DATA:
            buf[:] = row
            total = total + np.sum(x - buf) + np.sum(buf + x)
        return total

    np.testing.assert_array_equal(cr.gradient(refilled, X, engine="tape")[0], [6.0, 6.0])


def test_the_users_own_read_only_errors_pass_through():
    def complains(x):
        np.sum(WEIGHTS * x)  # (a constant held while the tape records)
        raise ValueError("the configuration is read-only")

    with pytest.raises(ValueError, match="configuration is read-only"):
        cr.gradient(complains, X, engine="tape")


X3 = np.array([1.0, 2.0, 3.0])


def written_through_the_base_of_a_view(x):
    W = np.ones((2, 3))
    y = x * W[0]
    W[0, 0] = 5.0
    return y.sum()


def written_through_the_base_of_a_transpose(x):
    W = np.ones((3, 3))
    y = W.T @ x
    W[0, 1] = 5.0
    return y.sum()


def weights_by_keyword_written(x):
    c = np.array([1.0, 2.0, 3.0])
    y = np.average(x * x, weights=c)
    c[0] = 10.0
    return y


def written_after_use_inside_a_list(x):
    c = np.ones(3)
    y = np.linalg.multi_dot([c, x])
    c[0] = 5.0
    return y


def index_written_after_use_inside_a_key(x):
    stacked = np.stack([x, x * x])
    idx = np.array([0, 1])
    y = stacked[1, idx]
    idx[0] = 2
    return (y * y).sum()


@pytest.mark.parametrize(
    "f",
    [
        written_through_the_base_of_a_view,
        written_through_the_base_of_a_transpose,
        weights_by_keyword_written,
        written_after_use_inside_a_list,
        index_written_after_use_inside_a_key,
    ],
)
def test_a_write_reaching_a_constant_by_another_route_is_refused(f):
    with pytest.raises(cr.DroppedDerivativeError, match=CHANGED):
        cr.gradient(f, X3, engine="tape")


GRID = np.ones((2, 3))
ROW = GRID[0]  # (a global: a closure's captured arrays are tracked, not constants)
INDEX = np.array([0, 2])


def test_bases_keywords_and_list_items_are_writable_again_after_the_recording():
    def reads_them(x):
        stacked = np.stack([x, x])
        return np.sum(x * ROW) + np.average(x, weights=ROW) + np.linalg.multi_dot([ROW, x]) + np.sum(stacked[1, INDEX])

    cr.gradient(reads_them, X3, engine="tape")
    assert GRID.flags.writeable and ROW.flags.writeable and INDEX.flags.writeable
    with pytest.raises(cr.DroppedDerivativeError):
        cr.gradient(written_through_the_base_of_a_view, X3, engine="tape")

    def refused(x):
        y = np.sum(x * ROW) + np.sum(x[INDEX])
        GRID[0, 0] = 2.0
        return y

    with pytest.raises(cr.DroppedDerivativeError):
        cr.gradient(refused, X3, engine="tape")
    assert GRID.flags.writeable and ROW.flags.writeable and INDEX.flags.writeable


def test_views_made_while_recording_and_rows_not_read_stay_as_they_are():
    c = np.arange(4.0)

    def with_a_view(x):
        return np.sum(x * c), c[:2]  # a view of a constant, returned as aux

    (g,), aux = cr.gradient(with_a_view, np.ones(4), has_aux=True, engine="tape")
    aux[0] = 100.0  # the caller writes into it
    assert c[0] == 100.0 and g.tolist() == [0.0, 1.0, 2.0, 3.0]

    np.testing.assert_array_equal(cr.gradient(rows_filled_as_read, np.ones(2), engine="tape")[0], [6.0, 6.0])


ROWS = np.ones((3, 2))  # (a module's array: a constant to the tape, which tracks what closures capture)


def rows_filled_as_read(x):
    total = 0.0
    for i in range(3):
        ROWS[i] = i + 1.0  # a row not read before
        total = total + np.sum(x * ROWS[i])
    return total


def test_a_buffer_refilled_after_a_concatenation_is_differentiated():
    def joined(x):
        buf = np.zeros(2)
        total = 0.0
        for i in range(3):
            buf[:] = i
            total = total + np.sum(np.concatenate([x, buf]) ** 2) + np.sum(np.stack([x, buf]))
        return total

    np.testing.assert_allclose(cr.gradient(joined, X, engine="tape")[0], 6.0 * X + 3.0)
