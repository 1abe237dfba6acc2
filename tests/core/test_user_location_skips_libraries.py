"""Errors raised while a library function the user called runs on an engine's values (NumPy's
``np.mean`` converting a list of dual numbers, ``statistics.covariance`` meeting one) name the user's
line, not the library's: forward mode had named ``numpy/_core/_methods.py`` and ``statistics.py``."""

import statistics

import numpy as np
import pytest

import chainrules as cr


def mean_of_a_list(x):
    return np.mean([x[0], x[1]])  # <- np.mean


def statistics_covariance(x):  # (a function without a rule)
    return statistics.covariance([x[0], x[1]], [1.0, 3.0])  # <- statistics.covariance


def _line(marker: str) -> int:
    with open(__file__) as source:
        return next(i for i, text in enumerate(source, 1) if text.rstrip().endswith(f"# {marker}"))


@pytest.mark.parametrize(
    "f, marker", [(mean_of_a_list, "<- np.mean"), (statistics_covariance, "<- statistics.covariance")]
)
@pytest.mark.parametrize("run", ["forward", "tape"])
def test_the_message_names_the_users_line(f, marker, run):
    x = np.array([0.5, 1.5])
    with pytest.raises((TypeError, cr.ChainRulesError)) as info:
        if run == "forward":
            cr.jacobian(f, x, mode="forward")
        else:
            cr.gradient(f, x, engine="tape")
    assert f"{__file__}:{_line(marker)}" in str(info.value), str(info.value)
