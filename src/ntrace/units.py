"""Units for people: ns inside every frame, microseconds and byte sizes outside, written the way torch's profiler tables print them."""

from __future__ import annotations

from typing import Iterable


def us_text(ns: int) -> str:
    """Integer ns as exact decimal µs text with three decimals (1712195495505582988 → "1712195495505582.988"): no binary float on the way out."""
    sign = "-" if ns < 0 else ""
    whole, frac = divmod(abs(ns), 1000)
    return f"{sign}{whole}.{frac:03d}"


def fmt_time(ns: int | float | None) -> str:
    """A duration as torch prints it: 12.345us, 1.235ms or 2.000s."""
    if ns is None:
        return "-"
    t = ns / 1000.0
    magnitude = abs(t)
    if magnitude >= 1e6:
        return f"{t / 1e6:.3f}s"
    if magnitude >= 1e3:
        return f"{t / 1e3:.3f}ms"
    return f"{t:.3f}us"


def fmt_pct(share: float | None) -> str:
    """A share (0..1) as a percentage with two decimals, as torch prints them."""
    return "-" if share is None else f"{share * 100:.2f}%"


def size(n: int) -> str:
    """A byte count for people: 1.5 GiB, 320.0 MiB, 12 bytes; a negative one (memory freed) with its sign."""
    if n < 0:
        return "-" + size(-n)
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def rate(per_second: float | None, unit: str = "B/s") -> str:
    """A rate for people with an SI prefix: 192.5 GB/s, 45.9 TFLOP/s."""
    if per_second is None:
        return "-"
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(per_second) >= scale:
            return f"{per_second / scale:.1f} {prefix}{unit}"
    return f"{per_second:.1f} {unit}"


def count(n: int | None) -> str:
    """A large count for people with an SI prefix (FLOPs): 8.05 G, 139.3 k, 12."""
    if n is None:
        return "-"
    for prefix, scale in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {prefix}"
    return str(n)


def plural(n: int, one: str, many: str | None = None) -> str:
    """`n` with its noun in the right number: 1 call, 2 calls, 1,000 device activities."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


#: Units a time given on the command line may carry, in ns; a bare number is µs, as Kineto writes times.
TIME_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_time(text: str) -> int:
    """A time a person wrote ("250", "1.5ms", "2s", "800ns"; bare numbers are µs) as whole ns, finer digits cut off; ValueError when it is not one."""
    from decimal import Decimal, InvalidOperation

    value = text.strip()
    unit = next((u for u in sorted(TIME_UNITS, key=len, reverse=True) if value.endswith(u)), "us")
    number = value.removesuffix(unit).strip() if value.endswith(unit) else value
    try:
        amount = Decimal(number)
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a time (a number, optionally with ns, us, ms or s)") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"{text!r}: a time here is a finite number ≥ 0")
    return int(amount * TIME_UNITS[unit])


def first_missing(present: Iterable[int], end: int, shown: int = 20) -> list[int]:
    """The first `shown` numbers of 0..end-1 not in `present`, found in as many steps as numbers are present (an `end` of 2**62 from a hostile file must not list them all)."""
    have, out, number = set(present), list[int](), 0
    while len(out) < shown and number < end:
        if number not in have:
            out.append(number)
        number += 1
    return out
