"""jvp, derivative and jacobian by forward mode: the seed examples, chunks, structures, dtypes, nesting."""

import collections
import dataclasses

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward


def fd_jacobian_shaped(f, x):
    """The finite-difference Jacobian of f at x, shaped out.shape + x.shape."""
    return crt.fd_jacobian(f, x).reshape(np.shape(f(x)) + np.shape(x))


def babysqrt(x, t=None, n=10):
    """Seed 003's recursive Babylonian square root."""
    t = (1 + x) / 2 if t is None else t
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


# ----- the seed examples -----------------------------------------------------------------------


def test_babysqrt_derivative_is_the_analytic_one():
    for x in np.linspace(0.1, 2.0, 40)[1:]:
        assert cr.derivative(babysqrt, float(x)) == pytest.approx(1 / (2 * np.sqrt(x)), rel=0, abs=1e-8)


def test_babysqrt_value_is_carried_along():
    y, dy = cr.jvp(babysqrt, (2.0,), (3.0,))
    assert y == pytest.approx(np.sqrt(2.0))
    assert dy == pytest.approx(3 / (2 * np.sqrt(2.0)))


@pytest.mark.parametrize("n, m", [(10, 10), (10, 40), (40, 10), (1, 5), (5, 1)])
def test_seed_jacobian_of_affine_square(n, m):
    rng = np.random.default_rng(n * 100 + m)
    W, b, x = rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(n)
    J = cr.jacobian(lambda x: (W @ x + b) ** 2, x, mode="forward")
    np.testing.assert_allclose(J, 2 * (W @ x + b)[:, None] * W, rtol=1e-12, atol=1e-12)
    assert J.flags.writeable and J.shape == (m, n)


def test_jacobian_does_not_alias_the_users_arrays():
    W = np.arange(6.0).reshape(3, 2)
    J = forward.jacobian(lambda x: W @ x, np.ones(2))
    np.testing.assert_array_equal(J, W)
    J[0, 0] = 100.0
    assert W[0, 0] == 0.0


# ----- chunks ----------------------------------------------------------------------------------


def test_automatic_chunk_size_rule():
    assert forward.chunk_size_for(1) == 1
    assert forward.chunk_size_for(1000) == 1000
    assert forward.chunk_size_for(2048) == 2048  # 2048**2 == 2**22
    big = 5000  # 2**22 // 5000 = 838 per pass at most, 6 passes, evened out to 834
    assert forward.chunk_size_for(big) == 834
    assert forward.chunk_size_for(big) * forward.SEED_BUDGET // forward.SEED_BUDGET <= forward.SEED_BUDGET // big


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 12, None])
def test_every_chunk_size_gives_the_same_jacobian(chunk):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 3, 12))
    x = rng.standard_normal((3, 4))

    def f(x):
        return np.tanh(A @ x.reshape(12)) * np.sum(x**2)

    J = forward.jacobian(f, x, chunk_size=chunk)
    assert J.shape == (4, 3, 3, 4)
    np.testing.assert_allclose(J, fd_jacobian_shaped(f, x), rtol=1e-7, atol=1e-9)


def test_passes_are_counted_by_chunks():
    calls = []

    def f(x):
        calls.append(x.partials.shape[0])
        return x * 2.0

    forward.jacobian(f, np.ones(10), chunk_size=4)
    assert calls == [4, 4, 2]


def test_a_bad_chunk_size_is_refused():
    with pytest.raises(ValueError, match="chunk_size"):
        forward.jacobian(np.sin, np.ones(3), chunk_size=0)


# ----- numbers, shapes and dtypes ------------------------------------------------------------------


def test_scalar_in_scalar_out():
    assert forward.jacobian(lambda x: x**3, 2.0) == pytest.approx(12.0)
    assert cr.derivative(lambda x: x**3, 2.0) == 12.0


