"""Runnable examples (``python -m cljacobi.examples.<name>``)."""
