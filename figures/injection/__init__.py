"""The concept-injection figures and the ``injection_figures`` stage (:mod:`.plots`)."""
