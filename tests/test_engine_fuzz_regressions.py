"""Bugs the engine fuzzer (``tests/fuzz/fuzz_engines.py``) found, each checked against finite differences."""

import numpy as np

import chainrules as cr
import chainrules.testing as crt


def cos_then_update(x):
    v = np.cos(x)
    v += np.exp(0.5 * np.sin(v))  # `v` is new (a ufunc made it) and read only by a ufunc before
    return np.sum(v)


def shifted_then_update(x):
    v = x * 1.5 - 0.25  # an operator's result is a new array
    v += np.sqrt(x * x + 1.0)
    return np.sum(v * v)


def test_plus_equals_on_an_array_an_operator_or_ufunc_made_is_rebound_by_the_source_engine():
    x = np.array([0.3, -0.7, 1.1])
    for f in (cos_then_update, shifted_then_update):
        reference = crt.fd_jacobian(f, x).reshape(x.shape)
        for engine in ("source", "tape"):
            np.testing.assert_allclose(cr.gradient(f, x, engine=engine)[0], reference, rtol=1e-7)
        H = cr.hessian(f, x)
        np.testing.assert_allclose(H, crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x), rtol=1e-6, atol=1e-8)


def constant_in_x(x):
    return 3.0 * np.sum(np.ones(2))


def test_hessian_of_a_function_that_does_not_depend_on_x_is_zeros():
    for engine in ("source", "tape"):
        H = cr.hessian(constant_in_x, np.array([1.0, 2.0], dtype=np.float32), engine=engine)
        assert H.dtype == np.float32 and H.shape == (2, 2) and not H.any()
    assert cr.hessian(constant_in_x, 1.5) == 0.0
