"""Shared helpers of the benchmark scripts: thread pinning, peers, interleaved medians, markdown tables.

A script measures every method it compares in one process, interleaved repeat by repeat, and
reports medians; ratios are the median of the per-repeat ratios to a baseline measured in the
same repeat, which keeps them steady on a shared, noisy machine.

>>> table = markdown_table(["method", "ms"], [["numpy", "1.00"], ["ours", "1.10"]])
>>> print(table)
| method | ms |
|---|---|
| numpy | 1.00 |
| ours | 1.10 |
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import importlib.metadata
import os
import pathlib
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from types import ModuleType

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results"

NOT_INSTALLED = "not installed"

#: process CPU time: a single-threaded computation is not charged for the time other
#: processes hold the CPU, which wall-clock time on a shared machine would be
TIMER = time.process_time


# ----- threads ---------------------------------------------------------------------------------


def pin_threads(threads: int = 1) -> str:
    """Limit every BLAS/OpenMP pool in the process to ``threads``; return a sentence saying so.

    NumPy and SciPy each bundle their own OpenBLAS; SciPy's is loaded (by importing
    ``scipy.linalg``) before the limit is set so that both pools are pinned. PyTorch's intra-op
    pool is pinned when PyTorch is installed, and JAX's XLA CPU client when it has not been
    imported yet (its thread flags are read once, at import).
    """
    import scipy.linalg  # noqa: F401  (loads SciPy's OpenBLAS so that threadpoolctl sees it)

    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError as err:
        raise ImportError(
            "the benchmarks pin BLAS threads with threadpoolctl, which is not installed; "
            "install the bench extra (pip install -e '.[bench]', as make bench does)"
        ) from err

    threadpool_limits(limits=threads)
    pools = sorted({f"{p['prefix']} {p['version']}" for p in threadpool_info()})
    parts = [f"BLAS pools ({', '.join(pools)}) pinned to {threads} thread(s) with threadpoolctl"]
    torch = optional_import("torch")
    if torch is not None:
        torch.set_num_threads(threads)
        parts.append(f"PyTorch to {threads}")
    if "jax" not in sys.modules:
        flags = os.environ.get("XLA_FLAGS", "")
        if threads == 1 and "intra_op_parallelism_threads" not in flags:
            flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        os.environ["XLA_FLAGS"] = flags.strip()
        parts.append("XLA's CPU client to 1 (XLA_FLAGS)" if threads == 1 else "XLA's CPU client left as it is")
    return ", ".join(parts)


# ----- peers -----------------------------------------------------------------------------------


def optional_import(name: str) -> ModuleType | None:
    """The module, or ``None`` when it is not installed (report it as ``NOT_INSTALLED``)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def version_of(name: str) -> str:
    """``"jax 0.10.2"``, or ``"jax not installed"``."""
    try:
        return f"{name} {importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{name} {NOT_INSTALLED}"


#: the peers a benchmark compares against, by the label its table shows, and the package each needs
PEERS = {"JAX jit": "jax", "JAX eager": "jax", "PyTorch": "torch", "autograd": "autograd"}


