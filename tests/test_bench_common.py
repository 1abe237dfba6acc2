"""The shared benchmark helpers: interleaved medians and ratios, thread pinning, peers, tables."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from benchmarks import _common as common

ROOT = pathlib.Path(__file__).resolve().parents[1]


class FakeClock:
    """A timer that advances by the cost of whatever ran, so that timings are exact."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def method(self, seconds: float, log: list, name: str):
        def run():
            log.append(name)
            self.now += seconds

        return run


def test_compare_medians_and_ratios_to_the_baseline():
    clock, log = FakeClock(), []
    methods = {"base": clock.method(0.002, log, "base"), "slow": clock.method(0.005, log, "slow")}
    out = common.compare(methods, "base", repeats=5, number=3, warmup=1, timer=clock)
    assert out["base"].seconds == pytest.approx(0.002)
    assert out["slow"].seconds == pytest.approx(0.005)
    assert out["base"].ratio == pytest.approx(1.0)
    assert out["slow"].ratio == pytest.approx(2.5)
    assert len(out["slow"].samples) == 5
    assert len(log) == 2 * (1 + 5 * 3)  # warm-up calls, then repeats x number


def test_compare_rotates_the_order_of_the_methods():
    clock, log = FakeClock(), []
    methods = {name: clock.method(0.001, log, name) for name in "abc"}
    common.compare(methods, "a", repeats=3, number=1, warmup=0, timer=clock)
    assert log == list("abc") + list("bca") + list("cab")


def test_compare_ratio_is_the_median_of_per_repeat_ratios():
    # per-repeat ratios 3, 2, 1 have the median 2; the ratio of the medians would be 3 / 2
    clock = FakeClock()
    costs = {"a": iter([1.0, 2.0, 3.0]), "b": iter([3.0, 4.0, 3.0])}

    def method(name):
        def run():
            clock.now += next(costs[name])

        return run

    out = common.compare({"a": method("a"), "b": method("b")}, "a", repeats=3, number=1, warmup=0, timer=clock)
    assert (out["a"].seconds, out["b"].seconds) == (2.0, 3.0)
    assert out["b"].ratio == pytest.approx(2.0)


def test_compare_needs_the_baseline_among_the_methods():
    with pytest.raises(ValueError, match="baseline 'numpy'"):
        common.compare({"ours": lambda: None}, "numpy", repeats=1, number=1)


def test_markdown_table_and_formats():
    assert common.markdown_table(["a", "b"], [["1", "2"]]) == "| a | b |\n|---|---|\n| 1 | 2 |"
    assert common.ms(0.00123) == "1.23"
    assert common.ms(0.1234) == "123"
    assert common.ratio(1.234) == "1.23x"


def test_peers_that_are_missing_are_reported_as_not_installed():
    assert common.optional_import("a_module_that_does_not_exist") is None
    assert common.optional_import("json") is json
    assert common.version_of("a_module_that_does_not_exist") == "a_module_that_does_not_exist not installed"
    assert common.version_of("numpy").startswith("numpy 2.")


def test_write_results(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    path = common.write_results("example", "# Title\n\ntext\n\n")
    assert path == tmp_path / "results" / "example.md"
    assert path.read_text() == "# Title\n\ntext\n"


def test_machine_line_names_python_and_the_cores():
    line = common.machine_line()
    assert line.startswith("Python 3.") and f"{os.cpu_count()} cores" in line


def test_pin_threads_pins_both_openblas_pools():
    if importlib.util.find_spec("threadpoolctl") is None:  # the bench extra is not installed
        with pytest.raises(ImportError, match=r"pip install -e '.\[bench\]'"):
            common.pin_threads(1)
        return
    # a fresh process (the limit is global), with PyTorch hidden so that the check stays quick
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "from benchmarks import _common\n"
        "note = _common.pin_threads(1)\n"
        "from threadpoolctl import threadpool_info\n"
        "import json, os\n"
        "print(json.dumps([note, [p['num_threads'] for p in threadpool_info()], os.environ['XLA_FLAGS']]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src")])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    note, threads, flags = json.loads(out.stdout)
    assert len(threads) >= 2 and set(threads) == {1}  # NumPy's and SciPy's OpenBLAS
    assert "pinned to 1 thread(s) with threadpoolctl" in note and "PyTorch" not in note
    assert "intra_op_parallelism_threads=1" in flags


def test_compare_with_a_budget_calls_each_method_enough_to_fill_a_sample():
    clock, log = FakeClock(), []
    methods = {"fast": clock.method(0.001, log, "fast"), "slow": clock.method(0.004, log, "slow")}
    out = common.compare(methods, "fast", repeats=2, warmup=0, timer=clock, budget=0.008)
    assert log.count("fast") == 3 + 2 * 8 and log.count("slow") == 3 + 2 * 2  # calibration, then samples
    assert out["fast"].seconds == pytest.approx(0.001) and out["slow"].ratio == pytest.approx(4.0)


def test_peak_bytes_counts_what_a_call_allocates():
    import numpy as np

    assert common.peak_bytes(lambda: np.ones(100_000)) >= 800_000
    assert common.peak_bytes(lambda: None) < 10_000


@pytest.mark.parametrize("peer", sorted(common.PEERS))
def test_peer_vjp_returns_the_cotangents_of_the_chosen_arguments(peer):
    import numpy as np

    if importlib.util.find_spec(common.PEERS[peer]) is None:
        assert common.peer_vjp(peer, lambda xp, x: x, (np.ones(2),)) is None
        return
    x, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    run = common.peer_vjp(peer, lambda xp, x, w: xp.sum(xp.sin(x) * w), (x, w))
    dx, dw = (np.asarray(c) for c in run())
    np.testing.assert_allclose(dx, np.cos(x) * w)
    np.testing.assert_allclose(dw, np.sin(x))
    dy = np.array([1.0, 10.0, 100.0])
    (dx_only,) = common.peer_vjp(peer, lambda xp, x, w: x * w, (x, w), argnums=(0,), cotangent=dy)()
    np.testing.assert_allclose(np.asarray(dx_only), dy * w)


def test_the_helpers_examples_run():
    import doctest

    assert doctest.testmod(common).failed == 0


def test_compare_calibrates_a_slow_method_with_one_call_and_leaves_nothing_frozen():
    import gc

    clock, log = FakeClock(), []
    methods = {"fast": clock.method(0.001, log, "fast"), "slow": clock.method(0.01, log, "slow")}
    common.compare(methods, "fast", repeats=2, warmup=0, timer=clock, budget=0.004)
    assert log.count("slow") == 1 + 2 and log.count("fast") == 3 + 2 * 4
    assert gc.get_freeze_count() == 0


def test_report_writes_the_results_and_prints_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    path = common.report("example", "# Title\n")
    assert path.read_text() == "# Title\n"
    out = capsys.readouterr()
    assert out.out == "# Title\n\n" and str(path) in out.err


def test_a_results_page_has_its_parts_in_order():
    page = common.results_page(
        "Title", "How.", "threads.", ["a", "b"], [["1", "2"]], ["- found"], ["## Notes", "", "- n"]
    )
    lines = page.split("\n")
    assert lines[:3] == ["# Title", "", "How."]
    assert lines[3].endswith("; threads.") and lines[3].startswith("Python ")
    assert lines[5:8] == ["| a | b |", "|---|---|", "| 1 | 2 |"]
    assert lines[8:] == ["", "- found", "", "## Notes", "", "- n"]
