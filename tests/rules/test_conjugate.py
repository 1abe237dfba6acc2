"""The rules of the numbers' ``conjugate`` methods, against finite differences and through the engines."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_grads, test_frule, test_rrule

CASES = [
    (complex.conjugate, 1.5 - 2.0j),
    (float.conjugate, -0.7),
    (np.generic.conjugate, np.complex128(0.3 + 1.1j)),
    (np.generic.conjugate, np.complex64(0.3 + 1.1j)),
    (np.generic.conjugate, np.float64(2.5)),
    (np.generic.conj, np.complex128(-1.0 + 0.5j)),
    (np.conj, 1.5 - 2.0j),  # the ufunc on a Python complex
    (np.conjugate, 0.25),
]


@pytest.mark.parametrize("f, x", CASES, ids=[f"{f.__qualname__}-{type(x).__name__}" for f, x in CASES])
def test_conjugate_rules_agree_with_finite_differences(f, x):
    test_rrule(f, x)
    test_frule(f, x)


def test_the_conjugate_of_an_integer_carries_no_derivative():
    y, back = cr.rrule(int.conjugate, 3)
    assert y == 3 and back(1.0) == (cr.NoTangent(), cr.NoTangent())


def test_the_rule_conjugates_the_cotangent():
    y, back = cr.rrule(complex.conjugate, 1.0 + 2.0j)
    assert y == 1.0 - 2.0j and back(3.0 + 1.0j) == (cr.NoTangent(), 3.0 - 1.0j)
    assert cr.frule((cr.NoTangent(), 3.0 + 1.0j), complex.conjugate, 1.0 + 2.0j) == (1.0 - 2.0j, 3.0 - 1.0j)


@pytest.mark.parametrize("engine", ["tape", "source"])
def test_methods_called_in_user_code_reach_the_rules(engine):
    def abs2(z):  # |z|^2 = z conj(z), whose gradient in the engines' convention is 2z
        return (z.conjugate() * z).real

    assert cr.gradient(abs2, 1.5 + 2.0j, engine=engine) == (3.0 + 4.0j,)
    assert cr.gradient(lambda x: (x * (1 + 2j)).conjugate().imag, 1.5, engine=engine) == (-2.0,)
    x = np.array([0.5, -1.0, 2.0])
    assert cr.gradient(lambda x: np.sum(x) * np.sum(x * 1j).conjugate().imag, x, engine=engine)[0] == pytest.approx(
        -2.0 * np.sum(x) * np.ones(3)
    )


def test_forward_mode_and_check_grads():
    assert cr.derivative(lambda x: (x * (1 + 2j)).conjugate().imag, 1.5) == -2.0
    check_grads(lambda z: (z.conjugate() * z * 1.5).real, (0.7 - 0.2j,), modes=("reverse",), order=1, engine="tape")
    check_grads(lambda x: (x * (1 + 2j)).conjugate().imag * x, (1.5,), modes=("forward", "reverse"), order=1)
