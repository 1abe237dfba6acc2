"""``x[i] op= v``: the source engine computes ``x[i] = x[i] op v``. Python updates a mutable
element (an array held by a list or dict) in place, which every other holder of it sees: where
the function made the container and its elements and nothing else can hold them, writing the
result back is the same and the source engine does it; elsewhere it refuses naming the line and
the fix, and the entry points differentiate on the tape. Numbers, and the elements of arrays
(numbers, or new views written back), keep the rewrite."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse.source import pullback_full
from chainrules.testing import fd_jacobian

HERE = pathlib.Path(__file__).resolve()


def line_of(marker: str) -> int:
    """The line of this file that contains ``marker`` (in a comment)."""
    for number, line in enumerate(HERE.read_text().splitlines(), start=1):
        if marker in line and "line_of" not in line:
            return number
    raise LookupError(marker)


def updates_an_array_another_name_holds(a):
    b = a * 1.0
    held = [b]
    held[0] += 1.0  # <- b changes too
    return np.sum(held[0] * b)


def updates_an_array_the_list_holds_twice(a):
    b = a * 1.0
    held = [b, b]
    held[0] *= 2.0  # <- held[1] changes too
    return np.sum(held[1])


def updates_an_array_of_a_copied_dict(p):
    d = dict(p)
    d["w"] += 1.0  # <- p["w"] changes too
    return np.sum(p["w"] * d["w"])


def updates_a_number_in_a_list(a):
    held = [1.0, a[0]]
    held[0] += a[1]
    held[1] *= held[0]
    return held[0] * held[1]


def updates_blocks_and_rows_of_an_array(a):
    K = np.zeros((3, 3))
    K[0:2, 0:2] += np.outer(a, a)
    K[1] += a[0]
    return np.sum(K * K)


@pytest.mark.parametrize(
    "f, arg, marker",
    [
        (updates_an_array_another_name_holds, np.array([1.0, 2.0]), "<- b changes too"),
        (updates_an_array_the_list_holds_twice, np.array([1.0, 2.0]), "<- held[1] changes too"),
        (updates_an_array_of_a_copied_dict, {"w": np.array([1.0, 2.0])}, '<- p["w"] changes too'),
    ],
)
def test_an_array_element_updated_in_place_is_refused_at_its_line(f, arg, marker):
    with pytest.raises(
        cr.UnsupportedSyntaxError, match=rf"{HERE}:{line_of(marker)}:\d+: .*updates the ndarray in place"
    ):
        pullback_full(f, arg)


def test_the_entry_point_differentiates_a_shared_element_update_on_the_tape():
    a = np.array([1.0, 2.0])
    value, (grad,) = cr.value_and_gradient(updates_an_array_another_name_holds, a)
    assert value == updates_an_array_another_name_holds(a.copy()) == 13.0
    np.testing.assert_allclose(grad, 2.0 * (a + 1.0))
    value, (grad,) = cr.value_and_gradient(updates_an_array_the_list_holds_twice, a)
    assert value == 6.0
    np.testing.assert_allclose(grad, [2.0, 2.0])


@pytest.mark.parametrize("f", [updates_a_number_in_a_list, updates_blocks_and_rows_of_an_array])
def test_numbers_and_parts_of_arrays_are_updated_by_the_source_engine(f):
    a = np.array([0.7, -1.3])
    y, back = pullback_full(f, a)
    assert y == pytest.approx(f(a.copy()))
    np.testing.assert_allclose(back(1.0)[1], fd_jacobian(lambda z: f(z.copy()), a)[0], rtol=1e-7)


# ----- containers only the function holds: the element is rebound ------------------------------

X = np.array([0.5, -1.5, 2.0])


def accumulates_into_a_list_display(x):
    acc = [np.zeros(3), np.zeros(3, dtype=x.dtype)]  # (a call whose arguments the lowering packs)
    for i in range(4):
        acc[i % 2] += x * (i + 1)
    return np.sum(acc[0] * acc[1])


def accumulates_pairwise_forces(x):
    pos = x.reshape(3, 1) * np.array([1.0, 0.5])
    forces = [np.zeros(2) for _ in range(3)]
    for i in range(3):
        for j in range(i + 1, 3):
            f = (pos[i] - pos[j]) * np.sum((pos[i] - pos[j]) ** 2)
            forces[i] -= f
            forces[j] += f
    return sum(np.sum(fi * fi) for fi in forces)


def adds_weight_decay_to_a_dict(x):
    params = {"w": x * 2.0, "b": x[:2] + 1.0}
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    for k in params:
        grads[k] += 0.1 * params[k] ** 2
    grads["w"] *= x
    for k in grads:  # its keys
        grads[k] /= len(grads)
    return np.sum(grads["w"]) + np.sum(grads["b"] ** 2)


def adds_into_its_own_typed_array(x):
    y = np.zeros_like(x, dtype=x.dtype)
    y += x * x
    return np.sum(y * x)


def reads_an_element_in_the_update(x):
    acc = [x * 1.0, x * 2.0]
    acc[0] += acc[1] * acc[0]
    return np.sum(acc[0] ** 2) + np.sum(acc[1])


def reads_elements_between_updates(x):
    acc = []
    for i in range(2):
        acc.append(np.ones(3) * i)
    total = 0.0
    for i in range(3):
        total = total + np.sum(acc[0] * x)  # read before the next iteration's update: a value, not the object
        acc[0] += np.sin(x) * (i + 1)
        acc[1] *= x
    return total + np.sum(acc[0] * acc[1])


def extends_lists_in_a_list(x):
    rows = [[], []]
    for i in range(3):
        rows[i % 2] += [x[i] * 2.0]
    return rows[0][0] * rows[0][1] + rows[1][0]


def counts_into_a_dict_of_floats_and_arrays(x):
    stats = {"n": 0.0, "sum": np.zeros(3)}
    for i in range(2):
        stats["n"] += 1.0
        stats["sum"] += x**2 * (i + 1)
    return np.sum(stats["sum"]) / stats["n"]


def writes_into_a_comprehension_s_list(x):
    ys = [x * k for k in range(1, 4)]
    ys[0] = ys[0] * ys[2]
    ys.append(np.cos(x))
    return sum(np.sum(y) for y in ys)


UPDATES = [
    adds_into_its_own_typed_array,
    writes_into_a_comprehension_s_list,
    accumulates_into_a_list_display,
    accumulates_pairwise_forces,
    adds_weight_decay_to_a_dict,
    reads_an_element_in_the_update,
    reads_elements_between_updates,
    extends_lists_in_a_list,
    counts_into_a_dict_of_floats_and_arrays,
]


@pytest.mark.parametrize("fn", UPDATES, ids=lambda f: f.__name__)
def test_an_element_update_on_a_container_only_the_function_holds_rebinds(fn):
    """The source engine's gradient and Hessian against finite differences; forward mode (which
    runs the function as the source engine's primal does) against them too."""
    x = X.copy()
    y, back = pullback_full(fn, x)  # the source engine itself, not a fallback
    np.testing.assert_allclose(back(1.0)[1], crt.fd_vjp(fn, 1.0, X.copy()), rtol=1e-7, atol=1e-9)
    assert y == fn(X.copy())
    crt.check_grads(fn, (x,), modes=("reverse",), order=2, engine="source")
    gradient = cr.gradient(fn, x)[0]
    np.testing.assert_allclose(cr.jvp(fn, (x,), (np.ones(3),))[1], np.sum(gradient), rtol=1e-10)
    np.testing.assert_array_equal(x, X)


