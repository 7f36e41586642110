"""analysis.convergence.rank_diagnostics against ArviZ's az.rhat / az.ess (bulk, tail), element by element."""

import logging
import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # ArviZ's FutureWarning about its refactor
    import arviz as az

import analysis.convergence as convergence
from analysis.convergence import rank_diagnostics

RHAT_ATOL = 1e-12
ESS_RTOL = 1e-9


@pytest.fixture(autouse=True)
def _quiet_arviz():
    """ArviZ logs a warning for every element with a NaN or too few draws/chains."""
    logger = logging.getLogger("arviz")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def _arviz(x):
    post = az.from_dict(posterior={"v": x}).posterior
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return (
            az.rhat(post)["v"].values,
            az.ess(post, method="bulk")["v"].values,
            az.ess(post, method="tail")["v"].values,
        )


def _assert_matches_arviz(x):
    got = rank_diagnostics(x)
    want = _arviz(x)
    for g, w, name in zip(got, want, ("r_hat", "ess_bulk", "ess_tail")):
        assert g.shape == (x.shape[2],), name
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{name}: NaN pattern")
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=RHAT_ATOL, err_msg="r_hat")
    np.testing.assert_allclose(got[1], want[1], rtol=ESS_RTOL, atol=0, err_msg="ess_bulk")
    np.testing.assert_allclose(got[2], want[2], rtol=ESS_RTOL, atol=0, err_msg="ess_tail")
    return want


def _ar1(rng, chains, draws, k, rho):
    """Stationary AR(1) chains with unit innovations."""
    e = rng.standard_normal((chains, draws, k))
    out = np.empty_like(e)
    out[:, 0] = e[:, 0] / np.sqrt(1 - rho**2)
    for t in range(1, draws):
        out[:, t] = rho * out[:, t - 1] + e[:, t]
    return out


def test_well_mixed_normal():
    x = np.random.default_rng(0).standard_normal((4, 500, 40))
    r_hat, ess_bulk, _ = _assert_matches_arviz(x)
    assert np.all(r_hat < 1.02) and np.all(ess_bulk > 1000)


@pytest.mark.parametrize("rho", [0.95, 0.999])
def test_strongly_autocorrelated(rho):
    # long autocorrelation: Geyer's positive sequence runs to late lags (to the loop's bound at 0.999) and
    # the monotone step lowers many pairs
    x = _ar1(np.random.default_rng(1), 4, 600, 30, rho)
    _, ess_bulk, _ = _assert_matches_arviz(x)
    assert np.all(ess_bulk < 0.2 * x.shape[0] * x.shape[1])


def test_stuck_chains():
    rng = np.random.default_rng(2)
    offsets = np.arange(4)[:, None, None] * rng.uniform(1.0, 5.0, 20)
    x = rng.standard_normal((4, 300, 20)) + offsets
    r_hat, _, _ = _assert_matches_arviz(x)
    assert np.all(r_hat > 1.2)


def test_discrete_with_ties():
    rng = np.random.default_rng(3)
    integers = rng.integers(0, 3, (4, 400, 20)).astype(float)
    # 0/1 indicators, including rare ones whose 5% and 95% quantiles fall on tied values
    p = np.concatenate([[0.01, 0.02, 0.03, 0.05, 0.5, 0.95, 0.97, 0.99], rng.uniform(0.05, 0.95, 12)])
    indicators = (rng.random((4, 400, 20)) < p).astype(float)
    # the same integers as an integer array
    _assert_matches_arviz(np.concatenate([integers, indicators], axis=2))
    _assert_matches_arviz(rng.integers(0, 3, (4, 100, 5)))


def test_constant_and_nan_elements():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 100, 5))
    x[:, :, 1] = 3.0  # constant: ESS = number of split draws, R-hat NaN
    x[2, 17, 2] = np.nan  # one NaN: all three NaN
    x[:, :, 3] = np.nan
    r_hat, ess_bulk, ess_tail = _assert_matches_arviz(x)
    assert np.isnan(r_hat[1]) and ess_bulk[1] == ess_tail[1] == 400
    assert np.isnan([r_hat[2], ess_bulk[2], ess_tail[2]]).all()


def test_odd_number_of_draws():
    x = _ar1(np.random.default_rng(5), 4, 999, 10, 0.5)
    _assert_matches_arviz(x)


@pytest.mark.parametrize("chains", [1, 2, 10])
def test_chain_counts(chains):
    x = _ar1(np.random.default_rng(6 + chains), chains, 201, 20, 0.7)
    r_hat, ess_bulk, _ = _assert_matches_arviz(x)
    assert np.isnan(r_hat).all() == (chains == 1)
    assert np.isfinite(ess_bulk).all()


@pytest.mark.parametrize("draws", list(range(3, 11)))
def test_few_draws(draws):
    rng = np.random.default_rng(20 + draws)
    x = np.concatenate([rng.standard_normal((3, draws, 15)), _ar1(rng, 3, draws, 15, 0.9)], axis=2)
    r_hat, _, _ = _assert_matches_arviz(x)
    assert np.isnan(r_hat).all() == (draws < 4)


def test_blocks_do_not_change_results(monkeypatch):
    rng = np.random.default_rng(7)
    x = _ar1(rng, 4, 100, 25, 0.8)
    x[:, :, 10] = 1.0
    x[0, 0, 3:7] = np.nan  # a block of NaN elements only
    whole = rank_diagnostics(x)
    monkeypatch.setattr(convergence, "BLOCK_VALUES", 4 * 100 * 4)  # blocks of 4 elements
    blocked = rank_diagnostics(x)
    for a, b in zip(whole, blocked):
        np.testing.assert_array_equal(a, b)


def test_rejects_wrong_shape():
    with pytest.raises(ValueError):
        rank_diagnostics(np.zeros((4, 100)))
