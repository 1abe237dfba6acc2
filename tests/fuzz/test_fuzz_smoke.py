"""The rule fuzzer (``tests/fuzz/fuzz_rules.py``) runs: three rules, one seed, a few draws each."""

import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_rules  # noqa: E402


def test_the_fuzzer_checks_three_rules():
    out = io.StringIO()
    outcomes = fuzz_rules.fuzz(seed=0, draws=3, only=["numpy.sum", "numpy.sin", "math.exp"], out=out)
    assert sorted(outcomes) == ["math.exp", "numpy.sin", "numpy.sum"]
    assert all(o.draws > 0 for o in outcomes.values()), out.getvalue()
    assert not any(o.failures for o in outcomes.values()), out.getvalue()
    assert "callables with a rule and no generator here" in out.getvalue()


def test_the_fuzzer_reports_a_wrong_rule():
    """A rule with a wrong derivative is caught, and shown with the draw that shows it."""
    import numpy as np

    import chainrules as cr

    def twice(x):
        return 2 * x

    def twice_rrule(x):
        return twice(x), lambda dy: (cr.NoTangent(), 3 * dy)  # wrong: the derivative is 2

    cr.rrule.register(twice)(twice_rrule)
    try:
        outcome = fuzz_rules.Outcome()
        fuzz_rules.check_draw(twice, (np.array([1.0, 2.0]),), {}, outcome, "draw 0: twice", lambda *a, **k: None)
    finally:
        cr.rrule.unregister(twice)
    assert [kind for kind, _, _ in outcome.failures] == ["wrong numbers (rrule)"]
