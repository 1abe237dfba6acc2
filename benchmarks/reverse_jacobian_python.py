"""Reverse-mode Jacobians of Python-level code: loops, indexing, buffers, scalar math, dataclasses.

``cr.jacobian(f, x, mode="reverse")`` pulls a whole block of unit cotangents back at once when
everything on the way takes a batch (a leading batch axis). In the source engine that covers the
language, not only the rules: ``x[i]`` reads, loops over ranges and rows, writes into a buffer the
function made, the ``math`` module on numbers, tuples, lists and dataclasses, methods. In one run,
as multiples of ours (the default source engine): the same pullback called once per output (what
these functions cost when any of that declined a batch) and forward mode. JAX is left out: its
arrays take no in-place writes and its loops need ``lax`` constructs, so the code would not be
the same. Every Jacobian is checked against ours first. Float64, n = 50 inputs and outputs; BLAS
pools of NumPy and SciPy pinned to 1 thread (threadpoolctl).

Run: ``python benchmarks/reverse_jacobian_python.py`` (writes benchmarks/results/reverse_jacobian_python.md).
"""

from __future__ import annotations

import dataclasses
import math

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules import api  # noqa: E402
from chainrules.reverse import source  # noqa: E402

N = 50
REPEATS, BUDGET = 9, 0.05
OURS = "chainrules reverse (source)"
OTHERS = ["source, one pullback per output", "chainrules forward"]


def integrate(x):
    """Explicit Euler steps of y' = sin(y) x_i, each state written into a buffer."""
    out = np.zeros_like(x)
    y = x[0]
    for i in range(x.shape[0]):
        y = y + 0.1 * np.sin(y) * x[i]
        out[i] = y
    return out


def scalar_code(x):
    """The math module on the entries, collected in a list."""
    values = []
    for v in x:
        values.append(math.sin(v) * math.log(1.0 + v * v) + max(v, 0.0))
    return np.array(values) * x


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return np.tanh(self.w @ x + self.b)


LAYERS = [Layer(np.random.default_rng(k).standard_normal((N, N)) / np.sqrt(N), np.full(N, 0.1 * k)) for k in range(3)]


def model(x):
    """Dataclass layers called in a loop over a list, with a residual connection."""
    h = x
    for layer in LAYERS:
        h = h + layer(h)
    return h


PROBLEMS = {
    "Euler steps into a buffer (x[i], out[i] = y)": integrate,
    "math.sin/log/max on entries, list → np.array": scalar_code,
    "dataclass layers in a loop": model,
}


def contenders(f, x):
    def one_pullback_per_output():
        y, back = source.pullback_full(f, x)
        return api._reverse_jacobian(x, y, lambda dy: back(dy))  # (a plain function: no batched flag)

    return {
        "f(x)": lambda: f(x),
        OURS: lambda: cr.jacobian(f, x, mode="reverse"),
        "source, one pullback per output": one_pullback_per_output,
        "chainrules forward": lambda: cr.jacobian(f, x, mode="forward"),
    }


NOTES = [
    "- 'one pullback per output' is the same generated pullback called once per output row: what these "
    "functions cost when a construct on the way declined a batch, as loops, indexing, writes, the math "
    "module and dataclass fields did before they took one.",
    "- Forward mode runs the Python code once per chunk of tangents too (one chunk here), so it is the "
    'other single-pass contender; `mode="auto"` picks reverse mode for a square Jacobian.',
]


def main() -> str:
    x = np.random.default_rng(3).uniform(0.2, 0.9, N)
    rows, batched = [], []
    for name, f in PROBLEMS.items():
        fns = contenders(f, x)
        _, back = source.pullback_full(f, x)
        batched.append(f"- {name}: the source engine's pullback is batched: **{getattr(back, 'batched', False)}**")
        expected = fns[OURS]()
        refused = {}
        for label, fn in list(fns.items()):
            if label == "f(x)":
                continue
            try:
                got = fn()
            except TypeError:  # forward mode refuses math.sin(dual): it cannot see the math module's rules
                refused[label] = "refused (`math` on dual numbers)"
                del fns[label]
                continue
            np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-12, err_msg=label)
        t = common.compare(fns, OURS, repeats=REPEATS, warmup=0, budget=BUDGET)
        cells = [name, f"{common.ms(t['f(x)'].seconds)} ms", f"{common.ms(t[OURS].seconds)} ms"]
        cells += [refused[o] if o in refused else f"{t[o].ratio:.2f}×" for o in OTHERS]
        rows.append(cells)
        print(cells, flush=True)
    header = [f"f (n = {N} → {N})", "plain f(x)", OURS, *(f"{o} ÷ ours" for o in OTHERS)]
    method = (
        "Time of one plain evaluation of f and of our reverse-mode Jacobian (default engine), and every other "
        "contender as a multiple of ours (higher: ours is faster), measured side by side in one run: process "
        f"CPU time, medians of {REPEATS} interleaved repeats of samples of about {BUDGET * 1e3:g} ms, ratios the "
        "medians of the per-repeat ratios. float64. Every contender's Jacobian was checked against ours."
    )
    provenance = f"{THREADS_NOTE}.\n`python benchmarks/reverse_jacobian_python.py`."
    title = "Reverse-mode Jacobians of Python-level code"
    return common.results_page(title, method, provenance, header, rows, batched, ["## Notes", "", *NOTES])


if __name__ == "__main__":
    common.report("reverse_jacobian_python", main())
