"""Part 2 of the source engine: loops, comprehensions, higher-order built-ins and writes into
containers the function made, each against finite differences; the generated code does not grow
with the number of iterations, and what cannot be differentiated correctly is refused."""

import dataclasses
import functools
import itertools
import math
import pathlib
from typing import NamedTuple

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse.source import pullback_full, show

HERE = pathlib.Path(__file__).resolve()


def check(fn, *args):
    crt.check_grads(fn, args, modes=("reverse",), order=1, engine="source")


def line_of(marker: str) -> int:
    for number, line in enumerate(HERE.read_text().splitlines(), start=1):
        if marker in line and "line_of" not in line:
            return number
    raise LookupError(marker)


# ----- loops ----------------------------------------------------------------------------------


def sine_chain(x, n):
    for _ in range(n):
        x = math.sin(x) * 1.01 + 0.1
    return x


def mysum(X):
    total = 0.0
    for i in range(len(X)):
        total += X[i]
    return total


def loops_of_every_kind(xs, m, d, w):
    total = 0.0
    for x in xs:  # a list
        total = total + x * w
    for row in m:  # the rows of an array
        total = total + row @ row
    for a, b in zip(xs, reversed(xs)):
        total = total + a * b
    for i, x in enumerate(xs):
        total = total + i * x
    for key, value in d.items():
        total = total + value * len(key)
    for value in d.values():
        total = total * 0.5 + value
    k = 0
    while total > 1.0 and k < 100:
        total = total * 0.75
        k += 1
    return total


def jumps(xs, w):
    total = 0.0
    for x in xs:
        if x < 0:
            continue
        if x > 2.5:
            break
        total = total + x * w
    else:
        total = total * 2.0
    for x in xs:
        for y in xs:
            if x * y > 3.0:
                return total + x * y * w
    return total


def nested_and_dependent(x, n):
    total = 0.0
    for i in range(n):
        for j in range(i, n):
            total = total + math.cos(x * i) * j
        if i % 2:
            x = x * 1.1
    return total


