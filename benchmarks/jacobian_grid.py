"""Seed 003's Jacobian grid: J of f(x) = (W x + b)**2 for N inputs and M outputs, (N, M) in {10, 100, 1000}².

Every method computes the M×N Jacobian at the same point and is checked against the NumPy analytic
Jacobian ``2 (W x + b)[:, None] * W`` (the baseline, 1.0) before it is timed:

- ours: ``cr.jacobian(f, x)`` with ``mode="auto"`` (forward when N ≤ M, reverse otherwise, the
  default engine), ``mode="forward"``, and ``mode="reverse"`` with each reverse engine; ``f`` is a
  closure over W and b, as a user writes it;
- the same rules chained by hand: ``W @ x``, ``+ b`` and ``** 2``'s rrules and their pullbacks called
  directly with the block of unit cotangents reverse mode uses, no engine or API around them (the
  least any reverse engine built on these rules spends);
- JAX ``jax.jacfwd``/``jax.jacrev``, jit-compiled and eager, PyTorch ``torch.func.jacfwd``/
  ``torch.func.jacrev`` and HIPS autograd's ``jacobian`` where installed.

Target (issue 10): ours with ``mode="auto"`` at most 3x the analytic Jacobian at every grid point.

Run: ``python benchmarks/jacobian_grid.py`` (writes benchmarks/results/jacobian_grid.md).
"""

from __future__ import annotations

import itertools
import operator
import sys
import time

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)  # before NumPy's first BLAS call and before JAX is imported

import numpy as np  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules.api import DEFAULT_ENGINE, REVERSE_ENGINES, auto_picks_forward  # noqa: E402
from chainrules.core import basis_seed  # noqa: E402

SIZES = [10, 100, 1000]
TARGET = 3.0
BASELINE = "NumPy analytic"
#: a method slower than this per call is timed with fewer repeats (the whole grid stays in minutes)
SLOW = 0.01
#: seconds a sample of one method lasts
SAMPLE = 0.01
REPEATS, SLOW_REPEATS = 11, 5


def make_problem(n: int, m: int):
    rng = np.random.default_rng(1000 * n + m)
    return rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(n)


def ours(W, b, x) -> dict:
    def f(x):
        return (W @ x + b) ** 2

    methods = {
        "plain f(x)": lambda: f(x),
        "ours, auto": lambda: cr.jacobian(f, x),
        "ours, forward": lambda: cr.jacobian(f, x, mode="forward"),
    }
    for engine in REVERSE_ENGINES:
        methods[f"ours, reverse, engine={engine!r}"] = lambda engine=engine: cr.jacobian(
            f, x, mode="reverse", engine=engine
        )
    return methods


BY_HAND = "rules by hand, reverse"


def rules_by_hand(W, b, x) -> dict:
    """The reverse-mode Jacobian from the rules the engines call, chained by hand: each rrule looked
    up once, the pullbacks given the same block of unit cotangents (a ``BasisSeed``) and the input's
    cotangent evaluated, as ``cr.jacobian`` does, with nothing else around them."""
    r_matmul = cr.rrule.lookup(operator.matmul, (W, x))
    r_add = cr.rrule.lookup(operator.add, (x, b))
    r_pow = cr.rrule.lookup(operator.pow, (x, 2))
    m = b.size

    def reverse():
        y1, back_matmul = r_matmul(W, x)
        y2, back_add = r_add(y1, b)
        _, back_pow = r_pow(y2, 2)
        dy2 = back_pow(basis_seed(m, (m,), 0, x.dtype))[1]
        return cr.unthunk(back_matmul(back_add(dy2)[1])[2])

    return {BY_HAND: reverse}


def jax_methods(jax, W, b, x) -> dict:
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    Wj, bj, xj = jnp.asarray(W), jnp.asarray(b), jnp.asarray(x)

    def f(x):
        return (Wj @ x + bj) ** 2

    out = {}
    for name, transform in (("jacfwd", jax.jacfwd), ("jacrev", jax.jacrev)):
        eager, jitted = transform(f), jax.jit(transform(f))
        out[f"jax.{name}, jit"] = lambda g=jitted: jax.block_until_ready(g(xj))
        out[f"jax.{name}, eager"] = lambda g=eager: jax.block_until_ready(g(xj))
    return out


def torch_methods(torch, W, b, x) -> dict:
    Wt, bt, xt = (torch.from_numpy(a) for a in (W, b, x))

    def f(x):
        return (Wt @ x + bt) ** 2

    forward, reverse = torch.func.jacfwd(f), torch.func.jacrev(f)
    return {"torch.func.jacfwd": lambda: forward(xt), "torch.func.jacrev": lambda: reverse(xt)}


