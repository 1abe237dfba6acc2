"""DESIGN.md, "Semantics that matter": rules may change the primal, many-to-many tangents,
accumulation and ownership, integers and booleans, complex numbers, loud missing rules."""

from __future__ import annotations

import dataclasses
import math
import tracemalloc

import numpy as np
import pytest
from contract_support import each_engine, ruled_ufunc, same_values, snapshot

import chainrules as cr

# ----- rules may change the primal (seed 000) -------------------------------------------------

sigmoid_shifted = ruled_ufunc(1)


@cr.rrule.register(sigmoid_shifted)
def rrule_sigmoid_shifted(x):
    # the primal computed the rule's own way, sharing exp(x) with the pullback (seed 000)
    ex = np.exp(x)
    y = ex / (1 + ex)

    def sigmoid_pullback(dy):
        return cr.NoTangent(), dy * y / (1 + ex)

    return y, sigmoid_pullback


@each_engine
def test_the_engine_returns_the_primal_the_rule_computed(engine):
    y, back = cr.pullback(lambda x: sigmoid_shifted(x) * 2.0, 0.3, engine=engine)
    expected = math.exp(0.3) / (1 + math.exp(0.3))
    assert y == pytest.approx(2.0 * expected, rel=1e-15)
    assert back(1.0)[0] == pytest.approx(2.0 * expected * (1 - expected), rel=1e-14)


def test_seed_000_sin_rule_shares_its_work_and_is_right():
    y, back = cr.rrule(math.sin, 0.7)
    assert y == math.sin(0.7)
    assert back(1.0) == (cr.NoTangent(), pytest.approx(math.cos(0.7), rel=1e-15))
    cr.testing.test_rrule(math.sin, 0.7)
    cr.testing.test_frule(math.sin, 0.7)
    cr.testing.test_rrule(np.sin, np.array([0.1, 0.2, 3.0]))


def test_seed_000_sigmoid_from_its_output():
    def sigmoid(x):
        return 1 / (1 + math.exp(-x))

    cr.scalar_rule(sigmoid, lambda x, *, out: out * (1 - out))
    cr.testing.test_rrule(sigmoid, 0.4)
    cr.testing.test_frule(sigmoid, 0.4)


# ----- tangents are many-to-many (seed 002) -------------------------------------------------


def _array_tangents():
    """The same tangent of a 3-vector, [1, 2, 3], in each kind an array's tangent may take."""

    def add_into(acc):
        acc += np.array([1.0, 2.0, 3.0])
        return acc

    return [
        np.array([1.0, 2.0, 3.0]),
        cr.Thunk(lambda: np.array([1.0, 2.0, 3.0])),
        cr.InplaceableThunk(add_into, cr.Thunk(lambda: np.array([1.0, 2.0, 3.0]))),
    ]


