"""Writes into the tape engine's arrays (``reverse/trace/writes.py``): every program against finite
differences and the source engine, Hessians by forward over the tape, forward mode where it takes the
writes; views that see later writes; the refusals, naming the line; the O(n) bookkeeping."""

from __future__ import annotations

import re

import numpy as np
import program_checks as checks
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward

PROGRAMS, program = checks.new_corpus()
FORWARD_WRITES = "assigning into a dual array"  # forward mode writes only into arrays it owns


@program(np.array([0.3, 0.9, 1.4, -0.5]), hessian=True, refuses={"forward": FORWARD_WRITES})
def scalar_slice_mask_and_fancy_writes(x):
    y = x * 2.0
    y[0] = x[1] ** 2
    y[1:] += x[:-1]
    y[y > 1.5] *= 3.0
    y[[0, 2]] = np.sin(x[[1, 2]])
    return np.sum(y * y)


@program(np.array([0.3, 0.9, 1.4, -0.5, 0.7]), hessian=True)
def recurrence_into_a_copy(x):
    out = x.copy()
    for i in range(len(x)):
        out[i] = x[i] ** 2 + (out[i - 1] if i else 0.0)
    return np.sum(out * x)


@program(np.array([0.3, -0.9, 1.4, 0.5]), hessian=True, refuses={"source": "after it was passed to a call"})
def buffer_like_its_input_read_between_writes(x):
    out = np.zeros_like(x)
    total = 0.0
    for i in range(len(x)):
        out[i] = np.tanh(x[i]) * (i + 1)
        total = total + np.sum(out**2)  # reads the whole buffer: the next write copies it
    return total


@program(np.array([[0.2, 0.8, -0.3], [1.1, 0.4, 0.6]]), hessian=True, refuses={"forward": FORWARD_WRITES})
def rows_columns_ellipsis_and_broadcast(X):
    Y = X * 1.0
    Y[0] = X[1] * 2.0
    Y[:, 1] = 7.0
    Y[..., 0] += X[:, 2]
    Y[1, ::2] = X[0, 1]  # a number broadcast into the selection
    return np.sum(Y**2) + np.sum(Y[:, 0] * X[:, 1])


@program(
    np.array([0.3, 0.9, 1.4, -0.5]),
    hessian=True,
    refuses={"source": "after it was passed to a call", "forward": FORWARD_WRITES},
)
def a_view_sees_a_later_write(x):
    y = x * 1.0
    v = y[1:]  # a view: NumPy shows it the write below
    y[1] = x[0] * 5.0
    return np.sum(v * x[1:])


@program(
    np.array([0.3, 0.9, 1.4, -0.5]),
    hessian=True,
    refuses={"source": "is written in place later"},
)
def writes_through_a_view(x):
    y = x.copy()
    v = y[:2]
    v[0] = x[2] ** 3  # into y
    v += 1.0  # into y too
    return np.sum(y * x)


@program(np.array([0.3, 0.9, 1.4]), hessian=True, refuses={"forward": FORWARD_WRITES})
def integer_destination_truncates(x):
    counts = np.floor(x * 0.0).astype(np.int64) + 1
    y = x * 1.0
    y[np.array([True, False, True])] = x[1]
    return np.sum(y * x) + np.sum(counts)


@program(np.array([0.3, 0.9, 1.4, -0.5]), hessian=True)
def a_list_of_tracked_values_written(x):
    y = x.copy()
    y[1:3] = [x[0] * x[3], np.exp(x[1])]
    return np.sum(y**2)


@program(np.array([0.3, 0.9, 1.4, -0.5]), hessian=True)
def a_write_beside_a_reshaped_view(x):
    y = x * 2.0
    col = y[:2].reshape(2, 1)  # shares y's first two entries, which no write below touches
    y[3] = x[0] * col[1, 0]
    return np.sum(col * x[:2, None]) + np.sum(y**2)


@program(np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]), hessian=True, nested=True)
def cholesky_filled_entry_by_entry(A):
    # each entry reads the rows written before it, which the matrix product's rule reshapes
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j] - L[i, :j] @ L[j, :j]
            L[i, j] = np.sqrt(s) if i == j else s / L[j, j]
    return np.sum(L**3) + np.sum(np.log(np.diag(L)))


# `z.real = v` writes into a part of z's memory: an update of all of z (`core.active.with_part`),
# which the source engine refuses as it refuses any assignment to an attribute
ATTRIBUTE = "assigning to an attribute"
PART_SHARED = "writes into a part of an array that another array may share memory with"


