"""Artifact discovery: sessions from paths, every NEFF/NTFF naming scheme, pairing rules, unpaired reasons, analyze and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import REPO
from ntrace import analyze
from ntrace.io.discover import find_traces
from ntrace.neuron.artifacts import find_sessions, session_dir, session_fields
from ntrace.cli import main
from ntrace.render import json as json_renderer

FIXTURES = REPO / "fixtures"
TRACE = '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}'


#: A NEFF that decodes (the naive rmsnorm fixture's), written for every .neff name unless a test gives other bytes.
VALID_NEFF = next((FIXTURES / "rmsnorm" / "naive").rglob("*.neff")).read_bytes()


def _touch(root: Path, *names: str, data: bytes | None = None) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if data is not None else VALID_NEFF if name.endswith(".neff") else b"x")


def _one(root: Path, name: str):
    (session,) = [s for s in find_sessions(root) if s.dir.name == name]
    return session


def _pairs_and_reasons(s) -> tuple[set[tuple[str, str, str]], dict[str, str]]:
    """A session's pairs as (NEFF name, NTFF name, rule) and its unpaired files as {name: reason}."""
    pairs = {(Path(r["neff"]).name, Path(r["ntff"]).name, r["rule"]) for r in s.pairs.iter_rows(named=True)}
    return pairs, {Path(r["path"]).name: r["reason"] for r in s.unpaired.iter_rows(named=True)}


def test_session_dir_and_fields_from_paths() -> None:
    ts_file = Path("out/i-0ade06f040a13f2bf_pid_210229/20260101_000000/trace.json")
    assert session_dir(ts_file) == ts_file.parent
    assert session_fields(ts_file.parent) == ("i-0ade06f040a13f2bf", 210229, "20260101_000000")
    model = Path("out/i-0ade06f040a13f2bf_pid_210229/neff_1.neff")
    assert session_dir(model) == model.parent
    assert session_fields(model.parent) == ("i-0ade06f040a13f2bf", 210229, None)
    deep = Path("out/i-1_pid_7/ts/neffs/graph_ab.neff")
    assert session_dir(deep) == Path("out/i-1_pid_7/ts")
    assert session_fields(Path("out/plain")) == (None, None, None)


def test_every_ntff_scheme_is_parsed(tmp_path: Path) -> None:
    names = [
        "395760075800974_instid_2_vnc_3.ntff",
        "profile_nc_4_session_1.ntff",
        "profile_rank_17.ntff",
        "profile_exec_9.ntff",
        "whatever.ntff",
    ]
    _touch(tmp_path / "i-0abc_pid_5", *names)
    ntffs = _one(tmp_path, "i-0abc_pid_5").ntffs
    rows = {r["name"]: r for r in ntffs.iter_rows(named=True)}
    assert (rows[names[0]]["scheme"], rows[names[0]]["hash"], rows[names[0]]["instid"], rows[names[0]]["vnc"], rows[names[0]]["core"]) == ("model", "395760075800974", 2, 3, 3)
    assert (rows[names[1]]["scheme"], rows[names[1]]["nc"], rows[names[1]]["session"], rows[names[1]]["core"], rows[names[1]]["hash"]) == ("session", 4, 1, 4, None)
    assert (rows[names[2]]["scheme"], rows[names[2]]["rank"]) == ("rank", 17)
    assert (rows[names[3]]["scheme"], rows[names[3]]["exec"]) == ("exec", 9)
    assert rows[names[4]]["scheme"] == "unknown" and rows[names[4]]["core"] is None
    assert all(r["size"] == 1 for r in rows.values())


def test_every_neff_scheme_is_parsed(tmp_path: Path) -> None:
    _touch(tmp_path / "i-0abc_pid_5", "neff_11.neff", "neff_12_vnc_1.neff", "neffs/graph_a1b2.neff", "model.neff", data=b"x")
    neffs = _one(tmp_path, "i-0abc_pid_5").neffs
    got = {r["name"]: (r["scheme"], r["hash"], r["vnc"]) for r in neffs.iter_rows(named=True)}
    assert got["neff_11.neff"] == ("neff", "11", None)
    assert got["neff_12_vnc_1.neff"] == ("neff", "12", 1)
    assert got["model.neff"] == ("unknown", None, None)
    # graph_<hash>.neff under neffs/ sits below the pid directory: its own session (pid/neffs)
    graph = _one(tmp_path, "neffs").neffs.row(0, named=True)
    assert (graph["scheme"], graph["hash"]) == ("graph", "a1b2")
    assert not neffs["valid"].any()  # one-byte files: reported invalid, not raised


