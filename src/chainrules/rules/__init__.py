"""The rule set: one module per domain, each registering ``rrule``/``frule`` for its callables.

Importing this package imports every rule module in it, so a new domain is a new file; a module
for a library slow to import waits until that library is imported (``_DEFERRED``).
"""

from __future__ import annotations

import importlib
import pkgutil

from ..core.registry import defer_rules, frule, rrule

#: rule modules of libraries slow to import, loaded once the library is: (library, rule module) pairs
_DEFERRED = (
    ("scipy.stats", f"{__name__}.scipy.stats"),
    ("scipy.stats", f"{__name__}.scipy.stats_summaries"),
    ("scipy.spatial", f"{__name__}.scipy.spatial"),
    ("scipy.integrate", f"{__name__}.scipy.integrate"),
    ("scipy.signal", f"{__name__}.scipy.signal"),
    ("scipy.ndimage", f"{__name__}.scipy.ndimage"),
    ("scipy.optimize", f"{__name__}.scipy.optimize"),
    ("scipy.interpolate", f"{__name__}.scipy.interpolate"),
)


def _import_all() -> None:
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if info.name not in {module for _, module in _DEFERRED}:
            importlib.import_module(info.name)
    for library, module in _DEFERRED:
        defer_rules(library, module)


_import_all()


def list_rules() -> list[tuple[str, bool, bool]]:
    """``(name, has_rrule, has_frule)`` for every callable with a rule, sorted by name.

    >>> import math, chainrules as cr
    >>> ("math.sin", True, True) in cr.rules.list_rules()
    True
    """
    from ..core.errors import callable_name

    names: dict[str, list[bool]] = {}
    for flag, dispatcher in enumerate((rrule, frule)):
        for f in dispatcher.registered():
            names.setdefault(callable_name(f), [False, False])[flag] = True
    return sorted((name, r, f) for name, (r, f) in names.items())


list = list_rules  # noqa: A001  (``cr.rules.list()``, as the coverage report is called)
