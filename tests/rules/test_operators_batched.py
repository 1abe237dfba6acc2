"""The operators' pullbacks take a batch of cotangents (a leading batch axis): the same as row by
row for numbers and arrays; sequences and user objects decline the batch."""

import dataclasses
import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import batch_declines

RNG = np.random.default_rng(7)
A = RNG.uniform(0.5, 2.0, (2, 3))
B = RNG.uniform(0.5, 2.0, 3)
Z = A + 1j * RNG.uniform(0.5, 2.0, (2, 3))
F32 = A.astype(np.float32)

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.mod, operator.floordiv]
OPERANDS = [
    (1.5, 2.5),  # Python floats: the fast path
    (3, 2.0),  # an int
    (A, B),  # broadcasting arrays
    (B, A),
    (2.0, A),  # a number and an array
    (A, 3),
    (np.float64(1.5), B),
    (Z, B),  # complex
    (F32, F32[0]),  # float32 stays float32
]


@pytest.mark.parametrize("a, b", OPERANDS, ids=lambda v: type(v).__name__ + str(np.shape(v)))
@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_binary_operators_pull_back_a_batch(op, a, b, batched_pullback):
    if op in (operator.mod, operator.floordiv) and np.iscomplexobj(a):
        return  # no complex remainder
    batched_pullback(op, a, b, rtol=2e-6 if np.result_type(a, b) == np.float32 else 1e-13)


@pytest.mark.parametrize("op", [operator.neg, operator.pos, operator.abs], ids=lambda op: op.__name__)
@pytest.mark.parametrize("a", [1.5, -2, A, Z, np.float32(2.0)], ids=repr)
def test_unary_operators_pull_back_a_batch(op, a, batched_pullback):
    batched_pullback(op, a)


@pytest.mark.parametrize("op", [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow])
def test_inplace_operators_pull_back_a_batch(op, batched_pullback):
    batched_pullback(op, A.copy(), B)
    batched_pullback(op, 1.5, 2.0)


@dataclasses.dataclass
class Vec:
    x: float

    def __add__(self, other):
        return Vec(self.x + other.x)


def test_sequences_and_user_objects_decline_a_batch():
    before = batch_declines()
    cr.rrule(operator.add, (1.0,), (2.0,))
    assert batch_declines() == before + 1
    cr.rrule(operator.mul, [1.0], 2)
    assert batch_declines() == before + 2
    with pytest.raises(cr.ChainRulesError):  # user objects need an engine, which declines too
        cr.rrule(operator.add, Vec(1.0), Vec(2.0))
    assert batch_declines() == before + 3
    _, back = cr.rrule(operator.add, "a", "b")  # strings: no derivative, any batch fits
    assert back(np.ones(3)) == (cr.NoTangent(),) * 3 and batch_declines() == before + 3


def test_the_power_of_a_batch_leaves_the_exponent_lazy():
    """The exponent's batch is a thunk: ``x ** 2`` does not compute a derivative for the 2."""
    y, back = cr.rrule(operator.pow, A, 2)
    _, da, db = back(np.ones((4, *A.shape)))
    assert isinstance(db, cr.Thunk)
    np.testing.assert_allclose(da, np.broadcast_to(2 * A, (4, *A.shape)))
    np.testing.assert_allclose(cr.unthunk(db), np.full(4, np.sum(A**2 * np.log(A))), rtol=1e-13)
