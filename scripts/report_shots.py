#!/usr/bin/env python3
"""Screenshots of the HTML report in headless Chromium, for docs/report.md: the RMSNorm fixtures, and a ~90 MB tile of a real trace at two zooms.

    scripts/report_shots.py docs/            # writes report-*.png there and prints what it measured

The tile is made by scripts/tile_trace.py from the vendored real trace TILE_SOURCE; the report's
file size and the tile's are printed (docs/report.md quotes them).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ntrace.render.html import report  # noqa: E402

TILE_SOURCE = REPO / "tests" / "data" / "kineto" / "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--proxy-server=127.0.0.1:9", "--hide-scrollbars"]


def chromium() -> str:
    """The Chromium binary on PATH."""
    found = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if found is None:
        raise SystemExit("error: chromium is not installed")
    return found


def shot(page: Path, png: Path, tmp: Path, fragment: str = "", size: str = "1280,1100") -> Path:
    """A screenshot of `page` opened at `fragment` (`tl-0=START:END&solo` zooms the first timeline and shows it alone)."""
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    subprocess.run([chromium(), *FLAGS, f"--user-data-dir={tmp / 'profile'}", f"--window-size={size}", f"--screenshot={png}", url], capture_output=True, timeout=180, check=True)
    return png


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the PNGs")
    parser.add_argument("--size", default="90MB", help="the tile's size (scripts/tile_trace.py --size)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        _, page = report(REPO / "fixtures" / "rmsnorm", tmp / "rmsnorm.html", title="ntrace report: fixtures/rmsnorm")
        print(f"{shot(page, args.out / 'report-rmsnorm.png', tmp)}: fixtures/rmsnorm, report {page.stat().st_size:,} bytes")
        (tmp / "tile").mkdir()
        tile = tmp / "tile" / "tile.json"
        subprocess.run([sys.executable, str(REPO / "scripts" / "tile_trace.py"), str(TILE_SOURCE), str(tile), "--size", args.size], check=True)
        analysis, page = report(tile, tmp / "tile.html", title=f"ntrace report: {tile.stat().st_size / 1e6:.0f} MB tile of the real trace {TILE_SOURCE.name.split('__')[0]}")
        (summary,) = analysis.summaries
        step = summary.steps.row(3, named=True)
        a, b = step["start"] - summary.window[0], step["end"] - summary.window[0]
        print(f"tile {tile.stat().st_size:,} bytes, {summary.events:,} complete events; report {page.stat().st_size:,} bytes")
        print(f"{shot(page, args.out / 'report-tile-step.png', tmp, f'tl-0={a}:{b}&solo', '1280,700')}: one step ({step['name']})")
        print(f"{shot(page, args.out / 'report-tile-zoom.png', tmp, f'tl-0={a}:{a + (b - a) // 40}&solo', '1280,700')}: the first 1/40 of it")
        print(f"{shot(page, args.out / 'report-tile-overview.png', tmp)}: the page as it opens")


if __name__ == "__main__":
    main()
