"""The eighth corpus (programs that define their own rules): the user's rules themselves through
``chainrules.testing`` (``test_programs.py`` runs its programs through every engine and mode)."""

from __future__ import annotations

import numpy as np
import programs_corpus_eight as c8

import chainrules as cr
from chainrules.testing import nondiff, test_frule, test_rrule

# ----- the user's rules, one tester call each -------------------------------------------------------

X3 = np.array([0.4, -0.6, 0.9])


def test_rrule_logsumexp():
    test_rrule(c8.logsumexp, X3)
    test_rrule(c8.logsumexp, np.array([1000.0, 999.0]))


def test_frule_logsumexp():
    test_frule(c8.logsumexp, X3)


def test_rrule_softmax_with_axis():
    test_rrule(c8.softmax, np.array([[0.2, -0.5, 1.0], [1.5, 0.3, -0.2]]), fkwargs={"axis": 0})
    test_rrule(c8.softmax, X3)


def test_scalar_rules():
    test_rrule(c8.softplus, X3)
    test_frule(c8.softplus, X3)
    test_rrule(c8.smooth_relu, X3, 4.0)
    test_frule(c8.smooth_relu, X3, 4.0)


def test_rrule_and_frule_euler_step():
    test_rrule(c8.euler_step, X3, 0.8, 0.05)
    test_frule(c8.euler_step, X3, 0.8, 0.05)


def test_rrule_spring_energy_method():
    test_rrule(c8.Spring.energy, c8.Spring(2.0, 1.0), np.array([0.0, 1.1, 2.3, 2.9]))


def test_rrule_spring_energy_bound_method():
    test_rrule(c8.Spring(2.0, 1.0).energy, np.array([0.0, 1.1, 2.3, 2.9]))


def test_rrule_matvec_inplaceable():
    test_rrule(c8.matvec, np.arange(6.0).reshape(2, 3), X3)


def test_frule_cube_root():
    test_frule(c8.cube_root, np.array([1.5, 2.0, 3.5]))


def test_rrule_non_differentiable_bin_index():
    test_rrule(c8.bin_index, 1.7, nondiff(c8.TABLE_EDGES))


def test_rrule_affine_dataclass():
    test_rrule(
        c8.affine_apply, c8.Affine(np.array([[0.5, -0.2], [0.1, 0.9]]), np.array([0.2, -0.1])), np.array([1.0, 2.0])
    )


def test_rrule_huber_keyword():
    test_rrule(c8.huber, np.array([0.3, -2.0, 0.8]), fkwargs={"delta": 1.5})
    test_rrule(c8.huber, np.array([0.3, -2.0, 0.8]), 1.5)


def test_rrule_rbf_kernel_callable_object():
    test_rrule(c8.RBFKernel(0.7), np.array([0.0, 0.5, 1.5]), np.array([0.2, 1.0]))


def test_rrule_trapezoid_via_ad():
    test_rrule(c8.trapezoid_of, np.sin, 0.2, 1.5, nondiff(5))
    test_rrule(c8.trapezoid_of, lambda t: np.exp(0.3 * t) * t, 0.2, 1.5, nondiff(3))


def test_rrule_gaussian_nll_namedtuple():
    test_rrule(c8.gaussian_nll, c8.Pair(np.array([0.2, -0.1]), np.array([0.3, -0.2])), np.array([0.5, 0.4]))


def test_rrule_polar_tuple_output():
    test_rrule(c8.polar_to_cartesian, 1.5, 0.6)


def test_rrule_weighted_total_list():
    test_rrule(c8.weighted_total, [(0.5, 1.0), (1.5, -2.0)])


def test_rrule_dict_energy():
    test_rrule(c8.dict_energy, {"a": 0.7, "x": np.array([0.3, -0.2, 0.5])})


def test_rrule_masked_mean():
    test_rrule(c8.masked_mean, np.array([0.3, 1.2, -0.5]), np.array([True, False, True]))


def test_rrule_make_precision():
    test_rrule(c8.make_precision, 0.8)


def test_rrule_scale_rows_typed():
    test_rrule(c8.scale_rows, np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.3, 1.5]))


def test_rrule_log_det_spd():
    test_rrule(c8.log_det_spd, np.array([[2.0, 0.3], [0.3, 1.5]]))


def test_rrule_and_frule_apply_n_times():
    test_rrule(c8.apply_n_times, np.sin, X3, nondiff(3))
    test_frule(c8.apply_n_times, np.sin, X3, nondiff(3))


def test_rrule_fixed_point():
    A = np.array([[0.3, -0.1], [0.2, 0.25]])

    def g(x, th):
        return np.tanh(A @ x + th)

    test_rrule(c8.fixed_point_of, g, np.array([0.5, -0.2]), nondiff(np.zeros(2)))


def test_rrule_mean_var_tuple_output():
    test_rrule(c8.mean_var, np.array([0.5, 2.0, -1.0, 0.3]))


def test_rrule_gather_rows_inplaceable():
    test_rrule(c8.gather_rows, np.arange(15.0).reshape(5, 3), nondiff(np.array([0, 2, 2])))


def test_rrule_and_frule_quadratic_callable():
    q = c8.Quadratic(np.array([[2.0, 0.3], [0.3, 1.0]]), np.array([0.1, -0.2]))
    test_rrule(q, np.array([0.5, -0.3]))
    test_frule(q, np.array([0.5, -0.3]))


def test_rrule_and_frule_tanh_layer():
    W = np.array([[0.2, 0.1, -0.3], [0.5, -0.4, 0.2]])
    test_rrule(c8.tanh_layer, W, X3)
    test_frule(c8.tanh_layer, W, X3)
    test_rrule(c8.tanh_layer, W.astype(np.float32), X3.astype(np.float32))
    test_frule(c8.tanh_layer, W.astype(np.float32), X3.astype(np.float32))


def test_rrule_straight_through():
    test_rrule(c8.clamp_grad_identity, X3)
    assert cr.rrule(c8.clamp_grad_identity, X3)[1](X3)[1] is X3
