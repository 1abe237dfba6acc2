"""The errors chainrules raises, and the helpers that point them at the user's code.

Every error names what went wrong and where in the *user's* source it happened, never a
frame inside chainrules itself.
"""

from __future__ import annotations

import dis
import operator
import os
import sys
import sysconfig
import warnings
from collections.abc import Callable
from types import FrameType

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ChainRulesError(Exception):
    """Base class of every error chainrules raises on purpose."""


class NoRuleError(ChainRulesError, TypeError):
    """A call has no rule, and the engine cannot look inside the callable.

    The message names the callable, the argument types and the file:line of the call in the
    user's function, and says how to register a rule.

    >>> err = NoRuleError(len, ([1, 2],), location="model.py:12")
    >>> "builtins.len" in str(err) and "model.py:12" in str(err)
    True
    """

    def __init__(self, f, args: tuple = (), location: str | None = None, reason: str = ""):
        self.callable = f
        self.arg_types = tuple(type(a) for a in args)
        self.location = location
        types = ", ".join(_type_name(t) for t in self.arg_types)
        where = f" at {location}" if location else ""
        why = f" ({reason})" if reason else ""
        name = callable_name(f)
        advice = self._advice(_short_name(f)) + _frompyfunc_advice(f)
        super().__init__(f"no {self._missing} for {name}({types}){where}{why}.\n{advice}")

    _missing = "differentiation rule"

    @staticmethod
    def _advice(short: str) -> str:
        return (
            f"Register one with @chainrules.rrule.register({short}) (and @chainrules.frule.register for forward "
            f"mode), or mark it with chainrules.non_differentiable({short}) if it has no derivative."
        )


def _frompyfunc_advice(f) -> str:
    """For a ufunc made by ``np.frompyfunc`` (or its method: ``reduce``, ``accumulate``), whose
    Python function NumPy keeps out of reach (its loops take and give Python objects only), the
    call that the engines differentiate through that function."""
    import numpy as np  # (only where a refusal is written)

    u = getattr(f, "__self__", f)
    if not (isinstance(u, np.ufunc) and u.types and all(set(t) <= set("O->") for t in u.types)):
        return ""
    return (
        "\nnp.frompyfunc makes a ufunc whose Python function NumPy does not expose, so no engine can "
        "differentiate through it: write np.vectorize(func) in place of np.frompyfunc(func, nin, nout), "
        "whose rules differentiate func elementwise."
    )


class NoForwardRuleError(NoRuleError):
    """Forward mode met a call, on dual numbers, of a callable without a forward rule
    (``frule``); a reverse rule, if it has one, serves the source engine's primal, through which
    the entry points run the function then (a reverse rule may refuse that too: ``solve_ivp``'s
    adjoint).

    >>> issubclass(NoForwardRuleError, NoRuleError)
    True
    >>> str(NoForwardRuleError(len, ([1],))).splitlines()[0]
    'no forward rule for builtins.len(list).'
    """

    _missing = "forward rule"

    @staticmethod
    def _advice(short: str) -> str:
        return (
            f"Register one with @chainrules.frule.register({short}), or differentiate in reverse mode "
            "(cr.gradient, cr.jacobian(..., mode='reverse'))."
        )


def raise_swallowed(error: ChainRulesError, f) -> None:
    """Raise ``error``, which an engine raised while ``f`` ran (a value being differentiated
    converted with ``float()``, say) and which an exception handler in ``f``, or in code it
    called, caught: ``f`` went on and returned a result that would silently lack that
    derivative. Engines call this once ``f`` has returned."""
    error.add_note(
        f"{callable_name(f)} caught this error in an `except` clause and went on, so its result would have silently "
        "lacked the derivative; it is raised again now that the function has returned"
    )
    raise error


def raise_converted(error: BaseException, refused: Exception | None, values: tuple[type, ...] = ()) -> None:
    """Raise an engine's refusal ``refused`` where ``error``, which ended the function being
    differentiated, followed it: a library turned the refusal into its own error (NumPy's
    "setting an array element with a sequence" for ``out[i] = x`` of a number that indexes like a
    NumPy scalar; a C solver's "not a proper array of floats", which does not even chain it),
    whose message would not say what to write instead. The library's error is kept as a note
    where it does not chain the refusal. Without a refusal, a ``TypeError`` naming one of the
    engine's ``values`` types is compiled code refusing its value without asking it to convert
    (SciPy's ``SuperLU.solve``: "argument 1 must be numpy.ndarray, not DualArray"): a
    ``DroppedDerivativeError`` saying so. Otherwise return: the engine re-raises ``error``, noted
    with the user's line it came from (``note_user_line``)."""
    if refused is None or error is refused:
        if type(error) is TypeError and any(f"not {v.__name__}" in str(error) for v in values):
            location, _ = _user_line(error)
            raise DroppedDerivativeError(
                f"compiled code called{' at ' + location if location else ''} took a value being differentiated "
                f"where it needs a plain NumPy array or number ({error}), and cannot carry its derivative. A call "
                "with a rule is differentiated by it where the source engine runs the function (engine='source', "
                "and forward mode's fallback to it); otherwise compute with NumPy functions, which take the value"
            ) from error
        note_user_line(error)
        return
    link, depth = error, 0
    while link is not None and depth < 8:
        link, depth = link.__cause__ or link.__context__, depth + 1
        if link is refused:
            raise refused from None
    refused.add_note(f"(then the function failed with {type(error).__name__}: {error})")
    raise refused from None