def autograd_methods(autograd, W, b, x) -> dict:
    anp = autograd.numpy

    def f(x):
        return (anp.dot(W, x) + b) ** 2

    jacobian = autograd.jacobian(f)
    return {"autograd.jacobian": lambda: jacobian(x)}


PEERS = {"jax": jax_methods, "torch": torch_methods, "autograd": autograd_methods}


def methods_for(W, b, x) -> tuple[dict, list[str]]:
    """Every method at one grid point, and the names of the peers' methods (``None``: not installed)."""
    methods = {BASELINE: lambda: 2 * (W @ x + b)[:, None] * W, **ours(W, b, x), **rules_by_hand(W, b, x)}
    for package, make in PEERS.items():
        module = common.optional_import(package)
        if module is not None:
            if package == "torch":
                import torch.func  # noqa: F401
            methods.update(make(module, W, b, x))
    return methods


def _check(methods: dict, expected: np.ndarray) -> None:
    for name, run in methods.items():
        if name != "plain f(x)":
            np.testing.assert_allclose(np.asarray(run()), expected, rtol=1e-9, atol=1e-9, err_msg=name)


def _once(run) -> float:
    start = common.TIMER()
    run()
    return common.TIMER() - start


def _group(methods: dict, names: list, repeats: int) -> dict:
    """``compare`` for some of the methods beside the baseline, each method's samples lasting about
    10 ms. The number of calls per sample is chosen per method: with one number for all, set by the
    slowest, a microsecond-scale method's sample held a few calls, the first of them slowed by the
    caches the previous method had filled, and the baseline measured about 3x its warm time."""
    group = {name: methods[name] for name in [BASELINE, *names]}
    return common.compare(group, BASELINE, repeats=repeats, warmup=1, budget=SAMPLE)


def measure(methods: dict) -> dict:
    """Every method's timing against the baseline. The fast methods and the slow ones (eager
    peers) are timed in two groups, each with the baseline, so that a fast method's samples hold
    many calls: the process CPU clock sums every thread's time (the peers start thread pools) and
    costs microseconds a reading, which a single microsecond-scale call would not outweigh."""
    once = {name: min(_once(run) for _ in range(2)) for name, run in methods.items() if name != BASELINE}
    fast = [name for name, t in once.items() if t <= SLOW]
    slow = [name for name, t in once.items() if t > SLOW]
    timings = _group(methods, fast, REPEATS) if fast else {}
    if slow:
        timings.update({k: v for k, v in _group(methods, slow, SLOW_REPEATS).items() if k != BASELINE})
    return timings


COLUMNS = [
    "ours, auto",
    "ours, forward",
    *(f"ours, reverse, engine={e!r}" for e in REVERSE_ENGINES),
    BY_HAND,
    "jax.jacfwd, jit",
    "jax.jacrev, jit",
    "jax.jacfwd, eager",
    "jax.jacrev, eager",
    "torch.func.jacfwd",
    "torch.func.jacrev",
    "autograd.jacobian",
]


#: issue 6's forward-mode target: forward ≤ 3x the analytic Jacobian where N ≤ M (inputs ≤ outputs)
FORWARD_TARGET_POINTS = [(10, 10), (10, 1000), (100, 100), (1000, 1000)]


def _verdict(label: str, value: float) -> str:
    outcome = "met" if value <= TARGET else "missed"
    return f"{label}: ours {value:.2f}x the analytic Jacobian, target ≤ {TARGET:g}x: **{outcome}**"


