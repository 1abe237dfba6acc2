"""Keywords of the products' rules: ``out=None`` (NumPy's default, a new array) is no mutation and
is accepted everywhere; ``np.matmul`` honours ``dtype=``, ``casting=``, ``order=`` and ``subok=``,
and refuses ``axes=``/``axis=`` saying what to write instead."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.core import NoRuleError

rng = np.random.default_rng(7)
A, B = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
V = rng.standard_normal(3)

WITH_OUT_NONE = [
    (np.dot, (A, B)),
    (np.ndarray.dot, (A, B)),
    (np.matmul, (A, B)),
    (np.outer, (V, V)),
    (np.vecdot, (A, A)),
    (np.matvec, (A, V)),
    (np.vecmat, (V, B)),
]


@pytest.mark.parametrize("f, args", WITH_OUT_NONE, ids=lambda v: getattr(v, "__qualname__", ""))
def test_rules_accept_out_none(f, args):
    crt.test_rrule(f, *args, fkwargs={"out": None})
    crt.test_frule(f, *args, fkwargs={"out": None})


def test_einsum_and_multi_dot_accept_out_none():
    crt.test_rrule(np.einsum, crt.nondiff("ij,jk->ik"), A, B, fkwargs={"out": None})
    crt.test_frule(np.einsum, crt.nondiff("ij,jk->ik"), A, B, fkwargs={"out": None})
    crt.test_rrule(np.linalg.multi_dot, [A, B, A], fkwargs={"out": None})
    crt.test_frule(np.linalg.multi_dot, [A, B, A], fkwargs={"out": None})


SQUARE = np.array([[1.0, 2.0], [3.0, 4.0]])
PRODUCTS_OF_ITSELF = {
    "dot": lambda x: np.sum(np.dot(x, x, out=None)),
    "ndarray.dot": lambda x: np.sum(x.dot(x, out=None)),
    "einsum": lambda x: np.sum(np.einsum("ij,jk", x, x, out=None)),
    "matmul": lambda x: np.sum(np.matmul(x, x, out=None)),
    "matmul, out a tuple of None": lambda x: np.sum(np.matmul(x, x, out=(None,))),
    "matmul in float64": lambda x: np.sum(np.matmul(x, x, dtype=np.float64, casting="same_kind")),
    "matmul in Fortran order": lambda x: np.sum(np.ravel(np.matmul(x, x, order="F"), order="K") * np.arange(4.0)),
}


@pytest.mark.parametrize("engine", ["source", "tape", "forward"])
@pytest.mark.parametrize("name", PRODUCTS_OF_ITSELF)
def test_gradients_of_products_called_with_keywords(name, engine):
    f = PRODUCTS_OF_ITSELF[name]
    expected = crt.fd_jacobian(f, SQUARE).reshape(SQUARE.shape)
    if engine == "forward":
        got = cr.jacobian(f, SQUARE, mode="forward")
    else:
        (got,) = cr.gradient(f, SQUARE, engine=engine)
    np.testing.assert_allclose(got, expected, rtol=1e-8)


@pytest.mark.parametrize(
    "kwargs",
    [{"dtype": np.float32}, {"dtype": np.complex128}, {"casting": "same_kind"}, {"order": "F", "subok": False}],
    ids=str,
)
def test_matmul_rules_honour_dtype_and_passive_keywords(kwargs):
    tolerance = {"rtol": 1e-4, "atol": 1e-4} if kwargs.get("dtype") is np.float32 else {}
    crt.test_rrule(np.matmul, A, B, fkwargs=kwargs, **tolerance)
    crt.test_frule(np.matmul, A, B, fkwargs=kwargs, **tolerance)
    y, back = cr.rrule(np.matmul, A, B, **kwargs)
    assert y.dtype == np.matmul(A, B, **kwargs).dtype
    assert y.flags.f_contiguous == (kwargs.get("order") == "F")
    _, da, db = back(np.ones_like(y))
    assert cr.unthunk(da).dtype == A.dtype and cr.unthunk(db).dtype == B.dtype


def test_matmul_in_float32_keeps_the_dtype_through_the_engines():
    def f(x):
        return np.sum(np.matmul(x, x, dtype=np.float32) ** 2)

    y, dy = cr.jvp(f, (SQUARE,), (np.ones_like(SQUARE),))
    assert y.dtype == np.float32 and dy.dtype == np.float32
    np.testing.assert_allclose(cr.gradient(f, SQUARE)[0], crt.fd_jacobian(f, SQUARE).reshape(2, 2), rtol=1e-4)


@pytest.mark.parametrize("engine", ["source", "tape", "forward"])
@pytest.mark.parametrize(
    "kwargs", [{"axes": [(-2, -1), (-2, -1), (-2, -1)]}, {"axis": -1}], ids=lambda kw: next(iter(kw))
)
def test_matmul_refuses_axes_naming_itself_and_the_way_round(kwargs, engine):
    def f(x):
        return np.sum(np.matmul(x, x, **kwargs))

    with pytest.raises(NoRuleError, match=r"numpy\.matmul.*np\.moveaxis"):
        if engine == "forward":
            cr.jacobian(f, SQUARE, mode="forward")
        else:
            cr.gradient(f, SQUARE, engine=engine)


@pytest.mark.parametrize("f", [np.dot, np.matmul, np.outer])
def test_writing_into_an_array_given_as_out_is_still_refused(f):
    with pytest.raises(TypeError, match="out="):
        cr.rrule(f, V, V, out=np.empty(np.shape(f(V, V))))
