"""Rules for ``np.select``: each output entry is that of the first choice whose condition holds
there, or the default's; so its derivative is the chosen array's, and the conditions have none.

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

from ...core import NoTangent, ZeroTangent, frule, rrule
from ._arrays import as_sequence, sequence_cotangent, sequence_items
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
