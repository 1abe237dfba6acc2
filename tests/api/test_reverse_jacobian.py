"""Reverse-mode Jacobians: one batched pullback of a block of unit cotangents where every rule takes a
batch, the loop of one pullback per output where one does not; both agree with each other and with
finite differences, on both reverse engines."""

import dataclasses
import math
import tracemalloc

import numpy as np
import pytest
import scipy.linalg
from _jacobians import ENGINES, check_batched, each_engine, fd_jacobian, loop_jacobian

import chainrules as cr
from chainrules import api, forward
from chainrules.core import BasisSeed, basis_seed
from chainrules.reverse import source, trace

RNG = np.random.default_rng(3)
W = RNG.standard_normal((5, 4))
b = RNG.standard_normal(5)
W2 = RNG.standard_normal((3, 5))


def seed_function(x):
    return (W @ x + b) ** 2


def two_layers(x):
    return np.tanh(W2 @ np.tanh(W @ x + b)) * 2.0 - x[:3]


def reductions_and_shapes(x):
    m = x.reshape(2, 2)
    return np.sum(m.T * m, axis=0) + np.mean(x) - x[1:3] / (1.0 + x[:1] ** 2)


def matrix_in_matrix_out(X):
    return X @ X.T + np.einsum("ij,ij->i", X, X)[:, None]


def scalar_in(t):
    return np.sin(t * np.arange(1.0, 4.0)) * t**2


def closure_of(Wc, bc):
    def closure(x):
        return (Wc @ x + bc) ** 2

    return closure


def indexed(x):
    return x * x[0] - x[-1]  # x[0] is written out by the source engine: a batch is added at [:, 0]


def float64_scalars(x):
    s = x[0] * x[1] + x[2] / x[0] - x[1]  # np.float64 operands: the operators' scalar fast paths
    return x * s - (x[2] - x[0] * 0.5)


def rows_of(X):
    total = X[0] * 0.0
    for i in range(X.shape[0]):
        total = total + X[i] * X[i - 1]  # rows read in a loop
    return total


def helper(v):
    return v * v


def through_a_helper_with_a_loop(x):
    total = x * 0.0
    for k in range(3):
        total = total + helper(x) * k
    return total


def while_and_constant_loops(x):
    y = x
    k = 0
    while k < 3:
        y = np.sin(y) + x
        k += 1
    for c in (1.0, 2.0):  # a loop over constants
        y = y * c
    return y


def through_structures(x):
    pair = (x * 2.0, x + 1.0)
    first, second = pair
    return first * second


def through_a_scalar_pair(x):
    pair = (x[0] * 2.0, x[1])
    a, b = pair
    return x * a + b


def unpacks_an_array(x):
    a, b, c = x  # a batch of the rows' cotangents goes to [:, i]
    return np.sin(x) * a + b * c


def softmax(z, axis=-1):
    e = np.exp(z - np.mean(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def scaled(v, k):
    return v * k + k  # an integer argument used arithmetically: a float cotangent


def integer_arguments(x, ax=0):
    total = softmax(W @ x) * x.sum(axis=ax, keepdims=True)  # a method with a variable keyword
    for k in range(1, 3):
        total = total + scaled(total, k)
    return total


def written_buffer(x):
    out = np.zeros(x.shape[0] + 1)
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i]) * x[0]  # numbers written into a fresh array
    out[-1] = 2.0 * x[1]
    out[1:3] += x[:2]
    return out


def written_rows(X):
    out = np.zeros((3, 4))
    out[0] = X[0] * 2.0
    out[1, :] = 1.5
    out[2] = np.sum(X * X)  # a number broadcast into a row
    return out * X


def windows(x):
    total = x[:2] * 0.0
    pick = np.array([0, 2])
    for i in range(x.shape[0] - 1):
        total = total + x[i : i + 2] * x[pick]  # x[pick] is read again in the reverse pass
    return total


def over_rows(X):
    total = X[0] * 0.0
    for row in X:  # rows of an array: a batch of their cotangents goes to [:, i]
        if row[0] < 5.0:
            total = total + np.sin(row) * row[1]
    for piece in [X[0] * 2.0, X[1] + 1.0]:  # items of a list
        total = total + piece * piece
    return total


def over_enumerate(x):
    total = x * 0.0
    for i, v in enumerate(x):  # enumerate's pullback hands a batch of the items' cotangents on
        total = total + v * i
    return total


