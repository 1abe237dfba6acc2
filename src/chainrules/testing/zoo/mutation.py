"""Zoo family: lists, dicts and arrays the function creates and then writes into.

``out = np.zeros(n)`` filled in a loop (element by element, by slices, by rows, with ``+=``),
lists grown with ``append``/``extend`` and then stacked, lists and dicts assigned by key. The
containers are the function's own: writing into an argument is refused by the engines. Cases
that put differentiated values into a plain NumPy array (``out[i] = v``, ``np.array(values)``)
carry the tag ``array_write``: an engine that tracks values by wrapping them cannot store them
there, and refuses.
"""

from __future__ import annotations

import numpy as np

from . import case

_X = np.array([0.5, -1.5, 2.0, 0.25, 1.0])


@case(_X, 1.5, tags=("array", "mutation", "array_write"))
def fill_array_in_loop(x, w):
    """The single most requested feature: a buffer made with np.zeros and filled in a loop."""
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = np.sin(x[i]) * w
    return (out * out).sum()


@case(_X, 0.8, tags=("array", "mutation", "array_write"))
def recurrence_in_buffer(x, a):
    """Each element written from the one before it (a linear recurrence)."""
    out = np.zeros(len(x))
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = out[i - 1] * a + x[i]
    return out.sum() + out[-1] ** 2


@case(_X, tags=("array", "mutation", "array_write"))
def accumulate_into_items(x):
    out = np.zeros(3)
    for i in range(len(x)):
        out[i % 3] += x[i] * x[i]
        out[(i + 1) % 3] -= x[i]
    return out[0] * out[1] + out[2]


@case(_X, 2.0, tags=("array", "mutation", "array_write"))
def write_slices(x, w):
    out = np.ones(6)
    out[1:3] = x[:2] * w
    out[3:] = x[2:] ** 2
    out[0] = out[1] + out[4]
    return (out * np.arange(6.0)).sum()


@case(
    np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]]), np.array([0.3, -0.7]), tags=("array", "mutation", "array_write")
)
def fill_rows(m, v):
    out = np.zeros((3, 2))
    for i in range(3):
        out[i] = m[i] * v + i
    return (out**2).sum()


@case(_X, 0.6, tags=("array", "mutation", "array_write"))
def append_then_array(x, w):
    values = []
    for v in x:
        values.append(v * w)
    values.append(w)
    return np.array(values).sum() * values[0]


@case(np.array([[1.0, 2.0], [0.5, -1.0]]), 1.5, tags=("array", "mutation"))
def append_rows_then_stack(m, w):
    rows = []
    for row in m:
        rows.append(row * w)
        rows.append(row + w)
    return np.stack(rows).sum()


@case([0.5, 1.5], 2.0, tags=("structure", "mutation"))
def extend_a_list(xs, w):
    items = [w]
    items.extend([x * w for x in xs])
    items.extend((w * w,))
    return items[1] * items[2] + items[-1] + items[0]


@case(_X, tags=("array", "mutation"))
def list_items_assigned(x):
    slots = [0.0] * 3
    for i in range(len(x)):
        slots[i % 3] = slots[i % 3] + x[i]
    slots[1] = slots[1] * slots[2]
    return slots[0] + slots[1]


@case(_X, 0.5, tags=("array", "mutation", "structure"))
def dict_items_assigned(x, c):
    table = {}
    for i in range(len(x)):
        key = "even" if i % 2 == 0 else "odd"
        if key in table:
            table[key] = table[key] + x[i]
        else:
            table[key] = x[i] * c
    return table["even"] * table["odd"]


@case(_X, tags=("array", "mutation", "array_write"))
def running_mean(x):
    means = np.zeros(len(x))
    total = 0.0
    for i in range(len(x)):
        total = total + x[i]
        means[i] = total / (i + 1)
    return (means * means).sum()
