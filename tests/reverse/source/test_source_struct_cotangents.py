"""The source engine keeps one cotangent per element of a structure passed in (an argument or a
captured variable) that the function reads only element by element with constant keys
(``p["W"]``, ``p.W``, ``p[0]``, ``a, b = p``): each read adds into its element's cotangent
(``dp_W``), and the structure's tangent is built once at the end (``struct_cotangent``), of the
same type as the element reads' pullbacks added together give (``Tangent[dict]`` of the entries
read, ``Tangent[tuple]`` with zeros elsewhere, ``Tangent[P]`` of the fields read, ``ZeroTangent()``
when nothing flows back). A structure also used whole keeps the reads' pullbacks."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.tangents import Tangent
from chainrules.reverse import source
from chainrules.testing import check_grads
from chainrules.testing.checks import assert_approx

RNG = np.random.default_rng(23)
Triple = collections.namedtuple("Triple", ["a", "b", "c"])


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    b: np.ndarray
    scale: float


def mlp(p, x):
    h = np.tanh(x @ p["W1"] + p["b1"])
    z = h @ p["W2"] + p["b2"]
    return np.sum(z**2)


def repeated_reads(p):
    y = np.sin(p["W"]) * p["W"]  # the same element read twice in a statement, and again below
    y += p["W"] @ p["b"]  # `+=` on a derived value
    return np.sum(y * y) + np.sum(p["W"][0])


def unused_element(p):
    return np.sum(p["W"] * 2.0) + 0.0 * np.sum(p["x"])


def tuple_unpack_and_index(t):
    a, b = t
    y = a * b
    y += t[0]
    return np.sum(y) + np.sum(t[-1] ** 2)


def tuple_one_element(t):
    return np.sum(t[1] ** 3)


def list_elements(lst):
    y = lst[0] @ lst[1]
    y += lst[2]
    return np.sum(np.sin(y))


def namedtuple_fields(p):
    return np.sum(p.a * p[1]) + np.sum(p.a)  # `c` unused


def namedtuple_unpack(p):
    a, b, c = p
    return np.sum(a * b)  # `c` unused: a zero field, as unpacking gives


def dataclass_fields(p):
    y = p.W @ p.b
    y = y * p.scale
    return np.sum(y**2) * p.scale


def nested_dict_of_tuples(p):
    W, b = p["layer"]
    y = np.tanh(W @ p["x"]) + b
    return np.sum(y * p["layer"][0][0]) * p["scale"]


def element_in_a_loop(p):
    total = 0.0
    for i in range(3):
        total = total + np.sum(p["W"] * i) + p["s"] * total
    return total


def element_in_a_branch(p):
    if np.sum(p["a"]) > 0:
        y = p["a"] * 2.0
    else:
        y = p["b"] * 3.0
    return np.sum(y * p["a"])


def real_scalars(p):
    a, b = p
    return a * b + p[0] ** 2


def integer_element(p):
    return np.sum(p["W"] * p["n"])


def W(n=3, m=3):
    return RNG.standard_normal((n, m))


def v(n=3):
    return RNG.standard_normal(n)


X = RNG.standard_normal((2, 4))

#: name -> (function, arguments, the tangent's skeleton: every entry of the input, in its order,
#: a setting's NoTangent(), an unread number's or array's ZeroTangent(), as the tape gives it)
CASES = {
    "mlp": (
        mlp,
        lambda: ({"W1": W(4, 8), "b1": v(8), "W2": W(8, 3), "b2": v(3)}, X),
        "Tangent[dict]{W1: float64(4, 8), W2: float64(8, 3), b1: float64(8,), b2: float64(3,)}",
    ),
    "repeated_reads": (
        repeated_reads,
        lambda: ({"W": W(), "b": v()},),
        "Tangent[dict]{W: float64(3, 3), b: float64(3,)}",
    ),
    "unused_element": (
        unused_element,
        lambda: ({"W": W(), "x": v(), "text": "not read"},),
        "Tangent[dict]{W: float64(3, 3), text: NoTangent(), x: float64(3,)}",
    ),
    "tuple": (
        tuple_unpack_and_index,
        lambda: ((v(), v()),),
        "Tangent[tuple](float64(3,), float64(3,))",
    ),
    "tuple_one_element": (
        tuple_one_element,
        lambda: ((v(), v(), W()),),
        "Tangent[tuple](ZeroTangent(), float64(3,), ZeroTangent())",
    ),
    "list": (
        list_elements,
        lambda: ([W(), W(), v()],),
        "Tangent[list](float64(3, 3), float64(3, 3), float64(3,))",
    ),
    "namedtuple": (
        namedtuple_fields,
        lambda: (Triple(v(), v(), W()),),
        "Tangent[Triple]{a: float64(3,), b: float64(3,), c: ZeroTangent()}",
    ),
    "namedtuple_unpack": (
        namedtuple_unpack,
        lambda: (Triple(v(), v(), W()),),
        "Tangent[Triple]{a: float64(3,), b: float64(3,), c: ZeroTangent()}",
    ),
    "dataclass": (
        dataclass_fields,
        lambda: (Layer(W(), v(), 1.5),),
        "Tangent[Layer]{W: float64(3, 3), b: float64(3,), scale: float}",
    ),
    "nested": (
        nested_dict_of_tuples,
        lambda: ({"layer": (W(), v()), "x": v(), "scale": 0.7},),
        "Tangent[dict]{layer: Tangent[tuple](float64(3, 3), float64(3,)), scale: float, x: float64(3,)}",
    ),
    "loop": (
        element_in_a_loop,
        lambda: ({"W": W(), "s": 0.3},),
        "Tangent[dict]{W: float64(3, 3), s: float}",
    ),
    "branch": (
        element_in_a_branch,
        lambda: ({"a": np.abs(v()), "b": v()},),
        "Tangent[dict]{a: float64(3,), b: ZeroTangent()}",
    ),
    "real_scalars": (
        real_scalars,
        lambda: ((1.5, -0.5),),
        "Tangent[tuple](float, float)",
    ),
    "integer_element": (
        integer_element,
        lambda: ({"W": W(), "n": 3},),
        "Tangent[dict]{W: float64(3, 3), n: NoTangent()}",
    ),
    "float32": (
        mlp,
        lambda: (
            {k: a.astype(np.float32) for k, a in {"W1": W(4, 8), "b1": v(8), "W2": W(8, 3), "b2": v(3)}.items()},
            X.astype(np.float32),
        ),
        "Tangent[dict]{W1: float32(4, 8), W2: float32(8, 3), b1: float32(8,), b2: float32(3,)}",
    ),
}


def skeleton(t) -> str:
    """The types and shapes of a tangent, entries sorted by key (their order is no part of it)."""
    if isinstance(t, Tangent):
        backing = t.backing
        if isinstance(backing, dict):
            inner = ", ".join(f"{k}: {skeleton(e)}" for k, e in sorted(backing.items()))
            return f"{type(t).__name__}{{{inner}}}"
        return f"{type(t).__name__}({', '.join(skeleton(e) for e in backing)})"
    if isinstance(t, np.ndarray):
        return f"{t.dtype}{t.shape}"
    if isinstance(t, float):
        return type(t).__name__
    return repr(t)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_agree_with_the_tape_and_finite_differences(name):
    fn, make, _ = CASES[name]
    args = make()
    got = cr.gradient(fn, *args, engine="source")
    want = cr.gradient(fn, *args, engine="tape")
    assert_approx(got, want)
    if name != "float32":
        check_grads(fn, args, modes=("reverse",), order=1, engine="source")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_tangent_has_the_type_the_element_reads_gave(name):
    fn, make, expected = CASES[name]
    got = cr.gradient(fn, *make())[0]
    assert skeleton(got) == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_element_read_adds_into_its_own_cotangent(name):
    fn, make, _ = CASES[name]
    text = source.show(fn, *make())
    assert "struct_cotangent(" in text, text
    assert "rrule_getitem(p" not in text and "rrule_getattr(p" not in text and "unpack(p" not in text, text
    assert "accumulate(dp," not in text and "accumulate(dt," not in text, text  # no structural additions


def test_the_mlp_keeps_one_cotangent_per_weight_and_builds_the_tangent_once():
    p, x = CASES["mlp"][1]()
    text = source.show(mlp, p, x)
    for element in ("W1", "b1", "W2", "b2"):
        assert f"    y_{'1368'[('W1', 'b1', 'W2', 'b2').index(element)]} = p['{element}']\n" in text, text
        assert f"dp_{element} = " in text, text
    assert "dp = struct_cotangent(p, ('W1', 'b1', 'W2', 'b2'), (y_1, y_3, y_6, y_8), (dp_W1, dp_b1, dp_W2, dp_b2))" in (
        text
    ), text
    assert text.count("struct_cotangent(") == 1


def test_repeated_reads_accumulate_into_the_element_cotangent():
    text = source.show(repeated_reads, *CASES["repeated_reads"][1]())
    assert "dp_W, dp_W_own = accumulate(dp_W, " in text, text


def test_a_read_in_a_loop_accumulates_across_iterations():
    text = source.show(element_in_a_loop, *CASES["loop"][1]())
    assert "dp_W = ZERO" in text and "dp_W, dp_W_own = accumulate(dp_W, dp_W_own, " in text, text
    assert "dp_s = dp_s + " in text, text  # a real element: added with `+`
    # the element read in the loop is read again where the tangent is built
    assert "struct_cotangent(p, ('W', 's'), (p['W'], p['s']), (dp_W, dp_s))" in text, text


def test_a_namedtuple_unpacked_keeps_its_zero_fields():
    text = source.show(namedtuple_unpack, *CASES["namedtuple_unpack"][1]())
    assert "    a, b, c = p\n" in text and "all_fields=True" in text, text


def test_a_structure_used_whole_keeps_the_pullbacks_of_its_reads():
    def whole(p):
        return np.sum(p["W"]) + len(p)

    def returned(p):
        return np.sum(p["W"] * 2.0), p

    def iterated(t):
        total = np.sum(t[0])
        for w in t:
            total = total + np.sum(w * w)
        return total

    def other_key(p, k):
        return np.sum(p["W"] * p[k])

    p = {"W": W(), "b": W()}
    for fn, args in ((whole, (p,)), (iterated, ((W(), W()),)), (other_key, (p, "b"))):
        text = source.show(fn, *args)
        assert "struct_cotangent(" not in text and "pullback(" in text, text
        assert_approx(cr.gradient(fn, *args), cr.gradient(fn, *args, engine="tape"))
    text = source.show(returned, p)
    assert "struct_cotangent(" not in text, text
    check_grads(lambda p: returned(p)[0], (p,), modes=("reverse",), order=1, engine="source")


def test_a_captured_structure_read_by_element():
    def outer(p, x):
        def loss(x):
            return np.sum(np.tanh(p["W"] @ x + p["b"]) ** 2)

        return loss(x) * 2.0

    p, x = {"W": W(), "b": v()}, v()
    got = cr.gradient(outer, p, x)
    assert type(got[0]) is Tangent[dict]
    assert_approx(got, cr.gradient(outer, p, x, engine="tape"))
    check_grads(outer, (p, x), modes=("reverse",), order=1, engine="source")

    def loss(x):
        return np.sum(np.tanh(p["W"] @ x + p["b"]) ** 2)

    text = source.show(loss, x)
    assert "dp = struct_cotangent(p, ('W', 'b')" in text and "closure_tangent(" in text, text


def test_a_cotangent_of_the_wrong_form_is_matched_to_its_element():
    # a float element whose cotangents arrive as NumPy scalars gets a float, as the read's pullback gave
    def f(p):
        return np.float64(2.0) * p["s"] + np.sum(p["W"]) * p["s"]

    dp = cr.gradient(f, {"s": 1.5, "W": np.ones(2)})[0]
    assert type(dp["s"]) is float and dp["s"] == 4.0
    assert_approx(dp["W"], np.full(2, 1.5))


@pytest.mark.parametrize("name", ["mlp", "nested", "dataclass", "tuple"])
def test_batched_reverse_jacobians_agree_with_forward_mode(name):
    fn, make, _ = CASES[name]
    args = make()

    def vector(p):  # a vector output of the same function
        return np.atleast_1d(fn(p, *args[1:])) * np.arange(1.0, 4.0)

    assert_approx(cr.jacobian(vector, args[0], mode="reverse"), cr.jacobian(vector, args[0], mode="forward"))


def test_reverse_jacobian_of_a_vector_function_of_a_dict():
    def g(p):
        return np.tanh(p["W"] @ p["x"]) * p["s"] + p["x"]

    p = {"W": W(), "x": v(), "s": 0.5}
    got = cr.jacobian(g, p, mode="reverse")
    assert type(got) is Tangent[dict]
    assert_approx(got, cr.jacobian(g, p, mode="forward"))


@pytest.mark.parametrize("name", ["repeated_reads", "tuple", "nested", "loop", "real_scalars"])
def test_hessians_agree_with_the_tape_engine(name):
    fn, make, _ = CASES[name]
    (p,) = make()
    assert_approx(cr.hessian(fn, p), cr.hessian(fn, p, engine="tape"))


@pytest.mark.parametrize("name", ["repeated_reads", "nested", "loop", "dataclass", "namedtuple_unpack"])
def test_second_derivatives_forward_and_reverse_over_reverse(name):
    fn, make, _ = CASES[name]
    check_grads(fn, make(), modes=("reverse",), order=2, nested_modes=("forward", "reverse"), engine="source")
