"""The shape rules (rules/numpy/shapes.py), as spec tables checked against finite differences."""

import numpy as np
import pytest
from _array_checks import (
    Case,
    check_accumulation_layouts,
    check_batched_frule,
    check_engines,
    check_frule,
    check_rrule,
    check_rrule_on_wrapped,
    rand,
)
from _array_checks import Const as C

import chainrules as cr
import chainrules.testing as crt
from chainrules.core import callable_name
from chainrules.core.twins import astype_in_order

F32, C128 = np.float32, np.complex128

RESHAPING = [
    Case(np.reshape, rand(2, 3), C((3, 2))),
    Case(np.reshape, rand(2, 3), C(-1)),
    Case(np.reshape, rand(2, 3), C((3, 2)), C("F")),
    Case(np.reshape, rand(2, 3, dtype=F32), (6, 1)),
    Case(np.ndarray.reshape, rand(2, 3), C(3), C(2)),
    Case(np.ndarray.reshape, rand(2, 3, dtype=C128), C((6,)), order="F"),
    Case(np.ravel, rand(2, 3)),
    Case(np.ravel, rand(2, 3), C("F")),
    Case(np.ravel, rand(2, 3), C("K")),
    Case(np.ndarray.ravel, rand(2, 3, dtype=F32)),
    Case(np.ndarray.flatten, rand(2, 3, dtype=C128)),
    Case(np.squeeze, rand(2, 1, 3)),
    Case(np.squeeze, rand(1, 3, 1), C(0)),
    Case(np.ndarray.squeeze, rand(1, 3)),
    Case(np.expand_dims, rand(2, 3), C((0, 2))),
    Case(np.expand_dims, rand(3, dtype=F32), C(-1)),
    Case(np.atleast_1d, 1.5),
    Case(np.atleast_2d, rand(3)),
    Case(np.atleast_3d, rand(2, 3, dtype=C128)),
    Case(np.atleast_2d, rand(3), rand(2, 2)),
]

PERMUTING = [
    Case(np.transpose, rand(2, 3, 4)),
    Case(np.transpose, rand(2, 3, 4), C((1, 2, 0))),
    Case(np.transpose, rand(2, 3, dtype=C128), axes=(1, 0)),
    Case(np.ndarray.transpose, rand(2, 3, 4), C(2), C(0), C(1)),
    Case(np.ndarray.transpose, rand(2, 3, 4, dtype=F32), C((0, 2, 1))),
    Case(np.ndarray.transpose, rand(2, 3)),
    Case(np.swapaxes, rand(2, 3, 4), C(0), C(-1)),
    Case(np.ndarray.swapaxes, rand(2, 3), C(1), C(0)),
    Case(np.moveaxis, rand(2, 3, 4), C(0), C(-1)),
    Case(np.moveaxis, rand(2, 3, 4, dtype=C128), C((0, 1)), C((2, 0))),
    Case(np.flip, rand(2, 3)),
    Case(np.flip, rand(2, 3, 4), C((0, 2))),
    Case(np.flip, rand(2, 3, dtype=F32), axis=-1),
    Case(np.fliplr, rand(2, 3)),
    Case(np.flipud, rand(2, 3, dtype=C128)),
    Case(np.rot90, rand(2, 3)),
    Case(np.rot90, rand(2, 3, 4), C(3), C((1, 2))),
    Case(np.roll, rand(2, 3), C(2)),
    Case(np.roll, rand(2, 3), C((1, -1)), C((0, 1))),
    Case(np.roll, rand(4, 3, dtype=F32), C(-1), axis=0),
]

