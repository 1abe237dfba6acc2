"""Jacobians of structured outputs (tuples, lists, namedtuples, dicts, dataclasses) and at structured
inputs: every mode and engine gives the same ``Tangent[P]`` of blocks, one per output leaf (itself
arranged like a structured input), with the values finite differences give."""

import dataclasses
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

Pair = namedtuple("Pair", "waves first")


@dataclasses.dataclass
class Layer:
    scaled: np.ndarray
    product: float


W = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])


def tuple_out(x):
    return (x[0], 2 * x[1])


def list_out(x):
    return [x[0], 2 * x[1]]


def namedtuple_out(x):
    return Pair(np.sin(x), x[0])


def dict_out(x):
    return {"matrix": W @ x, "last": x[2] * x[1]}


def dataclass_out(x):
    return Layer(x * 3.0, x[0] * x[1])


def scalar_in(t):
    return (t * t, np.stack([t, np.sin(t), 3.0 * t]))


def tuple_in(p):
    return p[0] * p[1] + np.sum(p[1])


def tuple_in_tuple_out(p):
    return (p[0] * p[1], np.sum(p[1] ** 2))


X = np.array([0.4, -1.2, 0.9])
PAIR = (np.array([0.5, 1.5]), np.array([-0.7, 2.0]))
CASES = {
    "tuple out": (tuple_out, X),
    "list out": (list_out, X),
    "namedtuple out": (namedtuple_out, X),
    "dict out": (dict_out, X),
    "dataclass out": (dataclass_out, X),
    "scalar in, structured out": (scalar_in, 0.3),
    "tuple in": (tuple_in, PAIR),
    "tuple in, tuple out": (tuple_in_tuple_out, PAIR),
}
MODES = [("forward", "source"), ("reverse", "source"), ("reverse", "tape"), ("auto", "source"), ("auto", "tape")]


def _leaf_blocks(t, like) -> list:
    """The parts of ``t`` (a Jacobian part, or ``like`` itself) at the float leaves of ``like``, in
    ``to_vec`` order."""
    if isinstance(like, (float, np.ndarray)):
        return [t]
    if t is not like:
        assert isinstance(t, cr.Tangent), t
    if isinstance(like, dict):
        keys = list(like)
    elif hasattr(like, "_fields"):
        keys = list(like._fields)
    elif dataclasses.is_dataclass(like):
        keys = [f.name for f in dataclasses.fields(like)]
    else:
        keys = list(range(len(like)))
    values = [like[k] if isinstance(like, dict) or isinstance(k, int) else getattr(like, k) for k in keys]
    parts = values if t is like else [t[k] if isinstance(t.backing, dict) else t.backing[i] for i, k in enumerate(keys)]
    return [b for part, v in zip(parts, values) for b in _leaf_blocks(part, v)]


def _dense(J, y, x) -> np.ndarray:
    """The Jacobian laid out as ``fd_jacobian`` lays it out: (output reals, input reals)."""
    rows = []
    for out_block, out in zip(_leaf_blocks(J, y), _leaf_blocks(y, y)):
        blocks = _leaf_blocks(out_block, x)
        rows.append(np.hstack([np.reshape(b, (np.size(out), np.size(v))) for b, v in zip(blocks, _leaf_blocks(x, x))]))
    return np.vstack(rows)


@pytest.mark.parametrize("name", list(CASES))
def test_every_mode_and_engine_gives_the_same_structured_jacobian(name):
    f, x = CASES[name]
    y = f(x)
    fd = crt.fd_jacobian(f, x)
    expected_type = None
    for mode, engine in MODES:
        for _ in range(2):  # auto mode's second call goes straight to the mode it chose
            J = cr.jacobian(f, x, mode=mode, engine=engine)
            assert isinstance(J, cr.Tangent), (mode, engine, J)
            expected_type = expected_type or type(J)
            assert type(J) is expected_type, (mode, engine)
            np.testing.assert_allclose(_dense(J, y, x), fd, rtol=1e-6, atol=1e-9, err_msg=f"{mode} {engine}")


@pytest.mark.parametrize("mode, engine", MODES)
def test_a_tuple_output_gives_one_block_per_item(mode, engine):
    J = cr.jacobian(lambda x: [x[0], 2 * x[1]], np.array([1.0, 2.0]), mode=mode, engine=engine)
    assert type(J) is cr.Tangent[list]
    np.testing.assert_array_equal(J.backing[0], [1.0, 0.0])
    np.testing.assert_array_equal(J.backing[1], [0.0, 2.0])


@pytest.mark.parametrize("mode, engine", MODES)
def test_blocks_have_the_leaf_shapes(mode, engine):
    J = cr.jacobian(tuple_in_tuple_out, PAIR, mode=mode, engine=engine)
    assert type(J) is cr.Tangent[tuple] and type(J.backing[0]) is cr.Tangent[tuple]
    assert [np.shape(b) for b in J.backing[0].backing] == [(2, 2), (2, 2)]
    assert [np.shape(b) for b in J.backing[1].backing] == [(2,), (2,)]
    Jt = cr.jacobian(scalar_in, 0.3, mode=mode, engine=engine)
    assert [np.shape(b) for b in Jt.backing] == [(), (3,)]


def both_kinds_of_leaves(x):
    return {"value": x * 2.0, "count": 3, "label": "x", "flag": True}


@pytest.mark.parametrize("mode, engine", MODES)
def test_an_integer_output_leaf_gets_zeros_and_a_discrete_one_no_tangent(mode, engine):
    J = cr.jacobian(both_kinds_of_leaves, np.array([1.0, 2.0]), mode=mode, engine=engine)
    assert type(J) is cr.Tangent[dict]
    np.testing.assert_array_equal(J["value"], 2.0 * np.eye(2))
    np.testing.assert_array_equal(J["count"], np.zeros(2))
    assert J["label"] == cr.NoTangent() and J["flag"] == cr.NoTangent()


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_structured_output_the_input_does_not_reach_gets_zero_blocks(engine):
    J = cr.jacobian(lambda x: (x * 2.0, np.ones(3)), np.array([1.0, 2.0]), mode="reverse", engine=engine)
    np.testing.assert_array_equal(J.backing[1], np.zeros((3, 2)))
    assert J.backing[1].flags.writeable


@pytest.mark.parametrize("mode", ["reverse", "auto", "forward"])
def test_a_function_returning_a_tangent_is_refused_in_every_mode(mode):
    """A gradient returned as it is (a ``Tangent``) is not an output a Jacobian is defined for:
    every mode says so, naming the function, instead of a silent ``NoTangent()``."""
    x = (np.array([1.0, 2.0]), 3.0)

    def gradient_of_loss(x):
        return cr.gradient(lambda t: np.sum(t[0] ** 2) * t[1], x)[0]

    with pytest.raises(TypeError, match="gradient_of_loss returned a Tangent"):
        cr.jacobian(gradient_of_loss, x, mode=mode)
