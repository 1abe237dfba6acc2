"""Jacobians of complex values: every mode and engine gives forward mode's Jacobian, whose column k
is the derivative along the real unit e_k (f'(z) for a holomorphic f; for a real output, real).

Reverse mode builds it from real parts of pullbacks, J[i, k] = Re(pullback(e_i)_k) + 1j *
Re(pullback(1j e_i)_k) (see ``api._complex_rows``), in its one-block, chunked and
one-cotangent-at-a-time paths, at structured inputs and outputs, and inside a differentiated function.
Each is checked against central finite differences along real directions."""

import numpy as np
import pytest

import chainrules as cr
from chainrules import api
from chainrules.reverse import source, trace

ENGINES = {"source": source.pullback_full, "tape": trace.pullback_full}
each_engine = pytest.mark.parametrize("engine", list(ENGINES))

A = np.array([[1.0 + 0.5j, -0.3j, 2.0], [0.4, 1.5 - 1.0j, -0.7 + 0.2j]])

Z = np.array([0.7 + 0.4j, -1.1 + 0.9j, 0.3 - 1.2j])  # complex points, away from 0
X = np.array([0.3, -0.8, 1.4])
z0, x0 = 0.8 - 0.6j, 0.6

# name -> (f, scalar input, array input)
FUNCTIONS = {
    # holomorphic C -> C: J = f'(z), not its conjugate
    "z*z": (lambda z: z * z, z0, Z),
    "exp": (np.exp, z0, Z),
    "z**3+2z": (lambda z: z**3 + 2 * z, z0, Z),
    # R -> C: the imaginary part of the derivative is kept
    "x*(1+2j)": (lambda x: x * (1 + 2j), x0, X),
    "exp(1jx)": (lambda x: np.exp(1j * x), x0, X),
    # C -> R: the derivative along the real axis, real
    "abs(z)**2": (lambda z: np.abs(z) ** 2, z0, Z),
    "real(z*z)": (lambda z: np.real(z * z), z0, Z),
    # non-holomorphic C -> C
    "conj(z)*z+z": (lambda z: np.conj(z) * z + z, z0, Z),
    "abs(z)*z": (lambda z: np.abs(z) * z, z0, Z),
}
# array-only functions whose Jacobians are not diagonal (and one of a single output: one cotangent)
MIXING = {
    "A@(z*z)": (lambda z: A @ (z * z), Z),
    "A@x": (lambda x: A @ x, X),
    "cumsum(conj(z)*z*z)": (lambda z: np.cumsum(np.conj(z) * z * z), Z),
    "sum(exp(z))": (lambda z: np.sum(np.exp(z)), Z),
    "sum(abs(z)**2)": (lambda z: np.sum(np.abs(z) ** 2), Z),
    "outer": (lambda z: np.outer(z, np.conj(z)).reshape(-1), Z),
}

CASES = [
    pytest.param(f, x, id=f"{name}-{kind}")
    for name, (f, scalar, array) in FUNCTIONS.items()
    for kind, x in (("scalar", scalar), ("array", array))
] + [pytest.param(f, x, id=name) for name, (f, x) in MIXING.items()]


def fd_jacobian(f, x, h: float = 1e-6) -> np.ndarray:
    """Central differences along the real units: column k perturbs Re(x_k) by h (the output's
    differences complex), shaped ``y.shape + x.shape``."""
    x = np.asarray(x)
    y = np.asarray(f(x[()] if x.ndim == 0 else x))
    columns = []
    for k in range(x.size):
        e = np.zeros(x.shape, dtype=x.dtype)
        e.reshape(-1)[k] = h
        plus, minus = (np.asarray(f((x + s * e)[()] if x.ndim == 0 else x + s * e)) for s in (1, -1))
        columns.append((plus - minus) / (2 * h))
    return np.stack(columns, axis=-1).reshape(y.shape + x.shape)


def check_close(J, expected, fd_like: bool = False):
    assert np.shape(J) == np.shape(expected)
    tolerance = {"rtol": 1e-6, "atol": 1e-7} if fd_like else {"rtol": 1e-12, "atol": 1e-14}
    np.testing.assert_allclose(J, expected, **tolerance)


@pytest.mark.parametrize("f, x", CASES)
@each_engine
def test_every_mode_gives_the_derivative_along_the_real_units(engine, f, x):
    expected = fd_jacobian(f, x)
    forward = cr.jacobian(f, x, mode="forward", engine=engine)
    check_close(forward, expected, fd_like=True)
    for mode in ("reverse", "auto"):
        J = cr.jacobian(f, x, mode=mode, engine=engine)
        check_close(J, forward)
        assert np.asarray(J).dtype == np.asarray(forward).dtype
    if not np.iscomplexobj(f(x)):  # a real output's Jacobian is real, in a complex array
        assert not np.any(np.imag(cr.jacobian(f, x, mode="reverse", engine=engine)))