@program(np.array([0.3, 0.9, 1.4, -0.5]), hessian=True, refuses={"source": ATTRIBUTE})
def real_part_assigned_into_a_real_array(x):
    y = x * 2.0
    y.real = y**2  # the whole of a real array
    return np.sum(y * np.arange(4.0))


@program(np.array([0.3, 0.9, 1.4, -0.5]), hessian=True, refuses={"source": ATTRIBUTE})
def imaginary_part_assigned_before_it_is_read(x):
    z = x + 1j * x[::-1]
    z.imag = np.sin(x) * x[0]
    return np.sum(np.abs(z) ** 2) + np.sum(np.angle(z))


@program(np.array([0.3, 0.9, 1.4, -0.5]), hessian=True, refuses={"source": ATTRIBUTE, "forward": PART_SHARED})
def real_part_assigned_through_a_view(x):
    z = x + 1j * x[::-1]
    middle = z[1:3]
    middle.real = x[:2] ** 2  # into z
    return np.sum(np.abs(z) ** 2)


@program(np.array([0.3, 0.9, 1.4, -0.5]), hessian=True, refuses={"source": ATTRIBUTE, "forward": PART_SHARED})
def a_view_sees_a_real_part_assigned_later(x):
    z = x + 1j * x[::-1]
    middle = z[1:3]
    z.real = x**3  # NumPy shows it in `middle`
    return np.sum(np.abs(middle) ** 2) + np.sum(np.abs(z))


@program(np.array([0.3, 0.9, 1.4, -0.5]), hessian=True, refuses={"source": ATTRIBUTE})
def real_part_replaced_by_a_function_of_itself(x):
    z = x + 1j * x[::-1]
    z.real = z.real**2  # `z.real` read first: a view of z, which the write rebinds
    return np.sum(np.abs(z) ** 2)


@program(
    np.array([0.3, 0.9, 1.4, -0.5]),
    hessian=True,
    refuses={"source": "after it was passed to a call", "forward": FORWARD_WRITES},
)
def the_real_part_sees_a_later_write(x):
    z = x + 1j * x[::-1]
    re = z.real  # a view: NumPy shows it the write below
    z[1] = x[0] * 3.0 - 1j * x[2]
    return np.sum(re * x) + np.sum(np.abs(z) ** 2)


@program(
    np.array([0.3, 0.9, 1.4, -0.5]),
    hessian=True,
    refuses={"source": "is written in place later", "forward": FORWARD_WRITES},
)
def writes_through_the_real_and_imaginary_parts(x):
    z = x + 1j * x[::-1]
    re, im = z.real, z.imag
    re[0] = x[2] ** 2  # into z
    im += x  # into z too
    return np.sum(np.abs(z) ** 2) + np.sum(re * im)


@program(
    np.array([0.3, 0.9, 1.4, -0.5]),
    refuses={"source": ATTRIBUTE, "tape": PART_SHARED, "forward": PART_SHARED},
)
def real_part_assigned_after_a_reshape_shares_it(x):
    z = x + 1j * x[::-1]
    square = z.reshape(2, 2)  # NumPy would show the write below in it
    z.real = x**2
    return np.sum(np.abs(square) ** 2)


NAMES = checks.parameters(PROGRAMS)
BY_NAME = {p.name: p for p in PROGRAMS}


@pytest.mark.parametrize("engine", ["tape", "source"])
@pytest.mark.parametrize("name", NAMES["all"])
def test_reverse_engines_match_finite_differences(name, engine):
    checks.check_reverse(BY_NAME[name], engine)


@pytest.mark.parametrize("name", NAMES["forward"])
def test_forward_mode_matches_finite_differences(name):
    checks.check_forward_jacobian(BY_NAME[name])


@pytest.mark.parametrize("name", NAMES["hessian"])
def test_hessian_over_the_tape_matches_finite_differences(name):
    checks.check_hessian(BY_NAME[name], "tape")


@pytest.mark.parametrize("name", NAMES["hessian"])
def test_hessian_over_the_source_engine_matches_finite_differences(name):
    # on dual numbers, the source engine's writes copy an array forward mode does not own (y = x * 2)
    checks.check_hessian(BY_NAME[name], "source")


@pytest.mark.parametrize("name", NAMES["nested"])
def test_tape_over_a_source_gradient_matches_finite_differences(name):
    # the source engine's primal runs on the tape's arrays: its rules' reshapes of views are the tape's
    checks.check_tape_over_source(BY_NAME[name])


