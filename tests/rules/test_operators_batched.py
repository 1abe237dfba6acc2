"""The operators' pullbacks take a batch of cotangents (a leading batch axis): the same as row by
row for numbers and arrays; sequences and user objects decline the batch."""

import collections
import dataclasses
import math
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
    (0.39 - 0.07j, np.float64(0.67)),  # a Python complex out: no array fast path
    (np.float64(0.67), 0.39 - 0.07j),
]


@pytest.mark.parametrize("a, b", OPERANDS, ids=lambda v: type(v).__name__ + str(np.shape(v)))
@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_binary_operators_pull_back_a_batch(op, a, b, batched_pullback):
    if op in (operator.mod, operator.floordiv) and (np.iscomplexobj(a) or np.iscomplexobj(b)):
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


def test_the_power_of_an_array_leaves_the_exponent_lazy(monkeypatch):
    """One cotangent as a batch: the exponent's cotangent (y log|a|, summed to a number) is a thunk,
    computed only when asked for, and then the same number."""
    from chainrules.rules import operators

    logs = []
    log_base = operators._log_base
    monkeypatch.setattr(operators, "_log_base", lambda a: logs.append(a) or log_base(a))
    y, back = cr.rrule(operator.pow, A, 2)
    _, da, db = back(np.ones_like(A))
    assert isinstance(db, cr.Thunk) and logs == []
    np.testing.assert_allclose(da, 2 * A)
    np.testing.assert_allclose(cr.unthunk(db), np.sum(A**2 * np.log(A)), rtol=1e-13)
    assert len(logs) == 1


def test_the_pushforward_of_a_constant_exponent_skips_its_partial(monkeypatch):
    """``frule(pow)`` with a zero tangent for the exponent computes no y log|a| for it."""
    from chainrules.rules import operators

    logs = []
    log_base = operators._log_base
    monkeypatch.setattr(operators, "_log_base", lambda a: logs.append(a) or log_base(a))
    dA = np.full_like(A, 0.5)
    y, dy = cr.frule((cr.NoTangent(), dA, cr.ZeroTangent()), operator.pow, A, 3)
    np.testing.assert_allclose(dy, 3 * A**2 * dA)
    assert logs == []
    _, dy_both = cr.frule((cr.NoTangent(), dA, 1.0), operator.pow, A, 3.0)
    np.testing.assert_allclose(dy_both, 3 * A**2 * dA + A**3 * np.log(A))
    assert len(logs) == 1


@pytest.mark.parametrize(
    "xs, key",
    [
        ((1.5, A, 2), 0),  # a number in a tuple
        ([A, B, F32], 1),  # an array in a list
        ([A, B, F32], -1),  # float32 stays float32
        ({"w": A, "b": 2.5}, "w"),  # a dict entry
        ({"w": A, "b": 2.5}, "b"),
    ],
)
def test_an_entry_of_a_container_takes_a_batch_of_cotangents(xs, key):
    before = batch_declines()
    y, back = cr.rrule(operator.getitem, xs, key)
    assert batch_declines() == before
    dys = RNG.standard_normal((3, *np.shape(y))).astype(np.result_type(y))
    _, dxs, _ = back(dys)
    for k in range(3):  # row k of the batch's cotangent is the k-th single cotangent's
        _, dxs_k, _ = back(dys[k] if np.ndim(y) else float(dys[k]))
        for i in list(xs) if isinstance(xs, dict) else range(len(xs)):
            got, want = cr.unthunk(dxs[i]), cr.unthunk(dxs_k[i])
            if isinstance(want, cr.AbstractZero):
                assert type(got) is type(want)
                continue
            assert np.shape(got) == (3, *np.shape(want)) and np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_allclose(np.asarray(got)[k], want, rtol=1e-15)


class Row(tuple):
    """A tuple subclass that is not a namedtuple: its entries are taken by position."""


class Items(list):
    """A list subclass."""


@pytest.mark.parametrize(
    "xs, key",
    [
        ((1.5, A, B, 2), slice(1, None)),  # a slice of a tuple: numbers, arrays and an int
        ([A, F32, 2.5], slice(None, None, -2)),  # of a list, backwards; float32 stays float32
        ([1.5, 2.5, 3.5], slice(1, 2)),
        (Row((A, B)), 0),  # an entry of a tuple subclass
        (Row((1.5, A)), -2),
        (Items([B, 2.5]), 1),
    ],
    ids=["tuple-slice", "list-slice-backwards", "number-slice", "row-array", "row-number", "list-subclass"],
)
def test_a_slice_and_an_entry_of_a_sequence_subclass_take_a_batch(xs, key, batched_pullback):
    batched_pullback(operator.getitem, xs, key)  # (the cotangents' types are compared too: Tangent[Row], ...)


