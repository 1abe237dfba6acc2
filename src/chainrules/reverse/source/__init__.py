"""Reverse mode by source transformation (seed 001's Wengert lists, in Python).

``pullback_full(f, *args, **kwargs)`` uses the rule of ``f`` if there is one; otherwise it
reads ``f``'s source and runs it through a pipeline of small passes, each in its own module:

``parse`` → ``fence`` → ``normalize`` → ``lower`` (to the Wengert-list IR of ``ir``) →
``simplify`` (types, activity, what each statement needs) → ``primal`` → ``adjoint`` →
``codegen`` (compile, ``linecache``) → ``cache`` (per code object, per call signature);
``engine`` dispatches calls (a rule first, else the callee's own code) and ``runtime`` holds
what generated code calls for structures, closures and writes.

What it differentiates: straight-line code, branches, loops (``for``, ``while``, ``break``,
``continue``, ``else``, ``return`` anywhere), comprehensions and generator expressions,
recursion, closures, methods and callable objects, tuples/lists/dicts/dataclasses/namedtuples,
and writes into lists, dicts and arrays the function made (``out[i] = v``, ``lst.append(v)``).
A loop runs backwards from stacks of what each iteration kept (Zygote's "don't unroll"): the
generated code does not grow with the number of iterations. What it cannot differentiate
correctly (``try``, generators, writes into arguments or into containers someone else sees)
it refuses with ``chainrules.UnsupportedSyntaxError`` and the file, line and column.

``show(f, *args)`` returns the generated code for that call.
"""

from __future__ import annotations

from .engine import pullback_full, pullback_with_constants
from .show import show

__all__ = ["pullback_full", "pullback_with_constants", "show"]
