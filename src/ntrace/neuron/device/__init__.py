"""Processed Neuron device profiles (the Parquet tables Neuron Explorer writes for a NEFF + NTFF pair), read into typed frames: the reading stage of the device side.

- `layout`: which directories hold a profile, which file holds which table (split tables, parts);
- `tables`: the columns ntrace reads from each table, their types, and the reader that checks them.
What the tables say (engines, DMA, FLOPs, collectives) is computed in `ntrace.analyses.device`.
"""
