"""What ``pullback``'s ``back(dy)`` and ``jvp`` return never shares memory with the seed the user
gave: an identity, a reshape or a transpose passes the seed on unchanged, and changing the result
must not change the user's seed (nor a later call's result)."""

import numpy as np
import pytest

import chainrules as cr

PASSING_THE_SEED_ON = {
    "identity": lambda x: x,
    "reshape": lambda x: x.reshape(2, 3),
    "transpose": lambda x: x.reshape(2, 3).T,
    "tuple of views": lambda x: (x[:3], x),
    "times one": lambda x: 1.0 * x,
}


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("name", sorted(PASSING_THE_SEED_ON))
def test_a_pullback_result_is_the_users_to_change(name, engine):
    f = PASSING_THE_SEED_ON[name]
    x = np.arange(6.0)
    y, back = cr.pullback(f, x, engine=engine)
    dy = tuple(np.ones(np.shape(v)) for v in y) if isinstance(y, tuple) else np.ones(np.shape(y))
    dy_before = [np.copy(v) for v in (dy if isinstance(dy, tuple) else (dy,))]
    (dx,) = back(dy)
    expected = np.copy(dx)
    dx[...] = -7.0  # the user's own array now
    for v, before in zip(dy if isinstance(dy, tuple) else (dy,), dy_before):
        np.testing.assert_array_equal(v, before)
    np.testing.assert_array_equal(back(dy)[0], expected)


@pytest.mark.parametrize("name", sorted(PASSING_THE_SEED_ON))
def test_a_jvp_result_is_the_users_to_change(name):
    f = PASSING_THE_SEED_ON[name]
    x, dx = np.arange(6.0), np.linspace(1.0, 2.0, 6)
    y, dy = cr.jvp(f, (x,), (dx,))
    for d in [dy[0], dy[1]] if isinstance(y, tuple) else [dy]:  # (a tuple's tangent is a Tangent[tuple])
        d[...] = -7.0
    np.testing.assert_array_equal(dx, np.linspace(1.0, 2.0, 6))


def test_a_structured_seed_is_not_aliased_either():
    y, back = cr.pullback(lambda t: (t[0], t[1]), (np.ones(2), np.ones(3)))
    dy = (np.full(2, 2.0), np.full(3, 3.0))
    (dt,) = back(dy)
    dt[0][...] = 0.0
    dt[1][...] = 0.0
    np.testing.assert_array_equal(dy[0], np.full(2, 2.0))
    np.testing.assert_array_equal(dy[1], np.full(3, 3.0))


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_gradients_are_writeable_and_do_not_share_memory(engine):
    # a sum's pullback spreads its cotangent as a read-only broadcast view; an addition gives both
    # operands one cotangent: the user gets arrays of their own (an optimizer's g *= lr)
    (g,) = cr.gradient(lambda x: np.sum(x), np.ones(3), engine=engine)
    g *= 2.0
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    gx, gz = cr.gradient(lambda x, z: np.mean(x + z), np.ones(3), np.ones(3), engine=engine)
    assert gx.flags.writeable and gz.flags.writeable and not np.shares_memory(gx, gz)
    gz[...] = 0.0
    np.testing.assert_allclose(gx, np.full(3, 1 / 3))
    (_, (ga, gb)) = cr.value_and_gradient(lambda a, b: np.sum(a + b), np.ones(2), np.ones(2), engine=engine)
    assert ga.flags.writeable and not np.shares_memory(ga, gb)
    gc = cr.gradient(lambda a, b: np.sum(a) * b, np.ones(2), 2.0, engine=engine, argnums=0)
    gc += 1.0
    np.testing.assert_array_equal(gc, [3.0, 3.0])


def test_argnums_takes_numpy_integers():
    assert cr.gradient(lambda a, b: a * b, 2.0, 3.0, argnums=np.int64(0)) == 3.0
    assert cr.gradient(lambda a, b: a * b, 2.0, 3.0, argnums=(np.int32(1), 0)) == (2.0, 3.0)
