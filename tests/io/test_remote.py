"""Traces behind s3:// URLs (ntrace.io.remote) against a local moto S3 server: the same JSON as the local file, except its path; a missing bucket is a one-line error."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from helpers import REAL_TRACES, write_trace, x
from ntrace.cli import main
from ntrace.io.remote import is_url, local_copies

pytest.importorskip("s3fs")
server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")
SRC = REAL_TRACES / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
SECRET = "ntrace-test-secret-not-printed"
pytestmark = pytest.mark.skipif(not SRC.exists(), reason=f"{SRC} is absent")


def _free_port() -> int:
    """A local TCP port free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1; its URL."""
    port = _free_port()
    moto = server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    yield f"http://127.0.0.1:{port}"
    moto.stop()


@pytest.fixture()
def bucket(endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Bucket "traces" holding the real trace under run/ and its `ntrace convert` Parquet under cache/; s3fs pointed at the server with dummy credentials."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true", "NTRACE_S3_ENDPOINT": endpoint,
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # only NTRACE_S3_ENDPOINT leads s3fs to the server
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    converted = CliRunner().invoke(main, ["convert", str(SRC), "-o", str(tmp_path / "cache")])
    assert converted.exit_code == 0, converted.output
    (parquet,) = (tmp_path / "cache").glob("*.parquet")
    s3 = boto3.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket="traces")
    s3.upload_file(str(SRC), "traces", f"run/{SRC.name}")
    s3.upload_file(str(parquet), "traces", f"cache/{parquet.name}")
    return "traces"


def _without_paths(doc: Any) -> Any:
    """The JSON document with every "trace" path dropped."""
    if isinstance(doc, dict):
        return {k: _without_paths(v) for k, v in doc.items() if k != "trace"}
    return [_without_paths(v) for v in doc] if isinstance(doc, list) else doc


def _analyze(target: str) -> Any:
    res = CliRunner().invoke(main, ["analyze", target, "--format", "json", "-q"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_s3_trace_file_prefix_and_parquet_give_the_local_json(bucket: str) -> None:
    local = _without_paths(_analyze(str(SRC)))
    assert _without_paths(_analyze(f"s3://{bucket}/run/{SRC.name}")) == local
    assert _without_paths(_analyze(f"s3://{bucket}/run/")) == local
    assert _without_paths(_analyze(f"s3://{bucket}/cache")) == local
    assert _analyze(f"s3://{bucket}/run")["profiles"][0]["trace"] == f"s3://{bucket}/run/{SRC.name}"  # the URL, not the temporary copy
    assert _analyze(f"s3://{bucket}/run/{SRC.name}")["profiles"][0]["trace"] == f"s3://{bucket}/run/{SRC.name}"
    assert _analyze(f"s3://{bucket}/cache")["profiles"][0]["trace"] == str(SRC)  # a converted trace names its source
    text = CliRunner().invoke(main, ["analyze", f"s3://{bucket}/run", "-q"]).stdout
    assert text.startswith(f"== s3://{bucket}/run/{SRC.name}\n")


def test_downloads_are_removed_afterwards(bucket: str) -> None:
    with local_copies([f"s3://{bucket}/run", Path("kept/as/is")]) as (copy, kept):
        assert Path(copy, SRC.name).read_bytes() == SRC.read_bytes() and kept == Path("kept/as/is")
    assert not Path(copy).exists() and not Path(copy).parent.exists()


def test_missing_bucket_or_key_is_one_line_exit_2_without_credentials(bucket: str) -> None:
    for url in ("s3://no-such-bucket/run", f"s3://{bucket}/nothing/here.json"):
        res = CliRunner().invoke(main, ["analyze", url])
        assert res.exit_code == 2 and res.stdout == ""
        assert res.stderr == f"error: {url}: does not exist (no such bucket, object or prefix)\n"
        assert SECRET not in res.output


def test_ranks_reads_s3_prefixes_and_names_their_urls(bucket: str, endpoint: str, tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["ranks", f"s3://{bucket}/run", "--format", "json"])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)["ranks"]
    assert row["trace"] == f"s3://{bucket}/run/{SRC.name}"
    bad = tmp_path / "rank-1.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": ')
    boto3.client("s3", endpoint_url=endpoint).upload_file(str(bad), bucket, "run/rank-1.trace.json")
    doc = json.loads(CliRunner().invoke(main, ["ranks", f"s3://{bucket}/run", "--format", "json", "-q"]).stdout)
    assert doc["warnings"][0].startswith(f"skipped s3://{bucket}/run/rank-1.trace.json: ")
    assert "ntrace-remote-" not in json.dumps(doc)


def _uploaded_dataset(tmp_path: Path, bucket: str, endpoint: str, name: str, ranks: int) -> Any:
    """`ranks` rank traces (rank r's all-reduce starting r µs late) converted into the dataset tmp_path/NAME and uploaded under NAME/; the S3 client."""
    (tmp_path / "run").mkdir()
    for rank in range(ranks):
        events = [x("ProfilerStep#1", "user_annotation", 0, 100), x("ncclDevKernel_AllReduce", "kernel", 10 + rank, 20 - rank, pid=0, tid=7, stream=7, device=0)]
        write_trace(tmp_path / "run" / f"rank-{rank}.trace.json", events, distributedInfo={"rank": rank, "world_size": ranks})
    assert CliRunner().invoke(main, ["convert", str(tmp_path / "run"), "-o", str(tmp_path / name), "--by-rank"]).exit_code == 0
    s3 = boto3.client("s3", endpoint_url=endpoint)
    for path in (tmp_path / name).rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"{name}/{path.relative_to(tmp_path / name).as_posix()}")
    return s3


