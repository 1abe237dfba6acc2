"""Joining pieces given as lists of numbers being differentiated (``np.concatenate([x[:2], [2 * x[3]],
...])``): forward mode's Jacobian pushes a chunk of tangents through them. The list's tangent, a
structure of its elements' batched tangents, had been read as a batch of the list's length, and
the join failed ("tangents carry batch axes of different lengths"). In a Hessian, the reverse
rule measures such a piece without converting the dual numbers it holds."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

PROGRAMS = {
    "concatenate": lambda x: np.concatenate([x[:2], [x[3] * 2.0], np.array([1.0]), (x[0], x[1] ** 2)]),
    "stack": lambda x: np.stack([x[:2], [x[2], 3.0 * x[0]]]),
    "hstack": lambda x: np.hstack([[x[1] * x[2]], x]),
    "vstack": lambda x: np.vstack([x[:3], [x[3], x[0], 1.0]]),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("chunk_size", [None, 1, 3])
def test_forward_jacobian(name, chunk_size):
    f = PROGRAMS[name]
    x = np.array([0.3, -1.2, 0.8, 1.7])
    J = cr.jacobian(f, x, mode="forward", chunk_size=chunk_size)
    crt.assert_approx(J, crt.fd_jacobian(f, x).reshape(np.shape(J)), rtol=1e-8, atol=1e-10)
    crt.assert_approx(cr.jacobian(f, x, mode="reverse"), J, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessians(name, engine):
    # the reverse rule measures a list piece holding dual numbers without converting them (it had
    # refused to take them, "cannot take dual numbers")
    def f(x):
        return np.sum(PROGRAMS[name](x) ** 2)

    x = np.array([0.3, -1.2, 0.8, 1.7])
    H = cr.hessian(f, x, engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda v: cr.gradient(f, v)[0], x), rtol=1e-6, atol=1e-8)
