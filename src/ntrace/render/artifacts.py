"""Render profile artifacts (sessions, NEFFs, NTFFs, pairs, unpaired files) as JSON-ready dicts and as text tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ntrace.artifacts import Session
from ntrace.render.units import table

SCHEMA = "ntrace.artifacts/1"


def session_dict(session: Session) -> dict[str, Any]:
    """The `artifacts` object of the analyze JSON: session, neff, ntff, pairs, unpaired."""
    return {
        "session": {"instance": session.instance, "pid": session.pid, "timestamp": session.timestamp},
        "neff": [
            {
                "path": r["path"], "hash": r["hash"], "name": r["neff_name"], "uuid": r["uuid"], "neff_version": r["neff_version"],
                "data_size": r["data_size"], "members": r["members"], "valid": r["valid"], "problem": r["problem"],
            }
            for r in session.neffs.iter_rows(named=True)
        ],
        "ntff": [{"path": r["path"], "hash": r["hash"], "core": r["core"], "size": r["size"]} for r in session.ntffs.iter_rows(named=True)],
        "pairs": session.pairs.to_dicts(),
        "unpaired": session.unpaired.to_dicts(),
    }


def render_json(sessions: list[Session]) -> str:
    """Every session as one JSON object (schema `ntrace.artifacts/1`), with its directory, traces and .pb files too."""
    doc = {
        "schema": SCHEMA,
        "sessions": [
            {"dir": str(s.dir), "traces": [str(t) for t in s.traces], **session_dict(s), "pb": s.pbs.to_dicts()} for s in sessions
        ],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()


def _title(session: Session) -> str:
    if session.pid is None:
        return f"directory {session.dir} (not an <instance>_pid_<pid> session)"
    stamp = f", timestamp {session.timestamp}" if session.timestamp else ""
    return f"instance {session.instance}, pid {session.pid}{stamp}"


def _rel(path: str, session: Session) -> str:
    """A path as shown in tables: relative to the session directory."""
    try:
        return str(Path(path).relative_to(session.dir))
    except ValueError:
        return path


def summary_text(session: Session) -> str:
    """The short artifact summary `ntrace analyze` prints beside a profile's lanes."""
    neffs, ntffs = session.neffs, session.ntffs
    valid = int(neffs["valid"].sum()) if neffs.height else 0
    head = (
        f"Artifacts ({_title(session)}): {neffs.height} NEFF ({valid} valid), {ntffs.height} NTFF, {session.pbs.height} .pb, "
        f"{session.pairs.height} pairs, {session.unpaired.height} unpaired"
    )
    if not session.has_artifacts:
        return head
    paired = session.pairs.group_by("neff").agg("ntff", "rule")
    partners = {r["neff"]: r for r in paired.iter_rows(named=True)}
    rows = []
    for r in neffs.iter_rows(named=True):
        p = partners.get(r["path"])
        pair = ", ".join(f"{_rel(n, session)} ({rule})" for n, rule in zip(p["ntff"], p["rule"])) if p else "-"
        rows.append([_rel(r["path"], session), "yes" if r["valid"] else "NO", str(r["members"]), r["neff_name"] or "-", pair])
    out = [head]
    if rows:
        out.append(table(["NEFF", "valid", "members", "name", "paired with"], rows, left=5))
    out += [f"  unpaired {_rel(r['path'], session)}: {r['reason']}" for r in session.unpaired.iter_rows(named=True)]
    out += [f"  invalid {_rel(r['path'], session)}: {r['problem']}" for r in neffs.filter(~neffs["valid"]).iter_rows(named=True)]
    return "\n".join(out)


def session_text(session: Session) -> str:
    """One session in full: its traces, decoded NEFFs, NTFFs, .pb files, pairs and unpaired files."""
    out = [f"== {session.dir}", _title(session)]
    traces = ", ".join(_rel(str(t), session) for t in session.traces) or "none"
    out.append(f"framework traces: {traces}")
    if session.neffs.height:
        out += ["", "NEFF"]
        out.append(
            table(
                ["file", "hash", "version", "build", "name", "uuid", "members", "subgraphs", "lnc", "size", "valid"],
                [
                    [
                        _rel(r["path"], session), r["hash"] or "-", r["neff_version"] or "-", r["build_version"] or "-", r["neff_name"] or "-",
                        r["uuid"] or "-", str(r["members"]), ",".join(r["subgraphs"]) or "-", _num(r["lnc_size"]), str(r["size"]),
                        "yes" if r["valid"] else f"NO: {r['problem']}",
                    ]
                    for r in session.neffs.iter_rows(named=True)
                ],
                left=6,
            )
        )
    if session.ntffs.height:
        out += ["", "NTFF (opaque: only the name is read)"]
        out.append(
            table(
                ["file", "scheme", "hash", "instance", "vnc", "core", "session", "rank", "exec", "size"],
                [
                    [_rel(r["path"], session), r["scheme"], r["hash"] or "-", *(_num(r[k]) for k in ("instid", "vnc", "core", "session", "rank", "exec")), str(r["size"])]
                    for r in session.ntffs.iter_rows(named=True)
                ],
                left=3,
            )
        )
    if session.pbs.height:
        out += ["", ".pb (opaque)"]
        out.append(table(["file", "kind", "size"], [[_rel(r["path"], session), r["kind"], str(r["size"])] for r in session.pbs.iter_rows(named=True)], left=2))
    if session.pairs.height:
        out += ["", "Pairs"]
        out.append(table(["NEFF", "NTFF", "rule"], [[_rel(r["neff"], session), _rel(r["ntff"], session), r["rule"]] for r in session.pairs.iter_rows(named=True)], left=3))
    if session.unpaired.height:
        out += ["", "Unpaired"]
        out += [f"  {_rel(r['path'], session)}: {r['reason']}" for r in session.unpaired.iter_rows(named=True)]
    return "\n".join(out)


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def render_text(sessions: list[Session]) -> str:
    """Every session's full section."""
    return "\n\n".join(session_text(s) for s in sessions) + "\n"
