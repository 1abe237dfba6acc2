"""A variable bound to a value being differentiated in one branch of an ``if`` and to a constant
in the other, inside a loop: going back through an iteration that took the constant's branch,
the variable's cotangent starts again from zero, or a later iteration's cotangent would be
added to an earlier iteration's value (a ReLU written by hand, a cutoff in a pair potential)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr


def relu_sum(z):
    total = 0.0
    for zi in z:
        if zi > 0:
            a = zi
        else:
            a = 0.0
        total = total + a
    return total


def square_in_the_middle(a):
    total = 0.0
    for i in range(3):
        t = a * a if i == 1 else 0.0
        total = total + t
    return total


def square_in_the_middle_while(a):
    total, i = 0.0, 0
    while i < 3:
        if i == 1:
            t = a * a
        else:
            t = 0.0
        total = total + t
        i += 1
    return total + t  # (read after the loop too: the last iteration's constant)


def constant_of_another_shape(a):
    total = np.zeros(2)
    for i in range(3):
        t = a * a if i == 1 else np.zeros(2)
        total = total + t
    return np.sum(total)


def lennard_jones_with_cutoff(flat, rc=1.5):
    pos = flat.reshape(-1, 2)
    energy = 0.0
    for i in range(len(pos)):
        for j in range(i + 1, len(pos)):
            d = pos[i] - pos[j]
            r2 = np.dot(d, d)
            if r2 < rc * rc:
                inv6 = 1.0 / r2**3
                e = 4.0 * (inv6 * inv6 - inv6)
            else:
                e = 0.0  # beyond the cutoff
            energy = energy + e
    return energy


def _central_differences(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        grad.flat[k] = (f(x + e) - f(x - e)) / (2 * h)
    return grad


CASES = [
    (relu_sum, np.array([1.0, -2.0, 3.0, -4.0])),
    (square_in_the_middle, 3.0),
    (square_in_the_middle_while, 3.0),
    (constant_of_another_shape, 3.0),
    (lennard_jones_with_cutoff, np.array([0.0, 0.0, 1.1, 0.0, 3.0, 0.0])),
]


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_agrees_with_finite_differences_and_the_tape(f, x):
    expected = _central_differences(f, x)
    (source,) = cr.gradient(f, x)
    (tape,) = cr.gradient(f, x, engine="tape")
    np.testing.assert_allclose(source, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(source, tape, rtol=1e-12)


def test_hessian_and_reverse_jacobian_of_a_branch_constant():
    assert cr.hessian(square_in_the_middle, 3.0) == pytest.approx(2.0)
    z = np.array([1.0, -2.0, 3.0, -4.0])
    np.testing.assert_array_equal(cr.jacobian(relu_sum, z, mode="reverse"), [1.0, 0.0, 1.0, 0.0])


def test_an_else_block_without_an_adjoint_is_left_out_of_the_generated_code():
    def plain_else(x):
        total = 0.0
        for xi in x:
            if xi > 0:
                total = total + xi
            else:
                print("skipped")  # (no binding: nothing to reset)
        return total

    code = cr.show(plain_else, np.array([1.0, 2.0]))
    pullback = code[code.index("def plain_else_pullback") :]
    assert "else:" not in pullback
