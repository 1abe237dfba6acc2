"""The zoo: a shared corpus of ordinary Python/NumPy functions that every engine must differentiate.

Each case is a function with example arguments and tags. Engine test suites run the cases they
support against finite differences and against each other; a case an engine does not support
must make it raise a clear error (never return a wrong number).

Add a case with the ``case`` decorator in the module of its family (``scalars``, ``arrays``,
``structures``, ``control_flow``, ``mutation``, ...):

>>> from chainrules.testing.zoo import case, cases
>>> @case(2.0, 3.0, tags=("scalar",), name="doc_example")
... def doc_example(a, b):
...     return a / (a + b * b)
>>> [c.name for c in cases("scalar") if c.name == "doc_example"]
['doc_example']

Tags in use: ``scalar``, ``array``, ``structure`` (dataclasses, namedtuples, dicts, tuples),
``closure``, ``method`` (methods and callable objects), ``recursion``, ``control_flow`` (data-
dependent if/for/while), ``comprehension``, ``higher_order`` (map, sorted with key, reduce),
``mutation`` (local lists/arrays/dicts written in place), ``complex``, ``float32``, ``int``.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class ZooCase:
    """One function of the zoo with the arguments to differentiate it at."""

    name: str
    f: Callable
    args: tuple
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    tags: frozenset[str] = frozenset()
    rtol: float = 1e-6
    atol: float = 1e-8

    def __repr__(self) -> str:
        return f"ZooCase({self.name})"


CASES: dict[str, ZooCase] = {}


def case(*args, tags=(), name: str | None = None, rtol: float = 1e-6, atol: float = 1e-8, **kwargs):
    """Decorator: add the decorated function to the zoo, to be differentiated at ``args``."""

    def decorator(f: Callable) -> Callable:
        key = name or f.__name__
        if key in CASES:
            raise ValueError(f"zoo case {key!r} is defined twice")
        CASES[key] = ZooCase(key, f, tuple(args), dict(kwargs), frozenset(tags), rtol, atol)
        return f

    return decorator


def cases(*tags: str, exclude: tuple[str, ...] = ()) -> list[ZooCase]:
    """The cases carrying every tag in ``tags`` and none in ``exclude``, in definition order."""
    _load_families()
    wanted, unwanted = set(tags), set(exclude)
    return [c for c in CASES.values() if wanted <= c.tags and not (unwanted & c.tags)]


_loaded = False


def _load_families() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for info in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
            importlib.import_module(info.name)
