"""Golden files: the code ``cr.show`` prints, pinned line by line.

Regenerate after an intended change with ``CHAINRULES_UPDATE_GOLDEN=1 pytest tests/reverse/source``
and review the diff.
"""

import os
import pathlib

import numpy as np
import pytest
import source_golden_subjects as subjects

import chainrules as cr

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("CHAINRULES_UPDATE_GOLDEN") == "1"

CASES = {
    "seed001_f": (subjects.f, (2.0, 3.0)),
    "seed001_sin_cos": (subjects.sin_cos, (0.9,)),
    "seed003_babysqrt_first_call": (subjects.babysqrt, (2.0,)),
    "seed003_babysqrt_recursive_call": (subjects.babysqrt, (2.0, 1.5, 9)),
    "early_return": (subjects.early_return, (1.0, 2.0)),
    "structures": (subjects.structures, (1.0, 2.0)),
    "closure": (subjects.make_affine(2.0, 1.0), (3.0,)),
    "closure_decorated": (subjects.checkpointed_steps, (np.ones(2), 0.5)),
    "keywords": (subjects.keywords, (1.0, 2.0)),
    "callable_object": (subjects.Linear(2.0, 1.0), (3.0,)),
    "loop_seed004_mysum": (subjects.mysum, (np.ones(4),)),
    "loop_sine_chain": (subjects.sine_chain, (0.4, 100)),
    "loop_while": (subjects.halve_until_small, (37.0,)),
    "loop_continue_break": (subjects.skip_and_stop, ([1.0, -2.0, 3.0], 0.5)),
    "loop_comprehension": (subjects.squares_of_positives, ([1.0, -2.0, 3.0],)),
    "loop_fill_buffer": (subjects.fill_buffer, (np.ones(3), 2.0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_code_matches_golden_file(name):
    fn, args = CASES[name]
    text = cr.show(fn, *args)
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}; run with CHAINRULES_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_code_compiles_and_names_the_function(name):
    fn, args = CASES[name]
    text = cr.show(fn, *args)
    compile(text, name, "exec")
    assert getattr(fn, "__name__", type(fn).__name__) in text.splitlines()[0]


def test_show_of_a_function_with_a_rule_says_so():
    import math

    text = cr.show(math.sin, 1.0)
    assert "has a rule" in text
    compile(text, "rule", "exec")
