"""Stage 3 of the data's way — analyses: pure functions over a trace's frames, each returning frames or numbers; none imports the facade.

- `intervals`: unions of [start, end) intervals per group and the gaps between them;
- `totals`: tracks, per-lane and per-track totals, busy and idle;
- `links`: which runtime call launched which device activity;
- `stats`: launch delays and the statistics of gaps and delays;
- `steps`: per profiler step, busy per lane and device idle;
- `nesting`: torch's parent/child relations of host events;
- `ops`: the op table of torch's key_averages();
- `findings`: what to look at first, each finding with the events it rests on.
`ntrace.profile.Profile` wires them together over one Trace.
"""
