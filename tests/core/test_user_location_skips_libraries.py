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
    "f, marker, run",
    [
        (mean_of_a_list, "<- np.mean", "tape"),
        (statistics_covariance, "<- statistics.covariance", "forward"),
        (statistics_covariance, "<- statistics.covariance", "tape"),
    ],
)
def test_the_message_names_the_users_line(f, marker, run):
    x = np.array([0.5, 1.5])
    with pytest.raises((TypeError, cr.ChainRulesError)) as info:
        if run == "forward":
            cr.jacobian(f, x, mode="forward")
        else:
            cr.gradient(f, x, engine="tape")
    assert f"{__file__}:{_line(marker)}" in str(info.value), str(info.value)


def test_forward_mode_reads_a_list_of_dual_numbers_as_numpy_does():
    # np.mean's forward rule takes the list as the array NumPy makes of it
    np.testing.assert_allclose(cr.jacobian(mean_of_a_list, np.array([0.5, 1.5]), mode="forward"), [0.5, 0.5])
