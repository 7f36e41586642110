"""Rank-normalised split R-hat and bulk / tail effective sample size, vectorised over array elements.

:func:`rank_diagnostics` returns, for every element of a ``(chain, draw, K)`` array of posterior draws, the
three convergence diagnostics of Vehtari et al. (2021), "Rank-normalization, folding, and localization: an
improved R-hat for assessing convergence of MCMC" (Bayesian Analysis 16(2):667-718), exactly as ArviZ 0.23
defines them:

* ``az.rhat(..., method="rank")``: the larger of the split R-hat of the rank-normalised draws and of the
  rank-normalised folded draws ``|x - median(x)|``;
* ``az.ess(..., method="bulk")``: the split ESS of the rank-normalised draws;
* ``az.ess(..., method="tail")``: the smaller of the split ESS of the indicators ``x <= q`` for the 5% and
  95% quantiles ``q``.

ArviZ evaluates these one element at a time in Python; here every step (ranks, normal scores, FFT
autocovariance, Geyer's initial positive and initial monotone sequences) runs on a block of elements at
once. Each step performs ArviZ's floating-point operations in ArviZ's order, sums included (sequential
where ArviZ's loops are sequential, numpy's pairwise summation over the same terms where ArviZ calls numpy),
so the results agree with ArviZ's to rounding and, with the same numpy and scipy, normally bit for bit.
Elements are processed in blocks so that memory stays bounded for large ``K``.

Details of ArviZ's definitions that are reproduced here:

* the draws of each chain are split into a first and a last half of ``draws // 2`` draws (an odd draw count
  drops the middle draw); the split chains are ordered as all first halves, then all second halves;
* ranks are "average" ranks over all split draws of an element, back-transformed to normal scores with
  ``ndtri((rank - 3/8) / (size + 1/4))`` (Blom's offset);
* the variances in R-hat and in the ESS's variance of chain means are ArviZ's one-pass formula
  ``(sum(x^2)/n - (sum(x)/n)^2) * n/(n - 1)`` with sequential sums (its Numba kernel, used whenever Numba is
  installed; without Numba ArviZ uses ``np.var``, which differs by rounding, and by more only where every
  split chain is constant, when R-hat divides by the one-pass formula's rounding residue instead of 0);
* the tail quantile is ``scipy.stats.mstats.mquantiles(x, p, alphap=1, betap=1)`` (R's type 7, but with
  its own interpolation arithmetic, which decides ``x <= q`` on tied values) over the unsplit draws of an
  element, and the indicator is formed before the split;
* an element whose (split, transformed) draws are constant to within ``np.finfo(float).resolution`` has ESS
  equal to its number of split draws; a constant element's R-hat is NaN (0/0);
* an element with any NaN draw, or fewer than 4 draws, gives NaN for all three; fewer than 2 chains gives
  NaN R-hat.
"""

from __future__ import annotations

import numpy as np
from scipy.fftpack import next_fast_len
from scipy.special import ndtri

__all__ = ["rank_diagnostics"]

#: values (chain x draw x element) in one block of elements; the working arrays of a block are a small
#: multiple of this (the FFT buffer, ranks, normal scores), about 150 MB at the default
BLOCK_VALUES = 2**21
#: the two tail probabilities of the tail ESS
TAIL_PROBS = (0.05, 0.95)


