"""``check_batched_pullback``: a rule's pullback called once with a batch of cotangents (a leading
batch axis) equals it called row by row, for rules registered ``batched=True``."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import batch_declines


def _random_cotangents(rng, y, batch: int):
    """A batch of cotangents for the output ``y``: its shape with a batch axis, its tangent dtype
    (for a list or tuple of outputs, a ``Tangent`` of one such batch per output)."""
    if isinstance(y, (list, tuple)):
        return cr.Tangent[type(y)](*(_random_cotangents(rng, item, batch) for item in y))
    dtype = np.result_type(y) if np.result_type(y).kind in "fc" else np.dtype(np.float64)
    values = rng.standard_normal((batch, *np.shape(y)))
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal((batch, *np.shape(y)))
    return values.astype(dtype)


def _one_row(y, dys, k: int):
    """Row ``k`` of a batch, as a single cotangent of ``y`` would come (a number for a number)."""
    if isinstance(y, (list, tuple)):
        return cr.Tangent[type(y)](*(_one_row(item, d, k) for item, d in zip(y, dys.backing)))
    row = dys[k]
    if isinstance(y, (float, int)) and not isinstance(y, bool):
        return float(row)
    if isinstance(y, complex):
        return complex(row)
    if isinstance(y, np.generic):
        return y.dtype.type(row) if y.dtype.kind in "fc" else row[()]
    return row


def _same(got, expected, batch: int, k: int, what: str, rtol: float):
    got, expected = cr.unthunk(got), cr.unthunk(expected)
    if isinstance(expected, cr.Tangent):  # a list's or tuple's cotangent: each element's batch in turn
        assert type(got) is type(expected), f"{what}: {got!r} where one cotangent gives {expected!r}"
        assert len(got.backing) == len(expected.backing), f"{what}: {len(got.backing)} elements"
        if isinstance(expected.backing, dict):  # an object's cotangent: each field's batch in turn
            assert got.backing.keys() == expected.backing.keys(), f"{what}: fields {list(got.backing)}"
            for name, e in expected.backing.items():
                _same(got.backing[name], e, batch, k, f"{what}, field {name}", rtol)
            return
        for i, (g, e) in enumerate(zip(got.backing, expected.backing)):
            _same(g, e, batch, k, f"{what}, element {i}", rtol)
        return
    if isinstance(expected, cr.AbstractZero):
        assert type(got) is type(expected), f"{what}: {got!r} where one cotangent gives {expected!r}"
        return
    assert not isinstance(got, cr.AbstractZero), f"{what}: {got!r} where one cotangent gives {expected!r}"
    got = np.asarray(got)
    assert got.shape == (batch, *np.shape(expected)), f"{what}: shape {got.shape} for {np.shape(expected)} rows"
    assert got.dtype == np.asarray(expected).dtype, f"{what}: dtype {got.dtype} for {np.asarray(expected).dtype}"
    np.testing.assert_allclose(got[k], expected, rtol=rtol, atol=1e-14, err_msg=what)


def check_batched_pullback(f, *args, kwargs=None, batch: int = 3, rtol: float = 1e-13, seed: int = 0):
    """Pull back ``batch`` random cotangents of ``f(*args, **kwargs)`` at once and one at a time."""
    kwargs = kwargs or {}
    rule = cr.rrule.lookup(f, args)
    assert rule is not None and rule.batched, f"the rule for {f} is not registered batched=True"
    declines = batch_declines()
    y, back = cr.rrule(f, *args, **kwargs)
    assert batch_declines() == declines, f"the rule for {f} declined a batch for these arguments"
    dys = _random_cotangents(np.random.default_rng(seed), y, batch)
    batched = back(dys)
    for k in range(batch):
        row = back(_one_row(y, dys, k))
        assert len(batched) == len(row)
        for i, (got, expected) in enumerate(zip(batched, row)):
            _same(got, expected, batch, k, f"{getattr(f, '__name__', f)}: cotangent {i}, row {k}", rtol)


@pytest.fixture
def batched_pullback():
    return check_batched_pullback