def aliases_an_element(x):
    a = np.zeros(3)
    acc = [a, np.zeros(3)]
    acc[0] += x  # <- element held by a
    return np.sum(a) + np.sum(acc[0])


def repeats_one_array(x):
    acc = [np.zeros(3)] * 2
    acc[0] += x  # <- repeated element
    return np.sum(acc[1] * x)


def keeps_an_element_in_a_name(x):
    acc = [np.zeros(3), np.zeros(3)]
    first = acc[0]
    acc[0] += x  # <- element kept in a name
    return np.sum(first * x)


def holds_a_view(x):
    buf = np.zeros((2, 3))
    acc = [buf[0], buf[1]]
    acc[0] += x  # <- element is a view
    return np.sum(buf * x)


def holds_the_argument(x):
    acc = [x, x * 2.0]
    acc[0] += 1.0  # <- element is the argument
    return np.sum(acc[0] * x)


def passes_the_list_on(x):
    acc = [np.zeros(3)]
    seen = list(acc)
    acc[0] += x  # <- list copied before
    return np.sum(seen[0] * x) + np.sum(acc[0])


def iterates_before_updating(x):
    acc = [np.zeros(3), np.ones(3)]
    total = 0.0
    for _ in range(2):
        for a in acc:
            total = total + np.sum(a * x)
        acc[0] += x  # <- loop variable holds an element
    return total


