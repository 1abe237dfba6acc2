"""Rules for ``scipy.linalg``: finite differences, batched pushforwards, factor reuse, and the
matrix functions (expm against SciPy's own value and Fréchet derivative, logm, sqrtm)."""

import warnings

import numpy as np
import program_checks
import pytest
import scipy.linalg
import scipy.linalg as sl

import chainrules as cr
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.reverse import source
from chainrules.testing import fd_jacobian, fd_vjp, test_frule, test_rrule

# finite differences call SciPy's own logm, which warns about its accuracy estimate
pytestmark = pytest.mark.filterwarnings("ignore:logm result may be inaccurate:RuntimeWarning")

from ..numpy.test_linalg import (  # noqa: E402
    ALL,
    ISOTROPIC_PLUS_RANK_ONE,
    hermitian,
    orthogonal,
    projected,
    rng_for,
    spectral,
    symmetric_direction,
    values,
    wellcond,
)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"transposed": True},
        {"assume_a": "gen"},
        {"assume_a": "sym"},
        {"assume_a": "her", "lower": True},
        {"assume_a": "pos"},
        {"assume_a": "upper triangular"},
        {"assume_a": "lower triangular"},
        {"assume_a": "diagonal"},
        {"assume_a": "tridiagonal"},
        {"assume_a": "banded"},
    ],
    ids=str,
)
def test_solve(dtype, vector, options):
    rng = rng_for("sp-solve", dtype, vector, str(options))
    kind = options.get("assume_a")
    a = (
        hermitian(3, dtype, rng) + (np.eye(3) if kind != "pos" else 0)
        if kind in ("sym", "her", "pos")
        else wellcond(3, dtype=dtype, rng=rng)
    )
    if kind == "sym" and np.iscomplexobj(a):
        a = a + a.T  # complex symmetric, not Hermitian
    if kind in ("upper triangular", "lower triangular", "diagonal", "tridiagonal"):
        a = a + 3 * np.eye(3, dtype=dtype)
    if kind == "banded":
        a = np.triu(np.tril(a, 1), -1) + 3 * np.eye(3, dtype=dtype)
    b = rng.standard_normal((3,) if vector else (3, 2)).astype(dtype)
    if options.get("transposed") and np.iscomplexobj(a):
        with pytest.raises(NotImplementedError):  # as scipy.linalg.solve itself
            cr.rrule(sl.solve, a, b, **options)
        return
    test_rrule(sl.solve, a, b, fkwargs=options)
    test_frule(sl.solve, a, b, fkwargs=options)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize(
    "options", [{}, {"lower": True}, {"trans": 1}, {"trans": "C", "lower": True, "unit_diagonal": True}], ids=str
)
def test_solve_triangular(dtype, options):
    rng = rng_for("sp-trsm", dtype, str(options))
    a = wellcond(3, dtype=dtype, rng=rng) + 3 * np.eye(3, dtype=dtype)
    for b in (rng.standard_normal((3, 2)).astype(dtype), rng.standard_normal(3).astype(dtype)):
        test_rrule(sl.solve_triangular, a, b, fkwargs=options)
        test_frule(sl.solve_triangular, a, b, fkwargs=options)


@pytest.mark.parametrize("dtype", ALL)
def test_lu_factor_and_lu_solve(dtype):
    rng = rng_for("sp-lu", dtype)
    a = wellcond(3, dtype=dtype, rng=rng)
    test_rrule(sl.lu_factor, a)
    test_frule(sl.lu_factor, a)
    factors = sl.lu_factor(a)
    for trans in (0, 1, 2):
        for b in (rng.standard_normal((3, 2)).astype(dtype), rng.standard_normal(3).astype(dtype)):
            test_rrule(sl.lu_solve, factors, b, fkwargs={"trans": trans})
            test_frule(sl.lu_solve, factors, b, fkwargs={"trans": trans})


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("options", [{}, {"permute_l": True}, {"p_indices": True}], ids=str)
def test_lu(dtype, options):
    a = wellcond(4, dtype=dtype, rng=rng_for("sp-lu-plu", dtype, str(options)))
    test_rrule(sl.lu, a, fkwargs=options)
    test_frule(sl.lu, a, fkwargs=options)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_cho_factor_cho_solve(dtype, lower):
    rng = rng_for("sp-chol", dtype, lower)
    a = hermitian(3, dtype, rng)
    test_rrule(sl.cholesky, a, fkwargs={"lower": lower})
    test_frule(sl.cholesky, a, fkwargs={"lower": lower})
    test_rrule(sl.cho_factor, a, fkwargs={"lower": lower})
    test_frule(sl.cho_factor, a, fkwargs={"lower": lower})
    factor = sl.cho_factor(a, lower=lower)
    for b in (rng.standard_normal((3, 2)).astype(dtype), rng.standard_normal(3).astype(dtype)):
        test_rrule(sl.cho_solve, factor, b)
        test_frule(sl.cho_solve, factor, b)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("options", [{}, {"assume_a": "pos"}, {"assume_a": "upper triangular"}], ids=str)
def test_inv(dtype, options):
    rng = rng_for("sp-inv", dtype, str(options))
    a = hermitian(3, dtype, rng) if options else wellcond(3, dtype=dtype, rng=rng)
    test_rrule(sl.inv, a, fkwargs=options)
    test_frule(sl.inv, a, fkwargs=options)


@pytest.mark.parametrize("dtype", ALL)
def test_det(dtype):
    a = wellcond(3, dtype=dtype, rng=rng_for("sp-det", dtype))
    test_rrule(sl.det, a)
    test_frule(sl.det, a)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
@pytest.mark.parametrize(
    "options", [{}, {"mode": "economic"}, {"mode": "r"}, {"mode": "economic", "pivoting": True}], ids=str
)
def test_qr(dtype, shape, options):
    rng = rng_for("sp-qr", dtype, shape, str(options))
    a = wellcond(*shape, dtype=dtype, rng=rng)
    if options.get("mode", "full") == "full" and shape[0] > shape[1]:
        q, r = sl.qr(a)
        dq = rng.standard_normal(q.shape).astype(dtype)
        dq[:, shape[1] :] = 0  # the completion of Q is defined up to a rotation
        seed = (dq, rng.standard_normal(r.shape).astype(dtype))
        test_rrule(sl.qr, a, output_tangent=seed, fkwargs=options)
        return
    test_rrule(sl.qr, a, fkwargs=options)
    test_frule(sl.qr, a, fkwargs=options)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