def test_a_field_of_a_namedtuple_takes_a_batch():
    pair = collections.namedtuple("Pair", "a b")(A, B)  # as np.linalg.eigh and slogdet return
    before = batch_declines()
    y, back = cr.rrule(operator.getitem, pair, 1)
    assert batch_declines() == before
    dys = RNG.standard_normal((4, *B.shape))
    d = back(dys)[1]
    assert type(d).primal_type is type(pair) and isinstance(d.a, cr.ZeroTangent)
    np.testing.assert_array_equal(d.b, dys)
    for k in range(4):
        np.testing.assert_array_equal(back(dys[k])[1].b, d.b[k])


SCALAR_CASES = [
    (math.sin, (0.7,)),
    (math.cos, (0.7,)),
    (math.log, (1.7,)),
    (math.log, (1.7, 3.0)),  # with a base
    (math.pow, (1.7, 2.5)),
    (math.hypot, (0.3, 1.2, -0.5)),
    (float, (3,)),  # an int gets a float cotangent
    (float, (np.float64(1.5),)),
    (max, (0.3, 1.2)),
    (min, (np.float64(0.3), 1.2)),
]


@pytest.mark.parametrize("f, args", SCALAR_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_scalar_functions_take_a_batch(f, args, batched_pullback):
    batched_pullback(f, *args)


@pytest.mark.parametrize(
    "pick, xs, key",
    [
        (max, [0.3, 1.2, 0.5], None),
        (min, (np.float64(0.3), 2, -1.5), None),  # NumPy and Python numbers, an int among them
        (max, np.array([0.3, -1.2, 0.5]), None),  # the entries of an array
        (max, np.float32([0.3, -1.2, 0.5]), abs),  # with a key: float32 stays float32
        (min, [0.3, -1.2, 0.5], lambda v: v * v),
    ],
    ids=["max-list", "min-tuple", "max-array", "max-key-float32", "min-key"],
)
def test_min_and_max_of_a_sequence_take_a_batch(pick, xs, key, batched_pullback):
    batched_pullback(pick, xs, kwargs={"key": key}, rtol=1e-6 if np.result_type(*xs) == np.float32 else 1e-13)


INTEGERS = np.array([3, -2, 5], dtype=np.int64)


@pytest.mark.parametrize(
    "a, b",
    [(np.float32(0.2675), INTEGERS[0]), (np.array(0.2675, np.float32), np.array(3)), (F32[0], INTEGERS)],
    ids=["np.float32*int64", "0-d float32*0-d int64", "float32*int64 array"],
)
@pytest.mark.parametrize("f", [operator.mul, np.multiply], ids=["operator.mul", "np.multiply"])
def test_a_float32_times_an_integer_pulls_back_in_the_outputs_precision(f, a, b, batched_pullback):
    # the output is float64: a Python float cotangent of it is float64, not NumPy's weak float,
    # so the integer's cotangent a * dy is not rounded to float32 (as a batch's rows are not)
    y, back = cr.rrule(f, a, b)
    assert np.result_type(y) == np.float64
    db = cr.unthunk(back(0.1)[2])
    assert np.result_type(db) == np.float64
    np.testing.assert_allclose(db, np.float64(a) * 0.1 * np.ones(np.shape(b)), rtol=1e-15)
    batched_pullback(f, a, b, rtol=1e-15)


@pytest.mark.parametrize("f", [operator.truediv, np.true_divide], ids=["operator.truediv", "np.true_divide"])
def test_an_integer_over_a_float32_pulls_back_in_the_outputs_precision(f, batched_pullback):
    # as for the product: the integer's cotangent dy / b is taken in float64, the output's dtype
    a, b = np.array(3), np.array(0.2675, np.float32)
    da = cr.unthunk(cr.rrule(f, a, b)[1](0.1)[1])
    assert np.result_type(da) == np.float64
    # (np.true_divide's partial 1 / b is computed in b's float32, as all its elementwise partials)
    np.testing.assert_allclose(da, 0.1 / np.float64(b), rtol=1e-15 if f is operator.truediv else 2e-7)
    batched_pullback(f, a, b, rtol=1e-15)
