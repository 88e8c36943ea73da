#!/usr/bin/env python3
"""Generate the synthetic Neuron profile fixtures under fixtures/ (deterministic: same bytes on every run).

    .venv/bin/python scripts/make_fixtures.py [OUT_DIR]     # default: fixtures/ next to this script

Writes fixtures/rmsnorm/{naive,fused,compiled}/ as a PyTorch-native capture on trn1 would lay them
out (formats.md section 2), a model-mode capture (fixtures/model_mode/) and a damaged profile
(fixtures/damaged/), then runs scripts/make_device_fixtures.py (processed device profiles in Parquet). Every file is SYNTHETIC: the trace timings are chosen so that torch's
key_averages() semantics reproduce the seed table (formats.md section 8); NTFF and .pb files are
opaque placeholder bytes. See fixtures/README.md for what is known and what is invented.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import struct
import sys
import tarfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

INSTANCE = "i-0123456789abcdef0"
TIMESTAMP = "20260115_093012"  # the real <timestamp> directory format is not documented
BASE_NS = 5_079_723_180_000_000  # a host-clock start like real Kineto traces (µs since boot ≈ 5.1e12)
DEVICE_PID = 0  # device tracks: pid = device index, tid = NeuronCore
CORE = 0
UUID_NS = uuid.UUID("6f1c3a52-0e9b-4f55-9d1e-5a7e2c9b1f00")
SYNTHETIC = b"SYNTHETIC ntrace fixture - not a real Neuron file\n"


# ---------------------------------------------------------------- trace events


@dataclass
class Op:
    """One framework op of the active step: its self CPU and the device time of the graph it launches (µs)."""

    name: str
    self_cpu: float
    device: float
    input_dims: list
    input_types: list
    copy_scalar: bool = False  # aten::add: the CPU scalar eps is written to the device first
    parent: str | None = None  # a wrapping op with only a little self CPU (aten::rms_norm)
    parent_self: float = 0.0
    neff_hash: str = ""


@dataclass
class Trace:
    """Builds one Kineto trace: events in ns, written as µs with 3 decimals."""

    host_pid: int
    events: list = field(default_factory=list)
    next_ext: int = 1
    next_corr: int = 1

    def ext(self) -> int:
        self.next_ext += 1
        return self.next_ext - 1

    def corr(self) -> int:
        self.next_corr += 1
        return self.next_corr - 1

    def x(self, cat: str, name: str, ts: int, dur: int, args: dict, device: bool = False) -> None:
        pid, tid = (DEVICE_PID, CORE) if device else (self.host_pid, self.host_pid)
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": us(ts), "dur": us(dur), "args": args})

    def flow(self, corr: int, call_ts: int, exec_ts: int) -> None:
        self.events.append({"ph": "s", "id": corr, "pid": self.host_pid, "tid": self.host_pid, "ts": us(call_ts), "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": DEVICE_PID, "tid": CORE, "ts": us(exec_ts), "cat": "ac2g", "name": "ac2g", "bp": "e"})


def us(ns: int) -> float | int:
    """ns → µs with 3 decimals, as Kineto writes them."""
    return ns // 1000 if ns % 1000 == 0 else round(ns / 1000, 3)


def ns(us_value: float) -> int:
    return round(us_value * 1000)


# Launch delay (runtime call start → device start) and completion tail (device end → call end), ns.
DELAYS = [13_700, 12_900, 14_400, 13_100, 12_600, 13_800]
TAIL = 5_100


def runtime_call(tr: Trace, name: str, ts: int, ext: int, device_dur: int, device_name: str, device_cat: str, delay: int, extra: dict) -> int:
    """A runtime call with its driver event and the device activity it starts; returns the call's duration."""
    corr = tr.corr()
    dur = delay + device_dur + TAIL
    tr.x("privateuse1_runtime", name, ts, dur, {"External id": ext, "correlation": corr})
    tr.x("privateuse1_driver", "neuron_driver_submit" if device_cat == "kernel" else "neuron_driver_dma", ts + 2_300, 6_400, {"stream": CORE, "device": DEVICE_PID})
    exec_ts = ts + delay
    tr.x(device_cat, device_name, exec_ts, device_dur, {"External id": ext, "correlation": corr, "device": DEVICE_PID, "stream": CORE, **extra}, device=True)
    tr.flow(corr, ts, exec_ts)
    return dur


