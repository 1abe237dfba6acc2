"""The user API: ``pullback``, ``gradient``, ``value_and_gradient``, ``jvp``, ``derivative``,
``jacobian``, ``hessian``, ``show``.

The API knows the engines only through a small protocol, so each engine stays independent:

- a reverse engine (``chainrules.reverse.source``, ``chainrules.reverse.trace``) provides
  ``pullback_full(f, *args, **kwargs) -> (y, back)`` with ``back(dy) -> (df, dx1, ..., dxn)``;
  ``back`` may also have ``last_call(dy)``, the same for a last call (the engine may free what
  the pullback holds as it goes), which ``gradient`` and ``value_and_gradient`` use;
  the source engine also provides ``show(f, *args, **kwargs) -> str``;
- the forward engine (``chainrules.forward``) provides ``jvp(f, primals, tangents) -> (y, dy)``
  and ``jacobian(f, x, chunk_size=None)``.

What the API returns is unthunked; the function's own tangent and keyword arguments get nothing.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .core import AbstractZero, ChainRulesError, NoTangent, Tangent, ZeroTangent, unthunk

REVERSE_ENGINES = {"source": "chainrules.reverse.source", "tape": "chainrules.reverse.trace"}
DEFAULT_ENGINE = "source"


_loaded_engines: dict[str, object] = {}


def _reverse_engine(engine: str):
    module = _loaded_engines.get(engine)
    if module is not None and REVERSE_ENGINES.get(engine) == module.__name__:
        return module
    module_name = REVERSE_ENGINES.get(engine)
    if module_name is None:
        raise ValueError(f"engine={engine!r}: choose one of {sorted(REVERSE_ENGINES)}")
    module = _loaded_engines[engine] = importlib.import_module(module_name)
    return module


def _forward_engine():
    # what importlib.import_module returns, without its few µs a call once the module is loaded
    module = sys.modules.get("chainrules.forward")
    return importlib.import_module("chainrules.forward") if module is None else module


_PLAIN = (float, np.ndarray, complex)


def _deep_unthunk(t):
    if type(t) in _PLAIN:
        return t
    t = unthunk(t)
    if isinstance(t, Tangent):
        backing = t.backing
        if isinstance(backing, tuple):
            return type(t)(*(_deep_unthunk(v) for v in backing))
        if type(t).primal_type is dict:
            return type(t)({k: _deep_unthunk(v) for k, v in backing.items()})
        return type(t)(**{k: _deep_unthunk(v) for k, v in backing.items()})
    return t


def _unthunked(cotangents: tuple, args: tuple) -> tuple:
    """The user's view of a full pullback's result: no tangent for ``f``, nothing lazy."""
    grads = cotangents[1:]
    # the common result, plain floats and arrays, is returned as it is, without a new tuple
    for c in grads:
        if type(c) not in _PLAIN:
            return tuple([c if type(c) in _PLAIN else _as_returned(a, c) for a, c in zip(args, grads)])
    return grads


def pullback(f: Callable, *args, engine: str = DEFAULT_ENGINE, **kwargs) -> tuple[Any, Callable]:
    """``(y, back)`` where ``y = f(*args, **kwargs)`` and ``back(dy)`` returns one cotangent per
    positional argument (nothing for ``f`` itself or for keyword arguments).

    ``back`` may be called more than once, with different cotangents.

    >>> import chainrules as cr
    >>> y, back = cr.pullback(lambda a, b: a * b, 2.0, 3.0)
    >>> y, back(1.0)
    (6.0, (3.0, 2.0))
    """
    y, back_full = _reverse_engine(engine).pullback_full(f, *args, **kwargs)

    def back(dy):
        return _unthunked(back_full(dy), args)

    return y, back


def _as_returned(arg, cotangent):
    """The cotangent the user gets: unthunked, and a zero of a float argument is ``ZeroTangent()``
    (``NoTangent()`` is for what has no derivative: indices, counts, bools, strings)."""
    cotangent = _deep_unthunk(cotangent)
    if isinstance(cotangent, NoTangent) and _is_inexact(arg):
        return ZeroTangent()
    return cotangent


def _is_inexact(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc"
    return isinstance(x, (float, complex, np.inexact))


def _select(grads: tuple, argnums: int | Sequence[int] | None):
    if argnums is None:
        return grads
    if isinstance(argnums, int):
        return grads[argnums]
    return tuple(grads[i] for i in argnums)


def _seed_for(y, f: Callable):
    if type(y) is float:
        return 1.0
    if isinstance(y, (float, int, np.floating, np.integer)) and not isinstance(y, bool):
        return 1.0
    if isinstance(y, np.ndarray) and y.shape == () and y.dtype.kind in "fiu":
        return np.ones((), dtype=y.dtype if y.dtype.kind == "f" else float)
    # a real scalar that an engine follows (nested differentiation) describes itself like NumPy's
    dtype = getattr(y, "dtype", None)
    if getattr(y, "shape", None) == () and isinstance(dtype, np.dtype) and dtype.kind in "fiu":
        return 1.0
    name = getattr(f, "__qualname__", repr(f))
    raise ChainRulesError(
        f"gradient needs {name} to return a real scalar, got {type(y).__name__}"
        f"{' of shape ' + str(y.shape) if isinstance(y, np.ndarray) else ''}; "
        "reduce the output to a scalar (e.g. .sum()), or use cr.jacobian or cr.pullback"
    )


def value_and_gradient(
    f: Callable,
    *args,
    engine: str = DEFAULT_ENGINE,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    **kwargs,
):
    """``(y, grads)`` for a real-scalar ``f``: ``grads`` has one gradient per positional argument.

    ``argnums`` selects arguments (an int gives one gradient, a sequence a tuple). With
    ``has_aux=True``, ``f`` returns ``(y, aux)`` and the result is ``((y, aux), grads)``; only
    ``y`` is differentiated.

    >>> import chainrules as cr
    >>> cr.value_and_gradient(lambda x, y: x * y + y, 2.0, 3.0)
    (9.0, (3.0, 3.0))
    """
    return _value_and_gradient(f, args, kwargs, engine, argnums, has_aux)


def _value_and_gradient(f: Callable, args: tuple, kwargs: dict, engine: str, argnums, has_aux: bool):
    run = _reverse_engine(engine).pullback_full
    # The cyclic garbage collector is paused from the forward pass to the end of the sweep: a
    # pullback holds a few small objects per operation (closures, boxes, tape entries), freed by
    # reference counting as the sweep runs; a collection in between would traverse all of them
    # (on a 2,000-operation tape, 7% of the gradient's time).
    pause_gc = gc.isenabled()
    if pause_gc:
        gc.disable()
    try:
        y, back_full = run(f, *args, **kwargs)
        if has_aux:
            # f returns (y, aux): the pullback of the pair, seeded with a zero for aux (a
            # wrapper that dropped aux would be library code to the source engine)
            y, aux = _output_and_aux(y, f)
            seed = (1.0 if type(y) is float else _seed_for(y, f), ZeroTangent())
        else:
            seed = 1.0 if type(y) is float else _seed_for(y, f)
        # `last_call` where the engine has it: the pullback's single call, which may free what
        # the pullback holds as it sweeps
        grads = _unthunked(getattr(back_full, "last_call", back_full)(seed), args)
    finally:
        if pause_gc:
            gc.enable()
    if argnums is not None:
        grads = _select(grads, argnums)
    return ((y, aux), grads) if has_aux else (y, grads)


def _output_and_aux(out, f: Callable):
    if isinstance(out, tuple) and len(out) == 2:
        return out
    name = getattr(f, "__qualname__", repr(f))
    raise ChainRulesError(f"has_aux=True needs {name} to return a pair (y, aux), got {type(out).__name__}")


def gradient(
    f: Callable,
    *args,
    engine: str = DEFAULT_ENGINE,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    **kwargs,
):
    """The gradient of a real-scalar ``f``: a tuple with one entry per positional argument.

    An argument the output does not depend on gets ``ZeroTangent()``; a discrete one (an index,
    a bool, a string) ``NoTangent()``. Integer inputs used arithmetically get float gradients.

    >>> import chainrules as cr
    >>> cr.gradient(lambda a, b: a / (a + b * b), 2.0, 3.0)  # doctest: +ELLIPSIS
    (0.0743..., -0.0991...)
    """
    value, grads = _value_and_gradient(f, args, kwargs, engine, argnums, has_aux)
    return (grads, value[1]) if has_aux else grads


def jvp(f: Callable, primals: tuple, tangents: tuple):
    """``(y, dy)``: the output of ``f(*primals)`` and its tangent along ``tangents`` (forward mode).

    >>> import chainrules as cr
    >>> cr.jvp(lambda x, y: x * y, (2.0, 3.0), (1.0, 0.0))
    (6.0, 3.0)
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError("jvp(f, primals, tangents): primals and tangents must be tuples")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    y, dy = _forward_engine().jvp(f, primals, tangents)
    return y, _deep_unthunk(dy)