REPEATING = [
    Case(np.broadcast_to, rand(3, 1), C((2, 3, 4))),
    Case(np.broadcast_to, rand(3, dtype=C128), C((2, 3))),
    Case(np.broadcast_to, np.float64(2.0), C((2,))),
    Case(np.tile, rand(2, 3), C((2, 1, 2))),
    Case(np.tile, rand(3), C(2)),
    Case(np.tile, rand(2, 3, dtype=F32), C((2,))),
    Case(np.repeat, rand(2, 3), C(2)),
    Case(np.repeat, rand(2, 3), C([1, 0, 2]), C(1)),
    Case(np.repeat, rand(3, dtype=C128), C(3), axis=0),
    Case(np.ndarray.repeat, rand(2, 3), C(2), C(0)),
    Case(np.pad, rand(2, 3), C(((1, 0), (2, 1)))),
    Case(np.pad, rand(2, 3, dtype=F32), C(1), constant_values=3.0),
    Case(np.pad, rand(2, 3), C(1), C("reflect")),
    Case(np.pad, rand(3, 3), C(2), mode="wrap"),
    Case(np.pad, rand(3, dtype=C128), C(2), C("edge")),
    Case(np.pad, rand(3, 2), C((1, 2)), C("symmetric")),
    # padded sides filled with a statistic of the entries or a ramp to the edge, the axes one after
    # the other (a later axis's statistic is of the earlier axes' padded entries too)
    Case(np.pad, rand(5), C(2), C("mean")),
    Case(np.pad, rand(3, 4), C(((2, 0), (1, 3))), mode="mean", stat_length=((2, 1), (3, 2))),
    Case(np.pad, rand(3, dtype=F32), C(7), mode="mean"),  # wider than the array
    Case(np.pad, rand(4, dtype=C128), C((1, 3)), mode="mean", stat_length=2),
    Case(np.pad, rand(5), C((2, 1)), C("median")),  # the middle entry
    Case(np.pad, rand(3, 4), C(((1, 2), (2, 1))), mode="median", stat_length=(2, 3)),  # the two middle ones
    Case(np.pad, rand(4, dtype=F32), C(3), mode="median"),
    Case(np.pad, rand(5, dtype=C128), C(2), mode="median", stat_length=4),
    Case(np.pad, rand(5), C(2), C("maximum")),
    Case(np.pad, rand(3, 4), C(((1, 2), (2, 1))), mode="maximum", stat_length=(1, 3)),
    Case(np.pad, rand(4, dtype=F32), C((0, 3)), mode="maximum", stat_length=2),
    Case(np.pad, rand(4, dtype=C128), C(1), mode="maximum"),
    Case(np.pad, rand(3, 4), C(2), mode="minimum", stat_length=((2, 1), (3, 2))),
    Case(np.pad, rand(5, dtype=C128), C((1, 6)), mode="minimum"),
    Case(np.pad, rand(5), C((2, 3)), C("linear_ramp")),
    Case(np.pad, rand(3, 4), C(((2, 1), (3, 0))), mode="linear_ramp", end_values=((1.5, -2.0), (0.5, 3.0))),
    Case(np.pad, rand(3, dtype=F32), C(6), mode="linear_ramp", end_values=2.0),  # wider than the array
    Case(np.pad, rand(4, dtype=C128), C(2), mode="linear_ramp", end_values=(1.0, -1.0)),
    Case(np.resize, rand(2, 3), C((4, 4))),  # the flat entries again and again
    Case(np.resize, rand(3, dtype=C128), C(2)),
]

DELETING = [
    Case(np.delete, rand(3, 4), C(1), C(1)),
    Case(np.delete, rand(3, 4), C([0, 5, 7])),  # flat positions, without an axis
    Case(np.delete, rand(4, 2, dtype=F32), C(slice(0, 3, 2)), axis=0),
    Case(np.delete, rand(5, dtype=C128), C([True, False, True, False, False])),  # a mask
]

INSERTING = [
    Case(np.insert, rand(3, 4), C(1), rand(4), C(0)),
    Case(np.insert, rand(3, 4), C([0, 2, 2, 12]), rand(4)),  # flat positions, one twice, one at the end
    Case(np.insert, rand(3, 4), C(slice(0, 4, 2)), rand(3, 1), axis=1),  # each value broadcast along a row
    Case(np.insert, rand(3, 4), C(2), 1.5, axis=1),  # a number into every row
    Case(np.insert, rand(3, 4, dtype=F32), C([1, 3]), [0.5, 2.0], axis=-1),  # a list, broadcast along axis 0
    Case(np.insert, rand(3, 4), C(1), rand(2, 4), axis=0),  # two rows at one position
    Case(np.insert, rand(4, dtype=C128), C([3, 0]), rand(2, dtype=C128)),
]

CONVERTING = [
    Case(np.ndarray.astype, rand(2, 3), C(np.float32)),
    Case(np.ndarray.astype, rand(2, 3, dtype=F32), C(np.float64)),
    Case(np.ndarray.astype, rand(2, 3), C(np.complex128)),
    Case(np.ndarray.astype, rand(2, 3, dtype=C128), C(np.complex64)),
    Case(np.astype, rand(2, 3, dtype=F32), C(np.float64)),
    Case(astype_in_order, rand(2, 3), C(np.float32), C("F"), C(True)),
    Case(astype_in_order, rand(3, 2).T, C(np.complex128), C("A"), C(False)),
    Case(np.copy, rand(2, 3)),
    Case(np.ndarray.copy, rand(2, 3, dtype=C128)),
    Case(np.array, [1.0, 2.0, 3.0]),
    Case(np.array, [[1.0, 2.0], [3.0, 4.0]]),
    Case(np.array, (1.0, 2 + 1j)),
    Case(np.array, [rand(2), rand(2)]),
    Case(np.array, (rand(2, 2), rand(2, 2), rand(2, 2))),
    Case(np.array, [[rand(2, dtype=F32)], [rand(2, dtype=F32)]]),
    Case(np.array, [1.0, 2.0], ndmin=3),
    Case(np.array, rand(2, 3)),
    Case(np.array, rand(2, 3), dtype=np.float32),
    Case(np.asarray, rand(2, 3)),
    Case(np.asarray, [rand(3), rand(3)]),
    Case(np.asanyarray, [2.5]),
    Case(np.ascontiguousarray, rand(3, 2).T),
    Case(np.asfortranarray, rand(2, 3, dtype=C128)),
]