@pytest.mark.parametrize("vector", [False, True])
def test_lstsq(dtype, shape, vector):
    rng = rng_for("sp-lstsq", dtype, shape, vector)
    a = wellcond(*shape, dtype=dtype, rng=rng)
    b = rng.standard_normal((shape[0],) if vector else (shape[0], 2)).astype(dtype)
    test_rrule(sl.lstsq, a, b)
    test_frule(sl.lstsq, a, b)


def test_lstsq_outputs_match_scipy():
    rng = rng_for("sp-lstsq-values")
    a, b = rng.standard_normal((6, 3)), rng.standard_normal(6)
    ours, theirs = cr.rrule(sl.lstsq, a, b)[0], sl.lstsq(a, b)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    assert np.ndim(ours[1]) == 0  # a scalar residual for a vector b, as SciPy returns it


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("vector", [False, True])
def test_lstsq_gelsy(dtype, vector):
    # gelsy computes no residues: SciPy returns an empty array (of the input's dtype) for them
    rng = rng_for("sp-lstsq-gelsy", dtype, vector)
    a = wellcond(5, 3, dtype=dtype, rng=rng)
    b = rng.standard_normal((5,) if vector else (5, 2)).astype(dtype)
    options = {"lapack_driver": "gelsy"}
    ours, theirs = cr.rrule(sl.lstsq, a, b, **options)[0], sl.lstsq(a, b, **options)
    assert ours[1].shape == theirs[1].shape == (0,) and ours[1].dtype == theirs[1].dtype
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5 if dtype in (np.float32, np.complex64) else 1e-12)
    assert ours[3] is None and theirs[3] is None
    test_rrule(sl.lstsq, a, b, fkwargs=options)
    test_frule(sl.lstsq, a, b, fkwargs=options)


def test_lstsq_gelsy_gradient():
    rng = rng_for("sp-lstsq-gelsy-gradient")
    a, b = rng.standard_normal((5, 3)), rng.standard_normal(5)

    def f(a):
        x, res, _, _ = sl.lstsq(a, b, lapack_driver="gelsy")
        return np.sum(x) + np.sum(res)  # the empty residues add nothing

    value, (grad,) = cr.value_and_gradient(f, a)
    np.testing.assert_allclose(value, f(a), rtol=1e-12)
    np.testing.assert_allclose(grad, np.reshape(fd_jacobian(f, a), a.shape), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, a, mode="forward"), grad, rtol=1e-10)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("return_rank", [False, True])
def test_pinv(dtype, return_rank):
    a = wellcond(4, 3, dtype=dtype, rng=rng_for("sp-pinv", dtype, return_rank))
    test_rrule(sl.pinv, a, fkwargs={"return_rank": return_rank})
    test_frule(sl.pinv, a, fkwargs={"return_rank": return_rank})


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize(
    "options", [{}, {"lower": False}, {"subset_by_index": (1, 3)}, {"subset_by_value": (1.5, 10.0)}], ids=str
)
def test_eigvalsh(dtype, options):
    a = hermitian(4, dtype, rng_for("sp-eigvalsh", dtype, str(options)))
    test_rrule(sl.eigvalsh, a, fkwargs=options)
    test_frule(sl.eigvalsh, a, fkwargs=options)
    test_rrule(sl.eigh, a, fkwargs={"eigvals_only": True, **options})


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("options", [{}, {"lower": False, "driver": "evd"}, {"subset_by_index": (1, 2)}], ids=str)
def test_eigh(dtype, options):
    rng = rng_for("sp-eigh", dtype, str(options))
    a = hermitian(4, dtype, rng)
    k = len(sl.eigh(a, **options)[0])
    g = projected(sl.eigh, {1: "columns"}, {1: rng.standard_normal(k)})
    test_rrule(g, a, fkwargs=options)
    test_frule(g, a, fkwargs=options)


def positive_definite(n, dtype=np.float64, rng=None):
    """A Hermitian positive definite ``b`` far from the identity (eigenvalues 0.5 to n)."""
    return hermitian(n, dtype, rng, spectrum=np.linspace(0.5, n, n))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"lower": False, "driver": "gvd", "overwrite_a": True, "overwrite_b": True},
        {"driver": "gv", "check_finite": False, "type": 1},
        {"driver": "gvx", "subset_by_index": (1, 2)},
        {"subset_by_value": (0.2, 5.0)},
    ],
    ids=str,
)
def test_generalized_eigh(dtype, options):
    check_generalized_eigh(dtype, options)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])  # (float32's finite differences are too coarse)
@pytest.mark.parametrize("options", [{"type": 2, "subset_by_index": (1, 2)}, {"type": 3, "lower": False}], ids=str)
def test_generalized_eigh_of_types_2_and_3(dtype, options):
    # type=2: a b V = V diag(w), V^H b V = I; type=3: b a V = V diag(w), V^H b^{-1} V = I
    check_generalized_eigh(dtype, options)


def check_generalized_eigh(dtype, options):
    # a V = b V diag(w), V^H b V = I, both read from one triangle (junk in the other)
    rng = rng_for("sp-eigh-generalized", dtype, str(options))
    junk = rng.standard_normal((2, 4, 4)).astype(dtype)
    unread = (lambda x: np.tril(x, -1)) if options.get("lower") is False else (lambda x: np.triu(x, 1))
    b = positive_definite(4, dtype, rng)
    low = np.linalg.cholesky(b)
    a = low @ hermitian(4, dtype, rng, spectrum=[-1.0, 0.5, 2.0, 3.5]) @ low.conj().T  # w = -1, 0.5, 2, 3.5
    a, b = (a + a.conj().T) / 2 + unread(junk[0]), b + unread(junk[1])
    k = len(sl.eigh(a, b, **options)[0])
    g = projected(sl.eigh, {1: "columns"}, {1: rng.standard_normal(k)})
    test_rrule(g, a, b, fkwargs=options)
    test_frule(g, a, b, fkwargs=options)
    for f, kwargs in ((sl.eigh, {"eigvals_only": True, **options}), (sl.eigvalsh, options)):
        test_rrule(f, a, b, fkwargs=kwargs)
        test_frule(f, a, b, fkwargs=kwargs)