def test_pb_kinds(tmp_path: Path) -> None:
    _touch(tmp_path / "i-0abc_pid_5" / "t", "ntrace.pb", "trace_info.pb", "cpu_util.pb", "host_mem.pb", "extra.pb")
    pbs = _one(tmp_path, "t").pbs
    assert dict(zip(pbs["path"].map_elements(lambda p: Path(p).name, return_dtype=str), pbs["kind"])) == {
        "ntrace.pb": "ntrace", "trace_info.pb": "trace_info", "cpu_util.pb": "cpu_util", "host_mem.pb": "host_mem", "extra.pb": "other",
    }


def test_hash_pairing_one_neff_many_ntffs_and_orphans(tmp_path: Path) -> None:
    _touch(
        tmp_path / "i-0abc_pid_5",
        "neff_395760075800974.neff", "395760075800974_instid_0_vnc_0.ntff", "395760075800974_instid_0_vnc_1.ntff",
        "111_instid_0_vnc_0.ntff", "neff_222.neff",
    )
    s = _one(tmp_path, "i-0abc_pid_5")
    pairs, reasons = _pairs_and_reasons(s)
    assert pairs == {
        ("neff_395760075800974.neff", "395760075800974_instid_0_vnc_0.ntff", "hash"),
        ("neff_395760075800974.neff", "395760075800974_instid_0_vnc_1.ntff", "hash"),
    }
    assert reasons["111_instid_0_vnc_0.ntff"] == "NTFF with no NEFF of hash 111"
    assert reasons["neff_222.neff"].startswith("NEFF with no NTFF of hash 222")
    assert len(reasons) == 2


def test_session_core_pairing_and_its_limits(tmp_path: Path) -> None:
    _touch(
        tmp_path / "i-0abc_pid_5" / "ts",
        "neff_1_vnc_0.neff", "neff_2_vnc_0.neff", "neff_3_vnc_1.neff", "neff_4.neff",
        "profile_nc_0_session_0.ntff", "profile_nc_2_session_0.ntff", "profile_rank_0.ntff",
    )
    s = _one(tmp_path, "ts")
    pairs, reasons = _pairs_and_reasons(s)
    assert pairs == {
        ("neff_1_vnc_0.neff", "profile_nc_0_session_0.ntff", "session-core"),
        ("neff_2_vnc_0.neff", "profile_nc_0_session_0.ntff", "session-core"),
    }
    assert reasons["neff_3_vnc_1.neff"] == "NEFF with no NTFF of hash 3 and no session-mode NTFF of core 1"
    assert "gives no core" in reasons["neff_4.neff"]
    assert reasons["profile_nc_2_session_0.ntff"] == "session-mode NTFF of core 2 with no NEFF named _vnc_2"
    assert "carries no hash or core" in reasons["profile_rank_0.ntff"]
    # every file is either paired or listed as unpaired: nothing dropped silently
    paired = set(s.pairs["neff"]) | set(s.pairs["ntff"])
    assert paired | set(s.unpaired["path"]) == set(s.neffs["path"]) | set(s.ntffs["path"])


def test_sessions_do_not_mix(tmp_path: Path) -> None:
    _touch(tmp_path / "i-0abc_pid_5", "neff_7.neff")
    _touch(tmp_path / "i-0abc_pid_6", "7_instid_0_vnc_0.ntff")
    sessions = find_sessions(tmp_path)
    assert [s.pid for s in sessions] == [5, 6]
    assert all(s.pairs.is_empty() and s.unpaired.height == 1 for s in sessions)


