"""Second derivatives (forward over reverse) through the products' and traces' pullbacks, which
then run on dual numbers: a constant's cotangent that is a dual is added out of place (a plain
accumulator cannot take it), and a diagonal's cotangent is placed without writing into zeros."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

W = np.array([[1.0, 2.0], [3.0, -1.0]])
W3 = np.stack([W, 2 * W])
X = np.array([0.3, -0.7])


def _fd_hessian(f, x):
    return crt.fd_jacobian(lambda v: cr.gradient(f, v)[0], x).reshape(np.shape(x) * 2)


# losses of a constant w (an argument, whose cotangent the source engine adds up) used twice: in a
# product whose cotangent is a dual (as x's function), and alone, whose cotangent is a plain array
CONSTANT_USED_TWICE = {
    "matrix @ vector": (W, lambda w, x: np.sum((w @ x) ** 2) + np.sum(w)),
    "vector @ matrix": (W, lambda w, x: np.sum((x @ w) ** 2) + np.sum(w)),
    "matrix @ matrix": (W, lambda w, x: np.sum((w @ np.outer(x, x)) ** 2) + np.sum(w)),
    "stack @ vector": (W3, lambda w, x: np.sum((w @ x) ** 2) + np.sum(w)),
    "stack @ matrix": (W3, lambda w, x: np.sum((w @ np.outer(x, x)) ** 2) + np.sum(w)),
    # products of constants alone, whose cotangent (from x's weights) is a dual all the same
    "matrix @ itself, weighted": (W, lambda w, x: np.sum((w @ w) * np.outer(x, x)) + np.sum(w)),
    "stack @ itself, weighted": (W3, lambda w, x: np.sum((w @ w) * np.outer(x, x)) + np.sum(w)),
    "dot": (W, lambda w, x: np.sum(np.dot(w, x) ** 2) + np.sum(w)),
    "einsum": (W, lambda w, x: np.sum(np.einsum("ij,j->i", w, x) ** 2) + np.sum(w)),
    "tensordot": (W, lambda w, x: np.sum(np.tensordot(w, x, 1) ** 2) + np.sum(w)),
    "inner": (W, lambda w, x: np.sum(np.inner(w, x) ** 2) + np.sum(w)),
}


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("name", CONSTANT_USED_TWICE)
def test_hessian_where_a_constant_operand_is_used_twice(name, engine):
    w, loss = CONSTANT_USED_TWICE[name]

    def f(x):
        return loss(w, x)

    np.testing.assert_allclose(cr.hessian(f, X, engine=engine), _fd_hessian(f, X), rtol=1e-6, atol=1e-6)


def test_the_example_of_a_constant_used_twice():
    def loss(w, x):
        return np.sum((w @ x) ** 2) + np.sum(w)

    expected = [[20.0, -2.0], [-2.0, 10.0]]
    np.testing.assert_allclose(cr.hessian(lambda x: loss(W, x), X), expected)
    np.testing.assert_allclose(cr.hessian(lambda x: loss(W, x), X, engine="tape"), expected)


REPEATED_LABELS = {
    "ii": np.array([[1.0, 2.0], [3.0, 4.0]]),
    "ii->i": np.array([[1.0, 2.0], [3.0, 4.0]]),
    "iij->ij": np.random.default_rng(1).standard_normal((3, 3, 2)),
    "jii->ij": np.random.default_rng(2).standard_normal((2, 3, 3)),
    "iii->i": np.random.default_rng(3).standard_normal((2, 2, 2)),
    "iij": np.random.default_rng(4).standard_normal((3, 3, 2)),
}


@pytest.mark.parametrize("subscripts", REPEATED_LABELS)
def test_einsum_rules_of_a_repeated_label(subscripts):
    x = REPEATED_LABELS[subscripts]
    crt.test_rrule(np.einsum, crt.nondiff(subscripts), x)
    crt.test_frule(np.einsum, crt.nondiff(subscripts), x)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("subscripts", REPEATED_LABELS)
def test_hessian_of_einsum_with_a_repeated_label(subscripts, engine):
    x = REPEATED_LABELS[subscripts]

    def f(v):
        return np.sum(np.einsum(subscripts, v) ** 3)

    np.testing.assert_allclose(cr.hessian(f, x, engine=engine), _fd_hessian(f, x), rtol=1e-6, atol=1e-6)


def test_hessian_of_the_squared_trace_by_einsum_and_by_np_trace():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    expected = cr.hessian(lambda v: np.trace(v) ** 2, x)
    np.testing.assert_allclose(expected.reshape(4, 4)[0], [2.0, 0.0, 0.0, 2.0])
    np.testing.assert_allclose(cr.hessian(lambda v: np.einsum("ii", v) ** 2, x), expected)
    np.testing.assert_allclose(cr.hessian(lambda v: np.linalg.trace(v) ** 2, x), expected)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("offset", [0, 1, -1])
def test_hessian_of_linalg_trace_of_a_stack(offset, engine):
    x = np.random.default_rng(5).standard_normal((3, 2, 3))

    def f(v):
        return np.sum(np.linalg.trace(v, offset=offset) ** 3)

    np.testing.assert_allclose(cr.hessian(f, x, engine=engine), _fd_hessian(f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("offset", [0, 1])
def test_linalg_trace_rules(offset):
    x = np.random.default_rng(6).standard_normal((3, 2, 3))
    crt.test_rrule(np.linalg.trace, x, fkwargs={"offset": offset})
    crt.test_frule(np.linalg.trace, x, fkwargs={"offset": offset})