def test_generalized_eigh_of_other_array_types_takes_the_numpy_path():
    # an ndarray subclass: a Cholesky reduction by NumPy functions, the same eigenvalues and tangents
    class Wrapped(np.ndarray):
        pass

    rng = rng_for("sp-eigh-generalized-wrapped")
    args, dirs = (hermitian(3, rng=rng), positive_definite(3, rng=rng)), rng.standard_normal((2, 3, 3))
    y, dy = cr.frule((cr.NoTangent(), *dirs), sl.eigh, *args, eigvals_only=True)
    wrapped = [x.view(Wrapped) for x in args]
    yw, dyw = cr.frule((cr.NoTangent(), *[d.view(Wrapped) for d in dirs]), sl.eigh, *wrapped, eigvals_only=True)
    np.testing.assert_allclose(np.asarray(yw), y, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(dyw), dy, rtol=1e-10)
    back, back_wrapped = cr.rrule(sl.eigvalsh, *args)[1], cr.rrule(sl.eigvalsh, *wrapped)[1]
    for got, want in zip(back_wrapped(np.arange(3.0))[1:], back(np.arange(3.0))[1:]):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_generalized_eigh_with_b_by_keyword():
    # a constant b by keyword has no cotangent; a differentiated one the engine passes by position
    rng = rng_for("sp-eigh-generalized-keyword")
    a, b, c = hermitian(3, rng=rng), positive_definite(3, rng=rng), rng.standard_normal(3)
    _, back = cr.rrule(sl.eigh, a, b=b, eigvals_only=True)
    assert len(back(c)) == 2
    np.testing.assert_allclose(back(c)[1], cr.rrule(sl.eigh, a, b, eigvals_only=True)[1](c)[1], rtol=1e-12)

    def f(a, b):
        return np.sum(sl.eigh(a, b=b, eigvals_only=True) * c)

    grads = cr.gradient(f, a, b)
    np.testing.assert_allclose(grads[0], fd_vjp(lambda x: f(x, b), 1.0, a), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grads[1], fd_vjp(lambda x: f(a, x), 1.0, b), rtol=1e-6, atol=1e-8)


def test_generalized_eigh_of_an_invalid_type_or_driver_raises_scipys_error():
    b = np.diag([1.0, 2.0])
    with pytest.raises(ValueError, match="type"):
        cr.rrule(sl.eigh, np.eye(2), b, type=4)
    with pytest.raises(ValueError, match="does not accept input b"):  # and for a standard problem's driver
        cr.rrule(sl.eigh, np.eye(2), b, driver="evd")


def inverse_by_eigh(a, b):  # b^{-1} = V V^T, whichever basis of an eigenspace V holds
    v = sl.eigh(a, b)[1]
    return v @ v.T


