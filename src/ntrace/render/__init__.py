"""Renderers: each turns library results (Polars frames) into one output format."""
