"""The builtins' and higher-order functions' pullbacks take a batch of cotangents (a leading batch
axis): the same as row by row. The rules that call a user callable (``map``, ``reduce``,
``accumulate``, a ``functools.partial``) take one exactly when that callable's pullbacks do, and
decline it otherwise."""

import functools
import itertools
import math
import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import active_engine, batch_declines
from chainrules.reverse import source, trace
from chainrules.rules.pyfunctional import Iterated

RNG = np.random.default_rng(5)
A = RNG.uniform(0.5, 2.0, (2, 3))
B = RNG.uniform(0.5, 2.0, 3)
F32 = B.astype(np.float32)
Z = 0.3 + 1.1j


class Pair:
    def __init__(self, w, b):
        self.w, self.b = w, b


OBJ = Pair(B, 1.5)

ONE_OUTPUT = [
    (sum, ([1.5, 2.5, 3],), {}),  # an int among the numbers
    (sum, ([B, 2.0, A],), {}),  # broadcast: each summed back to its shape
    (sum, ([B, B], A), {}),  # with a start
    (sum, (A,), {}),  # the rows of an array
    (sorted, ([0.4, -1.2, 2.5],), {"key": abs}),
    (sorted, (B,), {"reverse": True}),
    (tuple, ([1.5, B, 2],), {}),
    (list, (A,), {}),
    (divmod, (2.5, 0.7), {}),
    (divmod, (B * 3.0, 0.7), {}),
    (complex, (0.4, 1.3), {}),
    (complex, (Z,), {}),
    (pow, (1.7, 2.5), {}),
    (pow, (B, 3), {}),
    (getattr, (Z, "imag"), {}),
    (getattr, (np.complex128(Z), "real"), {}),
    (getattr, (OBJ, "missing", 2.5), {}),  # the default
    (dict.get, ({"w": B}, "b", 2.5), {}),  # the default
    (operator.itemgetter(0, 2), ([1.5, B, A],), {}),
]


@pytest.mark.parametrize(
    "f, args, kwargs",
    ONE_OUTPUT,
    ids=[f"{getattr(f, '__name__', type(f).__name__)}-{i}" for i, (f, *_) in enumerate(ONE_OUTPUT)],
)
def test_builtins_pull_back_a_batch(f, args, kwargs, batched_pullback):
    batched_pullback(f, *args, kwargs=kwargs)


def test_float32_stays_float32(batched_pullback):
    batched_pullback(sum, [F32, F32], rtol=1e-6)
    batched_pullback(sorted, [F32[0], F32[1]], rtol=1e-6)


@pytest.mark.parametrize(
    "args",
    [({"w": B, "b": 2.5},), ([("w", B), ("b", 2.5), ("w", A[0])],)],  # a mapping; pairs, a later key winning
    ids=["mapping", "pairs"],
)
def test_dict_pulls_back_a_batch(args):
    y, back = _without_declines(dict, *args)
    dys = cr.Tangent[dict]({k: RNG.standard_normal((3, *np.shape(v))) for k, v in y.items()})
    batched = back(dys)
    for k in range(3):
        row = back(cr.Tangent[dict]({key: _row(v, d, k) for (key, v), d in zip(y.items(), dys.backing.values())}))
        _same_structure(batched, row, k)


@pytest.mark.parametrize(
    "f, args",
    [(dict.get, ({"w": B, "b": 2.5}, "w")), (operator.attrgetter("w"), (OBJ,))],
    ids=["dict.get", "attrgetter"],
)
def test_an_entry_of_a_dict_or_object_pulls_back_a_batch(f, args):
    y, back = _without_declines(f, *args)
    dys = RNG.standard_normal((3, 3))
    batched = back(dys)
    for k in range(3):
        _same_structure(batched, back(dys[k]), k)


# ----- map, filter, reversed, reduce, accumulate and what consumes their values ------------------


def _without_declines(f, *args, **kwargs):
    declines = batch_declines()
    out = cr.rrule(f, *args, **kwargs)
    assert batch_declines() == declines, f"{f} declined a batch"
    return out


def _row(value, batch, k: int):
    """Row ``k`` of a batch of cotangents, as one cotangent of ``value`` comes."""
    row = np.asarray(batch)[k]
    return float(row) if isinstance(value, (float, int)) else row


def _same_structure(got, want, k: int):
    """``got``, a cotangent holding batches, has ``want`` as its row ``k`` (zeros and types alike)."""
    got, want = cr.unthunk(got), cr.unthunk(want)
    if isinstance(want, cr.AbstractZero):
        assert type(got) is type(want)
    elif isinstance(want, (cr.Tangent, list, tuple)):
        assert type(got) is type(want)
        g, w = (got.backing, want.backing) if isinstance(want, cr.Tangent) else (got, want)
        if isinstance(w, dict):
            assert g.keys() == w.keys()
            g, w = list(g.values()), list(w.values())
        assert len(g) == len(w)
        for a, b in zip(g, w):
            _same_structure(a, b, k)
    else:
        assert np.shape(got)[1:] == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(np.asarray(got)[k], want, rtol=1e-13, atol=1e-15)


def _check_iterated(f, *args, engine=source.pullback_full, batch=3):
    """``f(*args)`` returns an ``Iterated``: its pullback of a list of batches equals it row by row."""
    with active_engine(engine):
        y, back = _without_declines(f, *args)
        values = list(y.items)
        dys = [RNG.standard_normal((batch, *np.shape(v))) for v in values]
        batched = back(dys)
        for k in range(batch):
            row = back([_row(v, d, k) for v, d in zip(values, dys)])
            for got, want in zip(batched, row):
                _same_structure(got, want, k)


