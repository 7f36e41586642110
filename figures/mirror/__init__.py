"""The mirror-test figures and the ``mirror_figures`` stage (:mod:`.plots`)."""
