"""Concept injection (Lindsey 2025): the dataset's content and files, the rule graders, and the
``concept_injection`` stage (:mod:`.experiment`)."""
