"""Complex intermediates of a real function under nested differentiation, in every nesting.

Inside a Hessian (forward over reverse) or a gradient of a gradient, the inner engine meets the
outer engine's values (dual numbers, tracked numbers) where it would meet numbers: ``.real`` and
``.imag`` of one read the number inside, ``.conjugate()`` conjugates it, and the cotangent of a
real input stays real when a complex constant multiplies it.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian


def rotated_array(z):
    w = z * z + 1j * z
    return np.sum(np.real(w) + 2 * np.imag(w))


def _second_derivative(f, x):
    return fd_jacobian(lambda v: cr.gradient(f, v)[0], x)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_of_a_real_function_of_a_real_array_is_real(engine):
    x = np.array([0.7, 0.2])
    H = cr.hessian(rotated_array, x, engine=engine)
    assert H.dtype == np.float64
    np.testing.assert_allclose(H, _second_derivative(rotated_array, x), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("outer", ["source", "tape", "forward"])
@pytest.mark.parametrize("inner", ["source", "tape"])
def test_inner_gradient_of_a_real_input_is_real(outer, inner):
    def slope(x):
        return cr.gradient(lambda z: np.imag(1j * z * z) + np.real(z * (1 + 1j)), x, engine=inner)[0]

    if outer == "forward":
        value, curvature = cr.jvp(slope, (0.7,), (1.0,))
    else:
        value, back = cr.pullback(slope, 0.7, engine=outer)
        (curvature,) = back(1.0)
    assert not np.iscomplexobj(value) and value == pytest.approx(2.4)
    assert curvature == pytest.approx(2.0)


NESTINGS = [("tape", "source"), ("source", "tape"), ("source", "source"), ("tape", "tape")]


def real_and_imaginary_parts(z):
    w = z * z + 1j * z
    return w.real + 2 * w.imag


def attributes_of_an_array(z):
    w = z * z + 1j * z
    return np.sum(w.real + 2 * w.imag)


@pytest.mark.parametrize("outer, inner", NESTINGS)
def test_gradient_of_gradient_reads_real_and_imag_attributes(outer, inner):
    def slope(x):
        return cr.gradient(real_and_imaginary_parts, x, engine=inner)[0]

    (curvature,) = cr.gradient(slope, 0.7, engine=outer)
    assert curvature == pytest.approx(_second_derivative(real_and_imaginary_parts, 0.7)[0, 0], rel=1e-7)


@pytest.mark.parametrize("f, x", [(real_and_imaginary_parts, 0.7), (attributes_of_an_array, np.array([0.7, 0.2]))])
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_reads_real_and_imag_attributes(f, x, engine):
    H = cr.hessian(f, x, engine=engine)
    assert not np.iscomplexobj(H)
    np.testing.assert_allclose(H, _second_derivative(f, x).reshape(np.shape(H)), rtol=1e-7, atol=1e-9)


def conjugated(z):
    w = np.exp(1j * z) * z
    return abs(w) ** 2 + np.real(w) + w.conjugate().imag - np.multiply(z, z).conjugate()


@pytest.mark.parametrize("outer, inner", NESTINGS)
def test_gradient_of_gradient_calls_the_conjugate_method(outer, inner):
    def slope(x):
        return cr.gradient(conjugated, x, engine=inner)[0]

    (curvature,) = cr.gradient(slope, 0.7, engine=outer)
    assert curvature == pytest.approx(_second_derivative(conjugated, 0.7)[0, 0], rel=1e-7)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_calls_the_conjugate_method(engine):
    expected = _second_derivative(conjugated, 0.7)[0, 0]
    assert cr.hessian(conjugated, 0.7, engine=engine) == pytest.approx(expected, rel=1e-7)


def built_with_complex(a):
    z = complex(a, a * a)
    w = np.exp(z) * complex(a) + complex(2.0, a)
    return abs(w) + w.real * w.imag


@pytest.mark.parametrize("outer", ["tape", "source", "hessian"])
def test_second_derivative_through_the_complex_constructor(outer):
    expected = _second_derivative(built_with_complex, 0.6)[0, 0]
    if outer == "hessian":
        got = cr.hessian(built_with_complex, 0.6)
    else:
        got = cr.gradient(lambda v: cr.gradient(built_with_complex, v)[0], 0.6, engine=outer)[0]
    assert got == pytest.approx(expected, rel=1e-7)