def test_generalized_eigh_at_repeated_eigenvalues():
    # the normalisation V^T b V = I fixes the symmetric part of the eigenvectors' derivative within
    # an eigenspace, which the rules keep: V V^T = b^{-1} is exact, warned about as for eigh(a)
    rng = rng_for("sp-eigh-generalized-repeated")
    b = positive_definite(3, rng=rng)
    low = np.linalg.cholesky(b)
    a = low @ ISOTROPIC_PLUS_RANK_ONE @ low.T
    np.testing.assert_allclose(sl.eigh(a, b, eigvals_only=True), [2.0, 2.0, 2.98], rtol=1e-12)
    dy, da, db = rng.standard_normal((3, 3)), symmetric_direction(rng), symmetric_direction(rng)
    inverse = np.linalg.inv(b)
    with pytest.warns(cr.NonSmoothWarning, match="scipy.linalg.eigh at .*test_linalg.py"):
        grads = cr.pullback(inverse_by_eigh, a, b)[1](dy)
    np.testing.assert_allclose(grads[0], 0.0, atol=1e-10)
    np.testing.assert_allclose(grads[1], fd_vjp(lambda x: inverse_by_eigh(a, x), dy, b), rtol=1e-6, atol=1e-8)
    with pytest.warns(cr.NonSmoothWarning, match="scipy.linalg.eigh at .*the direction rotates"):
        _, t = cr.jvp(inverse_by_eigh, (a, b), (da, db))
    np.testing.assert_allclose(t, -inverse @ db @ inverse, rtol=1e-10, atol=1e-12)  # (db symmetric)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cr.NonSmoothWarning)  # the eigenvalues alone never warn

        def f(a, b):
            return np.sum(np.sqrt(sl.eigh(a, b, eigvals_only=True)))

        grads = cr.gradient(f, a, b)
        np.testing.assert_allclose(grads[0], fd_vjp(lambda x: f(x, b), 1.0, a), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(grads[1], fd_vjp(lambda x: f(a, x), 1.0, b), rtol=1e-6, atol=1e-8)
        assert np.isclose(cr.jvp(f, (a, b), (da, db))[1], np.sum(grads[0] * da) + np.sum(grads[1] * db))


def spd(n, seed, shift=None):
    m = np.random.default_rng(seed).normal(size=(n, n))
    return m @ m.T + (n if shift is None else shift) * np.eye(n)


GENERALIZED, program = program_checks.new_corpus()


@program(
    spd(3, 3),
    spd(3, 4, shift=1.0),
    hessian=True,
    refuses={"tape": program_checks.SCIPY_WRAPPER, "forward": program_checks.SCIPY_WRAPPER_FORWARD},
)
def generalised_eigenproblem_vibration_modes(K, M):
    w, V = sl.eigh(K, M)
    freqs = np.sqrt(w)
    participation = (V.T @ M @ np.ones(3)) ** 2
    return np.sum(freqs) + 0.1 * np.sum(participation)


@pytest.mark.parametrize("engine", program_checks.REVERSE)
def test_generalized_eigh_in_a_program(engine):
    # the gradient in K and M and the Hessian in K against finite differences (the tape refuses the
    # SciPy function called inside a program, by design, and says so)
    p = GENERALIZED[0]
    program_checks.check_reverse(p, engine)
    program_checks.check_hessian(p, engine)


def test_generalized_eigh_in_a_program_forward_and_to_second_order():
    p = GENERALIZED[0]
    program_checks.check_forward_jacobian(p)  # (through the source engine's primal)
    program_checks.check_tape_over_source(p)
    K, M = p.args
    H = cr.hessian(lambda M: p.f(K, M), M)  # the duals reach b
    reference = fd_jacobian(lambda M: cr.gradient(lambda M: p.f(K, M), M)[0], M).reshape(H.shape)
    np.testing.assert_allclose(H, reference, rtol=1e-5, atol=1e-7)


def modes_of_each_type(x, kind):  # K and M from one vector: a v = w b v, a b v = w v or b a v = w v
    K, M = x[:9].reshape(3, 3), x[9:].reshape(3, 3)
    w, V = sl.eigh(K, M, type=kind)
    return np.concatenate([np.sqrt(w), (V.T @ M @ np.ones(3)) ** 2])


@pytest.mark.parametrize("kind", [2, 3])
def test_generalized_eigh_of_types_2_and_3_through_the_engines(kind):
    x = np.concatenate([spd(3, 3).ravel(), spd(3, 4, shift=1.0).ravel()])

    def f(x):
        return np.sum(modes_of_each_type(x, kind) * np.arange(1.0, 7.0))

    (grad,) = cr.gradient(f, x, engine="source")
    np.testing.assert_allclose(grad, fd_jacobian(f, x)[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), grad, rtol=1e-9, atol=1e-11)
    J = cr.jacobian(lambda x: modes_of_each_type(x, kind), x, mode="reverse")
    np.testing.assert_allclose(J, fd_jacobian(lambda x: modes_of_each_type(x, kind), x), rtol=1e-6, atol=1e-8)
    H = cr.hessian(f, x)
    np.testing.assert_allclose(H, fd_jacobian(lambda x: cr.gradient(f, x)[0], x), rtol=1e-5, atol=1e-7)
    with pytest.raises(IgnoredRuleError, match=r"eigh has a rule that the tape engine cannot use"):
        cr.gradient(f, x, engine="tape")


def modes_of_a_packed_pair(x):  # K and M from one vector, so a block of cotangents reaches both
    w, V = sl.eigh(x[:9].reshape(3, 3), x[9:].reshape(3, 3))
    return np.concatenate([w, np.sum(V * V, axis=1)])


def test_generalized_eigh_pulls_back_a_block():
    x = np.concatenate([spd(3, 3).ravel(), spd(3, 4, shift=1.0).ravel()])
    assert source.pullback_full(modes_of_a_packed_pair, x)[1].batched
    J = cr.jacobian(modes_of_a_packed_pair, x, mode="reverse")
    np.testing.assert_allclose(J, cr.jacobian(modes_of_a_packed_pair, x, mode="forward"), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(J, fd_jacobian(modes_of_a_packed_pair, x), rtol=1e-6, atol=1e-7)
    for engine in program_checks.REVERSE:  # the rule itself, on either engine
        _, back = cr.pullback(sl.eigvalsh, *x.reshape(2, 3, 3), engine=engine)
        for got, want in zip(
            back(np.arange(3.0)), fd_vjp(lambda km: sl.eigvalsh(*km), np.arange(3.0), x.reshape(2, 3, 3))
        ):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
@pytest.mark.parametrize("side", ["right", "left"])
def test_polar(dtype, shape, side):
    a = wellcond(*shape, dtype=dtype, rng=rng_for("polar", dtype, shape, side))
    u, p = cr.rrule(sl.polar, a, side=side)[0]
    np.testing.assert_array_equal(u, sl.polar(a, side=side)[0])  # the same SVD, the same products
    np.testing.assert_array_equal(p, sl.polar(a, side=side)[1])
    test_rrule(sl.polar, a, fkwargs={"side": side})
    test_frule(sl.polar, a, fkwargs={"side": side})


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("options", [{}, {"lower": False, "return_rank": True}], ids=str)
def test_pinvh_reads_one_triangle(dtype, options):
    rng = rng_for("pinvh", dtype, str(options))
    a = hermitian(3, dtype, rng, spectrum=[-2.0, 1.0, 3.0])
    junk = rng.standard_normal((3, 3)).astype(dtype)
    a = a + (np.tril(junk, -1) if options.get("lower") is False else np.triu(junk, 1))
    test_rrule(sl.pinvh, a, fkwargs=options)
    test_frule(sl.pinvh, a, fkwargs=options)
    _, back = cr.rrule(sl.pinvh, a, **options)
    da = back((np.ones((3, 3)), cr.NoTangent()) if options else np.ones((3, 3)))[1]
    assert not np.any(np.tril(da, -1) if options.get("lower") is False else np.triu(da, 1))


@pytest.mark.parametrize("dtype", ALL)
def test_eig_and_eigvals(dtype):
    rng = rng_for("sp-eig", dtype)
    a = wellcond(3, dtype=dtype, rng=rng) + np.diag([0.0, 1.0, 2.0]).astype(dtype)
    g = spectral(sl.eig, rng.standard_normal(3))
    test_rrule(g, a)
    test_frule(g, a)
    test_rrule(sl.eigvals, a)
    test_frule(sl.eigvals, a)


def test_left_eigenproblems_are_refused():
    # the rules' refusals (SciPy computes these), at the user's line
    with pytest.raises(cr.NoRuleError, match="right eigenvectors"):
        cr.rrule(sl.eig, np.eye(2), left=True)
    with pytest.raises(cr.NoRuleError, match=r"disp=False"):
        cr.rrule(sl.sqrtm, np.eye(2), disp=False)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_svd_and_svdvals(dtype, shape):
    rng = rng_for("sp-svd", dtype, shape)
    a = wellcond(*shape, dtype=dtype, rng=rng)
    k = min(shape)
    g = projected(sl.svd, {0: "columns", 2: "rows"}, {0: rng.standard_normal(k), 2: rng.standard_normal(k)})
    test_rrule(g, a, fkwargs={"full_matrices": False})
    test_frule(g, a, fkwargs={"full_matrices": False})
    test_rrule(sl.svd, a, fkwargs={"compute_uv": False})
    test_frule(sl.svd, a, fkwargs={"compute_uv": False})
    test_rrule(sl.svdvals, a)
    test_frule(sl.svdvals, a)


def polar_factor(m):
    u, _, vh = sl.svd(m)
    return u @ vh


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_svd_polar_factor_at_repeated_singular_values_is_exact(dtype):
    rng = rng_for("sp-polar factor", dtype)
    a = orthogonal(3, dtype, rng)  # every singular value 1
    dy, da = orthogonal(3, dtype, rng) + 0.5, orthogonal(3, dtype, rng) - 0.5
    with pytest.warns(cr.NonSmoothWarning, match="scipy.linalg.svd at .*the polar factor U @ Vh"):
        grad = cr.pullback(polar_factor, a)[1](dy)[0]
    np.testing.assert_allclose(grad, cr.pullback(lambda m: sl.polar(m)[0], a)[1](dy)[0], atol=1e-12)
    np.testing.assert_allclose(grad, fd_vjp(polar_factor, dy, a), atol=1e-8)
    with pytest.warns(cr.NonSmoothWarning):
        jac = cr.jacobian(polar_factor, a, mode="reverse")  # a batch of cotangents
    np.testing.assert_allclose(jac, cr.jacobian(lambda m: sl.polar(m)[0], a, mode="reverse"), atol=1e-12)
    with pytest.warns(cr.NonSmoothWarning, match="scipy.linalg.svd at .*the direction rotates"):
        _, t = cr.jvp(polar_factor, (a,), (da,))
    np.testing.assert_allclose(t, (polar_factor(a + 1e-6 * da) - polar_factor(a - 1e-6 * da)) / 2e-6, atol=1e-8)


def sqrt_by_eigh(c):
    w, v = sl.eigh(c)
    return (v * np.sqrt(w)) @ v.T


def test_eigenvectors_at_repeated_eigenvalues_warn_and_eigenvalues_alone_do_not():
    c = ISOTROPIC_PLUS_RANK_ONE
    rng = rng_for("sp-repeated")
    s, direction = symmetric_direction(rng), rng.standard_normal((3, 3))
    with pytest.warns(cr.NonSmoothWarning, match="scipy.linalg.eigh at .*test_linalg.py.*scipy.linalg.sqrtm"):
        cr.pullback(sqrt_by_eigh, c)[1](np.ones((3, 3)))
    with pytest.warns(cr.NonSmoothWarning, match="scipy.linalg.eigh at .*the direction rotates"):
        cr.jvp(sqrt_by_eigh, (c,), (s,))
    with pytest.warns(cr.NonSmoothWarning, match="scipy.linalg.eig at "):
        cr.jvp(lambda x: sl.eig(x)[1], (c,), (s,))
    w, v = np.linalg.eigh(c)
    exact = (v / (2 * np.sqrt(w))) @ v.T  # of sum(sqrt(w))
    with warnings.catch_warnings():
        warnings.simplefilter("error", cr.NonSmoothWarning)
        for f in (lambda x: sl.eigh(x, eigvals_only=True), sl.eigvalsh):
            grad = cr.pullback(lambda x: np.sum(np.sqrt(f(x))), c)[1](1.0)[0]
            np.testing.assert_allclose(grad, np.tril(exact + exact.T, -1) + np.diag(np.diag(exact)), atol=1e-12)
            assert np.isclose(cr.jvp(lambda x: np.sum(np.sqrt(f(x))), (c,), (s,))[1], np.sum(exact * s))
        t = cr.jvp(lambda x: np.sum(np.real(sl.eigvals(x))), (c,), (direction,))[1]
        assert np.isclose(t, np.trace(direction))
        a = orthogonal(3, np.float64, rng)
        t = cr.jvp(lambda m: np.sum(sl.svd(m, compute_uv=False)), (a,), (direction,))[1]
        assert np.isclose(t, np.trace(a.T @ direction))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("order", [None, "fro", "nuc", 2, 1, np.inf])
def test_norm(dtype, order):
    a = rng_for("sp-norm", dtype, order).standard_normal((3, 4)).astype(dtype)
    test_rrule(sl.norm, a, fkwargs={"ord": order})
    test_frule(sl.norm, a, fkwargs={"ord": order})


def test_stacks_are_refused_with_a_pointer_to_numpy():
    with pytest.raises(cr.NoRuleError, match="np.linalg.solve, which takes stacks"):
        cr.rrule(sl.solve, np.stack([np.eye(2)] * 2), np.ones(2))


# ----- matrix functions -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("scale", [0.002, 0.05, 0.2, 0.6, 1.0, 3.0, 20.0], ids=lambda s: f"scale{s}")
def test_expm(dtype, scale):
    # the scales reach every Padé degree (3, 5, 7, 9) and degree 13 with and without squaring
    rng = rng_for("expm", dtype, scale)
    a = (scale * rng.standard_normal((4, 4)) / 2).astype(dtype)
    if np.iscomplexobj(a):
        a = a + (1j * scale * rng.standard_normal((4, 4)) / 2).astype(dtype)
    y, back = cr.rrule(sl.expm, a)
    tol = 1e-5 if dtype is np.float32 else 1e-13  # normwise: the algorithms round differently
    assert np.max(np.abs(y - sl.expm(a))) <= tol * np.max(np.abs(y))
    if scale == 20.0 and dtype is np.float32:
        return  # exp of a large float32 matrix: finite differences lose every digit
    test_rrule(sl.expm, a)
    test_frule(sl.expm, a)


def test_expm_covers_every_pade_degree():
    from chainrules.rules.scipy.linalg import _ELL, _Expm

    a = rng_for("expm-degrees").standard_normal((5, 5))
    norm = np.abs(a).sum(axis=0).max()
    chosen = {(_Expm(a * 0.9 * _ELL[m] / norm).m, _Expm(a * 0.9 * _ELL[m] / norm).s) for m in (3, 5, 7, 9, 13)}
    assert chosen == {(3, 0), (5, 0), (7, 0), (9, 0), (13, 0)}
    assert _Expm(a * 10 * _ELL[13] / norm).s == 4  # 2^4 >= 10 > 2^3: four squarings


def test_expm_pullback_equals_scipys_frechet_derivative_of_the_adjoint():
    rng = rng_for("expm-frechet")
    for n, scale in ((6, 1.0), (30, 4.0)):
        a = scale * rng.standard_normal((n, n)) / np.sqrt(n)
        g = rng.standard_normal((n, n))
        _, back = cr.rrule(sl.expm, a)
        expected = sl.expm_frechet(a.T, g, compute_expm=False)
        np.testing.assert_allclose(back(g)[1], expected, rtol=1e-11, atol=1e-12 * np.abs(expected).max())
        _, dy = cr.frule((cr.NoTangent(), g), sl.expm, a)
        np.testing.assert_allclose(
            dy, sl.expm_frechet(a, g, compute_expm=False), rtol=1e-11, atol=1e-12 * np.abs(dy).max()
        )


def test_expm_batched_frule_equals_row_by_row():
    rng = rng_for("expm-batch")
    a = rng.standard_normal((4, 4))
    da = rng.standard_normal((3, 4, 4))
    _, dy = cr.frule((cr.NoTangent(), da), sl.expm, a)
    for i in range(3):
        np.testing.assert_allclose(dy[i], cr.frule((cr.NoTangent(), da[i]), sl.expm, a)[1], rtol=1e-12)


def _stack_of(make, shape):
    """A stack of the given shape ``(..., n, n)``, its matrices from ``make(k)``, k = 0, 1, ..."""
    return np.stack([make(k) for k in range(int(np.prod(shape[:-2])))]).reshape(shape)


def _each_matrix_as_alone(f, a, y):
    """``y``, the rule's ``f`` of the stack ``a``, is its ``f`` of each matrix alone."""
    for i in np.ndindex(a.shape[:-2]):
        np.testing.assert_allclose(y[i], cr.rrule(f, a[i])[0], rtol=1e-14, atol=1e-15 * np.abs(y[i]).max())


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(2, 3, 3), (2, 3, 2, 2)], ids=str)
def test_expm_of_a_stack(shape, dtype):
    # SciPy exponentiates every matrix of a stack, each with its own Padé degree and squarings
    rng = rng_for("expm-stack", dtype, shape)
    scales = (0.002, 3.0, 0.2, 20.0, 0.6, 1.0)

    def matrix(k):
        a = scales[k] * rng.standard_normal(shape[-2:]) / 2
        return a + 1j * scales[k] * rng.standard_normal(shape[-2:]) / 2 if dtype is np.complex128 else a

    a = _stack_of(matrix, shape).astype(dtype)
    y = cr.rrule(sl.expm, a)[0]
    assert y.shape == shape and y.dtype == sl.expm(a).dtype
    _each_matrix_as_alone(sl.expm, a, y)
    test_rrule(sl.expm, a)
    test_frule(sl.expm, a)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(2, 2, 2), (2, 3, 2, 2)], ids=str)