class DroppedDerivativeError(ChainRulesError, TypeError):
    """A value an engine follows would lose its derivative: converted to a plain number or array
    (``float(x)``, ``math.sin(x)``, which calls ``float``, ``out[i] = x`` into a plain NumPy
    buffer), or written where the engine cannot follow the write (``x += v`` into a plain array,
    ``y[i] = v`` into an array forward mode does not own). The message says where, and how to
    write the line instead.

    >>> issubclass(DroppedDerivativeError, TypeError)
    True
    """


class NoDerivativeError(ChainRulesError, ValueError):
    """A rule met values at which it has no derivative to give: a solver's result that is not a
    root (it did not converge), a root where the Jacobian is singular, an optimum held by a bound,
    a second derivative at a singular matrix; or an argument it does not differentiate (a
    parameter whose derivative has no closed form) was differentiated. The message names the
    callable and the line of its call (``at_user``). An option or a shape that a rule does not
    take is a ``NoRuleError``. Unlike the engines' refusals, it
    does not depend on the engine: every mode raises it.

    >>> issubclass(NoDerivativeError, ValueError)
    True
    """


class EscapedValueError(ChainRulesError, TypeError):
    """A value being differentiated (a tracked value, a dual number) was used after its
    differentiation returned: the function stored it (in a global, an attribute, a closure) and
    it outlived the call, where its derivative means nothing (``escaped_error`` makes it).

    >>> issubclass(EscapedValueError, TypeError)
    True
    """


def escaped_error(value, entry_points: str) -> EscapedValueError:
    """The refusal of an operation on ``value``, which escaped the differentiation (begun by one of
    ``entry_points``, as the message names them) that made it, at the user's line.

    >>> "outlived cr.jvp" in str(escaped_error(1.0, "cr.jvp"))
    True
    """
    where = user_location()
    return EscapedValueError(
        f"a {type(value).__name__} from a differentiation that is not running was used"
        f"{' (at ' + where + ')' if where else ''}: a value being differentiated escaped its function (stored in a "
        f"global, an attribute or a closure) and outlived {entry_points}; return it from the function instead"
    )


class NonSmoothWarning(RuntimeWarning):
    """A rule met a point where the function it differentiates has no derivative (eigenvectors at
    repeated eigenvalues), gave the derivative of one choice of it, and cannot tell whether that is
    the derivative of the user's function: the message names the callable, the user's line of its
    call, which results stay exact and what to use for the others.

    >>> issubclass(NonSmoothWarning, RuntimeWarning)
    True
    """


def warn_at(warning: Warning, location: str | None) -> None:
    """Issue ``warning`` as raised at the user's ``location`` (``file:line``, from ``user_location``,
    found where the rule's primal ran: a pullback runs after the user's line has returned), so
    Python's filters show it once per line of the user's code."""
    if location is None:
        warnings.warn(warning, stacklevel=2)
        return
    filename, _, line = location.rpartition(":")
    warnings.warn_explicit(warning, type(warning), filename, int(line), registry=_WARNED)


#: the registry of ``warn_at``'s warnings, by which Python's default filter shows each once
_WARNED: dict = {}


class UnsupportedSyntaxError(ChainRulesError):
    """The source engine met a construct it does not differentiate.

    The message starts with ``file:line:col`` of the construct.

    >>> err = UnsupportedSyntaxError("'yield' is not supported", "model.py", 7, 4)
    >>> str(err).startswith("model.py:7:4")
    True
    """

    def __init__(self, message: str, filename: str = "<unknown>", lineno: int = 0, col: int = 0):
        self.filename = filename
        self.lineno = lineno
        self.col = col
        super().__init__(f"{filename}:{lineno}:{col}: {message}")


