"""The gradient of an MLP loss with respect to all its weights, beside a hand-written NumPy backprop.

The model: batch 64, 784-256-10, tanh hidden layer, softmax cross-entropy (mean over the batch),
in float64 and float32. Every method computes the gradient with respect to ``W1, b1, W2, b2``
(the inputs and labels are constants):

- the baseline (1.0): a hand-written NumPy forward and backward pass;
- ours: ``cr.gradient`` with each reverse engine of ``chainrules.api.REVERSE_ENGINES`` that is
  installed, on the loss written with NumPy functions (and, where its rule is registered, on the
  same loss written with ``scipy.special.log_softmax``);
- JAX (``jax.jit(jax.grad)`` and eager ``jax.grad``), PyTorch (``torch.autograd.grad``) and HIPS
  autograd where installed, on the same loss written in their NumPy-like namespaces.

Every method is checked against the baseline before it is timed. Target (issue 10): ours at
most 1.25x the hand-written forward+backward.

Run: ``python benchmarks/mlp.py`` (writes benchmarks/results/mlp.md).
"""

from __future__ import annotations

import importlib
import sys

try:
    from benchmarks import _common as common
except ImportError:  # run as a script: benchmarks/ is on sys.path
    import _common as common

THREADS_NOTE = common.pin_threads(1)  # before NumPy's first BLAS call and before JAX is imported

import numpy as np  # noqa: E402
import scipy.special  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules.api import REVERSE_ENGINES  # noqa: E402
from chainrules.testing.zoo.arrays import mlp_loss  # noqa: E402

BATCH, N_IN, N_HIDDEN, N_OUT = 64, 784, 256, 10
TARGET = 1.25
REPEATS, NUMBER = 21, 5