def peer_vjp(
    peer: str,
    f: Callable[..., object],
    args: Sequence[object],
    *,
    argnums: Sequence[int] | None = None,
    cotangent: object = None,
) -> Callable[[], tuple] | None:
    """A zero-argument callable running ``f``'s primal and pullback with a peer; ``None`` when it is not installed.

    ``peer`` is a key of ``PEERS``. ``f(xp, *args)`` is written once for every peer: ``xp`` is the
    peer's array namespace (``jax.numpy``, ``torch`` or ``autograd.numpy``; branch on
    ``xp.__name__`` where their names differ). ``args`` are NumPy arrays or floats, converted once,
    outside the timed call. The callable returns the cotangents of ``args[i]`` for ``i`` in
    ``argnums`` (all by default) for ``cotangent``, which defaults to ones shaped like the output
    (1.0 for a scalar loss: the gradient). JAX runs in float64.

    >>> import numpy as np
    >>> run = peer_vjp("autograd", lambda xp, x, y: xp.sum(x * y), (np.array([1.0, 2.0]), np.array([3.0, 4.0])))
    >>> run is None or [list(dx) for dx in run()] == [[3.0, 4.0], [1.0, 2.0]]
    True
    """
    module = optional_import(PEERS[peer])
    if module is None:
        return None
    import numpy as np

    positions = tuple(range(len(args))) if argnums is None else tuple(argnums)

    def with_active(constants: Sequence[object], active: Sequence[object]) -> list:
        full = list(constants)
        for i, value in zip(positions, active):
            full[i] = value
        return full

    if PEERS[peer] == "jax":
        module.config.update("jax_enable_x64", True)
        jnp = importlib.import_module("jax.numpy")
        constants = [jnp.asarray(a) for a in args]
        primals = [constants[i] for i in positions]

        def g(*active):
            return f(jnp, *with_active(constants, active))

        dy = jnp.ones_like(g(*primals)) if cotangent is None else jnp.asarray(cotangent)

        def reverse(*active):
            return module.vjp(g, *active)[1](dy)

        compiled = module.jit(reverse) if peer == "JAX jit" else reverse
        return lambda: module.block_until_ready(compiled(*primals))
    if PEERS[peer] == "torch":
        torch = module
        tensors = [
            torch.from_numpy(a) if isinstance(a, np.ndarray) else torch.tensor(a, dtype=torch.float64) for a in args
        ]
        leaves = [tensors[i].requires_grad_() for i in positions]
        y = f(torch, *tensors)
        dy = torch.ones_like(y) if cotangent is None else torch.as_tensor(cotangent)

        def run_torch() -> tuple:
            return torch.autograd.grad(f(torch, *tensors), leaves, dy)

        return run_torch
    anp = importlib.import_module("autograd.numpy")
    primals = [args[i] for i in positions]

    def h(*active):
        return f(anp, *with_active(args, active))

    y = h(*primals)
    dy = (np.ones_like(y) if np.ndim(y) else 1.0) if cotangent is None else cotangent
    make_vjp = module.make_vjp(h, argnum=tuple(range(len(positions))))

    def run_autograd() -> tuple:
        return make_vjp(*primals)[0](dy)

    return run_autograd


# ----- timing ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Timing:
    """The median seconds per call of one method, and its median ratio to the baseline."""

    seconds: float
    ratio: float
    samples: list[float]


def compare(
    methods: dict[str, Callable[[], object]],
    baseline: str,
    *,
    repeats: int = 21,
    number: int = 5,
    warmup: int = 2,
    timer: Callable[[], float] = TIMER,
    budget: float | None = None,
) -> dict[str, Timing]:
    """Time each method ``number`` calls at a time, ``repeats`` times, interleaved; medians per method.

    With ``budget`` (seconds), each method's number of calls per sample is chosen instead so that
    a sample takes about that long: methods a thousand times apart are compared in one run
    without timing the fast ones at the timer's resolution.

    The order of the methods rotates from one repeat to the next, so that no method always runs
    right after the same neighbour. Each repeat's time of a method is divided by the baseline's
    time in the same repeat; ``Timing.ratio`` is the median of those ratios.

    >>> out = compare({"a": lambda: sum(range(100)), "b": lambda: sum(range(200))}, "a", repeats=3, number=50)
    >>> sorted(out), out["a"].ratio
    (['a', 'b'], 1.0)
    """
    if baseline not in methods:
        raise ValueError(f"the baseline {baseline!r} is not one of the methods {sorted(methods)}")
    names = list(methods)
    for name in names:
        for _ in range(warmup):
            methods[name]()
    numbers = dict.fromkeys(names, number)
    if budget is not None:
        for name in names:
            once = _seconds(methods[name], 1, timer)
            if once < budget:  # a slow method is not called again just to calibrate it
                once = min(once, _seconds(methods[name], 1, timer), _seconds(methods[name], 1, timer))
            numbers[name] = max(1, int(budget / max(once, 1e-7)))
    samples: dict[str, list[float]] = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    # what exists now (modules, the methods' data) is set aside for the collections between samples:
    # with PyTorch and JAX loaded a full collection would otherwise take about 0.1 s each time
    gc.collect()
    gc.freeze()
    try:
        for r in range(repeats):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                gc.collect()
                gc.disable()
                samples[name].append(_seconds(methods[name], numbers[name], timer))
                if gc_was_enabled:
                    gc.enable()
    finally:
        gc.unfreeze()
        if gc_was_enabled:
            gc.enable()
    base = samples[baseline]
    return {
        name: Timing(
            seconds=statistics.median(ts),
            ratio=statistics.median(t / b for t, b in zip(ts, base)),
            samples=ts,
        )
        for name, ts in samples.items()
    }


