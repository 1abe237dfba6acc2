"""Rules for ``np.select`` and ``np.choose``: each output entry is that of the first choice whose
condition holds there, or the default's (``np.choose``: that of the choice its index names); so
its derivative is the chosen array's, and the conditions (the index array) have none.

The choices and the default are the arguments of an elementwise function whose partials are the
masks of where each one is taken (``pull``/``push``, as for ``np.where``), with batches of
tangents on a leading axis.

>>> import numpy as np, chainrules as cr
>>> def ramp(x):
...     return np.sum(np.select([x < 0, x > 1], [np.zeros_like(x), 2 * x], default=x**2))
>>> cr.gradient(ramp, np.array([-1.0, 0.5, 3.0]))
(array([0., 1., 2.]),)
"""

from __future__ import annotations

import numpy as np

from ...core import NoTangent, ZeroTangent, carries_batch, frule, rrule, unthunk
from ._arrays import as_sequence, sequence_cotangent, sequence_items
from ._util import raise_out
from .ufuncs import pull, push

_NO = NoTangent()


def _taken(condlist, shape: tuple) -> list:
    """Where each choice is taken (the first true condition wins), and last where the default is."""
    masks, free = [], np.ones(shape, dtype=bool)
    for cond in condlist:
        mask = free & np.asarray(cond, dtype=bool)
        masks.append(mask)
        free = free & ~mask
    return [*masks, free]


@rrule.register(np.select, batched=True)
def rrule_select(condlist, choicelist, *positional, default=0):
    # a default given by keyword (or not at all) has no cotangent slot: one entry per positional argument
    if positional:
        (default,) = positional
    y = np.select(condlist, choicelist, default)
    choices = as_sequence(choicelist, np.select)
    masks = _taken(condlist, np.shape(y))

    def select_pullback(dy):
        *d_choices, d_default = pull((*choices, default), masks, y, dy)
        return _NO, _NO, sequence_cotangent(choicelist, d_choices), *((d_default,) if positional else ())

    return y, select_pullback


@frule.register(np.select, batched=True)
def frule_select(tangents, condlist, choicelist, default=0):
    d_choicelist = tangents[2]
    d_default = tangents[3] if len(tangents) > 3 else ZeroTangent()
    y = np.select(condlist, choicelist, default)
    choices = as_sequence(choicelist, np.select)
    d_choices = sequence_items(choices, d_choicelist)
    return y, push((*choices, default), _taken(condlist, np.shape(y)), y, (*d_choices, d_default))


def _chosen(a, choices: list, args: tuple, kwargs: dict) -> list:
    """Where each choice is taken: ``a`` (made an index by ``mode``) equals its position."""
    options = dict(zip(("out", "mode"), args), **kwargs)
    if options.get("out") is not None:
        raise_out(np.choose)
    index, n = np.asarray(a), len(choices)
    mode = options.get("mode", "raise")
    if mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = np.clip(index, 0, n - 1)
    return [index == k for k in range(n)]


@rrule.register(np.ndarray.choose, batched=True)  # (``a.choose(choices)``: the index array is the object)
@rrule.register(np.choose, batched=True)
def rrule_choose(a, choices, *args, **kwargs):
    """``y = choices[a]`` entry by entry (broadcast together): each choice's cotangent is the
    output's where ``a`` chose it, zero elsewhere; the index array ``a`` gets none.

    >>> import numpy as np, chainrules as cr
    >>> y, back = cr.rrule(np.choose, np.array([1, 0, 1]), [np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])])
    >>> y, [cr.unthunk(d) for d in back(np.array([1.0, 2.0, 3.0]))[2]]
    (array([10.,  2., 30.]), [array([0., 2., 0.]), array([1., 0., 3.])])
    """
    y = np.choose(a, choices, *args, **kwargs)
    items = as_sequence(choices, np.choose)
    masks = _chosen(a, items, args, kwargs)

    def choose_pullback(dy):
        dy = unthunk(dy)
        pieces = list(pull(tuple(items), masks, y, dy))
        batch = np.shape(dy)[0] if carries_batch(y, dy) else None
        return _NO, _NO, sequence_cotangent(choices, pieces, batch), *((_NO,) * len(args))

    return y, choose_pullback


@frule.register(np.ndarray.choose, batched=True)
@frule.register(np.choose, batched=True)
def frule_choose(tangents, a, choices, *args, **kwargs):
    y = np.choose(a, choices, *args, **kwargs)
    items = as_sequence(choices, np.choose)
    return y, push(tuple(items), _chosen(a, items, args, kwargs), y, tuple(sequence_items(choices, tangents[2])))
