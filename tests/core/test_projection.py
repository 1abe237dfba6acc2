import dataclasses
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


Pair = namedtuple("Pair", ["first", "second"])


def test_real_scalar_gets_real_float():
    assert cr.ProjectTo(1.0)(2.0 + 3.0j) == 2.0
    assert type(cr.ProjectTo(1.0)(np.float64(2.0))) is float
    assert cr.ProjectTo(1.0)(np.array(3.0)) == 3.0


def test_integer_is_a_real_and_gets_a_float_tangent():
    out = cr.ProjectTo(3)(2)
    assert out == 2.0 and type(out) is float


def test_bool_gets_no_tangent():
    assert cr.ProjectTo(True)(1.0) is cr.NoTangent()
    assert cr.ProjectTo(np.array([True, False]))(np.ones(2)) is cr.NoTangent()


def test_complex_scalar():
    assert cr.ProjectTo(1j)(2.0) == 2.0 + 0j and type(cr.ProjectTo(1j)(2.0)) is complex


def test_numpy_scalar_keeps_dtype():
    out = cr.ProjectTo(np.float32(1.0))(2.0)
    assert type(out) is np.float32


def test_array_keeps_dtype_and_checks_shape():
    x = np.zeros((2, 3), dtype=np.float32)
    out = cr.ProjectTo(x)(np.ones((2, 3)))
    assert out.dtype == np.float32 and out.shape == (2, 3)
    assert cr.ProjectTo(np.zeros(2))(np.array([1 + 1j, 2.0])).dtype == np.float64
    assert cr.ProjectTo(np.zeros(2, complex))(np.ones(2)).dtype == np.complex128
    with pytest.raises(ValueError, match=r"shape \(3, 2\).*\(2, 3\)"):
        cr.ProjectTo(x)(np.ones((3, 2)))
    with pytest.raises(TypeError):
        cr.ProjectTo(x)(cr.Tangent[tuple](1.0))


def test_integer_array_gets_float_tangent():
    assert cr.ProjectTo(np.arange(3))(np.ones(3, dtype=np.float32)).dtype == np.float64


def test_zeros_and_thunks_pass_through_lazily():
    p = cr.ProjectTo(np.zeros(2, dtype=np.float32))
    assert p(cr.ZeroTangent()) is cr.ZeroTangent()
    calls = []
    t = p(cr.Thunk(lambda: calls.append(1) or np.ones(2)))
    assert isinstance(t, cr.Thunk) and calls == []
    assert cr.unthunk(t).dtype == np.float32


def test_tuples_and_structures_fieldwise():
    out = cr.ProjectTo((1.0, np.zeros(2, np.float32)))((2 + 1j, np.ones(2)))
    assert isinstance(out, cr.Tangent[tuple])
    assert out[0] == 2.0 and out[1].dtype == np.float32
    layer = Layer(np.zeros(2, np.float32), 1.0)
    t = cr.ProjectTo(layer)(cr.Tangent[Layer](w=np.ones(2), b=1j))
    assert t.w.dtype == np.float32 and t.b == 0.0
    nt = cr.ProjectTo(Pair(1.0, 2))((1.0, 2.0))
    assert nt == cr.Tangent[Pair](first=1.0, second=2.0)
    d = cr.ProjectTo({"a": 1.0})({"a": 2 + 0j})
    assert d == cr.Tangent[dict]({"a": 2.0})
    with pytest.raises(TypeError, match="Layer"):
        cr.ProjectTo(layer)(cr.Tangent[Pair](first=1.0))
    with pytest.raises(ValueError):
        cr.ProjectTo((1.0, 2.0))((1.0,))


def test_functions_and_strings():
    assert cr.ProjectTo("abc")(1.0) is cr.NoTangent()
    t = cr.Tangent[tuple](1.0)
    assert cr.ProjectTo(np.sin)(t) is t


def test_unbroadcast():
    assert cr.unbroadcast(np.zeros((3, 1)), np.ones((2, 3, 4))).shape == (3, 1)
    np.testing.assert_array_equal(cr.unbroadcast(np.zeros((1, 4)), np.ones((3, 4))), 3 * np.ones((1, 4)))
    assert float(cr.unbroadcast(2.0, np.ones(5))) == 5.0
    d = np.ones(3)
    assert cr.unbroadcast(np.zeros(3), d) is d


def test_match_input():
    assert cr.match_input(2.0, np.array([1.0 + 1.0j, 2.0])) == 3.0
    out = cr.match_input(np.zeros((3, 1), np.float32), np.ones((3, 4)))
    assert out.shape == (3, 1) and out.dtype == np.float32
    assert cr.match_input(np.zeros(2, bool), np.ones(2)) is cr.NoTangent()


def test_sparse_matrix_projected_onto_its_pattern():
    """A sparse matrix's tangent is a CSR matrix of its kind on its pattern (explicit zeros and a DIA
    matrix's stored diagonals included, duplicates one entry): entries outside are dropped."""
    import scipy.sparse as sp

    coo = sp.coo_array((np.array([1.0, 2.0, 0.0]), ([1, 1, 0], [0, 0, 1])), shape=(2, 2))
    dense = np.array([[5.0, 6.0], [7.0, 8.0 + 1j]])
    t = cr.ProjectTo(coo)(dense)
    assert type(t) is sp.csr_array and t.dtype == np.float64
    np.testing.assert_array_equal(t.toarray(), [[0.0, 6.0], [7.0, 0.0]])
    np.testing.assert_array_equal(cr.ProjectTo(coo)(sp.lil_matrix(dense.real)).toarray(), t.toarray())
    dia = sp.diags([np.array([0.0, 1.0])], [0])
    t = cr.ProjectTo(dia)(dense)
    assert type(t) is sp.csr_matrix and t.nnz == 2
    np.testing.assert_array_equal(t.toarray(), [[5.0, 0.0], [0.0, 8.0]])
    assert cr.ProjectTo(sp.csr_array(np.eye(2, dtype=int)))(sp.eye(2) * 3).dtype == np.float64
    with pytest.raises(ValueError, match="shape"):
        cr.ProjectTo(coo)(np.ones(3))


def test_sparse_tangents_add_and_scale():
    import scipy.sparse as sp

    project = cr.ProjectTo(sp.csc_array(np.array([[1.0, 0.0], [2.0, 3.0]])))
    a, b = project(np.ones((2, 2))), project(2 * np.ones((2, 2)))
    for total in (cr.add(a, b), cr.iadd(a, b), cr.accumulate(a, True, b)[0], cr.add(cr.ZeroTangent(), a) + b):
        np.testing.assert_array_equal(total.toarray(), [[3.0, 0.0], [3.0, 3.0]])
    np.testing.assert_array_equal((2.0 * a).toarray(), [[2.0, 0.0], [2.0, 2.0]])
    assert [d.nnz for d in project.batch([np.ones((2, 2)), cr.ZeroTangent()])[:1]] == [3]
