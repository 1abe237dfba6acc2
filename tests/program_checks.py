"""What the program corpora (``programs_corpus.py``, ``_two.py``, ``_three.py``) share.

A corpus is a list of ``Program`` filled by its ``@program(args...)`` decorator (``new_corpus()``
makes both). Each program is checked by every engine: both reverse engines (``cr.pullback``
against finite differences), forward mode (``cr.jacobian(mode="forward")`` of the first argument,
when it and the output are numbers or arrays), and, where marked, the Hessian by forward over
each reverse engine and the second derivative by a tape over the source engine. A construct an
engine does not support by design is listed in ``refuses`` as ``{engine: message fragment}``:
that engine must raise a clear error saying it and naming the program's line, never return a
number (``hessian-<engine>`` for a refusal of the Hessian over that engine only, ``forward-primal``
where forward mode's fallback, the source engine's primal, refuses a call in the program too). Where the
source engine refuses a program's Python (an ``UnsupportedSyntaxError``), the API differentiates
it on the tape, which is checked too.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward
from chainrules.reverse import source, trace
from chainrules.testing.checks import tangent_problems
from chainrules.testing.to_vec import layout

REVERSE = ("source", "tape")

# what each engine refuses by design (see docs/engines.md), as the message says it
MATH_ON_TAPE = "use the NumPy function instead"  # math.sin(x) converts x with float()
MATH_FORWARD = "use the NumPy function instead"
ARRAY_OF_TRACKED = "would drop its derivative"  # np.array([...]) or out[i] = x of a tracked value
SCIPY_WRAPPER = "has a rule that the tape engine cannot use here"
SCIPY_WRAPPER_FORWARD = "has a rule that forward mode cannot use here"


@dataclasses.dataclass(frozen=True, eq=False)
class Program:
    name: str
    f: Callable
    args: tuple
    kwargs: dict
    hessian: bool
    nested: bool
    refuses: dict
    rtol: float


def new_corpus() -> tuple[list[Program], Callable]:
    """An empty corpus and the ``@program(*args, hessian=, nested=, refuses=, rtol=, **kwargs)`` filling it."""
    programs: list[Program] = []

    def program(*args, hessian=False, nested=False, refuses=None, rtol=1e-6, **kwargs):
        def register(f):
            programs.append(Program(f.__name__, f, args, kwargs, hessian, nested, refuses or {}, rtol))
            return f

        return register

    return programs, program


def numeric(x) -> bool:
    return isinstance(x, (float, np.ndarray, np.floating)) and not isinstance(x, bool)


def first_argument_function(p: Program):
    f, rest, kwargs = p.f, copy.deepcopy(p.args[1:]), p.kwargs
    return lambda x: f(x, *rest, **kwargs)


_first_argument_jacobian_cache: dict[int, np.ndarray] = {}


def first_argument_jacobian(p: Program) -> np.ndarray:
    """Finite differences of the program in its first argument (a number or an array), computed once per
    program: the reference of forward mode's Jacobian and, times the output cotangent, of that argument's
    cotangent from the reverse engines."""
    if id(p) not in _first_argument_jacobian_cache:
        f, rest = p.f, p.args[1:]
        _first_argument_jacobian_cache[id(p)] = crt.fd_jacobian(
            lambda x: f(x, *copy.deepcopy(rest), **p.kwargs), p.args[0]
        )
    return _first_argument_jacobian_cache[id(p)]


def cotangent_from_jacobian(x, y, dy, J: np.ndarray):
    """The cotangent of ``x`` that ``crt.fd_vjp`` gives for the cotangent ``dy`` of ``y``, from the Jacobian
    ``crt.fd_jacobian`` gives: ``dy``'s reals times ``J``."""
    dy = cr.unthunk(dy)
    dy_vec = np.zeros(J.shape[0])
    if not isinstance(dy, cr.AbstractZero):
        layout(y).pack(dy, dy_vec, 0, "dy")
    return layout(x).tangent(dy_vec @ J, 0)


_expected_cache: dict[int, tuple] = {}


