"""Bugs the engine fuzzer (``tests/fuzz/fuzz_engines.py``) found, each checked against finite differences."""

import collections
import dataclasses

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse import source


def cos_then_update(x):
    v = np.cos(x)
    v += np.exp(0.5 * np.sin(v))  # `v` is new (a ufunc made it) and read only by a ufunc before
    return np.sum(v)


def shifted_then_update(x):
    v = x * 1.5 - 0.25  # an operator's result is a new array
    v += np.sqrt(x * x + 1.0)
    return np.sum(v * v)


def test_plus_equals_on_an_array_an_operator_or_ufunc_made_is_rebound_by_the_source_engine():
    x = np.array([0.3, -0.7, 1.1])
    for f in (cos_then_update, shifted_then_update):
        reference = crt.fd_jacobian(f, x).reshape(x.shape)
        for engine in ("source", "tape"):
            np.testing.assert_allclose(cr.gradient(f, x, engine=engine)[0], reference, rtol=1e-7)
        H = cr.hessian(f, x)
        np.testing.assert_allclose(H, crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x), rtol=1e-6, atol=1e-8)


def constant_in_x(x):
    return 3.0 * np.sum(np.ones(2))


def test_hessian_of_a_function_that_does_not_depend_on_x_is_zeros():
    for engine in ("source", "tape"):
        H = cr.hessian(constant_in_x, np.array([1.0, 2.0], dtype=np.float32), engine=engine)
        assert H.dtype == np.float32 and H.shape == (2, 2) and not H.any()
    assert cr.hessian(constant_in_x, 1.5) == 0.0


def read_through_a_view_after_update(x):
    v = np.sin(x)
    r = v[::-1]  # a view: NumPy's `v += x` changes what it reads
    v += x
    return r * 2.0


def read_through_a_tuple_after_update(x):
    v = np.sin(x)
    pair = (v, x)
    v += x  # updates the array the tuple holds
    return pair[0] * 3.0


def update_twice(x):
    v = np.sin(x)
    v += x * x
    v *= 2.0
    return v


def test_forward_mode_plus_equals_updates_the_dual_its_holders_see():
    """`v += x` on a dual array had rebound the name only: a tuple holding the array kept the old
    value (a silent wrong value and derivative)."""
    x = np.array([0.3, -0.5, 0.9])
    for f in (read_through_a_tuple_after_update, update_twice):
        y, dy = cr.jvp(f, (x,), (np.ones(3),))
        np.testing.assert_allclose(y, f(x.copy()), rtol=1e-14)
        np.testing.assert_allclose(dy, crt.fd_jvp(f, x, np.ones(3)), rtol=1e-7)
        J = cr.jacobian(f, x, mode="forward")
        np.testing.assert_allclose(J, crt.fd_jacobian(f, x), rtol=1e-7, atol=1e-10)
        f32 = x.astype(np.float32)
        assert cr.jacobian(f, f32, mode="forward").dtype == np.float32


def test_forward_mode_refuses_plus_equals_on_a_dual_array_that_a_view_reads():
    """Rebinding left the view with the old values: a silent wrong value and derivative."""
    x = np.array([0.3, -0.5, 0.9])
    with pytest.raises(TypeError, match="may share memory") as info:
        cr.jvp(read_through_a_view_after_update, (x,), (np.ones(3),))
    assert f"{__file__}:" in str(info.value)
    with pytest.raises(TypeError, match="may share memory"):
        cr.jvp(lambda z: z.__iadd__(1.0), (x,), (np.ones(3),))  # the caller's argument
    assert np.array_equal(x, [0.3, -0.5, 0.9])


def stacked_then_update(x):
    v = np.stack([x, np.sin(x)], axis=0)  # a new array: np.stack never returns a view
    v += np.cos(x)
    w = np.where(x > 0.0, x, x * x)
    w *= 2.0
    return np.sum(v * v) + np.sum(w)


def test_plus_equals_on_what_np_stack_or_np_where_made_is_rebound_by_the_source_engine():
    x = np.array([0.3, -0.7, 1.1])
    reference = crt.fd_jacobian(stacked_then_update, x).reshape(x.shape)
    np.testing.assert_allclose(cr.gradient(stacked_then_update, x)[0], reference, rtol=1e-7)
    H = cr.hessian(stacked_then_update, x)
    fd = crt.fd_jacobian(lambda z: cr.gradient(stacked_then_update, z)[0], x)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-8)