#: The naive aten::add's host→device copy of its scalar epsilon (2 bytes), ns.
COPY_NS = 3_200


def build_trace(variant: str, host_pid: int, ops: list[Op], lookup: float = 0.0) -> dict:
    """The trace.json of one variant: step 3 (wait 2, warmup 1, active 1) holding `ops` in order."""
    tr = Trace(host_pid)
    step_ts = BASE_NS + 317_656
    t = step_ts + 18_400
    step_ext = tr.ext()
    pending: list[tuple] = []  # framework events are written after their children are placed
    if lookup:
        pending.append(("cpu_op", "TorchDynamo Cache Lookup", t, ns(lookup), {"External id": tr.ext(), "Record function id": 0}))
        t += ns(lookup) + 1_300
    for i, op in enumerate(ops):
        parent_ext = tr.ext() if op.parent else None
        parent_ts = t
        if op.parent:
            t += ns(op.parent_self) // 2
        ext = tr.ext()
        op_ts = t
        self_ns = ns(op.self_cpu)
        pre = self_ns * 11 // 20
        cursor = op_ts + pre
        neff = f"neff_{op.neff_hash}_vnc_{CORE}"
        copy = COPY_NS if op.copy_scalar else 0  # device time of the op: the copy plus its execution (torch counts both)
        if copy:
            cursor += runtime_call(tr, "nrt_tensor_write", cursor, ext, copy, "Memcpy HtoD", "gpu_memcpy", 4_100, {"bytes": 2})
            cursor += 1_300
            pre += 1_300
        cursor += runtime_call(tr, "nrt_execute", cursor, ext, ns(op.device) - copy, "nc_exec_running", "kernel", DELAYS[i % len(DELAYS)], {"model_name": f"{neff}.neff"})
        op_end = cursor + (self_ns - pre)
        args = {"External id": ext, "Record function id": 0}
        if op.input_dims:
            args |= {"Sequence number": 0, "Fwd thread id": 0, "Input Dims": op.input_dims, "Input type": op.input_types}
        pending.append(("cpu_op", op.name, op_ts, op_end - op_ts, args))
        t = op_end
        if op.parent:
            t += ns(op.parent_self) - ns(op.parent_self) // 2
            pending.append(("cpu_op", op.parent, parent_ts, t - parent_ts, {"External id": parent_ext, "Record function id": 0, **({"Input Dims": op.input_dims} if op.input_dims else {})}))
        t += 6_200 + 700 * i  # Python between ops
    step_end = t + 12_300
    pending.append(("user_annotation", "ProfilerStep#3", step_ts, step_end - step_ts, {"External id": step_ext, "Record function id": 0}))
    for cat, name, ts, dur, args in pending:
        tr.x(cat, name, ts, dur, args)
    host_events = sorted((e for e in tr.events if e["pid"] == host_pid and e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"]))
    device_events = sorted((e for e in tr.events if e["pid"] == DEVICE_PID and e["ph"] == "X"), key=lambda e: e["ts"])
    flows = [e for e in tr.events if e["ph"] in "sf"]
    meta = [
        {"ph": "M", "name": "process_name", "ts": us(BASE_NS), "pid": host_pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "ts": us(BASE_NS), "pid": host_pid, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "thread_name", "ts": us(BASE_NS), "pid": host_pid, "tid": host_pid, "args": {"name": f"thread {host_pid} (python)"}},
        {"ph": "M", "name": "process_name", "ts": us(BASE_NS), "pid": DEVICE_PID, "tid": 0, "args": {"name": f"Neuron device {DEVICE_PID}"}},
        {"ph": "M", "name": "process_labels", "ts": us(BASE_NS), "pid": DEVICE_PID, "tid": 0, "args": {"labels": f"NeuronCore {CORE}"}},
        {"ph": "M", "name": "thread_name", "ts": us(BASE_NS), "pid": DEVICE_PID, "tid": CORE, "args": {"name": f"NC {CORE}"}},
    ]
    span = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": us(BASE_NS), "dur": us(step_end - BASE_NS + 40_000), "args": {"Op count": 0}}
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": DEVICE_PID, "name": "NeuronCore-v2 (synthetic)", "synthetic": True}],
        "record_shapes": 1,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_790_857_026_000_000_000,
        "traceName": f"synthetic rmsnorm {variant}",
        "traceEvents": [*meta, *host_events, *device_events, *flows, span],
    }


def dump_trace(doc: dict) -> bytes:
    """Kineto-like layout: top-level keys, then one event per line."""
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items() if k != "traceEvents")
    events = ",\n".join(f"  {json.dumps(e)}" for e in doc["traceEvents"])
    return f"{{\n{head},\n  \"traceEvents\": [\n{events}\n  ]\n}}\n".encode()


