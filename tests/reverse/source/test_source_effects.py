"""Calls that change a container in place (the effects pass): a write the reverse pass cannot
follow is refused with the user's file:line:col and what to write instead, and what it advises
differentiates correctly (finite differences, and every reverse engine)."""

import dataclasses
import heapq
import pathlib
import struct

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse.source import effects, pullback_full
from chainrules.reverse.source.simplify import has_typed_rules

HERE = pathlib.Path(__file__).resolve()
X = np.array([0.5, -1.3, 2.0])


def where(marker: str, call: str) -> str:
    """``file:line:col`` of ``call`` on the line carrying ``marker``."""
    for number, line in enumerate(HERE.read_text().splitlines(), start=1):
        if marker in line and "where(" not in line:
            return f"{HERE}:{number}:{line.index(call) + 1}: "
    raise LookupError(marker)


def check(fn, *args, engine=None):
    """The reverse engines (both by default) against finite differences."""
    crt.check_grads(fn, args, modes=("reverse",), order=1, engine=engine)


@dataclasses.dataclass
class Box:
    w: float = 0.0


# ----- each refused call, with what its message advises -------------------------------------


def copyto(x):
    out = np.zeros(3)
    np.copyto(out, 2.0 * x)  # <- copyto
    return np.sum(out * x)


def copyto_advised(x):
    out = np.zeros(3)
    out[...] = 2.0 * x
    return np.sum(out * x)


def out_keyword(x):
    buf = np.zeros(3)
    np.add(x, x, out=buf)  # <- out keyword
    return np.sum(buf * x)


def out_positional(x):
    buf = np.zeros(3)
    np.multiply(x, x, buf)  # <- out positional
    return np.sum(buf * x)


def out_of_a_reduction(x):
    buf = np.zeros(3)
    np.cumsum(x, out=buf)  # <- cumsum out
    return np.sum(buf * x)


def out_of_a_reduction_advised(x):
    buf = np.zeros(3)
    buf[...] = np.cumsum(x)
    return np.sum(buf * x)


def out_advised(x):
    buf = np.zeros(3)
    buf[...] = np.add(x, x)
    return np.sum(buf * x)


def add_at(x):
    buf = np.zeros(3)
    idx = np.array([0, 0, 2])
    np.add.at(buf, idx, x)  # <- add.at
    return np.sum(buf * x)


def add_at_advised(x):
    buf = np.zeros(3)
    idx = np.array([0, 0, 2])
    for j in range(len(idx)):
        buf[idx[j]] += x[j]
    return np.sum(buf * x)


def put(x):
    buf = np.zeros(3)
    np.put(buf, [0, 2], x[:2])  # <- np put
    return np.sum(buf * x)


def put_advised(x):
    buf = np.zeros(3)
    buf[[0, 2]] = x[:2]
    return np.sum(buf * x)


def put_along_axis(x):
    buf = np.zeros((3, 2))
    np.put_along_axis(buf, np.array([[1], [0], [1]]), x[:, None], axis=1)  # <- put_along_axis
    return np.sum(buf * x[:, None])


def put_along_axis_advised(x):
    buf = np.zeros((3, 2))
    buf[np.arange(3)[:, None], np.array([[1], [0], [1]])] = x[:, None]
    return np.sum(buf * x[:, None])


def fill_diagonal(x):
    m = np.zeros((3, 3))
    np.fill_diagonal(m, x)  # <- fill_diagonal
    return np.sum(m @ x)


def fill_diagonal_advised(x):
    m = np.zeros((3, 3))
    m[np.arange(3), np.arange(3)] = x
    return np.sum(m @ x)


def fill(x):
    buf = np.zeros(3)
    buf.fill(x[0])  # <- buffer fill
    return np.sum(buf * x)


def fill_advised(x):
    buf = np.zeros(3)
    buf[...] = x[0]
    return np.sum(buf * x)


def update(x):
    d = {"a": x[0]}
    d.update({"b": x[1] * 2.0})  # <- update
    return d["a"] * d["b"]


def update_advised(x):
    d = {"a": x[0]}
    d = {**d, **{"b": x[1] * 2.0}}
    return d["a"] * d["b"]


def setdefault(x):
    d = {"a": x[0]}
    v = d.setdefault("b", x[1] * 3.0)  # <- setdefault
    return d["a"] * d["b"] + v