@pytest.mark.parametrize("name", NAMES["all"])
def test_tape_agrees_with_the_source_engine_where_both_run(name):
    p = BY_NAME[name]
    if "source" in p.refuses:
        return
    f = checks.first_argument_function(p)
    x = p.args[0]
    np.testing.assert_allclose(
        cr.gradient(f, x, engine="tape")[0], cr.gradient(f, x, engine="source")[0], rtol=1e-12, atol=1e-14
    )


def test_forward_mode_over_a_tape_gradient():
    f = checks.first_argument_function(BY_NAME["recurrence_into_a_copy"])
    x, v = np.array([0.3, 0.9, 1.4, -0.5, 0.7]), np.linspace(-1.0, 1.0, 5)
    _, hv = cr.jvp(lambda z: cr.gradient(f, z, engine="tape")[0], (x,), (v,))
    reference = crt.fd_jacobian(lambda z: cr.gradient(f, z, engine="source")[0], x) @ v
    np.testing.assert_allclose(hv, reference, rtol=1e-6, atol=1e-8)


def test_reverse_jacobian_pulls_a_batch_back_through_writes():
    def f(x):
        y = x * 1.0
        y[1:] = x[:-1] ** 2
        y[..., 0] = y[3] * x[0]
        return y

    x = np.array([0.3, 0.9, 1.4, -0.5])
    J = cr.jacobian(f, x, mode="reverse", engine="tape")
    np.testing.assert_allclose(J, crt.fd_jacobian(f, x), rtol=1e-6, atol=1e-8)


def test_a_later_write_reaches_views_of_views_and_leaves_earlier_reads_alone():
    def f(x):
        Y = np.zeros_like(np.outer(x, x))
        row = Y[1]
        cell = row[1:]
        before = Y[1, 2] + 0.0  # a read before the write keeps the old value
        Y[1] = x * x[0]
        return np.sum(cell * x[1:]) + before

    x = np.array([0.5, -0.7, 1.3])
    y, back = cr.pullback(f, x, engine="tape")
    assert y == pytest.approx(np.sum(x[1:] * x[0] * x[1:]))
    np.testing.assert_allclose(back(1.0)[0], crt.fd_jacobian(f, x).ravel(), rtol=1e-6, atol=1e-8)


