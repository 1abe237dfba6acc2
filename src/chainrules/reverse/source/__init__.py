"""Reverse mode by source transformation (seed 001's Wengert lists, in Python).

``pullback_full(f, *args, **kwargs)`` uses the rule of ``f`` if there is one; otherwise it
reads ``f``'s source and runs it through a pipeline of small passes, each in its own module:

``parse`` → ``fence`` → ``normalize`` → ``lower`` (to the Wengert-list IR of ``ir``) →
``simplify`` (types, activity, what each statement needs) → ``primal`` → ``adjoint`` →
``codegen`` (compile, ``linecache``) → ``cache`` (per code object, per call signature).

``show(f, *args)`` returns the generated code for that call.
"""

from __future__ import annotations

from .engine import pullback_full
from .show import show

__all__ = ["pullback_full", "show"]