def setdefault_advised(x):
    d = {"a": x[0]}
    if "b" not in d:
        d["b"] = x[1] * 3.0
    v = d["b"]
    return d["a"] * d["b"] + v


def set_attribute(x):
    b = Box()
    name = "w"
    setattr(b, name, x[0] * 2.0)  # <- setattr
    return b.w * x[1]


def set_attribute_advised(x):
    b = Box(w=x[0] * 2.0)
    return b.w * x[1]


def insert(x):
    lst = [x[0]]
    lst.insert(0, x[1] * 2.0)  # <- insert
    return lst[0] * lst[1]


def insert_advised(x):
    lst = [x[0]]
    lst = lst[:0] + [x[1] * 2.0] + lst[0:]
    return lst[0] * lst[1]


def sort(x):
    lst = [x[0], x[1] * 2.0, x[2]]
    lst.sort()  # <- sort
    return lst[0] * 3.0 + lst[2]


def sort_advised(x):
    lst = [x[0], x[1] * 2.0, x[2]]
    lst = sorted(lst)
    return lst[0] * 3.0 + lst[2]


def reverse(x):
    lst = [x[0], x[1] * 2.0]
    lst.reverse()  # <- reverse
    return lst[0] * 3.0 + lst[1]


def reverse_advised(x):
    lst = [x[0], x[1] * 2.0]
    lst = lst[::-1]
    return lst[0] * 3.0 + lst[1]


def pop(x):
    lst = [x[0], x[1] * 2.0]
    v = lst.pop()  # <- pop
    return lst[0] * 3.0 + v * len(lst)


def pop_advised(x):
    lst = [x[0], x[1] * 2.0]
    v = lst[-1]
    lst = lst[:-1]
    return lst[0] * 3.0 + v * len(lst)


def remove(x):
    lst = [x[0], x[1] * 2.0, x[2]]
    lst.remove(lst[1])  # <- remove
    return lst[0] * 3.0 + lst[1]


def remove_advised(x):
    lst = [x[0], x[1] * 2.0, x[2]]
    lst = lst[:1] + lst[2:]
    return lst[0] * 3.0 + lst[1]


def delete(x):
    lst = [x[0], x[1] * 2.0]
    del lst[0]  # <- del
    return lst[0] * 3.0


def delete_advised(x):
    lst = [x[0], x[1] * 2.0]
    lst = lst[:0] + lst[1:]
    return lst[0] * 3.0


REFUSED = [
    (copyto, copyto_advised, "<- copyto", "np.copyto", "`np.copyto(dst, src)` changes `out` in place"),
    (out_keyword, out_advised, "<- out keyword", "np.add", "`numpy.add` writes its result into an existing array"),
    (out_positional, out_advised, "<- out positional", "np.multiply", "`numpy.multiply` writes its result"),
    (out_of_a_reduction, out_of_a_reduction_advised, "<- cumsum out", "np.cumsum", "`numpy.cumsum` writes its result"),
    (add_at, add_at_advised, "<- add.at", "np.add.at", "`ufunc.at(a, idx, v)` changes `buf` in place"),
    (put, put_advised, "<- np put", "np.put", "`np.put(a, idx, v)` changes `buf` in place"),
    (
        put_along_axis,
        put_along_axis_advised,
        "<- put_along_axis",
        "np.put_along_axis",
        "`np.put_along_axis(a, idx, v, axis)` changes `buf` in place",
    ),
    (fill_diagonal, fill_diagonal_advised, "<- fill_diagonal", "np.fill", "`np.fill_diagonal(a, v)` changes `m`"),
    (fill, fill_advised, "<- buffer fill", "buf.fill", "`a.fill(v)` changes `buf` in place"),
    (update, update_advised, "<- update", "d.update", "`d.update(other)` changes `d` in place"),
    (setdefault, setdefault_advised, "<- setdefault", "d.setdefault", "`d.setdefault(k, v)` changes `d`"),
    (set_attribute, set_attribute_advised, "<- setattr", "setattr", "`setattr(obj, name, v)` changes `b`"),
    (insert, insert_advised, "<- insert", "lst.insert", "`lst.insert(i, v)` changes `lst` in place"),
    (sort, sort_advised, "<- sort", "lst.sort", "`lst.sort()` changes `lst` in place"),
    (reverse, reverse_advised, "<- reverse", "lst.reverse", "`lst.reverse()` changes `lst` in place"),
    (pop, pop_advised, "<- pop", "lst.pop", "`lst.pop(i)` changes `lst` in place"),
    (remove, remove_advised, "<- remove", "lst.remove", "`lst.remove(v)` changes `lst` in place"),
    (delete, delete_advised, "<- del", "del", "`del lst[...]` changes `lst` in place"),
]