@pytest.mark.parametrize(
    "fn, args",
    [
        (sine_chain, (0.4, 25)),
        (mysum, (np.linspace(0.0, 1.0, 7),)),
        (loops_of_every_kind, ([0.5, -1.5, 2.0], np.array([[1.0, 2.0], [0.5, -0.25]]), {"ab": 0.5, "c": 1.5}, 0.75)),
        (jumps, ([0.5, -1.0, 2.0, 3.0], 1.5)),
        (jumps, ([0.5, 1.0, 0.2], 1.5)),
        (jumps, ([0.5, 1.0, 2.0], 1.5)),
        (nested_and_dependent, (0.7, 5)),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_loops(fn, args):
    check(fn, *args)


def test_a_loop_that_never_runs():
    assert pullback_full(sine_chain, 0.4, 0)[1](1.0)[1] == 1.0
    assert pullback_full(mysum, np.zeros(0))[1](1.0)[1] == cr.ZeroTangent()


def test_generated_code_does_not_grow_with_the_trip_count():
    short, long = show(sine_chain, 0.4, 3), show(sine_chain, 0.4, 3000)
    assert short == long
    assert len(show(mysum, np.ones(5)).splitlines()) == len(show(mysum, np.ones(50_000)).splitlines())


def test_a_range_loop_saves_nothing_per_iteration_for_indexing_and_real_scalars():
    text = show(mysum, np.ones(3))
    assert "_stack" not in text  # X[i] is made again in the reverse pass, total + X[i] is inlined
    assert "for i in reversed(" in text
    assert show(sine_chain, 0.4, 3).count("_stack = []") == 1  # only math.sin's pullbacks


def test_a_pullback_of_a_loop_can_be_called_again():
    _, back = pullback_full(sine_chain, 0.4, 10)
    assert back(1.0) == back(1.0)
    assert back(2.0)[1] == pytest.approx(2 * back(1.0)[1])


# ----- comprehensions and higher-order built-ins -------------------------------------------------


def comprehensions(xs, w):
    squares = [x * x for x in xs if x > 0]
    table = {f"k{i}": x * w for i, x in enumerate(xs)}
    pairs = [a * b for a in xs for b in squares if a > b]
    labels = {round(x) for x in xs}  # a set of values that carry no derivative
    stacked = np.stack([np.array([x, x * w]) for x in xs])
    return (
        sum(squares)
        + sum(v for v in table.values())
        + sum(pairs)
        + len(labels)
        + max(x * w for x in xs)
        - min(x * x for x in xs)
        + tuple(x * 3 for x in xs)[1]
        + np.array([x * x for x in xs]).sum()
        + stacked.sum()
    )


def higher_order(xs, w):
    by_distance = sorted(xs, key=lambda v: abs(v - w))
    smallest = min(xs, key=lambda v: v * v)
    largest = max(xs, key=lambda v: -v)
    folded = functools.reduce(lambda a, b: a * w + b, xs)
    running = list(itertools.accumulate(xs, lambda a, b: a * b))
    kept = list(filter(lambda v: v > 0, map(lambda v: v * w, xs)))
    return by_distance[0] * smallest + largest + folded + running[-1] + sum(kept)


def test_comprehensions_and_higher_order_built_ins():
    check(comprehensions, [0.6, -1.4, 2.2, 1.2], 0.75)
    check(higher_order, [0.5, -1.5, 2.0, 1.2], 0.75)


def test_comprehension_variables_do_not_leak():
    def keeps_x(xs, x):
        ys = [x * 2 for x in xs]
        return x * ys[0]

    assert keeps_x([3.0], 5.0) == 30.0
    y, back = pullback_full(keeps_x, [3.0], 5.0)
    assert y == 30.0 and back(1.0)[1:] == (cr.Tangent[list](10.0), 6.0)


# ----- objects of the user's classes, iterated -------------------------------------------------


@dataclasses.dataclass
class Bag:
    """Iterated by its ``__iter__``, over a field; its ``items`` method, as a container may have,
    is not the values of an iterator the rules made, which also has ``items``."""

    members: list

    def __iter__(self):
        return iter(self.members)

    def items(self):
        return list(enumerate(self.members))


class Pair(NamedTuple):
    a: object
    b: object


def loops_over_a_bag(x):
    total = 0.0
    for s in Bag([x * 2.0, x * 3.0]):
        total = total + np.sum(s * s)
    for s in Pair(x, x * x):  # a namedtuple is iterated as the tuple it is
        total = total + np.sum(s * x)
    return total


def loop_over_a_bag_stops_early(x):
    total = 0.0
    for s in Bag([x * 2.0, x * x, x * 5.0]):
        total = total + np.sum(s * s * s)
        if np.sum(total) > 5.0:
            break
    return total


def bags_in_nested_loops(x):
    total = 0.0
    for k in range(3):
        for s in Bag([x * k, x * 3.0]):
            total = total + np.sum(s * s * x)
    return total


def bag_consumed_by_built_ins(x):
    bag = Bag([x * 2.0, x * 3.0])
    a, b = bag
    it = iter(bag)
    first = next(it)
    return (
        sum(np.sum(s * s) for s in bag)
        + sum(np.sum(u * v * v) for u, v in zip(bag, [x, x * x]))
        + sum(np.sum((i + 1) * s * s) for i, s in enumerate(bag))
        + np.sum(a * b * b)
        + np.sum(first * sum(it))
    )


@pytest.mark.parametrize(
    "fn", [loops_over_a_bag, loop_over_a_bag_stops_early, bags_in_nested_loops, bag_consumed_by_built_ins]
)
@pytest.mark.parametrize("x", [0.7, np.array([1.0, 2.0])], ids=["float", "array"])
def test_an_object_of_the_users_class_is_iterated_by_its_iter_method(fn, x):
    """The loop goes over the values its ``__iter__`` gives, differentiated; their cotangents go
    back through it to the object's field, not to the object as a list of them."""
    y, back = pullback_full(fn, x)  # the source engine itself
    grad = cr.unthunk(back(1.0)[1])
    assert y == pytest.approx(fn(x), rel=1e-14)
    np.testing.assert_allclose(grad, crt.fd_jacobian(fn, x).reshape(np.shape(x)), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(cr.gradient(fn, x, engine="tape")[0], grad, rtol=1e-12)
    if np.ndim(x) == 0:  # forward over the source engine
        slope = crt.fd_jacobian(lambda z: cr.gradient(fn, z)[0], x)
        assert cr.hessian(fn, x) == pytest.approx(slope.item(), rel=1e-6)


@dataclasses.dataclass
class Trajectory:
    states: list

    def __iter__(self):
        yield from self.states  # <- a generator method


@dataclasses.dataclass
class Cursor:
    data: list
    position: int = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.position >= len(self.data):
            raise StopIteration
        self.position += 1
        return self.data[self.position - 1]


@dataclasses.dataclass
class Samples:
    values: list

    def __getitem__(self, i):
        return self.values[i] * 2.0


def cubes_of(make, x):
    total = 0.0
    for s in make([x * 2.0, x * x]):  # <- iterated
        total = total + s * s * s
    return total


@pytest.mark.parametrize(
    "make, error, marker, phrase",
    [
        (Trajectory, cr.UnsupportedSyntaxError, "<- a generator method", "a generator cannot be differentiated"),
        (Cursor, cr.NoRuleError, "<- iterated", "it returns the object itself (its __next__ is not differentiated)"),
        (Samples, cr.NoRuleError, "<- iterated", "iterated by its __getitem__ until an IndexError"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_an_object_whose_values_its_class_gives_otherwise_is_refused(make, error, marker, phrase):
    """A generator ``__iter__``, an iterator class's ``__next__`` and the ``__getitem__`` protocol
    are refused at the line, never run by Python over the values being differentiated; the API
    differentiates on the tape."""
    f = functools.partial(cubes_of, make)
    with pytest.raises(error) as info:
        pullback_full(f, 0.7)
    assert f"{HERE}:{line_of(marker)}" in str(info.value) and phrase in str(info.value), str(info.value)
    grad = cr.gradient(f, 0.7)[0]
    assert grad == pytest.approx(crt.fd_jacobian(f, 0.7).item(), rel=1e-7)
    assert grad == pytest.approx(cr.gradient(f, 0.7, engine="tape")[0], rel=1e-12)


# ----- with -----------------------------------------------------------------------------------------


def with_errstate(x):
    with np.errstate(divide="ignore"):
        y = np.log(x) * 2.0
    return y.sum()


def test_with_blocks():
    check(with_errstate, np.array([0.5, 2.0]))


# ----- writing into containers the function made -----------------------------------------------------


def writes(x, w):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = x[i] * w
        out[i] += out[i - 1] if i else 0.0
    grid = np.zeros((2, 3))
    grid[0] = out[:3]
    grid[1, 1:] = x[:2] * w
    values = []
    for v in out:
        values.append(v * v)
    values.extend([w, w * w])
    slots = [0.0, 0.0]
    slots[1] = values[0]
    table = {}
    table["a"] = values[-1]
    table["b"] = table["a"] * 2.0
    return grid.sum() + np.array(values).sum() + slots[1] + table["b"]


def test_writes_into_containers_the_function_made():
    check(writes, np.array([0.5, -1.5, 2.0, 0.25]), 0.8)


def test_a_buffer_overwritten_by_a_constant_drops_the_old_values():
    def overwrite(x):
        out = np.zeros(2)
        out[0] = x * 3.0
        out[0] = 1.0
        return out.sum()

    assert pullback_full(overwrite, 2.0)[1](1.0)[1] == 0.0


def writes_into_an_argument(x):
    for i in range(len(x)):
        x[i] = x[i] * 2.0  # <- argument write
    return x.sum()


def writes_through_another_name(x):
    out = np.zeros(3)
    alias = out
    alias[0] = x  # <- alias write
    return out.sum()


def writes_after_escape(x):
    out = np.zeros(3)
    out[0] = x
    total = np.sum(out)
    out[1] = x * 2.0  # <- written after escape
    return total + out.sum()


def writes_into_an_argument_in_disguise(x):
    out = np.asarray(x)  # <- returns x itself
    out[0] = 1.0
    return out.sum()


def writes_into_a_view(x):
    out = np.zeros((2, 2))
    row = out[0]
    out[0, 0] = x  # <- the view sees it
    return row.sum()


def adds_in_place_to_an_array(x):
    out = np.zeros(2)
    head = out[:1]  # a view, which the update in place would change
    out += x  # <- whole-array +=
    return out.sum() + head.sum()


@pytest.mark.parametrize(
    "fn, arg, marker, phrase",
    [
        (writes_into_an_argument, np.ones(2), "<- argument write", "writing into the argument `x` in place"),
        (writes_through_another_name, 1.0, "<- alias write", "must be bound to a new object"),
        (writes_after_escape, 1.0, "<- written after escape", "writing into `out` after it was passed"),
        (writes_into_an_argument_in_disguise, np.ones(2), "<- returns x itself", "shares its memory"),
        (writes_into_a_view, 1.0, "<- the view sees it", "writing into `out` after it was passed"),
        (adds_in_place_to_an_array, 1.0, "<- whole-array +=", "updates the ndarray in place"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_writes_that_would_be_wrong_are_refused_with_the_line(fn, arg, marker, phrase):
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, arg)[1](1.0)
    message = str(info.value)
    where = f"{HERE}:{line_of(marker)}:"
    if fn is writes_through_another_name:
        where = f"{HERE}:{line_of(marker) - 1}:"  # the binding to an existing object is refused
    assert message.startswith(where), message
    assert phrase in message


def adds_into_its_own_array(x):
    y = np.zeros(3)
    y += x
    return np.sum(y * y)


def extends_its_own_list(x):
    lst = []
    for i in range(3):
        lst += [x[i] * 2.0]
    return lst[0] * lst[1] + lst[2]


def scales_its_own_array_after_reading_it(x):
    y = np.ones(3)
    z = y * x  # its pullback keeps the values before the update
    y *= x
    return np.sum(z * y)


@pytest.mark.parametrize(
    "fn",
    [adds_into_its_own_array, extends_its_own_list, scales_its_own_array_after_reading_it],
    ids=lambda f: f.__name__,
)
def test_an_augmented_assignment_on_an_object_only_the_function_holds_rebinds(fn):
    """``y += x`` on a new array or list that nothing else holds: rebinding gives the same value."""
    check(fn, np.array([0.5, -1.5, 2.0]))
    if fn is extends_its_own_list:  # the tape refuses updating a plain array with a tracked value
        crt.check_grads(fn, (np.array([0.5, -1.5, 2.0]),), modes=("reverse",), order=1, engine="tape")


def widens_its_own_array(x):
    y = np.zeros(3, np.float32)
    y += x  # <- float32 +=
    return np.sum(y)


def broadcasts_its_own_array(x):
    y = np.zeros(3)
    y += np.ones((2, 3)) * x  # <- broadcast +=
    return np.sum(y)


def extends_its_own_list_by_a_tuple(x):
    lst = [x]
    lst += (x * 2.0,)  # <- tuple +=
    return lst[0] * lst[1]


@pytest.mark.parametrize(
    "fn, marker, phrase",
    [
        (widens_its_own_array, "<- float32 +=", "would change them"),
        (broadcasts_its_own_array, "<- broadcast +=", "would change them"),
        (extends_its_own_list_by_a_tuple, "<- tuple +=", "updates the list in place with a tuple"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_an_augmented_assignment_whose_result_differs_from_the_update_in_place_is_refused(fn, marker, phrase):
    """In place, NumPy keeps the array's dtype and shape (casting, or refusing), and a list takes
    any iterable: where rebinding would give something else, the engine refuses."""
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, np.array([0.5, -1.5, 2.0]) if fn is not extends_its_own_list_by_a_tuple else 1.5)
    assert str(info.value).startswith(f"{HERE}:{line_of(marker)}:5: "), str(info.value)
    assert phrase in str(info.value)


def test_an_argument_is_never_modified():
    x = np.array([1.0, 2.0])
    with pytest.raises(cr.UnsupportedSyntaxError):
        pullback_full(writes_into_an_argument, x)
    np.testing.assert_array_equal(x, [1.0, 2.0])


def scales_rows_in_place(m, w):
    out = m * 1.0
    for i in range(len(out)):
        out[i] *= w * (i + 1)
        out[i] += m[i]
    return (out**2).sum()


def test_augmented_writes_of_array_rows():
    check(scales_rows_in_place, np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]]), 0.7)


def writes_back_a_column_it_read(x):
    y = np.zeros((3, 3))
    y[:, 1] = y[:, 1] + x
    return np.sum(y * y)


def writes_a_row_made_from_another(x):
    y = np.zeros((2, 3))
    y[0] = x
    y[1] = y[0] * 2.0
    return np.sum(y * y)


def squares_a_row_in_place(x):
    y = np.ones((2, 3))
    y[0] = x
    y[0] = y[0] * y[0]  # the product's pullback keeps both operands: the row's values before the write
    return np.sum(y * x)


@pytest.mark.parametrize(
    "fn",
    [writes_back_a_column_it_read, writes_a_row_made_from_another, squares_a_row_in_place],
    ids=lambda f: f.__name__,
)
def test_an_element_read_and_written_back_in_one_statement(fn):
    """``y[j] = f(y[i])``: the view ``y[i]`` is used only before the write that ends the statement,
    so reading a copy of it is the same (as for ``y[i] += v``)."""
    check(fn, np.array([0.5, -1.5, 2.0]))


def returns_a_view_it_overwrote(x):
    y = np.zeros((2, 3))
    y[0] = x
    z = y[0]
    y[0] = 5.0  # <- z sees it
    return np.sum(z * x)


def names_a_view_in_the_statement(x):
    y = np.zeros((2, 3))
    y[0] = x
    y[0] = (z := y[0]) * 2.0  # <- z is the user's
    return np.sum(z * x)


def _twice(v):
    return v * 2.0


def passes_the_view_to_a_call(x):
    y = np.zeros((2, 3))
    y[0] = x
    y[0] = _twice(y[0])  # <- a call may keep it
    return np.sum(y * x)


@pytest.mark.parametrize(
    "fn, marker",
    [
        (returns_a_view_it_overwrote, "<- z sees it"),
        (names_a_view_in_the_statement, "<- z is the user's"),
        (passes_the_view_to_a_call, "<- a call may keep it"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_a_view_that_outlives_the_statement_is_still_refused(fn, marker):
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, np.array([0.5, -1.5, 2.0]))
    assert str(info.value).startswith(f"{HERE}:{line_of(marker)}:5: writing into `y` after it was"), str(info.value)


def eliminates_on_copies_of_its_arguments(A, b):
    A = A.copy()
    b = b.copy()
    f = A[1, 0] / A[0, 0]
    A[1] -= f * A[0]
    b[1] -= f * b[0]
    return np.sum(A**2) + b @ b


def writes_before_copying(A):
    A[0, 0] = 1.0  # <- before the copy
    A = A.copy()
    return np.sum(A)


def copies_in_a_branch(A):
    if A[0, 0] > 0:
        A = A.copy()
    A[0, 0] = 1.0  # <- maybe into the argument
    return np.sum(A)


def test_an_argument_bound_to_its_copy_takes_writes():
    """``A = A.copy()`` at the top of the function: the writes go into the copy, the caller's array
    stays as it was; the gradient and the Hessian match finite differences."""
    A, b = np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])
    A0, b0 = A.copy(), b.copy()
    crt.check_grads(eliminates_on_copies_of_its_arguments, (A, b), modes=("reverse",), order=2, engine="source")
    pullback_full(eliminates_on_copies_of_its_arguments, A, b)
    np.testing.assert_array_equal(A, A0)
    np.testing.assert_array_equal(b, b0)


@pytest.mark.parametrize(
    "fn, marker", [(writes_before_copying, "<- before the copy"), (copies_in_a_branch, "<- maybe into the argument")]
)
def test_a_write_the_copy_does_not_come_before_is_refused(fn, marker):
    A = np.array([[4.0, 1.0], [1.0, 3.0]])
    with pytest.raises(cr.UnsupportedSyntaxError, match="writing into the argument `A`") as info:
        pullback_full(fn, A)
    assert str(info.value).startswith(f"{HERE}:{line_of(marker)}:"), str(info.value)
    np.testing.assert_array_equal(A, [[4.0, 1.0], [1.0, 3.0]])
