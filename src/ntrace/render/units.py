"""Units for human output: ns inside, microseconds outside, formatted the way torch's profiler tables print them."""

from __future__ import annotations


def us(ns: int | float | None) -> float:
    """Nanoseconds to microseconds (float), for JSON."""
    return 0.0 if ns is None else round(ns / 1000.0, 3)


def fmt_time(ns: int | float | None) -> str:
    """A duration as torch prints it: 12.345us, 1.235ms or 2.000s."""
    if ns is None:
        return "-"
    t = ns / 1000.0
    if abs(t) >= 1e6:
        return f"{t / 1e6:.3f}s"
    if abs(t) >= 1e3:
        return f"{t / 1e3:.3f}ms"
    return f"{t:.3f}us"


def fmt_pct(share: float | None) -> str:
    """A share (0..1) as a percentage with two decimals, as torch prints them."""
    return "-" if share is None else f"{share * 100:.2f}%"


def table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """An aligned plain-text table: the first `left` columns left-aligned, the rest right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([rule, line(headers), rule, *(line(r) for r in rows), rule])
