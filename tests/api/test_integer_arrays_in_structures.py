"""An integer *array* inside a structured input is differentiated, with float blocks, in every
entry point, mode and engine (only an integer *number* there is a setting, ``NoTangent()``):
``gradient``, ``jacobian`` and ``hessian`` agree on it (docs/tangents.md)."""

import dataclasses

import numpy as np
import pytest

import chainrules as cr

MODES = [("forward", "source"), ("reverse", "source"), ("reverse", "tape"), ("auto", "source"), ("auto", "tape")]
W = np.array([1.0, 2.0])
K = np.array([3, 4])


def weighted_sum(p):
    return np.sum(p[0] * p[1])


@dataclasses.dataclass
class Counts:
    w: np.ndarray
    k: np.ndarray
    n: int = 2


def report(p):
    return {"scaled": p.w * p.k * p.n, "energy": np.sum(p.k**2) * p.w[0], "label": "counts"}


@pytest.mark.parametrize("mode, engine", MODES)
def test_an_integer_array_in_a_tuple_gets_its_jacobian_block(mode, engine):
    (gradient,) = cr.gradient(weighted_sum, (W, K), engine=engine)
    J = cr.jacobian(weighted_sum, (W, K), mode=mode, engine=engine)
    np.testing.assert_array_equal(J[1], W)
    np.testing.assert_array_equal(J[1], gradient[1])
    assert J[1].dtype == np.float64


@pytest.mark.parametrize("mode, engine", MODES)
def test_integer_arrays_in_a_dataclass_with_a_structured_output(mode, engine):
    J = cr.jacobian(report, Counts(W, K.astype(np.int32)), mode=mode, engine=engine)
    np.testing.assert_array_equal(J["scaled"].k, np.diag(2 * W))
    np.testing.assert_array_equal(J["scaled"].w, np.diag(2 * K))
    np.testing.assert_array_equal(J["energy"].k, 2 * K * W[0])
    assert J["scaled"].n is cr.NoTangent() and J["label"] is cr.NoTangent()


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_auto_mode_choosing_forward_mode_differentiates_an_integer_array(engine):
    def wide(p):  # more outputs than inputs: forward mode, on the first call and on the remembered choice
        return np.concatenate([p[0] * p[1], p[1] ** 2, p[0]])

    for _ in range(2):
        J = cr.jacobian(wide, (W, K), engine=engine)
        np.testing.assert_array_equal(J[1], np.vstack([np.diag(W), np.diag(2.0 * K), np.zeros((2, 2))]))


def test_forward_mode_in_chunks_differentiates_an_integer_array():
    J = cr.jacobian(report, Counts(W, K), mode="forward", chunk_size=1)
    np.testing.assert_array_equal(J["energy"].k, 2 * K * W[0])


@pytest.mark.parametrize("mode, engine", MODES)
def test_a_structure_of_integer_arrays_only(mode, engine):
    J = cr.jacobian(lambda t: t[0] * 2.0, (K, 3), mode=mode, engine=engine)
    np.testing.assert_array_equal(J[0], 2.0 * np.eye(2))
    assert J[1] is cr.NoTangent()


def test_the_hessian_is_symmetric_with_an_integer_array_in_a_tuple():
    H = cr.hessian(weighted_sum, (W, K))
    np.testing.assert_array_equal(H[0][1], np.eye(2))
    np.testing.assert_array_equal(H[1][0], np.eye(2))
    np.testing.assert_array_equal(H[0][0], np.zeros((2, 2)))
    np.testing.assert_array_equal(H[1][1], np.zeros((2, 2)))


def test_the_hessian_along_two_integer_arrays():
    # (the source engine: the tape takes a dual of an integer array inside a structure for a setting)
    H = cr.hessian(lambda t: np.sum(t[0] ** 2 * t[1]), (np.array([1, 2]), K))
    np.testing.assert_array_equal(H[0][0], np.diag(2.0 * K))
    np.testing.assert_array_equal(H[0][1], np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(H[1][0], np.diag([2.0, 4.0]))


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_an_integer_number_field_has_no_hessian_row_nor_column(engine):
    @dataclasses.dataclass
    class Scaled:
        w: np.ndarray
        b: float
        n: int = 2

    H = cr.hessian(lambda p: np.sum(p.w**2) * p.b**2 * p.n, Scaled(W, 3.0), engine=engine)
    assert H.n is cr.NoTangent() and H.w.n is cr.NoTangent() and H.b.n is cr.NoTangent()
    np.testing.assert_allclose(H.w.w, 2 * 9.0 * 2 * np.eye(2))


def test_beside_a_dual_of_an_outer_differentiation():
    # the inner forward Jacobian along the integer array keeps the outer dual where it is
    def along_the_array(s):
        J = cr.jacobian(lambda p: p[0] * p[1] ** 2, (K, s), mode="forward")
        return np.sum(J[0])  # s**2 on the diagonal

    assert along_the_array(3.0) == 18.0
    assert cr.derivative(along_the_array, 3.0) == 12.0