def test_sessions_without_artifacts_have_the_tables_of_one_with_them(tmp_path: Path) -> None:
    """A session with no NEFF/NTFF/.pb file skips the tables' queries: its tables are still empty ones of the same columns and types."""
    _touch(tmp_path / "i-0abc_pid_5", "neff_7.neff", "neff_8.neff", "7_instid_0_vnc_0.ntff", "ntrace.pb")
    (tmp_path / "i-0abc_pid_6").mkdir()
    (tmp_path / "i-0abc_pid_6" / "trace.json").write_text(TRACE)
    (tmp_path / "neuron_framework_trace_rank_0.json").write_text(TRACE)
    loose, full, bare = find_sessions(tmp_path)
    assert (full.pid, bare.pid, loose.pid) == (5, 6, None)
    assert (full.neffs.height, full.ntffs.height, full.pbs.height, full.pairs.height, full.unpaired.height) == (2, 1, 1, 1, 1)
    for table in ("neffs", "ntffs", "pbs", "pairs", "unpaired"):
        assert getattr(bare, table).schema == getattr(full, table).schema and getattr(bare, table).is_empty()
        assert getattr(loose, table).schema == getattr(full, table).schema
    assert not bare.has_artifacts and not loose.has_artifacts
    assert loose.unpaired["path"].to_list() == [str(tmp_path / "neuron_framework_trace_rank_0.json")]


def test_misplaced_framework_trace_is_reported_not_guessed(tmp_path: Path) -> None:
    (tmp_path / "neuron_framework_trace_rank_0.json").write_text(TRACE)
    _touch(tmp_path / "i-0abc_pid_5" / "ts", "neff_1_vnc_0.neff", "profile_nc_0_session_0.ntff")
    loose = next(s for s in find_sessions(tmp_path) if s.pid is None)
    assert loose.unpaired.row(0, named=True)["reason"].startswith("misplaced framework trace")
    result = analyze(tmp_path)
    ((_, session),) = result.entries
    assert session is not None and session.pid is None and not session.has_artifacts
    assert [s.pid for s in result.artifacts] == [5]  # the session's artifacts are still reported, unattached


def test_damaged_fixture() -> None:
    (s,) = find_sessions(FIXTURES / "damaged")
    assert s.traces == () and (s.instance, s.pid, s.timestamp) == ("i-0123456789abcdef0", 51234, "20260115_093012")
    neff = s.neffs.row(0, named=True)
    assert not neff["valid"] and "(truncated)" in neff["problem"]
    assert s.pairs.is_empty()  # the invalid NEFF is paired with nothing: its NTFF says why
    reasons = dict(s.unpaired.iter_rows())
    assert reasons == {
        str(s.dir / "999999999999999_instid_0_vnc_0.ntff"): "NTFF with no NEFF of hash 999999999999999",
        str(s.dir / "profile_nc_0_session_0.ntff"): f"NTFF not paired: its NEFF neff_600000000000001_vnc_0.neff is invalid ({neff['problem']})",
    }


def test_model_mode_fixture() -> None:
    (s,) = find_sessions(FIXTURES / "model_mode")
    assert (s.instance, s.pid, s.timestamp) == ("i-0ade06f040a13f2bf", 210229, None)
    assert s.neffs["valid"].to_list() == [True] and s.neffs["pkg_version"].to_list() == [2]
    assert s.pairs["rule"].to_list() == ["hash", "hash"] and s.unpaired.is_empty()


def test_analyze_rmsnorm_three_sessions_each_neff_paired() -> None:
    result = analyze(FIXTURES / "rmsnorm")
    assert len(result.summaries) == 3 and result.artifacts == ()
    doc = json.loads(json_renderer.analysis(result))
    for prof in doc["profiles"]:
        art = prof["artifacts"]
        assert set(art) == {"session", "neff", "ntff", "pairs", "unpaired", "device_profiles", "framework_mappings"}
        assert set(art["session"]) == {"instance", "pid", "timestamp"}
        assert art["neff"] and all(set(n) == {"path", "hash", "name", "uuid", "neff_version", "data_size", "members", "valid", "problem"} for n in art["neff"])
        assert all(n["valid"] and n["members"] == 2 for n in art["neff"])
        assert {p["neff"] for p in art["pairs"]} == {n["path"] for n in art["neff"]}
        assert all(set(n) == {"path", "hash", "core", "size"} for n in art["ntff"])
        assert art["unpaired"] == []
        assert Path(prof["trace"]).parent.name == art["session"]["timestamp"]
    assert sorted(len(p["artifacts"]["neff"]) for p in doc["profiles"]) == [1, 1, 6]


