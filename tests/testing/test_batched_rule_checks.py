"""``test_rrule`` and ``test_frule`` give a rule registered ``batched=True`` batches of cotangents
(tangents), as the engines do for Jacobians, and compare each row with the row given alone."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.core import BasisSeed, decline_batch

NO = cr.NoTangent()
W = np.array([[1.0, 2.0, 0.0], [-1.0, 0.5, 3.0], [0.2, 0.0, 1.0]])
X = np.array([0.3, -0.7, 1.1])


def _zero_or(t, fn):
    """``fn(t)``, or ``ZeroTangent()`` for a zero seed (rules must take one)."""
    t = cr.unthunk(t)
    return cr.ZeroTangent() if isinstance(t, cr.AbstractZero) else fn(t)


def _linear(name: str):
    def lin(x):
        return W @ x

    lin.__name__ = lin.__qualname__ = name
    return lin


# ----- a rule right for one cotangent (tangent) but wrong for a batch fails ----------------------


def test_a_batched_pullback_wrong_for_a_batch_fails():
    lin = _linear("lin_wrong_pullback")

    @cr.rrule.register(lin, batched=True)
    def rrule_lin_wrong(x):
        return W @ x, lambda dy: (NO, W.T @ cr.unthunk(dy))  # one cotangent: W^T dy; a batch needs dy @ W

    with pytest.raises(AssertionError, match="batched pullback") as failure:
        crt.test_rrule(lin, X)
    message = str(failure.value)
    assert "rrule_lin_wrong is registered batched=True" in message
    assert "a batch of 6 cotangents (3 random, then 3 unit ones)" in message  # (W^T @ a (6, 3) batch raises)
    # what the check prevents: the reverse-mode Jacobian through the rule is W^T, not W
    J = cr.jacobian(lambda x: lin(x) * 1.0, X, mode="reverse")
    np.testing.assert_allclose(J, W.T)


def test_a_batched_pushforward_wrong_for_a_batch_fails():
    lin = _linear("lin_wrong_pushforward")

    @cr.frule.register(lin, batched=True)
    def frule_lin_wrong(tangents, x):
        return W @ x, W @ cr.unthunk(tangents[1])  # one tangent: W dx; a batch needs dx @ W^T

    with pytest.raises(AssertionError, match="batched pushforward") as failure:
        crt.test_frule(lin, X)
    message = str(failure.value)
    assert "frule_lin_wrong is registered batched=True" in message
    assert "a batch of 6 tangents (3 random, then 3 unit ones)" in message
    np.testing.assert_allclose(cr.jacobian(lin, X, mode="forward"), W.T)


def test_a_pullback_that_mishandles_only_basis_seed_blocks_fails():
    """Row selection written for a ``BasisSeed`` that forgets the block's first row: only the
    block check sees it (a random batch is a plain array). For a 6-entry output the block holds
    the last 3 unit cotangents, as a Jacobian's last pass does."""

    def wide(x):
        return np.concatenate([W @ x, x])

    @cr.rrule.register(wide, batched=True)
    def rrule_wide(x):
        A = np.vstack([W, np.eye(3)])

        def back(dy):
            dy = cr.unthunk(dy)
            if type(dy) is BasisSeed and dy.scale is None:
                return NO, A[: dy.shape[0]].copy()
            return NO, dy @ A

        return A @ x, back

    with pytest.raises(AssertionError, match="batched pullback mismatch") as failure:
        crt.test_rrule(wide, X)
    message = str(failure.value)
    assert "argument 1 (x): batched pullback mismatch: the rule" in message and "rrule_wide" in message
    assert "given the BasisSeed block of 3 unit cotangents from flat index 3 (as jacobian seeds) at once" in message
    assert "rows 0, 1, 2 (of 3) differ" in message
    assert "a batch of 6 cotangents" not in message  # plain batches are right


def test_a_pullback_that_ignores_a_blocks_scale_fails():
    lin = _linear("lin_unscaled_block")

    @cr.rrule.register(lin, batched=True)
    def rrule_lin_unscaled(x):
        def back(dy):
            dy = cr.unthunk(dy)
            if isinstance(dy, BasisSeed) and dy.basis is not None:
                first = dy.basis[0]
                return NO, W[first : first + dy.shape[0]].copy()  # right for a unit block, not a scaled one
            return NO, dy @ W

        return W @ x, back

    with pytest.raises(AssertionError, match="batched pullback mismatch") as failure:
        crt.test_rrule(lin, X)
    message = str(failure.value)
    assert "(as jacobian seeds), scaled by" in message
    assert "seeds) at once" not in message  # a plain batch and a unit block are fine