def callable_name(f) -> str:
    """A readable, qualified name for any callable: ``numpy.sin``, ``mymodule.Model.__call__``."""
    if isinstance(f, type):
        return f"{f.__module__}.{f.__qualname__}"
    owner = getattr(f, "__self__", None)
    if type(owner).__name__ == "ufunc":  # np.add.reduce: a method bound to a ufunc
        module = _ufunc_module(owner)
        return f"{module + '.' if module else ''}{owner.__name__}.{f.__name__}"
    qualname = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    module = getattr(f, "__module__", None)
    if module is None and isinstance(getattr(f, "__objclass__", None), type):  # np.ndarray.sum
        module = f.__objclass__.__module__
    if qualname is None:  # a callable instance
        return f"instance of {_type_name(type(f))}"
    if module is None and type(f).__name__ == "ufunc":
        module = _ufunc_module(f)
    module = _PRIVATE_MODULES.get(module, module)
    return f"{module}.{qualname}" if module else qualname


def _ufunc_module(u) -> str | None:
    """The public module that exports a ufunc (ufuncs have no ``__module__``): NumPy's, SciPy's, or none."""
    for module in ("numpy", "scipy.special"):  # only modules already imported are searched
        if getattr(sys.modules.get(module), u.__name__, None) is u:
            return module
    return None


def _short_name(f) -> str:
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    module = getattr(f, "__module__", None) or (_ufunc_module(f) if type(f).__name__ == "ufunc" else None)
    module = _PRIVATE_MODULES.get(module, module)
    if name is None:
        return type(f).__name__
    if module in ("numpy", "math", "operator", "builtins"):
        return name if module == "builtins" else f"{_MODULE_ALIASES.get(module, module)}.{name}"
    return name


_MODULE_ALIASES = {"numpy": "np"}
# C modules that stand behind public ones (`operator.add.__module__` is "_operator")
_PRIVATE_MODULES = {"_operator": "operator", "_functools": "functools", "posix": "os"}


def _type_name(t: type) -> str:
    if t.__module__ == "builtins":
        return t.__qualname__
    if t.__module__ == "numpy":
        return f"numpy.{t.__qualname__}"
    return f"{t.__module__}.{t.__qualname__}"


def is_internal_frame(frame: FrameType) -> bool:
    """Whether a frame belongs to chainrules itself (library frames are skipped in messages)."""
    return is_internal_file(frame.f_code.co_filename)


def is_internal_file(filename: str) -> bool:
    """Whether ``filename`` is chainrules' own, or code an engine generated (``<chainrules-...>``)."""
    return filename.startswith(_PACKAGE_DIR) or filename.startswith("<chainrules")


#: code that an engine generated from the user's: its file name -> (the user's file, {generated
#: line: the user's line}); ``user_location`` reports the user's line for such a frame
GENERATED_LINES: dict[str, tuple[str, dict[int, int]]] = {}


#: the standard library and installed packages: a library function the user's code called (NumPy's
#: ``np.mean`` converting a list of an engine's numbers) is not where the user should look
_LIBRARIES = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def note_user_line(error: BaseException) -> None:
    """Add to ``error`` a note with the user's ``file:line`` it was raised under (the innermost frame
    of its traceback outside chainrules and the libraries, or the user's line of generated code),
    unless its message or notes name it already: a rule's refusal of an option (``np.interp``'s
    ``period=``) is raised inside the rule, far from the call that passed it."""
    location, where = _user_line(error)
    if location is None or location in str(error) or any(location in n for n in getattr(error, "__notes__", ())):
        return
    error.add_note(f"(raised at {location}{where})")


def _user_line(error: BaseException) -> tuple[str | None, str]:
    """``(file:line, how)``: the innermost frame of ``error``'s traceback outside chainrules and the
    libraries, or the user's line of generated code (``how`` then says so); ``(None, "")`` without one."""
    location, where, tb = None, "", error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        generated = GENERATED_LINES.get(filename)
        if generated is not None and tb.tb_lineno in generated[1]:
            # (a traceback shows the generated line, which the default hook does not print)
            location = f"{generated[0]}:{generated[1][tb.tb_lineno]}"
            where = ", in the code generated from it"
        elif not is_internal_file(filename) and not is_library(filename):
            location, where = f"{filename}:{tb.tb_lineno}", ""
        tb = tb.tb_next
    return location, where


def is_library(filename: str) -> bool:
    """Whether ``filename`` is the standard library's or an installed package's (chainrules excepted)."""
    return filename.startswith(_LIBRARIES) and not filename.startswith(_PACKAGE_DIR)