def expected(p: Program):
    """The value, the output cotangent, and the finite-difference cotangent of each argument."""
    if id(p) in _expected_cache:
        return _expected_cache[id(p)]
    y = p.f(*copy.deepcopy(p.args), **p.kwargs)
    dy = 1.0 if isinstance(y, float) else crt.rand_tangent(y, np.random.default_rng(len(p.name)))
    cotangents = []
    for i, arg in enumerate(p.args):
        if i == 0 and numeric(arg):  # (the differences forward mode's check compares with)
            cotangents.append(cotangent_from_jacobian(arg, y, dy, first_argument_jacobian(p)))
            continue

        def with_argument(x, i=i):
            args = copy.deepcopy(p.args)
            return p.f(*args[:i], x, *args[i + 1 :], **p.kwargs)

        cotangents.append(crt.fd_vjp(with_argument, dy, arg))
    _expected_cache[id(p)] = y, dy, cotangents
    return _expected_cache[id(p)]


def same(a, b) -> bool:
    """Whether ``b`` holds exactly the values of ``a`` (a copy of it, not changed in place)."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__"):
        return type(a) is type(b) and same(vars(a), vars(b))
    return type(a) is type(b) and a == b


def check_refused(p: Program, engine: str, run: Callable) -> Exception:
    """``run`` raises the refusal ``p.refuses[engine]`` lists, naming the program's file."""
    with pytest.raises((TypeError, cr.ChainRulesError)) as info:
        run()
    assert p.refuses[engine] in str(info.value), str(info.value)
    assert inspect.getsourcefile(p.f) in str(info.value), f"the message names the line: {info.value}"
    return info.value


ENGINES = {"source": source, "tape": trace}


def on_the_tape(p: Program, engine: str) -> bool:
    """Whether the API differentiates ``p`` on the tape where ``engine`` refuses it: the source
    engine's refusal of its Python or of a call with no rule, where the tape takes it."""
    if engine != "source" or engine not in p.refuses or "tape" in p.refuses:
        return False
    args = copy.deepcopy(p.args)
    refusal = check_refused(p, engine, lambda: source.pullback_full(p.f, *args, **p.kwargs)[1](1.0))
    return isinstance(refusal, (cr.UnsupportedSyntaxError, cr.NoRuleError))


def check_reverse(p: Program, engine: str) -> None:
    args = copy.deepcopy(p.args)
    if engine in p.refuses:
        # (the cotangents read: an engine passes a refused one on unread, as a thunk)
        run = lambda: [cr.unthunk(c) for c in ENGINES[engine].pullback_full(p.f, *args, **p.kwargs)[1](1.0)]  # noqa: E731
        check_refused(p, engine, run)
        if not on_the_tape(p, engine):
            check_refused(p, engine, lambda: cr.pullback(p.f, *args, engine=engine, **p.kwargs)[1](1.0))
            return
    y_expected, dy, cotangents = expected(p)
    y, back = cr.pullback(p.f, *args, engine=engine, **p.kwargs)
    crt.assert_approx(y, y_expected, rtol=1e-12, atol=1e-14, name="value")
    grads = back(dy)
    for i, (arg, grad, reference) in enumerate(zip(p.args, grads, cotangents)):
        problems = tangent_problems(arg, grad, f"d(argument {i})")
        assert not problems, "\n".join(problems)
        crt.assert_approx(grad, reference, rtol=p.rtol, atol=p.rtol * 1e-2, name=f"d(argument {i})")
    assert all(same(before, after) for before, after in zip(p.args, args)), "an argument was changed"


def check_forward_jacobian(p: Program) -> None:
    f = first_argument_function(p)
    x = copy.deepcopy(p.args[0])
    if "forward" in p.refuses:
        # the engine refuses; the API runs f through the source engine's primal, unless that refuses too
        # (all of f, or, listed as "forward-primal", a call in it: a ruled solver whose value could not carry duals)
        check_refused(p, "forward", lambda: forward.jacobian(f, x))
        if "source" in p.refuses or "forward-primal" in p.refuses:
            check_refused(p, "forward", lambda: cr.jacobian(f, x, mode="forward"))
            return
    J = cr.jacobian(f, x, mode="forward")
    reference = first_argument_jacobian(p).reshape(np.shape(J))
    np.testing.assert_allclose(J, reference, rtol=p.rtol * 10, atol=p.rtol * 1e-1)
    assert same(x, p.args[0]), "the argument was changed"


_gradient_jacobian_cache: dict[tuple[int, str], np.ndarray] = {}


