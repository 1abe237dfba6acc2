"""Reverse-mode Jacobians through Python's builtins and higher-order functions (``map``, ``filter``,
``reversed``, ``functools.reduce``, ``itertools.accumulate``, ``sum``, ``min``/``max``, ``sorted``,
slices, sequence subclasses, ``dict``) and ``np.linalg.cross``: one batched pullback on both engines,
equal to the loop of one pullback per output and to finite differences. Where a callable's pullback
takes one cotangent at a time, the rule that calls it declines the batch and the Jacobian loops."""

import functools
import itertools
import math

import numpy as np
import pytest
from _jacobians import ENGINES, check_batched, each_engine, fd_jacobian, loop_jacobian

import chainrules as cr
from chainrules.reverse import source
from chainrules.testing.zoo.closures_methods import SEED_MODEL

RNG = np.random.default_rng(11)
COEFFS, POWERS = [3.0, 2.0, -3.0, 1.0], [0, 1, 2, 3]


def polynomial(x):
    """Seed 003/004's ``Polynomial``, written with ``map`` over a lambda that captures ``x``."""
    return sum(map(lambda c, p: c * x**p, COEFFS, POWERS))


def sines(x):
    return np.stack(list(map(np.sin, x))) * x


def seed_model(x):
    return SEED_MODEL(x) * x  # np.stack(list(map(self, x))): a callable object mapped over the entries


def filtered_reversed(x):
    a, b, c = x
    kept = list(filter(lambda v: v > -100.0, [a * 2.0, b, c * c]))
    back_to_front = list(reversed(kept))
    return x * back_to_front[0] + back_to_front[1] * back_to_front[2]


def folds(x):
    a, b, c = x
    total = functools.reduce(lambda acc, v: acc * v + a, [b, c, 1.5], 1.0)
    running = list(itertools.accumulate([a, b, c], lambda s, v: s * v + 1.0))
    return x * total + sum(running) * x[::-1]


def selections(x):
    a, b, c = x
    biggest = max([a, b * 2.0, c])
    nearest = min((a, 2, c), key=lambda v: abs(v - 0.5))  # a key, and an int among the numbers
    ordered = sorted([a * 3.0, b, c], reverse=True)
    return x * biggest + nearest * ordered[0] - max(x) * ordered[2]


class Row(tuple):
    """A tuple subclass that is not a namedtuple (as some libraries return)."""


def row_of(a, b):
    return Row((a, b))


@cr.rrule.register(row_of, batched=True)  # the entries' cotangents, or batches of them, go back
def _rrule_row_of(a, b):
    def row_of_pullback(dy):
        da, db = cr.unthunk(dy).backing
        return cr.NoTangent(), da, db

    return row_of(a, b), row_of_pullback


def slices(x):
    t = (x * 2.0, x[0], np.sin(x), 3)
    head = t[1:3]
    backwards = [x[1], x * x, x[2]][::-2]
    row = row_of(x[2], x * 3.0)
    return head[1] * head[0] + backwards[0] * backwards[1] + row[1] * row[0]


def containers(x):
    a, b, c = x
    pair = tuple([a, x])
    table = dict([("u", b), ("v", x)])
    listed = list((c, x * 2.0))
    total = sum([x, x * a], np.ones(3))  # arrays summed onto a start
    return pair[1] * pair[0] + table.get("v") * table.get("w", c) + listed[1] * listed[0] + total


def numbers(x):
    a, b, c = x
    q, r = divmod(a * 3.0, 0.7)  # the remainder carries the derivative
    return x * r + pow(c, 2) * x[::-1] + pow(b, c)


def complex_numbers(x):
    a, b, c = x
    z = complex(b, c)  # complex() is the source engine's (the tape refuses the conversion)
    return abs(z * z) * x + z.imag * z.real


def closures(x):
    shift = x[0]

    def shifted(t):  # nested functions that capture differentiated values
        return (t - shift) ** 2

    scale = lambda t: t * x  # noqa: E731
    return shifted(x) + scale(2.0) + shifted(scale(x[1]))


def cross_products(X):
    return np.linalg.cross(X[0], X[1]) * np.linalg.cross(X, X[::-1], axis=-1)[1]


