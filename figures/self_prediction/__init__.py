"""The figures of experiments 1-3 (:mod:`.plots`) and the ``figures`` stage (:mod:`.stage`)."""
