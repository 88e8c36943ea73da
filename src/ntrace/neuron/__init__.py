"""Neuron artifacts beside a framework trace: capture sessions, NEFF headers and tar listings, NTFF and .pb files, NEFF ↔ NTFF pairs.

- `artifacts`: the sessions of a profile directory, what file names encode, the pairing rules;
- `neff`: the documented 1024-byte NEFF header and its tarball's member names.
NTFF and .pb files stay opaque: only their names and sizes are read.
"""