@pytest.mark.parametrize("f", [sl.sqrtm, sl.logm])
def test_sqrtm_and_logm_of_a_stack(f, shape, dtype):
    # SciPy takes stacks of matrices; 2 x 2: SciPy's logm, which the finite differences call, is slow
    rng = rng_for(f.__name__, "stack", dtype, shape)
    a = _stack_of(lambda k: wellcond(2, dtype=dtype, rng=rng) + 2 * np.eye(2, dtype=dtype), shape)
    y = cr.rrule(f, a)[0]
    assert y.shape == shape and y.dtype == f(a).dtype
    np.testing.assert_allclose(y, f(a), rtol=1e-10, atol=1e-12)
    _each_matrix_as_alone(f, a, y)
    test_rrule(f, a)
    test_frule(f, a)


@pytest.mark.parametrize("f", [sl.sqrtm, sl.logm])
def test_sqrtm_and_logm_of_a_stack_of_real_and_complex_results(f):
    # a matrix with a negative eigenvalue beside one without: the stack is complex, as SciPy's
    rng = rng_for(f.__name__, "stack-negative")
    q = np.linalg.qr(rng.standard_normal((2, 2)))[0]
    a = np.stack([(q * [-1.5, 2.0]) @ q.T + 0.1 * rng.standard_normal((2, 2)), wellcond(2, rng=rng) + 2 * np.eye(2)])
    y = cr.rrule(f, a)[0]
    assert np.iscomplexobj(y) and not np.iscomplexobj(cr.rrule(f, a[1])[0])
    np.testing.assert_allclose(y, f(a), rtol=1e-9, atol=1e-12)
    test_rrule(f, a)
    test_frule(f, a)


