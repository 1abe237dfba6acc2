"""Pass 1, parse: from a Python function object to the ``ast`` of its definition.

The whole source file is parsed (once per file version) and the definition is found by
position, so line and column numbers in every later message are the user's own. A lambda is
found among the lambdas on its line by the position of its body. Functions whose code object
was compiled from text we cannot read (built-ins, C extensions, ``exec`` of a string that
``linecache`` does not hold) have no source: the engine reports them as having no rule.

Library code is never parsed: a function whose file lies in the standard library or in
``site-packages`` is reached only through rules (``is_library_code``).

>>> def square(x):
...     return x * x
>>> src = function_source(square)
>>> src.node.name, src.node.args.args[0].arg
('square', 'x')
"""

from __future__ import annotations

import ast
import dataclasses
import linecache
import os
import sysconfig
import types

from ...core.errors import ChainRulesError


class NoSourceError(ChainRulesError):
    """The source text of a function cannot be found."""


@dataclasses.dataclass(frozen=True)
class FunctionSource:
    """The definition of one function: its ``ast`` node (a ``FunctionDef`` or ``Lambda``),
    the file it comes from and the file's lines (for ``# grad of:`` comments)."""

    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    filename: str
    lines: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.node.name if not isinstance(self.node, ast.Lambda) else "<lambda>"

    def line(self, lineno: int) -> str:
        """The stripped text of line ``lineno`` of the file ('' when out of range)."""
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1].strip()
        return ""


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    prefixes = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(sorted(os.path.realpath(p) + os.sep for p in prefixes))


_LIBRARY_PREFIXES = _library_prefixes()
_PACKAGE_DIR = os.path.realpath(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# chainrules' own machinery; its other modules (the zoo of test functions, the demo) are user code
_INTERNAL = tuple(os.path.join(_PACKAGE_DIR, name) for name in ("core/", "rules/", "reverse/", "forward/", "api.py"))


def is_library_code(code: types.CodeType) -> bool:
    """Whether a code object belongs to installed library code (the standard library,
    ``site-packages``, chainrules itself), which the engine reaches only through rules."""
    filename = code.co_filename
    if filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    if path.startswith(_INTERNAL):
        return True
    if path.startswith(_PACKAGE_DIR + os.sep):
        return False
    return path.startswith(_LIBRARY_PREFIXES)


# ----- finding the definition ----------------------------------------------------------------

_parsed: dict[str, tuple[tuple[str, ...], ast.Module]] = {}


def _parse_file(filename: str, module_globals: dict | None) -> tuple[tuple[str, ...], ast.Module]:
    lines = tuple(linecache.getlines(filename, module_globals))
    if not lines:
        raise NoSourceError(f"the source of {filename} is not available")
    cached = _parsed.get(filename)
    if cached is not None and cached[0] == lines:
        return cached
    try:
        tree = ast.parse("".join(lines), filename=filename)
    except SyntaxError as err:
        raise NoSourceError(f"{filename} does not parse: {err}") from err
    _parsed[filename] = (lines, tree)
    return lines, tree


def _definitions_at(tree: ast.AST, lineno: int):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if lineno in (node.lineno, first):
                yield node
        elif isinstance(node, ast.Lambda) and node.lineno == lineno:
            yield node


def _body_positions(code: types.CodeType) -> list[tuple[int, int]]:
    """(line, column) of the instructions that carry a source span (``RESUME`` carries none)."""
    return [
        (line, col)
        for line, end_line, col, end_col in code.co_positions()
        if line is not None and col is not None and (end_line, end_col) != (line, col)
    ]


def _contains(node: ast.AST, position: tuple[int, int]) -> bool:
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= position <= end


def _parameter_names(node) -> list[str]:
    a = node.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def find_definition(code: types.CodeType, tree: ast.AST):
    """The ``FunctionDef``/``Lambda`` node of ``tree`` that compiled to ``code``."""
    is_lambda = code.co_name == "<lambda>"
    nargs = code.co_argcount + code.co_kwonlyargcount
    params = list(code.co_varnames[:nargs])
    candidates = [
        node
        for node in _definitions_at(tree, code.co_firstlineno)
        if isinstance(node, ast.Lambda) == is_lambda
        and (is_lambda or node.name == code.co_name)
        and _parameter_names(node) == params
    ]
    if len(candidates) > 1:
        positions = _body_positions(code)
        inside = [n for n in candidates if any(_contains(n.body if is_lambda else n, p) for p in positions)]
        candidates = inside or candidates
    if not candidates:
        return None
    # the innermost match: a lambda nested in another lambda's body is the one whose code this is
    return min(candidates, key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset))


def function_source(f: types.FunctionType) -> FunctionSource:
    """The definition of ``f``: its ``ast`` node, file name and the file's lines.

    Raises ``NoSourceError`` when the source cannot be found.
    """
    code = f.__code__
    lines, tree = _parse_file(code.co_filename, getattr(f, "__globals__", None))
    node = find_definition(code, tree)
    if node is None:
        raise NoSourceError(f"no definition of {code.co_name} at {code.co_filename}:{code.co_firstlineno}")
    return FunctionSource(node, code.co_filename, lines)
