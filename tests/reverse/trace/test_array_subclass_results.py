"""A rule whose result is an ndarray subclass (a scaled block of the basis seed, as an inner
forward-mode Jacobian computes on the tape's values) gives a tracked array like any array result:
the tape had let such a result go untracked, silently dropping the derivative through it."""

from __future__ import annotations

import numpy as np

import chainrules as cr
from chainrules.core import BasisSeed, basis_seed


def test_a_product_with_a_basis_block_carries_the_derivative():
    seed = basis_seed(3, (3,), 0, np.float64)  # the identity, as a structured block
    x = np.array([1.0, -2.0, 0.5])

    def f(v):
        diagonal = v * seed  # a scaled block: a BasisSeed whose rows are v[k] e[k]
        return np.sum(diagonal**3)

    assert isinstance(np.ones(3) * seed, BasisSeed)
    np.testing.assert_allclose(cr.gradient(f, x, engine="tape")[0], 3 * x**2)
    np.testing.assert_allclose(cr.gradient(f, x)[0], 3 * x**2)
