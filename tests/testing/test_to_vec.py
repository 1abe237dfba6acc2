"""to_vec, its tangent counterparts, and rand_tangent."""

import dataclasses
import math
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import nondiff, rand_tangent, to_vec
from chainrules.testing.to_vec import tangent_to_vec, vec_to_tangent


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    scale: float
    steps: int


class Plain:
    def __init__(self):
        self.a = 1.5
        self.tag = "x"


Point = namedtuple("Point", ["x", "y"])


def _roundtrip(x):
    v, from_vec = to_vec(x)
    assert v.dtype == np.float64 and v.ndim == 1
    return v, from_vec(v)


def test_scalars():
    assert _roundtrip(1.5)[0].tolist() == [1.5]
    v, back = _roundtrip(1 + 2j)
    assert v.tolist() == [1.0, 2.0] and back == 1 + 2j and type(back) is complex
    v, back = _roundtrip(np.float32(0.5))
    assert type(back) is np.float32
    v, back = _roundtrip(np.complex64(1 - 1j))
    assert type(back) is np.complex64 and v.tolist() == [1.0, -1.0]


def test_integers_booleans_strings_and_functions_are_carried():
    for x in (3, True, np.int64(2), "s", None, math.sin, np.arange(3), np.array([True])):
        v, from_vec = to_vec(x)
        assert v.size == 0
        back = from_vec(v)
        assert back is x or np.array_equal(back, x)


def test_arrays_of_every_float_and_complex_dtype():
    for dtype in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
        x = np.arange(6).reshape(2, 3).astype(dtype)
        if x.dtype.kind == "c":
            x = x + 1j * x[::-1]
        v, back = _roundtrip(x)
        assert v.size == x.size * (2 if x.dtype.kind == "c" else 1)
        assert back.dtype == x.dtype and back.shape == x.shape and np.array_equal(back, x)
    v, back = _roundtrip(np.array(2.5))
    assert back.shape == () and back == 2.5


def test_from_vec_builds_fresh_arrays():
    x = np.ones(3)
    v, from_vec = to_vec((x, np.arange(2)))
    a, ints = from_vec(v)
    a[0] = 5.0
    ints[0] = 7
    assert x[0] == 1.0 and from_vec(v)[1][0] == 0


def test_structures_roundtrip():
    x = {"p": Point(1.0, [2.0, 3]), "f": Frozen(np.array([1.0, 2.0]), 0.5, 4), "o": Plain(), "t": (1j,)}
    v, back = _roundtrip(x)
    assert v.tolist() == [1.0, 2.0, 1.0, 2.0, 0.5, 1.5, 0.0, 1.0]
    assert isinstance(back["p"], Point) and back["p"].y == [2.0, 3]
    assert isinstance(back["f"], Frozen) and back["f"].steps == 4 and back["f"] is not x["f"]
    assert back["o"].a == 1.5 and back["o"].tag == "x"
    v2, from_vec = to_vec(x)
    moved = from_vec(v2 + 1)
    assert moved["f"].scale == 1.5 and x["f"].scale == 0.5 and moved["o"].a == 2.5 and x["o"].a == 1.5


def test_tangent_structures_and_nondiff_markers():
    t = cr.Tangent[Point](x=1.0, y=2.0)
    v, back = _roundtrip(t)
    assert v.tolist() == [1.0, 2.0] and isinstance(back, cr.Tangent[Point]) and back.y == 2.0
    assert to_vec((1.0, nondiff(2.0)))[0].tolist() == [1.0]


def test_cycles_are_carried():
    node = Plain()
    node.me = node
    v, back = _roundtrip(node)
    assert v.tolist() == [1.5]


def test_tangent_to_vec_accepts_every_tangent_form():
    x = (1.0, np.array([1.0, 2.0]), Point(3.0, 4.0), 5)
    expected = [1.0, 2.0, 3.0, 0.0, 6.0]
    natural = (1.0, np.array([2.0, 3.0]), cr.Tangent[Point](y=6.0), cr.NoTangent())
    assert tangent_to_vec(x, natural).tolist() == expected
    assert tangent_to_vec(x, cr.Tangent[tuple](*natural)).tolist() == expected
    assert tangent_to_vec(x, cr.Thunk(lambda: natural)).tolist() == expected
    assert tangent_to_vec(x, cr.ZeroTangent()).tolist() == [0.0] * 5
    assert tangent_to_vec(Point(1.0, 2.0), cr.Tangent[Point](2.0, 3.0)).tolist() == [2.0, 3.0]