def test_the_examples_of_the_report():
    for mode in ("reverse", "auto"):
        assert cr.jacobian(lambda z: z * z, 1 + 1j, mode=mode) == 2 + 2j
        np.testing.assert_array_equal(
            cr.jacobian(lambda x: x * (1 + 2j), np.array([1.0, 2.0]), mode=mode), np.diag([1 + 2j, 1 + 2j])
        )
        np.testing.assert_array_equal(
            cr.jacobian(lambda z: np.abs(z) ** 2, np.array([1 + 2j, 3j]), mode=mode), np.diag([2 + 0j, 0j])
        )


@pytest.mark.parametrize("f, x", [case for case in CASES if np.ndim(case.values[1]) == 1])
@each_engine
def test_the_one_cotangent_and_chunked_paths_agree(engine, f, x):
    forward = cr.jacobian(f, x, mode="forward")
    y, back = ENGINES[engine](f, x)
    check_close(api._reverse_jacobian(x, y, lambda dy: back(dy)), forward)  # (no batched flag: one at a time)
    for chunk_size in (1, 2):
        check_close(cr.jacobian(f, x, mode="reverse", engine=engine, chunk_size=chunk_size), forward)


@each_engine
def test_structured_outputs_and_inputs_with_complex_leaves(engine):
    def pair_out(z):
        return z * z, np.abs(z) ** 2, {"e": np.exp(1j * np.real(z))}

    def pair_in(t):
        z, x = t
        return np.conj(z) * z * x + z * z + 1j * x

    for f, x in ((pair_out, Z), (pair_in, (Z, X)), (lambda d: np.abs(d["a"]) ** 2 * d["b"], {"a": z0, "b": x0})):
        forward = cr.jacobian(f, x, mode="forward", engine=engine)
        reverse = cr.jacobian(f, x, mode="reverse", engine=engine)
        got, want = _blocks(reverse), _blocks(forward)
        assert len(got) == len(want) > 1
        for a, b in zip(got, want):
            check_close(a, b)
            assert a.dtype == b.dtype
    blocks = cr.jacobian(pair_in, (Z, X), mode="reverse", engine=engine)
    check_close(blocks[0], fd_jacobian(lambda z: pair_in((z, X)), Z), fd_like=True)
    check_close(blocks[1], fd_jacobian(lambda x: pair_in((Z, x)), X), fd_like=True)


def _blocks(t) -> list:
    """The arrays of a (nested) ``Tangent`` Jacobian, in order."""
    if isinstance(t, cr.Tangent):
        backing = t.backing
        return [a for v in (backing.values() if isinstance(backing, dict) else backing) for a in _blocks(v)]
    return [np.asarray(t)]


NESTED = {
    "z**3": (lambda z: z * z * z, Z[:2]),
    "conj(z)*z*z+z": (lambda z: np.conj(z) * z * z + z, Z[:2]),
    "one input, three outputs": (lambda z: np.stack([z * z, np.conj(z) * z, np.exp(z)]).reshape(-1), Z[:1]),
    "exp(1jx)*x": (lambda x: np.exp(1j * x) * x, X[:2]),
    "abs(z)**2*real(z)": (lambda z: np.abs(z) ** 2 * np.real(z), Z[:2]),
}


@pytest.mark.parametrize("f, x", [pytest.param(*v, id=k) for k, v in NESTED.items()])
@pytest.mark.parametrize("inner", ["forward", "reverse"])
@pytest.mark.parametrize("outer", ["forward", "reverse"])
@each_engine
def test_the_jacobian_of_a_jacobian(engine, outer, inner, f, x):
    """The outer derivative meets the inner one at an engine's values (reverse mode's stacked rows)
    or through the rule of ``jacobian`` (its pullback's Hessian-vector products)."""
    H = cr.jacobian(lambda v: cr.jacobian(f, v, mode=inner, engine=engine), x, mode=outer, engine=engine)
    expected = fd_jacobian(lambda v: cr.jacobian(f, v, mode="forward"), x)
    check_close(H, expected, fd_like=True)


@each_engine
def test_real_jacobians_and_hessians_are_unchanged(engine):
    W, b = np.array([[1.0, 2.0, 0.5], [3.0, -4.0, 1.0]]), np.array([0.5, -1.0])
    J = cr.jacobian(lambda x: (W @ x + b) ** 2, X, mode="reverse", engine=engine)
    assert J.dtype == np.float64
    np.testing.assert_allclose(J, 2 * (W @ X + b)[:, None] * W, rtol=1e-14)
    H = cr.hessian(lambda x: np.sum(np.sin(x) * x**2), X, engine=engine)
    assert H.dtype == np.float64
    np.testing.assert_allclose(H, np.diag(2 * np.sin(X) + 4 * X * np.cos(X) - X**2 * np.sin(X)), rtol=1e-12)
