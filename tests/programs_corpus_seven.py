"""A seventh corpus of whole programs, of what a Python programmer
writes: buffers filled in loops (rows, masks, repeated indices), accumulators in lists and dicts,
augmented assignment on the function's own arrays and views of them, copies written into, list
and dict methods, defaultdicts and Counters of floats; recursion, while loops with data-dependent
exits, early returns, try/except/finally, generators, closures, classes with operators, properties,
__call__ and inheritance, dataclasses, functools and itertools, match statements; and the NumPy
idioms around them (masks, np.where/select/clip, take/put_along_axis, argsort, cumsum/diff, axes,
stacking and splitting, float32 and complex intermediates).

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import math
import operator

import numpy as np
from program_checks import (  # noqa: F401
    ARRAY_OF_TRACKED,
    MATH_FORWARD,
    MATH_ON_TAPE,
    SCIPY_WRAPPER,
    SCIPY_WRAPPER_FORWARD,
    new_corpus,
)

IN_PLACE_ON_TAPE = "writes into an array in place"  # x += v, buf[i] += v on a plain NumPy buffer
AUGMENTED_ON_SOURCE = "an augmented assignment updates the ndarray in place"  # after a call read it
COMPLEX_ON_TAPE = "complex() of a value being differentiated"
REPEATED_INDEX = "index repeats a position"  # out[idx] += v, idx repeating: NumPy keeps the last write

PROGRAMS, program = new_corpus()

# ----- buffers filled in loops ------------------------------------------------------------------


@program(np.array([0.4, -0.3, 0.8, 0.2, -0.6]), hessian=True, nested=True, refuses={"tape": ARRAY_OF_TRACKED})
def recurrence_filled_into_a_plain_buffer(x):
    out = np.zeros(len(x))
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = 0.7 * out[i - 1] + np.sin(x[i]) * x[i - 1]
    return np.sum(out**2) + out[-1] * out[0]


@program(
    np.array([[0.5, -0.2, 0.3, 0.9], [0.1, 0.4, -0.7, 0.2], [-0.3, 0.6, 0.8, -0.1]]),
    nested=True,
    refuses={"tape": IN_PLACE_ON_TAPE},
)
def rows_accumulated_in_a_two_dimensional_buffer(W):
    out = np.zeros((4, 4))
    for i in range(3):
        out[i, :] += W[i] * W[(i + 1) % 3]
        out[i + 1, :] -= 0.5 * W[i]
    out[:, 0] *= 2.0
    return np.sum(np.tanh(out)) + np.sum(out[1:, 1:] ** 2)


@program(np.array([0.5, 0.05, 1.2, -0.4, 0.9, 0.15]), hessian=True)
def masked_writes_into_zeros_like(x):
    out = np.zeros_like(x)
    mask = x > 0.3
    out[mask] = np.log(x[mask])
    out[~mask] = x[~mask] ** 2 - 0.1
    out[out < 0.0] *= -3.0
    return np.sum(out * x)


@program(np.array([0.7, -0.4, 1.1, 0.3, 0.9, -0.2]), refuses={"tape": REPEATED_INDEX})
def scatter_subtract_with_repeated_indices(x):
    idx = np.array([0, 2, 2, 1, 0])
    out = x[:3] * 2.0
    out[idx] -= x[1:] * 0.5  # NumPy: one write per position, the last one wins
    return np.sum(out**2) + out[0] * x[0]


@program(np.array([0.7, -0.4, 1.1, 0.3, 0.9, -0.2]), hessian=True, refuses={"tape": REPEATED_INDEX})
def scatter_add_with_repeated_indices_on_a_copy(x):
    y = x.copy()
    idx = [1, 3, 1, 5]
    y[idx] += np.array([1.0, 2.0, 3.0, 4.0]) * x[:4]
    return np.sum(y**2)


@program(np.array([0.3, 1.2, -0.5, 0.8]), hessian=True, nested=True, refuses={"tape": ARRAY_OF_TRACKED})
def kernel_matrix_by_double_loop_then_solve(x):
    n = len(x)
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            K[i, j] = np.exp(-0.5 * (x[i] - x[j]) ** 2)
        K[i, i] += 0.1
    alpha = np.linalg.solve(K, np.ones(n))
    return np.sum(alpha) + np.linalg.slogdet(K)[1]


@program(np.array([0.9, 0.2, -0.6, 0.4, 1.3]), hessian=True)
def bubble_sort_by_tuple_swaps_on_a_copy(x):
    y = x.copy()
    n = len(y)
    for i in range(n):
        for j in range(n - 1 - i):
            if y[j] > y[j + 1]:
                y[j], y[j + 1] = y[j + 1], y[j]
    weights = np.arange(1.0, n + 1.0)
    return weights @ y**2 + y[0] * y[-1]


@program(
    np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]),
    np.array([1.0, -2.0, 0.5]),
    hessian=True,
    refuses={"hessian-tape": ARRAY_OF_TRACKED},
)
def gaussian_elimination_in_place_on_copies(A, b):
    A = A.copy()
    b = b.copy()
    n = len(b)
    for k in range(n - 1):
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            A[i, k:] -= f * A[k, k:]
            b[i] -= f * b[k]
    x = np.zeros_like(b)
    for i in reversed(range(n)):
        x[i] = (b[i] - A[i, i + 1 :] @ x[i + 1 :]) / A[i, i]
    return np.sum(x**2) + x[0]


@program(np.array([[4.0, 1.0, 0.4], [1.0, 3.0, 0.6], [0.4, 0.6, 2.5]]), hessian=True, nested=True)
def cholesky_by_hand_into_zeros_like(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j] - L[i, :j] @ L[j, :j]
            if i == j:
                L[i, j] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    return 2.0 * np.sum(np.log(np.diag(L))) + np.sum(L**2)


@program(
    np.array([2.0, 2.5, 3.0, 2.2]), np.array([1.0, 0.5, -0.3, 0.8]), nested=True, refuses={"tape": ARRAY_OF_TRACKED}
)
def thomas_tridiagonal_solver(diag, rhs):
    n = len(diag)
    off = -0.5
    c = np.zeros(n)
    d = np.zeros(n)
    c[0] = off / diag[0]
    d[0] = rhs[0] / diag[0]
    for i in range(1, n):
        m = diag[i] - off * c[i - 1]
        c[i] = off / m
        d[i] = (rhs[i] - off * d[i - 1]) / m
    x = np.zeros(n)
    x[-1] = d[-1]
    for i in range(n - 2, -1, -1):
        x[i] = d[i] - c[i] * x[i + 1]
    return x @ x + x[0]


@program(np.array([0.2, 0.9, -0.4, 0.5]), np.array([0.1, 0.7, 0.3]), hessian=True, refuses={"tape": ARRAY_OF_TRACKED})
def soft_dtw_table_with_infinite_borders(a, b):
    gamma = 0.5
    n, m = len(a), len(b)
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            prev = np.array([R[i - 1, j], R[i, j - 1], R[i - 1, j - 1]])
            lo = prev.min()
            softmin = lo - gamma * np.log(np.sum(np.exp(-(prev - lo) / gamma)))
            R[i, j] = (a[i - 1] - b[j - 1]) ** 2 + softmin
    return R[n, m]


@program(
    np.array([0.25, 1.3, 0.7, 2.1, 1.6, 0.45]),
    np.array([1.0, 0.5, 2.0, 1.5, 0.8, 1.2]),
    refuses={"tape": ARRAY_OF_TRACKED},
)
def weighted_histogram_by_searchsorted_bins(x, w):
    edges = np.array([0.0, 0.5, 1.0, 1.5, 2.5])
    hist = np.zeros(len(edges) - 1)
    for v, weight in zip(x, w):
        b = np.searchsorted(edges, v) - 1
        hist[b] += weight * np.exp(-v)
    p = hist / hist.sum()
    return -np.sum(p * np.log(p))


@program(np.array([0.3, 1.1, 0.6, 1.8]), hessian=True, nested=True, refuses={"tape": ARRAY_OF_TRACKED})
def polar_points_into_empty_columns(t):
    pts = np.empty((len(t), 2))
    pts[:, 0] = np.cos(t) * (1.0 + 0.1 * t)
    pts[:, 1] = np.sin(t) * (1.0 + 0.1 * t)
    edges = pts[1:] - pts[:-1]
    return np.sum(np.sqrt(np.sum(edges**2, axis=1))) + pts[-1] @ pts[0]


@program(np.array([0.5, -1.0, 0.8, 0.2, -0.4]), nested=True)
def reversed_slice_and_broadcast_slice_writes(x):
    out = np.zeros_like(x)
    out[::-1] = x * np.arange(1.0, 6.0)
    out[1:3] = out[0] * 0.5
    out[...] *= 1.0 + x**2
    return np.sum(out * np.array([1.0, -1.0, 2.0, 0.5, 1.5]))


@program(np.array([[1.0, 0.2, -0.3], [0.4, 1.5, 0.1], [-0.2, 0.3, 0.9]]), hessian=True)
def row_swaps_by_fancy_indexing_on_a_copy(A):
    P = A.copy()
    P[[0, 1]] = P[[1, 0]]
    P[:, [0, 2]] = P[:, [2, 0]]
    return np.sum(P * np.triu(np.ones((3, 3)))) + np.sum(P[0] * A[0]) ** 2


@program(np.array([0.9, -0.4, 1.3, 0.2, 0.6]))
def clip_by_masked_assignment_on_a_copy(x):
    y = x.copy()
    y[y > 1.0] = 1.0
    y[y < -0.3] = -0.3 + 0.1 * y[y < -0.3]
    return np.sum(y**3) + y @ x


@program(
    np.array([0.3, -0.2, 0.5, 0.8]), np.array([0.6, 0.1, -0.4, 0.2]), hessian=True, refuses={"tape": ARRAY_OF_TRACKED}
)
def running_partial_sums_read_back_while_filling(x, y):
    out = np.zeros(len(x))
    for i in range(len(x)):
        earlier = out[:i].sum() if i else 0.0
        out[i] = x[i] * y[i] + 0.3 * earlier
    return out @ out + out.max()


# ----- accumulators in lists and dicts ----------------------------------------------------------


@program(np.array([0.5, -0.3, 0.8, 0.2]), nested=True)
def dict_of_gradient_accumulators(w):
    params = {"a": w[:2], "b": w[2:]}
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    for step in range(3):
        for k in grads:
            grads[k] += (step + 1) * np.tanh(params[k])
    return sum(np.sum(g * params[k]) for k, g in grads.items())


@program(np.array([[0.0, 0.0], [1.0, 0.3], [0.2, 1.1], [1.2, 0.9]]), hessian=True, refuses={"tape": IN_PLACE_ON_TAPE})
def pairwise_forces_into_a_list_of_zeros(pos):
    n = len(pos)
    forces = [np.zeros(2) for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            f = d / (d @ d + 0.5) ** 2
            forces[i] += f
            forces[j] -= f
    return sum(np.sum(f * p) for f, p in zip(forces, pos))


@program(np.array([0.6, 0.2, -0.5, 1.1]), nested=True)
def list_of_floats_updated_by_index(x):
    totals = [0.0] * 3
    for i, v in enumerate(x):
        totals[i % 3] += v**2
        totals[(i + 1) % 3] -= 0.5 * v
    totals[0] *= 2.0
    return totals[0] * totals[1] + totals[2] ** 2


@program(
    np.array([0.4, 0.9, -0.2, 0.7, 0.3, -0.6]), hessian=True, refuses={"source": "of an element aliases another object"}
)
def grid_of_nested_lists_accumulated(x):
    grid = [[0.0] * 2 for _ in range(3)]
    for k, v in enumerate(x):
        grid[k % 3][k % 2] += v * (k + 1)
    row_sums = [sum(r) for r in grid]
    return sum(s**2 for s in row_sums) + grid[0][0] * grid[2][1]


@program(
    np.array([0.2, 0.7, -0.4, 1.0, 0.5]),
    hessian=True,
    refuses={"source": "`d.setdefault(k, v)` changes `groups` in place"},
)
def dict_get_with_default_and_setdefault_lists(x):
    groups = {}
    for i, v in enumerate(x):
        groups.setdefault(i % 3, []).append(v)
    sums = {}
    for k, vals in groups.items():
        sums[k] = sums.get(k, 0.0) + sum(v * v for v in vals)
    return sum(sums.get(k, 0.0) * (k + 1) for k in range(4))


@program(np.array([0.3, -0.8, 1.2, 0.5, -0.1, 0.9]), nested=True)
def soft_counts_in_a_defaultdict(x):
    counts = collections.defaultdict(float)
    labels = ["a", "b", "a", "c", "b", "a"]
    for lab, v in zip(labels, x):
        counts[lab] += 1.0 / (1.0 + np.exp(-v))
    total = sum(counts.values())
    return -sum(c / total * np.log(c / total) for c in counts.values())


@program(
    np.array([0.5, 1.5, 0.8, 1.1, 0.6]),
    refuses={"source": "no differentiation rule for collections.Counter.most_common"},
)
def weighted_counter_of_tokens(w):
    c = collections.Counter()
    for tok, weight in zip("abcab", w):
        c[tok] += weight**2
    common = c.most_common(2)
    return sum(v for _, v in common) / sum(c.values()) + c["a"] * c["c"]


@program(
    np.array([0.5, -0.2, 0.9, 0.3]), nested=True, refuses={"source": "`lst.insert(i, v)` changes `parts` in place"}
)
def list_append_extend_and_insert(x):
    parts = []
    for v in x:
        parts.append(v**2)
    parts.extend([np.sin(v) for v in x[:2]])
    parts.insert(0, x[0] * x[-1])
    return sum(p * (i + 1) for i, p in enumerate(parts))


@program(np.array([[0.2, 0.5], [-0.3, 0.8], [0.6, 0.1]]))
def layer_activations_collected_then_stacked(X):
    W = np.array([[0.5, -0.4], [0.3, 0.9]])
    acts = []
    h = X
    for layer in range(3):
        h = np.tanh(h @ W + 0.1 * layer)
        acts.append(h)
    stacked = np.stack(acts)
    return np.sum(stacked[-1] ** 2) + np.sum(np.mean(stacked, axis=0) * X)


# ----- augmented assignment and views on the function's own arrays -----------------------------


@program(np.array([0.4, -0.7, 0.9, 0.2]), hessian=True, nested=True, refuses={"source": AUGMENTED_ON_SOURCE})
def augmented_updates_then_read_back(x):
    y = x * 1.5
    y += np.cos(x)
    y *= x
    s = y.sum()
    y -= s / len(y)
    y /= 1.0 + s**2
    y **= 2
    return np.sum(y) + s * y[0]


@program(
    np.array([[0.5, 0.1, -0.2], [0.3, 0.7, 0.4], [-0.1, 0.2, 0.9]]),
    hessian=True,
    refuses={"source": AUGMENTED_ON_SOURCE, "forward": "may share memory with another"},
)
def row_views_updated_in_place(A):
    B = A * 2.0
    for i in range(3):
        row = B[i]
        row += A[:, i]
        row *= 0.5
    return np.sum(B @ B.T)


@program(np.array([1.0, 0.5, -0.3, 0.8, 0.2]), nested=True)
def copy_then_overwrite_entries_and_slices(x):
    y = x.copy()
    y[0] = x[-1] * x[1]
    y[-1] = np.exp(-x[0])
    y[1:3] *= 2.0
    z = np.copy(y)
    z[2] += y[0]
    return np.sum(y**3) - y[0] * x[0] + z @ z


@program(np.array([0.2, 0.8, -0.5]), hessian=True, nested=True, refuses={"tape": IN_PLACE_ON_TAPE})
def accumulator_array_incremented_in_a_loop(x):
    acc = np.zeros(3)
    for k in range(1, 4):
        acc += np.sin(k * x) / k
        acc *= 0.9
    return acc @ acc + np.prod(acc)


@program(np.array([[0.3, -0.2], [0.5, 0.4], [-0.1, 0.7]]), hessian=True, refuses={"source": AUGMENTED_ON_SOURCE})
def column_normalised_in_place_after_copy(X):
    Z = X.copy()
    Z -= Z.mean(axis=0)
    Z /= Z.std(axis=0)
    return np.sum(Z[:, 0] * Z[:, 1]) + np.sum(Z**4)


# ----- recursion and control flow ---------------------------------------------------------------


def fft_recursive(a):
    n = len(a)
    if n == 1:
        return a
    even = fft_recursive(a[0::2])
    odd = fft_recursive(a[1::2])
    twiddled = np.exp(-2j * np.pi * np.arange(n // 2) / n) * odd
    return np.concatenate([even + twiddled, even - twiddled])


@program(np.array([0.3, -0.5, 0.8, 0.1, -0.2, 0.6, 0.4, -0.7]))
def power_spectrum_by_recursive_fft(x):
    X = fft_recursive(x + 0j)
    return np.sum(np.abs(X[1:4]) ** 2) / len(x)


def merge_sorted(xs):
    if len(xs) <= 1:
        return xs
    mid = len(xs) // 2
    left, right = merge_sorted(xs[:mid]), merge_sorted(xs[mid:])
    out = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


@program(np.array([0.9, -0.3, 0.5, 1.4, 0.1]), hessian=True)
def rank_weighted_sum_by_merge_sort(x):
    s = merge_sorted(list(x))
    return sum((k + 1) * v**2 for k, v in enumerate(s))


def evaluate_expression(node, x):
    if isinstance(node, str):
        return x[int(node[1:])]
    if isinstance(node, float):
        return node
    op, *args = node
    vals = [evaluate_expression(a, x) for a in args]
    if op == "+":
        return sum(vals)
    if op == "*":
        return functools.reduce(operator.mul, vals)
    if op == "exp":
        return np.exp(vals[0])
    raise ValueError(op)


EXPRESSION = ("+", ("*", "x0", "x1", 2.0), ("exp", ("*", -0.5, "x2", "x2")), ("*", "x0", ("+", "x1", 1.0)))


@program(np.array([0.4, -0.6, 0.9]))
def expression_tree_of_tuples_evaluated_recursively(x):
    return evaluate_expression(EXPRESSION, x) ** 2


TARGET = np.array([1.0, -0.5])


@program(np.array([0.2, 0.3]))
def backtracking_line_search_with_while(w):
    def loss(v):
        return np.sum((v - TARGET) ** 2) + 0.1 * np.sum(v**4)

    for _ in range(3):
        g = 2.0 * (w - TARGET) + 0.4 * w**3
        t = 1.0
        while loss(w - t * g) > loss(w) - 0.3 * t * (g @ g):
            t *= 0.5
        w = w - t * g
    return loss(w)


@program(np.array([0.3, 0.25, 0.2, 0.4, 0.35]))
def first_crossing_interpolated_with_early_return(x):
    c = np.cumsum(x)
    for i in range(1, len(c)):
        if c[i] > 1.0:
            frac = (1.0 - c[i - 1]) / (c[i] - c[i - 1])
            return (i - 1 + frac) * np.sum(x**2)
    return len(c) * np.sum(x**2)


@program(np.array([0.4, -0.3, 1.2, -0.7, 0.5]), hessian=True)
def try_except_finally_in_a_loop(x):
    log = []
    total = 0.0
    for v in x:
        try:
            if v < 0:
                raise ValueError(f"negative value {v:.2f}")
            total = total + np.sqrt(v)
        except ValueError:
            total = total - v**2
        finally:
            log.append(total)
    return total + 0.1 * sum(log)


@program(1.3)
def rates_with_a_zero_division_fallback(rate):
    durations = [2.0, 0.0, 1.5]
    total = 0.0
    for d in durations:
        try:
            total += rate * 3.0 / d
        except ZeroDivisionError:
            total += rate**2
    return total


def running_windows(xs, width):
    window = []
    for v in xs:
        window.append(v)
        if len(window) > width:
            window.pop(0)
        if len(window) == width:
            yield sum(window) / width


@program(np.array([0.5, 1.2, -0.3, 0.8, 0.1, 0.9]), refuses={"source": "generator"})
def generator_of_running_means(x):
    means = list(running_windows(x, 3))
    return sum(m**2 for m in means) + max(means) * min(means)


@program(np.array([0.6, -0.2, 0.9]))
def closures_composed_from_a_factory(x):
    def make_affine(a, b):
        return lambda v: a * v + b

    def compose(*fs):
        return functools.reduce(lambda f, g: lambda v: g(f(v)), fs)

    pipeline = compose(make_affine(x[0], 0.5), np.tanh, make_affine(2.0, x[1]), np.sin)
    return sum(pipeline(t) ** 2 for t in (0.1, 0.5, 0.9)) * x[2]


@program(np.array([0.3, 0.5, 0.7]), refuses={"source": "(`nonlocal`), which is not supported"})
def nonlocal_running_statistics(x):
    count, mean, m2 = 0, 0.0, 0.0

    def update(v):
        nonlocal count, mean, m2
        count += 1
        delta = v - mean
        mean = mean + delta / count
        m2 = m2 + delta * (v - mean)

    for v in x:
        update(v * v)
    return m2 / (count - 1) + mean


@program(np.array([1.2, 0.8, 1.5]), 3, True)
def integer_and_boolean_settings(x, n_steps, normalise):
    y = x
    for step in range(n_steps):
        y = y - 0.1 * (y**3 - 1.0) / (step + 1)
        if normalise:
            y = y / np.linalg.norm(y)
    label = f"{n_steps} steps{' normalised' if normalise else ''}: {y.sum():.3f}"
    return np.sum(y**2 * x) + 0.0 * len(label)


@program(
    np.array([0.4, -0.2, 0.9, 0.6]),
    hessian=True,
    refuses={"source": "the condition of a `while` loop computes a value"},
)
def walrus_in_a_while_and_a_comprehension(x):
    z = x
    k = 0
    while (r := np.sum((z - 0.5) ** 2)) > 0.05 and k < 20:
        z = z - 0.3 * (z - 0.5)
        k += 1
    big = [s for v in z if (s := v * v) > 0.1]
    return r + sum(big)


@program(np.array([0.5, -0.4, 0.8]), refuses={"source": "`match`"})
def match_statement_on_layer_specs(x):
    specs = [("scale", 2.0), ("shift", 0.3), ("act", "tanh"), ("act", "square"), ("scale", -0.5)]
    h = x
    for spec in specs:
        match spec:
            case ("scale", float(s)):
                h = h * s
            case ("shift", b):
                h = h + b
            case ("act", "tanh"):
                h = np.tanh(h)
            case ("act", name):
                h = h**2 if name == "square" else h
    return np.sum(h * x)


# ----- classes, operators and dataclasses -------------------------------------------------------


class Vec:
    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        return Vec(self.data + other.data)

    def __sub__(self, other):
        return Vec(self.data - other.data)

    def __mul__(self, s):
        return Vec(self.data * s)

    __rmul__ = __mul__

    def __matmul__(self, other):
        return self.data @ other.data

    def __abs__(self):
        return np.sqrt(self @ self)

    @property
    def unit(self):
        return self * (1.0 / abs(self))


@program(np.array([0.6, -0.8, 0.3]), np.array([0.2, 0.5, 1.0]), refuses={"source": "constructing it has no rule"})
def vector_class_with_operators_and_a_property(a, b):
    u, v = Vec(a), Vec(b)
    w = 2.0 * u - v * 0.5 + u.unit
    return abs(w) + (w @ v) ** 2


@dataclasses.dataclass
class DVec:
    x: np.ndarray

    def __add__(self, other):
        return DVec(self.x + other.x)

    def __mul__(self, s):
        return DVec(self.x * s)

    def __rmul__(self, s):
        return DVec(self.x * s)

    def __matmul__(self, other):
        return self.x @ other.x

    @property
    def norm2(self):
        return self @ self


@program(np.array([0.6, -0.8, 0.3]), np.array([0.2, 0.5, 1.0]))
def dataclass_vectors_with_operator_overloading(a, b):
    u, v = DVec(a), DVec(b)
    path = [u + t * v for t in (0.0, 0.5, 1.0)]
    total = functools.reduce(lambda p, q: p + q, path)
    return total.norm2 + sum((p @ v) ** 2 for p in path)


class Layer:
    def __call__(self, h):
        return self.forward(h)

    def forward(self, h):
        raise NotImplementedError


class Dense(Layer):
    def __init__(self, W, b):
        self.W, self.b = W, b

    def forward(self, h):
        return h @ self.W + self.b


class Tanh(Layer):
    def forward(self, h):
        return np.tanh(h)


class Residual(Layer):
    def __init__(self, inner):
        self.inner = inner

    def forward(self, h):
        return h + self.inner(h)


@program(np.array([[0.4, -0.3], [0.2, 0.6]]), refuses={"source": "constructing it has no rule"})
def layer_classes_with_call_and_inheritance(W):
    net = [Dense(W, np.array([0.1, -0.1])), Tanh(), Residual(Dense(W.T * 0.5, np.zeros(2))), Tanh()]
    x = np.array([[1.0, 0.5], [-0.5, 0.2], [0.3, 0.9]])
    for layer in net:
        x = layer(x)
    return np.sum(x**2)


@dataclasses.dataclass(frozen=True)
class Oscillator:
    k: float
    c: float

    def rhs(self, state):
        x, v = state
        return np.array([v, -self.k * x - self.c * v])

    def step(self, state, dt):
        k1 = self.rhs(state)
        k2 = self.rhs(state + 0.5 * dt * k1)
        return state + dt * k2


@program(2.0, 0.3, hessian=True, nested=True, refuses={"tape": ARRAY_OF_TRACKED})
def dataclass_oscillator_with_midpoint_steps(k, c):
    osc = Oscillator(k=k, c=c)
    state = np.array([1.0, 0.0])
    energies = []
    for _ in range(10):
        state = osc.step(state, 0.1)
        energies.append(0.5 * state[1] ** 2 + 0.5 * k * state[0] ** 2)
    return energies[-1] + 0.1 * sum(energies)


# ----- functools, itertools and builtins --------------------------------------------------------


def rbf(a, b, length=1.0):
    return np.exp(-0.5 * (a - b) ** 2 / length**2)


@program(np.array([0.1, 0.6, 1.3, 0.9]))
def partial_kernel_over_itertools_product(x):
    k = functools.partial(rbf, length=0.8)
    total = 0.0
    for (i, a), (j, b) in itertools.product(enumerate(x), repeat=2):
        total = total + k(a, b) * (1.0 if i == j else 0.5)
    return total


@program(np.array([0.5, -0.3, 0.8, 0.2, 0.6]))
def accumulate_pairwise_and_chain(x):
    running = list(itertools.accumulate(x, lambda a, b: 0.8 * a + b))
    steps = [b - a for a, b in itertools.pairwise(running)]
    everything = list(itertools.chain(running[:2], steps, [x[0] * x[-1]]))
    return sum(v**2 for v in everything)


@program(np.array([0.9, -1.2, 0.4, 0.7, -0.5]))
def sorted_by_absolute_value_zip_and_reversed(x):
    ranked = sorted(x, key=abs)
    weights = [1.0 / (k + 1) for k in range(len(ranked))]
    head = sum(w * v for w, v in zip(weights, ranked))
    tail = sum(v * (i + 1) for i, v in enumerate(reversed(ranked)))
    return head**2 + tail


@program(np.array([0.8, 0.3, -0.6, 1.1]), np.array([1.0, 2.0, 0.5, 1.5]))
def max_min_with_keys_and_builtins(x, w):
    pairs = list(zip(x, w))
    best = max(pairs, key=lambda p: p[0] * p[1])
    worst = min(pairs, key=lambda p: p[0])
    return best[0] * best[1] + abs(worst[0]) ** 1.5 + sum(map(lambda p: p[0] ** 2 / p[1], pairs))


SCALE = 0.75
OFFSETS = (0.1, -0.2, 0.3)


@program(np.array([0.4, 0.2, -0.3]))
def global_constants_and_a_tuple_of_offsets(x):
    y = SCALE * x + np.array(OFFSETS)
    for o in OFFSETS:
        y = np.tanh(y + o) * SCALE
    return float(len(OFFSETS)) * np.sum(y**2)


# ----- NumPy idioms ----------------------------------------------------------------------------


@program(np.array([-1.5, -0.4, 0.3, 0.8, 1.7, 2.6]))
def piecewise_by_select_where_and_clip(x):
    conds = [x < -1.0, x < 0.5, x < 2.0]
    choices = [-1.0 - 0.5 * (x + 1.0) ** 2, x, 0.5 + np.sqrt(np.abs(x))]
    y = np.select(conds, choices, default=np.log(np.abs(x)))
    z = np.where(y > 0.6, y**2, 0.6 * y)
    return np.sum(np.clip(z, -0.5, 1.5) * x) + np.sum(y)


@program(
    np.array([[0.3, 1.2, -0.4, 0.8], [0.9, -0.1, 0.5, 0.2], [0.6, 0.7, -0.9, 1.1]]),
    nested=True,
    refuses={
        "source": "`np.put_along_axis(a, idx, v, axis)` changes `out` in place",
        "tape": "no differentiation rule for numpy.put_along_axis",
        "forward": "no forward rule for numpy.put_along_axis",
    },
)
def top_two_per_row_by_argsort_take_and_put_along_axis(S):
    order = np.argsort(-S, axis=1)[:, :2]
    top = np.take_along_axis(S, order, axis=1)
    out = np.zeros_like(S)
    np.put_along_axis(out, order, top * 2.0, axis=1)
    return np.sum(out**2) + np.sum(np.take(S, [0, 5, 5, 11]))


@program(np.array([0.5, 0.2, -0.3, 0.9, 0.4]))
def fancy_indexing_with_repeats_and_argsort_reordering(x):
    idx = np.array([0, 0, 3, 1, 3, 4])
    gathered = x[idx] * np.arange(1.0, 7.0)
    order = np.argsort(x)
    ranks = np.empty_like(order)
    ranks[order] = np.arange(len(x))
    return np.sum(gathered**2) + np.sum(x[order] * ranks) + np.sum(x[np.argsort(order)] * x)


@program(np.array([0.6, 0.2, 0.9, -0.4, 0.5]))
def cumsum_diff_and_cumprod(x):
    c = np.cumsum(x**2)
    d = np.diff(c, prepend=0.0)
    dd = np.diff(x, n=2)
    p = np.cumprod(1.0 + 0.1 * x)
    return np.sum(d * x) + np.sum(dd**2) + c[-1] * c[0] + p[-1]


@program(np.array([0.5, -0.2, 0.8, 0.1, -0.6, 0.3]))
def reshape_transpose_moveaxis_and_broadcast_to(x):
    a = x.reshape(2, 3)
    b = np.broadcast_to(a, (4, 2, 3)) * np.arange(1.0, 5.0)[:, None, None]
    c = np.moveaxis(b, 0, -1)
    d = np.swapaxes(c, 0, 1)
    e = np.einsum("ijk,jk->i", d, np.linspace(0.5, 1.5, 8).reshape(2, 4))
    return np.sum(e**2) + np.sum(a.T @ a)


@program(np.array([0.4, -0.5, 0.9, 0.2, 0.7, -0.1]))
def stack_concatenate_split_and_array_split(x):
    a, b = np.split(x, 2)
    parts = np.array_split(x, 4)
    m = np.stack([a, b * 2.0])
    v = np.concatenate([parts[0], parts[-1][::-1], np.hstack(parts[1:3])])
    return np.sum(m[0] * m[1]) + v @ np.linspace(0.5, 1.0, len(v)) + np.sum(np.vstack([a, b]) ** 3)


@program(
    np.array([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]], dtype=np.float32),
    np.array([0.1, -0.2], dtype=np.float32),
    rtol=2e-3,
)
def float32_layer_with_buffers_and_in_place_updates(X, b):
    h = X @ np.array([[0.6, -0.2], [0.3, 0.9]], dtype=np.float32) + b
    out = np.zeros_like(h)
    for i in range(len(h)):
        out[i] = np.tanh(h[i])
    out *= np.float32(0.5)
    out += b
    return np.sum(out**2) + np.float32(0.1) * np.sum(out[:, 0] * X[:, 1])


@program(np.array([0.4, -0.3, 0.8, 0.1], dtype=np.float32), rtol=2e-3)
def float32_scalar_loop_with_python_floats(x):
    total = np.float32(0.0)
    prev = x[0]
    for v in x[1:]:
        total = total + (v - 0.5 * prev) ** 2
        prev = v
    return total + np.mean(np.exp(x)) * 0.25


@program(np.array([0.3, -0.2]), hessian=True, refuses={"tape": COMPLEX_ON_TAPE})
def complex_iteration_with_a_real_output(c):
    z = 0.0 + 0.0j
    w = complex(c[0], c[1])
    for _ in range(4):
        z = z * z + w
    return abs(z) ** 2 + np.angle(z + 1.0) + (z * np.conj(z)).real


@program(np.array([0.5, -0.2, 0.7, 0.1, 0.4, -0.6]), nested=True, refuses={"tape": COMPLEX_ON_TAPE})
def dft_by_loop_into_a_complex_buffer(x):
    n = len(x)
    X = np.zeros(n, dtype=complex)
    for k in range(n):
        for t in range(n):
            X[k] += x[t] * np.exp(-2j * np.pi * k * t / n)
    power = np.abs(X) ** 2
    return np.sum(power[: n // 2] * np.arange(1.0, n // 2 + 1.0)) / n


@program(np.array([0.2, 0.6, -0.3, 0.9]))
def complex_exponential_phasors_summed(t):
    phasors = np.exp(1j * (2.0 * t + 0.3)) * (1.0 + t**2)
    total = np.sum(phasors)
    return np.real(total) ** 2 + np.imag(total) * np.abs(phasors).sum()


# ----- more buffers, index helpers and conversions ----------------------------------------------


@program(
    np.array([0.3, -0.4, 0.8, 0.5, -0.2, 0.6]),
    hessian=True,
    nested=True,
    refuses={"source": "after it was passed to a call", "tape": ARRAY_OF_TRACKED, "forward": ARRAY_OF_TRACKED},
)
def covariance_from_triangular_parameters(theta):
    L = np.zeros((3, 3))
    L[np.tril_indices(3)] = theta
    L[np.diag_indices(3)] = np.exp(np.diag(L))
    S = L @ L.T
    x = np.array([0.5, -1.0, 0.3])
    return 0.5 * x @ np.linalg.solve(S, x) + np.sum(np.log(np.diag(L)))


@program(np.array([0.2, 0.7, -0.3]), refuses={"tape": ARRAY_OF_TRACKED})
def symmetric_matrix_from_upper_triangle(p):
    M = np.eye(3) * 2.0
    iu = np.triu_indices(3, 1)
    M[iu] = p
    M[(iu[1], iu[0])] = p
    w = np.linalg.eigvalsh(M)
    return np.sum(w**3) + M[0, 2] * M[2, 1]


@program(np.array([[1.0, 0.3], [0.3, 2.0]]), np.array([0.5, 1.5]), nested=True, refuses={"tape": IN_PLACE_ON_TAPE})
def block_assembly_with_ix(block, d):
    K = np.diag(np.array([3.0, 3.0, 3.0, 3.0]))
    for idx in ([0, 1], [2, 3], [1, 2]):
        K[np.ix_(idx, idx)] += block
    K[..., 0] += 0.1 * d[0]
    K[-1, ...] *= d[1]
    return np.linalg.slogdet(K)[1] + np.sum(K**2) * 0.01


@program(
    np.array([[2.0, 0.5, 0.3], [0.5, 3.0, 0.4], [0.3, 0.4, 2.5]]),
    hessian=True,
    refuses={"source": "other references would see the write"},
)
def schur_complement_update_of_a_trailing_block(A):
    M = A.copy()
    pivots = []
    for k in range(2):
        pivots.append(M[k, k])
        u = M[k + 1 :, k] / M[k, k]
        M[k + 1 :, k + 1 :] -= np.outer(u, M[k, k + 1 :])
    pivots.append(M[2, 2])
    return sum(np.log(p) for p in pivots)


@program(
    np.array([[0.2, 1.5, 0.3], [2.0, 0.4, 1.0], [0.5, 0.9, 3.0]]),
    np.array([1.0, 0.0, -1.0]),
    refuses={"source": "other references would see the write", "forward": ARRAY_OF_TRACKED},
)
def lu_with_partial_pivoting_by_row_swaps(A, b):
    U = A.copy()
    rhs = b.copy()
    n = len(rhs)
    for k in range(n - 1):
        p = k + int(np.argmax(np.abs(U[k:, k])))
        if p != k:
            U[[k, p]] = U[[p, k]]
            rhs[[k, p]] = rhs[[p, k]]
        for i in range(k + 1, n):
            m = U[i, k] / U[k, k]
            U[i] = U[i] - m * U[k]
            rhs[i] = rhs[i] - m * rhs[k]
    return np.sum(np.log(np.abs(np.diag(U)))) + np.sum(rhs**2)


@program(np.array([0.9, 0.1, 0.5, 0.7, 0.3]))
def values_read_through_tolist(x):
    vals = x.tolist()
    total = 0.0
    for i, v in enumerate(vals):
        total += (i + 1) * v**2
    return total + np.sum(x)


@program(np.array([0.9, 0.1, 0.5, 0.7]), refuses={"tape": ARRAY_OF_TRACKED})
def python_float_and_item_conversions(x):
    first = float(x[0])
    last = x[-1].item()
    scale = x.sum()
    return first * scale + last**2 * scale


@program(
    np.array([[0.5, 0.2], [0.1, 0.9], [0.4, 0.3]]),
    nested=True,
    refuses={
        "source": "must be bound to a new object here",
        "tape": "after another array came to share its memory",
        "forward": "assigning into a dual array",
    },
)
def writes_through_a_transposed_view_of_a_copy(X):
    Y = X.copy()
    Yt = Y.T
    Yt[0] = np.tanh(Yt[0])
    Y[:, 1] *= Y[:, 0]
    return np.sum(Y**2) + Y[2, 1]


@program(
    np.array([0.3, 0.8, -0.4, 0.6]),
    nested=True,
    refuses={
        "source": "of an element aliases another object",
        "tape": "no differentiation rule for builtins.getattr",
        "forward": "no differentiation rule for builtins.getattr",
    },
)
def writes_through_flat_and_ravel(x):
    B = np.outer(x, x)
    B.flat[::5] = np.exp(x)
    flat = B.ravel()
    return flat @ np.linspace(0.1, 1.6, 16) + B[0, 1]


@program(
    np.array([0.4, 1.3, 0.9, 2.1, 0.2]),
    hessian=True,
    # the tape and forward mode run the body of statistics.fmean on their values; the API's forward mode
    # runs the program as the source engine's primal does, with the rules
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def statistics_module_on_a_list_of_floats(x):
    import statistics

    vals = [v * v for v in x]
    return statistics.fmean(vals) + statistics.pvariance(vals) + statistics.median(vals)


@program(np.array([0.4, 1.3, 0.9, 2.1, 0.2, 1.7]), refuses={"source": "no differentiation rule for heapq.nlargest"})
def heapq_nlargest_and_a_priority_queue(x):
    import heapq

    top = heapq.nlargest(3, x)
    heap = []
    for i, v in enumerate(x):
        heapq.heappush(heap, (v * v, i))
    smallest = [heapq.heappop(heap)[0] for _ in range(2)]
    return sum(top) ** 2 + sum(smallest)


@program(
    np.array([0.5, 1.4, 0.2, 0.9, 1.1, 0.7]),
    nested=True,
    refuses={"source": "no differentiation rule for itertools.groupby"},
)
def groupby_on_sorted_keys_and_unique_inverse(x):
    keys = np.array([2, 0, 1, 0, 2, 1])
    _, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=x**2)
    total = 0.0
    for k, grp in itertools.groupby(sorted(zip(keys, x), key=lambda kv: kv[0]), key=lambda kv: kv[0]):
        vals = [v for _, v in grp]
        total = total + (k + 1) * functools.reduce(operator.mul, vals)
    return total + sums @ np.array([1.0, 0.5, 2.0])


@program(np.array([0.3, -0.6, 0.9, 0.1]), hessian=True)
def piecewise_with_lambdas(x):
    y = np.piecewise(x, [x < 0.0, x >= 0.0], [lambda v: -(v**2), lambda v: np.sin(v) + v**3])
    return np.sum(y * np.array([1.0, 2.0, 3.0, 4.0]))


@program(np.array([0.5, 1.3, 0.2, 1.9, 0.8]))
def running_max_by_maximum_accumulate(x):
    peak = np.maximum.accumulate(x)
    drawdown = peak - x
    floor = np.minimum.reduce(x)
    return np.sum(drawdown**2) + floor * peak[-1]


@program(np.array([0.2, 1.0, 0.6, 0.4]))
def nan_aware_reductions(x):
    x = np.concatenate([x[:3], [np.nan], x[3:]])  # a missing observation
    filled = np.where(np.isnan(x), 0.0, x)
    return np.nansum(x) ** 2 + np.nanmean(x) * np.nanmax(x) + np.nanstd(x) + np.sum(filled**2)


@program(np.array([0.4, -0.3, 0.7]), 0.25, 0.9)
def clip_with_differentiated_bounds_and_roll(x, lo, hi):
    y = np.clip(x * 2.0, lo - 0.5, hi)
    z = np.roll(y, 1) + np.flip(y) + np.tile(y[:1], 3)
    return np.sum(z**2) + np.sum(np.repeat(x, 2) * np.pad(y, (1, 2)))


@program(np.array([1.3, 2.7, 0.6]), hessian=True)
def modulo_floor_divide_and_divmod_on_floats(x):
    total = 0.0
    for v in x:
        q, r = divmod(v * 3.0, 1.0)
        total = total + r**2 + q * v + (v % 0.5) * (v // 0.5)
    return total


@program(np.array([0.5, -0.2, 0.9]))
def boolean_arithmetic_and_python_builtins(x):
    positive = x * (x > 0)
    count = sum(v > 0 for v in x)
    bigger = max(x[0], x[2]) + min(x[1], 0.0) + abs(x[1])
    return np.sum(positive**2) * count + pow(bigger, 3) + round(float(count)) * x[0]


@dataclasses.dataclass
class Particle:
    pos: np.ndarray
    vel: np.ndarray

    def __lt__(self, other):
        return self.pos[0] < other.pos[0]

    def energy(self):
        return 0.5 * self.vel @ self.vel


@program(np.array([[0.5, 0.1], [-0.3, 0.4], [0.9, -0.2]]))
def sorted_dataclasses_with_dunder_lt(P):
    particles = [Particle(p, p[::-1] * (i + 1)) for i, p in enumerate(P)]
    ordered = sorted(particles)
    gaps = [b.pos - a.pos for a, b in zip(ordered, ordered[1:])]
    return sum(g @ g for g in gaps) + sum(q.energy() for q in ordered[:2])


def flatten(tree):
    if isinstance(tree, (list, tuple)):
        for sub in tree:
            yield from flatten(sub)
    else:
        yield tree


@program(np.array([0.4, 0.9, -0.5, 0.2]), refuses={"source": "generator"})
def yield_from_flattening_a_nested_list(x):
    tree = [x[0], [x[1] * x[2], (x[3], [x[0] ** 2])], np.sin(x[1])]
    leaves = list(flatten(tree))
    return sum(v * (i + 1) for i, v in enumerate(leaves))


class NotConverged(Exception):
    pass


@program(np.array([2.0, 3.0, 5.0]), hessian=True)
def custom_exception_for_a_failed_solver(a):
    def newton_sqrt(c, iters):
        z = c
        for _ in range(iters):
            z = 0.5 * (z + c / z)
        if abs(z * z - c) > 1e-10:
            raise NotConverged(f"sqrt({c:.2f}) not converged")
        return z

    total = 0.0
    for c in a:
        try:
            total = total + newton_sqrt(c, 3)
        except NotConverged:
            total = total + newton_sqrt(c, 30)
        else:
            total = total + 0.0
    return total


@program(np.array([0.2, 0.5, 0.9, 1.4]))
def lambdas_with_default_arguments_in_a_loop(x):
    powers = [lambda v, k=k: v**k / k for k in range(1, 4)]
    return sum(f(v) for f in powers for v in x)


@program(np.array([0.6, -0.3, 0.9, 0.2]), refuses={"source": "a class definition inside a differentiated function"})
def functools_cached_property_on_a_model(w):
    class Model:
        def __init__(self, w):
            self.w = w

        @functools.cached_property
        def norm(self):
            return np.sqrt(self.w @ self.w)

        def predict(self, x):
            return np.tanh(self.w @ x / self.norm)

    m = Model(w)
    xs = [np.array([1.0, 0.5, -0.2, 0.3]), np.array([0.2, -0.4, 0.6, 1.0])]
    return sum(m.predict(x) ** 2 for x in xs) + m.norm


@program(np.array([0.3, 0.7, -0.2, 0.5]), refuses={"source": "no differentiation rule for itertools.cycle"})
def itertools_islice_cycle_starmap_and_combinations(x):
    cyc = list(itertools.islice(itertools.cycle(x), 7))
    products = list(itertools.starmap(operator.mul, itertools.combinations(x, 2)))
    reps = list(itertools.combinations_with_replacement(x[:2], 2))
    return sum(cyc) ** 2 + sum(products) + sum(a * b for a, b in reps)


@program(np.array([0.4, 0.8, 0.1]), np.array([1.0, 2.0, 3.0]))
def operator_getters_and_a_dict_built_from_zip(x, w):
    names = ["a", "b", "c"]
    params = dict(zip(names, x))
    weights = dict(zip(names, w))
    get_ab = operator.itemgetter("a", "b")
    a, b = get_ab(params)
    ranked = sorted(params.items(), key=operator.itemgetter(1), reverse=True)
    return a * b + sum(weights[k] * v**2 for k, v in ranked) + ranked[0][1]


@program(np.array([0.5, 0.2, 0.8, 0.4, 0.6]), hessian=True)
def strided_and_negative_index_writes_into_zeros_like(x):
    out = np.zeros_like(x)
    out[::2] = x[::2] ** 2
    out[1::2] -= x[1::2] * 0.5
    out[-1] += out[0] * x[-1]
    out[-2:] *= 3.0
    return np.sum(out * x) + out[-1] ** 2


@program(
    np.array([[0.5, 0.1], [0.3, 0.9]], dtype=np.float32), rtol=2e-3, nested=True, refuses={"tape": ARRAY_OF_TRACKED}
)
def float32_buffers_filled_and_accumulated(W):
    out = np.zeros((3, 2), dtype=np.float32)
    x = np.array([1.0, -0.5], dtype=np.float32)
    for t in range(3):
        x = np.tanh(W @ x)
        out[t] = x
        out[t] += np.float32(0.1) * t
    acc = np.zeros_like(x)
    for row in out:
        acc += row * row
    return np.sum(acc) + out[-1, 0]


# ----- found while reducing: buffers rescaled row by row, scans, conversions in loops -------------


@program(np.array([0.5, -0.3, 0.8]), nested=True, refuses={"tape": ARRAY_OF_TRACKED})
def feature_rows_rescaled_in_a_zeros_buffer(x):
    F = np.zeros((3, 3))
    F[0] = x**2
    F[1] = np.exp(x)
    F[2] = np.cos(x)
    for i in range(1, 3):
        F[i] = F[i] * F[0]
    return np.sum(F**2) + F[1] @ F[2]


@program(np.array([0.2, -0.1, 0.4, 0.3, -0.2, 0.1]), hessian=True, nested=True)
def prefix_products_by_a_hillis_steele_scan(x):
    out = np.zeros_like(x)
    out[:] = 1.0 + 0.5 * x
    k = 1
    while k < len(x):
        out[k:] = out[k:] * out[:-k]
        k *= 2
    return np.sum(np.log(out)) + out[-1]


@program(2.0, 0.5, hessian=True, refuses={"tape": MATH_ON_TAPE})
def fixed_point_until_math_isclose(c, damping):
    z, z_old = c, 0.0
    while not math.isclose(z, z_old, rel_tol=1e-14):
        z_old = z
        z = (1 - damping) * z + damping * 0.5 * (z + c / z)
    return z * c


LOOKUP = np.array([0.0, 0.8, 1.5, 2.9, 3.3, 4.1])


@program(np.array([0.4, 2.3, 3.7]), hessian=True)
def lookup_table_with_an_int_index(t):
    total = 0.0
    for v in t:
        i = int(v)
        frac = v - i
        total = total + (LOOKUP[i] * (1 - frac) + LOOKUP[i + 1] * frac) ** 2
    return total


# ----- aliasing that Python programmers rely on (or trip over) ----------------------------------


@program(np.array([0.5, -1.0, 0.8, 0.3]), nested=True, refuses={"source": "into a part of it that a read viewed"})
def view_taken_before_writes_sees_them(x):
    out = np.zeros_like(x)
    tail = out[1:]
    out[2] = x[0] ** 2
    tail += x[1:] * 0.5
    out[0] = tail.sum()
    return np.sum(out**2) + tail[0] * x[3]


@program(np.array([0.4, -0.2, 0.7]), hessian=True, refuses={"source": AUGMENTED_ON_SOURCE})
def trajectory_list_aliasing_one_state_updated_in_place(v0):
    state = v0 * 1.0
    trajectory = []
    for _ in range(3):
        trajectory.append(state)  # every entry is the same array
        state += 0.1 * np.sin(state)
    return sum(np.sum(s**2) * (i + 1) for i, s in enumerate(trajectory))


@program(np.array([0.6, -0.3, 0.9, 0.2]), refuses={"source": AUGMENTED_ON_SOURCE})
def snapshots_by_copy_while_accumulating(x):
    acc = np.zeros_like(x)
    snapshots = []
    for k in range(len(x)):
        acc[k] += x[k] * (k + 1)
        acc *= 0.9
        snapshots.append(acc.copy())
    return sum(np.sum(s**2) * (i + 1) for i, s in enumerate(snapshots))


def collect_leaves(tree, out):
    if isinstance(tree, tuple):
        for sub in tree:
            collect_leaves(sub, out)
    else:
        out.append(tree)


def record(stats, v):
    stats["n"] += 1
    stats["sum"] += v
    stats["sumsq"] += v * v


@program(np.array([0.3, 0.8, -0.5, 1.1]), hessian=True, refuses={"source": "writing into the argument"})
def helpers_that_fill_a_list_and_a_dict_passed_in(x):
    leaves = []
    collect_leaves((x[0], (x[1] * x[2], (x[3],)), np.exp(x[0])), leaves)
    stats = {"n": 0, "sum": 0.0, "sumsq": 0.0}
    for v in leaves:
        record(stats, v)
    mean = stats["sum"] / stats["n"]
    return stats["sumsq"] / stats["n"] - mean**2


@program(
    np.array([0.8, 1.3, 0.5, 2.0]),
    np.array([1.0, 0.0, 3.0, 2.0]),
    np.array([True, False, True, True]),
    hessian=True,
)
def poisson_loss_with_counts_and_a_boolean_mask(rate, counts, observed):
    log_rate = np.log(rate)
    nll = rate - counts * log_rate
    nll = np.where(observed, nll, 0.0)
    n_obs = observed.sum()
    return nll.sum() / n_obs + 0.1 * np.sum(log_rate[observed] ** 2)


@program(np.array([0.5, -1.0, 0.8, 1.2]), nested=True)
def missing_readings_skipped_by_catching_type_error(x):
    readings = [np.log(v) if v > 0 else None for v in x]
    total = 0.0
    for r, v in zip(readings, x):
        try:
            total = total + r * v
        except TypeError:  # a missing reading
            total = total - 0.1 * v**2
    return total


@dataclasses.dataclass
class RunningSum:
    total: np.ndarray
    count: int = 1

    def __add__(self, v):
        return RunningSum(self.total + v, self.count + 1)

    def __iadd__(self, v):
        self.total = self.total + v
        self.count += 1
        return self

    @property
    def mean(self):
        return self.total / self.count


@program(np.array([0.5, -1.0, 0.8]), nested=True)
def accumulators_in_a_dict_updated_with_iadd(x):
    sums = {"even": RunningSum(np.full(3, 0.1)), "odd": RunningSum(np.full(3, 0.2))}
    for k in range(4):
        s = sums["even" if k % 2 == 0 else "odd"]
        s += x * (k + 1) + 0.1 * x**2
    return np.sum(sums["even"].mean * sums["odd"].mean)


@dataclasses.dataclass
class Momentum:
    velocity: np.ndarray
    beta: float = 0.9

    def __iadd__(self, grad):
        self.velocity = self.beta * self.velocity + grad
        return self


@program(np.array([1.0, -0.5]), hessian=True)
def heavy_ball_with_an_iadd_momentum_buffer(w):
    m = Momentum(np.zeros(2))
    for _ in range(4):
        grad = 2.0 * (w - np.array([0.3, 0.2])) + 0.1 * w**3
        m += grad
        w = w - 0.1 * m.velocity
    return np.sum(w**2)
