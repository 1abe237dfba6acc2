"""Product rules (rules/numpy/products.py) and the BLAS multiply-adds behind them (_blas.py)."""

import itertools
import operator
import tracemalloc
import warnings

import numpy as np
import pytest
from _array_checks import (
    Case,
    Wrapped,
    check_accumulation_layouts,
    check_batched_frule,
    check_rrule_on_wrapped,
    rand,
)
from _array_checks import Const as C

import chainrules as cr
import chainrules.testing as crt
from chainrules.rules.numpy._blas import apply_op, muladd, product
from chainrules.rules.operators import rrule_user_matmul

F32, C64, C128 = np.float32, np.complex64, np.complex128

MATMUL = [
    Case(np.matmul, rand(3, 4), rand(4, 5)),
    Case(np.matmul, rand(4), rand(4, 5)),
    Case(np.matmul, rand(3, 4), rand(4)),
    Case(np.matmul, rand(4), rand(4)),
    Case(np.matmul, rand(2, 3, 4), rand(4, 5)),
    Case(np.matmul, rand(2, 3, 4), rand(4)),
    Case(np.matmul, rand(4, 3).T, rand(4, 5)),
    Case(np.matmul, rand(2, 4, 3).transpose(0, 2, 1), rand(4, 2)),
    Case(np.matmul, rand(3, 4), rand(2, 4, 5)),
    Case(np.matmul, rand(4), rand(2, 4, 5)),
    Case(np.matmul, rand(2, 1, 3, 4), rand(5, 4, 2)),
    Case(np.matmul, rand(2, 3, 4), rand(2, 4, 5)),
    Case(np.matmul, rand(3, 4, dtype=C128), rand(4, 5, dtype=C128)),
    Case(np.matmul, rand(3, 4, dtype=C128), rand(4, dtype=C128)),
    Case(np.matmul, rand(4, dtype=C64), rand(4, 2, dtype=C64)),
    Case(np.matmul, rand(3, 4), rand(4, 5, dtype=C128)),
    Case(np.matmul, rand(3, 4, dtype=F32), rand(4, 5, dtype=F32)),
    Case(np.matmul, rand(2, 3, 4, dtype=F32), rand(4, 2, dtype=F32)),
    Case(np.matmul, rand(3, 4, dtype=F32), rand(4, 5)),
    Case(operator.matmul, rand(3, 4), rand(4, 5)),
    Case(operator.matmul, rand(3), rand(2, 3, 1)),
    Case(np.ndarray.dot, rand(3, 4), rand(4)),
]

CONTRACTIONS = [
    Case(np.dot, rand(3, 4), rand(4, 5)),
    Case(np.dot, rand(4), rand(4)),
    Case(np.dot, rand(2, 3, 4), rand(5, 4, 2)),
    Case(np.dot, rand(2, 3, 4, dtype=C128), rand(4, dtype=C128)),
    Case(np.dot, rand(3), 2.0),
    Case(np.dot, 1.5 + 1j, rand(2, 2, dtype=C128)),
    Case(np.inner, rand(3, 4), rand(5, 4)),
    Case(np.inner, rand(4), rand(4)),
    Case(np.inner, rand(2, 3, 4, dtype=F32), rand(4, dtype=F32)),
    Case(np.inner, rand(3, dtype=C128), rand(2, 3, dtype=C128)),
    Case(np.inner, 2.0, rand(3)),
    Case(np.outer, rand(3), rand(4)),
    Case(np.outer, rand(2, 3), rand(4, dtype=C128)),
    Case(np.outer, rand(1), rand(3, dtype=F32).astype(F32)),
    Case(np.tensordot, rand(2, 3, 4), rand(3, 4, 5)),
    Case(np.tensordot, rand(2, 3, 4), rand(4, 2), C(([0, 2], [1, 0]))),
    Case(np.tensordot, rand(3), rand(3), C(1)),
    Case(np.tensordot, rand(2, 3, dtype=C128), rand(3, 2, dtype=C128), axes=([1, 0], [0, 1])),
    Case(np.tensordot, rand(2, 3), rand(4, 5), C(0)),
    Case(np.vdot, rand(3, 2, dtype=C128), rand(6, dtype=C128)),
    Case(np.vdot, rand(3), rand(3)),
    Case(np.vdot, rand(2, 2, dtype=F32), rand(4, dtype=F32)),
]

EINSUM = [
    Case(np.einsum, C("ij,jk->ik"), rand(3, 4), rand(4, 5)),
    Case(np.einsum, C("ij,jk"), rand(3, 4), rand(4, 5)),
    Case(np.einsum, C("ji"), rand(3, 4, dtype=C128)),
    Case(np.einsum, C("ii->i"), rand(3, 3)),
    Case(np.einsum, C("ii"), rand(3, 3)),
    Case(np.einsum, C("iij->j"), rand(3, 3, 2)),
    Case(np.einsum, C("ij->"), rand(3, 3, dtype=F32)),
    Case(np.einsum, C("ij->i"), rand(3, 4)),
    Case(np.einsum, C("i,j->ij"), rand(3), rand(2)),
    Case(np.einsum, C("...ij,...jk->...ik"), rand(2, 1, 3, 4), rand(5, 4, 2)),
    Case(np.einsum, C("...i,...i"), rand(2, 3), rand(3)),
    Case(np.einsum, C("i...->..."), rand(3, 2, 2)),
    Case(np.einsum, C("bij,bjk,kl->bil"), rand(2, 3, 4), rand(2, 4, 5), rand(5, 2)),
    Case(np.einsum, C("bij,bjk,kl->bil"), rand(2, 3, 4), rand(2, 4, 5), rand(5, 2), optimize=True),
    Case(np.einsum, C("ij,ij->ij"), rand(3, 1), rand(3, 4)),
    Case(np.einsum, C("i,i"), rand(3, dtype=C128), rand(3, dtype=C128)),
    Case(np.einsum, C("i, i ->"), rand(3, dtype=C64), rand(3, dtype=C64)),
    Case(np.einsum, C(",ij->ij"), 2.0, rand(2, 2)),
    Case(np.einsum, rand(3, 4), C([0, 1]), rand(4, 5), C([1, 2]), C([0, 2])),
    Case(np.einsum, rand(3, 3), C([0, 0])),
    Case(np.einsum, rand(2, 3), C([Ellipsis, 1]), rand(3), C([1]), C([Ellipsis])),
    # dtype= sets the output's dtype, and so its tangent's
    Case(np.einsum, C("ij->j"), rand(2, 2, dtype=F32), dtype=np.float64),
    Case(np.einsum, C("ij,jk->ik"), rand(2, 3, dtype=F32), rand(3, 2, dtype=F32), dtype=np.float64),
    Case(np.einsum, C("ij->i"), rand(2, 3), dtype=np.float32, casting="same_kind"),
]

