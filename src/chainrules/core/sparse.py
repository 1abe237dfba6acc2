"""SciPy's sparse matrices as primals: their tangent is a sparse matrix on the primal's pattern.

A sparse matrix's tangent (and cotangent) is a CSR matrix of the primal's kind (``csr_array`` for a
``sparray``, ``csr_matrix`` for an ``spmatrix``), whatever the primal's format, whose stored entries
are the derivative's at the primal's *pattern*: the positions it stores, explicit zeros included
(every in-bounds position of a DIA matrix's stored diagonals). A tangent outside the pattern is
dropped by projection, as ChainRules' ``ProjectTo`` does for ``SparseMatrixCSC``: the entries
outside are structurally zero. That is correct only where the pattern is fixed in the user's
program, which does not branch on which entries happen to be stored.

Duplicate entries (a COO matrix's) are one entry of the matrix, their sum, as SciPy sums them.
Such tangents add, subtract and scale as SciPy's matrices (``add``, ``iadd``, ``ZeroTangent() + t``).
A batch of them (a Jacobian's block of tangents or cotangents) is a list, one per batch element,
as a sparse matrix has no leading batch axis.
"""

from __future__ import annotations

import sys

import numpy as np

#: why forward mode refuses a sparse matrix built from the values being differentiated (its rules and
#: the forward engine say it): a dual of a sparse matrix would run NumPy's rules for its operators
NOT_CARRIED = (
    "a sparse matrix built from the values being differentiated cannot carry their tangents in forward mode "
    "(SciPy stores its entries as plain numbers, never dual numbers), so forward mode and second derivatives "
    "(a Hessian) do not pass through building one; reverse mode (cr.gradient) differentiates it"
)


def is_sparse(x) -> bool:
    """Whether ``x`` is a SciPy sparse matrix (``scipy.sparse`` is never imported for this)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(x)


class SparsePattern:
    """The stored positions of a sparse matrix, in CSR order (rows, then columns, no duplicates).

    ``rows``/``cols`` are the coordinates of entry ``k``; ``tangent(data)`` is the tangent whose
    entries are ``data`` (in this order); ``entries(t)`` reads a tangent (sparse, any format, or
    dense) at these positions.

    >>> import numpy as np, scipy.sparse as sp
    >>> p = SparsePattern(sp.coo_array((np.array([1.0, 2.0, 3.0]), ([1, 0, 1], [0, 1, 0])), shape=(2, 2)))
    >>> p.rows, p.cols, p.entries(np.array([[5.0, 6.0], [7.0, 8.0]]))
    (array([0, 1]), array([1, 0]), array([6., 7.]))
    """

    __slots__ = ("shape", "dtype", "rows", "cols", "indptr", "is_array")

    def __init__(self, x):
        import scipy.sparse as sp

        self.shape = x.shape
        self.dtype = x.dtype if x.dtype.kind in "fc" else np.dtype(np.float64)  # (integers are reals)
        self.is_array = isinstance(x, sp.sparray)
        if x.format == "dia":  # (its tocsr drops stored zeros, which are entries of the pattern)
            rows, cols = _dia_positions(x)
        else:
            csr = x.tocsr(copy=True)
            csr.sum_duplicates()
            rows = np.repeat(np.arange(self.shape[0]), np.diff(csr.indptr))
            cols = csr.indices
        self.rows, self.cols = rows.astype(np.intp, copy=False), cols.astype(np.intp, copy=False)
        self.indptr = np.concatenate(([0], np.cumsum(np.bincount(self.rows, minlength=self.shape[0]))))

    @property
    def nnz(self) -> int:
        return len(self.rows)

    def tangent(self, data: np.ndarray):
        """The tangent of the primal whose entries on the pattern are ``data``, in the primal's
        float dtype (the real part for a real primal)."""
        import scipy.sparse as sp

        if self.dtype.kind == "f" and np.iscomplexobj(data):
            data = data.real
        cls = sp.csr_array if self.is_array else sp.csr_matrix
        return cls((np.asarray(data, dtype=self.dtype), self.cols, self.indptr), shape=self.shape)

    def project(self, t):
        """The tangent ``t`` (sparse or dense) on the pattern."""
        return self.tangent(self.entries(t))

    def entries(self, t) -> np.ndarray:
        """The entries of ``t`` (a sparse matrix of any format, duplicates summed, or a dense one) at
        the pattern's positions, zero where ``t`` stores none."""
        if np.shape(t) != self.shape:
            raise ValueError(f"a tangent of shape {np.shape(t)} does not fit a sparse matrix of shape {self.shape}")
        return entries_at(t, self.rows, self.cols)


def entries_at(t, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The entries of ``t`` (a sparse matrix of any format, duplicates summed, or a dense one) at
    the positions ``(rows[k], cols[k])``, zero where ``t`` stores none: a gather, never densified."""
    if not is_sparse(t):
        return np.asarray(t)[rows, cols]
    if t.format == "csr" and t.has_canonical_format:
        csr = t
    else:
        csr = t.tocsr(copy=True)
        csr.sum_duplicates()
    m = t.shape[1]
    keys = np.repeat(np.arange(t.shape[0]), np.diff(csr.indptr)) * m + csr.indices
    wanted = np.asarray(rows, dtype=np.intp) * m + cols
    if not len(keys):
        return np.zeros(len(wanted), dtype=csr.dtype)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, csr.data[at], 0).astype(csr.dtype, copy=False)


def _dia_positions(x) -> tuple[np.ndarray, np.ndarray]:
    """The in-bounds positions of a DIA matrix's stored diagonals, sorted, without repeats."""
    n, m = x.shape
    width = x.data.shape[1]
    keys = []
    for offset in np.asarray(x.offsets):
        cols = np.arange(max(offset, 0), min(m, n + offset, width))
        keys.append((cols - offset) * m + cols)
    keys = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.intp)
    return keys // m, keys % m