JOINING = [
    Case(np.concatenate, [rand(2, 3), rand(1, 3)]),
    Case(np.concatenate, [rand(2, 3), rand(2, 1)], C(1)),
    Case(np.concatenate, (rand(2, 3), rand(4)), C(None)),
    Case(np.concatenate, (rand(2, dtype=F32), rand(3, dtype=F32))),
    Case(np.concatenate, rand(3, 2), axis=0),
    Case(np.stack, [rand(2, 3), rand(2, 3)]),
    Case(np.stack, (rand(2, 3, dtype=C128), rand(2, 3, dtype=C128)), C(-1)),
    Case(np.hstack, [rand(3), rand(2)]),
    Case(np.hstack, [rand(2, 3), rand(2, 2)]),
    Case(np.hstack, [1.0, rand(2)]),
    Case(np.vstack, [rand(3), rand(2, 3)]),
    Case(np.dstack, [rand(2, 3), rand(2, 3, 1)]),
    Case(np.column_stack, [rand(3), rand(3, 2)]),
    Case(np.append, rand(2, 3), rand(4)),
    Case(np.append, rand(2, 3), rand(1, 3), C(0)),
    Case(np.append, rand(2, dtype=F32), rand(2, dtype=F32), axis=0),
    # dtype= sets the output's dtype, and so its tangent's
    Case(np.concatenate, [rand(2, dtype=F32), rand(3, dtype=F32)], dtype=np.float64),
    Case(np.concatenate, [rand(2), rand(3)], dtype=F32),
    Case(np.stack, [rand(2, dtype=F32), rand(2, dtype=F32)], dtype=np.float64),
    Case(np.vstack, [rand(2, dtype=F32), rand(2, dtype=F32)], dtype=np.float64),
    Case(np.hstack, [rand(2, dtype=F32), rand(2, dtype=F32)], dtype=np.float64),
]

SPLITTING = [
    Case(np.split, rand(6, 2), C(3)),
    Case(np.split, rand(6, 2), C([1, 4])),
    Case(np.split, rand(2, 4, dtype=C128), C(2), axis=1),
    Case(np.array_split, rand(2, 7), C(3), C(1)),
    Case(np.hsplit, rand(2, 4), C(2)),
    Case(np.hsplit, rand(4, dtype=F32), C(2)),
    Case(np.vsplit, rand(4, 2), C(2)),
    Case(np.dsplit, rand(2, 2, 4), C([1])),
]

SELECTING = [
    Case(np.compress, C(np.array([True, False, True])), rand(3, 4), C(0)),
    Case(np.compress, C([False, True]), rand(3, 4, dtype=C128), axis=1),
    Case(np.compress, C([0, 1, 1, 0, 1]), rand(3, 4)),
    Case(np.extract, C(np.array([[True, False], [False, True]])), rand(2, 2)),
    Case(np.ndarray.compress, rand(3, 4), C([True, False, True]), C(0)),
    Case(np.ndarray.compress, rand(3, 4, dtype=F32), C([1, 0, 1, 1])),
    Case(np.diagflat, rand(2, 2)),
    Case(np.diagflat, rand(3, dtype=C128), C(-1)),
    Case(np.diagflat, rand(1, 2), k=2),
    Case(np.extract, C(np.arange(6) % 3), rand(2, 3, dtype=F32)),
    Case(np.take, rand(5), C([0, 2, 2, -1])),
    Case(np.take, rand(3, 4), C([[0, 1], [1, 1]]), C(1)),
    Case(np.take, rand(3, 4), C(2), C(0)),
    Case(np.take, rand(3, 4, dtype=C128), C(np.array([5, -7])), axis=1, mode="wrap"),
    Case(np.take, rand(3, 4), C([9, -9]), axis=0, mode="clip"),
    Case(np.ndarray.take, rand(3, 4, dtype=F32), C([1, 1])),
    Case(np.take_along_axis, rand(3, 4), C(np.array([[0, 0], [1, 3], [2, 2]])), C(1)),
    Case(np.take_along_axis, rand(3, 4), C(np.array([[0, 0, 2, 1]])), axis=0),
    Case(np.take_along_axis, rand(3, 4), C(np.array([5, 5, -1])), C(None)),
    # indices that broadcast against the array along the other axes
    Case(np.take_along_axis, rand(3, 4), C(np.array([[0, 3]])), C(1)),
    Case(np.take_along_axis, rand(2, 3, 4), C(np.array([[[2], [-1]]])), axis=1),
    Case(np.sort, rand(3, 4)),
    Case(np.sort, rand(3, 4, dtype=F32), C(0)),
    Case(np.sort, rand(3, 4), C(None)),
    Case(np.sort, np.array([1.0, 3.0, 2.0, 2.5]), kind="stable"),
    Case(np.partition, rand(3, 9), C(2)),
    Case(np.partition, rand(6, 3, dtype=F32), C([1, 4]), C(0)),
    Case(np.partition, rand(3, 4), C(-2), C(None)),
    Case(np.partition, np.array([0.4, 1.7, -0.3, 0.9, 2.2, 0.1, -1.1]), kth=-3),
    Case(np.sort_complex, rand(5)),  # complex128 out of a real array
    Case(np.sort_complex, rand(3, 4, dtype=C128)),  # by real part, then imaginary part, along the last axis
    Case(np.sort_complex, rand(4, dtype=F32)),
    Case(np.sort_complex, rand(4, dtype=np.complex64)),
    Case(np.diag, rand(3)),
    Case(np.diag, rand(3, dtype=C128), C(1)),
    Case(np.diag, rand(3, 4)),
    Case(np.diag, rand(3, 4), C(-1)),
    Case(np.diagonal, rand(3, 4)),
    Case(np.diagonal, rand(2, 3, 4), C(1), C(2), C(0)),
    Case(np.ndarray.diagonal, rand(3, 3, dtype=F32)),
    Case(np.trace, rand(3, 3)),
    Case(np.trace, rand(2, 3, 4), C(0), C(1), C(2)),
    Case(np.trace, rand(3, 3, dtype=C128), offset=-1),
    Case(np.ndarray.trace, rand(3, 4), C(1)),
    Case(np.trace, rand(2, 2, dtype=F32), dtype=np.float64),
    Case(np.trace, rand(2, 3, 3, dtype=F32), C(0), C(1), C(2), C(np.float64)),
    Case(np.ndarray.trace, rand(3, 3, dtype=F32), dtype=np.float64),
    Case(np.triu, rand(3, 4)),
    Case(np.tril, rand(2, 3, 3), C(-1)),
    Case(np.triu, rand(3), C(1)),
    Case(np.tril, rand(3, 3, dtype=F32)),
    Case(np.triu, rand(3, 3, dtype=C128), k=-1),
]

