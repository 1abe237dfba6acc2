"""Rules for ``np.piecewise(x, condlist, funclist, *args, **kw)``: each entry of the output is
that of the last piece whose condition holds there (NumPy writes the pieces in order), a
constant or ``func(x[cond], *args, **kw)``; entries where no condition holds are zero.

Reverse mode differentiates each callable on its selection by its rule, or by the running
engine (``chainrules.rrule_via_ad``), like ``map``: the cotangent of the entries a piece kept goes
back through that call, into ``x[cond]`` and the extra positional ``args``; what a later piece
overwrote gets nothing. A constant piece gets the sum of the cotangent of the entries it kept,
and a closure over differentiated values passes its tangent to ``funclist``.
Forward mode pushes each callable's tangent by its frule (``np.sin``, ``np.exp``), else by the
running forward engine (``chainrules.frule_via_ad``), which runs it on dual numbers.
(The tape sees ``np.piecewise`` only when ``x`` is tracked; with a plain ``x`` and callables that
capture tracked values, NumPy's own code writes them into a plain array, which is refused.)

>>> import numpy as np, chainrules as cr
>>> def ramp(x):
...     return np.sum(np.piecewise(x, [x < 0, x > 1], [0.0, lambda v: 2 * v, lambda v: v**2]))
>>> cr.gradient(ramp, np.array([-1.0, 0.5, 3.0]))
(array([0., 1., 2.]),)
"""

from __future__ import annotations

import numpy as np

from ...core import (
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    add,
    frule,
    frule_via_ad,
    match_input,
    rrule,
    unthunk,
)
from ..pyfunctional import _add_function_tangent, _pullback_of
from ._arrays import array_or_active, scatter_add, sequence_items, tangent_array

_NO = NoTangent()
_ZERO = ZeroTangent()


def _conditions(x: np.ndarray, condlist, n_funcs: int) -> np.ndarray:
    """``condlist`` as NumPy's piecewise reads it: boolean masks, one per function (an
    "otherwise" mask added when there is one function more than conditions)."""
    if np.isscalar(condlist) or (not isinstance(condlist[0], (list, np.ndarray)) and x.ndim != 0):
        condlist = [condlist]
    conds = np.asarray(condlist, dtype=bool)
    if len(conds) == n_funcs - 1:
        conds = np.concatenate([conds, ~np.any(conds, axis=0, keepdims=True)])
    elif len(conds) != n_funcs:
        raise ValueError(
            f"with {len(conds)} condition(s), either {len(conds)} or {len(conds) + 1} functions are expected"
        )
    return conds


@rrule.register(np.piecewise)
def rrule_piecewise(x, condlist, funclist, *args, **kw):
    given, x = x, array_or_active(x)
    conds = _conditions(x, condlist, len(funclist))
    y = np.zeros_like(x)
    calls = []  # (piece, y_piece, pullback) of each callable piece that ran
    for k, (cond, func) in enumerate(zip(conds, funclist)):
        if not callable(func):
            y[cond] = func
            continue
        vals = x[cond]
        if vals.size:
            y_piece, back = _pullback_of(func, vals, *args, **kw)
            y[cond] = y_piece
            calls.append((k, y_piece, back))
    differentiable = x.dtype.kind in "fc"

    def piecewise_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, _NO, _NO, *(dy for _ in args))
        remaining = np.copy(dy)  # (an engine's array, a dual in a Hessian, copies into one that takes writes)
        kept = []  # each piece's cotangent: where a later piece did not overwrite it
        for cond in reversed(conds):
            kept.append(remaining[cond])
            remaining[cond] = 0
        kept.reverse()
        dx = _ZERO
        dargs = [_ZERO] * len(args)
        dfuncs = [_ZERO] * len(funclist)
        any_dfunc = False
        for k, func in enumerate(funclist):  # a constant piece: the cotangent of the entries it kept
            if not callable(func) and np.ndim(func) == 0 and isinstance(func, (float, complex, np.inexact)):
                dfuncs[k] = match_input(func, kept[k])
                any_dfunc = True
        for k, y_piece, back in calls:
            d = back(match_input(y_piece, kept[k]))
            if not isinstance(d[0], (NoTangent, ZeroTangent)):
                dfuncs[k], _ = _add_function_tangent(_NO, False, d[0])
                any_dfunc = True
            dvals = unthunk(d[1])
            if differentiable and not isinstance(dvals, AbstractZero):  # (a Hessian's duals: no writes in place)
                dx = add(dx, scatter_add(x.shape, conds[k], dvals))
            for i, da in enumerate(d[2 : 2 + len(args)]):
                dargs[i] = da if isinstance(dargs[i], AbstractZero) else dargs[i] + unthunk(da)
        dfunclist = Tangent[type(funclist)](*dfuncs) if any_dfunc and isinstance(funclist, (list, tuple)) else _NO
        return (_NO, match_input(given, dx) if differentiable else _NO, _NO, dfunclist, *dargs)

    return y, piecewise_pullback


# on an engine's values (a Hessian's duals), the primal above carries them through the callables,
# which are differentiated with them (as a closure's captured duals), so engines run it there
rrule_piecewise.on_engine_values = True


@frule.register(np.piecewise)
def frule_piecewise(tangents, x, condlist, funclist, *args, **kw):
    given, x = x, array_or_active(x)
    conds = _conditions(x, condlist, len(funclist))
    dx = tangent_array(given, unthunk(tangents[1])) if len(tangents) > 1 else _ZERO
    dargs = [unthunk(t) for t in tangents[4 : 4 + len(args)]]
    dargs += [_ZERO] * (len(args) - len(dargs))
    dfuncs = sequence_items(funclist, tangents[3]) if len(tangents) > 3 else [_ZERO] * len(funclist)
    y = np.zeros_like(x)
    dy = np.zeros(x.shape, dtype=x.dtype) if x.dtype.kind in "fc" else None  # the output's dtype: zeros_like(x)
    for cond, func, dfunc in zip(conds, funclist, dfuncs):
        if not callable(func):
            y[cond] = func
            if dy is not None:
                dfunc = unthunk(dfunc)
                dy[cond] = 0.0 if isinstance(dfunc, (AbstractZero, NoTangent)) else dfunc
            continue
        vals = x[cond]
        if not vals.size:
            continue
        dvals = dx if isinstance(dx, AbstractZero) else dx[cond]
        rule = frule.lookup(func, (vals, *args))
        if rule is None:
            y_piece, dy_piece = frule_via_ad((dfunc, dvals, *dargs), func, vals, *args, **kw)
        else:
            y_piece, dy_piece = rule((dfunc, dvals, *dargs), vals, *args, **kw)
        y[cond] = y_piece
        if dy is not None:
            dy[cond] = 0.0 if isinstance(unthunk(dy_piece), AbstractZero) else unthunk(dy_piece)
    return y, (_ZERO if dy is None else dy)