@pytest.mark.parametrize("fn, advised, marker, call, phrase", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_a_call_that_writes_in_place_is_refused_with_the_line_and_what_to_write(fn, advised, marker, call, phrase):
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, X)
    message = str(info.value)
    assert message.startswith(where(marker, call)), message
    assert phrase in message
    assert "instead" in message or "build" in message or "write" in message


@pytest.mark.parametrize("fn, advised, marker, call, phrase", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_what_the_refusal_advises_differentiates_correctly(fn, advised, marker, call, phrase):
    # the tape engine refuses writes into arrays (it cannot track them): those run on this engine only
    writes_an_array = "np." in call or call == "buf.fill"
    check(advised, X.copy(), engine="source" if writes_an_array else None)


def test_every_refusal_names_an_entry_of_the_one_table():
    """The advice comes from ``effects.KNOWN_WRITES`` (``del`` and output arguments aside)."""
    names = {entry.name for entry in effects.KNOWN_WRITES.values()}
    for *_, phrase in REFUSED:
        quoted = phrase.split("`")[1]
        assert quoted in names or "writes its result" in phrase or quoted.startswith("del "), quoted


# ----- when the write cannot change a derivative, the call runs --------------------------------


def sorts_a_list_of_indices(x):
    order = [2, 0, 1]
    order.sort()
    order.reverse()
    return x[order[0]] * x[order[2]]


def pops_from_a_work_list(x):
    todo = [0, 1, 2]
    total = 0.0
    while todo:
        i = todo.pop()
        total = total + x[i] * x[i]
    return total


def fills_an_unused_buffer(x):
    scratch = np.zeros(3)
    scratch.fill(1.0)
    return np.sum(x * x)


def fills_a_view_of_a_buffer_without_derivative(x):
    scratch = np.zeros(3)
    scratch[:2].fill(1.0)  # nothing the write changes carries a derivative, or was used before
    return np.sum(scratch * x)


@pytest.mark.parametrize(
    "fn",
    [
        sorts_a_list_of_indices,
        pops_from_a_work_list,
        fills_an_unused_buffer,
        fills_a_view_of_a_buffer_without_derivative,
    ],
)
def test_a_write_that_cannot_change_a_derivative_runs(fn):
    check(fn, X.copy())


# ----- the mutation the engine follows keeps working ------------------------------------------


def appends_and_extends(x):
    lst = []
    lst.append(x[0] * 2.0)
    lst.extend([x[1], x[2] * x[0]])
    lst[1] = lst[1] * 3.0
    return np.sum(np.array(lst) * x)


def fills_and_updates_a_buffer(x):
    out = np.zeros(3)
    for i in range(3):
        out[i] = x[i] * x[i]
        out[i] += x[0]
    return np.sum(out * x)


def assigns_dict_items(x):
    d = {}
    d["a"] = x[0] * 2.0
    d["b"] = d["a"] * x[1]
    return d["a"] + d["b"] * x[2]


@pytest.mark.parametrize("fn", [appends_and_extends, fills_and_updates_a_buffer, assigns_dict_items])
def test_mutation_the_engine_follows_keeps_working(fn):
    check(fn, X.copy(), engine="source")
    if fn is assigns_dict_items:  # the tape engine refuses writes of tracked values into lists and arrays
        check(fn, X.copy(), engine="tape")


def writes_into_its_argument(x):
    x.fill(0.0)  # <- argument fill
    return np.sum(x)


def test_a_call_writing_into_an_argument_is_refused_and_leaves_it_alone():
    x = X.copy()
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(writes_into_its_argument, x)
    assert str(info.value).startswith(where("<- argument fill", "x.fill")), str(info.value)
    np.testing.assert_array_equal(x, X)


def test_a_write_through_packed_keywords_is_refused_at_run_time():
    def adds_into(x, kwargs):
        buf = kwargs["out"]
        np.add(x, x, **kwargs)
        return np.sum(buf * x)

    with pytest.raises(cr.NoRuleError, match="out="):
        pullback_full(adds_into, X.copy(), {"out": np.zeros(3)})


# ----- a write through a view changes the array it views ---------------------------------------

V = np.array([0.7, -0.3, 0.9, 0.4])
WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0])
GRID = np.arange(16.0).reshape(4, 4)


