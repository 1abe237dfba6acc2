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


def test_the_fuzzer_checks_distributions_by_name():
    """One callable, ``rv_continuous.cdf``, is fuzzed once per distribution under a name of its own;
    a frozen distribution's parameters are differentiated (its cotangent an object's, batched too)."""
    names = ["scipy.stats.gamma.cdf", "scipy.stats.binom.logpmf", "scipy.stats._distn_infrastructure.rv_frozen.ppf"]
    out = io.StringIO()
    outcomes = fuzz_rules.fuzz(seed=0, draws=3, only=names, out=out, hessians=True)
    assert sorted(outcomes) == sorted(names)
    assert all(o.draws > 0 for o in outcomes.values()) and not any(o.failures for o in outcomes.values()), (
        out.getvalue()
    )
    assert "rv_continuous.cdf" not in out.getvalue().split("no generator here --")[1]


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


def test_eigenvectors_are_checked_with_their_signs_aligned(monkeypatch):
    """scipy.linalg.eigh's eigenvector signs are rounding noise that finite differences read as
    jumps; aligned to the draw's own signs, the rule's full eigenvector derivative is checked, and
    a wrong one is still caught."""
    import zlib

    import numpy as np
    import scipy.linalg as sla

    import chainrules as cr

    d = fuzz_rules.Draw(np.random.default_rng([0, zlib.crc32(b"scipy.linalg._decomp.eigh")]))
    draws = [fuzz_rules.GENERATORS[sla.eigh][1](d, sla.eigh) for _ in range(8)]
    outcome = fuzz_rules.Outcome()
    for k, (args, kwargs) in enumerate(draws):
        fuzz_rules.check_draw(sla.eigh, args, kwargs, outcome, f"draw {k}", lambda *a, **kw: None, "linalg")
    assert outcome.draws == 8 and not outcome.failures, outcome.failures

    def eigh_off(a):
        return sla.eigh(a)

    def eigh_off_rrule(a):
        y, back = cr.rrule(sla.eigh, a)

        def eigh_off_pullback(dy):
            if isinstance(dy, cr.AbstractZero):
                return back(dy)
            # wrong: the eigenvector part of the cotangent counted twice
            return back(cr.Tangent[tuple](dy[0], 2 * cr.unthunk(dy[1])))

        return y, eigh_off_pullback

    cr.rrule.register(eigh_off)(eigh_off_rrule)
    monkeypatch.setitem(fuzz_rules.SIGN_GAUGED, eigh_off, 1)
    try:
        outcome = fuzz_rules.Outcome()
        args, kwargs = next((args, kwargs) for args, kwargs in draws if args[0].shape == (3, 3))
        fuzz_rules.check_draw(eigh_off, args, kwargs, outcome, "a 3 x 3 draw", lambda *a, **kw: None, "linalg")
    finally:
        cr.rrule.unregister(eigh_off)
    assert [kind for kind, _, _ in outcome.failures] == ["wrong numbers (rrule)"]


def test_the_second_order_check_passes_good_rules_and_catches_two_kinds_of_bad_ones():
    """``--hessians``: a rule whose code computes something else on dual numbers than on arrays gives
    a Hessian that finite differences of its gradient contradict; one that converts them raises."""
    import numpy as np

    import chainrules as cr

    out = io.StringIO()
    outcomes = fuzz_rules.fuzz(seed=0, draws=2, only=["numpy.tanh", "numpy.linalg.solve"], out=out, hessians=True)
    assert all(o.draws > 0 for o in outcomes.values()) and not any(o.failures for o in outcomes.values()), (
        out.getvalue()
    )

    def cube(x):
        return x**3

    def other_on_duals(x):  # 3x^2 on arrays, 2x^2 on an engine's values: right at first order only
        slope = 3 * x**2 if type(x) is np.ndarray else 2 * x**2  # (isinstance would see the value's array)
        return cube(x), lambda dy: (cr.NoTangent(), dy * slope)

    def converting(x):
        return cube(x), lambda dy: (cr.NoTangent(), dy * 3 * np.asarray(x) ** 2)

    kinds = []
    for rule in (other_on_duals, converting):
        cr.rrule.register(cube)(rule)
        try:
            outcome = fuzz_rules.Outcome()
            fuzz_rules.check_hessian(cube, (np.array([0.5, 1.5]),), {}, outcome, "draw 0: cube", 0)
        finally:
            cr.rrule.unregister(cube)
        kinds.append([kind for kind, _, _ in outcome.failures])
    assert kinds == [["wrong hessian"], ["hessian raises"]]


def test_the_fuzzer_checks_the_scipy_spatial_integrate_and_signal_rules():
    """The families of scipy.spatial.distance, scipy.integrate and scipy.signal draw valid calls
    (distinct points, constant simpson points, operands the mode admits) that their rules pass."""
    out = io.StringIO()
    families = ["scipy.spatial", "scipy.integrate", "scipy.signal"]
    outcomes = fuzz_rules.fuzz(seed=0, draws=2, families=families, out=out, hessians=True)
    assert len(outcomes) == 12, sorted(outcomes)
    assert all(o.draws > 0 for o in outcomes.values()), out.getvalue()
    assert not any(o.failures for o in outcomes.values()), out.getvalue()
