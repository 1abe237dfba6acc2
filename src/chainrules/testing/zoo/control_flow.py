"""Zoo family: loops and branches whose path depends on the data.

Loop-carried state, early exits (``break``, ``continue``, ``return`` inside loops, ``for ... else``),
nested loops, ``while`` loops whose trip count depends on the values, loops over ``zip``,
``enumerate``, dict items and array rows, and recursion through a loop. Cases that call the
``math`` module carry the tag ``math`` (an engine that runs them on tracked values refuses them).
"""

from __future__ import annotations

import math

import numpy as np

from . import case

_X = np.array([0.5, -1.5, 2.0, 0.25, 1.0])


@case(0.7, 1.3, tags=("scalar", "control_flow"))
def loop_carried_pair(x, y):
    """Two values updated together each step (a tuple swap)."""
    a, b = x, y
    for _ in range(5):
        a, b = b, a * b + 0.1
    return a + b


@case(_X, tags=("array", "control_flow"))
def nested_triangular_loops(x):
    """A double loop whose inner range depends on the outer index."""
    total = 0.0
    for i in range(len(x)):
        for j in range(i):
            total += x[i] * x[j]
    return total


@case(2.0, tags=("scalar", "control_flow"))
def newton_while(x):
    """A data-dependent while loop: Newton's iteration for sqrt(x), to convergence."""
    y = x
    while abs(y * y - x) > 1e-12:
        y = (y + x / y) / 2.0
    return y


@case(_X, 1.5, tags=("array", "control_flow"))
def break_at_threshold(x, w):
    total = 0.0
    for i in range(len(x)):
        if total > 1.0:
            break
        total = total + x[i] * w
    return total


@case(_X, tags=("array", "control_flow"))
def continue_over_negatives(x):
    total = 0.0
    for v in x:
        if v < 0:
            continue
        total = total + v * v
    return total


@case([0.5, 1.5, 3.0, 0.2], 2.0, tags=("structure", "control_flow"), name="for_else_found")
@case([0.5, 1.5, 0.7, 0.2], 2.0, tags=("structure", "control_flow"), name="for_else_not_found")
def for_else(xs, limit):
    """The ``else`` runs only when the loop did not break."""
    found = 0.0
    for v in xs:
        if v > limit:
            found = v * limit
            break
    else:
        found = -limit * xs[0]
    return found


@case(_X, 0.8, tags=("array", "control_flow"))
def return_from_nested_loops(x, c):
    """A return inside the inner loop leaves both loops and the function."""
    acc = c
    for i in range(len(x)):
        for j in range(len(x)):
            acc = acc * 0.9 + x[i] * x[j]
            if acc > 3.0:
                return acc * c
    return acc


@case(0.3, tags=("scalar", "control_flow"))
def while_true_with_break(x):
    steps = 0
    while True:
        x = x * 1.7 + 0.05
        steps += 1
        if x > 4.0 or steps > 50:
            break
    return x / steps


@case([1.0, 2.0, 3.0], (0.5, -1.0, 2.0), tags=("structure", "control_flow"))
def loop_over_zip(xs, ys):
    total = 0.0
    for a, b in zip(xs, ys):
        total = total + a * b
    return total


@case(_X, tags=("array", "control_flow"))
def loop_over_enumerate(x):
    total = 0.0
    for i, v in enumerate(x):
        total = total + (i + 1) * v * v
    return total


@case({"a": 1.5, "b": -0.5, "c": 2.0}, 0.7, tags=("structure", "control_flow"))
def loop_over_dict_items(weights, x):
    total = 0.0
    for name, w in weights.items():
        if name != "b":
            total = total + w * x
    return total


@case(np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]]), np.array([0.3, -0.7]), tags=("array", "control_flow"))
def loop_over_rows(m, v):
    total = 0.0
    for row in m:
        total = total + np.dot(row, v) ** 2
    return total


def _tree(x, depth):
    if depth == 0:
        return x * x
    total = 0.0
    for k in range(2):
        total = total + _tree(x * 0.5 + k, depth - 1)
    return total


@case(0.8, tags=("scalar", "recursion", "control_flow"))
def recursion_through_loop(x):
    """A recursive function that calls itself in a loop (a binary tree of calls)."""
    return _tree(x, 3)


@case(0.9, 1.1, tags=("scalar", "control_flow"))
def branch_on_loop_state(x, y):
    s = x
    for _ in range(8):
        if s > 1.0:
            s = s * 0.5 + y
        else:
            s = s * x + 0.2
    return s


@case([0.4, -1.2, 2.5, 0.9], tags=("structure", "control_flow"))
def loop_over_sorted_and_reversed(xs):
    total = 0.0
    for i, v in enumerate(sorted(xs)):
        total = total + i * v
    for v in reversed(xs):
        total = total * 0.5 + v
    return total


@case(0.4, 30, tags=("scalar", "control_flow", "math"))
def math_chain_until(x, n):
    """The scalar chain of the loop benchmark with the math module, stopped early."""
    for _ in range(n):
        x = math.sin(x) * 1.01 + 0.1
        if x > 0.9:
            break
    return x


@case(np.array([3.0, 1.0, 2.0]), tags=("array", "control_flow"))
def while_over_index(x):
    i = 0
    total = 0.0
    while i < len(x) and total < 4.0:
        total = total + x[i] * x[i]
        i += 1
    return total