# ---------------------------------------------------------------- NEFF / NTFF / .pb


def tarball(members: dict[str, bytes], gz: bool) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    return gzip.compress(raw, mtime=0) if gz else raw


def neff_bytes(name: str, graph: dict, *, pkg: int = 1) -> bytes:
    """A NEFF: the documented 1024-byte header, then a tar (gzip tar for pkg_version 2) of neff.json and sg00/def.json."""
    members = {
        "neff.json": json.dumps({"name": name, "synthetic": True, "subgraphs": ["sg00"]}, indent=1).encode(),
        "sg00/def.json": json.dumps({"synthetic": True, **graph}, indent=1).encode(),
    }
    payload = tarball(members, gz=pkg == 2)
    digest = (hashlib.sha256 if pkg == 1 else hashlib.md5)(payload).digest()  # what the hash covers is undocumented
    header = struct.pack(
        "<QQQQQ128sI32s16s256sI64sQI468s",
        pkg, 1024, len(payload), 2, 0, b"synthetic-0.0.0", 1, digest, uuid.uuid5(UUID_NS, name).bytes, name.encode(), 1, b"", 0, 1, b"",
    )
    return header + payload


def opaque(label: str) -> bytes:
    """Placeholder bytes for a file format with no public specification (NTFF, .pb)."""
    return SYNTHETIC + f"{label}\n".encode() + hashlib.sha256(label.encode()).digest() * 4


# ---------------------------------------------------------------- the variants


BF16 = "c10::BFloat16"
X, W, R = [4, 512], [512], [4, 1]

VARIANTS: dict[str, tuple[int, list[Op], float]] = {
    "naive": (
        48213,
        [
            Op("aten::mul", 24.3, 388.2, [X, X], [BF16, BF16], neff_hash="395760075800974"),
            Op("aten::mean", 21.1, 340.8, [X, [], [], []], [BF16, "ScalarList", "Scalar", ""], neff_hash="395760075801120"),
            Op("aten::add", 26.6, 434.6, [R, [], []], [BF16, "double", "Scalar"], copy_scalar=True, neff_hash="395760075801266"),
            Op("aten::rsqrt", 15.6, 415.0, [R], [BF16], neff_hash="395760075801412"),
            Op("aten::mul", 19.1, 389.0, [X, R], [BF16, BF16], neff_hash="395760075801558"),
            Op("aten::mul", 17.5, 387.3, [X, W], [BF16, BF16], neff_hash="395760075801704"),
        ],
        0.0,
    ),
    "fused": (
        48377,
        [Op("aten::_fused_rms_norm", 47.6, 403.3, [X, [], W, []], [BF16, "ScalarList", BF16, "Scalar"], parent="aten::rms_norm", parent_self=2.9, neff_hash="511836260334481")],
        0.0,
    ),
    "compiled": (
        48561,
        [Op("Torch-Compiled Region: 0/0", 98.4, 375.5, [], [], neff_hash="728403915227764")],
        9.8,
    ),
}


