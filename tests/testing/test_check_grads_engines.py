"""check_grads on the real engines: every installed reverse engine (and the forward engine, once
installed) must pass on ordinary NumPy functions."""

import numpy as np
import pytest

from chainrules.testing import available_reverse_engines, check_grads

rng = np.random.default_rng(7)


def rational(a, b):
    return a * b + a / (b + 2.0)


def layer(W, x):
    return np.tanh(W @ x)


def weighted_energy(x):
    return np.sum(np.sin(x) * x**2)


CASES = [
    (rational, (1.5, 0.7)),
    (layer, (rng.standard_normal((3, 4)), rng.standard_normal(4))),
    (weighted_energy, (rng.standard_normal(5),)),
]


def test_the_merged_engines_are_found():
    assert {"source", "tape"} <= set(available_reverse_engines())


@pytest.mark.parametrize("engine", available_reverse_engines())
@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_check_grads_passes_on_real_functions(engine, f, args):
    done = check_grads(f, args, engine=engine)
    assert done[0] == f"reverse[{engine}] order 1: {__name__}.{f.__name__}"