CASES = RESHAPING + PERMUTING + REPEATING + DELETING + INSERTING + CONVERTING + JOINING + SPLITTING + SELECTING

# selections from a list NumPy takes as an array: every entry of the list gets its cotangent (none dropped)
SELECTING_FROM_LISTS = [
    Case(np.take, [0.3, 1.2, -0.7], C([0, 2, 2])),
    Case(np.take, [[0.3, 1.2], [-0.7, 2.0]], C([1, 1]), C(0)),
    Case(np.compress, C([True, False, True]), [0.3, 1.2, -0.7]),
    Case(np.diagonal, [[2.3, 1.2], [-0.7, 1.5]]),
    Case(np.trace, [[2.3, 1.2], [-0.7, 1.5]]),
]

# orders that follow the memory layout: checked with finite differences that keep the layout
LAYOUT_DEPENDENT = [
    Case(np.reshape, np.asfortranarray(rand(2, 3)), C((3, 2)), order="A"),
    Case(np.ravel, np.asfortranarray(rand(2, 3)), C("K")),
    Case(np.ndarray.flatten, np.asfortranarray(rand(2, 3, dtype=C128)), C("A")),
    Case(np.ravel, rand(4, 3)[::2, ::-1].T, C("K")),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rrule(case):
    crt.test_rrule(case.f, *case.testing_args(), fkwargs=case.kwargs)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_frule(case):
    crt.test_frule(case.f, *case.testing_args(), fkwargs=case.kwargs)


@pytest.mark.parametrize("case", CASES + LAYOUT_DEPENDENT, ids=str)
def test_batched_frule(case):
    check_batched_frule(case.f, *case.args, fkwargs=case.kwargs)


@pytest.mark.parametrize("case", SELECTING_FROM_LISTS, ids=str)
def test_selections_from_lists(case):
    crt.test_rrule(case.f, *case.testing_args(), fkwargs=case.kwargs)
    crt.test_frule(case.f, *case.testing_args(), fkwargs=case.kwargs)


def test_selections_from_a_list_of_entries_through_the_source_engine():
    def f(x):
        m = [[x[0], x[1]], [x[2], 1.5]]
        return np.trace(m) + np.sum(np.diagonal(m) ** 2) + np.sum(np.take([x[0], x[1], x[2]], [0, 2, 2]) * x)

    x = np.array([0.3, 1.2, -0.7])
    np.testing.assert_allclose(cr.gradient(f, x)[0], crt.fd_jacobian(f, x)[0], atol=1e-8)


@pytest.mark.parametrize("case", LAYOUT_DEPENDENT, ids=str)
def test_layout_dependent_rules(case):
    check_rrule(case.f, *case.args, fkwargs=case.kwargs)
    check_frule(case.f, *case.args, fkwargs=case.kwargs)


@pytest.mark.parametrize("case", SELECTING, ids=str)
def test_selections_accumulate_into_every_layout(case):
    assert check_accumulation_layouts(case.f, *case.args, fkwargs=case.kwargs) == (
        0 if case.f in (np.triu, np.tril, np.diagflat) or (case.f is np.diag and case.args[0].ndim == 1) else 1
    )


# ----- behaviours beyond the tables --------------------------------------------------------


VIEWS = [
    lambda a: a[::2, ::-1].T,
    lambda a: a[:, ::2, 1:].transpose(2, 0, 1),
    lambda a: a[::-1, :, ::-2],
    lambda a: a.T[::2],
]


@pytest.mark.parametrize("view", VIEWS)
def test_ravel_in_memory_order_of_a_strided_view(view):
    # ravel(order="K") depends on the layout, which a finite difference on a copy loses: check the
    # pushforward against the same view of a moved base array, and the pullback by adjointness
    base, dbase = rand(4, 6, 5), rand(4, 6, 5)
    x, dx = view(base), view(dbase)
    _, dy = cr.frule((cr.NoTangent(), dx, cr.NoTangent()), np.ravel, x, "K")
    np.testing.assert_allclose(dy, np.ravel(view(base + dbase), "K") - np.ravel(x, "K"), atol=1e-12)
    _, back = cr.rrule(np.ravel, x, "K")
    ybar = rand(x.size)
    np.testing.assert_allclose(np.vdot(ybar, dy), np.vdot(back(ybar)[1], dx))


def test_conversion_to_integers_has_zero_derivative():
    x = rand(3)
    y, back = cr.rrule(np.ndarray.astype, x, np.int64)
    assert y.dtype == np.int64
    assert back(np.ones(3)) == (cr.NoTangent(), cr.ZeroTangent(), cr.NoTangent())
    assert cr.frule((cr.NoTangent(), np.ones(3), cr.NoTangent()), np.ndarray.astype, x, int)[1] == cr.ZeroTangent()
    _, back = cr.rrule(np.array, [1.5, 2.5], dtype=int)
    assert back(np.ones(2))[1] == cr.ZeroTangent()


def test_integer_inputs_get_float_cotangents_and_booleans_none():
    x = np.arange(6).reshape(2, 3)
    _, back = cr.rrule(np.transpose, x)
    dx = back(np.ones((3, 2)))[1]
    assert dx.dtype == np.float64 and dx.shape == (2, 3)
    _, back = cr.rrule(np.array, [1, 2])
    assert back(np.array([0.5, 1.5]))[1] == cr.Tangent[list](0.5, 1.5)
    _, back = cr.rrule(np.reshape, np.array([True, False]), (2, 1))
    assert back(np.ones((2, 1)))[1] == cr.NoTangent()
    _, back = cr.rrule(np.concatenate, [np.ones(2), np.array([True])])
    assert back(np.ones(3))[1] == cr.Tangent[list](np.ones(2), cr.NoTangent())


def test_list_cotangents_are_structural_and_zero_pieces_stay_zero():
    a, b = rand(2), rand(3)
    _, back = cr.rrule(np.concatenate, (a, b))
    da_db = back(np.arange(5.0))[1]
    assert isinstance(da_db, cr.Tangent[tuple])
    np.testing.assert_array_equal(da_db[1], [2.0, 3.0, 4.0])
    parts, back = cr.rrule(np.split, rand(4), 2)
    dx = back([cr.ZeroTangent(), np.ones(2)])[1]
    np.testing.assert_array_equal(dx, [0.0, 0.0, 1.0, 1.0])
    assert back(cr.ZeroTangent())[1] == cr.ZeroTangent()
    _, dys = cr.frule((cr.NoTangent(), np.arange(4.0), cr.NoTangent()), np.split, rand(4), 2)
    assert isinstance(dys, cr.Tangent[list]) and len(dys) == 2


def test_nested_list_with_zero_and_batched_element_tangents():
    x = [1.0, 2.0, 3.0]
    tangent = cr.Tangent[list](np.array([1.0, 2.0]), cr.ZeroTangent(), np.array([3.0, 4.0]))
    _, dy = cr.frule((cr.NoTangent(), tangent), np.array, x)
    np.testing.assert_array_equal(dy, [[1.0, 0.0, 3.0], [2.0, 0.0, 4.0]])


def test_selections_accumulate_in_place_without_building_their_value():
    x = rand(1000)
    _, back = cr.rrule(np.sort, x)
    dx = back(np.ones(1000))[1]
    assert isinstance(dx, cr.InplaceableThunk)
    acc = np.zeros(1000)
    assert cr.iadd(acc, dx) is acc
    np.testing.assert_array_equal(acc, np.ones(1000))
    assert "evaluated" not in repr(dx.val)
    _, back = cr.rrule(np.trace, rand(3, 3))
    acc = np.zeros((3, 3))
    cr.iadd(acc, back(2.0)[1])
    np.testing.assert_array_equal(acc, 2.0 * np.eye(3))


def _pad_empty(x):
    return np.sum(np.pad(x, 2, mode="empty"))


@pytest.mark.parametrize("engine", ["source", "tape", "forward"])
@pytest.mark.parametrize(
    "f, error, message",
    [
        (_pad_empty, cr.NoRuleError, "mode='empty' leaves the padded entries undefined"),
    ],
    ids=["empty"],
)
def test_pad_refusals_at_the_users_line(engine, f, error, message):
    with pytest.raises(error, match=message) as refusal:
        if engine == "forward":
            cr.jacobian(f, rand(3), mode="forward")
        else:
            cr.gradient(f, rand(3), engine=engine)
    assert f"{__file__}:{f.__code__.co_firstlineno + 1}" in str(refusal.value)


def test_joining_into_out_is_refused():
    with pytest.raises(TypeError, match="out="):
        cr.rrule(np.concatenate, [rand(2), rand(2)], 0, np.zeros(4))
    with pytest.raises(TypeError, match="out="):
        cr.rrule(np.take, rand(3), [0], out=np.zeros(1))


def test_every_shape_function_has_both_rules():
    names = {name: (r, f) for name, r, f in cr.rules.list_rules()}
    for case in CASES:
        name = callable_name(case.f)
        assert names.get(name) == (True, True), name


# selections scatter into a NumPy array, order="K"/"A" read a memory layout, and padding by the maximum or
# minimum finds its winners as np.max's rule does, on arrays: all need arrays
LAYOUT_FREE = [
    c
    for c in RESHAPING + PERMUTING + REPEATING + DELETING + JOINING + SPLITTING + [CONVERTING[5], CONVERTING[6]]
    if "order" not in c.kwargs
    and c.kwargs.get("mode") not in ("maximum", "minimum")
    and not any(isinstance(a, C) and a.value in ("K", "A", "maximum", "minimum") for a in c.args)
    and getattr(c.f, "__objclass__", None) is not np.ndarray  # methods apply to arrays only
]


@pytest.mark.parametrize("case", LAYOUT_FREE, ids=str)
def test_rrule_on_values_implementing_numpy_protocols(case):
    check_rrule_on_wrapped(case.f, *case.args, fkwargs=case.kwargs)


@pytest.mark.parametrize("f", [np.copy, np.asarray, np.array])
@pytest.mark.parametrize("x", [1.5, 1.5 + 0.5j, np.float32(1.5)], ids=["float", "complex", "float32"])
def test_array_of_a_number_has_an_array_tangent(f, x):
    """found by fuzzing: np.copy(1.5) is a 0-d array, and so is its tangent."""
    y, dy = cr.frule((cr.NoTangent(), x), f, x)
    assert type(dy) is np.ndarray and dy.shape == () and dy.dtype == y.dtype
    crt.test_frule(f, x)
    crt.test_rrule(f, x)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_take_along_axis_with_indices_broadcasting_against_the_array(engine):
    """indices of shape (1, 2) along axis 1 of a (3, 4) array pick those columns in every row: the
    pullback scattered into a grid of the indices' shape, which fails to broadcast."""
    idx = np.array([[0, 3]])

    def f(a):
        return np.take_along_axis(a, idx, axis=1) * np.arange(1.0, 4.0)[:, None]

    def loss(a):
        return np.sum(np.sin(f(a)))

    a = rand(3, 4)
    grad = cr.gradient(loss, a, engine=engine)[0]
    crt.assert_approx(grad, crt.fd_jacobian(loss, a)[0].reshape(3, 4), rtol=1e-7, atol=1e-9)
    want = crt.fd_jacobian(f, a)
    crt.assert_approx(cr.jacobian(f, a, engine=engine).reshape(want.shape), want, rtol=1e-7, atol=1e-9)
    crt.assert_approx(cr.jacobian(f, a, mode="forward").reshape(want.shape), want, rtol=1e-7, atol=1e-9)


DTYPE_PROGRAMS = {
    "concatenate": lambda a: np.concatenate([a[0], np.sin(a[1])], dtype=np.float64),
    "stack": lambda a: np.stack([a[0], np.sin(a[1])], dtype=np.float64),
    "vstack": lambda a: np.vstack([a[0], np.sin(a[1])], dtype=np.float64),
    "hstack": lambda a: np.hstack([a[0], np.sin(a[1])], dtype=np.float64),
    "trace": lambda a: np.trace(a * a, dtype=np.float64),
}


@pytest.mark.parametrize("name", list(DTYPE_PROGRAMS))
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_joins_and_trace_tangents_in_the_dtype_given(name, engine):
    """``dtype=float64`` on float32 arrays: the forward rules' tangents had stayed float32."""
    f = DTYPE_PROGRAMS[name]
    a = rand(2, 2, dtype=F32)
    y, dy = cr.jvp(f, (a,), (np.ones_like(a),))
    assert np.result_type(y) == np.float64 and np.result_type(dy) == np.float64
    want = crt.fd_jacobian(f, a)
    crt.assert_approx(cr.jacobian(f, a, mode="forward").reshape(want.shape), want, rtol=2e-3, atol=2e-3)
    crt.assert_approx(cr.jacobian(f, a, engine=engine).reshape(want.shape), want, rtol=2e-3, atol=2e-3)


def test_partition_through_the_engines():
    check_engines(lambda x: np.mean(np.partition(x, -3)[-3:] ** 2) * x[0], np.array([0.4, 1.7, -0.3, 0.9, 2.2]))


def test_sort_of_a_list_gives_its_elements_their_cotangents():
    # the elements are scattered into the array the list stands for (they had NoTangent())
    crt.test_rrule(np.sort, [0.5, -1.0, 2.0])
    crt.test_frule(np.sort, [0.5, -1.0, 2.0])
    crt.test_rrule(np.sort_complex, (0.5, -1.0, 2.0))
    np.testing.assert_allclose(
        cr.gradient(lambda x: np.sum(np.sort([x[0] * 2.0, x[1]]) * np.array([1.0, 2.0])), np.array([1.0, 0.5]))[0],
        [4.0, 1.0],
    )


def test_sort_complex_orders_by_real_part_then_imaginary_part_as_numpy():
    a = np.array([1.0 + 2.0j, 1.0 - 1.0j, 0.5 + 0.0j, 1.0 + 0.5j])  # three real parts tie
    for dtype in (np.complex128, np.complex64, np.float32, np.int16):
        x = a.astype(dtype) if np.dtype(dtype).kind == "c" else np.array([3, 1, 2], dtype=dtype)
        y = cr.rrule(np.sort_complex, x)[0]
        want = np.sort_complex(x)
        assert y.dtype == want.dtype and np.array_equal(y, want)
    _, back = cr.rrule(np.sort_complex, a)
    np.testing.assert_array_equal(cr.unthunk(back(np.array([1.0, 2.0, 3.0, 4.0]))[1]), [4.0, 2.0, 1.0, 3.0])


def test_sort_complex_through_the_engines():
    check_engines(lambda x: np.sum(np.abs(np.sort_complex(x[:3] + 1j * x[3:])) ** 2 * np.arange(3.0)) * x[0], rand(6))


TRIM_ZEROS = [
    (np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0]), {}),
    (np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0]), {"trim": "f"}),
    (np.array([0.0, 1.5, -2.0, 0.0]), {"trim": "B"}),
    (np.array([[0.0, 0.0, 0.0], [0.0, 1.2, 0.0], [0.0, 0.0, 2.0]]), {}),  # the bounding box
    (np.array([[0.0, 0.0, 0.0], [0.0, 1.2, 0.0], [0.0, 0.0, 2.0]]), {"axis": 1}),
    (np.array([0.0, 1.5, 0.0], dtype=np.float32), {}),
    (np.zeros(3), {}),  # all zero: empty
    ([0.0, 1.5, -2.0, 0.0], {}),  # a list out
    ((0.0, 1.5, 0.0), {"trim": "b"}),
]