@pytest.mark.parametrize("kind", [0, 1, 2], ids=["array", "thunk", "inplaceable"])
def test_an_array_tangent_of_every_kind_adds_to_an_array(kind):
    base = np.array([10.0, 20.0, 30.0])
    before = base.copy()
    t = _array_tangents()[kind]
    np.testing.assert_array_equal(cr.add(base, t), [11.0, 22.0, 33.0])
    np.testing.assert_array_equal(base, before)  # add never mutates
    np.testing.assert_array_equal(cr.add(t, base), [11.0, 22.0, 33.0])
    np.testing.assert_array_equal(cr.unthunk(cr.add(t, cr.ZeroTangent())), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(cr.unthunk(cr.add(cr.ZeroTangent(), t)), [1.0, 2.0, 3.0])
    acc = base.copy()
    assert cr.iadd(acc, t) is acc
    np.testing.assert_array_equal(acc, [11.0, 22.0, 33.0])
    np.testing.assert_array_equal(cr.unthunk(cr.ProjectTo(base)(t)), [1.0, 2.0, 3.0])


@dataclasses.dataclass
class Layer:
    weights: np.ndarray
    bias: float
    name: str = "layer"


@dataclasses.dataclass
class Other:
    weights: np.ndarray


def layer_loss(layer, x):
    return np.sum((layer.weights * x + layer.bias) ** 2)


@each_engine
def test_a_dataclass_gets_a_semi_structural_tangent_of_its_class(engine):
    layer = Layer(np.array([1.0, -2.0]), 0.5)
    x = np.array([3.0, 4.0])
    dlayer, dx = cr.gradient(layer_loss, layer, x, engine=engine)
    assert type(dlayer) is cr.Tangent[Layer]
    r = layer.weights * x + layer.bias
    np.testing.assert_allclose(dlayer.weights, 2 * r * x, rtol=1e-14)  # a natural field: an array
    assert dlayer.bias == pytest.approx(2 * r.sum(), rel=1e-14)
    assert isinstance(dlayer.name, cr.NoTangent) or isinstance(dlayer.name, cr.ZeroTangent)
    np.testing.assert_allclose(dx, 2 * r * layer.weights, rtol=1e-14)


def test_tangents_of_unrelated_classes_do_not_add():
    with pytest.raises(TypeError, match="Layer") as info:
        cr.add(cr.Tangent[Layer](bias=1.0), cr.Tangent[Other](weights=np.ones(2)))
    assert "Other" in str(info.value)
    with pytest.raises(TypeError, match="Other"):
        cr.Tangent[Layer](bias=1.0) + cr.Tangent[Other](weights=np.ones(2))


def test_primal_plus_tangent_is_a_new_primal_of_the_same_type():
    layer = Layer(np.array([1.0, 2.0]), 0.5)
    moved = layer + cr.Tangent[Layer](weights=np.array([0.5, 0.5]), bias=1.0)
    assert type(moved) is Layer and moved is not layer
    np.testing.assert_array_equal(moved.weights, [1.5, 2.5])
    assert moved.bias == 1.5 and moved.name == "layer"
    np.testing.assert_array_equal(layer.weights, [1.0, 2.0])
    assert layer.bias == 0.5


# ----- accumulation (seed 004) --------------------------------------------------------------


def mysum(X):
    total = 0.0
    for i in range(len(X)):
        total += X[i]
    return total


@each_engine
def test_mysum_gradient_is_ones_and_leaves_the_input_alone(engine):
    X = np.arange(6.0)
    before = X.copy()
    (dX,) = cr.gradient(mysum, X, engine=engine)
    np.testing.assert_array_equal(dX, np.ones(6))
    np.testing.assert_array_equal(X, before)


@each_engine
def test_mysum_pullback_holds_about_one_array_of_memory(engine):
    # Seed 004: with in-place accumulation the reverse pass needs one array of n floats, not
    # one per element. The bound leaves room for the engine's per-operation bookkeeping.
    n = 2000
    X = np.linspace(0.0, 1.0, n)
    _, back = cr.pullback(mysum, X, engine=engine)
    tracemalloc.start()
    try:
        back(1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 * X.nbytes, f"the reverse pass of mysum peaked at {peak / X.nbytes:.1f} arrays of n floats"


# pick(X, i) is X[i] whose cotangent is an InplaceableThunk that counts its evaluations.
pick = ruled_ufunc(2)
PICKED = {"value": 0, "add_into": 0}


@cr.rrule.register(pick)
def rrule_pick(X, i):
    shape = np.shape(X)

    def pick_pullback(dy):
        def add_into(acc):
            PICKED["add_into"] += 1
            acc[i] += dy
            return acc

        def value():
            PICKED["value"] += 1
            out = np.zeros(shape)
            out[i] = dy
            return out

        return cr.NoTangent(), cr.InplaceableThunk(add_into, cr.Thunk(value)), cr.NoTangent()

    return X[i], pick_pullback


def mysum_by_pick(X):
    total = 0.0
    for i in range(len(X)):
        total += pick(X, i)
    return total


@each_engine
def test_the_engine_lets_inplaceable_thunks_add_into_the_accumulator(engine):
    n = 40
    X = np.linspace(0.0, 1.0, n)
    _, back = cr.pullback(mysum_by_pick, X, engine=engine)
    PICKED.update(value=0, add_into=0)
    (dX,) = back(1.0)
    np.testing.assert_array_equal(dX, np.ones(n))
    # at most one value is built (the first accumulator); every other cotangent adds itself in place
    assert PICKED["value"] <= 1, PICKED
    assert PICKED["add_into"] >= n - 1, PICKED


def reuse(x, c):
    a = x * c
    b = a + x
    return np.sum(b * a + x)


@each_engine
def test_no_user_input_or_user_cotangent_is_mutated(engine):
    x = np.array([1.0, 2.0, 3.0])
    c = np.array([0.5, -1.0, 2.0])
    inputs = snapshot((x, c))
    y, back = cr.pullback(lambda x, c: reuse(x, c) * np.ones(2), x, c, engine=engine)
    dy = np.array([1.0, 2.0])
    back(dy)
    back(dy)
    assert same_values((x, c), inputs)
    np.testing.assert_array_equal(dy, [1.0, 2.0])


def twice_the_same(x):
    return x + x


@each_engine
def test_a_cotangent_used_twice_is_not_written_into(engine):
    x = np.array([1.0, 2.0])
    dy = np.array([3.0, 4.0])
    _, back = cr.pullback(twice_the_same, x, engine=engine)
    (dx,) = back(dy)
    np.testing.assert_array_equal(dx, [6.0, 8.0])
    np.testing.assert_array_equal(dy, [3.0, 4.0])


# a rule whose pullback hands back an array it keeps for later calls
kept_scale = ruled_ufunc(1)
KEPT = np.array([2.0, 2.0, 2.0])


@cr.rrule.register(kept_scale)
def rrule_kept_scale(x):
    def kept_scale_pullback(dy):
        return cr.NoTangent(), KEPT if np.all(np.asarray(dy) == 1.0) else KEPT * dy

    return 2.0 * x, kept_scale_pullback


@each_engine
def test_an_array_a_rule_returned_is_not_written_into(engine):
    x = np.array([1.0, 2.0, 3.0])
    (dx,) = cr.gradient(lambda x: np.sum(kept_scale(x) + kept_scale(x) + x * 3.0), x, engine=engine)
    np.testing.assert_array_equal(dx, [7.0, 7.0, 7.0])
    np.testing.assert_array_equal(KEPT, [2.0, 2.0, 2.0])


# ----- integers and booleans --------------------------------------------------------------


def pick_scaled(x, i, flag, label):
    s = x[i] * len(label)
    return s * 2.0 if flag else s


@each_engine
def test_indices_counts_bools_and_strings_get_no_tangent(engine):
    dx, di, dflag, dlabel = cr.gradient(pick_scaled, np.array([1.0, 2.0, 3.0]), 1, True, "ab", engine=engine)
    np.testing.assert_array_equal(dx, [0.0, 4.0, 0.0])
    assert (di, dflag, dlabel) == (cr.NoTangent(), cr.NoTangent(), cr.NoTangent())
    assert all(type(t) is cr.NoTangent for t in (di, dflag, dlabel))


def product(a, b):
    return a * b + a


@each_engine
def test_integers_used_arithmetically_get_float_derivatives(engine):
    da, db = cr.gradient(product, 3, 4, engine=engine)
    assert (da, db) == (5.0, 3.0)
    assert type(da) is float and type(db) is float


@each_engine
def test_integer_arrays_used_arithmetically_get_float_arrays(engine):
    (dx,) = cr.gradient(lambda x: np.sum(x * x), np.array([1, 2, 3]), engine=engine)
    assert dx.dtype == np.float64
    np.testing.assert_array_equal(dx, [2.0, 4.0, 6.0])


# ----- complex numbers ------------------------------------------------------------------------


@each_engine
def test_gradient_of_abs_squared_follows_the_chainrules_convention(engine):
    (dz,) = cr.gradient(lambda z: abs(z) ** 2, 1 + 2j, engine=engine)
    assert dz == pytest.approx(2 + 4j, rel=1e-14)


@each_engine
def test_gradient_of_a_real_function_of_complex_arrays_is_dfdx_plus_i_dfdy(engine):
    z = np.array([1 + 2j, -0.5 + 0.25j])
    (dz,) = cr.gradient(lambda z: np.sum(np.abs(z) ** 2), z, engine=engine)
    np.testing.assert_allclose(dz, 2 * z, rtol=1e-14)
    # Re(z^2) = x^2 - y^2: the gradient is 2x - 2iy
    (dz,) = cr.gradient(lambda z: np.sum(np.real(z * z)), z, engine=engine)
    np.testing.assert_allclose(dz, 2 * np.conj(z), rtol=1e-14)


# ----- missing rules are loud ---------------------------------------------------------------

no_rule = ruled_ufunc(1)  # a callable with neither a rule nor Python source


def calls_a_callable_without_rule(x):
    y = x * 2.0
    return no_rule(y)  # the line the error must name


def calls_library_code_without_rule(x):
    return np.sum(np.histogram_bin_edges(x))  # Python code in NumPy: reached only through rules


_NO_RULE_LINE = calls_a_callable_without_rule.__code__.co_firstlineno + 2
_LIBRARY_LINE = calls_library_code_without_rule.__code__.co_firstlineno + 1


@each_engine
def test_a_call_without_rule_raises_no_rule_error_at_the_users_line(engine):
    with pytest.raises(cr.NoRuleError) as info:
        cr.gradient(calls_a_callable_without_rule, 1.5, engine=engine)
    message = str(info.value)
    assert "vectorized" in message  # the callable's name (a frompyfunc ufunc)
    assert "(float)" in message  # the argument types
    assert f"{__file__}:{_NO_RULE_LINE}" in message


@each_engine
def test_library_code_without_rule_raises_no_rule_error_naming_it(engine):
    # the example needs a NumPy function without a rule: pick another one if it gets one
    edges = np.histogram_bin_edges
    assert cr.rrule.lookup(edges, (np.ones(2),)) is None and cr.frule.lookup(edges, (np.ones(2),)) is None
    with pytest.raises(cr.NoRuleError) as info:
        cr.gradient(calls_library_code_without_rule, np.array([0.5, 1.0]), engine=engine)
    message = str(info.value)
    assert "numpy.histogram_bin_edges" in message and "ndarray" in message
    assert f"{__file__}:{_LIBRARY_LINE}" in message
