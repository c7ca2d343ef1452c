"""Renderers (Rich tables, JSON, CSV, YAML), one per domain model; the only layer that prints."""
