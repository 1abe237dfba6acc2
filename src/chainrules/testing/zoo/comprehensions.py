"""Zoo family: comprehensions, generator expressions and higher-order functions over user callables.

Generator expressions fed to ``sum``, ``max``, ``min``, ``tuple`` and ``np.array``; list, dict and
nested comprehensions with conditions; ``map``, ``filter``, ``functools.reduce``,
``itertools.accumulate`` and ``sorted`` with a key, over lambdas.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from . import case

_XS = [0.5, -1.5, 2.0, 0.25]


@case(_XS, 1.5, tags=("structure", "comprehension"))
def list_comprehension_sum(xs, w):
    return sum([x * w + x * x for x in xs])


@case(_XS, tags=("structure", "comprehension"))
def generator_into_sum(xs):
    return sum(x**2 for x in xs if x > 0)


@case(np.array([1.0, 2.0]), np.array([0.5, -1.0, 3.0]), tags=("array", "comprehension", "array_write"))
def nested_comprehension(xs, ys):
    table = np.array([[a * b for b in ys] for a in xs])
    return (table * table).sum()


@case(_XS, 2.0, tags=("structure", "comprehension"))
def dict_comprehension(xs, w):
    scaled = {name: v * w for name, v in zip("abcd", xs)}
    return scaled["a"] * scaled["c"] - scaled["d"]


@case(np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]]), 0.7, tags=("array", "comprehension", "array_write"))
def rows_into_array(m, w):
    return np.array([row * w + row**2 for row in m]).sum()


@case(_XS, 0.9, tags=("structure", "comprehension"))
def max_minus_min_of_generators(xs, w):
    return max(x * w for x in xs) - min(x * x for x in xs)


@case(_XS, tags=("structure", "comprehension"))
def tuple_of_generator(xs):
    t = tuple(2.0 * x for x in xs)
    return t[1] * t[2] + t[0]


@case(_XS, tags=("structure", "comprehension"))
def comprehension_over_enumerate(xs):
    return sum([i * x * x for i, x in enumerate(xs) if i % 2 == 0])


@case(_XS, 1.3, tags=("structure", "comprehension", "higher_order"))
def map_filter_lambdas(xs, w):
    positive = filter(lambda v: v > 0, xs)
    return sum(map(lambda v: v * w + 1.0, positive))


@case([1.5, 0.5, 2.0], 0.3, tags=("structure", "higher_order"))
def reduce_with_closure(xs, c):
    return functools.reduce(lambda acc, v: acc * v + c, xs, 1.0)


@case([1.5, 0.5, 2.0, 1.1], tags=("structure", "higher_order"))
def running_products(xs):
    return sum(itertools.accumulate(xs, lambda a, b: a * b))


@case([0.4, -1.2, 2.5, 0.9], 1.1, tags=("structure", "higher_order"))
def sorted_by_key_of_values(xs, w):
    ordered = sorted(xs, key=lambda v: abs(v - 1.0))
    return ordered[0] * w + ordered[-1]
