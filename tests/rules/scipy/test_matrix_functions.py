"""Rules for SciPy's matrix functions beyond expm, sqrtm and logm: the trigonometric and hyperbolic
functions, fractional_matrix_power and expm_frechet (block matrices), signm (its Newton iteration)
and funm (divided differences of the user's func), against finite differences, through the engines
and to second order."""

import numpy as np
import pytest
import scipy.linalg as sl

import chainrules as cr
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.testing import central_fdm, fd_jacobian, nondiff, test_frule, test_rrule

# 2 x 2 (SciPy's complex expm, behind cosm, sinm and tanm of any matrix, is slow), eigenvalues
# well separated (Schur-Parlett's funm is accurate there): real ones about 0.9 and 2.1, the complex
# pair 0.4 +- 1.1i, a complex matrix, and eigenvalues of both signs (about -0.6 and 1.1)
REAL = np.array([[1.0, 0.3], [0.4, 2.0]])
PAIR = np.array([[0.5, -1.2], [1.0, 0.3]])
COMPLEX = PAIR + 0.3j * np.array([[0.5, -1.0], [0.3, 0.1]])
SIGNS = np.array([[-0.5, 0.3], [0.4, 1.0]])
SPD = REAL @ REAL.T + np.eye(2)
W = np.array([[1.0, -0.5], [0.3, 0.7]])


# a fixed step: SciPy's functions of complex matrices are slow, and these are smooth at that scale
FDM = central_fdm(5, 1, adapt=0)


def exp_sin(z):
    return np.exp(z) * np.sin(z)


BLOCK = [sl.cosm, sl.sinm, sl.tanm, sl.coshm, sl.sinhm, sl.tanhm]


@pytest.mark.parametrize("f", BLOCK, ids=lambda f: f.__name__)
def test_trigonometric_and_hyperbolic_functions(f):
    test_rrule(f, PAIR, fdm=FDM)
    test_frule(f, PAIR, fdm=FDM)
    test_frule(f, COMPLEX, fdm=FDM)
    if f is sl.tanhm:  # the adjoint of a complex matrix, which every function of the block matrices shares
        test_rrule(f, COMPLEX, fdm=FDM)


def test_signm():
    for a in (SIGNS, SIGNS + 0.3j * PAIR):
        test_rrule(sl.signm, a, fdm=FDM)
        test_frule(sl.signm, a, fdm=FDM)


def test_a_stack_of_matrix_functions():
    stack = np.stack([SIGNS, REAL])
    for f in (sl.sinhm, sl.signm):
        test_rrule(f, stack, fdm=FDM)
        test_frule(f, stack, fdm=FDM)


def test_fractional_matrix_power_in_the_matrix_and_the_power():
    # SIGNS has a negative eigenvalue: its real power is complex, the cotangents of A and t real
    test_rrule(sl.fractional_matrix_power, SIGNS, 0.5, fdm=FDM)
    test_frule(sl.fractional_matrix_power, SIGNS, 0.5, fdm=FDM)
    test_frule(sl.fractional_matrix_power, COMPLEX, -0.4, fdm=FDM)


@pytest.mark.parametrize("kwargs", [{}, {"compute_expm": False, "method": "blockEnlarge"}], ids=str)
def test_expm_frechet(kwargs):
    for a in (PAIR, COMPLEX):
        test_rrule(sl.expm_frechet, a, W, fkwargs=kwargs, fdm=FDM)
        test_frule(sl.expm_frechet, a, W, fkwargs=kwargs, fdm=FDM)


@pytest.mark.parametrize("func", [exp_sin, lambda z: np.exp(1j * z)], ids=["exp_sin", "exp_i"])
def test_funm(func):
    # exp(i z) has complex coefficients: of a real matrix it is complex, and its rules are still exact
    for a in (REAL, PAIR, COMPLEX):
        test_rrule(sl.funm, a, nondiff(func), fdm=FDM)
        test_frule(sl.funm, a, nondiff(func), fdm=FDM)


def trigonometric_and_hyperbolic(a):
    return np.sum(W * (sl.cosm(a) + sl.sinm(a) + sl.tanm(a) + sl.coshm(a) + sl.sinhm(a) + sl.tanhm(a)))


def sign_power_and_funm(a):
    power = sl.fractional_matrix_power(a @ a.T + np.eye(2), 0.7)
    return np.sum(W * (sl.signm(a - np.eye(2)) + power + sl.funm(a, exp_sin)))


def frechet_derivative(a):
    return np.sum(W * sl.expm_frechet(a, W @ a)[1])


def test_funm_differentiates_what_func_holds():
    # c in func's closure: funm is V diag(exp(c l)) V^{-1}, its values' cotangent diag(V^H dY V^{-H})
    def f(c):
        return np.sum(W * sl.funm(PAIR, lambda z: np.exp(c * z)))

    h = 1e-6
    np.testing.assert_allclose(cr.gradient(f, 0.7)[0], (f(0.7 + h) - f(0.7 - h)) / (2 * h), rtol=1e-7)
    with pytest.raises(
        cr.NoRuleError, match=r"funm\(.*\) at .*test_matrix_functions\.py:\d+ \(a tangent of the values"
    ):
        cr.frule((cr.NoTangent(), cr.ZeroTangent(), 1.0), sl.funm, PAIR, np.exp)