def fills_a_slice(x):
    y = x * 1.0
    y[1:3].fill(0.0)  # <- slice fill
    return np.sum(y * WEIGHTS)


def fills_a_named_view(x):
    y = x * 1.0
    middle = y[1:3]
    middle.fill(0.0)  # <- view fill
    return np.sum(y * WEIGHTS)


def fills_a_slice_of_a_slice(x):
    y = x * 1.0
    y[1:][0:2].fill(0.0)  # <- chained fill
    return np.sum(y * WEIGHTS)


def fills_a_raveled_array(x):
    y = x * 1.0
    y.ravel().fill(0.0)  # <- ravel fill
    return np.sum(y * WEIGHTS)


def fills_the_real_part(x):
    y = x * 1.0
    y.real[1:3].fill(0.0)  # <- real fill
    return np.sum(y * WEIGHTS)


def fills_a_row(x):
    A = np.outer(x, x) * 1.0
    A[0].fill(0.0)  # <- row fill
    return np.sum(A * GRID)


def fills_a_column_through_the_transpose(x):
    A = np.outer(x, x) * 1.0
    A.T[0].fill(0.0)  # <- column fill
    return np.sum(A * GRID)


def sorts_the_tail(x):
    y = x * 1.0
    y[2:].sort()  # <- tail sort
    return np.sum(y * WEIGHTS)


def sorts_every_other_entry(x):
    y = x * 1.0
    y[::-2].sort()  # <- strided sort
    return np.sum(y * WEIGHTS)


def sorts_each_row_a_loop_takes(x):
    A = np.outer(x, x) * 1.0
    for row in A:
        row.sort()  # <- loop sort
    return np.sum(A * GRID)


def partitions_the_head(x):
    y = x * 1.0
    y[:3].partition(1)  # <- head partition
    return np.sum(y * WEIGHTS)


def puts_into_the_tail(x):
    y = x * 1.0
    y[1:].put([0, 2], [5.0, 6.0])  # <- tail put
    return np.sum(y * WEIGHTS)


def copies_into_a_slice(x):
    y = x * 1.0
    np.copyto(y[1:3], x[:2] * 3.0)  # <- slice copyto
    return np.sum(y * WEIGHTS)


def putmask_on_a_slice(x):
    y = x * 1.0
    np.putmask(y[:3], y[:3] > 0.5, 0.0)  # <- slice putmask
    return np.sum(y * WEIGHTS)


def places_into_a_named_view(x):
    y = x * 1.0
    head = y[:3]
    np.place(head, head > 0.5, [0.0])  # <- view place
    return np.sum(y * WEIGHTS)


def copies_into_a_column(x):
    A = np.outer(x, x) * 1.0
    np.copyto(A[:, 0], 2.0)  # <- column copyto
    return np.sum(A * GRID)


def clips_a_slice_into_itself(x):
    y = x * 1.0
    y[:3].clip(0.2, 0.6, out=y[:3])  # <- slice clip
    return np.sum(y * WEIGHTS)


VIEW_WRITES = [
    (fills_a_slice, "<- slice fill", "y[1:3]", "`a.fill(v)` changes `y` in place"),
    (fills_a_named_view, "<- view fill", "middle", "`a.fill(v)` changes `middle` in place"),
    (fills_a_slice_of_a_slice, "<- chained fill", "y[1:]", "`a.fill(v)` changes `y` in place"),
    (fills_a_raveled_array, "<- ravel fill", "y.ravel", "`a.fill(v)` changes"),
    (fills_the_real_part, "<- real fill", "y.real", "`a.fill(v)` changes `y` in place"),
    (fills_a_row, "<- row fill", "A[0]", "`a.fill(v)` changes `A` in place"),
    (fills_a_column_through_the_transpose, "<- column fill", "A.T", "`a.fill(v)` changes `A` in place"),
    (sorts_the_tail, "<- tail sort", "y[2:]", "`a.sort()` changes `y` in place"),
    (sorts_every_other_entry, "<- strided sort", "y[::-2]", "`a.sort()` changes `y` in place"),
    (sorts_each_row_a_loop_takes, "<- loop sort", "row", "`a.sort()` changes `row` in place"),
    (partitions_the_head, "<- head partition", "y[:3]", "`a.partition(k)` changes `y` in place"),
    (puts_into_the_tail, "<- tail put", "y[1:]", "`a.put(idx, v)` changes `y` in place"),
    (copies_into_a_slice, "<- slice copyto", "np.copyto", "`np.copyto(dst, src)` changes `y` in place"),
    (putmask_on_a_slice, "<- slice putmask", "np.putmask", "`np.putmask(a, mask, v)` changes `y` in place"),
    (places_into_a_named_view, "<- view place", "np.place", "`np.place(a, mask, v)` changes `head` in place"),
    (copies_into_a_column, "<- column copyto", "np.copyto", "`np.copyto(dst, src)` changes `A` in place"),
]