def _seconds(run: Callable[[], object], number: int, timer: Callable[[], float]) -> float:
    start = timer()
    for _ in range(number):
        run()
    return (timer() - start) / number


def peak_bytes(fn: Callable[[], object]) -> int:
    """The peak of the memory Python and NumPy allocate during one call of ``fn`` (tracemalloc), in bytes.

    Call ``fn`` once before, so that one-time caches are not counted. PyTorch and JAX allocate
    outside tracemalloc's view.

    >>> import numpy as np
    >>> 8_000 <= peak_bytes(lambda: np.ones(1_000)) < 16_000
    True
    """
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ----- reporting -------------------------------------------------------------------------------


def quotient_gradient_by_rules(mul: Callable, add: Callable, div: Callable) -> Callable:
    """Seed 001's gradient of ``a / (a + b*b)`` from the rules ``mul``, ``add``, ``div`` chained by
    hand, as generated adjoint code calls them: what any engine built on those rules must spend.

    >>> import operator
    >>> def rule(op):
    ...     return lambda x, y: (op(x, y), lambda dz: (None, *{
    ...         operator.mul: (dz * y, dz * x), operator.add: (dz, dz),
    ...         operator.truediv: (dz / y, -dz * x / y**2)}[op]))
    >>> run = quotient_gradient_by_rules(rule(operator.mul), rule(operator.add), rule(operator.truediv))
    >>> [round(d, 4) for d in run(2.0, 3.0)]
    [0.0744, -0.0992]
    """

    def run(a, b):
        t1, back1 = mul(b, b)
        t2, back2 = add(a, t1)
        _, back3 = div(a, t2)
        _, da1, dt2 = back3(1.0)
        _, da2, dt1 = back2(dt2)
        _, db1, db2 = back1(dt1)
        return da1 + da2, db1 + db2

    return run


def machine_line() -> str:
    """Python version, platform, core count and the load average when the run started."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load average {load:.1f} at the start"
    )


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    """A GitHub markdown table; every cell is already a string."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def results_page(
    title: str, method: str, provenance: str, header: list[str], rows: list[list[str]], *sections: list[str]
) -> str:
    """A results page: the title, how it was measured (``method``), the machine line with
    ``provenance`` (threads, peers, the command), the table, then each section's lines after a
    blank line (findings, ``## Notes``...)."""
    lines = [f"# {title}", "", method, f"{machine_line()}; {provenance}", "", markdown_table(header, rows)]
    for section in sections:
        lines += ["", *section]
    return "\n".join(lines)


def ms(seconds: float) -> str:
    """Milliseconds with three significant figures."""
    value = seconds * 1e3
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def ratio(x: float) -> str:
    return f"{x:.2f}x"


def write_results(name: str, text: str) -> pathlib.Path:
    """Write ``benchmarks/results/<name>.md`` and return its path."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text(text.rstrip() + "\n")
    return path


def report(name: str, text: str) -> pathlib.Path:
    """What ``python benchmarks/<name>.py`` ends with: write the results file, print the text and where it went."""
    path = write_results(name, text)
    print(text)
    print(f"\nwrote {path}", file=sys.stderr)
    return path
