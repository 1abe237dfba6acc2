"""Layout-dependent shape rules (rules/numpy/shapes.py) on an engine's arrays: in a Hessian the
reverse rules run on dual arrays, laid out as the arrays they stand for, so that ``order="K"``
and ``order="A"`` follow the dual's real layout, and the conversions (``np.asfortranarray``,
``np.array(x, order=...)``, ``x.astype(dtype, order=...)``) give the dual NumPy's layout and shape."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

X = np.arange(1.0, 7.0).reshape(2, 3)
WEIGHTS = np.arange(1.0, 7.0)


def _fd_hessian(f, x):
    return crt.fd_jacobian(lambda v: cr.gradient(f, v)[0], x).reshape(np.shape(x) * 2)


def _weighted_energy(layout):
    """A loss whose Hessian tells the entries of ``layout(x)`` apart: each has its own weight."""

    def energy(x):
        y = layout(x)
        return np.sum(y**2 * WEIGHTS[: np.size(y)])

    return energy


def test_ravel_in_memory_order_of_a_transposed_dual_has_the_true_hessian():
    H = cr.hessian(_weighted_energy(lambda x: np.ravel(x.T, order="K")), X).reshape(6, 6)
    # x.T is laid out in Fortran order: its 'K' ravel is x's C order, entry i weighted by WEIGHTS[i]
    np.testing.assert_allclose(H, np.diag(2 * WEIGHTS))


LAYOUT_DEPENDENT = {
    "ravel K": lambda x: np.ravel(x.T, order="K"),
    "ravel A": lambda x: np.ravel(x.T, order="A"),
    "reshape A": lambda x: np.reshape(x.T, (6,), order="A"),
    "ndarray.reshape A": lambda x: x.T.reshape(6, order="A"),
    "flatten K": lambda x: x.T.flatten("K"),
    "flatten A": lambda x: x.T.flatten("A"),
    "ndarray.ravel K": lambda x: x.T.ravel("K"),
    "ravel K of a copy in memory order": lambda x: np.ravel(x.T.copy(order="K"), order="K"),
    "ravel K of a copy in C order": lambda x: np.ravel(x.T.copy(), order="K"),  # (the method's default order)
    "ravel K of a strided view": lambda x: np.ravel(x[:, ::-2].T, order="K"),
}


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("name", LAYOUT_DEPENDENT)
def test_layout_dependent_reshapes_of_duals_in_hessians(name, engine):
    f = _weighted_energy(LAYOUT_DEPENDENT[name])
    np.testing.assert_allclose(cr.hessian(f, X, engine=engine), _fd_hessian(f, X), atol=1e-6)


CONVERSIONS = {
    "asfortranarray": lambda x: np.asfortranarray(x),
    "ascontiguousarray of a transpose": lambda x: np.ascontiguousarray(x.T),
    "array order F": lambda x: np.array(x, order="F"),
    "array order A of a transpose": lambda x: np.array(x.T, order="A"),
    "asarray order F": lambda x: np.asarray(x, order="F"),
    "asarray order C of a transpose": lambda x: np.asarray(x.T, order="C"),
    "astype order F": lambda x: x.astype(np.float64, order="F"),
}


@pytest.mark.parametrize("name", CONVERSIONS)
def test_conversions_give_duals_numpys_layout(name):
    def in_memory_order(x):
        return np.ravel(CONVERSIONS[name](x), order="K")

    y, dy = cr.jvp(in_memory_order, (X,), (10 * X,))
    np.testing.assert_array_equal(y, in_memory_order(X))
    np.testing.assert_array_equal(dy, in_memory_order(10 * X))
    f = _weighted_energy(in_memory_order)
    np.testing.assert_allclose(cr.hessian(f, X), _fd_hessian(f, X), atol=1e-6)


def test_ascontiguousarray_of_a_number_is_one_dimensional_in_every_mode():
    def doubled(x):
        return np.ascontiguousarray(x * 2.0)

    x = np.array(1.5)
    assert doubled(x).shape == (1,)
    for mode in ("forward", "reverse"):
        np.testing.assert_array_equal(cr.jacobian(doubled, x, mode=mode), [2.0])
    assert cr.jvp(doubled, (x,), (np.array(1.0),))[1].shape == (1,)


@pytest.mark.parametrize(
    "convert",
    [np.ascontiguousarray, np.asfortranarray, lambda v: np.array(v, ndmin=2)],
    ids=["ascontiguousarray", "asfortranarray", "ndmin"],
)
def test_conversions_that_add_axes_give_a_dual_its_own_shape_of_cotangent(convert):
    def energy(x):
        return np.sum(convert(x * x) ** 2)

    x = np.array(1.5)
    H = cr.hessian(energy, x)
    assert np.shape(H) == ()
    np.testing.assert_allclose(H, 12 * 1.5**2)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize(
    "kwargs",
    [{"order": "F"}, {"casting": "same_kind"}, {"subok": False}, {"order": "F", "copy": False}],
    ids=str,
)
def test_astype_with_the_methods_own_keywords_in_hessians(kwargs, engine):
    def cubes(x):
        return np.sum(x.astype(np.float64, **kwargs) ** 3)

    np.testing.assert_allclose(cr.hessian(cubes, X, engine=engine).reshape(6, 6), np.diag(6 * X.ravel()))
    np.testing.assert_allclose(cr.gradient(cubes, X)[0], 3 * X**2)


def test_astype_keeps_its_order_given_by_position():
    f = _weighted_energy(lambda x: np.ravel(x.astype(np.float64, "F"), order="K"))
    np.testing.assert_allclose(cr.hessian(f, X), _fd_hessian(f, X), atol=1e-6)


def _astype_method(x, dtype, **kwargs):
    return x.astype(dtype, **kwargs)


@pytest.mark.parametrize("kwargs", [{"order": "F"}, {"casting": "same_kind", "subok": True}], ids=str)
def test_np_astype_rule_takes_the_methods_keywords(kwargs):
    # an engine's array hands x.astype(...) on to np.astype's rule, with the method's keywords
    def np_astype_rrule(f, *args, **kw):
        return cr.rrule(np.astype, *args, **kw)

    def np_astype_frule(tangents, f, *args, **kw):
        return cr.frule(tangents, np.astype, *args, **kw)

    dtype = crt.nondiff(np.complex128)
    crt.test_rrule(_astype_method, X, dtype, fkwargs=kwargs, rule=np_astype_rrule)
    crt.test_frule(_astype_method, X, dtype, fkwargs=kwargs, rule=np_astype_frule)
    y, _ = cr.rrule(np.astype, X, np.float64, **kwargs)
    assert y.flags.f_contiguous == (kwargs.get("order") == "F")
