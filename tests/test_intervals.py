"""Intervals contain their estimate and stay in [0, 1] where they bound a proportion, and figures draw
intervals from their own bounds (so one that excludes its estimate is shown, not turned into an error)."""

import numpy as np
import pytest

from analysis.intervals import wilson


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 1246), (1246, 1246), (3, 7), (999_999, 1_000_000)])
def test_wilson_contains_its_estimate_and_stays_in_the_unit_interval(k, n):
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    assert high - low > 0  # never degenerate: k = n still has a lower bound below 1


def test_wilson_on_arrays_including_k_equal_n_and_zero():
    k, n = np.array([0, 5, 1246, 1]), np.array([10, 10, 1246, 1])
    low, high = wilson(k, n)
    rate = k / n
    assert np.all((0 <= low) & (low <= rate) & (rate <= high) & (high <= 1))
    assert high[2] == 1.0 and low[0] == 0.0


def test_intervals_are_drawn_from_their_bounds_even_when_they_exclude_the_estimate():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from figures.self_prediction.plots import _errorbar

    fig, ax = plt.subplots()
    # a percentile bootstrap of a biased statistic: the interval [7, 9] lies above the estimate 6
    _errorbar(ax, [0, 1], [6.0, 100.0], [7.0, 99.99999999999999], [9.0, 100.0], "black", "o", "x")
    _errorbar(ax, [0, 1], [6.0, 0.0], [7.0, 0.0], [9.0, 1e-17], "black", "o", None, horizontal=True)
    segments = [s for c in ax.collections for s in c.get_segments()]
    spans = sorted(tuple(sorted((p[0][1], p[1][1]))) for p in segments[:2])
    assert spans == [(7.0, 9.0), (99.99999999999999, 100.0)]
    plt.close(fig)