@pytest.mark.parametrize(
    "fn, marker",
    [
        (aliases_an_element, "<- element held by a"),
        (repeats_one_array, "<- repeated element"),
        (keeps_an_element_in_a_name, "<- element kept in a name"),
        (holds_a_view, "<- element is a view"),
        (holds_the_argument, "<- element is the argument"),
        (passes_the_list_on, "<- list copied before"),
        (iterates_before_updating, "<- loop variable holds an element"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_an_element_update_someone_else_could_see_is_refused(fn, marker):
    """Python updates the element in place, which another holder of it (a name, a second slot, the
    array it views, the caller) sees; rebinding would not: refused, naming the line and the fix."""
    x = X.copy()
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, x)
    message = str(info.value)
    assert message.startswith(f"{HERE}:{line_of(marker)}:"), message
    assert "updates the ndarray in place" in message and "x[i] = x[i] + ..." in message
    np.testing.assert_array_equal(x, X)


def widens_an_element(x):
    acc = [np.zeros(3, np.float32)]
    acc[0] += x  # <- float32 element +=
    return np.sum(acc[0])


def broadcasts_an_element(x):
    acc = {"a": np.zeros(3)}
    acc["a"] += np.ones((2, 3)) * x  # <- broadcast element +=
    return np.sum(acc["a"])


@pytest.mark.parametrize(
    "fn, marker",
    [(widens_an_element, "<- float32 element +="), (broadcasts_an_element, "<- broadcast element +=")],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_an_element_update_whose_result_differs_from_the_update_in_place_is_refused(fn, marker):
    """In place, NumPy keeps the element's dtype and shape; rebinding would change them: refused."""
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, X.copy())
    assert str(info.value).startswith(f"{HERE}:{line_of(marker)}:5: "), str(info.value)
    assert "would change them" in str(info.value)


# ----- objects of the user's with an in-place operator ----------------------------------------------


class Accumulator:
    """``+`` makes a new accumulator, ``+=`` adds into this one (what Python calls for ``a += v``)."""

    def __init__(self, total):
        self.total = total

    def __add__(self, other):
        return Accumulator(self.total + other)

    def __iadd__(self, other):
        self.total = self.total + other
        return self


class InPlaceOnly:
    def __init__(self, total):
        self.total = total

    def __iadd__(self, other):
        self.total = self.total + other
        return self


def accumulates_into_a_shared_object(x):
    a = Accumulator(np.zeros(3))
    held = [a]
    for k in range(3):
        a += x * (k + 1)  # <- Accumulator.__iadd__
    return np.sum(held[0].total ** 2)


def accumulates_in_place_only(x):
    a = InPlaceOnly(np.zeros(3))
    for k in range(3):
        a += x * (k + 1)  # <- InPlaceOnly.__iadd__
    return np.sum(a.total**2)


@pytest.mark.parametrize(
    "f, marker, kind",
    [
        (accumulates_into_a_shared_object, "<- Accumulator.__iadd__", "Accumulator"),
        (accumulates_in_place_only, "<- InPlaceOnly.__iadd__", "InPlaceOnly"),
    ],
)
def test_an_in_place_operator_of_the_users_class_is_refused_and_the_tape_takes_it(f, marker, kind):
    """Python's ``a += v`` calls ``a.__iadd__(v)``, which the source engine's ``a = a + v`` would
    not (a holder of ``a`` would miss the update, or ``+`` does not exist): refused at the line, and
    the entry points differentiate the function on the tape."""
    x = np.array([0.5, -1.0, 0.8])
    where = rf"{HERE}:{line_of(marker)}:\d+: .*updates the {kind} in place"
    with pytest.raises(cr.UnsupportedSyntaxError, match=where):
        pullback_full(f, x)
    value, (grad,) = cr.value_and_gradient(f, x)
    assert value == pytest.approx(f(x.copy()))
    np.testing.assert_allclose(grad, 2.0 * 6.0 * 6.0 * x)  # total = 6 x