def fills_a_buffer_it_never_reads(x):
    squares = np.zeros(3)
    for i in range(3):
        squares[i] = x[i] * x[i]  # the buffer does not reach the output
    return np.sum(np.sin(x))


def test_hessian_through_a_buffer_the_function_fills_and_never_reads():
    """The write into a buffer that passes no derivative ran as it was written, and under the
    Hessian's dual numbers it stored a dual into a plain array: a float() error on valid code."""
    x = np.array([0.3, -0.5, 0.9])
    np.testing.assert_allclose(cr.hessian(fills_a_buffer_it_never_reads, x), np.diag(-np.sin(x)), rtol=1e-12)


def closure_over_a_filled_buffer(x):
    sines = np.zeros(3)
    for i in range(3):
        sines[i] = np.sin(x[i]) + (sines[i - 1] if i > 0 else 0.0)

    def scaled(u):
        return u * sines  # reads the buffer through the closure's cell

    return np.sum(scaled(x))


def test_hessian_of_a_closure_reading_a_buffer_the_function_filled():
    """Under the Hessian's duals the first write made the buffer a dual array bound to the name,
    but the closure's cell kept the plain array of zeros: a silent wrong Hessian (off by 0.95)."""
    x = np.array([-0.46, 0.31, -0.68])
    f = closure_over_a_filled_buffer
    reference = crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x)
    np.testing.assert_allclose(cr.hessian(f, x), reference, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.gradient(f, x)[0], crt.fd_jacobian(f, x).reshape(x.shape), rtol=1e-7)


def squared_if_positive(u, c=0.7):
    v = u * c
    if np.sum(v) > 0.0:
        return v * v
    return np.cos(v)


def scaled_by_a_0d_where(x, s):
    v = np.where(s > 0.09, s - s / (1.0 + s * s), s)  # a 0-d array
    return np.ravel(x * squared_if_positive(v))


def test_reverse_jacobian_through_a_helper_of_a_0d_array():
    """The batch of cotangents of the helper's 0-d argument was projected as one 0-d cotangent,
    lazily: ProjectTo raised on a tangent of shape (4,) for a primal of shape ()."""
    x = np.array([0.3, -0.5, 0.9, 0.2])
    J = cr.jacobian(lambda z: scaled_by_a_0d_where(z, 0.5), x, mode="reverse")
    np.testing.assert_allclose(J, crt.fd_jacobian(lambda z: scaled_by_a_0d_where(z, 0.5), x), rtol=1e-7, atol=1e-12)


def default_of_a_nested_function(x):
    sines = np.sin(x)

    def times(u, k=sines):  # the default is a differentiated value: a dual under the Hessian
        return u * k

    times(x)  # (its value is not used: under the Hessian the source engine runs it as it is)
    return np.sum(np.tanh(x))


def test_a_nested_function_whose_default_changes_type_between_calls():
    """The first specialization's signature kept the first function object's defaults, and the
    cache key ignored them: after a Hessian (a dual default), a gradient (an array default)
    respecialized forever (RecursionError)."""
    x = np.array([0.3, -0.5, 0.9])
    f = default_of_a_nested_function
    H = cr.hessian(f, x)
    np.testing.assert_allclose(H, np.diag(-2 * np.tanh(x) / np.cosh(x) ** 2), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cr.gradient(f, x)[0], 1 / np.cosh(x) ** 2, rtol=1e-12)


def add_through_a_slice(x):
    v = np.sin(x)
    r = v[1:]  # a view: NumPy's `r += ...` changes v
    r += x[:-1]
    return v * 2.0


def scale_through_a_slice(x):
    v = np.sin(x)
    r = v[1:]
    r *= 2
    return v * 2.0


def add_through_an_ellipsis_of_a_slice(x):
    v = np.sin(x)
    r = v[1:]
    r[...] += x[:-1]
    return v * 2.0


def add_through_a_reshape(x):
    v = np.sin(x)
    r = v.reshape(len(x), 1)
    r += 1.0
    return v * 1.0


def add_to_the_base_of_a_slice(x):
    v = np.sin(x)
    r = v[1:]
    v += x  # the view r sees it
    return r * 1.0


