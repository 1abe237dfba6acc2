"""The tour behind ``make demo`` (``python -m chainrules demo``): the seed documents' examples, run.

Each section prints what it computes and checks it against the analytic answer, so the tour is
also a smoke test of the whole library. Sections that time something say so and time the plain
NumPy computation in the same run.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import statistics
import time
import tracemalloc

import numpy as np
import scipy.integrate
import scipy.optimize

import chainrules as cr

from .api import auto_picks_forward

WIDTH = 78


def heading(title: str) -> None:
    print()
    print("=" * WIDTH)
    print(f"  {title}")
    print("=" * WIDTH)


def median_time(fn, repeats: int = 7, number: int = 1) -> float:
    """Median wall time of ``number`` calls, in seconds per call."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


# ----- seed 001: a Wengert list and its pullback ---------------------------------------------


def f(a, b):
    return a / (a + b * b)


def seed_pullback() -> None:
    heading("1. Reverse mode by source transformation: f(a, b) = a / (a + b*b)")
    y, back = cr.pullback(f, 2.0, 3.0)
    da, db = back(1.0)
    print(f"f(2, 3) = {y:.4f};  back(1.0) = ({da:.4f}, {db:.4f})")
    print(f"analytic:             ({9 / 121:.4f}, {-12 / 121:.4f})")
    print("\nThe code chainrules generated (cr.show(f, 2.0, 3.0)):\n")
    print(cr.show(f, 2.0, 3.0))


# ----- seed 000: a rule that changes the primal ----------------------------------------------


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


@cr.rrule.register(sigmoid)
def rrule_sigmoid(x):
    ex = math.exp(x)  # one exp serves the primal and the pullback
    y = ex / (1.0 + ex)

    def sigmoid_pullback(dy):
        return cr.NoTangent(), dy * y / (1.0 + ex)

    return y, sigmoid_pullback


def logistic_loss(w, x):
    return -math.log(sigmoid(w * x))


def seed_rule() -> None:
    heading("2. A custom rule sharing work between primal and pullback (sigmoid via one exp)")
    (dw, dx) = cr.gradient(logistic_loss, 0.5, 2.0)
    s = 1 / (1 + math.exp(-1.0))
    print(f"d/dw -log(sigmoid(w x)) at (0.5, 2) = {dw:.6f}   analytic -(1 - s) x = {-(1 - s) * 2.0:.6f}")
    print(f"d/dx                                 = {dx:.6f}   analytic -(1 - s) w = {-(1 - s) * 0.5:.6f}")


# ----- seed 001's failure case: a callable object with map ----------------------------------


@dataclasses.dataclass
class Polynomial:
    weights: np.ndarray

    def __call__(self, x):
        if isinstance(x, np.ndarray):
            return np.array(list(map(self, x)))
        result = 0.0
        for w in reversed(self.weights):  # Horner's rule
            result = result * x + w
        return result


def seed_polynomial() -> None:
    heading("3. A callable object: the gradient of a Polynomial model is Tangent[Polynomial]")
    model = Polynomial(np.array([3.0, 2.0, -3.0, 1.0]))
    x = np.array([1.0, 2.0, 3.0, 4.0])

    def loss(m, xs):
        return m(xs).sum()

    dmodel, dx = cr.gradient(loss, model, x)
    print(f"model = {model}")
    print(f"d loss / d model = {dmodel}")
    print(f"  analytic weights: {np.array([np.sum(x**k) for k in range(4)])}")
    print(f"d loss / d x     = {dx}")
    print(f"  analytic:         {2.0 - 6.0 * x + 3.0 * x**2}")


# ----- seed 003: dual numbers and babysqrt ---------------------------------------------------


def babysqrt(x, t=None, n=10):
    t = (1 + x) / 2 if t is None else t
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


