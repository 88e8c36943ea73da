"""Stage 5 of the data's way — render: one module per output format, each turning Summaries (and workflow results) into text.

`text`, `json`, `csv` and `markdown` share one interface: `analysis(result, view)`,
`compare(frame)`, `diff(d)`, `artifacts(sessions)`, each returning a string. `html` writes the
self-contained report (with the timelines the analysis kept), `perfetto` the Chrome-trace
export of one trace; `tables` holds the display frames several formats share.
"""