def gradient_jacobian(p: Program, engine: str) -> np.ndarray:
    """Finite differences of ``engine``'s gradient in the first argument, computed once per program: the
    reference of the Hessian over that engine and, for the source engine, of the tape's gradient of a
    weighted sum of that gradient (its weights times this Jacobian)."""
    key = id(p), engine
    if key not in _gradient_jacobian_cache:
        f = first_argument_function(p)
        _gradient_jacobian_cache[key] = crt.fd_jacobian(lambda z: cr.gradient(f, z, engine=engine)[0], p.args[0])
    return _gradient_jacobian_cache[key]


def check_hessian(p: Program, engine: str) -> None:
    f = first_argument_function(p)
    x = p.args[0]
    refusal = f"hessian-{engine}" if f"hessian-{engine}" in p.refuses else engine
    gradient = None  # the engine's own gradient, unless forward mode stands in for it below
    if refusal in p.refuses and on_the_tape(p, refusal) and "hessian-tape" not in p.refuses:
        refusal = None  # the tape differentiates f, and forward mode over it gives the Hessian
    if refusal in p.refuses:
        if refusal != "source" or "forward" in p.refuses:
            check_refused(p, refusal, lambda: cr.hessian(f, x, engine=engine))
            return
        # the source engine refuses f: the Hessian is forward mode over forward mode where that runs
        # (nested duals), else the source engine's refusal
        check_refused(p, refusal, lambda: cr.gradient(f, x, engine=engine))
        try:
            cr.hessian(f, x, engine=engine)
        except (TypeError, cr.ChainRulesError):
            check_refused(p, refusal, lambda: cr.hessian(f, x, engine=engine))
            return
        gradient = lambda z: cr.jacobian(f, z, mode="forward")  # noqa: E731
    H = cr.hessian(f, x, engine=engine)
    assert np.shape(H) == np.shape(x) * 2 and not np.iscomplexobj(H)
    reference = gradient_jacobian(p, engine) if gradient is None else crt.fd_jacobian(gradient, x)
    reference = reference.reshape(np.shape(H))
    rtol = max(1e-5, p.rtol)  # (a float32 program's gradient, and so its differences, are float32's)
    np.testing.assert_allclose(H, reference, rtol=rtol, atol=rtol * 1e-2)


def check_tape_over_source(p: Program) -> None:
    f = first_argument_function(p)
    x = p.args[0]
    weights = np.linspace(0.5, 1.5, np.size(x)).reshape(np.shape(x)) if np.ndim(x) else 0.7

    def weighted_slope(z):
        return np.sum(cr.gradient(f, z)[0] * weights)

    if "source" in p.refuses and not on_the_tape(p, "source"):
        check_refused(p, "source", lambda: cr.gradient(weighted_slope, x, engine="tape"))
        return
    got = cr.gradient(weighted_slope, x, engine="tape")[0]  # (f on the tape inside the tape, where source refuses it)
    # d/dx_j sum_i g_i(x) w_i: the weights times the Jacobian of the source gradient g (cr.gradient's default)
    reference = (gradient_jacobian(p, "source").T @ np.ravel(weights)).reshape(np.shape(x))
    crt.assert_approx(got, reference, rtol=1e-5, atol=1e-7)  # (a ZeroTangent where the slope is constant)


def check_first_derivatives(p: Program) -> None:
    """Both reverse engines and forward mode, in one test, so that the finite differences in the first
    argument, the reference of each, are computed once."""
    for engine in REVERSE:
        check_reverse(p, engine)
    if numeric(p.args[0]):
        check_forward_jacobian(p)


def check_second_derivatives(p: Program) -> None:
    """The Hessians and the tape's gradient of a source gradient, in one test, so that the finite
    differences of the source gradient, the reference of both, are computed once."""
    for engine in REVERSE if p.hessian else ():
        check_hessian(p, engine)
    if p.nested:
        check_tape_over_source(p)


def parameters(programs: list[Program]) -> dict[str, list[str]]:
    """The program names each check runs on."""
    return {
        "all": [p.name for p in programs],
        "forward": [p.name for p in programs if numeric(p.args[0])],
        "hessian": [p.name for p in programs if p.hessian],
        "nested": [p.name for p in programs if p.nested],
        "second order": [p.name for p in programs if p.hessian or p.nested],
    }
