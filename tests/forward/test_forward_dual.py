"""The Dual type: operators, NumPy protocols, methods, control flow, and the loud conversions."""

import math
import operator

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward
from chainrules.forward import Dual, DualArray, Tag, call


def dual(primal, partials=1.0):
    return Dual(primal, partials, Tag())


# ----- arithmetic through the operator rules ------------------------------------------------


@pytest.mark.parametrize(
    "f, expected",
    [
        (lambda x: x + 2.0, (5.0, 1.0)),
        (lambda x: 2.0 + x, (5.0, 1.0)),
        (lambda x: x - 1.0, (2.0, 1.0)),
        (lambda x: 1.0 - x, (-2.0, -1.0)),
        (lambda x: x * x, (9.0, 6.0)),
        (lambda x: 4.0 * x, (12.0, 4.0)),
        (lambda x: x / 2.0, (1.5, 0.5)),
        (lambda x: 6.0 / x, (2.0, -6.0 / 9.0)),
        (lambda x: x**2, (9.0, 6.0)),
        (lambda x: 2.0**x, (8.0, 8.0 * math.log(2.0))),
        (lambda x: -x, (-3.0, -1.0)),
        (lambda x: +x, (3.0, 1.0)),
        (lambda x: abs(-x), (3.0, 1.0)),
    ],
)
def test_operators_on_a_scalar_dual(f, expected):
    y = f(dual(3.0))
    assert (float(y.primal), float(y.partials)) == pytest.approx(expected)


