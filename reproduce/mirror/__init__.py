"""The mirror test: the dataset's content and files, the corruptions, imitation, the rule grader, and the
``mirror`` stage (:mod:`.experiment`)."""