@pytest.mark.parametrize("fn, marker, call, phrase", VIEW_WRITES, ids=[c[0].__name__ for c in VIEW_WRITES])
def test_a_call_writing_through_a_view_is_refused_at_its_line(fn, marker, call, phrase):
    """The call changes the array the view shares its memory with, which the function reads
    afterwards: refused like the call on that array itself (the gradient had ignored the write)."""
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, V.copy())
    message = str(info.value)
    assert message.startswith(where(marker, call)), message
    assert phrase in message, message


def test_an_output_argument_through_a_view_is_refused_when_the_call_runs():
    """`y[:3].clip(..., out=y[:3])`: the method of an array, with an output argument the static
    types do not resolve, goes through the dispatcher, which refuses it at the call's line."""
    with pytest.raises(cr.NoRuleError) as info:
        pullback_full(clips_a_slice_into_itself, V.copy())
    line = where("<- slice clip", "y[:3]").split(":")[1]
    assert f"{HERE}:{line}" in str(info.value) and "out=" in str(info.value)


@pytest.mark.parametrize("fn", [*(c[0] for c in VIEW_WRITES), clips_a_slice_into_itself], ids=lambda f: f.__name__)
def test_the_gradient_of_a_write_through_a_view_is_refused_on_every_engine(fn):
    """The API goes on to the tape, which refuses these calls too, as forward mode does: no engine
    gives a number that ignores the write."""
    with pytest.raises((cr.ChainRulesError, TypeError)):
        cr.gradient(fn, V.copy())
    with pytest.raises((cr.ChainRulesError, TypeError)):
        cr.gradient(fn, V.copy(), engine="tape")
    with pytest.raises((cr.ChainRulesError, TypeError)):
        cr.jacobian(fn, V.copy(), mode="forward")


def fills_what_a_mask_selects(x, mask):
    y = x * 1.0
    y[mask].fill(0.0)  # a copy (advanced indexing): y is unchanged
    return np.sum(y * WEIGHTS)


def test_a_call_writing_into_a_copy_that_advanced_indexing_made_runs():
    """`y[mask]` with a boolean array is a new array, not a view: writing into it changes nothing
    the derivative depends on (it had been refused as a write into `y`)."""
    mask = np.array([True, False, True, False])
    (grad,) = pullback_full(fills_what_a_mask_selects, V.copy(), mask)[1](1.0)[1:2]
    np.testing.assert_allclose(grad, crt.fd_jacobian(lambda z: fills_what_a_mask_selects(z, mask), V).reshape(-1))
    np.testing.assert_allclose(cr.gradient(fills_what_a_mask_selects, V.copy(), mask)[0], WEIGHTS)


# ----- other writes the pass finds -------------------------------------------------------------

LOG = []
CACHE = {}


def logs_a_call(x):
    LOG.append(len(LOG))
    return x * 2.0


def caches_and_reads_back(x):
    CACHE["v"] = x * 2.0  # <- global write
    return CACHE["v"] * x


def test_a_global_log_is_written_and_a_global_read_back_is_refused():
    before = len(LOG)
    y, back = pullback_full(logs_a_call, 1.5)
    assert (y, back(1.0)[1], len(LOG)) == (3.0, 2.0, before + 1)
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(caches_and_reads_back, 1.5)
    assert str(info.value).startswith(where("<- global write", "CACHE")), str(info.value)
    assert "writing into the global `CACHE` in place" in str(info.value)


COUNTS = [0]


def counts_its_calls(x):
    COUNTS[0] += 1  # (a global's item updated in place: the generated code had bound the name as a local)
    return x * 2.0