A0 = np.stack([np.array([[0.1, 0.4], [-0.3, 0.05]]), np.array([[-0.2, 0.1], [0.3, -0.4]])])


def batched_matrix_exponentials(A):
    P = scipy.linalg.expm(A)
    x0 = np.array([1.0, -0.5])
    return np.sum((P @ x0) ** 2) + np.sum(np.trace(P, axis1=1, axis2=2))


def test_a_stack_of_matrix_exponentials_through_the_engines():
    expected = np.reshape(fd_jacobian(batched_matrix_exponentials, A0), A0.shape)
    (grad,) = cr.gradient(batched_matrix_exponentials, A0, engine="source")
    np.testing.assert_allclose(grad, expected, rtol=1e-7, atol=1e-9)
    forward = cr.jacobian(batched_matrix_exponentials, A0, mode="forward")
    np.testing.assert_allclose(forward, grad, rtol=1e-12, atol=1e-14)
    hessian = np.reshape(cr.hessian(batched_matrix_exponentials, A0), (8, 8))
    np.testing.assert_allclose(hessian, hessian.T, atol=1e-12)
    np.testing.assert_allclose(hessian, _fd_hessian(batched_matrix_exponentials, A0), rtol=1e-6, atol=1e-8)
    # the tape sees operations, not calls: it refuses SciPy's expm inside a function, a stack as one matrix
    for a in (A0, A0[0]):
        with pytest.raises(IgnoredRuleError, match=r"expm has a rule that the tape engine cannot use"):
            cr.gradient(lambda x: np.sum(scipy.linalg.expm(x)), a, engine="tape")


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("f", [sl.sqrtm, sl.logm])
def test_sqrtm_and_logm(f, dtype):
    rng = rng_for(f.__name__, dtype)
    # 2 x 2: SciPy's logm, which the finite differences call, is slow
    a = wellcond(2, dtype=dtype, rng=rng) + 2 * np.eye(2, dtype=dtype)
    y = cr.rrule(f, a)[0]
    if f is sl.logm and dtype is np.float32:
        # SciPy's logm of a real float32 matrix is complex128 with float32 round-off in its imaginary
        # part; the rule computes in double precision, as SciPy does for float64, and returns it real
        assert y.dtype == np.float64
        np.testing.assert_allclose(y, np.real(f(a)), rtol=1e-6)
        np.testing.assert_allclose(
            cr.rrule(f, a)[1](np.ones((2, 2)))[1],
            cr.rrule(f, a.astype(float))[1](np.ones((2, 2)))[1].astype(np.float32),
        )
        return
    assert y.dtype == f(a).dtype
    np.testing.assert_allclose(y, f(a), rtol=1e-5 if dtype is np.float32 else 1e-10, atol=1e-12)
    test_rrule(f, a)
    test_frule(f, a)


