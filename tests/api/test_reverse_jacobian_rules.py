"""Reverse-mode Jacobians through the array rules that pull back a batch of cotangents (max,
concatenate, split, stack, cumsum, cumprod, norm, std, sort, trace, ...): one batched pullback on
both engines, equal to the loop of one pullback per output and to finite differences."""

import numpy as np
import pytest
from _jacobians import ENGINES, check_batched, each_engine, fd_jacobian

import chainrules as cr
from chainrules.reverse import source, trace

RNG = np.random.default_rng(8)
W = RNG.standard_normal((5, 4))


def softmax(x):
    z = W @ x
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def pieces(x):
    halves = np.split(np.tanh(x), 2)
    return np.concatenate(np.stack(halves, axis=1)) * np.flip(x) + np.repeat(x[:2], 2)


def running(x):
    return np.cumsum(x**2) / np.cumprod(1.0 + 0.1 * x) + np.roll(x, 1)


def normalized(x):
    return x / np.linalg.norm(x) + np.std(x) * np.sort(x)


def matrix_summaries(X):
    gram = X.T @ X
    head = np.append(np.diag(gram), np.trace(gram) * np.max(X, axis=0))
    return np.append(head, np.triu(gram))


def displayed(x):
    return np.concatenate([np.sin(x), x[:2] * 3.0, [np.max(x)]])  # pieces written in place, one a list


BATCHED = [
    (softmax, RNG.standard_normal(4)),
    (displayed, RNG.standard_normal(4)),
    (pieces, RNG.standard_normal(4)),
    (running, RNG.uniform(0.5, 1.5, 4)),
    (normalized, RNG.standard_normal(4)),
    (matrix_summaries, RNG.standard_normal((3, 2))),
]


@each_engine
@pytest.mark.parametrize("f, x", BATCHED, ids=lambda v: getattr(v, "__name__", ""))
def test_one_batched_pullback_equals_the_loop_and_finite_differences(engine, f, x):
    check_batched(engine, f, x)


def test_softmax_of_a_layer_is_one_sweep_on_the_tape(monkeypatch):
    sweeps = []
    original = trace.engine.sweep

    def counting_sweep(tape, cts, owned, release=False):
        sweeps.append(len(tape))
        return original(tape, cts, owned, release)

    monkeypatch.setattr(trace.engine, "sweep", counting_sweep)
    x = RNG.standard_normal(4)
    J = cr.jacobian(softmax, x, mode="reverse", engine="tape")
    assert len(sweeps) == 1
    p = softmax(x)
    np.testing.assert_allclose(J, (np.diag(p) - np.outer(p, p)) @ W, rtol=1e-12, atol=1e-14)


def test_a_float32_jacobian_stays_float32():
    x = RNG.standard_normal(4).astype(np.float32)

    def f(x):
        return np.cumsum(x) / np.linalg.norm(x) + np.max(x)

    for engine in ENGINES:
        J = cr.jacobian(f, x, mode="reverse", engine=engine)
        assert J.dtype == np.float32
        np.testing.assert_allclose(J, fd_jacobian(lambda v: f(v.astype(np.float64)), x.astype(np.float64)), rtol=2e-3)


def centred(x):
    return x - np.max(x, axis=-1, keepdims=True) * -2.5


def test_a_negative_axis_keeps_the_direct_batched_rule():
    """``axis=-1`` is a literal keyword for the source engine (Python's parser reads ``-1`` as an
    operation on ``1``): the call goes straight to np.max's batched rule, not through the
    dispatcher's ``f(*args, **kwargs)``."""
    x = RNG.standard_normal(3)
    assert "pullback_apply" not in cr.show(centred, x)
    assert source.pullback_full(centred, x)[1].batched
    np.testing.assert_allclose(centred(x), x + 2.5 * np.max(x), rtol=1e-15)
    J = np.eye(3) + 2.5 * np.eye(3)[[np.argmax(x)] * 3]
    np.testing.assert_allclose(cr.jacobian(centred, x, mode="reverse"), J, rtol=1e-14)
