"""Profile artifacts: the sessions of a Neuron profile directory, what NEFF/NTFF/.pb file names encode, and NEFF ↔ NTFF pairs.

A session is an `<instance-id>_pid_<pid>/` directory, or its `<timestamp>/` subdirectory when the
capture wrote one (formats.md section 2). NTFF and .pb files stay opaque: only their names and
sizes are read. Every pair names the rule that made it, and every file left unpaired says why.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ntrace.errors import InputError, valid_text
from ntrace.exprs import fmt
from ntrace.io.discover import find_traces
from ntrace.neuron.device.layout import find_profiles
from ntrace.neuron.neff import read_neff

#: A session directory name: `<instance-id>_pid_<pid>` (e.g. i-0ade06f040a13f2bf_pid_210229).
SESSION_DIR = re.compile(r"^(?P<instance>.+)_pid_(?P<pid>\d+)$")

#: NEFF naming schemes: (scheme, pattern with named groups hash and vnc).
NEFF_NAMES: tuple[tuple[str, str], ...] = (
    ("neff", r"^neff_(?P<hash>\d+)(?:_vnc_(?P<vnc>\d+))?\.neff$"),
    ("graph", r"^graph_(?P<hash>[0-9A-Za-z]+)\.neff$"),
)

#: NTFF naming schemes: (scheme, pattern with named groups among hash, instid, vnc, nc, session, rank, exec).
NTFF_NAMES: tuple[tuple[str, str], ...] = (
    ("model", r"^(?P<hash>\d+)_instid_(?P<instid>\d+)_vnc_(?P<vnc>\d+)\.ntff$"),
    ("session", r"^profile_nc_(?P<nc>\d+)_session_(?P<session>\d+)\.ntff$"),
    ("rank", r"^profile_rank_(?P<rank>\d+)\.ntff$"),
    ("exec", r"^profile_exec_(?P<exec>\d+)\.ntff$"),
)
_NTFF_FIELDS = ("hash", "instid", "vnc", "nc", "session", "rank", "exec")

#: The .pb files a capture writes, by mode (NEURON-DOCS); any other .pb is kind "other".
PB_KINDS = ("ntrace", "trace_info", "cpu_util", "host_mem")

#: The framework → runtime mapping the TorchNeuron profiler writes (format undocumented: listed, never decoded).
FRAMEWORK_MAPPING = re.compile(r"^framework_mapping_\d{8}_\d{6}_\d{3}\.json$")

#: A framework trace written outside its session directory (Neuron Explorer troubleshooting).
MISPLACED_TRACE = re.compile(r"^neuron_framework_trace_rank_(\d+)\.json$")

_ARTIFACT_SUFFIXES = (".neff", ".ntff", ".pb")

#: The column that keys build_sessions' tables by session (its position in the list), dropped when they are split.
_SESSION = "_session"


@dataclass(frozen=True)
class Session:
    """One capture session's files: framework traces, decoded NEFFs, opaque NTFF/.pb files, pairs and unpaired files."""

    dir: Path
    instance: str | None
    pid: int | None
    timestamp: str | None
    traces: tuple[Path, ...]
    neffs: pl.DataFrame  # one row per NEFF: name fields and decoded header (neff.Neff)
    ntffs: pl.DataFrame  # path, scheme, hash, instid, vnc, nc, session, rank, exec, core, size
    pbs: pl.DataFrame  # path, kind, size
    pairs: pl.DataFrame  # neff, ntff, rule ("hash" | "session-core")
    unpaired: pl.DataFrame  # path, reason
    device_profiles: tuple[Path, ...] = ()  # directories of processed device-profile tables (Parquet) inside the session
    mappings: tuple[Path, ...] = ()  # framework_mapping_<timestamp>.json files (opaque)

    @property
    def has_artifacts(self) -> bool:
        """True when the session holds any NEFF, NTFF, .pb file, processed device profile or framework mapping."""
        return bool(self.neffs.height or self.ntffs.height or self.pbs.height or self.device_profiles or self.mappings)


