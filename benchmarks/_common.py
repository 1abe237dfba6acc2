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
from collections.abc import Callable
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
) -> dict[str, Timing]:
    """Time each method ``number`` calls at a time, ``repeats`` times, interleaved; medians per method.

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
    samples: dict[str, list[float]] = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    try:
        for r in range(repeats):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                run = methods[name]
                gc.collect()
                gc.disable()
                start = timer()
                for _ in range(number):
                    run()
                samples[name].append((timer() - start) / number)
                if gc_was_enabled:
                    gc.enable()
    finally:
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


# ----- reporting -------------------------------------------------------------------------------


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