@pytest.mark.parametrize("f", [sl.sqrtm, sl.logm])
def test_sqrtm_and_logm_of_real_matrices_with_complex_results(f):
    # a negative eigenvalue: the principal function is complex, and the input's cotangent real
    rng = rng_for(f.__name__, "negative")
    q = np.linalg.qr(rng.standard_normal((2, 2)))[0]
    a = (q * [-1.5, 2.0]) @ q.T + 0.1 * rng.standard_normal((2, 2))
    y = cr.rrule(f, a)[0]
    assert np.iscomplexobj(y)
    np.testing.assert_allclose(y, f(a), rtol=1e-9, atol=1e-12)
    test_rrule(f, a)
    test_frule(f, a)


def test_sqrtm_and_logm_larger_matrices_match_scipy():
    rng = rng_for("matfun-large")
    a = rng.standard_normal((40, 40)) / 6 + np.eye(40)
    for f in (sl.sqrtm, sl.logm):
        y, back = cr.rrule(f, a)
        np.testing.assert_allclose(y, f(a), rtol=1e-10, atol=1e-12)
        g = rng.standard_normal((40, 40))
        e = rng.standard_normal((40, 40))
        fd = (np.sum(g * f(a + 1e-6 * e)) - np.sum(g * f(a - 1e-6 * e))) / 2e-6
        assert np.isclose(np.sum(back(g)[1] * e), fd, rtol=1e-6)


def test_logm_of_a_singular_matrix_raises():
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        cr.rrule(sl.logm, np.array([[1.0, 1.0], [1.0, 1.0]]))


# ----- batched pushforwards -------------------------------------------------------------------

BATCHED = [
    (sl.solve, lambda r: (wellcond(3, rng=r), r.standard_normal((3, 2))), {}),
    (sl.solve, lambda r: (hermitian(3, rng=r), r.standard_normal(3)), {"assume_a": "pos"}),
    (sl.solve_triangular, lambda r: (wellcond(3, rng=r) + 3 * np.eye(3), r.standard_normal((3, 2))), {"trans": 1}),
    (sl.inv, lambda r: (wellcond(3, rng=r),), {}),
    (sl.det, lambda r: (wellcond(3, rng=r),), {}),
    (sl.cholesky, lambda r: (hermitian(3, rng=r),), {}),
    (sl.cho_factor, lambda r: (hermitian(3, rng=r),), {"lower": True}),
    (sl.lu_factor, lambda r: (wellcond(3, rng=r),), {}),
    (sl.lu, lambda r: (wellcond(3, rng=r),), {}),
    (sl.eigh, lambda r: (hermitian(3, rng=r),), {}),
    (sl.eigvalsh, lambda r: (hermitian(3, rng=r),), {}),
    (sl.eigh, lambda r: (hermitian(3, rng=r), positive_definite(3, rng=r)), {}),
    (sl.eigh, lambda r: (hermitian(3, rng=r), positive_definite(3, rng=r)), {"eigvals_only": True}),
    (sl.eigh, lambda r: (hermitian(3, rng=r), positive_definite(3, rng=r)), {"type": 3}),
    (sl.svdvals, lambda r: (wellcond(3, 4, rng=r),), {}),
    (sl.norm, lambda r: (r.standard_normal((3, 4)),), {"ord": 2}),
    (sl.expm, lambda r: (r.standard_normal((3, 3)),), {}),
]


@pytest.mark.parametrize("f, make, kwargs", BATCHED, ids=lambda v: getattr(v, "__name__", ""))
def test_batched_frule_equals_row_by_row(f, make, kwargs):
    rng = rng_for("sp-batched", f.__name__, str(kwargs))
    args = make(rng)
    assert cr.frule.lookup(f, args).batched
    dirs = [rng.standard_normal((4,) + a.shape) for a in args]
    y, dy = cr.frule((cr.NoTangent(), *dirs), f, *args, **kwargs)
    for i in range(4):
        y1, dy1 = cr.frule((cr.NoTangent(), *[d[i] for d in dirs]), f, *args, **kwargs)
        for got, want in zip(values(dy, y1 if isinstance(y1, tuple) else y), values(dy1, y1)):
            got = got[i] if got.ndim == want.ndim + 1 else got
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ----- shared work ----------------------------------------------------------------------------


def test_solve_reuses_its_factorization(monkeypatch):
    import chainrules.rules.scipy._lapack as lapack_module

    calls = []
    original = lapack_module.LU.__init__
    monkeypatch.setattr(lapack_module.LU, "__init__", lambda self, a: calls.append(1) or original(self, a))
    monkeypatch.setattr(sl, "lu_factor", None)  # nothing refactorizes through SciPy's wrappers either
    _, back = cr.rrule(sl.solve, wellcond(4), np.ones((4, 2)))
    back(np.ones((4, 2)))
    back(np.arange(8.0).reshape(4, 2))
    assert len(calls) == 1


def test_expm_pullback_reuses_the_primal(monkeypatch):
    import chainrules.rules.scipy.linalg as rules

    a = rng_for("expm-reuse").standard_normal((5, 5))
    _, back = cr.rrule(sl.expm, a)
    calls = []
    original = rules.LU.__init__
    monkeypatch.setattr(rules.LU, "__init__", lambda self, x: calls.append(1) or original(self, x))
    back(np.ones((5, 5)))
    assert calls == []  # the pullback solves with the primal's LU factors of q(A)


def test_numpy_inputs_of_other_types_take_the_numpy_path():
    class Wrapped(np.ndarray):
        pass

    rng = rng_for("sp-wrapped")
    a, b = wellcond(3, rng=rng), rng.standard_normal((3, 2))
    da, db = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
    for f, args, dirs in ((sl.solve, (a, b), (da, db)), (sl.expm, (a,), (da,)), (sl.inv, (a,), (da,))):
        y, dy = cr.frule((cr.NoTangent(), *dirs), f, *args)
        yw, dyw = cr.frule((cr.NoTangent(), *[d.view(Wrapped) for d in dirs]), f, *[x.view(Wrapped) for x in args])
        np.testing.assert_allclose(np.asarray(yw), y, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(dyw), dy, rtol=1e-10)
    with pytest.raises(TypeError, match="needs a NumPy array"):
        cr.rrule(sl.lu_factor, a.view(Wrapped))


_A = np.array([[1.0, 0.3, -0.2], [0.1, 0.8, 0.4], [-0.3, 0.2, 1.2]])
_B = np.array([1.0, -2.0, 0.5])