def test_a_pushforward_that_ignores_a_blocks_scale_fails():
    lin = _linear("lin_unscaled_tangents")

    @cr.frule.register(lin, batched=True)
    def frule_lin_unscaled(tangents, x):
        dx = cr.unthunk(tangents[1])
        if isinstance(dx, BasisSeed) and dx.basis is not None:
            first = dx.basis[0]
            return W @ x, W.T[first : first + dx.shape[0]].copy()  # right for a unit block, not a scaled one
        return W @ x, _zero_or(dx, lambda t: t @ W.T)

    with pytest.raises(AssertionError, match="batched pushforward mismatch") as failure:
        crt.test_frule(lin, X)
    message = str(failure.value)
    assert "the output tangent dy: batched pushforward mismatch: the rule" in message
    assert "frule_lin_unscaled" in message and "(jacobian seeds), scaled by" in message
    assert "what it gives the same rows as a plain array" in message


def test_a_number_output_gets_a_batch_of_shape_b():
    def sumsq(x):
        return float(np.sum(x**2))

    @cr.rrule.register(sumsq, batched=True)
    def rrule_sumsq_wrong(x):
        return sumsq(x), lambda dy: (NO, 2 * x * cr.unthunk(dy))  # a (3,) batch times x: elementwise, wrong

    with pytest.raises(AssertionError, match="batched pullback"):
        crt.test_rrule(sumsq, X)

    def sumsq_right(x):
        return float(np.sum(x**2))

    @cr.rrule.register(sumsq_right, batched=True)
    def rrule_sumsq(x):
        return sumsq_right(x), lambda dy: (NO, _zero_or(dy, lambda d: 2 * x * np.asarray(d)[..., None]))

    crt.test_rrule(sumsq_right, X)


def test_a_pushforward_at_a_number_and_an_array():
    """A batch of tangents of a number is an array of shape (B,): it must be lined up with the
    array's batch by the rule itself (the engine gives a batched rule the batch as it is)."""

    def scale(c, x):
        return c * x

    @cr.frule.register(scale, batched=True)
    def frule_scale_wrong(tangents, c, x):
        _, dc, dx = tangents
        return c * x, dc * x + c * dx  # (B,) * (3,): not lined up

    with pytest.raises(AssertionError, match="batched"):
        crt.test_frule(scale, 1.5, X)

    def scale_right(c, x):
        return c * x

    @cr.frule.register(scale_right, batched=True)
    def frule_scale(tangents, c, x):
        _, dc, dx = (cr.unthunk(t) for t in tangents)
        if isinstance(dc, cr.AbstractZero) and isinstance(dx, cr.AbstractZero):
            return c * x, cr.ZeroTangent()
        return c * x, np.asarray(dc)[..., None] * x + c * dx

    crt.test_frule(scale_right, 1.5, X)


# ----- correct batched rules pass -------------------------------------------------------------


def test_correct_batched_rules_pass():
    lin = _linear("lin_right")

    @cr.rrule.register(lin, batched=True)
    def rrule_lin(x):
        return W @ x, lambda dy: (NO, cr.unthunk(dy) @ W)  # one cotangent or a batch alike

    @cr.frule.register(lin, batched=True)
    def frule_lin(tangents, x):
        return W @ x, cr.unthunk(tangents[1]) @ W.T

    crt.test_rrule(lin, X)
    crt.test_frule(lin, X)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(cr.jacobian(lambda x: lin(x) * 1.0, X, mode=mode), W)


