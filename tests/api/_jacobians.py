"""What the reverse-Jacobian tests share: the reverse engines, a parametrization over them, the
finite-difference Jacobian shaped ``y.shape + x.shape``, the Jacobian of one pullback per output,
and the check of a batched pullback against both."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules import api
from chainrules.reverse import source, trace

ENGINES = {"source": source.pullback_full, "tape": trace.pullback_full}
each_engine = pytest.mark.parametrize("engine", list(ENGINES))


def fd_jacobian(f, x):
    y = np.asarray(f(x))
    return crt.fd_jacobian(f, x).reshape(y.shape + np.shape(x))


def loop_jacobian(engine, f, x):
    """The Jacobian one pullback per output: the same pullback without its batched flag."""
    y, back = ENGINES[engine](f, x)
    return api._reverse_jacobian(x, y, lambda dy: back(dy))  # (a plain function: no batched flag)


def check_batched(engine, f, x, rtol: float = 1e-12, fd_atol: float = 1e-8):
    """``f``'s pullback in ``engine`` takes a batch, and the Jacobian from it (a plain writable array of
    shape ``y.shape + x.shape``) equals the one-pullback-per-output Jacobian and finite differences."""
    y, back = ENGINES[engine](f, x)
    assert back.batched
    J = cr.jacobian(f, x, mode="reverse", engine=engine)
    assert J.shape == np.shape(y) + np.shape(x) and J.flags.writeable and type(J) is np.ndarray
    np.testing.assert_allclose(J, loop_jacobian(engine, f, x), rtol=rtol, atol=1e-13)
    np.testing.assert_allclose(J, fd_jacobian(f, x), rtol=1e-6, atol=fd_atol)
