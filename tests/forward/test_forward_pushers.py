"""Each operation's pusher (chosen once per callable and argument types) gives what the rule itself
gives, run as it is and fitted and wrapped by the general code; structured products and the
cache of callables without a rule agree with what they stand for."""

from __future__ import annotations

import gc
import operator
import weakref

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import BasisSeed, Thunk, ZeroTangent, basis_seed
from chainrules.core.basis import structured_matmul
from chainrules.forward import Dual, Tag, call
from chainrules.forward.dual import _DUALS, _fit, _wrap, pusher_for

NO = cr.NoTangent()


def reference(f, args):
    """``f(*args)`` pushed forward by its frule called directly (once per batch element for a rule
    without the batched flag), its tangent fitted and wrapped by the general code."""
    tag = max((a.tag for a in args if type(a) in _DUALS), key=lambda t: t.order)
    primals = [a.primal if type(a) in _DUALS and a.tag is tag else a for a in args]
    tangents = [a.partials if type(a) in _DUALS and a.tag is tag else ZeroTangent() for a in args]
    rule = cr.frule.lookup(f, primals)
    if tag.batch is None or rule.batched:
        y, dy = rule((NO, *tangents), *primals)
    else:
        parts = []
        for k in range(tag.batch):
            y, d = rule((NO, *(t if isinstance(t, ZeroTangent) else cr.unthunk(t)[k] for t in tangents)), *primals)
            parts.append(_fit(f, y, d, None))
        dy = np.stack([np.zeros(np.shape(y)) if isinstance(d, ZeroTangent) else d for d in parts])
    return _wrap(y, _fit(f, y, dy, tag.batch), tag)


def assert_same(got, want):
    """The same value, bit for bit: type, tag, dtype, shape and numbers, nested duals included."""
    assert type(got) is type(want)
    if type(got) in _DUALS:
        assert got.tag is want.tag
        assert_same(got.primal, want.primal)
        assert_same(cr.unthunk(got.partials), cr.unthunk(want.partials))
        return
    assert np.shape(got) == np.shape(want) and np.result_type(got) == np.result_type(want)
    np.testing.assert_array_equal(got, want)


def _tangent(kind: str, x: np.ndarray, batch: int | None, rng):
    shape = x.shape if batch is None else (batch, *x.shape)
    if kind == "zero":
        return ZeroTangent()
    if kind == "seed":
        return basis_seed(batch, x.shape, 0, x.dtype)
    values = (rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if x.dtype.kind == "c" else 0)).astype(
        x.dtype
    )
    return Thunk(lambda: values) if kind == "thunk" else values


UNARY = [np.square, np.sin, np.exp, np.negative, np.sum]
BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.matmul]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize(  # a seed is a batch of tangents: it has no unbatched case
    "kind, batch", [(k, b) for k in ["array", "seed", "thunk", "zero"] for b in [None, 3] if (k, b) != ("seed", None)]
)
@pytest.mark.parametrize("f", UNARY + BINARY, ids=lambda f: f.__name__)
def test_an_operation_gives_what_its_rule_gives(f, kind, batch, dtype):
    rng = np.random.default_rng(0)
    x = (rng.uniform(0.5, 2.0, 3) + (1j if np.dtype(dtype).kind == "c" else 0)).astype(dtype)
    tag = Tag(batch)
    a = Dual(x, _tangent(kind, x, batch, rng), tag)
    if f in UNARY:
        cases = [(a,)]
    else:
        W = rng.uniform(0.5, 2.0, (3, 3)).astype(dtype)
        b = Dual(x[::-1].copy(), _tangent("array", x, batch, rng), tag)
        cases = [(a, x[::-1].copy()), (x[::-1].copy(), a), (a, b), (W, a)] if f is np.matmul else [(a, x[::-1]), (a, b)]
        cases += [(a, 2.0)] if f is not np.matmul else []
    for args in cases:
        assert_same(call(f, args), reference(f, args))


@pytest.mark.parametrize("batch", [None, 2])
def test_an_operation_on_nested_duals_gives_what_its_rule_gives(batch):
    outer, inner = Tag(), Tag(batch)
    x = Dual(np.array([0.5, 1.5]), np.array([1.0, -1.0]), outer)
    shape = (2,) if batch is None else (batch, 2)
    a = Dual(x, np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), inner)
    for f, args in [(np.multiply, (a, x)), (np.square, (a,)), (np.matmul, (np.eye(2) * 3.0, a)), (np.add, (x, a))]:
        got, want = call(f, args), reference(f, args)
        assert got.tag is inner and got.primal.tag is outer
        assert_same(got, want)


def test_operators_on_dual_arrays_are_the_numpy_ufuncs():
    tag = Tag(2)
    x = Dual(np.array([1.0, 2.0]), np.array([[1.0, 0.0], [0.0, 1.0]]), tag)
    c = np.array([3.0, -1.0])
    for op, ufunc in [
        (operator.add, np.add),
        (operator.sub, np.subtract),
        (operator.mul, np.multiply),
        (operator.truediv, np.true_divide),
    ]:
        for args in [(x, c), (c, x), (x, x), (x, 2.0), (2.0, x)]:
            assert_same(op(*args), call(ufunc, args))
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert_same(W @ x, call(np.matmul, (W, x)))
    assert_same(x @ W, call(np.matmul, (x, W)))