def _through_scipy(x):
    m = _A + np.outer(x, x)
    s = m @ m.T + np.eye(3)
    return (
        np.sum(sl.expm(m))
        + np.sum(sl.solve(m, _B))
        + np.sum(sl.solve(s, _B, assume_a="pos"))
        + sl.det(m)
        + np.sum(sl.eigvalsh(s) * np.arange(3.0))
        + sl.norm(m, 2)
        + np.sum(sl.inv(m))
    )


def test_hessian_through_the_rules():
    # forward over reverse: the pullbacks run on dual numbers (NumPy functions, no LAPACK)
    x = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(cr.hessian(_through_scipy, x), _fd_hessian(_through_scipy, x), rtol=1e-5, atol=1e-7)


def _fd_hessian(f, x, eps=1e-5):
    """Central differences of the gradient, one row per entry of ``x``."""
    steps = eps * np.eye(x.size).reshape((x.size, *x.shape))
    rows = [(cr.gradient(f, x + e)[0] - cr.gradient(f, x - e)[0]) / (2 * eps) for e in steps]
    return np.reshape(rows, (x.size, x.size))


_W = np.arange(9.0).reshape(3, 3) / 7 - 0.4


def _m(x):
    return _A + np.outer(x, x)


def _s(x):
    return _m(x) @ _m(x).T + np.eye(3)


def _real_and_imag(z):
    return np.real(z) + np.imag(z)


# Functions whose rules return LAPACK's factors or call LAPACK in their pullbacks: on dual numbers
# they push the duals through the functions' forward rules (matrix functions: of a block matrix)
FACTOR_HESSIANS = {
    "pinv": lambda x: np.sum(_W * sl.pinv(_m(x))) + np.sum(_W[:, :2] * sl.pinv(_m(x)[:, :2], return_rank=True)[0].T),
    "pinvh": lambda x: np.sum(_W * sl.pinvh(_s(x))),
    "lstsq": lambda x: np.sum(sl.lstsq(_m(x), _B)[0] * _B) + sl.lstsq(_m(x)[:, :2], _B)[1],
    "sqrtm": lambda x: np.sum(_W * sl.sqrtm(_s(x))),
    "sqrtm-complex": lambda x: np.sum(_W * np.imag(sl.sqrtm(_m(x) - 1.2 * np.eye(3)))),
    "logm": lambda x: np.sum(_W * sl.logm(_s(x))),
    "sqrtm-stack": lambda x: np.sum(_W * _real_and_imag(sl.sqrtm(np.stack([_s(x), _m(x) - 1.2 * np.eye(3)])))),
    "logm-stack": lambda x: np.sum(_W * _real_and_imag(sl.logm(np.stack([_s(x), _m(x) - 1.2 * np.eye(3)])[None]))),
    "qr": lambda x: np.sum(_W * sl.qr(_m(x))[1]) + np.sum(_W * sl.qr(_m(x), pivoting=True)[0]),
    "lu": lambda x: np.sum(_W * sl.lu(_m(x))[2]) + np.sum(_W * sl.lu(_m(x), permute_l=True)[0]),
    "lu_factor-lu_solve": lambda x: np.sum(_W * sl.lu_factor(_m(x))[0]) + np.sum(sl.lu_solve(sl.lu_factor(_m(x)), x)),
    "cho_factor-cho_solve": lambda x: (
        np.sum(_W * sl.cho_factor(_s(x))[0]) + np.sum(sl.cho_solve(sl.cho_factor(_s(x)), x))
    ),
    "polar": lambda x: np.sum(_W * sl.polar(_m(x))[0]) + np.sum(_W[:2, :2] * sl.polar(_m(x)[:, :2], "left")[0][:2]),
    "eigh-generalized": lambda x: (
        np.sum(_W * ((sl.eigh(_s(x), _s(x / 2))[1] * [1.0, 2.0, 3.0]) @ sl.eigh(_s(x), _s(x / 2))[1].T))
        + np.sum(sl.eigvalsh(_s(x), _s(x / 2)) * np.arange(3.0))
    ),
}


@pytest.mark.parametrize("name", FACTOR_HESSIANS)
def test_hessian_through_factorizations_and_matrix_functions(name):
    f = FACTOR_HESSIANS[name]
    x = np.array([0.3, -0.2, 0.5])
    if name == "sqrtm-complex":
        assert np.iscomplexobj(sl.sqrtm(_m(x) - 1.2 * np.eye(3)))
    hess = cr.hessian(f, x)
    np.testing.assert_allclose(hess, _fd_hessian(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hess, hess.T, atol=1e-12)


@pytest.mark.parametrize(
    "f, advice",
    [(sl.pinvh, "apply it to each matrix and stack"), (sl.inv, "np.linalg.inv, which takes stacks, has a rule too")],
)
def test_a_stack_of_matrices_is_refused_with_what_to_use(f, advice):
    A = np.eye(3) + 0.1 * np.random.default_rng(2).standard_normal((2, 3, 3))
    with pytest.raises(cr.NoRuleError, match=r"at .*test_linalg\.py:\d+ \(the rule takes a single matrix") as info:
        cr.gradient(lambda a: np.sum(f(a)), A)
    assert advice in str(info.value)
    with pytest.raises(ValueError, match="expected a matrix"):  # as SciPy, on a vector
        cr.gradient(lambda a: np.sum(f(a)), A[0, 0])


def test_eig_tangents_have_scipys_output_types():
    """found by fuzzing: SciPy's eigenvalues are complex always, its eigenvectors real when all are."""
    a = np.array([[3.0, 1.0], [0.5, -1.0]])
    (w, v), (dw, dv) = cr.frule((cr.NoTangent(), np.ones((2, 2))), sl.eig, a)
    assert dw.dtype == w.dtype == np.complex128 and dv.dtype == v.dtype == np.float64
    assert cr.frule((cr.NoTangent(), np.ones((2, 2))), sl.eigvals, a)[1].dtype == np.complex128
    test_frule(sl.eig, a)
    test_frule(sl.eigvals, a)


def test_norm_of_a_list_in_every_engine():
    """A list holding the values being differentiated reads as an array in forward mode too."""

    def f(x):
        return sl.norm([x[0], 2.0, x[1] ** 2])

    x = np.array([0.3, 1.7])
    expected = fd_jacobian(f, x)[0]
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-6)
    with pytest.raises(IgnoredRuleError, match=r"norm has a rule that the tape engine cannot use here"):
        cr.gradient(f, x, engine="tape")
    test_frule(sl.norm, [0.3, 2.0, -1.2])