def capture_json(variant: str, host_pid: int) -> dict:
    """The capture.json `ntrace capture` writes, filled with what a synthetic fixture can honestly say."""
    return {
        "variant": variant,
        "device": "neuron",
        "synthetic": True,
        "torch": None,
        "torch_neuronx": None,
        "shape": X,
        "dtype": "bfloat16",
        "schedule": {"wait": 2, "warmup": 1, "active": 1, "repeat": 1},
        "cores": str(CORE),
        "host": f"{INSTANCE} (synthetic)",
        "start_time": "2026-01-15T09:30:12Z",
        "correlate_device_time": True,
    }


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def make_rmsnorm(out: Path) -> None:
    for variant, (pid, ops, lookup) in VARIANTS.items():
        root = out / "rmsnorm" / variant
        session = root / f"{INSTANCE}_pid_{pid}" / TIMESTAMP
        write(root / "capture.json", (json.dumps(capture_json(variant, pid), indent=2) + "\n").encode())
        write(session / "trace.json", dump_trace(build_trace(variant, pid, ops, lookup)))
        for i, op in enumerate(ops):
            graph = {"op": op.name, "input_dims": op.input_dims, "dtype": "bfloat16"}
            slug = op.name.replace("aten::", "").replace("Torch-Compiled Region: 0/0", "compiled_region")
            write(session / f"neff_{op.neff_hash}_vnc_{CORE}.neff", neff_bytes(f"rmsnorm_{variant}_{i}_{slug}", graph))
        write(session / f"profile_nc_{CORE}_session_0.ntff", opaque(f"ntff {variant} nc {CORE} session 0"))
        write(session / "ntrace.pb", opaque(f"ntrace.pb {variant}"))
        write(session / "trace_info.pb", opaque(f"trace_info.pb {variant}"))
        # the TorchNeuron profiler's framework → runtime mapping: its format is undocumented, so this one is opaque placeholder JSON
        write(session / f"framework_mapping_{TIMESTAMP}_000.json", (json.dumps({"synthetic": True, "variant": variant}) + "\n").encode())


def make_model_mode(out: Path) -> None:
    """The documented model-mode example names: one NEFF (gzip tar, pkg_version 2), one NTFF per vnc, no framework trace."""
    session = out / "model_mode" / "i-0ade06f040a13f2bf_pid_210229"
    write(session / "neff_395760075800974.neff", neff_bytes("model_mode_graph", {"op": "matmul"}, pkg=2))
    for vnc in (0, 1):
        write(session / f"395760075800974_instid_0_vnc_{vnc}.ntff", opaque(f"ntff model mode vnc {vnc}"))


def make_damaged(out: Path) -> None:
    """A session with a truncated NEFF, an orphan NTFF (its hash has no NEFF) and no trace.json."""
    session = out / "damaged" / f"{INSTANCE}_pid_51234" / TIMESTAMP
    whole = neff_bytes("damaged_graph", {"op": "aten::mul"})
    write(session / "neff_600000000000001_vnc_0.neff", whole[: 1024 + 600])
    write(session / "profile_nc_0_session_0.ntff", opaque("ntff damaged nc 0"))
    write(session / "999999999999999_instid_0_vnc_0.ntff", opaque("ntff orphan"))
    write(session / "ntrace.pb", opaque("ntrace.pb damaged"))


def main(out: Path) -> None:
    for sub in ("rmsnorm", "model_mode", "damaged"):
        shutil.rmtree(out / sub, ignore_errors=True)
    make_rmsnorm(out)
    make_model_mode(out)
    make_damaged(out)
    # the processed device profiles (Parquet) read these sessions: rmsnorm/*/…/device_profiles/ and device/
    import runpy

    runpy.run_path(str(Path(__file__).with_name("make_device_fixtures.py")))["main"](out)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "fixtures")