def test_structured_outputs_and_inputs_get_batches_of_their_leaves():
    def split(x):
        return W @ x, float(np.sum(x))

    @cr.rrule.register(split, batched=True)
    def rrule_split(x):
        def back(dy):
            dy = cr.unthunk(dy)
            if isinstance(dy, cr.AbstractZero):
                return NO, dy
            da, ds = (cr.unthunk(d) for d in dy)
            dx = 0 if isinstance(da, cr.AbstractZero) else da @ W
            if not isinstance(ds, cr.AbstractZero):
                dx = dx + np.asarray(ds)[..., None] * np.ones(3)
            return NO, dx

        return split(x), back

    crt.test_rrule(split, X)

    def split_wrong(x):
        return W @ x, float(np.sum(x))

    @cr.rrule.register(split_wrong, batched=True)
    def rrule_split_wrong(x):
        def back(dy):
            dy = cr.unthunk(dy)
            if isinstance(dy, cr.AbstractZero):
                return NO, dy
            da, ds = (cr.unthunk(d) for d in dy)
            return NO, W.T @ da + ds

        return split_wrong(x), back

    with pytest.raises(AssertionError, match="batched pullback"):
        crt.test_rrule(split_wrong, X)

    def pair(t):
        return W @ t[0] + t[1]

    @cr.frule.register(pair, batched=True)
    def frule_pair(tangents, t):
        return pair(t), _zero_or(tangents[1], lambda dt: cr.unthunk(dt[0]) @ W.T + cr.unthunk(dt[1]))

    crt.test_frule(pair, (X, np.ones(3)))

    def pair_wrong(t):
        return W @ t[0] + t[1]

    @cr.frule.register(pair_wrong, batched=True)
    def frule_pair_wrong(tangents, t):
        return pair_wrong(t), _zero_or(tangents[1], lambda dt: W @ cr.unthunk(dt[0]) + cr.unthunk(dt[1]))

    with pytest.raises(AssertionError, match="batched pushforward"):
        crt.test_frule(pair_wrong, (X, np.ones(3)))


def test_a_pushforward_that_drops_the_batch_axis_is_run_row_by_row():
    """The forward engine redoes a batched rule whose output lost the batch axis row by row, so the
    Jacobian is right: the check accepts it as the engine does."""

    def total(x):
        return float(np.sum(x))

    @cr.frule.register(total, batched=True)
    def frule_total(tangents, x):
        return total(x), _zero_or(tangents[1], lambda t: float(np.sum(t)))  # sums the batch away too

    crt.test_frule(total, X)
    np.testing.assert_allclose(cr.jacobian(total, X, mode="forward"), np.ones(3))


# ----- rules that take one cotangent at a time are not given batches ------------------------------


def _one_at_a_time(y_ndim: int):
    def refuse_batches(t):
        t = cr.unthunk(t)
        assert isinstance(t, cr.AbstractZero) or np.ndim(t) == y_ndim, "given a batch"
        return np.zeros(3) if isinstance(t, cr.AbstractZero) else t

    return refuse_batches


def test_rules_without_batched_are_not_given_batches():
    one = _one_at_a_time(1)
    lin = _linear("lin_unbatched")

    @cr.rrule.register(lin)
    def rrule_lin(x):
        return W @ x, lambda dy: (NO, W.T @ one(dy))

    @cr.frule.register(lin)
    def frule_lin(tangents, x):
        return W @ x, W @ one(tangents[1])

    assert not rrule_lin.batched and not frule_lin.batched
    crt.test_rrule(lin, X)
    crt.test_frule(lin, X)


def test_a_batched_rule_that_declines_the_batch_is_not_given_one():
    """A batched rule that calls ``decline_batch()`` for these arguments: engines pull back one
    cotangent at a time, and so does the check."""
    one = _one_at_a_time(1)
    lin = _linear("lin_declines")

    @cr.rrule.register(lin, batched=True)
    def rrule_lin(x):
        decline_batch()
        return W @ x, lambda dy: (NO, W.T @ one(dy))

    crt.test_rrule(lin, X)


def test_a_batched_rule_given_as_rule_is_checked_too():
    lin = _linear("lin_given")

    def rrule_lin_wrong(f, x):
        return W @ x, lambda dy: (NO, W.T @ cr.unthunk(dy))

    crt.test_rrule(lin, X, rule=rrule_lin_wrong)  # no .batched: one cotangent at a time
    rrule_lin_wrong.batched = True
    with pytest.raises(AssertionError, match="batched pullback"):
        crt.test_rrule(lin, X, rule=rrule_lin_wrong)


def test_integer_outputs_and_complex_values():
    """An output without a cotangent gets no batch; complex outputs get complex batches (and real
    scales for the scaled block: a pullback is linear over the reals)."""

    def count(x):
        return int(np.sum(x > 0))

    cr.non_differentiable(count)
    crt.test_rrule(count, X)
    crt.test_frule(count, X)

    Z = W + 1j * W[::-1]

    def clin(z):
        return Z @ z

    @cr.rrule.register(clin, batched=True)
    def rrule_clin(z):
        return Z @ z, lambda dy: (NO, cr.unthunk(dy) @ Z.conj())

    @cr.frule.register(clin, batched=True)
    def frule_clin(tangents, z):
        return Z @ z, cr.unthunk(tangents[1]) @ Z.T

    crt.test_rrule(clin, X + 0.5j)
    crt.test_frule(clin, X + 0.5j)