def test_processed_device_profiles_are_not_traces(tmp_path: Path) -> None:
    _touch(tmp_path, "s/trace.json", "s/system.parquet", "s/device_profiles/neff_1_vnc_0/Metadata.parquet", "s/device_profiles/neff_1_vnc_0/Summary.parquet")
    assert find_traces(tmp_path) == [tmp_path / "s" / "system.parquet", tmp_path / "s" / "trace.json"]  # an Explorer system-profile export still is one


def test_analyze_artifacts_only_directory_does_not_error(tmp_path: Path) -> None:
    result = analyze(FIXTURES / "model_mode")
    assert result.summaries == () and len(result.artifacts) == 1
    doc = json.loads(json_renderer.analysis(result))
    assert doc["artifacts"][0]["session"]["pid"] == 210229 and len(doc["artifacts"][0]["pairs"]) == 2
    with pytest.raises(Exception, match="holds no framework trace"):
        analyze(tmp_path)  # neither traces nor artifacts: still an error


def test_analyze_single_trace_file_gets_its_session(tmp_path: Path) -> None:
    trace = FIXTURES / "rmsnorm" / "fused" / "i-0123456789abcdef0_pid_48377" / "20260115_093012" / "trace.json"
    ((_, session),) = analyze(trace).entries
    assert session is not None and session.pid == 48377 and session.pairs.height == 1


def test_cli_artifacts_table_and_json() -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["artifacts", str(FIXTURES / "damaged")])
    assert res.exit_code == 0, res.output
    assert "NTFF with no NEFF of hash 999999999999999" in res.output and "(truncated)" in res.output
    res = runner.invoke(main, ["artifacts", str(FIXTURES), "--format", "json"])
    doc = json.loads(res.output)
    assert doc["schema"] == "ntrace.artifacts/1"
    assert len(doc["sessions"]) == 5
    assert sum(len(s["pairs"]) for s in doc["sessions"]) == 6 + 1 + 2 + 1  # none in damaged/: its one NEFF is invalid


def test_cli_artifacts_fail_on_damage() -> None:
    runner = CliRunner()
    damaged = runner.invoke(main, ["artifacts", str(FIXTURES / "damaged"), "--fail-on-damage"])
    assert damaged.exit_code == 1 and "(truncated)" in damaged.output
    assert "1 invalid NEFF, 2 unpaired files" in damaged.output
    assert runner.invoke(main, ["artifacts", str(FIXTURES / "damaged")]).exit_code == 0
    clean = runner.invoke(main, ["artifacts", str(FIXTURES / "model_mode"), "--fail-on-damage"])
    assert clean.exit_code == 0, clean.output


def test_cli_artifacts_errors_cleanly(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["artifacts", str(tmp_path)])
    assert res.exit_code == 2
    assert res.output.strip() == f"error: {tmp_path}: holds no Neuron profile artifacts (.neff, .ntff, .pb)"


def test_cli_analyze_text_shows_artifact_summary() -> None:
    res = CliRunner().invoke(main, ["analyze", str(FIXTURES / "rmsnorm"), "-q"])
    assert res.exit_code == 0, res.output
    assert res.output.count("Artifacts (instance i-0123456789abcdef0") == 3
    assert res.output.count("(session-core)") == 8


def test_session_fields_from_the_current_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    session = FIXTURES / "model_mode" / "i-0ade06f040a13f2bf_pid_210229"
    monkeypatch.chdir(session)
    (s,) = find_sessions(".")
    assert (s.instance, s.pid) == ("i-0ade06f040a13f2bf", 210229) and s.pairs.height == 2


def test_analyze_warns_about_invalid_neffs_and_unpaired_files() -> None:
    result = analyze(FIXTURES / "damaged")
    assert len(result.all_warnings) == 3
    assert any("neff_600000000000001_vnc_0.neff: data_size says" in w for w in result.all_warnings)
    assert any(w.endswith("999999999999999_instid_0_vnc_0.ntff: NTFF with no NEFF of hash 999999999999999") for w in result.all_warnings)
    assert any("profile_nc_0_session_0.ntff: NTFF not paired: its NEFF neff_600000000000001_vnc_0.neff is invalid" in w for w in result.all_warnings)
    assert analyze(FIXTURES / "rmsnorm").all_warnings == []


