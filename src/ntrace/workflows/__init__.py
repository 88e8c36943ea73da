"""Stage 4 of the data's way — workflows: what a command does with a path (analyze every trace under it, compare variants, diff two sides, convert to the Parquet cache).

They find inputs, summarize traces (in parallel where asked) through the Profile facade, and
hand Summaries to the renderers; none of them renders.
"""