def test_ranks_reads_an_s3_dataset(bucket: str, endpoint: str, tmp_path: Path) -> None:
    _uploaded_dataset(tmp_path, bucket, endpoint, "dataset", 2)
    local = CliRunner().invoke(main, ["ranks", str(tmp_path / "dataset"), "--format", "json", "-q"])
    remote = CliRunner().invoke(main, ["ranks", f"s3://{bucket}/dataset", "--format", "json", "-q"])
    assert remote.exit_code == 0 and remote.stdout == local.stdout
    doc = json.loads(remote.stdout)
    assert [r["trace"] for r in doc["ranks"]] == [str(tmp_path / "run" / f"rank-{r}.trace.json") for r in range(2)]  # the traces the dataset was made from
    assert doc["collectives"][0]["skew_max_us"] == 1.0 and doc["stragglers"][0]["rank"] == 1


def test_is_url() -> None:
    assert is_url("s3://b/k") and is_url("gs://b") and is_url("file:///tmp/x")
    assert not is_url("run/trace.json") and not is_url(Path("s3://b/k")) and not is_url("C:\\traces")


def test_errors_about_downloaded_files_name_their_urls(bucket: str, endpoint: str, tmp_path: Path) -> None:
    bad = tmp_path / "rank-0.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": ')
    boto3.client("s3", endpoint_url=endpoint).upload_file(str(bad), bucket, "bad/rank-0.trace.json")
    res = CliRunner().invoke(main, ["analyze", f"s3://{bucket}/bad/rank-0.trace.json"])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: s3://{bucket}/bad/rank-0.trace.json: ") and res.stderr.count("\n") == 1
    res = CliRunner().invoke(main, ["ranks", f"s3://{bucket}/bad/"])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: s3://{bucket}/bad: ") and res.stderr.count("\n") == 1


def test_convert_reads_s3_and_its_parquet_and_dataset_name_the_urls(bucket: str, endpoint: str, tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["convert", f"s3://{bucket}/run", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert res.stdout == f"wrote {tmp_path / 'out' / (SRC.name + '.parquet')}\n" and "ntrace-remote-" not in res.output
    doc = _analyze(str(tmp_path / "out"))
    assert doc["profiles"][0]["trace"] == f"s3://{bucket}/run/{SRC.name}"
    assert _without_paths(doc) == _without_paths(_analyze(str(SRC)))
    (tmp_path / "run").mkdir()
    for rank in range(2):
        events = [x("ProfilerStep#1", "user_annotation", 0, 100), x("ncclDevKernel_AllReduce", "kernel", 10 + rank, 20 - rank, pid=0, tid=7, stream=7, device=0)]
        write_trace(tmp_path / "run" / f"rank-{rank}.trace.json", events, distributedInfo={"rank": rank, "world_size": 2})
        boto3.client("s3", endpoint_url=endpoint).upload_file(str(tmp_path / "run" / f"rank-{rank}.trace.json"), bucket, f"ranks/rank-{rank}.trace.json")
    assert CliRunner().invoke(main, ["convert", f"s3://{bucket}/ranks", "-o", str(tmp_path / "dataset"), "--by-rank"]).exit_code == 0
    ranks = json.loads(CliRunner().invoke(main, ["ranks", str(tmp_path / "dataset"), "--format", "json", "-q"]).stdout)
    assert [r["trace"] for r in ranks["ranks"]] == [f"s3://{bucket}/ranks/rank-{r}.trace.json" for r in range(2)]
    bad = CliRunner().invoke(main, ["convert", f"s3://{bucket}/nothing", "-o", str(tmp_path / "none")])
    assert bad.exit_code == 2 and bad.stderr.startswith(f"error: s3://{bucket}/nothing: ")


def test_ranks_downloads_a_datasets_events_only_for_ranks_whose_summary_is_unusable(bucket: str, endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An S3 dataset's per-rank summaries are all ranks reads: no events file is downloaded, except a rank's whose summary is gone (then summarized from its events, as locally)."""
    from ntrace.io import remote

    s3 = _uploaded_dataset(tmp_path, bucket, endpoint, "ds", 3)
    got: list[str] = []
    real_get = remote._get
    monkeypatch.setattr(remote, "_get", lambda fs, url, name, local: got.append(name) or real_get(fs, url, name, local))
    local = CliRunner().invoke(main, ["ranks", str(tmp_path / "ds"), "--format", "json", "-q"])
    remote_run = CliRunner().invoke(main, ["ranks", f"s3://{bucket}/ds", "--format", "json", "-q"])
    assert remote_run.exit_code == 0 and remote_run.stdout == local.stdout
    assert len(got) == 3 and all(n.endswith(".summary.json") for n in got)
    (gone,) = (tmp_path / "ds" / "rank=1").glob("_*.summary.json")
    s3.delete_object(Bucket=bucket, Key=f"ds/rank=1/{gone.name}")
    gone.unlink()
    got.clear()
    local = CliRunner().invoke(main, ["ranks", str(tmp_path / "ds"), "--format", "json", "-q"])
    remote_run = CliRunner().invoke(main, ["ranks", f"s3://{bucket}/ds", "--format", "json", "-q"])
    assert remote_run.exit_code == 0 and json.loads(remote_run.stdout)["ranks"] == json.loads(local.stdout)["ranks"]
    assert sorted(n.rpartition("/")[2].endswith(".parquet") for n in got) == [False, False, True] and any("rank=1/" in n for n in got if n.endswith(".parquet"))