def test_scalar_input_array_output():
    J = forward.jacobian(lambda t: np.array([1.0, 2.0, 3.0]) * t**2, 3.0)
    np.testing.assert_allclose(J, [6.0, 12.0, 18.0])


def test_matrix_input_has_shape_out_plus_in():
    x = np.arange(6.0).reshape(2, 3) / 10
    J = forward.jacobian(lambda x: np.sin(x).T, x)
    assert J.shape == (3, 2, 2, 3)
    np.testing.assert_allclose(J, fd_jacobian_shaped(lambda x: np.sin(x).T, x), atol=1e-9)


def test_integer_input_gets_a_float_derivative():
    assert cr.derivative(lambda x: x * x, 3) == 6.0
    J = forward.jacobian(lambda x: x * 1.5, np.array([1, 2]))
    assert J.dtype == np.float64
    np.testing.assert_array_equal(J, 1.5 * np.eye(2))


@pytest.mark.parametrize(
    "f",
    [lambda x: x * x, lambda x: np.sum(x * x) + x[::-1], lambda x: x @ x * -x, lambda x: np.cumsum(x) ** 2],
    ids=["square", "sum-reversed", "matmul-neg", "cumsum-pow"],
)
def test_integer_array_results_keep_their_float_tangent(f):
    # integer arithmetic on an integer input gives integer results, which still carry a float
    # tangent, as reverse mode gives their inputs float cotangents
    x = np.array([3, 1, 4, 2])
    J = forward.jacobian(f, x)
    np.testing.assert_allclose(J, cr.jacobian(f, x, mode="reverse", engine="tape"))
    assert J.dtype == np.float64 and np.any(J != 0)
    t = np.array([0.5, -1.0, 2.0, 1.5])
    y, dy = cr.jvp(f, (x,), (t,))
    np.testing.assert_array_equal(y, f(x))
    np.testing.assert_allclose(dy, J @ t)
    assert cr.derivative(lambda n: n * n * 3, np.int64(2)) == 12.0


def test_float32_is_preserved():
    x = np.array([0.5, 1.5], dtype=np.float32)
    y, dy = cr.jvp(lambda x: np.sin(x) * x, (x,), (np.ones(2, dtype=np.float32),))
    assert y.dtype == np.float32 and dy.dtype == np.float32
    J = forward.jacobian(lambda x: np.exp(x) * 2.0 + x, x)
    assert J.dtype == np.float32
    np.testing.assert_allclose(J, np.diag(np.exp(x) * 2 + 1), rtol=1e-6)
    d = cr.derivative(lambda t: t * t, np.float32(3.0))
    assert np.asarray(d).dtype == np.float32


def test_complex_inputs():
    assert cr.derivative(lambda z: z**2, 1 + 2j) == 2 + 4j
    assert cr.derivative(np.exp, 1 + 2j) == pytest.approx(np.exp(1 + 2j))
    # a real function of a complex input: |z|^2 along the real direction is 2 Re z
    y, dy = cr.jvp(lambda z: np.abs(z) ** 2, (np.array([1 + 2j]),), (np.array([1 + 0j]),))
    np.testing.assert_allclose(dy, [2.0])
    assert not np.iscomplexobj(dy)


def test_an_input_that_does_not_matter_gets_zero():
    y, dy = cr.jvp(lambda x: 5.0, (1.0,), (1.0,))
    assert (y, dy) == (5.0, cr.ZeroTangent())
    np.testing.assert_array_equal(forward.jacobian(lambda x: np.ones(3), np.ones(2)), np.zeros((3, 2)))


def test_a_jacobian_of_something_that_is_not_a_value_is_refused():
    with pytest.raises(TypeError, match="returned a NoTangent"):
        forward.jacobian(lambda x: cr.NoTangent(), np.ones(2))
    with pytest.raises(TypeError, match="returned a str"):
        forward.jacobian(lambda x: "label", np.ones(2))