def rank_diagnostics(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-normalised split R-hat, bulk ESS and tail ESS of every element.

    x: (chain, draw, K) float array. Returns (r_hat, ess_bulk, ess_tail), each shape (K,), equal to
    ArviZ's az.rhat (method "rank"), az.ess(method="bulk") and az.ess(method="tail") of each element.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"expected a (chain, draw, K) array, got shape {x.shape}")
    n_chain, n_draw, k_total = x.shape
    r_hat = np.full(k_total, np.nan)
    ess_bulk = np.full(k_total, np.nan)
    ess_tail = np.full(k_total, np.nan)
    # ArviZ's shape checks: at least 4 draws for all three, at least 2 chains for R-hat
    if n_chain < 1 or n_draw < 4 or k_total == 0:
        return r_hat, ess_bulk, ess_tail

    block = max(1, min(k_total, BLOCK_VALUES // (n_chain * n_draw)))
    for start in range(0, k_total, block):
        stop = min(start + block, k_total)
        # (element, chain, draw), contiguous along draws
        xb = np.ascontiguousarray(np.moveaxis(x[:, :, start:stop], 2, 0))
        valid = ~np.isnan(xb).any(axis=(1, 2))
        if not valid.any():
            continue
        xb = xb[valid]
        idx = np.arange(start, stop)[valid]
        rh, eb, et = _block_diagnostics(xb)
        if n_chain >= 2:
            r_hat[idx] = rh
        ess_bulk[idx] = eb
        ess_tail[idx] = et
    return r_hat, ess_bulk, ess_tail


def _block_diagnostics(xb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three diagnostics of a block ``xb`` of shape (element, chain, draw) without NaNs."""
    n_elem, _, n_draw = xb.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        split = _split_chains(xb)
        z, ordered = _z_scale(split)
        rhat_bulk = _rhat(z)
        ess_bulk = _ess(z)
        del z

        # np.median of the split draws (an even number of them): the mean of the two middle order statistics
        mid = ordered.shape[1] // 2
        med = (ordered[:, mid - 1] + ordered[:, mid]) / 2
        # the quantiles are of the unsplit draws, the same values as the split draws when draws are even
        if n_draw % 2:
            del ordered
            ordered = None
        quantiles = _mquantiles_type7(xb.reshape(n_elem, -1), TAIL_PROBS, ordered)
        del ordered

        folded = np.abs(split - med[:, None, None])
        del split
        rhat_tail = _rhat(_z_scale(folded)[0])
        del folded
        # ArviZ's max(bulk, tail): the first argument unless the second is larger (so NaN in bulk wins)
        r_hat = np.where(rhat_tail > rhat_bulk, rhat_tail, rhat_bulk)

        # indicators of the unsplit draws, then split
        ess_q = [_ess(_split_chains(xb <= q[:, None, None]).astype(float)) for q in quantiles]
        # ArviZ's min(low, high): the first argument unless the second is smaller
        ess_tail = np.where(ess_q[1] < ess_q[0], ess_q[1], ess_q[0])
    return r_hat, ess_bulk, ess_tail


def _split_chains(a: np.ndarray) -> np.ndarray:
    """(element, chain, draw) -> (element, 2*chain, draw // 2): first halves of all chains, then last halves."""
    half = a.shape[-1] // 2
    return np.concatenate((a[..., :half], a[..., a.shape[-1] - half :]), axis=1)


def _z_scale(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Normal scores of the average ranks of each element's values (over all its chains and draws), and
    each element's values sorted, shape (element, chain * draw).

    The scores are ``ndtri((rankdata(a, "average") - 3/8) / (size + 1/4))`` per element: a tie group over
    sorted positions s..e (0-based) has average rank (s + e)/2 + 1, exactly, so the normal scores are
    looked up by s + e in a table of all 2*size - 1 possible values.
    """
    n_elem = a.shape[0]
    flat = a.reshape(n_elem, -1)
    size = flat.shape[1]
    c = 3 / 8
    order = np.argsort(flat, axis=1)
    ordered = np.take_along_axis(flat, order, axis=1)
    rank = np.arange(2 * size - 1) / 2 + 1  # average ranks indexed by s + e
    table = ndtri((rank - c) / (size - 2 * c + 1))
    # starts: the first sorted position of a tie group
    starts = np.ones((n_elem, size), dtype=bool)
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=starts[:, 1:])
    if starts.all():  # no ties: s = e = position
        scores = np.broadcast_to(table[::2], (n_elem, size))
    else:
        pos = np.arange(size)
        first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
        ends = np.empty_like(starts)
        ends[:, :-1] = starts[:, 1:]
        ends[:, -1] = True
        last = np.minimum.accumulate(np.where(ends, pos, size)[:, ::-1], axis=1)[:, ::-1]
        scores = table[first + last]
    z = np.empty((n_elem, size))
    np.put_along_axis(z, order, scores, axis=1)
    return z.reshape(a.shape), ordered


def _seq_sum(a: np.ndarray) -> np.ndarray:
    """Sum along the last axis, strictly left to right (as a plain loop accumulates)."""
    return np.cumsum(a, axis=-1)[..., -1]


def _onepass_var(a: np.ndarray, ddof: int) -> np.ndarray:
    """Variance along the last axis by ArviZ's one-pass formula (``stats_variance_1d``)."""
    n = a.shape[-1]
    var = _seq_sum(a * a) / n - (_seq_sum(a) / n) ** 2
    return var * (n / (n - ddof))


def _rhat(z: np.ndarray) -> np.ndarray:
    """Split R-hat of each element of ``z`` (element, chain, draw)."""
    n = z.shape[-1]
    chain_mean = np.mean(z, axis=-1)
    chain_var = _onepass_var(z, ddof=1)
    between = n * _onepass_var(chain_mean, ddof=1)
    within = np.mean(chain_var, axis=-1)
    return np.sqrt((between / within + n - 1) / n)


def _autocov(a: np.ndarray) -> np.ndarray:
    """Autocovariance at every lag along the last axis, by FFT (ArviZ's ``autocov``)."""
    n = a.shape[-1]
    m = next_fast_len(2 * n)  # scipy.fftpack's 5-smooth length, as ArviZ
    a = a - a.mean(axis=-1, keepdims=True)
    f = np.fft.rfft(a, n=m, axis=-1)
    f *= np.conjugate(f)
    cov = np.fft.irfft(f, n=m, axis=-1)[..., :n]
    cov /= n
    return cov


def _ess(a: np.ndarray) -> np.ndarray:
    """Effective sample size of each element of ``a`` (element, chain, draw), ArviZ's ``_ess``."""
    n_elem, n_chain, n_draw = a.shape
    size = n_chain * n_draw
    flat = a.reshape(n_elem, -1)
    constant = (flat.max(axis=1) - flat.min(axis=1)) < np.finfo(float).resolution

    acov = _autocov(a)
    chain_mean = a.mean(axis=-1)
    # mean over chains at every lag, as a reduction along a contiguous axis (the order ArviZ's sums take)
    acov_mean = np.ascontiguousarray(acov.transpose(0, 2, 1)).mean(axis=-1)  # (element, lag)
    del acov
    mean_var = acov_mean[:, 0] * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus = var_plus + _onepass_var(chain_mean, ddof=1)
    # autocorrelation estimate at every lag
    rho = 1.0 - (mean_var[:, None] - acov_mean) / var_plus[:, None]
    rho1 = rho[:, 1]

    # Geyer's initial positive sequence. Pair k holds lags (2k, 2k+1); its sum P[k] (P[0] = 1 + rho_1).
    # The loop's iteration j (t = 2j + 1 < n_draw - 3) computes pair j + 1 and runs while the previous pair's
    # sum is > 0; n_iter is the number of iterations run, max_t = 2 * n_iter - 1.
    j_max = max(0, (n_draw - 3) // 2)
    pair = np.empty((n_elem, j_max + 1))
    pair[:, 0] = 1.0 + rho1
    pair[:, 1:] = rho[:, 2 : 2 * j_max + 2 : 2] + rho[:, 3 : 2 * j_max + 3 : 2]
    runs = np.logical_and.accumulate(pair[:, :j_max] > 0.0, axis=1)
    n_iter = runs.sum(axis=1)
    last = 2 * n_iter  # max_t + 1: the lag of the last even term, which enters the sum once

    lag = np.arange(n_draw)
    rows = np.arange(n_elem)
    # lags below max_t + 1 hold the estimates (all their pairs had sums > 0)
    rho_t = np.where(lag < last[:, None], rho, 0.0)
    rho_t[:, 0] = 1.0
    # lag max_t + 1: kept if its pair's sum is >= 0 ("improve estimation": or if it is > 0 itself)
    rho_last = rho[rows, last]
    keep = (pair[rows, n_iter] >= 0.0) | (rho_last > 0.0)
    rho_t[rows, last] = np.where(n_iter == 0, 1.0, np.where(keep, rho_last, 0.0))

    # Geyer's initial monotone sequence over pairs 1 .. n_iter - 1: a pair whose sum exceeds the previous
    # (already monotone) pair's sum takes half that sum at both lags, so the pair sums become their running
    # minimum; x/2 + x/2 == x exactly, so each step compares with exactly the running minimum.
    if j_max >= 2:
        run_min = np.minimum.accumulate(pair[:, :j_max], axis=1)
        k = np.arange(1, j_max)
        lower = (pair[:, 1:j_max] > run_min[:, : j_max - 1]) & (k < n_iter[:, None])
        half = run_min[:, : j_max - 1] / 2.0
        np.copyto(rho_t[:, 2 : 2 * j_max - 1 : 2], half, where=lower)
        np.copyto(rho_t[:, 3 : 2 * j_max : 2], half, where=lower)

    # sum of lags 0 .. max_t, summed (pairwise, as np.sum does) over exactly those lags: elements grouped by
    # their number of terms, which takes one reduction per distinct max_t rather than one per element
    head = np.zeros(n_elem)
    for n_terms in np.unique(last):
        if n_terms:
            sel = np.flatnonzero(last == n_terms)
            head[sel] = np.sum(rho_t[sel, :n_terms], axis=1)
    tau_hat = -1.0 + 2.0 * head + rho_t[rows, last]
    floor = 1 / np.log10(size)
    tau_hat = np.where(floor > tau_hat, floor, tau_hat)
    ess = size / tau_hat
    ess = np.where(np.isnan(rho1), np.nan, ess)
    return np.where(constant, float(size), ess)


def _mquantiles_type7(
    flat: np.ndarray, probs: tuple[float, ...], ordered: np.ndarray | None = None
) -> list[np.ndarray]:
    """Quantiles of each row of ``flat`` as ``scipy.stats.mstats.mquantiles(row, p, alphap=1, betap=1)``
    computes them (R's type 7); ``ordered``, if given, holds each row's values sorted."""
    n = flat.shape[1]
    p = np.asarray(probs, dtype=float)
    alphap, betap = 1, 1
    m = alphap + p * (1.0 - alphap - betap)
    aleph = n * p + m
    k = np.floor(aleph.clip(1, n - 1)).astype(int)
    gamma = (aleph - k).clip(0, 1)
    if ordered is None:
        ordered = np.partition(flat, np.unique(np.concatenate((k - 1, k))), axis=1)
    return [(1.0 - g) * ordered[:, ki - 1] + g * ordered[:, ki] for g, ki in zip(gamma, k)]