def seed_babysqrt() -> None:
    heading("4. Forward mode with dual numbers through recursion: babysqrt (Heron's method)")
    xs = np.linspace(0.1, 2.0, 96)
    forward = np.array([cr.derivative(babysqrt, float(x)) for x in xs])
    reverse = np.array([cr.gradient(babysqrt, float(x))[0] for x in xs])
    analytic = 1 / (2 * np.sqrt(xs))
    print(f"max |forward - 1/(2 sqrt x)| over x in [0.1, 2]: {np.max(np.abs(forward - analytic)):.2e}")
    print(f"max |reverse - 1/(2 sqrt x)| over x in [0.1, 2]: {np.max(np.abs(reverse - analytic)):.2e}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(install matplotlib to get the plot: pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, [babysqrt(x) for x in xs], lw=3, label="babysqrt(x)")
    ax.plot(xs, analytic, ls=":", lw=3, label="analytic f'")
    ax.plot(xs, forward, ls="--", lw=2, label="dual numbers f'")
    ax.plot(xs, reverse, ls="-.", lw=1.5, label="source transformation f'")
    ax.legend()
    ax.set_xlabel("x")
    path = pathlib.Path("babysqrt.png").resolve()
    fig.savefig(path, dpi=100, bbox_inches="tight")
    print(f"plot saved to {path}")


# ----- seed 003: the Jacobian of (W x + b)^2 ----------------------------------------------


def seed_jacobian() -> None:
    heading("5. The Jacobian of (W x + b)^2, forward and reverse mode")
    rng = np.random.default_rng(0)
    print(f"{'N inputs':>9} {'M outputs':>10} {'analytic':>10} {'forward':>10} {'reverse':>10} {'auto picks':>11}")
    for n, m in [(10, 1000), (1000, 10), (200, 200)]:
        W, b, x = rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(n)

        def g(x, W=W, b=b):
            return (W @ x + b) ** 2

        def analytic(W=W, b=b, x=x):
            return 2 * (W @ x + b)[:, None] * W

        expected = analytic()
        J_fwd = cr.jacobian(g, x, mode="forward")
        J_rev = cr.jacobian(g, x, mode="reverse")
        assert np.allclose(J_fwd, expected) and np.allclose(J_rev, expected)
        t_an = median_time(analytic, number=5)
        t_fwd = median_time(lambda: cr.jacobian(g, x, mode="forward"), repeats=5)
        t_rev = median_time(lambda: cr.jacobian(g, x, mode="reverse"), repeats=5)
        picks = "forward" if auto_picks_forward(n, m) else "reverse"
        print(f"{n:>9} {m:>10} {t_an * 1e3:>8.2f}ms {t_fwd * 1e3:>8.2f}ms {t_rev * 1e3:>8.2f}ms {picks:>11}")
    print("(all three agree with 2 (W x + b)[:, None] * W to 1e-8)")


# ----- seed 004: accumulation in a loop -----------------------------------------------------


def mysum(X):
    total = 0.0
    for i in range(len(X)):
        total += X[i]
    return total


def seed_mysum() -> None:
    heading("6. Accumulating X[i] in a Python loop allocates one gradient array, not n")
    n = 20_000
    X = np.random.default_rng(1).standard_normal(n)
    cr.gradient(mysum, X)  # compile once
    tracemalloc.start()
    (dX,) = cr.gradient(mysum, X)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    took = median_time(lambda: cr.gradient(mysum, X), repeats=3)
    print(f"n = {n}: gradient == ones: {bool(np.all(dX == 1.0))};  time {took * 1e3:.1f} ms")
    print(f"peak memory during the gradient: {peak / 1e6:.2f} MB = {peak / X.nbytes:.1f} arrays of n floats")


# ----- beyond the seeds: SciPy's solvers, differentiated by their mathematics ----------------


def cube_root(c):
    return scipy.optimize.brentq(lambda x: x**3 - c, 0.0, 10.0, xtol=1e-14)


def ridge(lam, A, y):
    def loss(w):
        return np.sum((A @ w - y) ** 2) + lam * np.sum(w**2)

    return scipy.optimize.minimize(loss, np.zeros(A.shape[1]), tol=1e-12).x


def decayed(k):
    tight = {"rtol": 1e-10, "atol": 1e-12}
    return scipy.integrate.solve_ivp(lambda t, u: -k * u, (0.0, 1.0), np.array([1.0]), **tight).y[0, -1]


def solvers() -> None:
    heading("7. Through SciPy's solvers: the root, the optimum, the ODE's solution")
    print("Each rule runs SciPy, then differentiates the mathematics, not the iterations:")
    g = cr.gradient(cube_root, 8.0)[0]
    print(f"brentq root of x^3 = c, d/dc at c = 8:    {g:.12f}  (1/12 = {1 / 12:.12f})")
    A, y = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]]), np.array([1.0, 1.0, 2.0])
    dw = cr.jacobian(lambda lam: ridge(lam, A, y), 0.5)
    M = np.linalg.inv(A.T @ A + 0.5 * np.eye(2))
    closed = -M @ M @ A.T @ y
    print(f"minimize (ridge regression), dw/dlam:     {np.array2string(dw, precision=8)}")
    print(f"  closed form -(A'A + lam I)^-2 A'y:       {np.array2string(closed, precision=8)}")
    dk = cr.gradient(decayed, 0.5)[0]
    print(f"solve_ivp u' = -k u, du(1)/dk at k = 0.5: {dk:.10f}  (-exp(-k) = {-math.exp(-0.5):.10f})")
    agree = abs(g - 1 / 12) < 1e-10 and np.allclose(dw, closed, atol=1e-6) and abs(dk + math.exp(-0.5)) < 1e-8
    print(f"(implicit function theorem and adjoint method; all agree with the closed forms: {agree})")


def main() -> None:
    start = time.perf_counter()
    for section in (seed_pullback, seed_rule, seed_polynomial, seed_babysqrt, seed_jacobian, seed_mysum, solvers):
        section()
    print(f"\nThe tour took {time.perf_counter() - start:.1f} s.")