def test_tangent_to_vec_rejects_mismatches():
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        tangent_to_vec(np.ones(3), np.ones(2))
    with pytest.raises(TypeError, match="not a tangent of a Point"):
        tangent_to_vec(Point(1.0, 2.0), cr.Tangent[Frozen](w=1.0))
    with pytest.raises(ValueError, match="2 tangents"):
        tangent_to_vec((1.0, 2.0, 3.0), (1.0, 2.0))
    with pytest.raises(TypeError, match="real scalar"):
        tangent_to_vec(1.0, np.ones(2))


def test_vec_to_tangent_gives_structural_tangents():
    t = vec_to_tangent(Frozen(np.zeros(2), 0.0, 3), np.array([1.0, 2.0, 3.0]))
    assert isinstance(t, cr.Tangent[Frozen]) and t.steps == cr.NoTangent() and t.scale == 3.0
    assert vec_to_tangent((1, "a"), np.zeros(0)) == cr.NoTangent()


def test_rand_tangent_types():
    rng = np.random.default_rng(1)
    assert type(rand_tangent(1.0, rng)) is float
    assert type(rand_tangent(1j, rng)) is complex
    t32 = rand_tangent(np.zeros((2, 3), np.float32), rng)
    assert t32.dtype == np.float32 and t32.shape == (2, 3)
    c64 = rand_tangent(np.zeros(2, np.complex64), rng)
    assert c64.dtype == np.complex64 and np.all(c64.imag != 0)
    assert type(rand_tangent(np.float32(1), rng)) is np.float32
    for x in (3, True, "s", None, np.arange(3), np.array([True]), math.sin, (1, "a")):
        assert rand_tangent(x, rng) == cr.NoTangent()
    t = rand_tangent(Frozen(np.zeros(2), 0.0, 3), rng)
    assert isinstance(t, cr.Tangent[Frozen]) and t.w.shape == (2,) and t.steps == cr.NoTangent()
    assert isinstance(rand_tangent([1.0, 2.0], rng), cr.Tangent[list])
    assert isinstance(rand_tangent({"a": 1.0}, rng), cr.Tangent[dict])
    assert isinstance(rand_tangent(Point(1.0, 2.0), rng), cr.Tangent[Point])
    assert rand_tangent(1.0, 7) == rand_tangent(1.0, 7)


def test_perturbed_inputs_keep_the_memory_layout_of_the_input():
    from chainrules.testing import fd_vjp, test_frule, test_rrule

    fortran = np.arange(6.0).reshape(2, 3).T  # a transpose: Fortran order
    vec, back = to_vec(fortran)
    rebuilt = back(vec)
    assert rebuilt.flags.f_contiguous and np.array_equal(rebuilt, fortran)
    # np.ravel(order="K") reads memory order: finite differences must see the input as the rule does
    dy = np.arange(6.0) * 10
    # (the element at memory position k of `fortran` holds k, and order="K" puts it at output k)
    np.testing.assert_allclose(fd_vjp(lambda x: np.ravel(x, order="K"), dy, fortran), 10.0 * fortran, atol=1e-6)
    test_rrule(np.ravel, fortran, fkwargs={"order": "K"}, output_tangent=dy)
    test_frule(np.ravel, fortran, fkwargs={"order": "K"})
    test_rrule(np.reshape, fortran, (6,), fkwargs={"order": "A"})


def test_sparse_matrix_is_its_entries_on_its_pattern():
    """Finite differences perturb a sparse matrix's entries on its pattern (duplicates summed), and
    rebuild one of its format and class."""
    import scipy.sparse as sp

    A = sp.coo_matrix((np.array([1.0, 2.0, 3.0]), ([1, 0, 1], [0, 1, 0])), shape=(2, 2))
    v, from_vec = to_vec(A)
    np.testing.assert_array_equal(v, [2.0, 4.0])
    B = from_vec(v + 1)
    assert type(B) is sp.coo_matrix
    np.testing.assert_array_equal(B.toarray(), [[0.0, 3.0], [5.0, 0.0]])
    np.testing.assert_array_equal(tangent_to_vec(A, np.array([[1.0, 2.0], [3.0, 4.0]])), [2.0, 3.0])
    t = vec_to_tangent(A, np.array([1.0, 2.0]))
    assert type(t) is sp.csr_matrix
    np.testing.assert_array_equal(t.toarray(), [[0.0, 1.0], [2.0, 0.0]])
    v, from_vec = to_vec(sp.csr_array(np.array([[1j, 0.0], [0.0, 2.0]])))
    np.testing.assert_array_equal(v, [0.0, 1.0, 2.0, 0.0])
