"""Constructing NumPy scalars from differentiated values (``np.float64(x)``, ``np.float32(x)``): the
rules, the source engine through them (first and second order), the tape's and the forward
engine's refusal, which names the line, and forward mode through the API, which runs the
function as the source engine's primal."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward
from chainrules.testing import test_frule, test_rrule


@pytest.mark.parametrize("T", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("x", [1.5, np.float64(0.25), np.array([0.5, -1.0]), np.float32(2.0)], ids=repr)
def test_rules(T, x):
    test_rrule(T, x)
    test_frule(T, x)


def mixed_precision(x):
    scale = np.float64(x[0]) * 2 + np.complex128(x[1]).real
    return scale * np.sum(np.float64(x) ** 2) + np.sin(np.float64(x[2]))


def test_the_source_engine_uses_them_to_first_and_second_order():
    x = np.array([0.5, -1.0, 0.3])
    grad = cr.gradient(mixed_precision, x)[0]
    crt.assert_approx(grad, crt.fd_jacobian(mixed_precision, x)[0], rtol=1e-6, atol=1e-8)
    H = cr.hessian(mixed_precision, x)
    crt.assert_approx(H, crt.fd_jacobian(lambda z: cr.gradient(mixed_precision, z)[0], x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("run", ["tape", "forward"])
def test_the_tape_and_forward_mode_refuse_the_conversion(run):
    x = np.array([0.5, -1.0, 0.3])
    with pytest.raises(TypeError, match=r"would drop its derivative") as info:
        if run == "tape":
            cr.gradient(mixed_precision, x, engine="tape")
        else:
            forward.jacobian(mixed_precision, x)
    assert __file__ in str(info.value)
    if run == "forward":
        J = cr.jacobian(mixed_precision, x, mode="forward")
        crt.assert_approx(J, cr.gradient(mixed_precision, x)[0], rtol=1e-13, atol=1e-15)