def session_dir(path: Path) -> Path:
    """The session a file belongs to: `<instance>_pid_<pid>/<timestamp>/`, `<instance>_pid_<pid>/`, or else its own directory."""
    parts = path.parent.parts
    for i in range(len(parts) - 1, -1, -1):
        if SESSION_DIR.match(parts[i]):
            return Path(*parts[: i + 2])
    return path.parent


def session_fields(directory: Path) -> tuple[str | None, int | None, str | None]:
    """(instance, pid, timestamp) read from a session directory's path (made absolute, so `.` works); None where it does not say."""
    directory = directory.absolute()
    if m := SESSION_DIR.match(directory.name):
        return m["instance"], _pid(m["pid"]), None
    if m := SESSION_DIR.match(directory.parent.name):
        return m["instance"], _pid(m["pid"]), directory.name
    return None, None, None


def _pid(digits: str) -> int | None:
    """A session name's pid, or None when it is beyond int64 (no real pid is; JSON and Polars hold no more)."""
    value = int(digits[:20])
    return value if len(digits) <= 19 and value < 1 << 63 else None


def find_sessions(root: str | Path, traces: list[Path] | None = None) -> list[Session]:
    """Every session at or under `root`, sorted by directory; a file given directly yields the session around it.

    `traces` are the framework traces under `root` when the caller has already found them.
    """
    root = Path(root)
    if not root.exists():
        raise InputError(root, "does not exist")
    if not root.is_dir():
        home = session_dir(root)
        recursive = session_fields(home)[1] is not None
        files = _walk(home, recursive=recursive)
        return build_sessions([(home, [root], [f for f in files if session_dir(f) == home])], profile_depth=None if recursive else 1)
    traces = find_traces(root) if traces is None else traces
    groups: dict[Path, tuple[list[Path], list[Path]]] = {}
    for path in traces:
        groups.setdefault(session_dir(path), ([], []))[0].append(path)
    for path in _walk(root):
        groups.setdefault(session_dir(path), ([], []))[1].append(path)
    return build_sessions([(d, t, a) for d, (t, a) in sorted(groups.items())])


