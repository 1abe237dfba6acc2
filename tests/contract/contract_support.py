"""Shared helpers of the contract tests: which engines exist, and rules the tests reach on every engine.

The contract tests call the library through its public names only (``import chainrules as cr``).
Engine-level tests run on every reverse engine in ``chainrules.api.REVERSE_ENGINES`` whose
package is installed; an engine joins automatically when it lands.

Callables with test-only rules are NumPy ufuncs made with ``np.frompyfunc``: every engine
reaches a ufunc applied to a value it differentiates through the rule registry (the tracing
engine through NumPy's ufunc protocol, the source engine by looking the call up), and the
ufunc's own Python implementation never runs.
"""

from __future__ import annotations

import copy
import importlib.util

import numpy as np
import pytest

import chainrules as cr
from chainrules import api

REVERSE_ENGINES = [name for name, module in api.REVERSE_ENGINES.items() if importlib.util.find_spec(module) is not None]

#: decorator: run a test once per installed reverse engine, as ``engine``
each_engine = pytest.mark.parametrize("engine", REVERSE_ENGINES)


def _never(*args):
    raise AssertionError("a callable with a rule must be reached through its rule, never called itself")


def ruled_ufunc(n_in: int, n_out: int = 1) -> np.ufunc:
    """A fresh callable with no implementation: it works only through the rule a test registers."""
    return np.frompyfunc(_never, n_in, n_out)


def snapshot(values):
    """A deep copy to compare against after the call (arrays, structures, numbers)."""
    return copy.deepcopy(values)


def same_values(a, b) -> bool:
    """Whether two snapshots hold equal values, arrays compared elementwise, dtypes included."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and hasattr(b, "__dict__") and not isinstance(a, type):
        return type(a) is type(b) and same_values(vars(a), vars(b))
    return a == b


def leaked_internal_types(t) -> list[str]:
    """The thunks found anywhere inside a tangent the API returned (the API must unthunk them all)."""
    found = []
    if isinstance(t, cr.AbstractThunk):
        found.append(repr(t))
    elif isinstance(t, cr.Tangent):
        for _, v in t.items():
            found += leaked_internal_types(v)
    elif isinstance(t, (tuple, list)):
        for v in t:
            found += leaked_internal_types(v)
    elif isinstance(t, dict):
        for v in t.values():
            found += leaked_internal_types(v)
    return found
