"""The ``looking-inward`` command line (:mod:`looking_inward.cli`), outside the layers it composes."""
