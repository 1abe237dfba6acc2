"""``return``, ``break`` and ``continue`` inside a ``with`` block: the source engine runs the rest of
the block under flags, so the context manager exits as Python's jump makes it, then skips what
follows (they had been refused). Values and gradients match the plain run and finite differences;
the context manager is entered and exited once per use, in order."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt


class Log:
    def __init__(self, events, name):
        self.events, self.name = events, name

    def __enter__(self):
        self.events.append(f"enter {self.name}")
        return self

    def __exit__(self, *exc):
        self.events.append(f"exit {self.name}")
        return False


def returns_inside(x, events):
    with Log(events, "outer"):
        for xi in x:
            if xi > 2.0:
                return xi * np.sum(x**2)
        y = np.sum(x)
    return y * 3.0


def breaks_and_continues_inside(x, events):
    total = 0.0
    for i in range(len(x)):
        with Log(events, str(i)):
            if x[i] < 0:
                continue
            total = total + x[i] ** 2
            if total > 4.0:
                break
        total = total * 1.5
    return total


def nested_blocks(x, events):
    with Log(events, "a"):
        with np.errstate(divide="ignore"):
            if x[0] > 0:
                return np.log(x[0]) * x[1]
        z = x[1] ** 3
    return z


CASES = [
    (returns_inside, np.array([0.4, 2.5, 0.1])),
    (returns_inside, np.array([0.4, 1.5, 0.1])),
    (breaks_and_continues_inside, np.array([1.0, -0.5, 1.5, 2.0, 0.3])),
    (breaks_and_continues_inside, np.array([0.5, -0.5, 0.2])),
    (nested_blocks, np.array([0.7, 1.3])),
    (nested_blocks, np.array([-0.7, 1.3])),
]


@pytest.mark.parametrize("f, x", CASES, ids=lambda v: getattr(v, "__name__", None) or str(v[0]))
def test_jumps_out_of_with_blocks(f, x):
    plain_events, events = [], []
    expected = f(x, plain_events)
    y, back = cr.pullback(f, x, events)
    assert y == expected and events == plain_events
    grad = back(1.0)[0]
    crt.assert_approx(grad, crt.fd_jacobian(lambda z: f(z, []), x)[0], rtol=1e-7, atol=1e-9)
    H = cr.hessian(lambda z: f(z, []), x)
    crt.assert_approx(H, crt.fd_jacobian(lambda z: cr.gradient(lambda v: f(v, []), z)[0], x), rtol=1e-6, atol=1e-8)