def make_problem(dtype, seed: int = 0):
    """Weights ``(W1, b1, W2, b2)`` and the constants ``(X, Y)`` (Y one-hot), all of ``dtype``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((BATCH, N_IN)).astype(dtype)
    Y = np.eye(N_OUT, dtype=dtype)[rng.integers(0, N_OUT, BATCH)]
    W1 = (rng.standard_normal((N_IN, N_HIDDEN)) / np.sqrt(N_IN)).astype(dtype)
    b1 = (0.1 * rng.standard_normal(N_HIDDEN)).astype(dtype)
    W2 = (rng.standard_normal((N_HIDDEN, N_OUT)) / np.sqrt(N_HIDDEN)).astype(dtype)
    b2 = (0.1 * rng.standard_normal(N_OUT)).astype(dtype)
    return (W1, b1, W2, b2), (X, Y)


# ----- the loss, as a user writes it ---------------------------------------------------------


def make_loss_log_softmax(X, Y):
    def loss(W1, b1, W2, b2):
        h = np.tanh(X @ W1 + b1)
        z = h @ W2 + b2
        return -np.sum(Y * scipy.special.log_softmax(z, axis=1)) / X.shape[0]

    return loss


def make_handwritten(X, Y):
    """The baseline: the forward pass and the backward pass written out in NumPy."""

    def loss_and_gradient(W1, b1, W2, b2):
        h = np.tanh(X @ W1 + b1)
        z = h @ W2 + b2
        m = z.max(axis=1, keepdims=True)
        e = np.exp(z - m)
        s = e.sum(axis=1, keepdims=True)
        loss = -np.sum(Y * (z - (np.log(s) + m))) / X.shape[0]
        dz = (e / s - Y) / X.shape[0]  # softmax minus the labels
        dW2 = h.T @ dz
        db2 = dz.sum(axis=0)
        da = (dz @ W2.T) * (1 - h * h)
        dW1 = X.T @ da
        db1 = da.sum(axis=0)
        return loss, (dW1, db1, dW2, db2)

    return loss_and_gradient


# ----- peers -----------------------------------------------------------------------------------


def jax_methods(jax, weights, constants) -> dict:
    jnp = jax.numpy
    X, Y = (jnp.asarray(c) for c in constants)
    params = tuple(jnp.asarray(w) for w in weights)

    def loss(W1, b1, W2, b2):
        h = jnp.tanh(X @ W1 + b1)
        z = h @ W2 + b2
        m = jnp.max(z, axis=1, keepdims=True)
        log_p = z - (jnp.log(jnp.sum(jnp.exp(z - m), axis=1, keepdims=True)) + m)
        return -jnp.sum(Y * log_p) / X.shape[0]

    grad = jax.grad(loss, argnums=(0, 1, 2, 3))
    jitted = jax.jit(grad)

    def run_jit():
        return jax.block_until_ready(jitted(*params))

    def run_eager():
        return jax.block_until_ready(grad(*params))

    return {"JAX, jit": run_jit, "JAX, eager": run_eager}


def torch_methods(torch, weights, constants) -> dict:
    X, Y = (torch.from_numpy(c) for c in constants)
    params = [torch.from_numpy(w.copy()).requires_grad_() for w in weights]

    def run():
        W1, b1, W2, b2 = params
        h = torch.tanh(X @ W1 + b1)
        z = h @ W2 + b2
        m = torch.amax(z, dim=1, keepdim=True)
        log_p = z - (torch.log(torch.sum(torch.exp(z - m), dim=1, keepdim=True)) + m)
        loss = -torch.sum(Y * log_p) / X.shape[0]
        return torch.autograd.grad(loss, params)

    return {"PyTorch": run}


def autograd_methods(autograd, weights, constants) -> dict:
    anp = importlib.import_module("autograd.numpy")
    X, Y = constants

    def loss(W1, b1, W2, b2):
        h = anp.tanh(anp.dot(X, W1) + b1)
        z = anp.dot(h, W2) + b2
        m = anp.max(z, axis=1, keepdims=True)
        log_p = z - (anp.log(anp.sum(anp.exp(z - m), axis=1, keepdims=True)) + m)
        return -anp.sum(Y * log_p) / X.shape[0]

    grad = autograd.grad(loss, argnum=(0, 1, 2, 3))
    return {"autograd": lambda: grad(*weights)}


PEERS = [("jax", jax_methods), ("torch", torch_methods), ("autograd", autograd_methods)]
PEER_LABELS = {"jax": ("JAX, jit", "JAX, eager"), "torch": ("PyTorch",), "autograd": ("autograd",)}


def importable_engines() -> tuple[list[str], list[str]]:
    """``(available, missing)`` names of ``REVERSE_ENGINES``."""
    available, missing = [], []
    for name, module in REVERSE_ENGINES.items():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                missing.append(name)
                continue
            raise
        available.append(name)
    return available, missing


def has_rrule(f) -> bool:
    return cr.rrule.lookup(f, (np.ones((2, 2)),)) is not None


# ----- the run ---------------------------------------------------------------------------------


def as_numpy(grads) -> list[np.ndarray]:
    return [np.asarray(g.detach().numpy() if hasattr(g, "detach") else g) for g in grads]


def check(name: str, grads, reference, dtype) -> None:
    rtol, atol = (1e-9, 1e-12) if dtype == np.float64 else (2e-4, 1e-6)
    got = as_numpy(grads)
    for i, (g, r) in enumerate(zip(got, reference)):
        if g.shape != r.shape:
            raise AssertionError(f"{name}: gradient {i} has shape {g.shape}, expected {r.shape}")
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, err_msg=f"{name}: gradient {i}")
        if name.startswith("ours") and g.dtype != r.dtype:
            raise AssertionError(f"{name}: gradient {i} is {g.dtype}, expected {r.dtype}")


def run_dtype(dtype, engines: list[str], peers: dict) -> tuple[list[list[str]], list[str]]:
    weights, constants = make_problem(dtype)
    X, Y = constants
    handwritten = make_handwritten(X, Y)
    loss = mlp_loss(X, Y)
    reference = handwritten(*weights)[1]

    methods = {"hand-written NumPy forward+backward": lambda: handwritten(*weights)}
    methods["NumPy forward pass only (no gradient)"] = lambda: loss(*weights)
    ours = []
    variants = [("", loss)]
    if has_rrule(scipy.special.log_softmax):
        variants.append((", scipy.special.log_softmax", make_loss_log_softmax(X, Y)))
    unsupported = []
    for engine in engines:
        for suffix, f in variants:
            name = f"ours, engine={engine!r}{suffix}"
            try:
                grads = cr.gradient(f, *weights, engine=engine)
            except TypeError as exc:  # an engine that cannot run this variant (and says why)
                if not suffix:
                    raise
                reason = str(exc).split(" (at ")[0].split(": it ")[0]  # its first clause
                unsupported.append([name, f"not supported by this engine: {reason}", "", ""])
                continue
            check(name, grads, reference, dtype)
            methods[name] = lambda f=f, engine=engine: cr.gradient(f, *weights, engine=engine)
            ours.append(name)
    for module_name, build in PEERS:
        module = peers.get(module_name)
        if module is None:
            continue
        for name, run in build(module, weights, constants).items():
            check(name, run(), reference, dtype)
            methods[name] = run

    timings = common.compare(methods, "hand-written NumPy forward+backward", repeats=REPEATS, number=NUMBER)
    rows = []
    verdicts = []
    for name, t in timings.items():
        target = ""
        if name in ours:
            met = t.ratio <= TARGET
            target = "met" if met else "**missed**"
            verdicts.append(f"{np.dtype(dtype).name}, {name}: {t.ratio:.2f}x, target <= {TARGET}x {target}")
        rows.append([name, common.ms(t.seconds), common.ratio(t.ratio), target])
    rows.extend(unsupported)
    for module_name, _ in PEERS:
        if peers.get(module_name) is None:
            rows.extend([label, common.NOT_INSTALLED, "", ""] for label in PEER_LABELS[module_name])
    return rows, verdicts


def main() -> str:
    engines, missing_engines = importable_engines()
    peers = {name: common.optional_import(name) for name, _ in PEERS}
    if peers["jax"] is not None:
        peers["jax"].config.update("jax_enable_x64", True)  # float64 arrays stay float64
    lines = [
        f"# MLP gradient: batch {BATCH}, {N_IN}-{N_HIDDEN}-{N_OUT}, tanh, softmax cross-entropy",
        "",
        common.machine_line() + ";",
        THREADS_NOTE + ";",
        f"process CPU time, median of {REPEATS} repeats of {NUMBER} calls, all methods interleaved in one run; "
        "the ratio is the median of the per-repeat ratios to the hand-written NumPy forward+backward (1.00x).",
        "Every gradient is with respect to W1, b1, W2, b2 and is checked against the hand-written one before timing.",
        "Peers: " + ", ".join(common.version_of(name) for name in peers) + ".",
    ]
    if missing_engines:
        lines.append(f"Reverse engines not installed in this build: {', '.join(missing_engines)}.")
    all_verdicts = []
    for dtype in (np.float64, np.float32):
        rows, verdicts = run_dtype(dtype, engines, peers)
        all_verdicts += verdicts
        lines += ["", f"## {np.dtype(dtype).name}", ""]
        lines.append(common.markdown_table(["method", "ms per gradient", "ratio", f"target <= {TARGET}x"], rows))
    lines += ["", "## Target", "", f"Issue 10: ours at most {TARGET}x the hand-written NumPy forward+backward.", ""]
    lines += [f"- {v}" for v in all_verdicts]
    return "\n".join(lines)


if __name__ == "__main__":
    text = main()
    path = common.write_results("mlp", text)
    print(text)
    print(f"\nwrote {path}", file=sys.stderr)