def counts_in_a_captured_dict(x):
    seen = {"calls": 0}

    def scaled(y):
        seen["calls"] += 1
        return y * x

    return scaled(x) + scaled(2.0 * x) + seen["calls"]


def test_an_item_of_a_global_or_captured_container_is_updated_in_place():
    before = COUNTS[0]
    y, back = pullback_full(counts_its_calls, 1.5)
    assert (y, back(1.0)[1], COUNTS[0]) == (3.0, 2.0, before + 1)
    assert cr.gradient(counts_in_a_captured_dict, 1.5) == pytest.approx(
        crt.fd_jacobian(counts_in_a_captured_dict, 1.5)[0]
    )
    assert cr.gradient(counts_in_a_captured_dict, 1.5, engine="tape") == cr.gradient(counts_in_a_captured_dict, 1.5)


def heapifies(x):
    h = [x * 2.0, x]
    heapq.heapify(h)  # <- heapify
    return h[0] * 3.0


def test_a_library_call_without_a_rule_that_may_write_is_refused_naming_the_container():
    with pytest.raises(cr.NoRuleError) as info:
        pullback_full(heapifies, 1.5)
    message = str(info.value)
    assert f"{HERE}:{int(where('<- heapify', 'heapq').split(':')[1])}" in message
    assert "heapify" in message and "may change `h` in place" in message


def builds_an_identity_like_x(x):
    eye = np.eye(x.shape[0], dtype=x.dtype)  # packed as `np.eye(*y_4, **y_5)`
    return np.sum((x + eye) ** 2)


def builds_a_ramp_like_x(x):
    ramp = np.arange(x.size, dtype=x.dtype).reshape(x.shape)
    return np.sum(x * ramp)


def reads_a_table_a_library_call_rearranged(x):
    h = [3.0, 1.0, 2.0]
    heapq.heapify(h)  # no rule: it may write into `h`, which carries no derivative
    w = np.array(h)  # bound after the call: made from what the call left
    return np.sum(x * w)


