"""Pass 8, code generation: assemble, comment, compile and register the generated source.

The primal and adjoint passes produce lines tagged with the user's source line they come
from. Here they become one Python function per specialization:

    def f_primal(<the user's parameters>):
        # <user line>
        <primal code>
        def f_pullback(dy):
            # grad of: <user line>
            <adjoint code>
            return (<tangent of f>, <cotangents of the positional arguments>)
        return <value>, f_pullback

The source is compiled inside a factory whose parameters are the engine's helpers and the
function's free variables, so that the generated function runs with the user's globals and
closure cells. It is registered in ``linecache`` under a name starting with ``<chainrules``, so
tracebacks and ``inspect`` show it; ``LINE_MAP`` maps its lines back to the user's file and
line, which is what error messages report.
"""

from __future__ import annotations

import dataclasses
import linecache
import sys
import types

from ...core.errors import GENERATED_LINES


@dataclasses.dataclass(frozen=True)
class Line:
    indent: int
    text: str
    origin: int  # the user's source line this comes from (0: none)


# generated file name -> (user's file, {generated line: user's line}); shared with the errors of
# rules, whose user_location() then names the user's line
LINE_MAP: dict[str, tuple[str, dict[int, int]]] = GENERATED_LINES


def render(lines: list[Line], source_line, prefix: str) -> tuple[list[str], list[int]]:
    """Source lines with a ``# <prefix><user line>`` comment wherever the user's line changes,
    and for each output line the user's line it belongs to."""
    out, origins = [], []
    current = None
    for line in lines:
        pad = "    " * line.indent
        if line.origin and line.origin != current:
            text = source_line(line.origin)
            if text:
                out.append(f"{pad}# {prefix}{text}")
                origins.append(line.origin)
        if line.origin:
            current = line.origin
        out.append(pad + line.text)
        origins.append(line.origin or current or 0)
    return out, origins


def assemble(
    name: str,
    signature: str,
    header: list[str],
    primal: list[Line],
    back_name: str,
    seed: str,
    adjoint: list[Line],
    result: str,
    source_line,
) -> tuple[str, list[int]]:
    """The whole generated function as text, and the user's line of each of its lines."""
    primal_text, primal_origin = render(primal, source_line, "")
    adjoint_text, adjoint_origin = render(adjoint, source_line, "grad of: ")
    lines = [*header, f"def {name}({signature}):"]
    origins = [0] * len(lines)
    lines += primal_text
    origins += primal_origin
    lines.append(f"    def {back_name}({seed}):")
    origins.append(0)
    lines += adjoint_text
    origins += adjoint_origin
    lines.append(f"    return {result}, {back_name}")
    origins.append(0)
    return "\n".join(lines) + "\n", origins


_counter = 0


def compile_function(
    text: str, origins: list[int], user_file: str, label: str, name: str, outer_names: tuple[str, ...]
) -> tuple[types.CodeType, str]:
    """Compile ``text`` (one ``def``) inside a factory taking ``outer_names``; return the code
    object of the generated function and the file name it was registered under."""
    global _counter
    _counter += 1
    filename = f"<chainrules-source {_counter}: {label}>"
    params = ", ".join(outer_names)
    body = "".join(f"    {line}\n" if line else "\n" for line in text.splitlines())
    factory = f"def __factory__({params}):\n{body}    return {name}\n"
    code = compile(factory, filename, "exec")
    namespace: dict = {}
    exec(code, {"__builtins__": __builtins__}, namespace)
    inner = next(c for c in namespace["__factory__"].__code__.co_consts if isinstance(c, types.CodeType))
    # register the indented factory text so line numbers match, but show the function as generated
    factory_lines = factory.splitlines(keepends=True)
    linecache.cache[filename] = (len(factory), None, factory_lines, filename)
    LINE_MAP[filename] = (user_file, {i + 2: origin for i, origin in enumerate(origins) if origin})
    return inner, filename


def user_position(generated_file: str, lineno: int) -> tuple[str, int] | None:
    """``(file, line)`` in the user's source of a line of generated code."""
    entry = LINE_MAP.get(generated_file)
    if entry is None:
        return None
    user_file, lines = entry
    origin = lines.get(lineno)
    return (user_file, origin) if origin else None


def user_location(generated_file: str, lineno: int) -> str | None:
    """``file:line`` in the user's source of a line of generated code."""
    position = user_position(generated_file, lineno)
    return None if position is None else f"{position[0]}:{position[1]}"


def calling_location(skip: int = 1) -> str | None:
    """The user's ``file:line`` of the innermost generated code on the stack (the call being made)."""
    frame = sys._getframe(skip)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename in LINE_MAP:
            return user_location(filename, frame.f_lineno)
        frame = frame.f_back
    return None
