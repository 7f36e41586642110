"""Statistics on the stage tables: tidy tables, Bayesian hierarchical models, frequentist cross-checks."""