_hashes = st.sampled_from(["11", "22", "33"])
_cores = st.integers(0, 2)
_names = st.one_of(
    st.builds(lambda h: f"neff_{h}.neff", _hashes),
    st.builds(lambda h, c: f"neff_{h}_vnc_{c}.neff", _hashes, _cores),
    st.builds(lambda h, c: f"{h}_instid_0_vnc_{c}.ntff", _hashes, _cores),
    st.builds(lambda c: f"profile_nc_{c}_session_0.ntff", _cores),
    st.builds(lambda r: f"profile_rank_{r}.ntff", _cores),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.sets(_names, min_size=1, max_size=8))
def test_pairing_partitions_files_and_each_pair_obeys_its_rule(tmp_path_factory: pytest.TempPathFactory, names: set[str]) -> None:
    root = tmp_path_factory.mktemp("s") / "i-0abc_pid_1"
    _touch(root, *names)
    (s,) = find_sessions(root.parent)
    files = set(s.neffs["path"]) | set(s.ntffs["path"])
    paired = set(s.pairs["neff"]) | set(s.pairs["ntff"])
    assert paired | set(s.unpaired["path"]) == files and not paired & set(s.unpaired["path"])
    neff = {r["path"]: r for r in s.neffs.iter_rows(named=True)}
    ntff = {r["path"]: r for r in s.ntffs.iter_rows(named=True)}
    for p in s.pairs.iter_rows(named=True):
        a, b = neff[p["neff"]], ntff[p["ntff"]]
        if p["rule"] == "hash":
            assert a["hash"] == b["hash"]
        else:
            assert p["rule"] == "session-core" and b["scheme"] == "session" and a["vnc"] == b["core"]
    assert s.pairs.unique().height == s.pairs.height


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(per_session=st.lists(st.sets(_names, max_size=6), min_size=2, max_size=4), invalid=st.sets(st.integers(0, 3), max_size=2))
def test_many_sessions_pair_within_each_as_one_alone_does(tmp_path_factory: pytest.TempPathFactory, per_session: list[set[str]], invalid: set[int]) -> None:
    """Every session's tables are built in one pass over all sessions, keyed by session: no pair crosses sessions, each pair obeys its rule, and each session gets the tables it gets when found alone."""
    root = tmp_path_factory.mktemp("many")
    for i, names in enumerate(per_session):
        _touch(root / f"i-0abc_pid_{i}", *names, data=None)
        if i in invalid and any(n.endswith(".neff") for n in names):  # one NEFF that does not decode: its NTFFs are blocked, not paired
            (root / f"i-0abc_pid_{i}" / sorted(n for n in names if n.endswith(".neff"))[0]).write_bytes(b"not a neff")
    (root / "neuron_framework_trace_rank_3.json").write_text(TRACE)
    sessions = find_sessions(root)
    named = {s.dir.name: s for s in sessions}
    assert sorted(named) == sorted([root.name, *(f"i-0abc_pid_{i}" for i, names in enumerate(per_session) if names)])
    for s in sessions:
        if s.dir == root:
            assert s.unpaired["path"].to_list() == [str(root / "neuron_framework_trace_rank_3.json")] and s.neffs.is_empty() and s.ntffs.is_empty()
            continue
        inside = {str(p) for p in s.dir.iterdir()}
        assert set(s.neffs["path"]) | set(s.ntffs["path"]) == inside
        assert set(s.pairs["neff"]) | set(s.pairs["ntff"]) <= inside and set(s.unpaired["path"]) <= inside
        neff = {r["path"]: r for r in s.neffs.iter_rows(named=True)}
        ntff = {r["path"]: r for r in s.ntffs.iter_rows(named=True)}
        for p in s.pairs.iter_rows(named=True):
            a, b = neff[p["neff"]], ntff[p["ntff"]]
            assert a["valid"] and (a["hash"] == b["hash"] if p["rule"] == "hash" else (b["scheme"] == "session" and a["vnc"] == b["core"]))
        (alone,) = find_sessions(s.dir)
        for table in ("neffs", "ntffs", "pbs", "pairs", "unpaired"):
            assert getattr(s, table).equals(getattr(alone, table)), table