def test_operators_between_arrays_and_duals():
    x = dual(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    for y, expected_partials in [
        (W @ x, W[:, 0]),
        (x @ W, W[0]),
        (np.float64(2.0) * x, [2.0, 0.0]),
        (np.ones(2) + x, [1.0, 0.0]),
        (x * np.array([3.0, 5.0]), [3.0, 0.0]),
    ]:
        assert isinstance(y, Dual)
        np.testing.assert_allclose(y.partials, expected_partials)


def test_numpy_ufuncs_and_functions_dispatch_to_frules():
    x = dual(np.array([0.5, 1.0]), np.array([1.0, 1.0]))
    y = np.sin(x)
    np.testing.assert_allclose(y.primal, np.sin([0.5, 1.0]))
    np.testing.assert_allclose(y.partials, np.cos([0.5, 1.0]))
    s = np.sum(x * x)
    assert float(s.primal) == pytest.approx(1.25)
    assert float(s.partials) == pytest.approx(3.0)


def test_array_methods_and_attributes_go_through_rules():
    x = dual(np.arange(6.0).reshape(2, 3), np.ones((2, 3)))
    assert float(x.sum().partials) == 6.0
    np.testing.assert_allclose(x.sum(axis=0).partials, [2.0, 2.0, 2.0])
    assert x.T.shape == (3, 2)
    np.testing.assert_allclose(x.T.primal, np.arange(6.0).reshape(2, 3).T)
    assert x.reshape(3, 2).shape == (3, 2)
    assert x.reshape((6,)).shape == (6,)
    np.testing.assert_allclose(x[1].primal, [3.0, 4.0, 5.0])
    np.testing.assert_allclose(x[1].partials, [1.0, 1.0, 1.0])
    np.testing.assert_allclose(x[:, 1:].partials, np.ones((2, 2)))


def test_metadata_is_the_primals():
    x = dual(np.zeros((2, 3), dtype=np.float32), np.ones((2, 3), dtype=np.float32))
    assert (x.shape, x.ndim, x.size, x.dtype, len(x)) == ((2, 3), 2, 6, np.float32, 2)
    assert np.shape(x) == (2, 3) and np.ndim(x) == 2
    assert dual(2.0).shape == () and dual(2.0).dtype == np.float64


def test_iteration_yields_differentiable_rows():
    x = dual(np.array([1.0, 2.0, 3.0]), np.array([1.0, 10.0, 100.0]))
    rows = list(x)
    assert [float(r.partials) for r in rows] == [1.0, 10.0, 100.0]
    total = sum(rows)
    assert float(total.partials) == 111.0


def test_a_zero_tangent_result_is_a_plain_value():
    x = dual(np.array([1.0, -2.0]), np.array([1.0, 1.0]))
    assert not isinstance(np.sign(x), Dual)
    assert not isinstance(x > 0, Dual)


def test_results_without_derivative_need_no_rule():
    x = dual(np.array([3.0, 1.0, 2.0]), np.ones(3))
    assert np.argmax(x) == 0
    assert np.shape(x) == (3,)
    assert np.iscomplexobj(x) is False


def test_a_missing_rule_is_loud_and_names_the_call():
    def opaque(a):
        return a * 2.0

    with pytest.raises(cr.NoRuleError, match="opaque") as info:
        call(opaque, (dual(1.0),))
    assert "test_forward_dual.py" in str(info.value)


def test_a_numpy_function_without_frule_is_loud():
    import chainrules.forward.dual as dual_module

    def unknown_numpy_like(x):
        return x + 1.0

    x = dual(np.ones(2), np.ones(2))
    with pytest.raises(cr.NoRuleError, match="unknown_numpy_like"):
        dual_module.call(unknown_numpy_like, (x,))


# ----- control flow on primal values ---------------------------------------------------------


def test_comparisons_use_primal_values():
    x = dual(2.0, 5.0)
    assert x > 1.0 and x >= 2.0 and x < 3.0 and x <= 2.0 and x == 2.0 and x != 1.0
    assert 1.0 < x and dual(1.0) < x
    assert bool(x) and not bool(dual(0.0))
    np.testing.assert_array_equal(dual(np.array([1.0, 3.0])) > 2.0, [False, True])


def test_if_and_while_follow_the_primal():
    def f(x):
        while x < 10.0:
            x = x * 2.0
        if x > 15.0:
            return x - 1.0
        return x

    _, d = cr.jvp(f, (3.0,), (1.0,))  # 3 -> 6 -> 12
    assert d == pytest.approx(4.0)
    y, d = cr.jvp(f, (9.0,), (1.0,))  # 9 -> 18 -> 18 - 1
    assert (y, d) == (17.0, 2.0)


def test_max_and_min_builtins_pick_the_dual():
    y, dy = cr.jvp(lambda a, b: max(a, b) * min(a, b), (2.0, 3.0), (1.0, 0.0))
    assert (y, dy) == (6.0, 3.0)


# ----- conversions that would drop the derivative -------------------------------------------


@pytest.mark.parametrize(
    "convert, word",
    [
        (float, "float"),
        (complex, "complex"),
        (math.sin, "float"),
        (math.exp, "float"),
    ],
)
def test_conversions_to_python_numbers_raise_with_a_fix(convert, word):
    with pytest.raises(TypeError, match=f"{word}\\(\\) of a dual number") as info:
        convert(dual(2.0))
    message = str(info.value)
    assert "np.sin" in message and "test_forward_dual.py" in message


@pytest.mark.parametrize("use", [operator.index, lambda x: range(x), lambda x: [1.0, 2.0, 3.0][x]])
def test_a_float_dual_used_as_an_integer_raises_pythons_type_error(use):
    # as the plain float does: nothing is dropped, a float is no index (int(x) converts it)
    with pytest.raises(TypeError, match=r"a float being differentiated \(2.0\) cannot be used as an integer") as info:
        use(dual(2.0))
    assert "test_forward_dual.py" in str(info.value) and not isinstance(info.value, cr.DroppedDerivativeError)


def test_math_sin_in_user_code_points_at_the_line():
    def f(x):
        return math.sin(x)

    with pytest.raises(cr.DroppedDerivativeError, match="use the NumPy function") as info:
        forward.jvp(f, (1.0,), (1.0,))  # the engine itself
    assert f"test_forward_dual.py:{f.__code__.co_firstlineno + 1}" in str(info.value)
    # the API runs f through the source engine's primal, where math.sin has its rule
    assert cr.derivative(f, 1.0) == pytest.approx(math.cos(1.0), rel=1e-15)


def test_numpy_array_of_duals_raises_with_a_fix():
    x = dual(1.0)
    with pytest.raises(TypeError, match="np.stack"):
        np.array([x, 2.0 * x])
    with pytest.raises(TypeError, match="np.stack"):
        np.asarray(x)


def test_truth_of_a_dual_array_is_numpys():
    with pytest.raises(ValueError, match="ambiguous"):  # NumPy's error, as for the plain array
        bool(dual(np.array([1.0, 2.0]), np.ones(2)))
    assert bool(dual(np.array(1.0), np.array(1.0)))
    assert bool(dual(np.array([2.0]), np.ones((1, 1)))) and not bool(dual(np.array([0.0]), np.ones((1, 1))))


def test_writing_into_a_dual_or_with_out_is_refused():
    x = dual(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="np.where"):
        x[0] = 2.0
    with pytest.raises(TypeError, match="out="):
        np.sin(x, out=np.empty(3))
    with pytest.raises(TypeError, match="np.add.at"):
        np.add.at(np.zeros(3), [0, 1], x[:2])
    with pytest.raises((TypeError, ValueError)):  # NumPy cannot store a dual (it sees a sequence)
        np.zeros(3)[0] = dual(1.0)


def test_functions_and_methods_that_write_in_place_are_not_run_on_primals():
    primal = np.array([3.0, 1.0, 2.0])
    x = dual(primal, np.array([1.0, 0.0, 0.0]))
    with pytest.raises(cr.NoRuleError, match="sort"):
        x.sort()
    with pytest.raises(cr.NoRuleError, match="copyto"):
        np.copyto(x, np.zeros(3))
    np.testing.assert_array_equal(primal, [3.0, 1.0, 2.0])


def test_arrays_made_like_a_dual_accept_writes():
    def f(x):
        out = np.zeros_like(x)
        out[0] = x[1] * 2.0
        out[1:] = x[:2] ** 2
        np.add.at(out, [2, 2], x[0])
        return out

    x = np.array([1.0, 2.0, 3.0])
    J = forward.jacobian(f, x, chunk_size=2)
    np.testing.assert_allclose(J, [[0.0, 2.0, 0.0], [2.0, 0.0, 0.0], [2.0, 4.0, 0.0]])
    np.testing.assert_allclose(J, crt.fd_jacobian(f, x), atol=1e-8)
    y, dy = cr.jvp(f, (x,), (np.array([1.0, 0.0, 0.0]),))
    np.testing.assert_allclose(dy, [0.0, 2.0, 2.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(forward.jacobian(np.zeros_like, x), np.zeros((3, 3)))


def test_a_copy_of_a_dual_accepts_writes_and_leaves_the_input_and_its_tangent_alone():
    def f(x):
        y = x.copy()
        y[0] = x[1] * x[2]
        z = np.copy(x)
        z[1:] = 5.0
        return y * z

    x, t = np.array([0.3, 1.2, -0.7, 2.0]), np.array([1.0, -2.0, 0.5, 0.25])
    for chunk in (None, 3):
        np.testing.assert_allclose(forward.jacobian(f, x, chunk_size=chunk), crt.fd_jacobian(f, x), atol=1e-8)
    y, dy = cr.jvp(f, (x,), (t,))
    np.testing.assert_allclose(dy, crt.fd_jacobian(f, x) @ t, atol=1e-8)
    np.testing.assert_array_equal(x, [0.3, 1.2, -0.7, 2.0])
    np.testing.assert_array_equal(t, [1.0, -2.0, 0.5, 0.25])


def test_an_entry_read_from_a_buffer_keeps_its_partials_when_the_buffer_is_written_again():
    def f(x):
        out = np.zeros_like(x)
        out[0] = x[1] * x[2]
        first = out[0]  # a copy of the entry, as NumPy's scalar is
        out[0] = 0.0
        return first * x + out

    x = np.array([0.3, 1.2, -0.7])
    for chunk in (None, 2):
        np.testing.assert_allclose(forward.jacobian(f, x, chunk_size=chunk), crt.fd_jacobian(f, x), atol=1e-8)


def test_writes_with_an_ellipsis_reach_the_primal_s_axes_not_the_batch_axis():
    def f(x):
        out = np.zeros_like(x.reshape(2, 3))
        out[..., 0] = x[:2] * 2.0
        out[0, ...] = out[0, ...] + x[3:] ** 2
        out[..., 1:] = out[..., 1:] + np.sin(x[4:])
        np.add.at(out, (..., 2), x[:2])
        return out.ravel()

    x = np.arange(1.0, 7.0)
    for chunk in (None, 4, 1):  # batches of tangents, and one tangent at a time
        np.testing.assert_allclose(forward.jacobian(f, x, chunk_size=chunk), crt.fd_jacobian(f, x), atol=1e-8)


def test_a_write_of_an_inner_dual_into_an_outer_array_is_refused():
    def outer(a):
        buf = np.zeros_like(np.stack([a, a]))
        return cr.derivative(lambda b: (buf.__setitem__(0, b), b)[1], 1.0)

    with pytest.raises(TypeError, match="inner differentiation"):
        cr.derivative(outer, 2.0)


def test_storage_facts_are_the_primals():
    primal = np.ones((2, 3))
    x = dual(primal, np.ones((2, 3)))
    assert x.strides == primal.strides and x.itemsize == 8 and x.nbytes == 48 and x.base is None


def test_a_dual_keyword_argument_is_refused_when_no_position_takes_it():
    x = dual(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="keyword argument 'correction'.*no position of its signature can take it"):
        call(np.var, (np.ones(3),), {"correction": x})
    # one with a position is passed there
    y = call(np.clip, (np.zeros(3),), {"a_min": x, "a_max": None})
    assert np.array_equal(y.primal, np.ones(3)) and np.array_equal(y.partials, np.ones(3))


def test_a_dual_given_to_a_declared_option_is_passed_as_its_primal():
    """An option carries no derivative (``declare_options``): the rule gets its primal, and the
    output's tangent is the other arguments' alone."""
    from chainrules.core.keywords import declare_options

    def weighed(a, *, w=1.0):
        return a * w

    @cr.frule.register(weighed)
    def frule_weighed(tangents, a, *, w=1.0):
        assert type(w) is float  # (the primal, not the dual)
        return a * w, tangents[1] * w

    declare_options(weighed, ["w"])
    y = call(weighed, (dual(2.0, 1.0),), {"w": dual(3.0, 10.0)})
    assert (y.primal, y.partials) == (6.0, 3.0)


def test_repr_shows_primal_and_partials_and_formatting_the_primal():
    assert repr(Dual(1.5, 2.0, Tag())) == "Dual(1.5, 2.0)"
    assert f"{Dual(1.5, 2.0, Tag()):.3f}" == "1.500"


def test_a_rule_registered_later_is_used():
    def scaled(x):
        return 3.0 * x

    @cr.frule.register(scaled)
    def frule_scaled_first(tangents, x):
        return scaled(x), 3.0 * tangents[1]

    assert call(scaled, (dual(1.0),)).partials == 3.0

    @cr.frule.register(scaled)
    def frule_scaled_second(tangents, x):  # replaces the first (a deliberately different factor)
        return scaled(x), 30.0 * tangents[1]

    assert call(scaled, (dual(1.0),)).partials == 30.0


def test_storing_a_dual_into_a_plain_array_says_how_to_fix_it():
    def fill(x):
        out = np.zeros(2)
        out[0] = x[0] * 2.0
        return out

    with pytest.raises(cr.DroppedDerivativeError, match="np.zeros_like"):
        forward.jvp(fill, (np.ones(2),), (np.ones(2),))  # the engine itself
    y, dy = cr.jvp(fill, (np.ones(2),), (np.array([1.0, 3.0]),))  # the API follows the buffer
    np.testing.assert_array_equal(y, [2.0, 0.0])
    np.testing.assert_array_equal(dy, [2.0, 0.0])


def test_dual_numbers_are_not_sequences_dual_arrays_are():
    number, array = dual(2.0), dual(np.ones(3), np.ones(3))
    assert type(array) is DualArray and type(number) is Dual and isinstance(array, Dual)
    assert len(array) == 3 and not hasattr(number, "__len__")
    with pytest.raises(TypeError):
        number[0]


def test_a_list_of_duals_written_into_an_owned_array():
    # NumPy would convert the list's duals one by one: the write stacks them by np.asarray's rule
    def f(x):
        y = x.copy()
        y[1:3] = [x[0] * x[3], 2.0]
        return y

    x = np.array([0.3, 0.9, 1.4, -0.5])
    J = forward.jacobian(f, x)
    expected = np.eye(4)
    expected[1] = [x[3], 0.0, 0.0, x[0]]
    expected[2] = 0.0
    np.testing.assert_allclose(J, expected, rtol=1e-15)


def test_a_reshape_of_a_copy_sees_a_later_update_in_every_tangent_of_a_jacobian():
    # the copy's partials are laid out as its values (C order), whatever the seed block's layout:
    # the reshape views both, and the update in place reaches both
    def f(w):
        b = (w + 1.21).copy()
        flat = b.reshape(-1)
        b += np.arctan(w)
        return -flat

    w = np.array([[0.2, -0.5, 0.4], [0.7, 0.1, -0.3]])
    J = forward.jacobian(f, w)
    np.testing.assert_allclose(J, crt.fd_jacobian(f, w).reshape(J.shape), rtol=1e-6, atol=1e-9)
    _, dy = forward.jvp(f, (w,), (np.ones_like(w),))
    np.testing.assert_allclose(dy, J.reshape(6, 6).sum(axis=1), rtol=1e-13)