def _flat(v, n: int) -> np.ndarray:
    """A tangent or cotangent of an array, a list or a tuple of ``n`` entries as a flat array."""
    v = cr.unthunk(v)
    if isinstance(v, cr.AbstractZero):
        return np.zeros(n)
    if isinstance(v, cr.Tangent):
        return np.array([0.0 if isinstance(e, cr.AbstractZero) else e for e in v.backing])
    return np.ravel(v)


@pytest.mark.parametrize("filt, kwargs", TRIM_ZEROS, ids=str)
def test_trim_zeros(filt, kwargs):
    """A slice decided by the entries equal to zero: against finite differences in the entries that are
    not zero (moving a zero changes the slice), the others getting no cotangent, and NumPy's output."""
    y, back = cr.rrule(np.trim_zeros, filt, **kwargs)
    want = np.trim_zeros(filt, **kwargs)
    assert type(y) is type(want) and np.array_equal(y, want)
    sequence = type(filt) if isinstance(filt, (list, tuple)) else None
    plain = np.asarray(filt)

    def through(v, at):
        x = plain.astype(np.result_type(plain, v)).ravel()
        x[at] = v
        return np.asarray(np.trim_zeros(sequence(x) if sequence else x.reshape(plain.shape), **kwargs))

    # the entries kept: those moving which keeps the slice (the zeros inside it among them)
    moved = np.array([i for i in range(plain.size) if through(plain.flat[i] + 1.0, [i]).shape == np.shape(y)], int)
    jacobian = crt.fd_jacobian(lambda v: through(v, moved), plain.ravel()[moved]).reshape(np.size(y), moved.size)
    for k in range(np.size(y)):
        unit = np.zeros(np.size(y), dtype=plain.dtype)
        unit[k] = 1
        dx = _flat(back(sequence(unit) if sequence else unit.reshape(np.shape(y)))[1], plain.size)
        np.testing.assert_allclose(dx[moved], jacobian[k], atol=1e-6)
        assert not np.any(np.delete(dx, moved))
    tangent = np.zeros(plain.size, dtype=plain.dtype)
    tangent[moved] = 1
    tangent = cr.Tangent[sequence](*tangent) if sequence else tangent.reshape(plain.shape)
    _, pushed = cr.frule((cr.NoTangent(), tangent), np.trim_zeros, filt, **kwargs)
    np.testing.assert_allclose(_flat(pushed, np.size(y)), jacobian.sum(axis=1), atol=1e-6)


