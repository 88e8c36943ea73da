"""Capture: profile a workload under torch's profiler on the device at hand (Neuron, CUDA or CPU) and write the session layout `ntrace analyze` reads.

- `backends`: how each device is driven (profiler activities, synchronization, compile backend);
- `rmsnorm`: the bundled RMSNorm study of the seed documents (three variants of one operation);
- `manifest`: the files written beside each trace (`capture.json`, `key_averages.json`);
- `explorer`: on Neuron, each session's NEFF/NTFF pairs processed into device profiles by `neuron-explorer view`.
"""
