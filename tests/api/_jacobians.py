"""What the reverse-Jacobian tests share: the reverse engines, a parametrization over them, the
finite-difference Jacobian shaped ``y.shape + x.shape``, and the Jacobian of one pullback per output."""

import numpy as np
import pytest

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