def test_trim_zeros_through_the_engines():
    def f(x):
        padded = np.concatenate([np.zeros(2), x, np.zeros(1)])
        return np.sum(np.trim_zeros(padded) ** 3 * np.arange(1.0, 6.0)) + np.sum(np.trim_zeros(padded, "b") ** 2)

    check_engines(f, np.array([0.4, -1.2, 0.0, 0.9, 2.2]))  # an inner zero is kept, and moves


@pytest.mark.parametrize(
    "args",
    [(rand(3), rand(2, 1)), (rand(2, 3, dtype=np.float32), 1.5, rand(3)), (rand(2, 1), rand(1, 2, dtype=complex))],
)
def test_broadcast_arrays(args):
    crt.test_rrule(np.broadcast_arrays, *args)
    crt.test_frule(np.broadcast_arrays, *args)


def test_insert_through_the_engines():
    def f(x):
        y = np.insert(x, [1, 3], x[:2] ** 2)
        z = np.insert(np.outer(x, y), 2, np.sin(x[0]), axis=1)
        return np.sum(np.cos(y) * y) + np.sum(z[:, 1:4] ** 2)

    check_engines(f, np.array([0.7, -0.3, 1.4, 0.2]))


def test_broadcast_arrays_through_the_engines():
    b = np.array([0.5, 2.0])

    def f(x):
        u, v = np.broadcast_arrays(x, b[:, None])
        return np.sum(np.sin(u) * v * u)

    check_engines(f, np.array([0.7, -0.3, 1.4]))