def _walk(root: Path, recursive: bool = True) -> list[Path]:
    """Every NEFF, NTFF, .pb and framework-mapping regular file under `root` (or directly in it), sorted; pipes and devices are never opened."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(dirnames) if recursive else []
        found += [p for n in sorted(filenames) if (n.endswith(_ARTIFACT_SUFFIXES) or FRAMEWORK_MAPPING.match(n)) and (p := Path(dirpath) / n).is_file()]
    return found


def build_sessions(groups: list[tuple[Path, list[Path], list[Path]]], profile_depth: int | None = None) -> list[Session]:
    """One Session per (directory, traces, artifact files): every artifact read and each session's NEFFs paired with its NTFFs; processed device profiles are looked for `profile_depth` levels down (all when None).

    Each table is built over every session's files at once, keyed by session (`_SESSION`), and
    split after: a job of a thousand ranks pays a few queries, not a few per rank. A trace given
    alone in a plain directory (not a Neuron session's) looks only beside itself, so analyzing
    /tmp/x.json never walks all of /tmp.
    """
    by_suffix = {s: [(i, p) for i, (_, _, files) in enumerate(groups) for p in files if p.suffix == s] for s in _ARTIFACT_SUFFIXES}
    neffs, ntffs, pbs = (
        build([p for _, p in found]).with_columns(pl.Series(_SESSION, [i for i, _ in found], dtype=pl.Int64))
        for build, found in zip((neff_table, ntff_table, pb_table), by_suffix.values())
    )
    pairs = pair(neffs, ntffs)
    misplaced = [(i, t) for i, (d, traces, _) in enumerate(groups) if session_fields(d)[1] is None for t in traces if MISPLACED_TRACE.match(t.name)]
    split = [_by_session(t, len(groups)) for t in (neffs, ntffs, pbs, pairs, unpaired(neffs, ntffs, pairs, misplaced))]
    sessions = []
    for i, (directory, traces, files) in enumerate(groups):
        instance, pid, timestamp = session_fields(directory)
        own_neffs, own_ntffs, own_pbs, own_pairs, own_unpaired = (per[i] for per in split)
        mappings = tuple(p for p in files if FRAMEWORK_MAPPING.match(p.name))
        profiles = tuple(find_profiles(directory, profile_depth))
        sessions.append(Session(directory, instance, pid, timestamp, tuple(traces), own_neffs, own_ntffs, own_pbs, own_pairs, own_unpaired, profiles, mappings))
    return sessions


def _by_session(table: pl.DataFrame, sessions: int) -> list[pl.DataFrame]:
    """A keyed table's rows of each of `sessions` sessions, in their order, without the key; a session with no row gets the table's empty frame (one, shared: frames are values)."""
    empty = table.drop(_SESSION, strict=False).clear()
    if table.is_empty():
        return [empty] * sessions
    parts = table.partition_by(_SESSION, as_dict=True, include_key=False, maintain_order=True)
    return [parts.get((i,), empty) for i in range(sessions)]


def _sizes(paths: list[Path]) -> pl.DataFrame:
    """(path, name, size) of files, sizes from stat (-1 when the file cannot be read)."""
    def size(p: Path) -> int:
        try:
            return p.stat().st_size
        except OSError:
            return -1

    return pl.DataFrame({"path": [valid_text(str(p)) for p in paths], "name": [valid_text(p.name) for p in paths], "size": [size(p) for p in paths]},
                        schema={"path": pl.String, "name": pl.String, "size": pl.Int64})


def _named(frame: pl.DataFrame, schemes: tuple[tuple[str, str], ...], fields: tuple[str, ...]) -> pl.DataFrame:
    """Add `scheme` (or "unknown") and every named field of the first scheme whose pattern matches the file name."""
    name = pl.col("name")
    scheme = pl.lit("unknown")
    for label, pattern in reversed(schemes):
        scheme = pl.when(name.str.contains(pattern)).then(pl.lit(label)).otherwise(scheme)
    cols = []
    for f in fields:
        per_scheme = [name.str.extract_groups(pattern).struct.field(f) for _, pattern in schemes if f"(?P<{f}>" in pattern]
        cols.append(pl.coalesce(per_scheme).alias(f))
    return frame.with_columns(scheme.alias("scheme"), *cols)


def neff_table(paths: list[Path]) -> pl.DataFrame:
    """One row per NEFF: path, name fields (scheme, hash, vnc), size, and the decoded header (valid, problem, name, …)."""
    decoded = [read_neff(p) for p in paths]
    header = pl.DataFrame(
        {
            "valid": [n.valid for n in decoded],
            "problem": [n.problem for n in decoded],
            "neff_name": [n.name for n in decoded],
            "uuid": [n.uuid for n in decoded],
            "neff_version": [n.neff_version for n in decoded],
            "build_version": [n.build_version for n in decoded],
            "pkg_version": [n.pkg_version for n in decoded],
            "header_hash": [n.header_hash for n in decoded],
            "data_size": [n.data_size for n in decoded],
            "num_tpb": [n.num_tpb for n in decoded],
            "lnc_size": [n.lnc_size for n in decoded],
            "feature_bits": [n.feature_bits for n in decoded],
            "members": [len(n.members) for n in decoded],
            "subgraphs": [list(n.subgraphs) for n in decoded],
        },
        schema={
            "valid": pl.Boolean, "problem": pl.String, "neff_name": pl.String, "uuid": pl.String, "neff_version": pl.String,
            "build_version": pl.String, "pkg_version": pl.Int64, "header_hash": pl.String, "data_size": pl.Int64,
            "num_tpb": pl.Int64, "lnc_size": pl.Int64, "feature_bits": pl.UInt64, "members": pl.Int64, "subgraphs": pl.List(pl.String),
        },
    )
    named = _named(_sizes(paths), NEFF_NAMES, ("hash", "vnc")).with_columns(pl.col("vnc").cast(pl.Int64, strict=False))  # a number beyond int64: null
    return pl.concat([named, header], how="horizontal")


def ntff_table(paths: list[Path]) -> pl.DataFrame:
    """One row per NTFF: path, scheme, what the name encodes (hash, instid, vnc, nc, session, rank, exec), core, size."""
    named = _named(_sizes(paths), NTFF_NAMES, _NTFF_FIELDS).with_columns(
        pl.col(f).cast(pl.Int64, strict=False) for f in _NTFF_FIELDS if f != "hash"  # a number beyond int64: null
    )
    return named.with_columns(core=pl.coalesce("nc", "vnc"))


def pb_table(paths: list[Path]) -> pl.DataFrame:
    """One row per .pb file: path, kind (ntrace, trace_info, cpu_util, host_mem or other), size."""
    frame = _sizes(paths)
    stem = pl.col("name").str.strip_suffix(".pb")
    return frame.with_columns(kind=pl.when(stem.is_in(PB_KINDS)).then(stem).otherwise(pl.lit("other"))).select("path", "kind", "size")


_PAIR_SCHEMA = pl.Schema({"neff": pl.String(), "ntff": pl.String(), "rule": pl.String()})
_UNPAIRED_SCHEMA = pl.Schema({"path": pl.String(), "reason": pl.String()})
#: No pair: what pairing gives when either side has no file, without a query.
_NO_PAIRS = pl.DataFrame(schema=_PAIR_SCHEMA)
#: No misplaced trace, keyed by session as unpaired's rows are.
_NO_LONE_TRACES = pl.DataFrame(schema={_SESSION: pl.Int64(), **_UNPAIRED_SCHEMA})


def pair(neffs: pl.DataFrame, ntffs: pl.DataFrame) -> pl.DataFrame:
    """NEFF ↔ NTFF pairs of the valid NEFFs (each of its session's: the tables are keyed by `_SESSION`): same numeric hash in both names (rule "hash"), or a session-mode NTFF of core n with every NEFF named `_vnc_<n>` (rule "session-core", an inference)."""
    return _matches(neffs, ntffs, valid_only=True)


def _matches(neffs: pl.DataFrame, ntffs: pl.DataFrame, valid_only: bool = False) -> pl.DataFrame:
    """The NEFF ↔ NTFF pairs the names make within each session, of the NEFFs that decoded (`valid_only`) or of every NEFF given."""
    if neffs.is_empty() or ntffs.is_empty():  # both rules join the two: no pair, and no query (a job without NEFFs or NTFFs)
        return _NO_PAIRS
    if valid_only:
        neffs = neffs.filter(pl.col("valid"))
    by_hash = (
        neffs.filter(pl.col("hash").is_not_null())
        .select(_SESSION, neff="path", hash="hash")
        .join(ntffs.filter(pl.col("hash").is_not_null()).select(_SESSION, ntff="path", hash="hash"), on=[_SESSION, "hash"])
        .select(_SESSION, "neff", "ntff", rule=pl.lit("hash"))
    )
    by_core = (
        neffs.filter(pl.col("vnc").is_not_null())
        .select(_SESSION, neff="path", core="vnc")
        .join(ntffs.filter(pl.col("scheme") == "session").select(_SESSION, ntff="path", core="core"), on=[_SESSION, "core"])
        .select(_SESSION, "neff", "ntff", rule=pl.lit("session-core"))
    )
    return pl.concat([by_hash.cast(_PAIR_SCHEMA), by_core.cast(_PAIR_SCHEMA)]).sort("neff", "ntff")


def unpaired(neffs: pl.DataFrame, ntffs: pl.DataFrame, pairs: pl.DataFrame, misplaced: list[tuple[int, Path]]) -> pl.DataFrame:
    """Every valid NEFF and every NTFF in no pair, and every misplaced framework trace (with its session), with the reason in words (an invalid NEFF is reported as such, not here); keyed by `_SESSION`."""
    lone_traces = pl.DataFrame(
        {
            _SESSION: [i for i, _ in misplaced],
            "path": [str(p) for _, p in misplaced],
            "reason": ["misplaced framework trace: it belongs inside its <instance-id>_pid_<pid>/ directory; not matched to a session"] * len(misplaced),
        },
        schema=_NO_LONE_TRACES.schema,
    ) if misplaced else _NO_LONE_TRACES
    if neffs.is_empty() and ntffs.is_empty():  # no file to pair: only the traces, and no query (a job without NEFFs or NTFFs)
        return lone_traces
    hash_, vnc = pl.col("hash"), pl.col("vnc").cast(pl.String)
    lone_neffs = neffs.filter(pl.col("valid")).join(pairs.select(path="neff"), on="path", how="anti", maintain_order="left").select(
        _SESSION, "path",
        reason=pl.when(pl.col("scheme") == "unknown")
        .then(pl.lit("NEFF name follows no known scheme (neff_<hash>[_vnc_<n>].neff, graph_<hash>.neff): cannot be paired"))
        .when(vnc.is_null())
        .then(fmt("NEFF with no NTFF of hash {} (its name gives no core, so session-mode NTFFs are not matched to it)", hash_))
        .otherwise(fmt("NEFF with no NTFF of hash {} and no session-mode NTFF of core {}", hash_, vnc)),
    )
    invalid = neffs.filter(~pl.col("valid"))
    blocked = (
        _matches(invalid, ntffs)
        .join(invalid.select(neff="path", problem="problem"), on="neff")
        .group_by(path="ntff")
        .agg(fmt("its NEFF {} is invalid ({})", pl.col("neff").str.extract(r"([^/\\]+)$"), "problem").sort().first().alias("blocked"))
    )
    core = pl.col("core").cast(pl.String)
    lone_ntffs = ntffs.join(pairs.select(path="ntff"), on="path", how="anti", maintain_order="left").join(blocked, on="path", how="left", maintain_order="left").select(
        _SESSION, "path",
        reason=pl.when(pl.col("blocked").is_not_null())
        .then(fmt("NTFF not paired: {}", "blocked"))
        .when(pl.col("scheme") == "model")
        .then(fmt("NTFF with no NEFF of hash {}", hash_))
        .when(pl.col("scheme") == "session")
        .then(fmt("session-mode NTFF of core {} with no NEFF named _vnc_{}", core, core))
        .when(pl.col("scheme") == "rank")
        .then(pl.lit("NTFF named by rank (profile_rank_<id>.ntff) carries no hash or core: not paired"))
        .when(pl.col("scheme") == "exec")
        .then(pl.lit("NTFF named by execution (profile_exec_<n>.ntff) carries no hash or core: not paired"))
        .otherwise(pl.lit("NTFF name follows no known scheme: not paired")),
    )
    return pl.concat([lone_neffs, lone_ntffs, lone_traces])


def artifact_warnings(sessions: list[Session]) -> list[str]:
    """One line per invalid NEFF and per unpaired file, `<path>: <why>`, for the run's warnings."""
    return [
        *(f"{r['path']}: {r['problem']}" for s in sessions if s.neffs.height for r in s.neffs.filter(~pl.col("valid")).iter_rows(named=True)),
        *(f"{r['path']}: {r['reason']}" for s in sessions for r in s.unpaired.iter_rows(named=True)),
    ]
