"""The rule set: one module per domain, each registering ``rrule``/``frule`` for its callables.

Importing this package imports every rule module in it, so a new domain is a new file.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..core.registry import frule, rrule


def _import_all() -> None:
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        importlib.import_module(info.name)


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
