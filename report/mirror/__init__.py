"""The manuscript's mirror-test section (:mod:`.section`)."""