def plot(grid: dict) -> str:
    """A PNG of every method's ratio at each grid point (log scale); '' without matplotlib."""
    plt = common.optional_import("matplotlib.pyplot")
    if plt is None:
        return ""
    points = list(grid)
    labels = [f"{n}×{m}" for n, m in points]
    fig, ax = plt.subplots(figsize=(10, 5.5))
    for column in COLUMNS:
        values = [grid[p][column].ratio if column in grid[p] else float("nan") for p in points]
        style = "-o" if column.startswith("ours") else ":x" if column == BY_HAND else "--."
        ax.plot(labels, values, style, label=column, linewidth=2.2 if column == "ours, auto" else 1.0)
    ax.axhline(TARGET, color="red", linewidth=0.8, linestyle=":", label=f"target {TARGET:g}x")
    ax.axhline(1.0, color="black", linewidth=0.8, label="NumPy analytic")
    ax.set_yscale("log")
    ax.set_xlabel("N×M (inputs×outputs)")
    ax.set_ylabel("time ÷ NumPy analytic Jacobian")
    ax.set_title("Jacobian of (W x + b)²")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = common.RESULTS / "jacobian_grid.png"
    common.RESULTS.mkdir(exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def main() -> str:
    machine = common.machine_line()
    rows, verdicts, grid = [], [], {}
    started = time.perf_counter()
    for n, m in itertools.product(SIZES, SIZES):
        W, b, x = make_problem(n, m)
        methods = methods_for(W, b, x)
        _check(methods, methods[BASELINE]())
        timings = grid[n, m] = measure(methods)
        print(f"{n}x{m} done after {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        auto = timings["ours, auto"].ratio
        picks = "forward" if auto_picks_forward(n, m) else "reverse"
        cells = [f"{n}×{m}", picks, common.ms(timings["plain f(x)"].seconds), common.ms(timings[BASELINE].seconds)]
        cells.append(f"**{common.ratio(auto)}**")
        cells += [common.ratio(timings[c].ratio) if c in timings else common.NOT_INSTALLED for c in COLUMNS[1:]]
        rows.append(cells)
        verdict = _verdict(f"{n}×{m} (auto picks {picks})", auto)
        if picks == "reverse" and auto > TARGET:
            verdict += f" (the same rules chained by hand: {common.ratio(timings[BY_HAND].ratio)})"
        verdicts.append("- " + verdict)
    forward_verdicts = [
        "- " + _verdict(f"{n}×{m}, forward", grid[n, m]["ours, forward"].ratio) for n, m in FORWARD_TARGET_POINTS
    ]
    missed = [v for v in verdicts + forward_verdicts if "**missed**" in v]
    headers = ["N×M (inputs×outputs)", "auto picks", "plain f(x), ms", "analytic, ms", *COLUMNS]
    peers = ", ".join(common.version_of(p) for p in PEERS)
    png = plot(grid)
    lines = [
        "# Jacobian of (W x + b)² on the grid (N, M) in {10, 100, 1000}²",
        "",
        f"f: R^N → R^M as in seed 003 (N inputs, M outputs, W of shape M×N). {machine};",
        f"{THREADS_NOTE};",
        f"process CPU time, medians of interleaved repeats ({REPEATS} repeats, {SLOW_REPEATS} for methods over "
        f"{SLOW * 1e3:.0f} ms a call, timed as a second group beside the baseline; "
        "each method's sample holds as many calls as fill about 10 ms); "
        "every ratio is the median of the per-repeat ratios to the NumPy analytic Jacobian "
        "`2 (W x + b)[:, None] * W` (1.00x), measured in the same run. float64. Every Jacobian was "
        "checked against the analytic one before timing. `python benchmarks/jacobian_grid.py`.",
        f"Ours: `cr.jacobian(f, x, mode=...)` with `f` a closure over W and b; auto uses engine={DEFAULT_ENGINE!r}. "
        f"Peers: {peers}.",
        "",
        common.markdown_table(headers, rows),
        "",
        f"![ratios to the analytic Jacobian]({png})" if png else "(no plot: matplotlib not installed)",
        "",
        "## Targets",
        "",
        'Issue 10: `mode="auto"` ≤ 3x the analytic Jacobian at every grid point.',
        "",
        *verdicts,
        "",
        'Issue 6: `mode="forward"` ≤ 3x the analytic Jacobian where N ≤ M.',
        "",
        *forward_verdicts,
        "",
        f"Missed in this run: {len(missed)} of {len(verdicts) + len(forward_verdicts)}"
        + ("." if not missed else ": " + "; ".join(v[2:].split(":")[0] for v in missed) + "."),
        "",
        "## Notes",
        "",
        NOTES,
        "",
    ]
    return "\n".join(lines)


NOTES = """\
- Reverse mode pulls back all M unit cotangents in one call (a `BasisSeed` block; every rule on the way takes \
a batch): the cotangent block, scaled by 2(W x + b) in the pullback of `** 2`, reaches the pullback of `W @ x` as \
a scaled block, whose product with W is a row selection and scaling, O(N·M), not an O(N·M²) matrix product. \
Forward mode pushes all N unit tangents at once the same way (`W @ seed` selects columns of W). At 1000×1000 both \
cost what the analytic Jacobian costs: the primal's matrix-vector product and one scaling pass over W.
- Auto mode runs the reverse-mode primal once to see the output's size and remembers its choice for f and the \
input's shape, so the repeated calls timed here go straight to the chosen mode.
- Where a target is missed the time is a fixed cost, not arithmetic. At 10×10 the same NumPy calls forward \
mode makes (the primal's three, the tangent's three, with the seed's product taken as the view of W it selects), \
timed bare in a separate run, cost about 1.1x the analytic Jacobian; everything above that is dispatch. The column \
"rules by hand, reverse" is the least a reverse engine built on these rules can spend: the three rrules and their \
pullbacks called directly, with the same block of unit cotangents. Where it is itself above 3x (the small points), \
no engine can meet the target with these rules: each rule call checks its arguments' types and shapes, makes a \
closure and, in the pullback, a structured or lazy cotangent, on operations that take about a microsecond each; the \
engine and the API add the rest of the gap between that column and "ours, reverse"."""


if __name__ == "__main__":
    print(common.write_results("jacobian_grid", main()))