def test_the_cotangent_passed_in_is_not_written_into():
    def f(x):
        y = x * 1.0
        y[0] = x[1] * 3.0
        return y

    dy = np.array([1.0, 2.0, 3.0])
    _, back = cr.pullback(f, np.array([0.1, 0.2, 0.3]), engine="tape")
    np.testing.assert_allclose(back(dy)[0], [0.0, 5.0, 3.0])
    np.testing.assert_array_equal(dy, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(back(dy)[0], [0.0, 5.0, 3.0])  # a kept tape sweeps again


def _tape_of(f, x):
    from chainrules.reverse.trace.engine import pullback_full

    return pullback_full(f, x)[1]._trace.tape


def test_scalar_writes_go_in_place_and_cost_one_entry_each():
    # the bookkeeping behind O(n): the buffer is copied once, then every write is one tape entry
    # whose array is the buffer's own (no copy per write)
    from chainrules.reverse.trace.writes import write_into

    arrays = []

    def fill(x):
        out = x * 0.0
        for i in range(len(x)):
            out[i] = x[i] * x[i]
            arrays.append(out._value)
        return out.sum()

    x = np.linspace(0.0, 1.0, 50)
    tape = _tape_of(fill, x)
    assert sum(entry[2] is write_into for entry in tape) == 50
    assert all(a is arrays[0] for a in arrays)  # one array, written in place after the first copy
    np.testing.assert_allclose(cr.gradient(fill, x, engine="tape")[0], 2 * x)


def _line_of(f, offset: int) -> str:
    return re.escape(f"{__file__}:{f.__code__.co_firstlineno + offset})")


def test_a_write_into_an_argument_is_refused_with_the_line():
    def f(x):
        x[0] = 1.0
        return x.sum()

    with pytest.raises(TypeError, match="assignment into an argument being differentiated.*" + _line_of(f, 1)):
        cr.gradient(f, np.ones(2), engine="tape")


def test_a_write_after_a_reshape_shares_the_memory_is_refused_with_the_line():
    def f(x):
        y = x * 2.0
        flat = y.reshape(2, 1)
        y[0] = 1.0
        return np.sum(flat)

    with pytest.raises(TypeError, match="after another array came to share its memory.*" + _line_of(f, 3)):
        cr.gradient(f, np.ones(2), engine="tape")


def _write_into_a_reshaped_view(x):
    y = x * 2.0
    col = y[:2].reshape(2, 1)
    y[1] = 1.0
    return np.sum(col)


def _write_through_a_view_into_a_reshaped_view(x):
    y = x * 2.0
    col = y[1:][:2].reshape(2, 1)
    y[1:][0] = 1.0
    return np.sum(col)


def _write_through_another_view_overlapping_it(x):
    y = x * 2.0
    col = y[1:3].reshape(2, 1)
    y[2:][0] = 1.0
    return np.sum(col)


def _update_of_the_array_a_reshaped_view_shares(x):
    y = x * 2.0
    col = y[:2].reshape(2, 1)
    y += 1.0
    return np.sum(col)


def _write_beside_it_after_a_reshape_of_the_whole(x):
    y = x * 2.0
    col = y[:2].reshape(2, 1)
    y[3] = 1.0  # beside the view: taken
    flat = y.reshape(2, 2)
    y[2] = 5.0
    return np.sum(col) + np.sum(flat)


@pytest.mark.parametrize(
    "f",
    [
        _write_into_a_reshaped_view,
        _write_through_a_view_into_a_reshaped_view,
        _write_through_another_view_overlapping_it,
        _update_of_the_array_a_reshaped_view_shares,
        _write_beside_it_after_a_reshape_of_the_whole,
    ],
)
def test_a_write_into_the_part_a_reshaped_view_shares_is_refused_with_the_line(f):
    # NumPy would show the write in the reshape, which the tape does not rebind
    x = np.array([0.3, 0.9, 1.4, -0.5])
    line = 5 if f is _write_beside_it_after_a_reshape_of_the_whole else 3
    with pytest.raises(TypeError, match="share (its )?memory.*" + _line_of(f, line)):
        cr.gradient(f, x, engine="tape")


@pytest.mark.parametrize("engine", ["tape", "forward"])
def test_assigning_to_a_part_of_a_shared_array_is_refused_with_the_line_and_what_to_write(engine):
    """Each engine refuses `z.real = v` where another array may see z's memory that it would not
    rebind (a reshape; in forward mode, a view too), with its line and the array to build instead."""
    f = real_part_assigned_after_a_reshape_shares_it
    with pytest.raises(cr.DroppedDerivativeError) as info:
        if engine == "tape":
            cr.gradient(f, np.array([0.3, 0.9, 1.4, -0.5]), engine="tape")
        else:
            forward.jacobian(f, np.array([0.3, 0.9, 1.4, -0.5]))
    message = str(info.value)
    line = f.__code__.co_firstlineno + 7  # (the first lines are the decorator's)
    assert f"{__file__}:{line}" in message, message
    assert PART_SHARED in message and "build a new array instead, `z = v + 1j * z.imag`" in message


def _imaginary_part_of_a_real_array(x):
    y = x * 2.0
    y.imag = x
    return np.sum(y)


@pytest.mark.parametrize("engine", ["tape", "forward"])
def test_assigning_to_the_imaginary_part_of_a_real_array_is_numpys_error(engine):
    x = np.array([0.3, 0.9])
    with pytest.raises(TypeError, match="array does not have imaginary part to set"):
        _imaginary_part_of_a_real_array(x)
    with pytest.raises(TypeError, match="array does not have imaginary part to set"):
        if engine == "tape":
            cr.gradient(_imaginary_part_of_a_real_array, x, engine="tape")
        else:
            cr.jacobian(_imaginary_part_of_a_real_array, x, mode="forward")


def test_a_write_with_a_repeated_index_is_refused_with_the_line():
    def f(x):
        y = x * 2.0
        y[np.array([0, 0])] = x[:2]
        return np.sum(y)

    # the engine's refusal (a ChainRulesError, as its other refusals of writes), not the user's error
    with pytest.raises(cr.DroppedDerivativeError, match="repeats a position.*" + _line_of(f, 2)):
        cr.gradient(f, np.ones(2), engine="tape")
    # the source engine, the default, differentiates it: NumPy keeps the last value written
    np.testing.assert_allclose(cr.gradient(f, np.ones(2))[0], [0.0, 3.0])


def test_an_inner_differentiations_value_is_not_written_into_an_outer_array():
    def f(x):
        y = x * 1.0

        def inner(z):
            y[0] = z * z  # an inner gradient's value into the outer tape's array
            return z

        cr.gradient(inner, 2.0, engine="tape")
        return np.sum(y)

    with pytest.raises(TypeError, match="cannot be written into the tape's array"):
        cr.gradient(f, np.ones(2), engine="tape")