def shifted(v, w):
    return v * w + 1.0


@pytest.mark.parametrize(
    "f, args",
    [
        (map, (math.sin, [0.3, 1.2])),  # a rule registered batched=True
        (map, (shifted, B, [2.0, 0.5, 1.5])),  # a Python function: the engine's transformation
        (map, (np.multiply, [A, B], [B, 2.0])),
        (filter, (lambda v: v > 1.0, B)),
        (reversed, ([1.5, A, 2],)),
        (itertools.accumulate, ([0.4, 1.3, -0.6], operator.mul)),
        (itertools.accumulate, ([B, A],)),
    ],
    ids=["map-math", "map-python", "map-ufunc", "filter", "reversed", "accumulate-mul", "accumulate-arrays"],
)
def test_iterators_pull_back_a_batch(f, args):
    _check_iterated(f, *args)


def test_map_through_the_tape_pulls_back_a_batch():
    _check_iterated(map, shifted, [0.4, 1.3], [2.0, 0.5], engine=trace.pullback_full)


@pytest.mark.parametrize("initial", [(), (0.5,)], ids=["no-initial", "initial"])
def test_reduce_pulls_back_a_batch(initial):
    with active_engine(source.pullback_full):
        y, back = _without_declines(functools.reduce, shifted, [0.4, 1.3, B], *initial)
        dys = RNG.standard_normal((4, 3))
        batched = back(dys)
        for k in range(4):
            for got, want in zip(batched, back(dys[k])):
                _same_structure(got, want, k)


def _iterated(values):
    return Iterated(list(values), "test")


@pytest.mark.parametrize(
    "f, values, kwargs",
    [
        (sum, [0.4, B, 2], {}),  # each value gets the batch summed back to its shape; an int gets none
        (max, [0.4, 1.3, -0.6], {}),
        (min, [0.4, 1.3, -0.6], {"key": abs}),
        (sorted, [0.4, 1.3, -0.6], {"reverse": True}),
        (list, [0.4, B], {}),
        (tuple, [0.4, B], {}),
        (next, [B, 0.4], {}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_consumers_of_an_iterated_pull_back_a_batch(f, values, kwargs):
    y, back = _without_declines(f, _iterated(values), **kwargs)
    outputs = list(y) if isinstance(y, (list, tuple)) else None
    if outputs is None:
        dys = RNG.standard_normal((3, *np.shape(y)))
        rows = [_row(y, dys, k) for k in range(3)]
    else:
        dys = [RNG.standard_normal((3, *np.shape(v))) for v in outputs]
        rows = [[_row(v, d, k) for v, d in zip(outputs, dys)] for k in range(3)]
    batched = back(dys)
    for k in range(3):
        for got, want in zip(batched, back(rows[k])):
            _same_structure(got, want, k)


def test_sum_of_an_iterated_sums_each_value_back_to_its_shape():
    _, back = cr.rrule(sum, _iterated([0.5, B]))
    d = back(np.ones(3))[1]
    assert d[0] == 3.0 and np.array_equal(d[1], np.ones(3))  # the number was broadcast: its cotangent sums


# ----- declining: the mapped callable's pullback takes one cotangent at a time --------------------


def quartered(x):
    return x / 4.0


@cr.rrule.register(quartered)  # without batched=True
def _rrule_quartered(x):
    return quartered(x), lambda dy: (cr.NoTangent(), dy / 4.0)


def pair_of(v):
    return (v, v * 2.0)  # a tuple out: the tape's pullback takes one cotangent at a time


PAIR = cr.Tangent[tuple](1.0, 1.0)


@pytest.mark.parametrize(
    "f, args, engine, dy, dxs",
    [
        (map, (quartered, [0.4, 1.3]), source, [1.0, 2.0], cr.Tangent[list](0.25, 0.5)),  # a rule without the flag
        (functools.reduce, (lambda a, v: quartered(a) + v, [0.4, 1.3]), source, 1.0, cr.Tangent[list](0.25, 1.0)),
        (
            itertools.accumulate,
            ([0.4, 1.3], lambda a, v: quartered(a) * v),
            source,
            [0.0, 1.0],
            cr.Tangent[list](0.325, 0.1),
        ),
        (map, (pair_of, [0.4, 1.3]), trace, [PAIR, PAIR], cr.Tangent[list](3.0, 3.0)),  # a tuple out
    ],
    ids=["map-rule", "reduce-python", "accumulate-python", "map-tape-tuple"],
)
def test_a_callable_whose_pullback_takes_one_cotangent_declines_a_batch(f, args, engine, dy, dxs):
    before = batch_declines()
    with active_engine(engine.pullback_full):
        y, back = cr.rrule(f, *args)
    assert batch_declines() > before
    assert back(dy)[1 + (f is not itertools.accumulate)] == dxs  # one cotangent at a time, as before


def test_a_partial_of_a_batched_rule_takes_a_batch():
    p = functools.partial(operator.mul, B)
    y, back = _without_declines(p, 2.0)
    dys = RNG.standard_normal((3, 3))
    batched = back(dys)
    for k in range(3):
        for got, want in zip(batched, back(dys[k])):
            _same_structure(got, want, k)
    declines = batch_declines()
    cr.rrule(functools.partial(quartered), 2.0)
    assert batch_declines() == declines + 1