def entries_of_containers(x):
    slots = [x * 0.0, x * 1.0, x * 2.0]
    table = {"even": x[0], "odd": x[1]}
    for i in range(4):
        slots[i % 3] = slots[i % 3] + np.sin(x) * table["even" if i % 2 == 0 else "odd"]
    return slots[0] * slots[2] + slots[1]


@dataclasses.dataclass
class Affine:
    w: np.ndarray
    b: float

    def apply(self, x):
        return self.w * x + self.b


AFFINE = Affine(RNG.standard_normal(3), 0.5)


def product_of(*xs, scale=1.0):
    return xs[0] * xs[1] * scale


def through_objects(x):
    layer = Affine(x * 2.0, 1.5)  # a dataclass made, its fields read, its method called
    return layer.apply(x) + AFFINE.apply(x) * product_of(x, np.cos(x), scale=2.0)


S3, T3 = np.diag([1.0, 2.0, 3.0]), np.ones((3, 3))


def through_named_results(x):
    w, v = np.linalg.eigh(S3 + x[0] * T3 + x[1] * np.eye(3))  # namedtuple results, unpacked and indexed
    return w * np.linalg.slogdet(S3 + x[2] * T3)[1]


FULLY_BATCHED = [
    (seed_function, RNG.standard_normal(4)),
    (two_layers, RNG.standard_normal(4)),
    (reductions_and_shapes, RNG.standard_normal(4)),
    (matrix_in_matrix_out, RNG.standard_normal((3, 2))),
    (closure_of(W, b), RNG.standard_normal(4)),
    (indexed, RNG.standard_normal(3)),
    (float64_scalars, RNG.standard_normal(3)),
    (rows_of, RNG.standard_normal((3, 4))),
    (through_a_helper_with_a_loop, RNG.standard_normal(3)),
    (while_and_constant_loops, RNG.standard_normal(3)),
    (through_structures, RNG.standard_normal(3)),
    (through_a_scalar_pair, RNG.standard_normal(3)),
    (integer_arguments, RNG.standard_normal(4)),
    (windows, RNG.standard_normal(4)),
    (over_rows, RNG.standard_normal((3, 4))),
    (unpacks_an_array, RNG.standard_normal(3)),
    (over_enumerate, RNG.standard_normal(3)),
    (entries_of_containers, RNG.standard_normal(3)),
    (through_objects, RNG.standard_normal(3)),
    (through_named_results, np.array([0.1, 0.2, 0.3])),
]


def scalar_code(x):
    a, b, c = x  # np.float64 entries through the math module and the number built-ins
    s = math.sin(a) * math.log(b) + math.pow(b, 1.5) - max(a, c) + float(c) * math.hypot(a, b)
    return np.array([s, math.cos(a * b), min(b, c) * s])


# writes into an array the function made, the math module: the source engine's (the tape refuses
# them, as documented)
SOURCE_BATCHED = [
    (scalar_code, np.array([0.3, 1.7, 0.9])),
    (written_buffer, RNG.standard_normal(3)),
    (written_rows, RNG.standard_normal((3, 4))),
]


class _Axis(int):
    """An axis NumPy reads as the int it is; ``np.cumsum`` called with it takes the rule below."""


AXIS0 = _Axis(0)


def _cumsum_one_at_a_time(x, axis):
    def cumsum_pullback(dy):
        return cr.NoTangent(), np.flip(np.cumsum(np.flip(dy))), cr.NoTangent()

    return np.cumsum(x, axis), cumsum_pullback


# registered here without batched=True, for np.cumsum along a marked axis only: the rule of a
# call the engines see (a NumPy function) that takes one cotangent at a time
cr.rrule.register(np.cumsum, np.ndarray, _Axis)(_cumsum_one_at_a_time)


def cumulative(x):
    return np.cumsum(x, AXIS0) * np.prod(x)  # this cumsum's rule takes one cotangent at a time


# the tape follows Python itself: loops, helpers, structures and indexing leave it batched
FALLBACK = [(cumulative, RNG.uniform(0.5, 1.5, 4), ("source", "tape"))]


def doubled(x):
    return 2.0 * x


@cr.rrule.register(doubled)  # a rule without batched=True: its pullback takes one cotangent at a time
def _rrule_doubled(x):
    return doubled(x), lambda dy: (cr.NoTangent(), 2.0 * dy)


