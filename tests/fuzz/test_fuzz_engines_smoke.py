"""The engine fuzzer (``tests/fuzz/fuzz_engines.py``) runs: a few programs of one seed, and a wrong
engine result is caught."""

import io
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_engines  # noqa: E402


def test_programs_are_reproducible_from_the_seed():
    a = fuzz_engines.Program(np.random.default_rng([3, 1]))
    b = fuzz_engines.Program(np.random.default_rng([3, 1]))
    assert a.source() == b.source() and all(np.array_equal(x, y) for x, y in zip(a.args, b.args))


def test_the_fuzzer_runs_programs_through_every_engine():
    out = io.StringIO()
    outcome = fuzz_engines.fuzz(seed=0, count=6, out=out)  # (some draws are refused by design: views, out=)
    assert outcome.programs + outcome.dropped == 6 and outcome.programs >= 5, out.getvalue()
    assert sum(passed for passed, _ in outcome.checks.values()) >= 15, out.getvalue()
    assert "programs checked" in out.getvalue()


def test_a_wrong_gradient_is_reported(monkeypatch):
    import chainrules as cr

    real = cr.pullback

    def off_by_a_tenth(f, *args, **kwargs):
        y, back = real(f, *args, **kwargs)
        return y, lambda dy: tuple(g * 1.1 if isinstance(g, np.ndarray) else g for g in back(dy))

    monkeypatch.setattr(cr, "pullback", off_by_a_tenth)
    out = io.StringIO()
    outcome = fuzz_engines.fuzz(seed=0, count=4, only=["source"], out=out)
    messages = [message for *_, problems in outcome.failures for check, message in problems if check == "source"]
    assert any(message.startswith("d(argument") for message in messages), out.getvalue()
    assert "def f(" in out.getvalue()