PADDING_VALUES_BEING_DIFFERENTIATED = {
    "a number": lambda x: np.pad(x, 1, constant_values=x[0] ** 2),
    "a pair": lambda x: np.pad(x, (1, 2), "constant", constant_values=(x[0], np.sin(x[1]))),
    "a pair per axis": lambda x: np.pad(np.outer(x, x), ((1, 0), (2, 1)), constant_values=((x[0], x[1]), (x[2], 2.0))),
    "one per axis": lambda x: np.pad(np.outer(x, x[:2]), 1, constant_values=np.stack([x[:1], x[2:] * 3])),
    "ramps": lambda x: np.pad(x, (2, 3), mode="linear_ramp", end_values=(x[0], x[1] ** 2)),
    "ramps per axis": lambda x: np.pad(
        np.outer(x, x), ((2, 1), (1, 2)), mode="linear_ramp", end_values=[[x[1], 0.5], [x[2], x[0]]]
    ),
}


@pytest.mark.parametrize("name", PADDING_VALUES_BEING_DIFFERENTIATED)
def test_padding_values_being_differentiated(name):
    """np.pad's constant_values and linear_ramp's end_values move the padded sides they fill (each
    read per axis and side as NumPy broadcasts it, later axes padded over earlier ones); every engine
    had refused them. Jacobians, reverse (batched pullbacks) and forward, through every engine."""
    f, x = PADDING_VALUES_BEING_DIFFERENTIATED[name], np.array([0.7, -0.3, 1.4])
    expected = crt.fd_jacobian(f, x).reshape(np.shape(f(x)) + x.shape)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(cr.jacobian(f, x, mode=mode), expected, rtol=1e-7, atol=1e-9, err_msg=mode)
    for engine in ("source", "tape"):
        gradient = cr.gradient(lambda v: np.sum(np.sin(f(v))), x, engine=engine)[0]
        np.testing.assert_allclose(gradient, np.cos(f(x)).ravel() @ expected.reshape(-1, 3), rtol=1e-7, atol=1e-9)


