"""Statistics of experiments 1-3: tidy tables, the hierarchical models, calibration, power, simulations and
the ``analysis`` stage (:mod:`.stage`)."""
