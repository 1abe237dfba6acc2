"""``make demo`` runs ``python -m chainrules demo``: it must run, and say what the seeds say."""

import os
import pathlib
import subprocess
import sys

import chainrules


def test_demo_runs_and_reproduces_the_seed_figures(tmp_path):
    src = str(pathlib.Path(chainrules.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "chainrules", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "back(1.0) = (0.0744, -0.0992)" in out  # seed 001
    assert "def f_primal(a, b):" in out  # the generated code is shown
    assert "Tangent[Polynomial](weights=array([  4.,  10.,  30., 100.]))" in out
    assert "gradient == ones: True" in out  # seed 004
    assert "agree with 2 (W x + b)[:, None] * W" in out  # seed 003
    assert "all agree with the closed forms: True" in out  # SciPy's solvers
    for line in out.splitlines():
        if line.startswith("max |"):
            assert float(line.rsplit(":", 1)[1]) < 1e-8  # babysqrt's derivative