KRON = [
    Case(np.kron, rand(2, 3), rand(3, 2)),
    Case(np.kron, rand(2), rand(3, 2)),
    Case(np.kron, rand(2, 2, dtype=C128), rand(2, dtype=C128)),
    Case(np.kron, rand(2, 1, 2, dtype=F32), rand(2, 2, dtype=F32)),
    Case(np.kron, 2.0, rand(3)),
]

CASES = MATMUL + CONTRACTIONS + EINSUM + KRON


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rrule(case):
    crt.test_rrule(case.f, *case.testing_args(), fkwargs=case.kwargs)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_frule(case):
    crt.test_frule(case.f, *case.testing_args(), fkwargs=case.kwargs)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_batched_frule(case):
    check_batched_frule(case.f, *case.args, fkwargs=case.kwargs)


# products with a scalar factor, and vdot, have elementwise cotangents: no in-place form
MATRIX_PRODUCTS = [
    c
    for c in MATMUL + CONTRACTIONS
    if c.f is not np.vdot and all(np.ndim(a) >= 1 for a in c.args if not isinstance(a, C))
]


@pytest.mark.parametrize("case", MATRIX_PRODUCTS, ids=str)
def test_matrix_product_cotangents_accumulate_into_every_layout(case):
    assert check_accumulation_layouts(case.f, *case.args, fkwargs=case.kwargs) >= 1


# ----- the BLAS layer ------------------------------------------------------------------------


def _laid_out(a, layout):
    if layout == "C":
        return np.ascontiguousarray(a)
    if layout == "F":
        return np.asfortranarray(a)
    big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
    view = big[::2, ::2]
    view[...] = a
    return view


SHAPES = [(3, 4, 5), (3, 4, 1), (1, 4, 5), (3, 1, 5), (1, 1, 1)]
BLAS_ROWS = [
    (dtype, shape, ops, layouts)
    for dtype in (F32, np.float64, C64, C128)
    for shape in SHAPES
    for ops in itertools.product("NTCR", repeat=2)
    # (accumulator, x, y): every layout in every role
    for layouts in (("C", "C", "C"), ("F", "S", "F"), ("S", "F", "S"))
]


