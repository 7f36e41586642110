"""The manuscript's concept-injection section (:mod:`.section`)."""
