"""An integer argument is a setting (a count, a length, a key): both reverse engines let it index a
table, key a cache, size a window built by library code (``np.hanning(n)``) and convert to an
integer, with ``NoTangent()`` for it, while the floats beside it are differentiated."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

SCALE = {2: 0.5, 3: 0.25}


@functools.lru_cache
def positions(n):
    return tuple(range(n))


def keyed_by_the_count(x, n):
    return SCALE[n] * np.sum(x[list(positions(n))] ** 2) * int(n)


def windowed_by_the_count(x, n):
    return np.sum(x[:n] * np.hanning(n)) + np.sum(np.bartlett(n + 2)[1:-1] * x[:n] ** 2)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("f", [keyed_by_the_count, windowed_by_the_count], ids=lambda f: f.__name__)
def test_an_integer_setting_in_tables_caches_and_library_code(f, engine):
    x = np.array([0.2, 0.7, -0.4])
    dx, dn = cr.gradient(f, x, 3, engine=engine)
    np.testing.assert_allclose(dx, fd_jacobian(lambda z: f(z, 3), x).ravel(), rtol=1e-7)
    assert dn == cr.NoTangent()


def test_the_tape_still_refuses_a_float_made_of_an_integer_by_the_users_code():
    """``float(n)`` in the function's own code is arithmetic on ``n`` (the source engine gives it a
    float derivative): the tape, which would drop it, refuses it as for any value it follows."""

    def scaled(x, n):
        return np.sum(x) * float(n)

    with pytest.raises(cr.DroppedDerivativeError, match="float()"):
        cr.gradient(scaled, np.ones(2), 3, engine="tape")
    assert cr.gradient(scaled, np.ones(2), 3, engine="source")[1] == 2.0
