"""Deterministic names for everything the passes generate.

Generated code must read well and be the same on every run, so names are chosen from fixed
stems (``y_3``, ``pb_3``, ``dx``) and never random. The ``Namer`` knows every identifier of the
user's function and never hands out one of them (nor the same name twice): a stem that is
taken gets a numeric suffix.

>>> import ast
>>> namer = Namer({"x", "y_1", "dx"})
>>> namer.temp(), namer.temp(), namer.fresh("dx"), namer.fresh("dx")
('y_2', 'y_3', 'dx_2', 'dx_3')
"""

from __future__ import annotations

import ast


def identifiers(node: ast.AST) -> set[str]:
    """Every identifier a piece of source mentions: names, parameters, function names, imports."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.arg):
            found.add(sub.arg)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(sub.name)
        elif isinstance(sub, ast.alias):
            found.add((sub.asname or sub.name).split(".")[0])
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            found.update(sub.names)
    return found


class Namer:
    """Hands out names that clash neither with the user's identifiers nor with each other."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)
        #: the names handed out (the passes', not the user's)
        self.made: set[str] = set()
        self._temps = 0

    @classmethod
    def for_function(cls, node: ast.AST, extra: set[str] = frozenset()) -> Namer:
        return cls(identifiers(node) | set(extra))

    def fresh(self, stem: str) -> str:
        """``stem`` itself if free, else ``stem_2``, ``stem_3``, ..."""
        name, k = stem, 1
        while name in self.taken:
            k += 1
            name = f"{stem}_{k}"
        self.taken.add(name)
        self.made.add(name)
        return name

    def temp(self) -> str:
        """The next Wengert-list temporary: ``y_1``, ``y_2``, ..."""
        while True:
            self._temps += 1
            name = f"y_{self._temps}"
            if name not in self.taken:
                self.taken.add(name)
                self.made.add(name)
                return name