def test_padding_values_to_second_order():
    def f(x):
        constants = np.pad(x**2, ((1, 2),), constant_values=(np.sin(x[0]), x[1] * x[2]))
        ramps = np.pad(np.outer(x, x), 2, mode="linear_ramp", end_values=((x[0] ** 2, 1.0), (x[1], x[2] ** 3)))
        return np.sum(constants**2 * np.arange(6.0)) + np.sum(ramps * np.cos(ramps))

    check_engines(f, np.array([0.7, -0.3, 1.4]))


def test_pad_by_statistics_and_ramps_through_the_engines():
    def f(x):
        a = x.reshape(2, 3)
        means = np.pad(a, ((1, 2), (2, 1)), mode="mean", stat_length=(1, 2))
        ramps = np.pad(a * x[0], ((2, 0), (1, 3)), mode="linear_ramp", end_values=((0.5, -1.0), (2.0, 0.0)))
        highs = np.pad(np.sin(a), ((1, 1), (3, 2)), mode="maximum", stat_length=2)
        lows = np.pad(a**2, 2, mode="minimum")
        middles = np.pad(np.cos(x), (2, 3), mode="median", stat_length=4)
        weights = np.arange(highs.size).reshape(highs.shape)
        return np.sum(means**2 * x[1]) + np.sum(ramps**3) + np.sum(highs * weights) + np.sum(lows**2 * middles[:7])

    check_engines(f, np.array([0.7, -0.3, 1.4, 0.2, 0.9, -1.1]))