def test_in_place_update_through_a_view_of_a_dual_array_is_refused_or_followed():
    """Forward mode rebound the view (`r = r + x`): v kept its old value, a silent wrong value and
    derivative. A view of an array the function computed cannot take the write (its partials may
    be shared), so forward mode refuses it with the line; the tape follows a view by indexing
    (the write reaches v) and refuses a reshape's."""
    x = np.array([0.3, -0.5, 0.9])
    programs = (
        add_through_a_slice,
        scale_through_a_slice,
        add_through_an_ellipsis_of_a_slice,
        add_through_a_reshape,
        add_to_the_base_of_a_slice,
    )
    for f in programs:
        for run in (
            lambda: cr.jvp(f, (x,), (np.ones(3),)),
            lambda: cr.jacobian(f, x, mode="forward"),
        ):
            with pytest.raises(TypeError, match="may share memory") as info:
                run()
            assert f"{__file__}:" in str(info.value)
        # the tape writes through a view by indexing into its array (reverse/trace/writes.py), and
        # refuses an update of an array a reshape shares
        total = lambda z: np.sum(f(z))  # noqa: E731
        if f is add_through_a_reshape:
            with pytest.raises(TypeError, match="may share memory") as info:
                cr.gradient(total, x, engine="tape")
            assert f"{__file__}:" in str(info.value)
        else:
            y, back = cr.pullback(total, x, engine="tape")
            assert y == pytest.approx(total(x.copy()), rel=1e-12)
            np.testing.assert_allclose(back(1.0)[0], crt.fd_jacobian(total, x).ravel(), rtol=1e-7, atol=1e-9)
        with pytest.raises(cr.UnsupportedSyntaxError) as info:  # the source engine itself (the API takes the tape)
            source.pullback_full(f, x)
        assert __file__ in str(info.value)
    assert np.array_equal(x, [0.3, -0.5, 0.9])


def view_of_a_buffer_then_write(x):
    b = np.zeros_like(x)
    r = b[1:]
    b[1] = x[0]  # r sees it
    return r * 1.0


def view_of_a_buffer_then_plus_equals(x):
    b = np.zeros_like(x)
    r = b[1:]
    b += x * x
    return r * 1.0


def plus_equals_on_a_view_of_a_buffer(x):
    b = np.zeros_like(x)
    r = b[1:]
    r += np.sin(x[:-1])  # writes into b
    return b * 1.0


def plus_equals_on_a_view_of_a_copy(x):
    b = np.sin(x).copy()
    r = b[1:]
    r += x[:-1]
    t = b.reshape(1, len(x))
    b *= 2.0  # t sees it
    return np.concatenate([b, t[0]])


def rows_of_a_buffer(x):
    b = np.zeros_like(np.stack([x, x]))
    for i in range(2):
        b[i] += x * (i + 1.0)
    return b * 1.0


