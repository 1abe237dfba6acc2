import dataclasses
import tracemalloc

import numpy as np
import pytest

import chainrules as cr


@dataclasses.dataclass
class Model:
    w: np.ndarray
    b: float


def _boom():
    raise AssertionError("the value thunk must not be evaluated")


def _inplaceable_row(i, n, dy=1.0, val=None):
    """The cotangent of X[i] for X of shape (n,), as the getindex rule returns it."""

    def add_into(acc):
        acc[i] += dy
        return acc

    def value():
        out = np.zeros(n)
        out[i] = dy
        return out

    return cr.InplaceableThunk(add_into, cr.Thunk(val or value))


# ----- add, every pair of kinds -----

ARR = np.array([1.0, 2.0])
KINDS = {
    "float": (1.5, 1.5),
    "array": (ARR, ARR),
    "zero": (cr.ZeroTangent(), 0.0),
    "notangent": (cr.NoTangent(), 0.0),
    "thunk": (cr.Thunk(lambda: ARR * 2), ARR * 2),
    "inplaceable": (_inplaceable_row(0, 2), np.array([1.0, 0.0])),
}


# every pair of kinds that can be tangents of one primal (a float and an inplaceable array
# tangent cannot)
PAIRS = [(ka, kb) for ka in KINDS for kb in KINDS if {ka, kb} != {"float", "inplaceable"}]


@pytest.mark.parametrize("ka, kb", PAIRS)
def test_add_every_pair_of_kinds(ka, kb):
    a, va = KINDS[ka]
    b, vb = KINDS[kb]
    result = cr.add(a, b)
    np.testing.assert_allclose(cr.unthunk(result) + 0.0, np.add(va, vb))


def test_add_never_mutates():
    a, b = np.ones(2), np.ones(2)
    cr.add(a, b)
    cr.add(a, _inplaceable_row(0, 2))
    np.testing.assert_array_equal(a, [1.0, 1.0])


def test_add_structural_and_plain_containers():
    assert cr.add((1.0, 2.0), (3.0, 4.0)) == (4.0, 6.0)
    assert cr.add([1.0], [2.0]) == [3.0]
    assert cr.add({"a": 1.0}, {"a": 1.0, "b": 2.0}) == {"a": 2.0, "b": 2.0}
    t = cr.add(cr.Tangent[tuple](1.0, cr.ZeroTangent()), (1.0, 2.0))
    assert t == cr.Tangent[tuple](2.0, 2.0)
    m = cr.add(cr.Tangent[Model](w=np.ones(2)), cr.Tangent[Model](b=3.0))
    assert m == cr.Tangent[Model](w=np.ones(2), b=3.0)
    with pytest.raises(ValueError, match="2 and 3"):
        cr.add((1.0, 2.0), (1.0, 2.0, 3.0))


def test_add_inplaceable_into_array_does_not_build_the_value():
    acc = np.ones(3)
    out = cr.add(acc, _inplaceable_row(1, 3, val=_boom))
    np.testing.assert_array_equal(out, [1.0, 2.0, 1.0])
    np.testing.assert_array_equal(acc, [1.0, 1.0, 1.0])


# ----- iadd -----


def test_iadd_overwrites_a_writeable_array():
    acc = np.zeros(3)
    assert cr.iadd(acc, np.ones(3)) is acc
    np.testing.assert_array_equal(acc, np.ones(3))
    assert cr.iadd(acc, 2.0) is acc  # a scalar broadcasts into it
    np.testing.assert_array_equal(acc, 3 * np.ones(3))


def test_iadd_inplaceable_thunk_into_owned_array_without_value():
    acc = np.zeros(4)
    out = cr.iadd(acc, _inplaceable_row(2, 4, dy=5.0, val=_boom))
    assert out is acc
    np.testing.assert_array_equal(acc, [0.0, 0.0, 5.0, 0.0])


def test_iadd_on_immutable_float_returns_new_value():
    assert cr.iadd(1.0, 2.0) == 3.0
    assert cr.iadd(1.0, cr.ZeroTangent()) == 1.0
    assert cr.iadd(cr.ZeroTangent(), 2.0) == 2.0


def test_iadd_falls_back_when_acc_cannot_hold_the_sum():
    acc = np.zeros(2)
    out = cr.iadd(acc, np.array([1j, 0.0]))
    assert out is not acc and out.dtype.kind == "c"
    np.testing.assert_array_equal(acc, [0.0, 0.0])
    ro = np.zeros(2)
    ro.flags.writeable = False
    assert cr.iadd(ro, np.ones(2)) is not ro
    small = np.zeros(2)
    out = cr.iadd(small, np.ones((3, 2)))  # the sum has a bigger shape: not in place
    assert out.shape == (3, 2) and not small.any()


def test_iadd_structural_is_out_of_place():
    t = cr.Tangent[Model](w=np.ones(2))
    out = cr.iadd(t, cr.Tangent[Model](w=np.ones(2)))
    np.testing.assert_array_equal(out.w, [2.0, 2.0])
    np.testing.assert_array_equal(t.w, [1.0, 1.0])


@pytest.mark.parametrize("ka, kb", PAIRS)
def test_iadd_equals_add_for_every_pair(ka, kb):
    a, b = KINDS[ka][0], KINDS[kb][0]
    expected = cr.unthunk(cr.add(a, b))
    acc = cr.unthunk(a)
    acc = acc.copy() if isinstance(acc, np.ndarray) else acc
    np.testing.assert_allclose(cr.unthunk(cr.iadd(acc, b)) + 0.0, expected + 0.0)