BOTH = [
    (polynomial, RNG.standard_normal(3)),
    (sines, RNG.standard_normal(4)),
    (seed_model, np.array([1.0, 2.0, 3.0, 4.0])),
    (filtered_reversed, RNG.standard_normal(3)),
    (folds, RNG.uniform(0.5, 1.5, 3)),
    (selections, np.array([0.35, -1.2, 0.9])),
    (slices, RNG.standard_normal(3)),
    (containers, RNG.standard_normal(3)),
    (numbers, np.array([0.4, 1.3, -0.6])),
    (closures, RNG.standard_normal(3)),
    (cross_products, RNG.standard_normal((2, 3))),
]


def math_sines(x):
    return np.array(list(map(math.sin, x))) * x  # the math module: the source engine's (the tape refuses it)


SOURCE = [(math_sines, RNG.standard_normal(3)), (complex_numbers, np.array([0.4, 1.3, -0.6]))]


@each_engine
@pytest.mark.parametrize("f, x", BOTH, ids=lambda v: getattr(v, "__name__", ""))
def test_one_batched_pullback_equals_the_loop_and_finite_differences(engine, f, x):
    check_batched(engine, f, x, fd_atol=1e-7)


@pytest.mark.parametrize("f, x", SOURCE, ids=lambda v: getattr(v, "__name__", ""))
def test_math_and_complex_conversions_are_one_sweep_in_the_source_engine(f, x):
    check_batched("source", f, x, fd_atol=1e-7)


@each_engine
@pytest.mark.parametrize("f", [polynomial, sines, selections], ids=lambda f: f.__name__)
def test_float32_stays_float32(engine, f):
    x32 = np.array([0.3, -1.2, 0.9], dtype=np.float32)
    J = cr.jacobian(f, x32, mode="reverse", engine=engine)
    assert J.dtype == np.float32
    np.testing.assert_allclose(J, loop_jacobian(engine, f, x32), rtol=1e-6)


def test_the_seed_polynomial_jacobian_is_its_derivative():
    x = np.array([0.5, 1.0, 2.0])
    J = cr.jacobian(polynomial, x, mode="reverse")
    np.testing.assert_allclose(J, np.diag(2.0 - 6.0 * x + 3.0 * x**2), rtol=1e-14)


def complex_entries(z):
    a, b = z
    return np.stack([max([a, b], key=abs), sum(map(lambda v: v * v, [a, b])), sorted([a, b], key=abs)[0]]) * z[0]


@each_engine
def test_complex_entries_take_a_batch(engine):
    z = np.array([0.3 + 0.8j, -1.1 + 0.2j])
    y, back = ENGINES[engine](complex_entries, z)
    assert back.batched
    J = cr.jacobian(complex_entries, z, mode="reverse", engine=engine)
    np.testing.assert_allclose(J, loop_jacobian(engine, complex_entries, z), rtol=1e-13)
    # holomorphic: the Jacobian's row k is d y_k / d z, as forward mode gives it
    eps = 1e-7
    for j in range(2):
        dz = np.zeros(2, complex)
        dz[j] = eps
        np.testing.assert_allclose(J[:, j], (complex_entries(z + dz) - complex_entries(z - dz)) / (2 * eps))


# ----- where a callable's pullback takes one cotangent at a time: the rule declines the batch ------


def halved(x):
    return x / 2.0


@cr.rrule.register(halved)  # a rule without batched=True
def _rrule_halved(x):
    return halved(x), lambda dy: (cr.NoTangent(), dy / 2.0)


def map_of_an_unbatched_rule(x):
    return np.stack(list(map(halved, x))) * x


def reduce_with_an_unbatched_rule(x):
    return x * functools.reduce(lambda acc, v: acc + halved(v), list(x), 0.0)


@pytest.mark.parametrize("f", [map_of_an_unbatched_rule, reduce_with_an_unbatched_rule], ids=lambda f: f.__name__)
def test_a_mapped_callable_without_the_batch_flag_makes_the_jacobian_loop(f):
    x = RNG.standard_normal(3)
    assert not getattr(source.pullback_full(f, x)[1], "batched", False)
    J = cr.jacobian(f, x, mode="reverse")
    np.testing.assert_allclose(J, fd_jacobian(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J, loop_jacobian("source", f, x), rtol=1e-14)