def through_an_unbatched_rule(x):
    return doubled(x) * x


def test_a_rule_without_the_batch_flag_makes_the_source_engine_loop():
    x = RNG.standard_normal(3)
    assert not getattr(source.pullback_full(through_an_unbatched_rule, x)[1], "batched", False)
    J = cr.jacobian(through_an_unbatched_rule, x, mode="reverse")
    np.testing.assert_allclose(J, np.diag(4.0 * x), rtol=1e-14)


@each_engine
@pytest.mark.parametrize("f, x", FULLY_BATCHED, ids=lambda v: getattr(v, "__name__", ""))
def test_a_batched_jacobian_equals_the_loop_and_finite_differences(engine, f, x):
    check_batched(engine, f, x)


@pytest.mark.parametrize("f, x", SOURCE_BATCHED, ids=lambda v: getattr(v, "__name__", ""))
def test_writes_into_a_fresh_array_take_a_batch(f, x):
    check_batched("source", f, x)


@each_engine
@pytest.mark.parametrize("f, x, unbatched", FALLBACK, ids=lambda v: getattr(v, "__name__", ""))
def test_functions_with_unbatched_rules_loop_over_the_outputs(engine, f, x, unbatched):
    y, back = ENGINES[engine](f, x)
    assert getattr(back, "batched", False) is (engine not in unbatched)
    J = cr.jacobian(f, x, mode="reverse", engine=engine)
    np.testing.assert_allclose(J, fd_jacobian(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J, loop_jacobian(engine, f, x), rtol=1e-13, atol=1e-14)


# ----- which path ran: pullback calls counted (a rule's in the source engine, sweeps of the tape) ---

CALLS = []


def counted(x):
    return 3.0 * x


def counted_loop(x):
    return 3.0 * x


def _counting_rule(x):
    def counted_pullback(dy):
        CALLS.append(np.shape(dy))
        return cr.NoTangent(), 3.0 * dy

    return counted(x), counted_pullback


cr.rrule.register(counted, batched=True)(_counting_rule)
cr.rrule.register(counted_loop)(lambda x: _counting_rule(x))


def test_one_call_per_block_when_batched_one_per_output_otherwise():
    x = np.arange(1.0, 6.0)

    def f(x):
        return np.sin(counted(x))

    def g(x):
        return np.sin(counted_loop(x))

    CALLS.clear()
    J = cr.jacobian(f, x, mode="reverse", engine="source")
    assert CALLS == [(5, 5)]
    np.testing.assert_allclose(J, np.diag(3.0 * np.cos(3.0 * x)), rtol=1e-14)
    CALLS.clear()
    np.testing.assert_allclose(cr.jacobian(g, x, mode="reverse", engine="source"), J, rtol=1e-14)
    assert CALLS == [(5,)] * 5
    CALLS.clear()
    np.testing.assert_allclose(cr.jacobian(f, x, mode="reverse", engine="source", chunk_size=2), J, rtol=1e-14)
    assert CALLS == [(2, 5), (2, 5), (1, 5)]


def test_one_sweep_of_the_tape_per_block(monkeypatch):
    sweeps = []
    original = trace.engine.sweep

    def counting_sweep(tape, cts, owned, release=False):
        sweeps.append(len(tape))
        return original(tape, cts, owned, release)

    monkeypatch.setattr(trace.engine, "sweep", counting_sweep)
    x = RNG.standard_normal(4)
    J = cr.jacobian(seed_function, x, mode="reverse", engine="tape")
    assert len(sweeps) == 1
    sweeps.clear()
    J_loop = cr.jacobian(cumulative, x, mode="reverse", engine="tape")
    np.testing.assert_allclose(J_loop, fd_jacobian(cumulative, x), rtol=1e-6, atol=1e-8)
    assert len(sweeps) == 4  # the marked cumsum's rule: one sweep per output
    np.testing.assert_allclose(J, 2 * (W @ x + b)[:, None] * W, rtol=1e-14)


def test_the_default_chunk_keeps_a_pass_within_the_budget(monkeypatch):
    monkeypatch.setattr(api, "REVERSE_BATCH_BUDGET", 12)
    x = np.arange(1.0, 6.0)
    CALLS.clear()
    J = cr.jacobian(lambda x: np.sin(counted(x)), x, mode="reverse", engine="source")
    assert CALLS == [(2, 5), (2, 5), (1, 5)]  # 12 // 5 = 2 cotangents per pass, evened out
    np.testing.assert_allclose(J, np.diag(3.0 * np.cos(3.0 * x)), rtol=1e-14)


# ----- structured seeds -----------------------------------------------------------------------


@each_engine
def test_a_structured_seed_gives_the_numbers_a_dense_one_gives(engine):
    x = RNG.standard_normal(4)
    for f in (seed_function, two_layers, closure_of(W, b)):
        y, back = ENGINES[engine](f, x)
        m = np.size(y)
        structured = cr.unthunk(back(basis_seed(m, np.shape(y), 0, np.float64))[1])
        dense = cr.unthunk(back(np.eye(m))[1])
        np.testing.assert_allclose(np.asarray(structured), dense, rtol=1e-14, atol=1e-15)
        window = cr.unthunk(back(BasisSeed(2, np.shape(y), 1))[1])
        np.testing.assert_allclose(np.asarray(window), dense[1:3], rtol=1e-14, atol=1e-15)


@each_engine
def test_the_block_reaches_the_product_as_a_scaled_block(engine, monkeypatch):
    """In (W x + b)^2 the block is scaled by 2(W x + b) and then selects rows of W: no matrix product."""
    seen = []
    monkeypatch.setattr(BasisSeed, "__array_ufunc__", _wrap(BasisSeed.__array_ufunc__, seen))
    x = RNG.standard_normal(4)
    J = cr.jacobian(seed_function, x, mode="reverse", engine=engine)
    assert seen == [[True, False]]
    np.testing.assert_allclose(J, 2 * (W @ x + b)[:, None] * W, rtol=1e-14)


def _wrap(method, seen):
    def array_ufunc(self, ufunc, kind, *inputs, **kwargs):
        if ufunc is np.matmul:
            seen.append([getattr(a, "scale", None) is not None for a in inputs])
        return method(self, ufunc, kind, *inputs, **kwargs)

    return array_ufunc


def test_a_captured_matrix_gets_no_batch_of_cotangents():
    """The source engine differentiates captured variables too: their batched cotangents (here
    one 300x300 matrix per output) stay unevaluated thunks, since nobody reads them."""
    n = 300
    rng = np.random.default_rng(0)
    f = closure_of(rng.standard_normal((n, n)), rng.standard_normal(n))
    x = rng.standard_normal(n)
    f(x)
    tracemalloc.start()
    J = cr.jacobian(f, x, mode="reverse", engine="source")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * n * n * 8  # a batch of the matrix's cotangents would be n * n * n * 8 bytes
    np.testing.assert_allclose(J, fd_jacobian(f, x), rtol=1e-6, atol=1e-6)


# ----- dtypes and inputs ------------------------------------------------------------------------


@each_engine
def test_the_batched_path_keeps_float32_and_gives_integers_floats(engine):
    x32 = np.arange(1.0, 4.0, dtype=np.float32)
    J = cr.jacobian(lambda x: np.exp(x) * x, x32, mode="reverse", engine=engine)
    assert J.dtype == np.float32
    np.testing.assert_allclose(J, np.diag(np.exp(x32) * (1 + x32)), rtol=1e-6)
    J = cr.jacobian(lambda x: (W[:, :3] @ x) * 2.0, np.array([1, 2, 3]), mode="reverse", engine=engine)
    assert J.dtype == np.float64
    np.testing.assert_allclose(J, 2.0 * W[:, :3], rtol=1e-14)


@each_engine
def test_a_scalar_input(engine):
    t = 0.7
    y, back = ENGINES[engine](scalar_in, t)
    assert back.batched
    J = cr.jacobian(scalar_in, t, mode="reverse", engine=engine)
    k = np.arange(1.0, 4.0)
    np.testing.assert_allclose(J, k * np.cos(k * t) * t**2 + 2 * t * np.sin(k * t), rtol=1e-13)


def test_scalar_functions_written_out_by_the_source_engine_take_a_batch():
    """``math.sin(t)`` and ``t ** 2`` on a float become written-out partials (modes scalar and
    inline): a batch of cotangents of a number is a vector, which they multiply alike."""

    def g(t):
        s = math.sin(t) * t**2
        return s * np.arange(1.0, 4.0) + t

    y, back = source.pullback_full(g, 0.4)
    assert back.batched
    expected = (math.cos(0.4) * 0.16 + 2 * 0.4 * math.sin(0.4)) * np.arange(1.0, 4.0) + 1.0
    np.testing.assert_allclose(cr.jacobian(g, 0.4, mode="reverse"), expected, rtol=1e-14)


@each_engine
def test_an_output_that_does_not_depend_on_the_input(engine):
    J = cr.jacobian(lambda x: np.ones(3) * 2.0, np.ones(2), mode="reverse", engine=engine)
    np.testing.assert_array_equal(J, np.zeros((3, 2)))


# ----- the engines' flag --------------------------------------------------------------------------


def test_the_source_engine_flags_each_specialization():
    def batched_helper(v):
        return np.sin(v) * 2.0

    def calls_a_batched_helper(x):
        return batched_helper(x) + x

    def calls_an_unbatched_helper(x):
        return through_an_unbatched_rule(x) + x

    x = np.ones(3)
    for _ in range(2):  # the second call takes the dispatcher's fast path for the helpers
        assert source.pullback_full(calls_a_batched_helper, x)[1].batched
        assert not getattr(source.pullback_full(calls_an_unbatched_helper, x)[1], "batched", False)
        assert not getattr(source.pullback_full(lambda x: x.sum(), x)[1], "batched", False)  # a number out
        assert not getattr(source.pullback_full(lambda x: float(x[0]) * 2.0, x)[1], "batched", False)


def test_the_tape_flags_its_pullback():
    x = np.ones(3)
    assert trace.pullback_full(seed_function, np.ones(4))[1].batched
    assert not trace.pullback_full(cumulative, x)[1].batched
    assert not trace.pullback_full(lambda x: (x * 2.0, x), x)[1].batched  # a tuple out
    assert trace.pullback_full(lambda x: x.sum() * 2.0, x)[1].batched  # a number out takes a batch too
    _, back = trace.pullback_full(lambda x: x.sum() * 2.0, x)
    np.testing.assert_allclose(back(np.array([1.0, 2.0]))[1], [[2.0] * 3, [4.0] * 3])


# ----- auto mode --------------------------------------------------------------------------------

RUNS = []


def wide(x):
    RUNS.append(1)
    return np.concatenate([x, x * 2.0, np.sin(x)])


def narrow(x):
    RUNS.append(1)
    return (W[:2, :4] @ x) ** 2


@each_engine
def test_auto_picks_reverse_for_fewer_outputs_and_runs_f_once(engine):
    x = RNG.standard_normal(4)
    RUNS.clear()
    J = cr.jacobian(narrow, x, engine=engine)
    assert len(RUNS) == 1
    np.testing.assert_allclose(J, fd_jacobian(narrow, x), rtol=1e-6, atol=1e-8)


def test_auto_picks_forward_for_more_outputs_and_remembers_it():
    x = RNG.standard_normal(2)
    api._auto_choices.pop(wide, None)
    RUNS.clear()
    J = cr.jacobian(wide, x)
    assert len(RUNS) == 2  # the reverse-mode primal that measured the output, then forward mode
    RUNS.clear()
    np.testing.assert_allclose(cr.jacobian(wide, x), J, rtol=1e-15)
    assert len(RUNS) == 1  # the choice is remembered: forward mode straight away
    RUNS.clear()
    cr.jacobian(wide, RNG.standard_normal(3))  # another input shape is another choice
    assert len(RUNS) == 2
    np.testing.assert_allclose(J, fd_jacobian(wide, x), rtol=1e-6, atol=1e-8)


def square(x):
    RUNS.append(1)
    return (W[:3, :3] @ x + 1.0) ** 2


def test_auto_picks_forward_for_a_square_jacobian(monkeypatch):
    x = RNG.standard_normal(3)
    api._auto_choices.pop(square, None)
    J = cr.jacobian(square, x)
    assert api._auto_choices[square][api._auto_key(x)] == "forward"
    assert api.auto_picks_forward(3, 3) and not api.auto_picks_forward(4, 2)  # (what the demo reports)
    calls = []
    monkeypatch.setattr(api, "_reverse_jacobian", lambda *args: calls.append(args))
    RUNS.clear()
    np.testing.assert_allclose(cr.jacobian(square, x), J, rtol=1e-15)
    assert len(RUNS) == 1 and not calls  # forward mode straight away
    np.testing.assert_allclose(J, 2.0 * (W[:3, :3] @ x + 1.0)[:, None] * W[:3, :3], rtol=1e-12)


UPPER = np.triu(RNG.standard_normal((3, 3))) + 3.0 * np.eye(3)


def wide_with_a_library_rule(x):
    RUNS.append(1)
    return np.concatenate([scipy.linalg.solve_triangular(UPPER, x), x**2])  # forward mode cannot use its rule


def wide_with_math_sin(x):
    RUNS.append(1)
    return np.array([math.sin(x[0]), x[0] * x[1], x[1] ** 2])  # float() of a dual number


def test_auto_uses_reverse_mode_where_forward_mode_refuses_and_keeps_to_it():
    x = RNG.standard_normal(3)
    for f, point in ((wide_with_a_library_rule, x), (wide_with_math_sin, x[:2])):
        api._auto_choices.pop(f, None)
        with pytest.raises(TypeError):
            forward.jacobian(f, point)  # the engine refuses f
        RUNS.clear()
        J = cr.jacobian(f, point)
        assert len(RUNS) == 2  # the reverse-mode primal, then forward mode, which refused: its pullback is used
        np.testing.assert_allclose(J, fd_jacobian(f, point), rtol=1e-6, atol=1e-8)
        RUNS.clear()
        np.testing.assert_allclose(cr.jacobian(f, point), J, rtol=1e-15)
        assert len(RUNS) == 1  # reverse mode straight away


def changes_branch(x):
    RUNS.append(1)
    if x[0] > 0:
        return np.concatenate([x, np.sin(x)])
    return np.concatenate([x, np.array([math.sin(x[0]), x[1]])])  # forward mode refuses this branch


def test_auto_turns_to_reverse_mode_when_a_later_call_takes_a_branch_forward_mode_refuses():
    api._auto_choices.pop(changes_branch, None)
    positive, negative = np.array([0.5, 0.3]), np.array([-0.5, 0.3])
    cr.jacobian(changes_branch, positive)
    assert api._auto_choices[changes_branch][api._auto_key(positive)] == "forward"
    J = cr.jacobian(changes_branch, negative)
    np.testing.assert_allclose(J, fd_jacobian(changes_branch, negative), rtol=1e-6, atol=1e-8)
    expected = fd_jacobian(changes_branch, positive)
    RUNS.clear()
    np.testing.assert_allclose(cr.jacobian(changes_branch, positive), expected, rtol=1e-6, atol=1e-8)
    assert len(RUNS) == 1  # reverse mode from now on, without measuring the output again


def test_auto_passes_on_an_error_of_the_function_itself():
    def broken(x):
        return np.concatenate([x, x]) + "text"

    with pytest.raises((TypeError, np._core._exceptions._UFuncNoLoopError)):
        cr.jacobian(broken, np.ones(2))


def roots_of(x):
    def roots():  # a generator, which the source engine refuses: reverse mode takes the tape
        for v in x:
            yield np.sqrt(v)

    return np.stack(list(roots()))


def guarded_root(x):
    RUNS.append(1)
    y = roots_of(x)
    return np.stack([np.sum(y * x[0]), np.prod(y)])


def guarded_list(x):
    y = roots_of(x)
    return np.array([np.sum(y), y[0]])  # np.array of the tape's values or of dual numbers: both refuse


def test_reverse_mode_takes_the_tape_where_the_source_engine_refuses():
    x = np.array([0.5, 1.2, 2.0])  # more inputs than outputs: reverse mode is the choice
    J = cr.jacobian(guarded_root, x)
    np.testing.assert_allclose(J, fd_jacobian(guarded_root, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J, cr.jacobian(guarded_root, x, mode="reverse", engine="tape"), rtol=1e-14)
    np.testing.assert_allclose(J, cr.jacobian(guarded_root, x, mode="reverse"), rtol=1e-14)
    with pytest.raises(cr.UnsupportedSyntaxError) as info:  # all refuse: the source engine's refusal, and why
        cr.jacobian(guarded_list, x)
    assert "The tape engine could not differentiate guarded_list either" in "".join(info.value.__notes__)
    assert "Forward mode could not compute the Jacobian either" in "".join(info.value.__notes__)
