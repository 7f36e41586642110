"""Figures, one function each, reading analysis outputs only."""
