"""np.block: nested lists of arrays and numbers of any depth. The pullback cuts the cotangent into
the blocks (a batch of cotangents past its batch axis), the pushforward assembles the blocks'
tangents with np.block (zeros for constant blocks). Finite differences in float64 and float32,
a batch against row by row both ways, and every engine (source, tape, forward) against finite
differences, Hessians included."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.testing import test_frule, test_rrule


def _r(seed: int = 0):
    return np.random.default_rng(seed)


def _layouts(dtype):
    """Named valid arguments of np.block, built fresh in ``dtype``."""
    r = _r()

    def a(*shape):
        return r.standard_normal(shape).astype(dtype)

    return {
        "vectors": [a(2), a(3), a(1)],
        "2x2 blocks": [[a(2, 2), a(2, 1)], [a(1, 2), a(1, 1)]],
        "uneven rows": [[a(2, 2), a(2, 1)], [a(1, 3)]],
        "promoted to 2-D": [[a(1, 2), a(1)], [a(3)]],
        "numbers and 0-d": [[a(), 1.5, dtype(0.25)], [a(3)]],
        "depth 3": [[[a(2, 2), a(2, 1)], [a(1, 3)]], [[a(1, 3, 3)]]],
        "deeper leaves": [[a(2, 1, 2), a(2, 1, 1)]],
        "one block": [[a(2, 3)]],
        "an array": a(2, 3),
        "empty block": [[a(2, 0), a(2, 2)]],
    }


NAMES = list(_layouts(np.float64))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_block_rules(name, dtype):
    arrays = _layouts(dtype)[name]
    tol = {"rtol": 1e-3, "atol": 1e-3} if dtype is np.float32 else {}
    test_rrule(np.block, arrays, **tol)
    test_frule(np.block, arrays, **tol)


def test_cotangents_are_the_boxes_of_the_output():
    a, b, c = np.ones((2, 2)), np.ones((2, 1)), np.ones(3)
    y, back = cr.rrule(np.block, [[a, b], [c]])
    dy = np.arange(9.0).reshape(3, 3)
    (_, ((da, db), (dc,))) = back(dy)
    np.testing.assert_array_equal(da, dy[:2, :2])
    np.testing.assert_array_equal(db, dy[:2, 2:])
    np.testing.assert_array_equal(dc, dy[2])  # the 1-D block's own shape, not its promoted (1, 3)
    assert not np.shares_memory(dy, y)


def test_the_cotangents_types_follow_the_blocks():
    # a Python number gets a float, a float32 block a float32 array, a bool block and an integer
    # one have NoTangent and a float cotangent respectively, as np.concatenate's pieces do
    blocks = [[np.ones((1, 2), np.float32), 2.0, np.array([[True]]), np.array([[3]])]]
    y, back = cr.rrule(np.block, blocks)
    (_, ((d32, dnum, dbool, dint),)) = back(np.ones(y.shape))
    assert d32.dtype == np.float32 and type(dnum) is float
    assert isinstance(dbool, cr.NoTangent) and dint.dtype == np.float64


def test_constant_blocks_get_zero_tangents():
    x = _r(1).standard_normal((2, 2))
    tangent = cr.Tangent[list](cr.Tangent[list](np.ones((2, 2)), cr.ZeroTangent()))
    y, dy = cr.frule((cr.NoTangent(), tangent), np.block, [[x, np.zeros((2, 1))]])
    np.testing.assert_array_equal(dy, np.block([[np.ones((2, 2)), np.zeros((2, 1))]]))
    _, dy = cr.frule((cr.NoTangent(), cr.ZeroTangent()), np.block, [[x, np.zeros((2, 1))]])
    assert isinstance(dy, cr.ZeroTangent)
    _, back = cr.rrule(np.block, [[x, np.zeros((2, 1))]])
    assert isinstance(back(cr.ZeroTangent())[1], cr.ZeroTangent)


def test_float32_blocks_with_a_python_number_keep_the_outputs_dtype():
    blocks = [np.ones(2, np.float32), 1.5]
    y, dy = cr.frule((cr.NoTangent(), [np.ones(2, np.float32), 1.0]), np.block, blocks)
    assert dy.dtype == y.dtype


@pytest.mark.parametrize("name", NAMES)
def test_batched_pullback(name, batched_pullback):
    batched_pullback(np.block, _layouts(np.float64)[name], rtol=1e-14)


@pytest.mark.parametrize("name", ["2x2 blocks", "numbers and 0-d", "depth 3", "an array"])
def test_batched_pushforward_equals_row_by_row(name):
    arrays = _layouts(np.float64)[name]
    r = _r(2)

    def batch_of(x):
        if isinstance(x, list):
            return [batch_of(e) for e in x]
        return r.standard_normal((3, *np.shape(x)))

    def row(t, k):
        return [row(e, k) for e in t] if isinstance(t, list) else t[k]

    tangents = batch_of(arrays)
    y, dys = cr.frule((cr.NoTangent(), tangents), np.block, arrays)
    assert dys.shape == (3, *y.shape)
    for k in range(3):
        np.testing.assert_allclose(dys[k], cr.frule((cr.NoTangent(), row(tangents, k)), np.block, arrays)[1])


def test_numpy_refuses_what_it_refuses():
    with pytest.raises(ValueError):
        cr.rrule(np.block, [[np.ones((2, 2)), np.ones((3, 1))]])
    with pytest.raises(ValueError):
        cr.frule((cr.NoTangent(), cr.ZeroTangent()), np.block, [])


# ----- through the engines ------------------------------------------------------------------------


def program(x):
    """A 4 x 5 matrix assembled from pieces of ``x`` (12 numbers), constants and numbers."""
    a = x[:4].reshape(2, 2)
    b = np.sin(x[4:6]).reshape(2, 1)
    c = x[6:9] * x[0]
    return np.block([[a, b, np.zeros((2, 2))], [c, x[9], 2.0], [x[10], 1.0, x[11] ** 2, 0.5, x[1]]])


def loss(x):
    return np.sum(program(x) ** 2 * np.arange(1.0, 21.0).reshape(4, 5))


X = _r(3).standard_normal(12)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_reverse_engines(engine):
    g = cr.gradient(loss, X, engine=engine)[0]
    crt.assert_approx(g, crt.fd_jacobian(loss, X).reshape(12), rtol=1e-8, atol=1e-10)
    J = cr.jacobian(program, X, mode="reverse", engine=engine)
    crt.assert_approx(J, crt.fd_jacobian(program, X).reshape(4, 5, 12), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("chunk_size", [None, 1, 5])
def test_forward_engine(chunk_size):
    J = cr.jacobian(program, X, mode="forward", chunk_size=chunk_size)
    crt.assert_approx(J, crt.fd_jacobian(program, X).reshape(4, 5, 12), rtol=1e-8, atol=1e-10)
    _, dy = cr.jvp(program, (X,), (np.ones(12),))
    crt.assert_approx(dy, J @ np.ones(12), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessians(engine):
    H = cr.hessian(loss, X, engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda v: cr.gradient(loss, v)[0], X), rtol=1e-6, atol=1e-7)


def test_float32_through_the_engines():
    x = X.astype(np.float32)
    expected = cr.gradient(loss, X)[0]
    for engine in ("source", "tape"):
        g = cr.gradient(loss, x, engine=engine)[0]
        assert g.dtype == np.float32
        crt.assert_approx(g, expected, rtol=1e-4, atol=1e-3)
    J = cr.jacobian(program, x, mode="forward")
    assert J.dtype == program(x).dtype == np.float64  # NumPy makes the Python numbers float64 blocks
    crt.assert_approx(J, cr.jacobian(program, X, mode="forward"), rtol=1e-4, atol=1e-5)

    def single(v):
        return np.block([[v[:2].reshape(1, 2), v[2:3].reshape(1, 1)], [v[3:6] * v[0]]])

    J = cr.jacobian(single, x[:6], mode="forward")
    assert J.dtype == np.float32
    crt.assert_approx(J, crt.fd_jacobian(single, X[:6]).reshape(2, 3, 6), rtol=1e-4, atol=1e-5)
    crt.assert_approx(cr.jacobian(single, x[:6], mode="reverse"), J, rtol=1e-6, atol=1e-6)