def user_location(skip_internal: bool = True, frame=None) -> str | None:
    """``file:line`` of the innermost frame of the caller's stack (or of ``frame``'s) outside
    chainrules and the libraries it runs in (the standard library, installed packages).

    Engines call this when they raise, so that the message points at the user's line; a frame of
    code generated from the user's (``GENERATED_LINES``) counts as the user's line it came from.
    """
    frame = sys._getframe(1) if frame is None else frame
    while frame is not None and skip_internal and (is_internal_frame(frame) or is_library(frame.f_code.co_filename)):
        generated = GENERATED_LINES.get(frame.f_code.co_filename)
        if generated is not None and frame.f_lineno in generated[1]:
            return f"{generated[0]}:{generated[1][frame.f_lineno]}"
        frame = frame.f_back
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def option_refused(f, args: tuple, reason: str) -> NoRuleError:
    """The refusal of a call of ``f`` with an option or a kind of argument its rule does not
    differentiate, though the library takes it (``np.interp(..., period=)``), at the user's line;
    an option the library itself rejects stays the library's error.

    >>> import numpy as np
    >>> err = option_refused(np.interp, (), "period=: call it without period=")
    >>> isinstance(err, TypeError), "(period=: call it without period=)" in str(err)
    (True, True)
    """
    return NoRuleError(f, args, location=user_location(), reason=reason)


def at_user() -> str:
    """`` at file:line`` of the user's call (``user_location``), for an error's message; empty
    where unknown. A rule that refuses values or an argument it has no derivative for names the
    user's call this way (``NoDerivativeError(f"scipy.special.zeta{at_user()}: ...")``)."""
    where = user_location()
    return f" at {where}" if where else ""


_RULES_DIR = os.path.join(_PACKAGE_DIR, "rules") + os.sep

# the instruction of `a % b` (BINARY_OP NB_REMAINDER / NB_INPLACE_REMAINDER), where printf-style
# formatting (`"%.3f" % x`, and the logging module's `msg % args`) converts x with float() or int()
_BINARY_OP = dis.opmap.get("BINARY_OP")
_REMAINDER_ARGS = (6, 19)


def in_percent_formatting(frame: FrameType | None) -> bool:
    """Whether the first frame outside chainrules' package (the user's code, or the code the source
    engine generated from it), from ``frame`` outwards, is evaluating ``%``.

    A number conversion there is printf-style string formatting (``"%.3f" % x``): numbers that
    ``%`` computes with (``2.0 % x``) reach the operand's own ``__rmod__``, never a conversion.
    Formatting only reads the value, as an f-string does, so an engine's number may convert.
    """
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None or _BINARY_OP is None:
        return False
    code, at = frame.f_code.co_code, frame.f_lasti
    return 0 <= at < len(code) - 1 and code[at] == _BINARY_OP and code[at + 1] in _REMAINDER_ARGS


def as_index(primal, frame: FrameType | None, at: Callable[[], str]) -> int:
    """``operator.index`` of ``primal``, the plain value of an engine's number whose ``__index__``
    was called from ``frame``: an integer's (a count, an index, through which no derivative flows)
    and what ``"%x" % x`` prints; a float raises Python's ``TypeError``, ending with ``at()`` (where).

    >>> as_index(3, None, str)
    3
    >>> as_index(1.5, None, lambda: " (at f.py:2)")
    Traceback (most recent call last):
    TypeError: a float being differentiated (1.5) cannot be used as an integer (at f.py:2)
    """
    try:
        return operator.index(primal)
    except TypeError:
        if in_percent_formatting(frame):
            return int(primal)
    raise TypeError(f"a float being differentiated ({primal!r}) cannot be used as an integer{at()}")


def conversion_in_rule(
    frame: FrameType, values: str, doing: str = "converts them to plain values, which would drop their derivative"
) -> TypeError | None:
    """The error for an engine's value (``values``: "dual numbers", ...) converted to a plain one (or,
    as ``doing`` says, written into) by a rule's own code, running at ``frame`` or in a caller within
    chainrules or NumPy/SciPy; ``None`` when it is the user's doing (their code, or a library function
    their code called).

    A rule computes on an engine's values when a function is differentiated twice (a Hessian, a
    gradient of a gradient: the outer differentiation's values), or when they reach it inside a
    container it takes as a constant (a list of dual numbers); a rule whose code converts them
    does not support that, which the user could not tell from advice about their own code.
    """
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_RULES_DIR):
            where = user_location()
            rule = f"{frame.f_globals.get('__name__', '?')}.{frame.f_code.co_qualname}"
            return TypeError(
                f"the rule code {rule} ({os.path.basename(filename)}:{frame.f_lineno}) cannot take {values}: it "
                f"{doing}. It met them as values: the function it differentiates"
                f"{' (called at ' + where + ')' if where else ''} passes them inside a list or another container "
                "(pass an array: np.stack of them), or is being differentiated twice (a Hessian, a gradient of a "
                "gradient), which that rule does not support: differentiate it once, or write that step with "
                "functions whose rules do"
            )
        if not (is_internal_frame(frame) or frame.f_globals.get("__name__", "").partition(".")[0] in _NUMERICAL):
            return None
        frame = frame.f_back
    return None


_NUMERICAL = ("numpy", "scipy")