def test_an_empty_input():
    J = forward.jacobian(lambda x: np.ones(2) * np.sum(x), np.zeros(0))
    assert J.shape == (2, 0)


def test_jvp_with_several_arguments_and_a_zero_tangent():
    y, dy = cr.jvp(lambda a, b: a * np.sin(b), (2.0, 0.5), (1.0, cr.ZeroTangent()))
    assert dy == pytest.approx(np.sin(0.5))


def test_tangent_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="shape"):
        cr.jvp(np.sin, (np.ones(3),), (np.ones(2),))


# ----- structures in and out ---------------------------------------------------------------------


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    name: str = "layer"


Pair = collections.namedtuple("Pair", ["first", "second"])


def test_jvp_with_a_dataclass_input_and_tuple_output():
    layer = Layer(np.array([1.0, 2.0]), 0.5)

    def f(layer, x):
        z = layer.w * x + layer.b
        return z, np.sum(z)

    t = cr.Tangent[Layer](w=np.array([1.0, 0.0]), b=1.0)
    (z, s), dy = cr.jvp(f, (layer, 3.0), (t, 0.0))
    np.testing.assert_allclose(z, [3.5, 6.5])
    assert isinstance(dy, cr.Tangent)
    np.testing.assert_allclose(dy[0], [4.0, 1.0])
    assert dy[1] == pytest.approx(5.0)
    assert layer.w[0] == 1.0 and layer.b == 0.5  # the input is not changed


def test_jvp_with_a_structured_output():
    def f(x):
        return Layer(x * 2.0, 3.0, "out"), {"s": np.sum(x)}, Pair(x, 1.0)

    (layer, d, pair), dy = cr.jvp(f, (np.ones(2),), (np.array([1.0, 2.0]),))
    assert layer.name == "out"
    np.testing.assert_allclose(dy[0].w, [2.0, 4.0])
    assert dy[0].b == cr.ZeroTangent()
    assert dy[1]["s"] == pytest.approx(3.0)
    np.testing.assert_allclose(dy[2].first, [1.0, 2.0])


def test_jvp_with_plain_tuple_tangents_for_tuple_inputs():
    y, dy = cr.jvp(lambda p: p[0] * p[1], ((2.0, 3.0),), ((1.0, 1.0),))
    assert (y, dy) == (6.0, 5.0)


def test_jacobian_of_structured_input_and_output():
    def f(p):
        return p.first * p.second, np.sum(p.first)

    p = Pair(np.array([1.0, 2.0]), 3.0)
    J = forward.jacobian(f, p, chunk_size=2)
    np.testing.assert_allclose(J[0].first, 3.0 * np.eye(2))
    np.testing.assert_allclose(J[0].second, [1.0, 2.0])
    np.testing.assert_allclose(J[1].first, [1.0, 1.0])
    assert J[1].second == pytest.approx(0.0)


def test_jacobian_leaves_integers_inside_structures_alone():
    def f(layer):
        return layer.w * layer.b

    J = forward.jacobian(f, Layer(np.array([1.0, 2.0]), 2.0, "x"))
    np.testing.assert_allclose(J.w, 2.0 * np.eye(2))
    np.testing.assert_allclose(J.b, [1.0, 2.0])

    counted = {"w": np.array([1.0, 2.0]), "n": 3}
    J = forward.jacobian(lambda d: d["w"] * d["n"], counted)
    np.testing.assert_allclose(J["w"], 3.0 * np.eye(2))
    assert J["n"] == cr.NoTangent()


# ----- nested derivatives: tags keep perturbations apart ---------------------------------------------


def test_perturbation_confusion():
    # D(x -> x * D(y -> x + y)(1))(1) == 1; confusing the two perturbations gives 2
    assert cr.derivative(lambda x: x * cr.derivative(lambda y: x + y, 1.0), 1.0) == 1.0