def test_python_number_duals_keep_the_operator_rules():
    x = Dual(3.0, 1.0, Tag())
    assert_same(x * x + 2.0, reference(operator.add, (reference(operator.mul, (x, x)), 2.0)))
    y = Dual(np.float32(3.0), np.float32(1.0), Tag())
    assert (y * y).partials.dtype == np.float32


# ----- structured products: what np.matmul gives through NumPy's dispatch ---------------------------


def _plain(a):
    return a.view(np.ndarray) if isinstance(a, BasisSeed) else a


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: (basis_seed(4, (4,), 0, np.float64), rng.standard_normal((4, 3))),
        lambda rng: (basis_seed(3, (5,), 1, np.float64), rng.standard_normal(5)),  # rows 1..3 of a vector
        lambda rng: (basis_seed(3, (4,), 2, np.float64), rng.standard_normal((4, 2))),  # a row past the end
        lambda rng: (basis_seed(3, (3,), 0, np.float32), rng.standard_normal((3, 2))),  # float32 by float64
        lambda rng: (basis_seed(3, (3,), 0, np.float64), rng.standard_normal((3, 2)) * 1j),  # complex
        lambda rng: (basis_seed(3, (3,), 0, np.float64) * np.array([2.0, -1.0, 0.5]), rng.standard_normal((3, 2))),
        lambda rng: (basis_seed(4, (2, 2), 0, np.float64), rng.standard_normal((2, 3))),  # a matrix's units
        lambda rng: (rng.standard_normal((3, 2)), basis_seed(4, (2, 2), 0, np.float64)),  # matrix @ block
        lambda rng: (basis_seed(2, (2,), 0, np.float64), basis_seed(2, (2,), 0, np.float64)),  # no structured rule
        lambda rng: (rng.standard_normal((2, 3)), rng.standard_normal((3, 2))),  # plain arrays
    ],
)
def test_structured_matmul_is_numpy_s_matmul(make):
    a, b = make(np.random.default_rng(1))
    got = structured_matmul(a, b)
    dispatched = np.matmul(a, b)  # through BasisSeed.__array_ufunc__
    dense = np.matmul(_plain(a), _plain(b))  # the dense product
    assert type(got) is type(dispatched) and got.dtype == dispatched.dtype == dense.dtype
    np.testing.assert_array_equal(got, dispatched)
    np.testing.assert_allclose(got, dense, rtol=1e-6)
    if isinstance(got, np.ndarray) and (np.shares_memory(got, _plain(a)) or np.shares_memory(got, _plain(b))):
        assert not got.flags.writeable  # a selection from an operand: nobody may write through it


# ----- callables without a rule: remembered weakly, by identity ------------------------------------


def test_a_callable_without_a_rule_is_remembered_weakly_and_by_identity():
    x = np.ones(2)

    def make():
        return lambda v: v * 2.0

    f = make()
    assert pusher_for(f, [x]) is None and pusher_for(f, [x]) is None
    gone = weakref.ref(f)
    del f
    gc.collect()
    assert gone() is None  # the cache does not keep a function made for one call alive
    for _ in range(20):  # later functions (some at the address of the dead one) with rules are found
        g = make()

        @cr.frule.register(g)
        def frule_g(tangents, v):
            return 3.0 * v, 3.0 * tangents[1]

        assert pusher_for(g, [x])[1] is frule_g
        np.testing.assert_array_equal(cr.jacobian(g, x, mode="forward"), 3.0 * np.eye(2))


def test_a_rule_registered_after_a_lookup_without_one_is_used():
    def h(v):
        return v * 2.0

    x = np.ones(2)
    np.testing.assert_array_equal(cr.jacobian(h, x, mode="forward"), 2.0 * np.eye(2))  # its body, run on duals

    @cr.frule.register(h, batched=True)
    def frule_h(tangents, v):
        return v * 2.0, 5.0 * tangents[1]  # a deliberately different derivative: shows which one ran

    np.testing.assert_array_equal(cr.jacobian(h, x, mode="forward"), 5.0 * np.eye(2))


@pytest.mark.parametrize("batch", [None, 2])
def test_keywords_send_an_elementwise_call_to_its_rule(batch):
    # the partials are for positional arguments alone: with keywords the rule itself runs
    x = np.array([1.0, 2.0])
    t = np.eye(2) if batch else np.array([1.0, -1.0])
    d = Dual(x, t, Tag(batch))
    assert pusher_for(np.add, [x, x])[0].__name__ == "_by_partials"
    y = np.add(d, x, dtype=np.float32)
    assert y.primal.dtype == y.partials.dtype == np.float32
    np.testing.assert_array_equal(y.partials, t)
    z = np.multiply(d, 3.0, casting="same_kind")
    np.testing.assert_array_equal(z.partials, 3.0 * t)
    assert_same(z, call(np.multiply, (d, 3.0)))
