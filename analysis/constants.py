"""The statistical method's constants, in one light module (no heavy imports), so that the analysis uses them
and the manuscript's methods, tables and figures quote them rather than restate them."""

#: posterior intervals of the Bayesian models of experiments 1-3 (equal-tailed), and their quantiles
INTERVAL = 0.94
Q_LOW, Q_HIGH = (1 - INTERVAL) / 2, 1 - (1 - INTERVAL) / 2
#: the interval's percent as text ("94"), as captions and the methods print it
INTERVAL_PERCENT = f"{100 * INTERVAL:g}"
#: the convergence gate: largest r_hat as ArviZ's summary reports it (two decimals), smallest bulk and tail ESS,
#: smallest E-BFMI of any chain
RHAT_MAX = 1.01
ESS_MIN = 400
BFMI_MIN = 0.3
#: calibration MAD: equal-frequency bins (``pd.qcut(..., duplicates="drop")``: ties kept together, so possibly
#: fewer) and the most frequent sampled behaviours of an item that give points
MAD_BINS = 10
TOP_BEHAVIOURS = 3
#: a model-based standard error of a log-odds coefficient beyond this many logits means the likelihood is flat
#: along it: the data are separated and the coefficient is not estimable (the usual rule of thumb for logistic
#: regression; an ordinary fit on a few dozen trials has an SE below 1)
SEPARATED_SE = 10.0
#: the power at which the detectable advantage is read off a power curve
POWER_TARGET = 0.8
#: the prior predictive check's share of cell accuracies below this or above one minus it
PRIOR_CELL_EXTREME = 0.02