def derivative(f: Callable, x):
    """``f'(x)`` for a scalar ``x``, by forward mode.

    >>> import chainrules as cr
    >>> cr.derivative(lambda x: x ** 3, 2.0)
    12.0
    """
    return jvp(f, (x,), (1.0 if not isinstance(x, complex) else 1.0 + 0j,))[1]


def _size(x) -> int:
    return int(np.size(x))


def jacobian(f: Callable, x, mode: str = "auto", engine: str = DEFAULT_ENGINE, chunk_size: int | None = None):
    """The Jacobian of ``f`` at ``x``, of shape ``out.shape + x.shape``.

    ``mode="forward"`` pushes tangents forward, ``"reverse"`` pulls cotangents back, ``"auto"``
    picks forward when the input is smaller than the output and reverse otherwise.

    >>> import numpy as np, chainrules as cr
    >>> W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> cr.jacobian(lambda x: W @ x, np.ones(2)).shape
    (3, 2)
    """
    if mode not in ("auto", "forward", "reverse"):
        raise ValueError(f"jacobian: mode={mode!r}; choose 'auto', 'forward' or 'reverse'")
    if mode == "auto":
        y = f(x)
        mode = "forward" if _size(x) < _size(y) else "reverse"
    if mode == "forward":
        return _forward_engine().jacobian(f, x, chunk_size=chunk_size)
    return _reverse_jacobian(f, x, engine)