def test_inplaceable_thunk_must_return_its_accumulator():
    bad = cr.InplaceableThunk(lambda acc: acc + 1.0, cr.Thunk(lambda: np.ones(2)))
    with pytest.raises(RuntimeError, match="must add into the accumulator"):
        cr.iadd(np.zeros(2), bad)


# ----- accumulate: the ownership rule -----


def test_accumulate_copies_a_borrowed_array_exactly_once():
    borrowed = np.ones(3)
    acc, owned = cr.accumulate(cr.ZeroTangent(), False, borrowed)
    assert acc is borrowed and not owned
    acc, owned = cr.accumulate(acc, owned, borrowed)
    assert acc is not borrowed and owned
    first_copy = acc
    for _ in range(3):
        acc, owned = cr.accumulate(acc, owned, borrowed)
        assert acc is first_copy and owned
    np.testing.assert_array_equal(acc, 5 * np.ones(3))
    np.testing.assert_array_equal(borrowed, np.ones(3))


def test_accumulate_never_writes_user_or_rule_arrays():
    user_input = np.ones(2)
    rule_output = np.full(2, 2.0)
    acc, owned = cr.accumulate(cr.ZeroTangent(), False, user_input)
    acc, owned = cr.accumulate(acc, owned, rule_output)
    acc, owned = cr.accumulate(acc, owned, rule_output)
    np.testing.assert_array_equal(user_input, [1.0, 1.0])
    np.testing.assert_array_equal(rule_output, [2.0, 2.0])
    np.testing.assert_array_equal(acc, [5.0, 5.0])


def test_accumulate_inplaceable_thunks_one_allocation_in_a_loop():
    n = 100_000
    tracemalloc.start()
    acc, owned = cr.ZeroTangent(), False
    for i in range(200):
        acc, owned = cr.accumulate(acc, owned, _inplaceable_row(i, n))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert owned and acc[:200].sum() == 200.0 and acc.sum() == 200.0
    assert peak < 2.5 * n * 8  # the first value, its one copy, and small change


def test_accumulate_scalars():
    acc, owned = cr.accumulate(1.0, False, 2.0)
    assert acc == 3.0 and not owned
    assert cr.accumulate(1.0, False, cr.NoTangent()) == (1.0, False)


def matvec(W, x):
    return W @ x


@cr.rrule.register(matvec)
def _rrule_matvec(W, x):
    """A rule written as docs/tangents.md shows: W's cotangent adds itself with ``acc += ...``."""

    def matvec_pullback(dy):
        dy = cr.unthunk(dy)

        def add_outer(acc):
            acc += np.outer(dy, x)
            return acc

        return cr.NoTangent(), cr.InplaceableThunk(add_outer, cr.Thunk(lambda: np.outer(dy, x))), W.T @ dy

    return W @ x, matvec_pullback


_X = np.array([0.5, -1.0])
_W = np.array([[0.3, 0.1], [-0.2, 0.4]])


def _plain_contributions_first(W):
    # W's cotangents arrive plain first (the linear terms', met first in reverse order), then the square's, which
    # holds the second-order engine's values
    return np.sum(matvec(W, _X) ** 2) + np.sum(matvec(W, _X)) + np.sum(matvec(W, 2.0 * _X))


@pytest.mark.parametrize(
    "second_order",
    [
        lambda f: cr.hessian(f, _W),
        lambda f: cr.jacobian(lambda W: cr.gradient(f, W)[0], _W, mode="forward"),
        lambda f: cr.jacobian(lambda W: cr.gradient(f, W)[0], _W, engine="tape"),
    ],
    ids=["hessian", "forward over source", "tape over source"],
)
def test_an_inplaceable_thunk_holding_an_engines_values_is_added_by_its_value(second_order):
    """A plain accumulator cannot take ``acc += v`` of another engine's values: the thunk is added
    out of place where an engine differentiates the pullback (owned accumulator and borrowed)."""
    from chainrules.testing import fd_jacobian

    H = np.asarray(second_order(_plain_contributions_first)).reshape(4, 4)
    expected = fd_jacobian(lambda W: cr.gradient(_plain_contributions_first, W)[0], _W)
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-8)


def test_a_refused_cotangent_stays_unread_in_sums():
    """A rule's refusal of an argument's cotangent raises only where it is read: summed with other
    cotangents (a constant argument used twice, a structure's field), it stays the refusal, unread."""
    from chainrules.core.tangents import RefusedThunk

    def refused():
        raise cr.NoDerivativeError("f: not differentiated in its knots")

    for total in (
        cr.add(RefusedThunk(refused), np.ones(2)),
        cr.add(np.ones(2), RefusedThunk(refused)),
        cr.iadd(np.ones(2), RefusedThunk(refused)),
        cr.accumulate(np.ones(2), True, RefusedThunk(refused))[0],
        cr.add(cr.Tangent[tuple](RefusedThunk(refused), 1.0), cr.Tangent[tuple](RefusedThunk(refused), 2.0))[0],
    ):
        assert isinstance(total, RefusedThunk)
        with pytest.raises(cr.NoDerivativeError, match="knots"):
            cr.unthunk(total)