def test_second_and_third_derivatives_by_nesting():
    def d(f):
        return lambda x: cr.derivative(f, x)

    f = lambda x: x**4 + np.sin(x)  # noqa: E731
    assert d(d(f))(0.7) == pytest.approx(12 * 0.7**2 - np.sin(0.7))
    assert d(d(d(f)))(0.7) == pytest.approx(24 * 0.7 - np.cos(0.7))


def test_nested_closure_over_the_outer_variable():
    # d/dx [ d/dy (x * y**2) at y=x ] = d/dx [2 x^2] = 4x
    assert cr.derivative(lambda x: cr.derivative(lambda y: x * y**2, x), 3.0) == pytest.approx(12.0)


def test_jacobian_inside_a_derivative():
    def g(a):
        J = forward.jacobian(lambda v: a * v**2, np.array([1.0, 2.0]))
        return np.sum(J)

    # J = diag(2 a v), sum = 2a(1 + 2) = 6a
    assert cr.derivative(g, 0.5) == pytest.approx(6.0)


def test_derivative_of_a_function_of_a_jacobian_hessian_by_forward_over_forward():
    def grad(x):
        return forward.jacobian(lambda z: np.sum(z**3), x)

    H = forward.jacobian(grad, np.array([1.0, 2.0]))
    np.testing.assert_allclose(H, np.diag([6.0, 12.0]))


# the entry points of forward mode, each keeping the dual (or dual array) its function was given
KEEPING = {
    "derivative": lambda kept, t: cr.derivative(lambda s: kept.append(s) or s * t, 1.0),
    "jvp": lambda kept, t: cr.jvp(lambda s: kept.append(s) or s * t, (1.0,), (1.0,)),
    "jacobian": lambda kept, t: cr.jacobian(lambda v: kept.append(v[0]) or v * t, np.ones(2), mode="forward"),
    "chunked jacobian": lambda kept, t: cr.jacobian(
        lambda v: kept.append(v) or v * t, np.ones(2), mode="forward", chunk_size=1
    ),
}
USING = {
    "call": lambda u: u(1.5),
    "derivative": lambda u: cr.derivative(u, 1.5),
    "source gradient": lambda u: cr.gradient(u, 1.5, engine="source"),
    "tape gradient": lambda u: cr.gradient(u, 1.5, engine="tape"),
}


@pytest.mark.parametrize("use", USING)
@pytest.mark.parametrize("entry", KEEPING)
def test_a_dual_kept_past_its_differentiation_is_refused_where_it_is_used(entry, use):
    """A dual stored by the function (in a list, a global) outlives its differentiation: used after it,
    it would take precedence over an outer differentiation's duals (a zero derivative of u, whose
    derivative is 1) or be returned by a plain call. It raises, as the tape's values do."""
    kept = []

    def u(t):
        KEEPING[entry](kept, t)
        return np.sum(kept[-1] + t)

    with pytest.raises(cr.EscapedValueError, match="escaped its function") as info:
        USING[use](u)
    assert f"{__file__}:" in str(info.value)


@pytest.mark.parametrize(
    "use", [float, lambda d: d > 0.0, lambda d: d == 1.0, bool, lambda d: np.sin(d), lambda d: d.primal * d]
)
def test_conversions_and_comparisons_of_an_escaped_dual_raise(use):
    kept = []
    cr.derivative(lambda s: kept.append(s) or s * s, 2.0)
    with pytest.raises(cr.EscapedValueError, match="outlived cr.derivative"):
        use(kept[0])


def test_outer_duals_kept_during_an_inner_differentiation_stay_usable():
    """The outer differentiation's values made inside an inner one, and the inner one's result, are
    the outer one's to use after the inner one returns."""

    def g(x):
        kept = []
        inner = cr.derivative(lambda s: kept.append(3.0 * x) or s * x**2, 1.0)  # x**2
        return inner + kept[0] * x  # x**2 + 3 x**2

    assert cr.derivative(g, 0.7) == pytest.approx(crt.fd_jacobian(g, 0.7).item())
    assert cr.derivative(g, 0.7) == pytest.approx(8 * 0.7)