def _reverse_jacobian(f: Callable, x, engine: str):
    y, back = pullback(f, x, engine=engine)
    y_arr = np.asarray(y)
    x_arr = np.asarray(x)
    dtype = np.result_type(y_arr.dtype, x_arr.dtype)
    if dtype.kind not in "fc":  # integer inputs or outputs get float derivatives; float32 stays float32
        dtype = np.dtype(np.float64)
    J = np.zeros(y_arr.shape + x_arr.shape, dtype=dtype)
    seed = np.zeros(y_arr.shape, dtype=dtype)
    flat_J = J.reshape(y_arr.size, *x_arr.shape)
    for i in range(y_arr.size):
        seed.reshape(-1)[i] = 1.0
        dx = back(seed if y_arr.ndim else seed[()])[0]
        if not isinstance(dx, AbstractZero):
            flat_J[i] = dx
        seed.reshape(-1)[i] = 0.0
    return J


def hessian(f: Callable, x, engine: str = DEFAULT_ENGINE):
    """The Hessian of a real-scalar ``f`` at ``x``: forward mode over the reverse-mode gradient.

    >>> import numpy as np, chainrules as cr
    >>> cr.hessian(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return _forward_engine().jacobian(lambda z: gradient(f, z, engine=engine)[0], x)


def show(f: Callable, *args, **kwargs) -> str:
    """The primal and pullback code the source engine generates for ``f(*args, **kwargs)``, as Python source.

    >>> import chainrules as cr
    >>> def f(a, b):
    ...     return a / (a + b * b)
    >>> "def " in cr.show(f, 2.0, 3.0)
    True
    """
    return _reverse_engine("source").show(f, *args, **kwargs)


__all__ = [
    "DEFAULT_ENGINE",
    "REVERSE_ENGINES",
    "derivative",
    "gradient",
    "hessian",
    "jacobian",
    "jvp",
    "pullback",
    "show",
    "value_and_gradient",
]
