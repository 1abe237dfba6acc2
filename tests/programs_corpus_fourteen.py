"""A fourteenth corpus of whole programs: the SciPy families that gained rules last, as scientific code uses
them. ``scipy.signal`` filters and their initial conditions (``lfilter`` with ``zi``, ``lfilter_zi``,
``sosfilt``, ``filtfilt``, ``sosfiltfilt``, ``savgol_filter``, ``detrend``, ``hilbert``) and 2-D convolutions
(``convolve2d``, ``correlate2d``, ``oaconvolve``); ``scipy.special``'s hypergeometric, elliptic, Airy, Fresnel,
sine/cosine integral, Lambert W, incomplete beta and Owen's T functions; ``scipy.stats``' summary statistics
(``zscore``, ``zmap``, ``skew``, ``kurtosis``, ``moment``, ``sem``, ``variation``, the means, ``trim_mean``,
``iqr``, ``median_abs_deviation``, ``entropy``, ``pearsonr``); ``scipy.ndimage``'s rank filters and
interpolations (``shift``, ``zoom``, ``affine_transform``, ``rotate``, ``map_coordinates`` at orders 0 to 5);
``scipy.linalg``'s matrix functions (``funm``, ``cosm``, ``sinm``, ``tanhm``, ``signm``,
``fractional_matrix_power``, ``expm_frechet``) and generalized eigenproblems of types 2 and 3; ``np.unique``;
spline integrals and antiderivatives, Akima interpolants, RBF surrogates, ``splrep``/``splev`` and ``interpn``;
mixed with loops, closures, dataclasses and lists.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.interpolate
import scipy.linalg
import scipy.ndimage
import scipy.signal
import scipy.special
import scipy.stats
from program_checks import SCIPY_WRAPPER, SCIPY_WRAPPER_FORWARD, new_corpus

PROGRAMS, program = new_corpus()

RNG = np.random.default_rng(1414)

# a SciPy Python function with a rule, called inside the function differentiated: the tape sees its operations only
RULE_ON_TAPE = {"tape": SCIPY_WRAPPER}
# a SciPy Python wrapper with a rule (and a forward rule): the tape and forward mode see the operations inside it
WRAPPER = {"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}

SIGNAL = np.array([0.3, 1.1, 0.7, -0.2, 0.5, 1.4, 0.9, 0.1, -0.4, 0.6])
IMAGE = RNG.normal(size=(6, 5))
SAMPLES = np.array([0.42, 1.37, 0.88, 2.15, 0.61, 1.02, 1.74, 0.29])


# ----- scipy.signal --------------------------------------------------------------------------------


@program(np.array([0.5, 0.3, 0.2]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def fir_design_loss_against_a_target_response(taps):
    # a low-pass FIR filter fitted to a target output on a test signal, with a smoothness penalty on the taps
    target = scipy.signal.lfilter(np.array([0.25, 0.5, 0.25]), np.array([1.0]), SIGNAL)
    y = scipy.signal.lfilter(taps, np.array([1.0]), SIGNAL)
    return np.sum((y - target) ** 2) + 0.1 * np.sum(np.diff(taps) ** 2)


@program(np.array([0.6, 0.25]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def kalman_like_recurrence_by_lfilter_with_zi(gains):
    # x[t] = a x[t-1] + k u[t], run in two blocks, the state carried from the first into the second
    b, den = gains[1:], np.concatenate([np.ones(1), -gains[:1]])
    zi = scipy.signal.lfilter_zi(b, den) * SIGNAL[0]
    first, z = scipy.signal.lfilter(b, den, SIGNAL[:5], zi=zi)
    second, _ = scipy.signal.lfilter(b, den, SIGNAL[5:], zi=z)
    estimate = np.concatenate([first, second])
    return np.sum((estimate - SIGNAL) ** 2)


@program(np.array([0.2, 0.4, 0.2, -0.3, 0.15]), hessian=True, refuses=RULE_ON_TAPE)
def second_order_sections_in_cascade(section):
    # two identical biquads in cascade, the sections' coefficients differentiated
    row = np.concatenate([section[:3], np.array([1.0]), section[3:]])
    sos = np.stack([row, row])
    y = scipy.signal.sosfilt(sos, SIGNAL)
    return np.sum(y**2) + 0.5 * np.sum(y[-3:])


@program(SIGNAL, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def zero_phase_smoothing_by_filtfilt(x):
    b, a = np.array([0.2, 0.3]), np.array([1.0, -0.5])
    smooth = scipy.signal.filtfilt(b, a, x, padlen=3)
    return np.sum((smooth - x) ** 2) + 0.1 * np.sum(np.diff(smooth) ** 2)


@program(np.array([0.3, -0.4]), hessian=True, refuses=RULE_ON_TAPE)
def sosfiltfilt_with_a_tuned_pole(pole):
    numerators = np.array([[0.2, 0.1, 0.0], [0.3, 0.0, 0.0]])
    denominators = np.stack([np.ones(2), pole, np.zeros(2)], axis=1)
    sos = np.concatenate([numerators, denominators], axis=1)
    y = scipy.signal.sosfiltfilt(sos, SIGNAL, padlen=4)
    return np.sum((y - 0.5) ** 2)


@program(SIGNAL + 0.3 * np.sin(np.arange(10.0)), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def denoising_objective_by_savgol_and_median(x):
    # a denoised estimate fitted to the data, its smoothness measured by a Savitzky-Golay fit and its second
    # derivative, and a median filter's robust residual
    smooth = scipy.signal.savgol_filter(x, 5, 2)
    curvature = scipy.signal.savgol_filter(x, 5, 3, deriv=2)
    robust = scipy.ndimage.median_filter(x, size=3)
    return np.sum((x - smooth) ** 2) + 0.1 * np.sum(curvature**2) + 0.05 * np.sum((x - robust) ** 2)


@program(np.array([0.8, 0.3]), [0.4, 1.1, 0.8, 1.6, 1.2, 0.7, 0.9], refuses=RULE_ON_TAPE)
def smoothing_a_list_of_readings(gains, readings):
    # sensor readings kept in a Python list, smoothed at their edges by the fitted polynomials (mode 'interp')
    smooth = scipy.signal.savgol_filter(readings, 5, 2)
    rough = scipy.signal.savgol_filter(readings, 3, 1, mode="nearest")
    return np.sum((gains[0] * smooth + gains[1] * rough - 1.0) ** 2)


@program(SIGNAL, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def detrended_envelope_by_hilbert(x):
    flat = scipy.signal.detrend(x)
    linear = scipy.signal.detrend(x, type="constant")
    analytic = scipy.signal.hilbert(flat)
    envelope2 = np.real(analytic * np.conj(analytic))
    return np.sum(envelope2) + 0.2 * np.sum(linear**2)


@program(IMAGE, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def edge_energy_by_convolve2d_and_correlate2d(image):
    sobel = np.array([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]])
    gx = scipy.signal.convolve2d(image, sobel, mode="same", boundary="symm")
    gy = scipy.signal.correlate2d(image, sobel.T, mode="valid")
    return np.sum(gx**2) + 0.5 * np.sum(gy**2)


@program(np.array([[0.1, 0.3], [0.2, -0.1]]), hessian=True, refuses=RULE_ON_TAPE)
def deblurring_kernel_fit_by_oaconvolve(kernel):
    blurred = scipy.signal.oaconvolve(IMAGE, kernel, mode="same")
    reference = scipy.signal.convolve2d(IMAGE, np.array([[0.2, 0.2], [0.2, 0.1]]), mode="same")
    return np.sum((blurred - reference) ** 2) + 0.01 * np.sum(kernel**2)


@dataclasses.dataclass
class FilterBank:
    poles: np.ndarray
    gain: float = 0.5

    def band(self, i, x):
        b, a = self.gain * (1.0 - self.poles[i : i + 1]), np.concatenate([np.ones(1), -self.poles[i : i + 1]])
        return scipy.signal.lfilter(b, a, x)


@program(np.array([0.2, 0.5, 0.8]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def filter_bank_band_energies_of_a_dataclass(poles):
    bank = FilterBank(poles)
    targets = [0.9, 1.1, 1.4]
    energies = [np.sum(bank.band(i, SIGNAL) ** 2) for i in range(len(targets))]
    return sum((e - t) ** 2 for e, t in zip(energies, targets))


@program(SIGNAL, hessian=True, refuses=RULE_ON_TAPE)
def morphological_envelope_by_one_dimensional_rank_filters(x):
    upper = scipy.ndimage.maximum_filter1d(x, 3)
    lower = scipy.ndimage.minimum_filter1d(x, 3, mode="nearest")
    middle = 0.5 * (upper + lower)
    return np.sum((x - middle) ** 2) + 0.1 * np.sum((upper - lower) ** 2)


# ----- scipy.special -------------------------------------------------------------------------------


@program(np.array([0.4, 0.9]), hessian=True, nested=True)
def pendulum_period_by_elliptic_integrals(amplitude):
    # the exact period of a pendulum, 4 K(m) with m = sin^2(theta0 / 2), and the arc length of an ellipse by E
    m = np.sin(amplitude / 2.0) ** 2
    period = 4.0 * scipy.special.ellipk(m)
    arc = scipy.special.ellipe(m) + scipy.special.ellipkinc(amplitude, m) - scipy.special.ellipeinc(amplitude, m)
    near_one = scipy.special.ellipkm1(1.0 - m)
    return np.sum(period**2) + np.sum(arc) + 0.1 * np.sum(near_one)


@program(np.array([-1.2, 0.3, 1.1]), hessian=True, nested=True)
def quantum_well_by_airy_functions(z):
    # a triangular well's wavefunction Ai and its derivative, Bi's growth weighted down
    ai, aip, bi, bip = scipy.special.airy(z)
    return np.sum(ai**2 + 0.3 * aip**2) + 0.01 * np.sum(bi * bip)


@program(np.array([0.4, 1.3, 2.1]), hessian=True, nested=True)
def diffraction_by_fresnel_integrals(u):
    s, c = scipy.special.fresnel(u)
    intensity = 0.5 * ((c + 0.5) ** 2 + (s + 0.5) ** 2)
    return np.sum(intensity)


@program(np.array([0.7, 1.8, 3.2]), hessian=True)
def antenna_radiation_by_sici_and_shichi(x):
    si, ci = scipy.special.sici(x)
    shi, chi = scipy.special.shichi(0.5 * x)
    return np.sum(si**2 - ci * 0.3) + np.sum(shi - 0.2 * chi)


@program(np.array([0.3, 1.4, 2.2]), hessian=True, nested=True)
def lambert_w_and_dilogarithm_growth(x):
    w = np.real(scipy.special.lambertw(x))
    return np.sum(w**2) + np.sum(scipy.special.spence(1.0 + x)) + np.sum(scipy.special.exprel(0.5 * x))


@program(np.array([0.2, 0.5, 0.7]), 0.4, hessian=True, nested=True)
def beta_probabilities_and_quantile_by_betainc(x, level):
    # a Beta(2.5, 1.7) prior's probabilities at the thresholds and its quantile at a level (the shapes have no
    # closed-form derivative, and are held constant)
    a, b = 2.5, 1.7
    cdf = scipy.special.betainc(a, b, x)
    sf = scipy.special.betaincc(a, b, x)
    quantile = scipy.special.betaincinv(a, b, level * np.ones(2) + np.array([0.0, 0.3]))
    return np.sum(cdf * (1.0 - sf)) + np.sum(quantile**2) + np.sum(scipy.special.betaincinv(a, b, x))


@program(np.array([0.5, 1.2]), hessian=True)
def confluent_hypergeometric_sums(z):
    total = 0.0
    for a, b in [(0.5, 1.5), (1.0, 2.5)]:
        total = total + np.sum(scipy.special.hyp1f1(a, b, z)) + np.sum(scipy.special.hyperu(a, b, z + 1.0))
    return total + np.sum(scipy.special.hyp0f1(1.5, z)) + np.sum(scipy.special.hyp2f1(0.5, 1.0, 2.0, 0.3 * z))


@program(np.array([0.4, 1.1, 2.0]), hessian=True, nested=True)
def bivariate_normal_tail_by_owens_t(h):
    a = 0.7
    t = scipy.special.owens_t(h, a)
    return (
        np.sum(t * scipy.special.rgamma(h + 1.0))
        + np.sum(scipy.special.poch(h, 2.5))
        + np.sum(scipy.special.struve(1.0, h))
    )


# ----- scipy.stats summaries -----------------------------------------------------------------------


@program(SAMPLES, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def statistics_based_loss_on_standardized_data(x):
    # a distribution-shape loss: standardized values near a target, skewness and excess kurtosis near zero
    z = scipy.stats.zscore(x)
    target = np.linspace(-1.5, 1.5, x.size)
    return np.sum((np.sort(z) - target) ** 2) + scipy.stats.skew(x) ** 2 + 0.1 * scipy.stats.kurtosis(x) ** 2


@dataclasses.dataclass
class Batch:
    values: np.ndarray
    reference: np.ndarray


@program(RNG.normal(size=(3, 5)) + 2.0, hessian=True, refuses=RULE_ON_TAPE)
def batch_statistics_of_a_dataclass(values):
    batch = Batch(values, RNG.normal(size=(3, 5)) * 0.0 + np.linspace(1.0, 3.0, 5))
    drift = scipy.stats.zmap(batch.values, batch.reference, axis=1)
    spread = scipy.stats.sem(batch.values, axis=1) + scipy.stats.variation(batch.values, axis=1)
    third = scipy.stats.moment(batch.values, moment=3, axis=1)
    return np.sum(drift**2) + np.sum(spread) + 0.1 * np.sum(third)


@program(SAMPLES + 0.5, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def means_of_positive_rates(rates):
    means = [scipy.stats.gmean(rates), scipy.stats.hmean(rates), scipy.stats.pmean(rates, 2.5)]
    trimmed = scipy.stats.trim_mean(rates, 0.2)
    return sum((m - trimmed) ** 2 for m in means)


@program(SAMPLES, refuses=RULE_ON_TAPE)
def robust_scale_by_iqr_and_mad(x):
    scale = scipy.stats.iqr(x) + scipy.stats.median_abs_deviation(x, scale="normal")
    return np.sum(((x - np.median(x)) / scale) ** 2)


@program(np.array([1.3, 0.4, 2.2, 0.9]), np.array([0.8, 1.1, 1.7, 0.6]), hessian=True, refuses=RULE_ON_TAPE)
def divergence_and_correlation_of_histograms(p, q):
    kl = scipy.stats.entropy(p, q)
    h = scipy.stats.entropy(p, base=2.0)
    r = scipy.stats.pearsonr(p, q).statistic
    return kl + 0.5 * h - r


# ----- scipy.ndimage -------------------------------------------------------------------------------


@program(np.array([0.3, -0.45]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def image_registration_by_spline_shift(offset):
    # recover the translation between two images: the moving image shifted by the offset against the fixed one
    fixed = scipy.ndimage.shift(IMAGE, (0.5, -0.25), order=3, mode="nearest")
    moved = scipy.ndimage.shift(IMAGE, offset, order=3, mode="nearest")
    return np.sum((moved - fixed) ** 2)


@program(np.array([[1.05, 0.1], [-0.05, 0.95]]), np.array([0.2, -0.1]), hessian=True, refuses=RULE_ON_TAPE)
def affine_registration_by_affine_transform(matrix, offset):
    warped = scipy.ndimage.affine_transform(IMAGE, matrix, offset=offset, order=1, mode="reflect")
    return np.sum((warped - IMAGE) ** 2)


@program(0.3, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def rotation_angle_alignment(angle):
    target = scipy.ndimage.rotate(IMAGE, 12.0, reshape=False, order=3, mode="mirror")
    rotated = scipy.ndimage.rotate(IMAGE, angle * 40.0, reshape=False, order=3, mode="mirror")
    return np.sum((rotated - target) ** 2)


@program(IMAGE, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def multiscale_pyramid_by_zoom_and_rank_filters(image):
    levels = []
    current = image
    for order in (1, 2):
        coarse = scipy.ndimage.zoom(current, 0.5, order=order, mode="nearest")
        levels.append(coarse)
        current = scipy.ndimage.zoom(coarse, 2.0, order=order, mode="nearest")
    opened = scipy.ndimage.maximum_filter(scipy.ndimage.minimum_filter(image, size=2), size=2)
    ranked = scipy.ndimage.percentile_filter(image, 75, size=3) + scipy.ndimage.rank_filter(image, 1, size=(2, 2))
    return sum(np.sum(c**2) for c in levels) + np.sum((opened - image) ** 2) + 0.1 * np.sum(ranked)


@program(np.array([[0.4, 1.7, 3.2], [1.1, 2.4, 0.8]]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def landmark_sampling_by_map_coordinates(coords):
    total = 0.0
    for order in (0, 1, 3, 5):
        samples = scipy.ndimage.map_coordinates(IMAGE, coords, order=order, mode="mirror")
        total = total + np.sum(samples**2) * (order + 1.0)
    return total


# ----- scipy.linalg matrix functions ---------------------------------------------------------------


@program(np.array([[0.3, 0.1], [-0.2, 0.4]]), refuses=WRAPPER)
def matrix_function_network_layer(W):
    # a layer h = tanh(W) x + sin(W) cos(W) x, then the readout; two layers share W
    layer = scipy.linalg.tanhm(W) + scipy.linalg.sinm(W) @ scipy.linalg.cosm(W)
    x = np.array([0.7, -0.4])
    for _ in range(2):
        x = layer @ x
    return np.sum(x**2)


@program(np.array([[2.0, 0.3], [0.3, 1.5]]), refuses=WRAPPER)
def fractional_diffusion_by_matrix_powers(L):
    u0 = np.array([1.0, 0.5])
    half = scipy.linalg.fractional_matrix_power(L, 0.5)
    return np.sum((half @ u0) ** 2) + 0.2 * np.trace(half @ L)


@program(np.array([[0.2, 0.5], [-0.3, 0.1]]), np.array([[0.1, 0.0], [0.4, -0.2]]), refuses=WRAPPER)
def expm_sensitivity_by_expm_frechet(A, E):
    value, frechet = scipy.linalg.expm_frechet(A, E)
    return np.sum(value * frechet) + np.sum(frechet**2)


@program(np.array([[1.0, 0.4], [0.2, 0.8]]), hessian=True, refuses=WRAPPER)
def custom_matrix_function_by_funm(A):
    def softplus(z):
        return np.log1p(np.exp(z))

    return np.sum(scipy.linalg.funm(A + A.T, softplus) ** 2)


@program(np.array([[2.0, 0.5], [0.1, -1.5]]), hessian=True, refuses=WRAPPER)
def sign_projector_by_signm(A):
    projector = 0.5 * (np.eye(2) + scipy.linalg.signm(A))
    return np.sum(projector @ np.array([[1.0, 0.2], [0.3, 0.5]]))


@program(np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]]), hessian=True, refuses=WRAPPER)
def generalized_eigenproblems_of_types_two_and_three(A):
    B = np.array([[1.5, 0.2, 0.0], [0.2, 1.0, 0.1], [0.0, 0.1, 2.0]])
    w2, V2 = scipy.linalg.eigh(A, B, type=2)
    w3 = scipy.linalg.eigh(A, B, type=3, eigvals_only=True)
    return np.sum(w2**2) + np.sum(w3) + np.sum((V2[:, 0] * np.sign(V2[0, 0])) ** 2)


@program(np.array([0.5, 1.2, 0.9, 2.0, 1.6, 0.3]), hessian=True, nested=True)
def distinct_values_by_np_unique(x):
    # the sorted distinct values, their gaps penalized, and the data rebuilt from them by the inverse indices
    values, inverse = np.unique(x, return_inverse=True)
    weights = np.linspace(1.0, 2.0, x.size)
    return np.sum(np.diff(values) ** 2) + np.sum(values[inverse] ** 2 * weights)


# ----- scipy.interpolate ---------------------------------------------------------------------------


@program(np.array([0.2, 0.9, 0.4, 1.3, 0.8]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def spline_integral_objective(y):
    # the energy of a cubic spline through the values: its integral, its slope's integral, its antiderivative
    x = np.linspace(0.0, 2.0, 5)
    s = scipy.interpolate.CubicSpline(x, y)
    area = s.integrate(0.0, 2.0)
    slope_energy = s.derivative().integrate(0.1, 1.9)
    anti = s.antiderivative()
    b = scipy.interpolate.make_interp_spline(x, y, k=3)
    return (area - 1.0) ** 2 + slope_energy**2 + np.sum(anti(x) ** 2) + b.integrate(0.0, 1.5) + b.antiderivative()(1.0)


@program(np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.2]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def density_estimate_by_a_bspline_and_its_antiderivative(theta):
    # a density exp(spline) normalized by its integral; the log-likelihood of the samples and a CDF at a point
    k = 3
    t = np.concatenate([np.zeros(k), np.linspace(0.0, 2.5, 4), np.full(k, 2.5)])
    log_density = scipy.interpolate.BSpline(t, theta, k)
    grid = np.linspace(0.0, 2.5, 11)
    density = scipy.interpolate.make_interp_spline(grid, np.exp(log_density(grid)), k=3)
    total = density.integrate(0.0, 2.5)
    cdf = density.antiderivative()
    return -np.sum(log_density(SAMPLES)) + SAMPLES.size * np.log(total) + (cdf(1.0) / total - 0.5) ** 2


@program(0.8, [0.3, 0.9, 0.5, 1.2, 0.8, 1.4, 1.1], refuses=RULE_ON_TAPE)
def calibration_from_a_list_of_measurements(scale, measurements):
    # measurements kept in a Python list: zero-phase filtered, their spread, a spline's area and a smoothing fit
    x = np.linspace(0.0, 3.0, 7)
    filtered = scipy.signal.filtfilt(np.array([0.3, 0.2]), np.array([1.0, -0.4]), measurements, padlen=2)
    spread = scipy.stats.iqr(measurements) + scipy.stats.median_abs_deviation(measurements)
    spread = spread + scipy.stats.sem(measurements)
    area = scipy.interpolate.CubicSpline(x, measurements).integrate(0.0, 3.0)
    fit = scipy.interpolate.splev(np.array([0.4, 1.9]), scipy.interpolate.splrep(x, measurements))
    return scale * np.sum(filtered**2) + spread * area + scale**2 * np.sum(fit)


@program(np.array([0.1, 0.6, 0.4, 1.1, 0.9, 1.5]), hessian=True, refuses=RULE_ON_TAPE)
def akima_profile_fit(y):
    x = np.linspace(0.0, 1.0, 6)
    query = np.array([0.05, 0.33, 0.61, 0.95])
    total = 0.0
    for method in ("akima", "makima"):
        a = scipy.interpolate.Akima1DInterpolator(x, y, method=method)
        total = total + np.sum((a(query) - np.sin(query)) ** 2)
    return total


@program(np.array([0.3, -0.1, 0.8, 0.5, 0.2]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def rbf_surrogate_fit(values):
    centers = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])
    surrogate = scipy.interpolate.RBFInterpolator(centers, values, kernel="thin_plate_spline")
    query = np.array([[0.25, 0.25], [0.75, 0.4], [0.3, 0.9]])
    target = np.array([0.1, 0.6, 0.4])
    return np.sum((surrogate(query) - target) ** 2) + 0.1 * np.sum(values**2)


@program(np.array([0.2, 0.7, 0.4, 0.9, 1.3, 0.8, 0.5]), hessian=True, refuses=RULE_ON_TAPE)
def spline_smoothness_by_splrep_and_splev(y):
    x = np.linspace(0.0, 3.0, 7)
    tck = scipy.interpolate.splrep(x, y, s=0)
    fine = np.linspace(0.0, 3.0, 13)
    curvature = scipy.interpolate.splev(fine, tck, der=2)
    return np.sum(scipy.interpolate.splev(fine, tck) ** 2) + 0.01 * np.sum(curvature**2)


@program(np.array([[0.2, 0.6], [0.7, 0.3], [1.6, 1.1]]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def lookup_table_by_interpn(points):
    grid = (np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.5, 1.5]))
    table = np.array([[0.1, 0.4, 0.3], [0.8, 0.2, 0.5], [0.6, 0.9, 1.2]])
    vals = scipy.interpolate.interpn(grid, table, points)
    return np.sum(vals**2) + np.sum(np.sin(vals))
