"""Functions whose generated code the golden-file tests pin (kept apart so their lines stay put)."""

import dataclasses
import math

import numpy as np


def f(a, b):
    return a / (a + b * b)


def sin_cos(x):
    return math.sin(math.cos(x))


def babysqrt(x, t=None, n=10):
    if t is None:
        t = (1 + x) / 2
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


def early_return(x, y):
    if x > 2:
        return x * y
    if y > 1:
        if x < 0:
            return 0.0
        x = x * 3
    return x + y


def structures(a, b):
    t = (a, b * 2)
    u, v = t
    d = {"k": u, "j": v}
    return d["k"] * d["j"] + t[0]


def make_affine(w, b):
    def affine(x):
        return w * x + b

    return affine


def keywords(x, y):
    def inner(a, *, scale=2.0):
        return a * scale

    return inner(x, scale=y) + inner(y)


@dataclasses.dataclass
class Linear:
    w: float
    b: float

    def __call__(self, x):
        return self.w * x + self.b


# ----- part 2: loops, comprehensions, writes -------------------------------------------------------


def mysum(X):
    total = 0.0
    for i in range(len(X)):
        total += X[i]
    return total


def sine_chain(x, n):
    for _ in range(n):
        x = math.sin(x) * 1.01 + 0.1
    return x


def halve_until_small(x):
    steps = 0
    while x > 1.0:
        x = x / 2.0
        steps += 1
    return x * steps


def skip_and_stop(xs, w):
    total = 0.0
    for x in xs:
        if x < 0:
            continue
        if x > 2.5:
            break
        total = total + x * w
    return total


def squares_of_positives(xs):
    return sum([x * x for x in xs if x > 0])


def fill_buffer(x, w):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = x[i] * w
    return out.sum()


from chainrules import checkpoint  # noqa: E402 (imported here: the subjects above keep their lines)


def checkpointed_steps(u, rate):
    @checkpoint
    def step(v):
        return v + 0.1 * np.sin(rate * v)

    for _ in range(2):
        u = step(u)
    return np.sum(u)
