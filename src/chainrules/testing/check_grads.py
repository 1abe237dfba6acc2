"""``check_grads``: check the engines behind ``cr.pullback`` and ``cr.jvp`` on a whole function, to second order.

Reverse mode is checked by the inner-product identity ``<J^T dy, dx> = <dy, J dx>`` for random
``dx`` and ``dy``: the left side from the engine's pullback, the right side from a
finite-difference JVP. Forward mode compares the engine's ``J dx`` with the finite-difference
one. For ``order=2`` the checks run again on the derivative functions themselves,
``x -> pullback(f, x)(dy)`` (``PullbackFunction``) and ``x -> jvp(f, x, dx)`` (``JVPFunction``),
with fixed random ``dy`` and ``dx``: by default in forward mode (forward over reverse, forward
over forward), and in reverse mode too when asked (``nested_modes``), also where ``modes`` leaves
forward mode out. The tape engine stands in for an engine that cannot differentiate its own
derivatives.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence

import numpy as np

from .. import api
from ..core import AbstractZero, NoRuleError, callable_name
from ..core.errors import DroppedDerivativeError, UnsupportedSyntaxError
from ..core.ruled_calls import IgnoredRuleError
from .checks import approx_problems, deep_unthunk, default_tolerances, primal_tolerance, tangent_problems
from .finite_differences import FiniteDifferenceMethod, default_fdm, fd_jvp
from .random_tangents import as_rng, rand_tangent
from .to_vec import tangent_to_vec

MODES = ("forward", "reverse")


def engine_pullback(f: Callable, args: tuple, engine: str | Callable):
    """``cr.pullback(f, *args, engine=engine)``; an engine given as a callable ``pullback_full`` is used directly.

    A callable engine follows the engine protocol (``pullback_full(f, *args) -> (y, back)`` with
    ``back(dy) -> (df, dx1, ...)``); its cotangents are unthunked and ``df`` dropped, as the API does.
    """
    if isinstance(engine, str):
        return api.pullback(f, *args, engine=engine)
    out = engine(f, *args)
    if out is None:  # cr.rrule as the engine: f has no rule
        raise NoRuleError(f, args, reason=f"the engine {_engine_name(engine)} returned None")
    y, back_full = out

    def back(dy):
        return tuple(deep_unthunk(c) for c in back_full(dy)[1:])

    return y, back


def _engine_name(engine) -> str:
    return engine if isinstance(engine, str) else getattr(engine, "__name__", type(engine).__name__)


class PullbackFunction:
    """``PullbackFunction(f, dy, engine)(*args)``: the cotangents ``cr.pullback(f, *args, engine=engine)[1](dy)``.

    The first derivative of ``f`` as a function of the primal point, for a fixed seed ``dy``;
    ``check_grads`` differentiates it for second-order checks.
    """

    def __init__(self, f: Callable, dy, engine: str | Callable):
        self.f, self.dy, self.engine = f, dy, engine

    def __call__(self, *args):
        return engine_pullback(self.f, args, self.engine)[1](self.dy)

    def __repr__(self) -> str:
        return f"pullback[{_engine_name(self.engine)}]({_name(self.f)})"


class JVPFunction:
    """``JVPFunction(f, tangents)(*args)``: the output tangent ``cr.jvp(f, args, tangents)[1]``.

    The first derivative of ``f`` along fixed ``tangents``, as a function of the primal point.
    """

    def __init__(self, f: Callable, tangents: tuple):
        self.f, self.tangents = f, tuple(tangents)

    def __call__(self, *args):
        return api.jvp(self.f, args, self.tangents)[1]

    def __repr__(self) -> str:
        return f"jvp({_name(self.f)})"


def _name(f) -> str:
    return repr(f) if isinstance(f, (PullbackFunction, JVPFunction)) else callable_name(f)


def _module_exists(module_name: str) -> bool:
    try:
        importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # only the engine package itself being absent means "not available"; a missing
        # dependency inside an engine that exists is an error worth seeing
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            return False
        raise
    return True


def available_reverse_engines() -> list[str]:
    """The names in ``cr.api.REVERSE_ENGINES`` whose engine package can be imported."""
    return [name for name, module in api.REVERSE_ENGINES.items() if _module_exists(module)]


def forward_engine_available() -> bool:
    """Whether the forward engine package (``chainrules.forward``) can be imported."""
    return _module_exists("chainrules.forward")


# the engine that differentiates another engine's pullback when that one cannot differentiate
# through cr.pullback itself (a rule table used as the engine)
_NESTING_ENGINE = "tape"

#: what an engine raises for code it refuses by design (its documented limits: a ruled function
#: called inside the function on the tape, a conversion that would drop a derivative)
_REFUSALS = (IgnoredRuleError, DroppedDerivativeError, UnsupportedSyntaxError)


class _Checker:
    def __init__(
        self, rtol, atol, fdm, rng, nested_modes, forward_available, performed, reverse_engines, skip_refusals
    ):
        self.rtol, self.atol, self.fdm, self.rng = rtol, atol, fdm, rng
        #: engines checked by default (``engine=None``) skip a function they refuse by design
        self.skip_refusals = skip_refusals
        self.skipped = 0
        self.nested_modes = tuple(nested_modes)
        self.forward_available = forward_available
        self.performed = performed
        #: the reverse engines ``engine=`` selects: they differentiate first derivatives when
        #: ``nested_modes`` holds "reverse", whether or not ``modes`` does
        self.reverse_engines = list(reverse_engines)

    def tolerances(self, *values) -> tuple[float, float]:
        rtol, atol = default_tolerances(*values)
        # whole functions compose many operations: a little more room than a single rule
        return (10 * rtol if self.rtol is None else self.rtol), (atol if self.atol is None else self.atol)

    def fail(self, context: str, problems: list[str]):
        body = "\n".join(f"  - {p}".replace("\n", "\n    ") for p in problems)
        raise AssertionError(f"check_grads({context}) failed:\n{body}")

    def run(self, context: str, what: str, fn: Callable, *args):
        try:
            return fn(*args)
        except AssertionError:
            raise
        except Exception as exc:
            raise AssertionError(f"check_grads({context}) failed: {what} raised {type(exc).__name__}: {exc}") from exc

    def nesting(self) -> tuple[bool, bool]:
        """``(reverse, forward)``: the modes that differentiate first derivatives. Forward mode
        asked for but not installed gives way to reverse mode, so that order 2 is not dropped."""
        forward = "forward" in self.nested_modes and self.forward_available
        reverse = "reverse" in self.nested_modes or ("forward" in self.nested_modes and not self.forward_available)
        return reverse and bool(self.reverse_engines), forward

    def check(self, f, args: tuple, order: int, reverse: Sequence, forward: bool, level: int):
        y_ref = self.run(f"order {level}: {_name(f)}", f"calling {_name(f)}", f, *args)
        nest_reverse, nested_forward = self.nesting()
        checked: list = []  # the engines that ran (a nesting engine may stand in for several)
        for engine in reverse:
            dy, engine = self.check_reverse(f, args, engine, y_ref, level, checked)
            if dy is None:
                continue
            checked.append(engine)
            nested_reverse = [engine] if nest_reverse else []
            if order > 1 and (nested_reverse or nested_forward):
                g = PullbackFunction(f, dy, engine)
                self.check(g, args, order - 1, nested_reverse, nested_forward, level + 1)
        if forward:
            dxs = self.check_forward(f, args, y_ref, level)
            nested_reverse = (list(reverse) or self.reverse_engines) if nest_reverse else []
            if order > 1 and (nested_reverse or nested_forward):
                self.check(JVPFunction(f, dxs), args, order - 1, nested_reverse, nested_forward, level + 1)

    def pullback(self, context: str, f, args: tuple, engine):
        """``(y, back, engine)``: the engine's pullback of ``f``; for a first derivative that
        ``engine`` cannot differentiate (no rule for ``cr.pullback``/``cr.jvp``), the nesting
        engine's, which differentiates ``engine``'s own pullback."""
        try:
            y, back = engine_pullback(f, args, engine)
            return y, back, engine
        except _REFUSALS as exc:
            if not self.skip_refusals:
                raise AssertionError(
                    f"check_grads({context}) failed: cr.pullback raised {type(exc).__name__}: {exc}"
                ) from exc
            self.performed.append(f"{context}: skipped, the engine refuses it ({type(exc).__name__})")
            self.skipped += 1
            return None, None, engine
        except NoRuleError as exc:
            nested = isinstance(f, (PullbackFunction, JVPFunction)) and (
                exc.callable is f or exc.callable in (api.pullback, api.jvp)
            )
            if not nested or engine == _NESTING_ENGINE or _NESTING_ENGINE not in available_reverse_engines():
                raise AssertionError(
                    f"check_grads({context}) failed: cr.pullback raised NoRuleError: {exc}"
                    + (
                        f"\n  engine {_engine_name(engine)!r} cannot differentiate a derivative: check order 2 with "
                        "nested_modes=('forward',) or with engine='tape'"
                        if nested
                        else ""
                    )
                ) from exc
        y, back = self.run(
            context, f"cr.pullback (engine={_NESTING_ENGINE!r})", engine_pullback, f, args, _NESTING_ENGINE
        )
        return y, back, _NESTING_ENGINE

    def _primal_problems(self, y, y_ref, args) -> list[str]:
        tol = primal_tolerance(y_ref, *args)
        return approx_problems(y, y_ref, tol, tol, "the primal y", "the engine's primal must equal f(*args)")

    def check_reverse(self, f, args, engine, y_ref, level, checked=()):
        """``(dy, engine)``: the seed used and the engine that ran; ``(None, engine)`` when the
        nesting engine stood in for ``engine`` and was already checked on ``f``."""
        context = f"reverse, engine={_engine_name(engine)!r}, order {level}: {_name(f)}"
        y, back, engine = self.pullback(context, f, args, engine)
        if back is None or engine in checked:
            return None, engine
        context = f"reverse, engine={_engine_name(engine)!r}, order {level}: {_name(f)}"
        problems = self._primal_problems(y, y_ref, args)
        dy = rand_tangent(y_ref, self.rng)
        dxs = tuple(rand_tangent(a, self.rng) for a in args)
        cotangents = self.run(context, "the pullback", back, dy)
        if not isinstance(cotangents, tuple) or len(cotangents) != len(args):
            got = f"{len(cotangents)} entries" if isinstance(cotangents, tuple) else type(cotangents).__name__
            self.fail(
                context, problems + [f"the pullback must return one cotangent per argument ({len(args)}), got {got}"]
            )
        for i, (a, c) in enumerate(zip(args, cotangents)):
            if not isinstance(c, AbstractZero):
                problems += tangent_problems(a, c, f"cotangent of argument {i + 1}")
        if problems:
            self.fail(context, problems)
        lhs = sum(float(tangent_to_vec(a, dx) @ tangent_to_vec(a, c)) for a, dx, c in zip(args, dxs, cotangents))
        jdx = self.run(context, "finite differences", self._fd_jvp, f, args, dxs)
        dy_vec, jdx_vec = tangent_to_vec(y_ref, dy), tangent_to_vec(y_ref, jdx)
        rhs = float(dy_vec @ jdx_vec)
        rtol, atol = self.tolerances(*args, y_ref)
        scale = max(abs(lhs), abs(rhs), float(np.linalg.norm(dy_vec) * np.linalg.norm(jdx_vec)))
        if not (math.isfinite(lhs) and abs(lhs - rhs) <= max(atol, rtol * scale)):
            self.fail(
                context,
                [
                    f"<J^T dy, dx> = {lhs:.12g} from the engine's pullback, but <dy, J dx> = {rhs:.12g} from finite "
                    f"differences, for random dx and dy\n    abs error {abs(lhs - rhs):.3g}, rel error "
                    f"{abs(lhs - rhs) / max(scale, 1e-300):.3g} (rtol={rtol:g}, atol={atol:g})"
                ],
            )
        self.performed.append(f"reverse[{_engine_name(engine)}] order {level}: {_name(f)}")
        return dy, engine

    def check_forward(self, f, args, y_ref, level):
        context = f"forward, order {level}: {_name(f)}"
        dxs = tuple(rand_tangent(a, self.rng) for a in args)
        y, ydot = self.run(context, "cr.jvp", lambda: api.jvp(f, tuple(args), dxs))
        problems = self._primal_problems(y, y_ref, args)
        problems += tangent_problems(y_ref, ydot, "the output tangent", top=False)
        if problems:
            self.fail(context, problems)
        expected = self.run(context, "finite differences", self._fd_jvp, f, args, dxs)
        rtol, atol = self.tolerances(*args, y_ref)
        problems = approx_problems(
            ydot, expected, rtol, atol, "J dx", "the engine's JVP does not match finite differences"
        )
        if problems:
            self.fail(context, problems)
        self.performed.append(f"forward order {level}: {_name(f)}")
        return dxs

    def _fd_jvp(self, f, args, dxs):
        return fd_jvp(lambda a: f(*a), tuple(args), tuple(dxs), self.fdm)


def check_grads(
    f: Callable,
    args,
    modes: Sequence[str] = MODES,
    order: int = 2,
    engine: str | Callable | None = None,
    nested_modes: Sequence[str] = ("forward",),
    rtol: float | None = None,
    atol: float | None = None,
    fdm: FiniteDifferenceMethod | None = None,
    rng: np.random.Generator | int | None = 0,
) -> list[str]:
    """Check ``f``'s derivatives from the engines against finite differences, up to ``order``.

    ``args`` is the tuple of positional arguments (a single non-tuple value is one argument).
    ``modes`` picks ``"forward"`` (``cr.jvp``) and/or ``"reverse"`` (``cr.pullback``);
    ``nested_modes`` are the modes that differentiate the first derivatives at ``order`` 2 and
    up: forward mode by default (forward over reverse is how ``cr.hessian`` works); add
    ``"reverse"`` for reverse over reverse and reverse over forward (with the engines ``engine``
    selects, whether or not ``modes`` holds ``"reverse"``). An engine that cannot differentiate
    through ``cr.pullback``/``cr.jvp`` (a rule table such as ``cr.rrule``) has the tape engine
    differentiate its first derivatives in its place, and the list of checks says so
    (``reverse[tape] order 2: pullback[rrule](f)``); without the forward engine installed,
    nested forward mode gives way to nested reverse mode, so ``order=2`` is never dropped;
    ``engine`` names one reverse engine, ``None`` means every one in ``cr.api.REVERSE_ENGINES``
    that is installed (an engine or the forward engine that is not installed is skipped, and so
    is an engine that refuses ``f`` by design, as the tape refuses a call of a function with a
    rule inside ``f``: the list of checks says so; checking nothing at all is an error); a
    callable with the engine protocol's signature (``pullback_full``) is used as the engine itself.
    ``rtol``/``atol`` default by dtype, ten times looser in ``rtol`` than ``test_rrule``'s. Returns
    the list of checks performed; raises ``AssertionError`` naming the mode, engine and order that failed.

    Here the "engine" is ``cr.rrule`` itself, which differentiates functions that have a rule:

    >>> import math
    >>> import chainrules as cr
    >>> from chainrules.testing import check_grads
    >>> check_grads(math.sin, 0.5, modes=("reverse",), order=1, engine=cr.rrule)
    ['reverse[rrule] order 1: math.sin']
    """
    if not isinstance(args, tuple):
        args = (args,)
    unknown = (set(modes) | set(nested_modes)) - set(MODES)
    if unknown:
        raise ValueError(f"check_grads: unknown modes {sorted(unknown)}; choose from {MODES}")
    if order < 1:
        raise ValueError(f"check_grads: order={order}; it must be at least 1")
    if engine is None:
        reverse_engines = available_reverse_engines()
    elif callable(engine):
        reverse_engines = [engine]
    else:
        if engine not in api.REVERSE_ENGINES:
            raise ValueError(f"check_grads: engine={engine!r}; choose one of {sorted(api.REVERSE_ENGINES)}")
        reverse_engines = [engine]
    reverse = reverse_engines if "reverse" in modes else []
    forward_available = forward_engine_available()
    forward = "forward" in modes and forward_available
    if not reverse and not forward:
        raise AssertionError(
            f"check_grads({callable_name(f)}): no engine to check for modes {tuple(modes)} "
            f"(reverse engines installed: {available_reverse_engines() or 'none'}; "
            f"forward engine installed: {forward_engine_available()})"
        )
    performed: list[str] = []
    checker = _Checker(
        rtol,
        atol,
        fdm or default_fdm(),
        as_rng(rng),
        nested_modes,
        forward_available,
        performed,
        reverse_engines,
        skip_refusals=engine is None,
    )
    checker.check(f, args, order, reverse, forward, 1)
    if checker.skipped == len(performed):
        raise AssertionError(f"check_grads({callable_name(f)}): every engine refused it: {performed}")
    return performed


check_grads.__test__ = False

__all__ = [
    "JVPFunction",
    "engine_pullback",
    "PullbackFunction",
    "available_reverse_engines",
    "check_grads",
    "forward_engine_available",
]