@pytest.mark.parametrize("dtype, shape, ops, layouts", BLAS_ROWS)
def test_muladd_and_product_agree_with_numpy(dtype, shape, ops, layouts):
    M, K, N = shape
    (opx, opy), (lacc, lx, ly) = ops, layouts
    x = _laid_out(rand(*((M, K) if opx in "NR" else (K, M)), dtype=dtype), lx)
    y = _laid_out(rand(*((K, N) if opy in "NR" else (N, K)), dtype=dtype), ly)
    acc = _laid_out(rand(M, N, dtype=dtype), lacc)
    x0, y0, want = x.copy(), y.copy(), acc + apply_op(x, opx) @ apply_op(y, opy)
    tol = 1e-4 if dtype in (F32, C64) else 1e-12
    contiguous = acc.flags.c_contiguous or acc.flags.f_contiguous
    done = muladd(acc, x, opx, y, opy)
    assert done == contiguous, "BLAS takes C and Fortran accumulators and refuses strided ones"
    if done:
        np.testing.assert_allclose(acc, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_allclose(product(x, opx, y, opy), apply_op(x0, opx) @ apply_op(y0, opy), rtol=tol, atol=tol)


def test_muladd_refuses_mixed_dtypes_and_readonly_accumulators():
    a = rand(2, 2)
    assert not muladd(np.zeros((2, 2), F32), a, "N", a, "N")
    assert not muladd(np.zeros((2, 2)), a.astype(F32), "N", a, "N")
    frozen = np.zeros((2, 2))
    frozen.flags.writeable = False
    assert not muladd(frozen, a, "N", a, "N")
    assert not muladd(np.zeros((2, 0)), np.zeros((2, 3)), "N", np.zeros((3, 0)), "N")


# ----- in-place accumulation of product cotangents ------------------------------------------


@pytest.mark.parametrize("order", ["C", "F"])
def test_matmul_cotangent_adds_into_the_accumulator_without_allocating_the_product(order):
    n = 300
    A, B, dY = rand(n, n), rand(n, n), rand(n, n)
    _, back = cr.rrule(np.matmul, A, B)
    _, dA, dB = back(dY)
    assert isinstance(dA, cr.InplaceableThunk) and isinstance(dB, cr.InplaceableThunk)
    acc = np.asarray(rand(n, n), order=order)
    want = acc + A.T @ dY
    tracemalloc.start()
    try:
        out = cr.iadd(acc, dB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out is acc
    np.testing.assert_allclose(acc, want, rtol=1e-10, atol=1e-10)
    assert peak < 8 * n * n / 4, f"peak {peak} bytes: the product was allocated"


def test_stacked_times_matrix_accumulates_into_a_folded_view():
    A, B = rand(4, 3, 5), rand(5, 2)
    _, back = cr.rrule(np.matmul, A, B)
    dY = rand(4, 3, 2)
    dA, dB = back(dY)[1:]
    acc = np.zeros((4, 3, 5))
    assert cr.iadd(acc, dA) is acc
    np.testing.assert_allclose(acc, dY @ B.T)
    acc = np.zeros((5, 2))
    np.testing.assert_allclose(cr.iadd(acc, dB), np.einsum("bij,bik->jk", A, dY))


def test_integer_operands_get_float_cotangents():
    A, B = np.arange(6).reshape(2, 3), rand(3, 2)
    y, back = cr.rrule(np.matmul, A, B)
    np.testing.assert_allclose(y, A @ B)
    dA, dB = (cr.unthunk(t) for t in back(np.ones((2, 2)))[1:])
    assert dA.dtype == np.float64 and dB.dtype == np.float64
    np.testing.assert_allclose(dA, np.ones((2, 2)) @ B.T)
    _, back = cr.rrule(np.einsum, "ij,j", np.ones((2, 2), dtype=int), rand(2))
    assert cr.unthunk(back(np.ones(2))[2]).dtype == np.float64


def test_complex_matmul_cotangents_use_conjugate_transposes():
    A, B = rand(2, 3, dtype=C128), rand(3, 2, dtype=C128)
    dY = rand(2, 2, dtype=C128)
    _, back = cr.rrule(np.matmul, A, B)
    dA, dB = (cr.unthunk(t) for t in back(dY)[1:])
    np.testing.assert_allclose(dA, dY @ B.conj().T)
    np.testing.assert_allclose(dB, A.conj().T @ dY)


def test_output_and_axes_keywords_are_refused():
    with pytest.raises(TypeError, match="out="):
        cr.rrule(np.matmul, rand(2, 2), rand(2, 2), out=np.zeros((2, 2)))
    with pytest.raises(TypeError, match="axes"):
        cr.rrule(np.matmul, rand(2, 2), rand(2, 2), axes=[(0, 1), (0, 1), (0, 1)])


def test_every_product_has_both_rules():
    from chainrules.core import callable_name

    names = {name: (r, f) for name, r, f in cr.rules.list_rules()}
    for case in CASES:
        assert names.get(callable_name(case.f)) == (True, True), callable_name(case.f)


def _reads_a_diagonal(case):
    """An einsum that repeats a label in one operand ("ii->i") scatters its cotangent into a NumPy array."""
    if case.f is not np.einsum:
        return False
    labels = [a.value for a in case.args if isinstance(a, C)]
    operands = labels[0].split("->")[0].split(",") if isinstance(labels[0], str) else labels
    return any(len(set(op)) < len(op) for op in operands)


WRAPPABLE = [c for c in CASES if not _reads_a_diagonal(c)]


@pytest.mark.parametrize("case", WRAPPABLE, ids=str)
def test_rrule_on_values_implementing_numpy_protocols(case):
    check_rrule_on_wrapped(case.f, *case.args, fkwargs=case.kwargs)


def test_matmul_operator_rule_covers_array_likes_only():
    class Polynomial:  # defines @ but is no array: engines differentiate its own code
        def __matmul__(self, other):
            return self

    # not the arrays' rule: the rule for operators of user classes, which differentiates Polynomial.__matmul__
    assert cr.rrule.lookup(operator.matmul, (Polynomial(), Polynomial())) is rrule_user_matmul
    assert cr.rrule.lookup(operator.matmul, (np.ones(2), np.ones(2))) is not None
    assert cr.rrule.lookup(operator.matmul, (Wrapped(np.ones(2)), Wrapped(np.ones(2)))) is not None
    assert cr.frule.lookup(operator.matmul, ([1.0, 2.0], np.ones(2))).batched


# ----- cross, convolve, polyval ---------------------------------------------------------------

R7 = np.random.default_rng(17)


def _r(*shape, dtype=np.float64):
    value = R7.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * R7.standard_normal(shape)
    return value.astype(dtype)


ND = crt.nondiff
BILINEAR = [
    (np.cross, (_r(3), _r(3)), {}),
    (np.cross, (_r(4, 3), _r(3)), {}),
    (np.cross, (_r(3, 4), _r(2, 4, 3)), {"axisa": 0}),
    (np.cross, (_r(3, 2), _r(3, 2), ND(0), ND(0), ND(0)), {}),
    (np.cross, (_r(2, 3, 5), _r(2, 3, 5)), {"axis": 1}),
    (np.cross, (_r(4, 3), _r(4, 3)), {"axisc": 0}),
    (np.cross, (_r(3, dtype=np.float32), _r(3, dtype=np.float32)), {}),
    (np.cross, (_r(2, 3, dtype=np.complex128), _r(2, 3, dtype=np.complex128)), {}),
    (np.linalg.cross, (_r(4, 3), _r(4, 3)), {}),
    (np.linalg.cross, (_r(3, 4), _r(3, 4)), {"axis": 0}),
    (np.convolve, (_r(5), _r(3)), {}),
    (np.convolve, (_r(3), _r(5), ND("same")), {}),
    (np.convolve, (_r(6), _r(4)), {"mode": "valid"}),
    (np.convolve, (_r(4), _r(6)), {"mode": "valid"}),
    (np.convolve, (_r(4), _r(4)), {"mode": "same"}),
    (np.convolve, (_r(5, dtype=np.float32), _r(2, dtype=np.float32)), {"mode": "same"}),
    (np.convolve, (_r(4, dtype=np.complex128), _r(3, dtype=np.complex128)), {}),
    # np.correlate is the convolution with v conjugated and reversed, in every mode and length order
    (np.correlate, (_r(5), _r(3)), {}),
    (np.correlate, (_r(3), _r(5), ND("same")), {}),
    (np.correlate, (_r(4), _r(6)), {"mode": "full"}),
    (np.correlate, (_r(6), _r(6)), {"mode": "same"}),
    (np.correlate, (_r(5, dtype=np.float32), _r(2, dtype=np.float32)), {"mode": "full"}),
    (np.correlate, (_r(4, dtype=np.complex128), _r(3, dtype=np.complex128)), {"mode": "full"}),
    (np.correlate, (_r(3, dtype=np.complex128), _r(5, dtype=np.complex128)), {"mode": "same"}),
    # v the longer and len(a) even: NumPy's "same" window is one entry later than convolve's
    (np.correlate, (_r(2), _r(3)), {"mode": "same"}),
    (np.correlate, (_r(4), _r(5), ND("same")), {}),
    (np.correlate, (_r(2, dtype=np.float32), _r(5, dtype=np.float32)), {"mode": "same"}),
    (np.polyval, (_r(4), _r(3, 2)), {}),
    (np.polyval, (_r(3), 0.7), {}),
    (np.polyval, (_r(1), _r(3)), {}),
    (np.polyval, (_r(3, dtype=np.float32), _r(5, dtype=np.float32)), {}),
    (np.polyval, (_r(3, dtype=np.complex128), _r(4, dtype=np.complex128)), {}),
]


def _bilinear_id(case):
    f, args, kwargs = case
    return f"{f.__name__}-" + "-".join(str(np.shape(getattr(a, "value", a))) for a in args) + f"-{kwargs}"


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors are deprecated")
@pytest.mark.parametrize("case", BILINEAR, ids=_bilinear_id)
def test_bilinear_rrule(case):
    f, args, kwargs = case
    crt.test_rrule(f, *args, fkwargs=kwargs)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors are deprecated")
@pytest.mark.parametrize("case", BILINEAR, ids=_bilinear_id)
def test_bilinear_frule(case):
    f, args, kwargs = case
    crt.test_frule(f, *args, fkwargs=kwargs)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors are deprecated")
@pytest.mark.parametrize("case", BILINEAR, ids=_bilinear_id)
def test_bilinear_batched_frule(case):
    from _array_checks import Const, check_batched_frule

    f, args, kwargs = case
    check_batched_frule(f, *(Const(a.value) if hasattr(a, "value") else a for a in args), fkwargs=kwargs)


def test_polyval_refuses_poly1d_coefficients():
    with pytest.raises(TypeError, match="1-D array of coefficients"):
        cr.rrule(np.polyval, np.array([[1.0, 2.0]]), 1.0)


POLYDER = [
    ((_r(4),), {}),
    ((_r(5), ND(2)), {}),
    ((_r(5),), {"m": 3}),
    ((_r(3), ND(0)), {}),
    ((_r(2), ND(3)), {}),  # differentiated past its degree: no coefficient kept
    ((_r(4, dtype=np.complex128),), {}),
    ((_r(4, dtype=np.float32), ND(1)), {}),
]


VANDER = [
    ((_r(4),), {}),
    ((_r(4), ND(3)), {}),
    ((_r(3), ND(5), ND(True)), {}),
    ((_r(3),), {"N": 1}),
    ((_r(3),), {"N": 0}),
    ((_r(4),), {"increasing": True}),
    ((np.array([0.0, 1.5, -2.0]),), {}),  # x = 0: the slope of x^k is k x^(k-1), no division
    ((_r(4, dtype=np.complex128), ND(3)), {}),
    ((_r(4, dtype=np.float32),), {"N": 3}),
]


ONE_ARRAY = [(np.polyder, *case) for case in POLYDER] + [(np.vander, *case) for case in VANDER]


@pytest.mark.parametrize("f, args, kwargs", ONE_ARRAY, ids=lambda v: getattr(v, "__name__", str(v)))
def test_rules_of_one_array_and_options(f, args, kwargs, batched_pullback):
    """np.polyder and np.vander: finite differences, one cotangent and a batch, one tangent and a batch."""
    crt.test_rrule(f, *args, fkwargs=kwargs)
    crt.test_frule(f, *args, fkwargs=kwargs)
    plain = tuple(getattr(a, "value", a) for a in args)
    batched_pullback(f, *plain, kwargs=kwargs)
    from _array_checks import Const, check_batched_frule

    check_batched_frule(f, plain[0], *(Const(a) for a in plain[1:]), fkwargs=kwargs)


def test_vander_second_derivatives():
    coefficients = np.array([1.0, -2.0, 0.5, 3.0])

    def polynomial(x):
        return np.sum(np.vander(x, 4) @ coefficients)

    x = np.array([0.3, 1.2, 0.0])
    np.testing.assert_allclose(cr.hessian(polynomial, x), np.diag(6 * x - 4), atol=1e-12)


def test_polyder_refuses_poly1d_coefficients():
    with pytest.raises(TypeError, match="numpy.polyder takes a 1-D array of coefficients"):
        cr.rrule(np.polyder, np.ones((2, 2)))


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_polynomial_s_derivative_is_differentiated_in_its_coefficients(engine):
    def slope_energy(p, x):
        return np.sum(np.polyval(np.polyder(p), x) ** 2)

    p, x = _r(4), _r(6)
    crt.check_grads(slope_energy, (p, x), engine=engine)


# ----- polyfit ----------------------------------------------------------------------------------

_PX = np.linspace(-1.0, 1.0, 7) + 0.05 * _r(7)  # distinct points: every fit below has full rank
_PW = np.abs(_r(7)) + 0.5
POLYFIT = [
    ((_PX, _r(7), ND(2)), {}),
    ((_PX, _r(7, 3), ND(3)), {}),  # one fit per column
    ((_PX, _r(7), ND(0)), {}),
    ((_PX, _r(7), ND(6)), {}),  # as many coefficients as points: interpolation
    ((_PX, _r(7), ND(2), ND(None), ND(False), _PW), {}),  # weights by position: differentiated
    ((_PX, _r(7, 2), ND(1), ND(None), ND(False), _PW), {}),
    ((_PX, _r(7), ND(2)), {"w": _PW}),  # by keyword: a constant
    ((_PX, _r(7), ND(2), ND(1e-10)), {}),
    ((list(_PX[:4]), [1.0, -0.5, 2.0, 0.25], ND(1)), {}),
    ((_PX.astype(np.float32), _r(7, dtype=np.float32), ND(2)), {}),
    ((_PX.astype(np.float32), _r(7), ND(1), ND(None), ND(False), _PW), {}),  # mixed: NumPy's in-place casts
    ((_PX.astype(np.float32), _r(7, 2, dtype=np.float32), ND(1), ND(None), ND(False), _PW.astype(np.float32)), {}),
    ((_PX + 0.3j * _r(7), _r(7, dtype=np.complex128), ND(2)), {}),
    ((_PX + 0.3j * _r(7), _r(7, 2, dtype=np.complex128), ND(2), ND(None), ND(False), _PW + 0.2j * _r(7)), {}),
]


def _polyfit_id(case):
    args, kwargs = case
    return "-".join(f"{np.shape(getattr(a, 'value', a))}{np.asarray(getattr(a, 'value', a)).dtype}" for a in args[:2])


@pytest.mark.parametrize("args, kwargs", POLYFIT, ids=[_polyfit_id(c) for c in POLYFIT])
def test_polyfit_rules(args, kwargs, batched_pullback):
    """Finite differences for x, y and w; a batch of cotangents and of tangents equals them row by row."""
    crt.test_rrule(np.polyfit, *args, fkwargs=kwargs)
    crt.test_frule(np.polyfit, *args, fkwargs=kwargs)
    plain = tuple(getattr(a, "value", a) for a in args)
    batched_pullback(np.polyfit, *plain, kwargs=kwargs, rtol=1e-5)
    from _array_checks import Const, check_batched_frule

    wrapped = [a if i in (0, 1, 5) else Const(a) for i, a in enumerate(plain)]
    check_batched_frule(np.polyfit, *wrapped, fkwargs=kwargs)


@pytest.mark.parametrize("args, kwargs", POLYFIT, ids=[_polyfit_id(c) for c in POLYFIT])
def test_polyfit_primal_is_numpy_s_to_the_bit(args, kwargs):
    plain = tuple(getattr(a, "value", a) for a in args)
    for rule in (cr.rrule(np.polyfit, *plain, **kwargs), cr.frule((cr.NoTangent(),) * 7, np.polyfit, *plain, **kwargs)):
        want = np.polyfit(*plain, **kwargs)
        assert rule[0].dtype == want.dtype and np.array_equal(rule[0], want)


def test_polyfit_gradient_in_y_is_a_row_of_the_pseudo_inverse():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    _, back = cr.rrule(np.polyfit, x, 2.0 * x + 1.0, 1)
    np.testing.assert_allclose(cr.unthunk(back(np.array([0.0, 1.0]))[2]), np.linalg.pinv(np.vander(x, 2))[1])


@pytest.mark.parametrize("option", [{"full": True}, {"cov": True}, {"cov": "unscaled"}])
def test_polyfit_refuses_full_and_cov(option):
    name = next(iter(option))
    for call in (
        lambda: cr.rrule(np.polyfit, _PX, _r(7), 2, **option),
        lambda: cr.frule(
            (cr.NoTangent(), np.ones(7), cr.ZeroTangent(), cr.NoTangent()), np.polyfit, _PX, _r(7), 2, **option
        ),
        lambda: cr.gradient(lambda x: np.sum(np.polyfit(x, x**2, 2, **option)[0]), _PX),
    ):
        with pytest.raises(cr.NoRuleError, match=f"numpy.polyfit.*{name}="):
            call()


def test_polyfit_refuses_a_rank_deficient_fit():
    # three distinct points, a quadratic asked of two of them: NumPy warns and returns a minimum-norm fit
    x, y = np.array([0.0, 0.0, 1.0]), np.array([1.0, 2.0, 0.5])
    with pytest.warns(np.exceptions.RankWarning):
        c, back = cr.rrule(np.polyfit, x, y, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.RankWarning)
        np.testing.assert_array_equal(c, np.polyfit(x, y, 2))
        with pytest.raises(np.linalg.LinAlgError, match="numpy.polyfit: the fit has rank 2 < deg \\+ 1 = 3"):
            back(np.ones(3))
        with pytest.raises(np.linalg.LinAlgError, match="full-rank fits only"):
            cr.frule((cr.NoTangent(), np.ones(3), cr.ZeroTangent(), cr.NoTangent()), np.polyfit, x, y, 2)
        with pytest.raises(np.linalg.LinAlgError, match="rank 2"):
            cr.gradient(lambda x: np.sum(np.polyfit(x, y, 2)), x)


def _polyfit_program(x, y, w):
    # the weights by keyword, differentiated: the engines pass them by position
    c = np.polyfit(x, np.stack([y, np.sin(y)], axis=1), 2, w=w)
    return np.sum(np.polyval(c[:, 0], x) ** 2) + np.sum(c[:, 1] ** 3)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_polyfit_gradients_through_the_engines(engine):
    crt.check_grads(_polyfit_program, (_PX, _r(7), _PW), engine=engine)


def test_polyfit_forward_jacobian():
    def coefficients(t):
        x, y, w = t[:7], t[7:14], t[14:]
        return np.polyfit(x, y, 3, w=w)

    t = np.concatenate([_PX, _r(7), _PW])
    want = np.stack([(coefficients(t + 1e-6 * e) - coefficients(t - 1e-6 * e)) / 2e-6 for e in np.eye(t.size)], -1)
    np.testing.assert_allclose(cr.jacobian(coefficients, t, mode="forward"), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(cr.jacobian(coefficients, t), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_polyfit_hessian(engine):
    # forward over reverse runs the rule, its pullback included, on dual numbers
    def energy(t):
        return _polyfit_program(t[:7], t[7:14], t[14:])

    t = np.concatenate([_PX, _r(7), _PW])
    np.testing.assert_allclose(
        np.asarray(cr.hessian(energy, t, engine=engine)), _fd_hessian(energy, t), rtol=1e-5, atol=1e-6
    )


def _fd_hessian(f, x):
    return crt.fd_jacobian(lambda v: cr.gradient(f, v)[0], x)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(np.polyval(x, x)),  # the coefficients' rule runs np.polyder on dual numbers
        lambda x: np.median(x) * np.sum(x**2),  # the order statistics sort dual numbers by value
        lambda x: np.quantile(x**2, 0.3) + np.percentile(x, 70.0) * x[0],
    ],
    ids=["polyval of its own coefficients", "median", "quantile and percentile"],
)
def test_hessians_through_polyval_and_order_statistics(f):
    x = np.array([0.3, -1.2, 0.8, 1.9, -0.4])
    np.testing.assert_allclose(np.asarray(cr.hessian(f, x)), _fd_hessian(f, x), rtol=1e-5, atol=1e-6)


# ----- roots and poly ---------------------------------------------------------------------------

ROOTS = [
    np.array([1.0, -3.0, 2.0]),  # real roots: a real output
    np.array([2.0, 0.5, -1.0, 3.0]),  # a complex pair and a real root
    np.array([1.0, 0.0, 1.0]),
    np.array([1.0, 2.0, 3.0, 0.0]),  # a trailing zero: the root 0, NumPy's appended
    _r(5, dtype=np.complex128),
    _r(5, dtype=np.float32),
    np.array([2.0, 1.0]),  # one root
    np.array([1.5]),  # none
    [1.0, -3.0, 2.0],
]
POLY = [
    np.array([1.0, 2.0]),
    np.array([0.5, -1.0, 2.0, 0.3]),
    np.array([1.0, 1.0, -2.0]),  # a repeated root: the coefficients are smooth there
    _r(3, dtype=np.complex128),
    np.array([0.5, 2.0], dtype=np.float32),
    [1.0, 3.0],
]


@pytest.mark.parametrize(
    "f, p",
    [(np.roots, p) for p in ROOTS] + [(np.poly, z) for z in POLY],
    ids=[f"roots-{i}" for i in range(len(ROOTS))] + [f"poly-{i}" for i in range(len(POLY))],
)
def test_roots_and_poly_rules(f, p, batched_pullback):
    """Finite differences (complex coefficients and roots included); a batch of cotangents and of
    tangents equals them row by row; the primal is NumPy's."""
    crt.test_rrule(f, p)
    crt.test_frule(f, p)
    y, want = cr.rrule(f, p)[0], f(p)
    assert np.result_type(y) == np.result_type(want) and np.array_equal(y, want)
    if isinstance(p, np.ndarray):
        batched_pullback(f, p, rtol=1e-10)
        check_batched_frule(f, p)


def test_roots_derivative_is_the_implicit_function_theorem_s():
    r, back = cr.rrule(np.roots, np.array([1.0, -3.0, 2.0]))  # (z - 2)(z - 1)
    np.testing.assert_allclose(cr.unthunk(back(np.array([1.0, 0.0]))[1]), [-4.0, -2.0, -1.0])  # -(4, 2, 1) / p'(2)


def test_roots_leading_zeros_move_the_roots_kept():
    # NumPy drops them; the roots it returns move with them as with any coefficient (a new root comes
    # from infinity, which NumPy's output has no place for)
    p = np.array([0.0, 1.0, -3.0, 2.0])
    r, back = cr.rrule(np.roots, p)
    got = cr.unthunk(back(np.array([1.0, 0.0]))[1])
    h = 1e-7
    moved = np.roots(p + h * np.eye(4)[0])
    root = moved[np.argmin(np.abs(moved - r[0]))]
    np.testing.assert_allclose(got[0], np.real(root - r[0]) / h, rtol=1e-5)
    np.testing.assert_allclose(got[1:], cr.unthunk(cr.rrule(np.roots, p[1:])[1](np.array([1.0, 0.0]))[1]))


@pytest.mark.parametrize(
    "p", [np.array([1.0, -2.0, 1.0]), np.array([1.0, 2.0, 0.0, 0.0]), np.poly([0.3, 0.3, 2.0]), np.poly([1.0] * 3)]
)
def test_roots_refuse_a_repeated_root(p):
    # a double root moves as the square root of a perturbation: no derivative (the computed roots of a
    # polynomial with one lie too close to tell apart, and their derivative would be the rounding's)
    for call in (
        lambda: cr.rrule(np.roots, p),
        lambda: cr.frule((cr.NoTangent(), np.ones_like(p)), np.roots, p),
        lambda: cr.gradient(lambda q: np.sum(np.abs(np.roots(q))), p),
    ):
        with pytest.raises(cr.NoDerivativeError, match=r"numpy.roots at .*test_products.py:\d+: .*repeated root"):
            call()


def test_roots_of_close_but_distinct_roots_are_differentiated():
    p = np.poly([1.0, 1.0 + 1e-4, 3.0])  # slopes of about 1e4: steps far below the roots' distance
    r, back = cr.rrule(np.roots, p)
    order = np.argsort(r)
    h = 1e-10
    fd = np.stack([np.sort(np.roots(p + h * e)) - np.sort(np.roots(p - h * e)) for e in np.eye(4)], -1) / (2 * h)
    for rank, k in enumerate(order):
        np.testing.assert_allclose(cr.unthunk(back(np.eye(3)[k])[1]), fd[rank], rtol=1e-4)


def test_poly_of_a_square_matrix_is_refused():
    a = np.array([[1.0, 2.0], [0.5, -1.0]])
    for call in (
        lambda: cr.rrule(np.poly, a),
        lambda: cr.frule((cr.NoTangent(), np.ones((2, 2))), np.poly, a),
        lambda: cr.gradient(lambda m: np.sum(np.poly(m)), a),
    ):
        with pytest.raises(cr.NoRuleError, match=r"numpy.poly.*test_products.py:\d+.*np.linalg.eigvals"):
            call()


def _roots_program(t):
    p = np.stack([1.0, t[0], t[1] * t[2], 2.0, t[3]])
    r = np.roots(p)  # two complex pairs
    c = np.poly(np.stack([t[0] + 1j * t[1], t[0] - 1j * t[1], t[2] + 0j]))  # a conjugate pair: real coefficients
    return np.sum(np.abs(r) ** 2 + np.real(r) ** 3) + np.sum(c**2) + np.sum(np.real(np.poly(r)) * t[0])


_T = np.array([0.3, -1.2, 0.8, 0.5])


def test_roots_and_poly_through_the_engines():
    from _array_checks import check_engines

    check_engines(_roots_program, _T)


@pytest.mark.parametrize(
    "f, args",
    [
        (np.linalg.matmul, (_r(2, 3), _r(3, 4))),
        (np.linalg.matmul, (_r(2, 2, 3, dtype=np.float32), _r(3, dtype=np.float32))),
        (np.linalg.matmul, (_r(2, 3, dtype=np.complex128), _r(3, 2, dtype=np.complex128))),
        (np.linalg.outer, (_r(3), _r(4))),
        (np.linalg.outer, (_r(2, dtype=np.complex128), _r(3, dtype=np.complex128))),
        (np.linalg.tensordot, (_r(2, 3, 4), _r(3, 4, 2))),
        (np.linalg.tensordot, (_r(2, 3, dtype=np.float32), _r(2, 3, dtype=np.float32))),
        (np.linalg.tensordot, (_r(3, 4, dtype=np.complex128), _r(3, 4, 2, dtype=np.complex128))),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_array_api_names_of_products(f, args):
    assert f is not np.matmul and f is not np.outer  # distinct callables, each needing a rule
    crt.test_rrule(f, *args)
    crt.test_frule(f, *args)
    check_batched_frule(f, *args)


def test_array_api_tensordot_takes_axes_by_keyword():
    assert np.linalg.tensordot is not np.tensordot
    a, b = _r(2, 3, 4), _r(4, 2, 5)
    for axes in (1, ([0, 2], [1, 0])):
        crt.test_rrule(np.linalg.tensordot, a, b, fkwargs={"axes": axes})
        crt.test_frule(np.linalg.tensordot, a, b, fkwargs={"axes": axes})
        check_batched_frule(np.linalg.tensordot, a, b, fkwargs={"axes": axes})


@pytest.mark.parametrize("args", [(_r(2, 3, 4),), (_r(3, 3, dtype=np.complex128),)], ids=str)
def test_array_api_trace(args):
    assert np.linalg.trace is not np.trace  # its own rules, in linalg.py
    crt.test_rrule(np.linalg.trace, *args, fkwargs={"offset": 1})
    crt.test_frule(np.linalg.trace, *args)


# ----- vecdot, matvec, vecmat -----------------------------------------------------------------

VECTOR_PRODUCTS = [
    (np.vecdot, (_r(4), _r(4)), {}),
    (np.vecdot, (_r(3, 4), _r(4)), {}),
    (np.vecdot, (_r(4), _r(2, 3, 4)), {}),
    (np.vecdot, (_r(2, 1, 4), _r(3, 4)), {}),
    (np.vecdot, (_r(4, 3), _r(4, 1)), {"axis": 0}),
    (np.vecdot, (_r(3, 4, dtype=np.float32), _r(3, 4, dtype=np.float32)), {}),
    (np.vecdot, (_r(3, 4, dtype=np.complex128), _r(4, dtype=np.complex128)), {}),
    (np.vecdot, (_r(4, dtype=np.complex64), _r(2, 4, dtype=np.complex64)), {}),
    (np.vecdot, (_r(3, 4), _r(3, 4, dtype=np.complex128)), {}),
    (np.linalg.vecdot, (_r(2, 4), _r(4)), {}),
    (np.linalg.vecdot, (_r(4, 2, dtype=np.complex128), _r(4, 2, dtype=np.complex128)), {"axis": -2}),
    (np.matvec, (_r(3, 4), _r(4)), {}),
    (np.matvec, (_r(2, 3, 4), _r(4)), {}),
    (np.matvec, (_r(3, 4), _r(2, 4)), {}),
    (np.matvec, (_r(2, 1, 3, 4), _r(5, 4)), {}),
    (np.matvec, (_r(3, 4, dtype=np.float32), _r(2, 4, dtype=np.float32)), {}),
    (np.matvec, (_r(2, 3, 4, dtype=np.complex128), _r(4, dtype=np.complex128)), {}),
    (np.matvec, (_r(3, 4), _r(4, dtype=np.complex128)), {}),
    (np.vecmat, (_r(4), _r(4, 3)), {}),
    (np.vecmat, (_r(2, 4), _r(4, 3)), {}),
    (np.vecmat, (_r(4), _r(2, 4, 3)), {}),
    (np.vecmat, (_r(5, 1, 4), _r(2, 4, 3)), {}),
    (np.vecmat, (_r(4, dtype=np.float32), _r(2, 4, 3, dtype=np.float32)), {}),
    (np.vecmat, (_r(2, 4, dtype=np.complex128), _r(4, 3, dtype=np.complex128)), {}),
    (np.vecmat, (_r(4, dtype=np.complex128), _r(4, 3)), {}),
]


@pytest.mark.parametrize("case", VECTOR_PRODUCTS, ids=_bilinear_id)
def test_vector_product_rrule(case):
    f, args, kwargs = case
    crt.test_rrule(f, *args, fkwargs=kwargs)


@pytest.mark.parametrize("case", VECTOR_PRODUCTS, ids=_bilinear_id)
def test_vector_product_frule(case):
    f, args, kwargs = case
    crt.test_frule(f, *args, fkwargs=kwargs)


@pytest.mark.parametrize("case", VECTOR_PRODUCTS, ids=_bilinear_id)
def test_vector_product_batched_frule(case):
    f, args, kwargs = case
    check_batched_frule(f, *args, fkwargs=kwargs)


@pytest.mark.parametrize("case", VECTOR_PRODUCTS, ids=_bilinear_id)
def test_vector_product_batched_pullback(case, batched_pullback):
    f, args, kwargs = case
    single = any(a.dtype in (np.float32, np.complex64) for a in args)
    batched_pullback(f, *args, kwargs=kwargs, rtol=2e-6 if single else 1e-12)


@pytest.mark.parametrize("case", VECTOR_PRODUCTS, ids=_bilinear_id)
def test_vector_product_rrule_on_values_implementing_numpy_protocols(case):
    f, args, kwargs = case
    check_rrule_on_wrapped(f, *args, fkwargs=kwargs)


def test_vecdot_conjugates_its_first_argument():
    # y = sum(conj(a) b) is antilinear in a: ā = conj(ȳ) b, b̄ = ȳ a (as np.vdot's rule)
    a, b, dy = _r(3, dtype=np.complex128), _r(3, dtype=np.complex128), 0.5 - 2j
    y, back = cr.rrule(np.vecdot, a, b)
    np.testing.assert_allclose(y, np.vdot(a, b))
    da, db = (cr.unthunk(t) for t in back(dy)[1:])
    np.testing.assert_allclose(da, np.conj(dy) * b)
    np.testing.assert_allclose(db, dy * a)
    _, dv = cr.frule((cr.NoTangent(), 1j * np.ones(3), cr.ZeroTangent()), np.vecdot, a, b)
    np.testing.assert_allclose(dv, np.sum(-1j * b))


def test_vector_products_refuse_axes_and_out():
    with pytest.raises(TypeError, match="axes"):
        cr.rrule(np.vecdot, _r(3, 2), _r(3, 2), axes=[(0,), (0,), ()])
    with pytest.raises(TypeError, match="out="):
        cr.rrule(np.matvec, _r(2, 2), _r(2), out=np.zeros(2))
    with pytest.raises(TypeError, match="keepdims"):
        cr.frule((cr.NoTangent(), _r(2), _r(2)), np.vecdot, _r(2), _r(2), keepdims=True)


# ----- multi_dot ----------------------------------------------------------------------------------

MULTI_DOT = [
    [_r(3, 4), _r(4, 5), _r(5, 2)],
    [_r(3, 4), _r(4, 2)],
    [_r(3), _r(3, 4), _r(4, 2)],
    [_r(3, 4), _r(4, 5), _r(5)],
    [_r(2), _r(2, 6), _r(6, 3), _r(3)],
    [_r(4), _r(4)],
    (_r(2, 3), _r(3, 3), _r(3, 2)),
    [_r(3, 4, dtype=np.float32), _r(4, 2, dtype=np.float32), _r(2, dtype=np.float32)],
    [_r(2, 3, dtype=np.complex128), _r(3, 4, dtype=np.complex128), _r(4, 2, dtype=np.complex128)],
    [_r(3, dtype=np.complex128), _r(3, 2), _r(2, 2, dtype=np.complex128)],
]


def _chain_id(arrays):
    return type(arrays).__name__ + "-" + "-".join(f"{a.dtype}{a.shape}" for a in arrays)


@pytest.mark.parametrize("arrays", MULTI_DOT, ids=_chain_id)
def test_multi_dot_rrule(arrays):
    crt.test_rrule(np.linalg.multi_dot, arrays)


@pytest.mark.parametrize("arrays", MULTI_DOT, ids=_chain_id)
def test_multi_dot_frule(arrays):
    crt.test_frule(np.linalg.multi_dot, arrays)


@pytest.mark.parametrize("arrays", MULTI_DOT, ids=_chain_id)
def test_multi_dot_batched_frule(arrays):
    check_batched_frule(np.linalg.multi_dot, arrays)


def test_multi_dot_of_a_stacked_array_and_with_a_constant_factor():
    stack = _r(3, 2, 2)
    crt.test_rrule(np.linalg.multi_dot, stack)
    crt.test_frule(np.linalg.multi_dot, stack)
    a, b = _r(2, 3), _r(3, 2)
    dy = _r(2, 2)
    _, back = cr.rrule(np.linalg.multi_dot, [a, np.arange(9).reshape(3, 3) > 4, b])
    _, cotangent = back(dy)
    assert isinstance(cotangent[1], cr.NoTangent)
    np.testing.assert_allclose(cotangent[0], dy @ ((np.arange(9).reshape(3, 3) > 4) @ b).T)


def test_multi_dot_refuses_out():
    with pytest.raises(TypeError, match="out="):
        cr.rrule(np.linalg.multi_dot, [_r(2, 2), _r(2, 2)], out=np.zeros((2, 2)))


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_einsum_tangent_in_the_dtype_given(engine):
    """``dtype=float64`` on float32 operands: the forward rule's tangent had stayed float32."""

    def f(a):
        return np.einsum("ij,jk->k", a, np.sin(a), dtype=np.float64)

    a = rand(2, 2, dtype=F32)
    y, dy = cr.jvp(f, (a,), (np.ones_like(a),))
    assert y.dtype == np.float64 and dy.dtype == np.float64
    want = crt.fd_jacobian(f, a)
    crt.assert_approx(cr.jacobian(f, a, mode="forward").reshape(want.shape), want, rtol=2e-3, atol=2e-3)
    crt.assert_approx(cr.jacobian(f, a, engine=engine).reshape(want.shape), want, rtol=2e-3, atol=2e-3)


# ----- convolve and correlate with a list or tuple operand -------------------------------------

_X3 = np.array([1.0, 2.0, 3.0])
_SEQUENCE_OPERANDS = [
    (np.convolve, lambda x: np.convolve(x, [1.0, 2.0])),
    (np.convolve, lambda x: np.convolve(x, (1.0, 2.0))),
    (np.convolve, lambda x: np.convolve([1.0, 2.0], x)),
    (np.convolve, lambda x: np.convolve(x, [1.0j, 2.0 - 1j], "same")),
    (np.convolve, lambda x: np.convolve((0.5, 1.0j, -2.0, 1.0), x, "valid")),
    (np.correlate, lambda x: np.correlate([1.0, 2.0], x, "full")),
    (np.correlate, lambda x: np.correlate(x, (1.0, 2.0), "full")),
    (np.correlate, lambda x: np.correlate([1.0j, 2.0, 0.5], x, "same")),
    (np.correlate, lambda x: np.correlate(x, [1.0j, 2.0 - 1j])),
]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("case", range(len(_SEQUENCE_OPERANDS)))
def test_convolve_jacobian_with_a_sequence_operand(case, mode):
    """A list or tuple operand had np.result_type read as a dtype spec in the batched pullback."""
    _, f = _SEQUENCE_OPERANDS[case]
    J = np.asarray(cr.jacobian(f, _X3, mode=mode))
    fd = crt.fd_jacobian(f, _X3)  # the output's (re, im) interleaved where it is complex
    if np.iscomplexobj(J):
        J = np.stack([J.real, J.imag], axis=1).reshape(-1, _X3.size)
    np.testing.assert_allclose(J, fd, atol=1e-9)


@pytest.mark.parametrize(
    "f, args, kwargs",
    [
        (np.convolve, (_X3, [1.0, 2.0]), {}),
        (np.convolve, ([1.0, 2.0], _X3), {}),
        (np.convolve, (_X3, (1.0, 2.0)), {"mode": "same"}),
        (np.convolve, (_X3 + 0.5j, [1.0j, 2.0]), {}),
        (np.correlate, ([1.0, 2.0], _X3), {"mode": "full"}),
        (np.correlate, ((1.0j, 2.0, 0.5, 1.0), _X3 - 1j), {}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_convolve_rules_with_a_sequence_operand(f, args, kwargs, batched_pullback):
    crt.test_rrule(f, *args, fkwargs=kwargs)
    crt.test_frule(f, *args, fkwargs=kwargs)
    batched_pullback(f, *args, kwargs=kwargs)


def test_convolve_gradient_with_a_sequence_operand():
    w = np.array([0.3, -1.0, 2.0, 0.5])

    def loss(x):
        return np.sum(np.abs(np.convolve([1.0j, 2.0], x)) * w)

    fd = crt.fd_jacobian(loss, _X3)[0]
    np.testing.assert_allclose(cr.gradient(loss, _X3)[0], fd, atol=1e-9)
    g = cr.gradient(lambda v: np.sum(np.convolve(_X3, v) * w), [1.0, 2.0])[0]  # the list differentiated
    np.testing.assert_allclose(list(g), [w[:3] @ _X3, w[1:] @ _X3])
