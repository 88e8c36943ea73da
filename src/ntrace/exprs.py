"""Polars expression helpers every layer may use."""

from __future__ import annotations

import polars as pl


def fmt(template: str, *args: pl.Expr | str) -> pl.Expr:
    """`template` with each `{}` replaced by an argument as text (null when any argument is null), as `pl.format` would.

    Built with `concat_str`: Polars' own `format` panics on a frame whose columns hold empty chunks,
    which a filter of a chunked frame (the decoder's output) gives.
    """
    pieces = template.split("{}")
    if len(pieces) != len(args) + 1:
        raise ValueError(f"{template!r} has {len(pieces) - 1} placeholders for {len(args)} arguments")
    exprs: list[pl.Expr] = [pl.lit(pieces[0])]
    for arg, piece in zip(args, pieces[1:]):
        exprs.append((pl.col(arg) if isinstance(arg, str) else arg).cast(pl.String))
        exprs.append(pl.lit(piece))
    return pl.concat_str(exprs)