@pytest.mark.parametrize(
    "fn, arg",
    [
        (builds_an_identity_like_x, np.arange(9.0).reshape(3, 3) / 3),
        (builds_a_ramp_like_x, np.arange(6.0).reshape(2, 3) / 3),
        (reads_a_table_a_library_call_rearranged, X.copy()),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_a_library_call_on_values_without_derivatives_runs_as_written(fn, arg):
    """The packed arguments of a call are not containers it can write (it gets new ones), and a
    variable bound after a call does not see its write (it is made from what the write left)."""
    check(fn, arg)


RNG = np.random.default_rng(0)


def heapifies_through_packed_arguments(x):
    h = [x * 2.0, x]
    heapq.heapify(*[h])  # the callee gets `h` itself
    return h[0] * 3.0


def shuffles_what_a_pullback_holds(x):
    t = np.arange(3.0)
    z = x * t  # its pullback holds `t`
    RNG.shuffle(t)
    return np.sum(z * t)


def shuffles_in_a_loop(x):
    t = np.arange(3.0)
    total = 0.0
    for _ in range(2):
        RNG.shuffle(t)
        w = x * t  # bound after the call, but the next iteration's call changes the `t` its pullback holds
        total = total + np.sum(w)
    return total


@pytest.mark.parametrize(
    "fn, arg",
    [(heapifies_through_packed_arguments, 1.5), (shuffles_what_a_pullback_holds, X), (shuffles_in_a_loop, X)],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_a_library_call_that_may_change_what_a_derivative_uses_is_still_refused(fn, arg):
    with pytest.raises(cr.NoRuleError, match="may change `.*` in place"):
        pullback_full(fn, arg)


def extends_through_another_name(x):
    a = [x]
    b = a
    b += [x * 2.0]  # <- shared +=
    return a[0] * a[1]


def adds_into_an_array_through_another_name(x):
    a = np.zeros(2)
    b = a
    b += x  # <- shared array +=
    return np.sum(a * x)


@pytest.mark.parametrize(
    "fn, arg, marker, kind",
    [
        (extends_through_another_name, 1.5, "<- shared +=", "list"),
        (adds_into_an_array_through_another_name, np.ones(2), "<- shared array +=", "ndarray"),
    ],
)
def test_an_augmented_assignment_into_a_shared_object_is_refused(fn, arg, marker, kind):
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(fn, arg)
    assert str(info.value).startswith(where(marker, "b +=")), str(info.value)
    assert f"updates the {kind} in place" in str(info.value)


def writes_indices_a_pullback_holds(x):
    idx = np.zeros(2, dtype=int)
    y = x[idx]
    idx[0] = 1  # <- index write
    return np.sum(y * x)


def test_a_container_written_after_a_pullback_took_it_is_refused():
    with pytest.raises(cr.UnsupportedSyntaxError) as info:
        pullback_full(writes_indices_a_pullback_holds, np.array([1.0, 2.0]))
    assert str(info.value).startswith(where("<- index write", "idx[0]")), str(info.value)
    assert "writing into `idx` after it was passed to a call" in str(info.value)


def test_the_runtime_dispatcher_uses_the_same_table():
    """A known writing call the static types did not reveal is refused when it runs."""

    def fills_what_a_call_returned(x):
        zeros = np.zeros_like(x)  # a name after `x`: the message names the object the method changes
        zeros.fill(x[0])  # <- runtime fill
        return np.sum(zeros * x)

    with pytest.raises(cr.UnsupportedSyntaxError, match=r"`a\.fill\(v\)` changes `zeros` in place") as info:
        pullback_full(fills_what_a_call_returned, X.copy())
    assert str(info.value).startswith(where("<- runtime fill", "zeros.fill")), str(info.value)


def test_rules_typed_on_engine_stand_ins_do_not_count_as_typed_rules():
    class Stand(cr.core.active.ActiveValue):
        pass

    def scaled(x):
        return 2.0 * x

    cr.rrule.register(scaled, Stand)(lambda x: (scaled(x), lambda dy: (cr.NoTangent(), 2.0 * dy)))
    assert not has_typed_rules(scaled)
    cr.rrule.register(scaled, float)(lambda x: (scaled(x), lambda dy: (cr.NoTangent(), 2.0 * dy)))
    assert has_typed_rules(scaled)


def make_pair(x):
    return [x, x * 2.0]


def pops_what_a_call_made(x):
    lst = make_pair(x)
    v = lst.pop()  # <- runtime pop
    return v * 3.0


def test_a_known_writing_call_reached_at_run_time_gets_the_same_advice():
    with pytest.raises(cr.NoRuleError) as info:
        pullback_full(pops_what_a_call_made, 1.5)
    message = str(info.value)
    line = where("<- runtime pop", "lst.pop").split(":")[1]
    assert f"{HERE}:{line}" in message
    assert "`lst.pop(i)` changes a container in place" in message and "build `lst = lst[:i] + lst[i + 1:]`" in message


def formatted_in_an_enumerate_loop(x):
    s = 0.0
    for i, v in enumerate(x):
        label = "{:.1e}".format(v)  # noqa: UP032  (str.format itself: text, no derivative, no writes)
        s = s + v * len(label) + i
    return s


def packed_in_an_enumerate_loop(x):
    s = 0.0
    for _, v in enumerate(x):
        s = s + v * len(struct.pack("d", v))
    return s


def test_str_format_of_a_loop_item_is_followed():
    (grad,) = pullback_full(formatted_in_an_enumerate_loop, X)[1](1.0)[1:]
    np.testing.assert_allclose(grad, [len(f"{v:.1e}") for v in X])


def test_a_refusal_names_the_users_variables_only():
    """The tuple an `enumerate` loop unpacks is the engine's own variable: not named."""
    with pytest.raises(cr.NoRuleError, match=r"it may change `v`, `x` in place") as refusal:
        pullback_full(packed_in_an_enumerate_loop, X)
    assert "`item`" not in str(refusal.value)


def rebuilt_then_written(x):
    out = np.ones(3)
    held = [out]  # the first array escapes; the one `out` is rebound to is new
    out = out + 1.0
    out[0] = x[0]
    return np.sum(out * x) + np.sum(held[0])


def test_writing_into_an_array_rebuilt_by_arithmetic_is_followed():
    """`out = out + 1.0` binds `out` to a new array: a write into it is not a write into the
    array that escaped before (it had been refused)."""
    (grad,) = pullback_full(rebuilt_then_written, X)[1](1.0)[1:]
    np.testing.assert_allclose(grad, crt.fd_jacobian(rebuilt_then_written, X).reshape(-1), rtol=1e-7)
    np.testing.assert_allclose(grad, cr.jacobian(rebuilt_then_written, X, mode="forward"), rtol=1e-13)