def test_forward_mode_writes_through_views_of_an_array_that_takes_writes():
    """A view of a buffer made by np.zeros_like (or of a copy) kept its own zero partials and,
    under `r += v`, was rebound: writes through the view or into the buffer did not reach the
    other (a silent zero derivative, or a wrong value)."""
    x = np.array([0.3, -0.5, 0.9])
    programs = (
        view_of_a_buffer_then_write,
        view_of_a_buffer_then_plus_equals,
        plus_equals_on_a_view_of_a_buffer,
        plus_equals_on_a_view_of_a_copy,
        rows_of_a_buffer,
    )
    for f in programs:
        y, dy = cr.jvp(f, (x,), (np.array([1.0, -2.0, 0.5]),))
        np.testing.assert_allclose(y, f(x.copy()), rtol=1e-14)
        np.testing.assert_allclose(dy, crt.fd_jvp(f, x, np.array([1.0, -2.0, 0.5])), rtol=1e-7, atol=1e-10)
        J = cr.jacobian(f, x, mode="forward")
        np.testing.assert_allclose(J, crt.fd_jacobian(f, x).reshape(J.shape), rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(J, cr.jacobian(f, x, mode="forward", chunk_size=1), rtol=1e-14)


def float32_sum_plus_a_float64_scalar(x, s=0.7):
    total = np.sum(x)  # np.float32
    return np.ravel(total + np.sin(s))  # np.float64 is a strong type: NumPy's result is float64


def float64_scalar_times_float32(s):
    return s * np.array([0.5, -1.5, 2.0], dtype=np.float32)  # a Python float is weak: float32


def test_forward_tangents_follow_the_primal_dtype_and_jacobians_agree_across_modes():
    """np.float32 + np.float64 is float64 in NumPy, but forward mode's tangent of the NumPy scalar
    stayed float32, so the forward Jacobian was float32 and the reverse one float64; and a float32
    output of a Python float input gave a float32 forward Jacobian and a float64 reverse one."""
    x = np.array([0.3, -0.5, 0.9], dtype=np.float32)
    y, dy = cr.jvp(float32_sum_plus_a_float64_scalar, (x,), (np.ones(3, np.float32),))
    assert y.dtype == np.float64 and dy.dtype == np.float64
    y, dy = cr.jvp(lambda z: np.sum(z) + np.float64(0.5), (x,), (np.ones(3, np.float32),))
    assert type(y) is np.float64 and np.asarray(dy).dtype == np.float64 and dy == 3.0
    for f, arg in ((float32_sum_plus_a_float64_scalar, x), (float64_scalar_times_float32, 0.7)):
        Js = [cr.jacobian(f, arg, mode="forward"), cr.jacobian(f, arg, mode="forward", chunk_size=1)]
        Js += [cr.jacobian(f, arg, mode="reverse", engine=engine) for engine in ("source", "tape")]
        assert {J.dtype for J in Js} == {np.dtype(np.float64)}
        for J in Js[1:]:
            np.testing.assert_allclose(J, Js[0], rtol=1e-6)
    J = cr.jacobian(lambda z: np.sin(z) * np.float32(2.0), x, mode="forward")
    assert J.dtype == np.float32  # float32 in, float32 out: stays float32


def filled_with_a_dual_then_written(x):
    b = np.full_like(x, x[0])  # the fill carries a derivative
    b[1] = x[2]
    r = b[:2]
    r *= 2.0
    return b * 1.0


def test_forward_mode_writes_into_np_full_like_of_a_dual_fill():
    """np.full_like(x, v) with a dual v made a dual whose primal was itself a dual: writing into
    it, which the documentation promises, raised "assigning into a dual array is not supported"."""
    x = np.array([0.3, -0.5, 0.9])
    f = filled_with_a_dual_then_written
    y, dy = cr.jvp(f, (x,), (np.array([1.0, 2.0, 3.0]),))
    np.testing.assert_allclose(y, [0.6, 1.8, 0.3], rtol=1e-14)
    np.testing.assert_allclose(dy, crt.fd_jvp(f, x, np.array([1.0, 2.0, 3.0])), rtol=1e-7)
    J = cr.jacobian(f, x, mode="forward")
    np.testing.assert_allclose(J, crt.fd_jacobian(f, x).reshape(J.shape), rtol=1e-7, atol=1e-10)


@dataclasses.dataclass
class Inputs:
    x: np.ndarray
    s: float


Pair = collections.namedtuple("Pair", ["x", "s"])


def weighted_sines(p):
    return np.sum(np.sin(p.x) * p.s)


def test_jvp_takes_a_structures_tangent_as_a_value_of_its_own_type():
    """`cr.jvp(f, (p,), (dp,))` with `dp` a dataclass or namedtuple like `p` (as `cr.pullback` takes
    such a cotangent) had raised "a Inputs is not a tangent of a Inputs", naming no line."""
    x, dx = np.array([0.3, -0.8, 1.1]), np.array([1.0, -0.5, 2.0])
    want = float(np.sum(np.cos(x) * dx) * 0.7 + np.sum(np.sin(x)) * 0.25)
    for cls in (Inputs, Pair):
        for tangent in (cls(dx, 0.25), cr.Tangent[cls](x=dx, s=0.25)):
            y, dy = cr.jvp(weighted_sines, (cls(x, 0.7),), (tangent,))
            assert y == weighted_sines(cls(x, 0.7))
            np.testing.assert_allclose(dy, want, rtol=1e-14)
            np.testing.assert_allclose(
                dy, crt.fd_jvp(weighted_sines, cls(x, 0.7), cr.Tangent[cls](x=dx, s=0.25)), rtol=1e-7
            )
