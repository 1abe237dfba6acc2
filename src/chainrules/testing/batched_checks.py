"""The batched-rule checks of ``test_rrule`` and ``test_frule``: a rule registered ``batched=True``
given a batch at once must give, row by row, what it gives each row alone.

A rule registered ``batched=True`` promises that its pullback takes a *batch* of cotangents (its
pushforward a batch of tangents): the usual value with one more, leading, axis, row ``k`` being
the ``k``-th cotangent (tangent). The engines rely on it for Jacobians (reverse mode pulls back
blocks of unit cotangents, forward mode pushes chunks of unit tangents), so a rule that is right
for one cotangent but wrong for a batch passes every unbatched check and gives wrong Jacobians.

What a batch looks like, as the engines make it (``reverse/trace``, ``reverse/source``,
``api._reverse_jacobian``, ``forward/engine`` and ``forward/dual``):

- of a number (a Python or NumPy scalar): an array of shape ``(B,)`` of its tangent dtype;
- of an array of shape ``s``: an array of shape ``(B, *s)``, or a ``BasisSeed`` block of unit
  rows (``basis_seed(B, s, first, dtype)``: row ``k`` is ``e[first + k]``, a zero row where that
  falls outside the value), or a *scaled* block (row ``k`` is ``scale[k] * e[first + k]``), which
  the elementwise steps make of a block on its way through a function;
- of a tuple, list, dict or namedtuple: a ``Tangent`` of its type whose fields are batches (or
  zeros: a constant input, an output no cotangent reached);
- of an input a pass does not differentiate: ``ZeroTangent()`` (``NoTangent()`` for the tangent
  of the callable itself and for what cannot be perturbed), the same for every row.

A pullback's cotangents (a pushforward's output tangent) for a batch come back in the same form.

The rule is given, each in one call (three batched calls in all, and two single ones):

1. a plain batch: ``BATCH`` random cotangents (tangents) stacked on a new leading axis (the first
   is the tester's own random seed, whose result it has), then, for a number or array output
   (reverse) or number and array inputs (forward), the ``min(BLOCK_ROWS, size)`` unit rows of a
   ``BasisSeed`` block as plain arrays. Its random rows must equal the rule given each alone.
2. that ``BasisSeed`` block itself (the last rows of a Jacobian's output for a pullback; for a
   pushforward the engine's seeding of several inputs, offset so that it straddles two of them
   where there are two), and the block scaled by random numbers per row: each must give what the
   plain batch gave its unit rows (times the scales).

Inputs and outputs that are neither numbers, arrays nor tuples, lists, dicts or namedtuples of
them (dataclasses, other objects) are not batched: a pullback's batch check is skipped for such an
output, and such an input gets a zero tangent in the pushforward's batched calls; an input of a
structured kind gets no block rows.

What the engines do, the checks do:

- a rule that calls ``decline_batch()`` for the arguments at hand gets one cotangent at a time
  from the reverse engines, so its pullback is not given a batch (``test_rrule`` reads the count);
- the forward engine broadcasts a batched output tangent that a rule left broadcastable (the batch
  axis in front), and runs a batched rule whose output tangent lost the batch axis once per row
  (``forward.dual._fit``, ``_loop``): such an output is broadcast, or not compared;
- the forward engine runs an operator's rule (``operator.mul``, ``pow``, ...) only for Python
  numbers, a NumPy operand taking the ufunc's rule: those rules are given batches at numbers only.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable

import numpy as np

from ..core import AbstractZero, NoTangent, Tangent, ZeroTangent, basis_seed, callable_name, unthunk
from ..core.sparse import is_sparse
from ..forward.dual import _fit as engine_fit  # (the check takes tangents as the engine takes them)
from .checks import approx_problems, deep_unthunk, must_be_no_tangent
from .random_tangents import rand_tangent
from .to_vec import describe, layout

#: random cotangents (tangents) in the batch given to a batched rule at once
BATCH = 3
#: rows of the ``BasisSeed`` block given to a batched rule (fewer for a smaller value)
BLOCK_ROWS = 3

_NO = NoTangent()
_ZERO = ZeroTangent()
_NOTHING = object()  # (no value)


#: Callables whose frule the forward engine runs only for Python numbers: on a NumPy value (or a
#: sequence NumPy broadcasts) a dual's operator runs the ufunc's rule instead (``forward.dual._binary``,
#: ``Dual.__neg__``, ...), and ``operator.mul(x, y)``, ``pow(x, y)``, ``x += y`` all reach the
#: dual's operator methods. Their batched pushforward is checked at Python numbers only.
_NUMBER_ONLY_IN_FORWARD = frozenset(
    [
        *(getattr(operator, name) for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul")),
        *(getattr(operator, f"i{name}") for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")),
        operator.imatmul,
        operator.concat,
        operator.iconcat,
        operator.neg,
        operator.pos,
        operator.abs,
        builtins.abs,
        builtins.pow,
    ]
)
_PYTHON_NUMBERS = (float, int, complex, bool)


class _NotABatch(ValueError):
    """A batched result without the batch axis (or of the wrong structure) where a batch was due."""


# ----- which values batch ----------------------------------------------------------------------


def _is_number_leaf(x) -> bool:
    """A number or a numeric array: its batch is one array with a leading axis."""
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "iufc"
    return isinstance(x, (int, float, complex, np.number))


def _is_inexact_leaf(x) -> bool:
    return _is_number_leaf(x) and np.result_type(x).kind in "fc"


def _can_batch(x) -> bool:
    """Whether ``x``'s tangents can be stacked into a batch here: numbers, arrays, values that get
    ``NoTangent`` (bools, strings, ``None``, functions), and tuples, lists, dicts and namedtuples of them."""
    if _is_number_leaf(x) or isinstance(x, (bool, np.bool_, str, bytes, type(None))):
        return True
    if isinstance(x, np.ndarray):  # bools, strings: no tangent (objects: unknown)
        return x.dtype.kind != "O"
    if is_sparse(x):  # (a batch of its tangents is a list: see core.sparse; checked by its rules' own tests)
        return False
    if isinstance(x, (tuple, list)):
        return all(_can_batch(v) for v in x)
    if type(x) is dict:
        return all(_can_batch(v) for v in x.values())
    return must_be_no_tangent(x)


def _primal_field(x, key, positional: bool):
    if positional or isinstance(x, dict):
        return x[key]
    return getattr(x, key)


def _rebuild(T: type, backing):
    if isinstance(backing, tuple):
        return T(*backing)
    return T(backing) if T.primal_type is dict else T(**backing)


def _tangent_dtype(x) -> np.dtype:
    dtype = np.result_type(x)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


# ----- batches and their rows ------------------------------------------------------------------


def _stack(x, rows: list):
    """One batch of the tangents ``rows`` of ``x``, as the engines lay one out (see the module docstring)."""
    rows = [deep_unthunk(r) for r in rows]
    if all(isinstance(r, AbstractZero) for r in rows):
        return rows[0]
    first = next(r for r in rows if not isinstance(r, AbstractZero))
    if isinstance(first, Tangent):
        T, backing = type(first), first.backing
        positional = isinstance(backing, tuple)
        keys = range(len(backing)) if positional else list(backing)
        fields = {
            key: _stack(
                _primal_field(x, key, positional), [_ZERO if isinstance(r, AbstractZero) else r[key] for r in rows]
            )
            for key in keys
        }
        return _rebuild(T, tuple(fields.values()) if positional else fields)
    dtype = np.result_type(first)
    return np.stack([np.zeros(np.shape(x), dtype) if isinstance(r, AbstractZero) else np.asarray(r) for r in rows])


def _row(t, k: int, batch: int):
    """Row ``k`` of the batch ``t`` of tangents (a zero stays a zero, a ``Tangent`` is taken field by
    field); ``_NotABatch`` when ``t`` has no leading batch axis of length ``batch`` where it should."""
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return t
    if isinstance(t, Tangent):
        items = {key: _row(v, k, batch) for key, v in t.items()}
        return _rebuild(type(t), tuple(items.values()) if isinstance(t.backing, tuple) else items)
    if isinstance(t, list) and len(t) == batch and all(is_sparse(v) or isinstance(v, AbstractZero) for v in t):
        return t[k]  # a batch of a sparse matrix's tangents (core.sparse)
    shape = getattr(t, "shape", None)
    if not isinstance(t, (np.ndarray, np.generic)) or not shape or shape[0] != batch:
        raise _NotABatch(f"{describe(t)} where a batch with a leading axis of length {batch} was due")
    return np.array(np.asarray(t)[k])  # a plain copy (a block's rows are read-only views)


def _single(x, value):
    """One row of a seed as a single tangent of ``x`` comes: a number for a number, a plain array for an array."""
    if isinstance(value, (AbstractZero, Tangent)):
        return value
    value = np.asarray(value)
    if isinstance(x, np.ndarray):
        return np.array(value.view(np.ndarray))
    if isinstance(x, np.generic):
        return _tangent_dtype(x).type(value[()])
    if isinstance(x, complex) or value.dtype.kind == "c":
        return complex(value[()])
    return float(value[()])


def _rows_of(x, batch, n: int) -> list:
    """The ``n`` rows of a seed batch of ``x``, each as a single tangent comes."""
    return [_single_deep(x, _row(batch, k, n)) for k in range(n)]


def _single_deep(x, t):
    if isinstance(t, Tangent):
        positional = isinstance(t.backing, tuple)
        items = {key: _single_deep(_primal_field(x, key, positional), v) for key, v in t.items()}
        return _rebuild(type(t), tuple(items.values()) if positional else items)
    return _single(x, t)


def _scaled(t, c: float):
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return t
    if isinstance(t, Tangent):
        positional = isinstance(t.backing, tuple)
        items = {key: _scaled(v, c) for key, v in t.items()}
        return _rebuild(type(t), tuple(items.values()) if positional else items)
    return t * c


def _block(x, rows: int, first: int):
    """The engines' ``BasisSeed`` block of ``rows`` unit tangents of a number or array ``x`` from flat
    index ``first``, or ``ZeroTangent()`` where none of its rows falls inside ``x``."""
    size = int(np.size(x))
    if first >= size or first + rows <= 0:
        return _ZERO
    return basis_seed(rows, tuple(np.shape(x)), first, _tangent_dtype(x))


def _scale_block(seed, scales: np.ndarray):
    """A scaled block: row ``k`` of ``seed`` times ``scales[k]`` (still a ``BasisSeed``)."""
    if isinstance(seed, AbstractZero):
        return seed
    return seed * scales.reshape((scales.size,) + (1,) * (seed.ndim - 1))


def _units(n: int) -> str:
    return "1 unit one" if n == 1 else f"{n} unit ones"


def _scaled_what(block_what: str, scales: np.ndarray) -> str:
    factors = ", ".join(f"{c:.3g}" for c in scales.tolist())
    return f"{block_what}, scaled by [{factors}] per row (as elementwise steps scale it)"


def _random_scales(rng: np.random.Generator, n: int) -> np.ndarray:
    """Real scales away from zero (the pullback is linear over the reals, not always over the complex numbers)."""
    u = rng.uniform(-1.5, 1.5, n)
    return u + np.copysign(0.5, u)


# ----- comparing a batched result with its rows ------------------------------------------------


def _mismatch(label: str, name: str, pushed: str, what: str, reference: str) -> str:
    return (
        f"{label}: batched {pushed} mismatch: the rule {name} is registered batched=True, but its {pushed} given "
        f"{what} at once (a leading batch axis) does not give, row by row, {reference}"
    )


_ALONE = "what it gives each row alone"
_AS_ARRAY = "what it gives the same rows as a plain array (a batch whose rows match each row alone)"


def _rows_close(got, expected_rows: list, rtol: float, atol: float) -> bool:
    """The common cases at once: an array batch whose first rows are all close to arrays of their
    shape (each by ``assert_approx``'s norm test), zeros where zeros are expected, and structures
    of those. False sends the rows to the detailed comparison (which decides)."""
    if isinstance(got, AbstractZero):
        return all(isinstance(e, AbstractZero) for e in expected_rows)
    if isinstance(got, Tangent):
        T, keys = type(got), [key for key, _ in got.items()]
        for e in expected_rows:
            if type(e) is not T or [key for key, _ in e.items()] != keys:
                return False
        return all(
            _rows_close(unthunk(v), [unthunk(e[key]) for e in expected_rows], rtol, atol) for key, v in got.items()
        )
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "fc" or got.ndim == 0:
        return False
    for e in expected_rows:
        if not (type(e) is np.ndarray or type(e) is float or type(e) is complex or isinstance(e, np.number)):
            return False
    try:
        e = np.array(expected_rows)
    except (ValueError, TypeError):
        return False
    a = got.view(np.ndarray)[: len(expected_rows)]  # (a BasisSeed a rule passed on: its plain values)
    if a.shape != e.shape or e.dtype.kind not in "fc":
        return False
    if np.array_equal(a, e):  # exactly the same numbers (NaN aside): the common case
        return True
    with np.errstate(invalid="ignore", over="ignore"):
        axes = tuple(range(1, a.ndim))
        diff = np.sqrt(np.sum(np.abs(a - e) ** 2, axis=axes))
        scale = np.maximum(np.sqrt(np.sum(np.abs(a) ** 2, axis=axes)), np.sqrt(np.sum(np.abs(e) ** 2, axis=axes)))
        return bool(np.all(diff <= np.maximum(atol, rtol * scale)) and np.isfinite(a).all() and np.isfinite(e).all())


def _batch_sizes(t) -> set:
    """The lengths of the leading axes of a batch's arrays (none for a zero)."""
    t = unthunk(t)
    if isinstance(t, Tangent):
        return set().union(*(_batch_sizes(v) for _, v in t.items()))
    return set() if isinstance(t, AbstractZero) else {np.shape(t)[0] if np.ndim(t) else None}


def _row_problems(got, expected_rows: list, batch: int, rtol: float, atol: float, mismatch: str) -> list[str]:
    """The first rows of the batched result ``got`` (``batch`` rows in all) against ``expected_rows``:
    one problem naming the rows that differ, with the first one's values."""
    try:
        if _rows_close(got, expected_rows, rtol, atol) and _batch_sizes(got) <= {batch}:
            return []
        rows = [_row(got, k, batch) for k in range(len(expected_rows))]
    except _NotABatch as error:
        return [f"{mismatch}: it returned {error}"]
    found = []
    for k, (row, expected) in enumerate(zip(rows, expected_rows)):
        problems = approx_problems(row, expected, rtol, atol, f"row {k}")
        if problems:
            found.append((k, problems))
    if not found:
        return []
    differ = ", ".join(str(k) for k, _ in found)
    first = "\n".join(found[0][1])
    return [f"{mismatch}; rows {differ} (of {len(expected_rows)}) differ:\n{first}"]


def _fit_batch(y, dy, batch: int):
    """A batched output tangent as the forward engine takes it: ``(batch, *y.shape)``, or broadcast
    to it when the rule left it broadcastable with the batch axis in front; ``None`` when the batch
    axis got lost (the engine then runs the rule row by row)."""
    return engine_fit(None, y, unthunk(dy), batch)


def _fit_single(y, dy):
    """A single output tangent as the forward engine takes it: broadcast to ``y``'s shape where it
    can be, else as it is (the comparison then reports it)."""
    try:
        return engine_fit(None, y, dy, None)
    except ValueError:
        return dy


def _rule_name(rule) -> str:
    return callable_name(getattr(rule, "func", rule))  # a bound instance rule is a partial


# ----- the pullback ----------------------------------------------------------------------------


def _is_result(out, n: int) -> bool:
    return isinstance(out, tuple) and len(out) == n


def batched_pullback_problems(
    run: Callable,
    pullback: Callable,
    rule,
    y,
    inputs: list,
    labels: list[str],
    rtol: float,
    atol: float,
    rng: np.random.Generator,
    known: tuple | None = None,
) -> list[str]:
    """The rows where ``pullback`` given a batch of cotangents of ``y`` at once differs from it given
    each row alone (``rule`` is the rule registered ``batched=True`` it came from, for the message).

    ``run(what, fn, *args)`` is the tester's ``(ok, result)`` runner, which records exceptions;
    ``known`` is ``(seed, cotangents)`` from the tester's own call, taken as the batch's first row.
    Empty when ``y`` has no cotangent or is of a kind that is not batched (see the module docstring).
    """
    if not _can_batch(y) or not layout(y).size:
        return []
    name, n = _rule_name(rule), len(inputs)
    rows, singles = ([known[0]], [list(known[1])]) if known is not None else ([], [])
    while len(rows) < BATCH:
        row = rand_tangent(y, rng)
        ok, out = run(f"the pullback on row {len(rows)} of a batch of random cotangents alone", pullback, row)
        if not ok or not _is_result(out, n):
            return []
        rows.append(row)
        singles.append([deep_unthunk(t) for t in out])
    # the unit cotangents of the block, as plain arrays, follow the random ones in the batch
    units = []
    if _is_inexact_leaf(y):
        size = int(np.size(y))
        n_units = min(BLOCK_ROWS, size)
        first = size - n_units  # the last rows of a Jacobian: the whole identity for a small output
        block = _block(y, n_units, first)
        units = _rows_of(y, block, n_units)
    batch = len(rows) + len(units)
    what = f"a batch of {batch} cotangents ({BATCH} random" + (f", then {_units(len(units))})" if units else ")")
    ok, got = run(
        f"the batched pullback on {what} (the rule {name} is registered batched=True)",
        pullback,
        _stack(y, rows + units),
    )
    if not ok:
        return []
    if not _is_result(got, n):
        mismatch = _mismatch("the pullback", name, "pullback", what, _ALONE)
        return [f"{mismatch}: it returned {describe(got)}, not a tuple of {n} cotangents"]
    got = [deep_unthunk(t) for t in got]
    problems: list[str] = []
    for i in range(n):
        expected = [single[i] for single in singles]
        problems += _row_problems(
            got[i], expected, batch, rtol, atol, _mismatch(labels[i], name, "pullback", what, _ALONE)
        )
    if problems or not units:
        return problems

    # the block must act as its plain rows do (which the batch above has just checked)
    reference = [[_row(got[i], len(rows) + k, batch) for k in range(len(units))] for i in range(n)]
    scales = _random_scales(rng, len(units))
    block_what = f"the BasisSeed block of {len(units)} unit cotangents from flat index {first} (as jacobian seeds)"
    for what, seed, factors in (
        (block_what, block, None),
        (_scaled_what(block_what, scales), _scale_block(block, scales), scales),
    ):
        ok, out = run(f"the batched pullback on {what} (the rule {name} is registered batched=True)", pullback, seed)
        if not ok:
            continue
        if not _is_result(out, n):
            mismatch = _mismatch("the pullback", name, "pullback", what, _AS_ARRAY)
            problems.append(f"{mismatch}: it returned {describe(out)}, not a tuple of {n} cotangents")
            continue
        for i in range(n):
            expected = reference[i] if factors is None else [_scaled(r, c) for r, c in zip(reference[i], factors)]
            mismatch = _mismatch(labels[i], name, "pullback", what, _AS_ARRAY)
            problems += _row_problems(deep_unthunk(out[i]), expected, len(units), rtol, atol, mismatch)
    return problems


# ----- the pushforward -------------------------------------------------------------------------


def batched_pushforward_problems(
    run: Callable,
    rule_call: Callable,
    rule,
    f: Callable,
    primals: list,
    fkwargs: dict,
    tangents: list,
    marked: list[bool],
    y,
    rtol: float,
    atol: float,
    rng: np.random.Generator,
    known=_NOTHING,
) -> list[str]:
    """The rows where the pushforward of ``f`` given a batch of tangents at once differs from it given
    each row alone. ``rule_call(tangents, f, *primals, **fkwargs)`` runs the rule (``rule`` is the
    rule registered ``batched=True``, for the message); ``tangents`` are the tester's
    ``(df, dx1, ...)``, and ``known`` the output tangent it got for them: the batch's first row
    where they are one (the tangent of ``f`` a zero, as the engines give it). An argument whose
    tangent there is a zero stays unperturbed; ``marked`` flags the arguments wrapped in
    ``nondiff`` (with ``f`` first). Empty when no argument can be batched.
    """
    try:
        number_only = f in _NUMBER_ONLY_IN_FORWARD
    except TypeError:  # an unhashable callable
        number_only = False
    if number_only and not all(type(x) in _PYTHON_NUMBERS for x in primals):
        return []
    name = _rule_name(rule)
    zero_f = isinstance(unthunk(tangents[0]), AbstractZero)
    fixed: dict[int, object] = {0: tangents[0] if zero_f else _NO}  # position -> its tangent in every call
    batchable: list[int] = []
    for i, x in enumerate(primals, start=1):
        t = unthunk(tangents[i])
        if isinstance(t, AbstractZero):
            fixed[i] = tangents[i]
        elif marked[i] or must_be_no_tangent(x):
            fixed[i] = _NO
        elif not _can_batch(x) or not layout(x).size:
            fixed[i] = _ZERO
        else:
            batchable.append(i)
    if not batchable:
        return []
    reuse = known is not _NOTHING and zero_f and all(isinstance(unthunk(tangents[i]), AbstractZero) for i in fixed)

    def seeds(per_argument: dict) -> tuple:
        """``(df, dx1, ...)``: the batches (or rows) given, the fixed tangents, zeros for the other arguments."""
        return tuple(per_argument.get(i, fixed.get(i, _ZERO)) for i in range(len(primals) + 1))

    def call(what: str, ts: tuple):
        ok, out = run(what, rule_call, ts, f, *primals, **fkwargs)
        return (out[1] if isinstance(out, tuple) and len(out) == 2 else _NOTHING) if ok else None

    random_rows = {i: [tangents[i]] if reuse else [] for i in batchable}
    singles = [_fit_single(y, deep_unthunk(known))] if reuse else []
    while len(singles) < BATCH:
        for i in batchable:
            random_rows[i].append(rand_tangent(primals[i - 1], rng))
        k = len(singles)
        out = call(
            f"the rule on row {k} of a batch of random tangents alone", seeds({i: random_rows[i][k] for i in batchable})
        )
        if out is None or out is _NOTHING:
            return []
        singles.append(_fit_single(y, deep_unthunk(out)))

    # the forward engine's seeding of several inputs: one run of flat indices over all of them,
    # each input's block offset by the sizes of those before it (rows outside it are zero rows);
    # their unit tangents, as plain values, follow the random ones in the batch
    leaves = [i for i in batchable if _is_inexact_leaf(primals[i - 1])]
    blocks, units, n_units = {}, {}, 0
    if leaves:
        sizes = [int(np.size(primals[i - 1])) for i in leaves]
        n_units = min(BLOCK_ROWS, sum(sizes))
        start = (sum(sizes) - n_units) // 2  # across the boundary between two inputs where there is one
        offset = 0
        for i, size in zip(leaves, sizes):
            blocks[i] = _block(primals[i - 1], n_units, start - offset)
            units[i] = _rows_of(primals[i - 1], blocks[i], n_units)
            offset += size
    batch = BATCH + n_units
    what = f"a batch of {batch} tangents ({BATCH} random" + (f", then {_units(n_units)})" if n_units else ")")
    stacked = {i: _stack(primals[i - 1], random_rows[i] + units.get(i, [_ZERO] * n_units)) for i in batchable}
    out = call(f"the batched pushforward on {what} (the rule {name} is registered batched=True)", seeds(stacked))
    if out is None:
        return []
    mismatch = _mismatch("the output tangent dy", name, "pushforward", what, _ALONE)
    if out is _NOTHING:
        return [f"{mismatch}: it did not return a pair (y, dy)"]
    got = _fit_batch(y, deep_unthunk(out), batch)
    if got is None:  # the batch axis got lost: the engine pushes the rows one at a time instead
        return []
    problems = _row_problems(got, singles, batch, rtol, atol, mismatch)
    if problems or not leaves:
        return problems

    # the blocks must act as their plain rows do (which the batch above has just checked)
    reference = [_row(got, BATCH + k, batch) for k in range(n_units)]
    scales = _random_scales(rng, n_units)
    block_what = (
        f"the BasisSeed blocks of {n_units} unit tangents from flat index {start} of the inputs (jacobian seeds)"
    )
    scaled = {i: _scale_block(b, scales) for i, b in blocks.items()}
    for what, block, factors in ((block_what, blocks, None), (_scaled_what(block_what, scales), scaled, scales)):
        out = call(f"the batched pushforward on {what} (the rule {name} is registered batched=True)", seeds(block))
        if out is None:
            continue
        mismatch = _mismatch("the output tangent dy", name, "pushforward", what, _AS_ARRAY)
        if out is _NOTHING:
            problems.append(f"{mismatch}: it did not return a pair (y, dy)")
            continue
        fitted = _fit_batch(y, deep_unthunk(out), n_units)
        if fitted is None:
            continue
        expected = reference if factors is None else [_scaled(r, c) for r, c in zip(reference, factors)]
        problems += _row_problems(fitted, expected, n_units, rtol, atol, mismatch)
    return problems


__all__ = ["BATCH", "BLOCK_ROWS", "batched_pullback_problems", "batched_pushforward_problems"]