def test_funm_in_what_func_holds_in_forward_mode():
    # SciPy's compiled loops cannot take func's dual numbers: V diag(func(l)) V^{-1} carries them
    def f(c):
        return np.sum(W * sl.funm(PAIR, lambda z: np.exp(c[0] * z) * np.sin(z)))

    c = np.array([0.7])
    (grad,) = cr.gradient(f, c, engine="source")
    np.testing.assert_allclose(grad, fd_jacobian(f, c, FDM)[0], rtol=1e-7)
    np.testing.assert_allclose(cr.jacobian(f, c, mode="forward"), grad, rtol=1e-9)
    np.testing.assert_allclose(cr.jvp(f, (c,), (np.ones(1),))[1], grad[0], rtol=1e-9)
    reference = fd_jacobian(lambda v: cr.gradient(f, v)[0], c, FDM)
    np.testing.assert_allclose(cr.hessian(f, c).reshape(1, 1), reference, rtol=1e-6)
    with pytest.raises(IgnoredRuleError, match=r"has a rule that the tape engine cannot use"):
        cr.gradient(f, c, engine="tape")

    def in_both(x):  # in A and in what func holds at once: forward mode sees A's tangent only, and refuses
        return np.sum(sl.funm(PAIR * x[1], lambda z: np.exp(x[0] * z)))

    with pytest.raises(cr.NoRuleError, match=r"funm\(.*\) at .*test_matrix_functions\.py:\d+ \(its forward"):
        cr.jacobian(in_both, np.array([0.7, 1.1]), mode="forward")


@pytest.mark.parametrize("f", [trigonometric_and_hyperbolic, sign_power_and_funm, frechet_derivative])
def test_through_the_engines_and_to_second_order(f):
    (grad,) = cr.gradient(f, PAIR, engine="source")
    np.testing.assert_allclose(grad, fd_jacobian(f, PAIR, FDM).reshape(2, 2), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, PAIR, mode="forward"), grad, rtol=1e-9, atol=1e-11)
    hessian = cr.hessian(f, PAIR).reshape(4, 4)
    reference = fd_jacobian(lambda a: cr.gradient(f, a)[0], PAIR, FDM).reshape(4, 4)
    np.testing.assert_allclose(hessian, reference, rtol=1e-5, atol=1e-7)
    # the tape sees operations, not calls: it refuses SciPy's functions inside a program, by design
    with pytest.raises(IgnoredRuleError, match=r"has a rule that the tape engine cannot use"):
        cr.gradient(f, PAIR, engine="tape")


@pytest.mark.parametrize("f", [sl.cosm, sl.signm, lambda a: sl.funm(a, exp_sin)], ids=["cosm", "signm", "funm"])
def test_reverse_jacobians_pull_back_a_block(f):
    def entries(a):
        return np.ravel(f(a))

    J = cr.jacobian(entries, SIGNS, mode="reverse").reshape(4, 4)
    np.testing.assert_allclose(J, fd_jacobian(entries, SIGNS, FDM).reshape(4, 4), rtol=1e-6, atol=1e-8)


def test_fractional_matrix_power_in_the_power_to_second_order():
    def f(t):
        return np.sum(W * sl.fractional_matrix_power(SPD, t))

    h = 1e-5
    (grad,) = cr.gradient(f, 0.7)
    np.testing.assert_allclose(grad, (f(0.7 + h) - f(0.7 - h)) / (2 * h), rtol=1e-7)
    np.testing.assert_allclose(cr.hessian(f, 0.7), (cr.gradient(f, 0.7 + h)[0] - cr.gradient(f, 0.7 - h)[0]) / (2 * h))


def test_values_without_a_derivative_are_refused():
    rotation = np.array([[0.0, 1.0], [-1.0, 0.0]])  # eigenvalues +-i: sign jumps there
    where = r"at .*test_matrix_functions\.py:\d+"
    with pytest.raises(cr.NoDerivativeError, match=rf"scipy\.linalg\.signm {where}: .*imaginary axis"):
        cr.gradient(lambda a: np.sum(sl.signm(a)), rotation)
    with pytest.raises(cr.NoDerivativeError, match=rf"scipy\.linalg\.funm {where}: func is not complex-differentiable"):
        cr.gradient(lambda a: np.sum(sl.funm(a, np.abs)), PAIR)  # |z| at the complex pair
    with pytest.raises(cr.NoDerivativeError, match=rf"scipy\.linalg\.funm {where}: A is not diagonalizable"):
        cr.jacobian(lambda a: np.sum(sl.funm(a, np.exp)), np.array([[1.0, 1.0], [0.0, 1.0]]), mode="forward")
    for f, args in ((sl.signm, ()), (sl.funm, (np.exp,))):
        with pytest.raises(cr.NoRuleError, match=rf"{f.__name__}\(.*\) {where} \(disp=False"):
            cr.gradient(lambda a: np.sum(f(a, *args, disp=False)[0]), REAL)
    # a real function of real eigenvalues needs no complex derivative: |z| is z there
    np.testing.assert_allclose(cr.gradient(lambda a: np.sum(sl.funm(a, np.abs)), REAL)[0], np.ones((2, 2)))