def test_a_number_meeting_an_integer_array_has_a_tangent_of_the_arrays_shape():
    """t - ints is an array whose tangent is the number's, spread over it (a sum then counts each entry)."""
    ints = np.array([1, 2, 3])
    assert cr.derivative(lambda t: np.sum(t - ints), 0.8) == 3.0
    assert cr.derivative(lambda t: np.sum(ints + t), 0.8) == 3.0
    np.testing.assert_array_equal(cr.jacobian(lambda t: t - ints, 0.8, mode="forward"), [1.0, 1.0, 1.0])


def _overwritten_copy(x):
    b = x.copy()
    b[0] = 5  # written over: the entry no longer depends on x[0]
    return b * x[2]


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_a_copy_of_an_integer_input_written_over_in_every_engine(dtype):
    """An integer array truncates what it stores, so a write carries no derivative, and the entries
    it replaced pass none back either (forward mode and the source engine had kept them)."""
    x = np.array([1, 2, 3], dtype=dtype)
    expected = np.array([[0.0, 0.0, 5.0], [0.0, x[2], x[1]], [0.0, 0.0, 2.0 * x[2]]])
    for J in (
        cr.jacobian(_overwritten_copy, x, mode="forward"),
        cr.jacobian(_overwritten_copy, x, mode="reverse"),
        cr.jacobian(_overwritten_copy, x, mode="reverse", engine="tape"),
    ):
        np.testing.assert_allclose(J, expected, rtol=1e-14)
    np.testing.assert_allclose(cr.gradient(lambda x: np.sum(_overwritten_copy(x)), x)[0], expected.sum(axis=0))


# ----- lists of numbers holding duals, given to NumPy functions -----------------------------------


LISTS_OF_NUMBERS = {
    "dot": lambda x: np.dot(x, [x[0], 1.0, 2.0]),
    "matmul": lambda x: np.matmul([[x[1], 1.0], [0.5, x[2]]], x[:2]),
    "outer": lambda x: np.outer(x, [x[0], 1.0]),
    "kron": lambda x: np.kron(x, [x[0], 1.0]),
    "cross": lambda x: np.cross(x, [x[0], 1.0, 2.0]),
    "tensordot": lambda x: np.tensordot(x, [x[0], 1.0, 2.0], 1),
    "einsum": lambda x: np.einsum("i,i->i", x, [x[0], 1.0, 2.0]),
    "solve": lambda x: np.linalg.solve(np.diag(x + 3), [x[0], 1.0, 2.0]),
    "diff prepend": lambda x: np.diff(x, prepend=[x[0], 0.3]),
    "average weights": lambda x: np.average(x, weights=[x[0] ** 2, 1.0, 1.0]),
    "cov aweights": lambda x: np.cov(np.stack([x, x**2]), aweights=[x[0] ** 2, 1.0, 1.0]),
    "trapezoid points": lambda x: np.trapezoid(x**2, x=[0.0, 1.0 + x[0] ** 2, 3.0]),
    "ufunc": lambda x: np.add(x, [x[0], 1.0, 2.0]) * np.hypot(x, [[x[1]], [2.0]]),
}


@pytest.mark.parametrize("name", LISTS_OF_NUMBERS)
def test_lists_of_numbers_holding_duals(name):
    """A list of numbers some of which carry derivatives, given to a NumPy function after an array
    (``np.dot(x, [x[0], 1.0, 2.0])``), reaches its rule as the array NumPy makes of it, with an array
    tangent: the rules had been given the list's tangent as a structure, and failed on it (a ValueError)."""
    f, x = LISTS_OF_NUMBERS[name], np.array([0.3, 1.7, -0.4])
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), fd_jacobian_shaped(f, x), rtol=1e-7, atol=1e-9)
