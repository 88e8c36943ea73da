#!/usr/bin/env python3
"""Write a deterministic, realistic synthetic Kineto trace of any size (for benchmarks and decode tests).

The shape follows the real traces in tests/data/kineto: ProfilerStep#N user annotations
holding nested cpu_op trees (aten::linear → aten::addmm …) with "Input Dims"/"Input type"/
"Concrete Inputs" args, cuda_runtime launches with correlation ids and ac2g flow pairs, kernels
with grid/block/occupancy args on device streams, memcpy/memset, gpu_user_annotation ranges,
fwdbwd flows, process/thread metadata and the profiler's own Trace span. Timestamps are µs with
three decimals like recent Kineto. Same arguments → same bytes.

    scripts/synth_trace.py /tmp/synth.json --events 1000000 [--gzip] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import io
import random
import sys
from pathlib import Path
from typing import IO

PID = 2910249
THREADS = (2910249, 2919752)
STREAMS = (7, 20, 24)

#: (operator, child operators, kernel name, launches a memcpy instead of a kernel)
OPS = (
    ("aten::linear", ("aten::t", "aten::addmm"), "ampere_sgemm_128x64_tn", False),
    ("aten::conv2d", ("aten::convolution", "aten::_convolution"), "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>", False),
    ("aten::relu", ("aten::clamp_min",), "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel>", False),
    ("aten::add_", (), "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", False),
    ("aten::copy_", ("aten::empty_strided",), "Memcpy HtoD (Pageable -> Device)", True),
    ("aten::zero_", ("aten::fill_",), "Memset (Device)", True),
    ("aten::mm", (), "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8", False),
)


class _Writer:
    """Emits events as JSON text with running ids and a monotonic host clock (µs with 3 decimals, as ns ints)."""

    def __init__(self, out: IO[str], seed: int) -> None:
        self.out = out
        self.rng = random.Random(seed)
        self.n = 0
        self.ext = 0
        self.corr = 100_000
        self.fwd = 0
        self.first = True

    def emit(self, text: str) -> None:
        self.out.write(text if self.first else ",\n" + text)
        self.first = False
        self.n += 1

    def x(self, cat: str, name: str, pid: int | str, tid: int | str, ts: int, dur: int, args: str) -> None:
        # laid out over lines as Kineto writes complete events
        self.emit(
            f'  {{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {_id(pid)}, "tid": {_id(tid)},\n'
            f'    "ts": {_us(ts)}, "dur": {_us(dur)},\n    "args": {{\n      {args}\n    }}\n  }}'
        )

    def flow(self, ph: str, cat: str, fid: int, pid: int, tid: int, ts: int) -> None:
        bp = ', "bp": "e"' if ph == "f" else ""
        self.emit(f'{{"ph": "{ph}", "id": {fid}, "pid": {pid}, "tid": {tid}, "ts": {_us(ts)}, "cat": "{cat}", "name": "{cat}"{bp}}}')


def _us(ns: int) -> str:
    """ns → µs text with three decimals, as Kineto writes it."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def _id(value: int | str) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def _dims(rng: random.Random) -> str:
    a, b = rng.choice((64, 128, 256, 512, 1024)), rng.choice((64, 128, 768, 1024, 4096))
    return f'"Input Dims": [[{a}, {b}], [{b}, {a}], []], "Input type": ["float", "float", "Scalar"], "Input Strides": [[{b}, 1], [{a}, 1], []], "Concrete Inputs": ["", "", "1"]'


def _op(w: _Writer, tid: int, t: int, op: tuple, stream_clock: dict[int, int]) -> int:
    """One top-level operator with its children, runtime launch, flow pair and device activity; returns its end."""
    rng = w.rng
    name, children, kernel, is_copy = op
    w.ext += 1
    w.fwd += 1
    top_ext, seq = w.ext, w.fwd
    child_spans = []
    c = t + rng.randint(2_000, 6_000)
    for child in children:
        w.ext += 1
        d = rng.randint(3_000, 20_000)
        child_spans.append((child, c, d, w.ext))
        c += d + rng.randint(500, 2_000)
    launch_ts = c
    launch_dur = rng.randint(4_000, 12_000)
    end = launch_ts + launch_dur + rng.randint(1_000, 4_000)
    w.x("cpu_op", name, PID, tid, t, end - t, f'"External id": {top_ext}, "Record function id": {top_ext}, "Sequence number": {seq}, "Fwd thread id": 1, {_dims(rng)}, "Ev Idx": {w.n}')
    for child, cs, cd, cext in child_spans:
        w.x("cpu_op", child, PID, tid, cs, cd, f'"External id": {cext}, "Record function id": {cext}, {_dims(rng)}, "Ev Idx": {w.n}')
    w.corr += 1
    corr = w.corr
    api = "cudaMemcpyAsync" if kernel.startswith("Memcpy") else "cudaMemsetAsync" if kernel.startswith("Memset") else "cudaLaunchKernel"
    w.x("cuda_runtime", api, PID, tid, launch_ts, launch_dur, f'"External id": {top_ext}, "cbid": 211, "correlation": {corr}')
    stream = STREAMS[corr % len(STREAMS)]
    start = max(stream_clock[stream], launch_ts + rng.randint(5_000, 40_000))
    dur = rng.randint(2_000, 300_000)
    stream_clock[stream] = start + dur + rng.randint(0, 30_000)
    common = f'"External id": {top_ext}, "device": 0, "context": 1, "stream": {stream}, "correlation": {corr}'
    if is_copy:
        cat = "gpu_memcpy" if kernel.startswith("Memcpy") else "gpu_memset"
        nbytes = rng.randint(1, 1 << 24)
        w.x(cat, kernel, 0, stream, start, dur, f'{common}, "bytes": {nbytes}, "memory bandwidth (GB/s)": {nbytes / dur:.6f}')
    else:
        g = rng.choice((1, 32, 108, 512))
        w.x("kernel", kernel, 0, stream, start, dur, f'{common}, "queued": 0, "registers per thread": 64, "shared memory": 0, "blocks per SM": {g / 108:.6f}, "warps per SM": {g / 27:.6f}, "grid": [{g}, 1, 1], "block": [256, 1, 1], "est. achieved occupancy %": 50')
    # Kineto writes the flow only for some launches; correlation still links the rest.
    if corr % 3:
        w.flow("s", "ac2g", corr, PID, tid, launch_ts)
        w.flow("f", "ac2g", corr, 0, stream, start)
    if seq % 5 == 0:
        w.flow("s", "fwdbwd", seq, PID, THREADS[0], t)
        w.flow("f", "fwdbwd", seq, PID, THREADS[1], t + 1_000)
    return end


def write_trace(out: IO[str], events: int, seed: int = 0) -> int:
    """Write a whole trace of about `events` events (never fewer) to `out`; return the number written."""
    w = _Writer(out, seed)
    t0 = 4_458_676_388_068_751
    out.write('{\n  "schemaVersion": 1,\n  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},\n')
    out.write('  "deviceProperties": [{"id": 0, "name": "Synthetic Device", "totalGlobalMem": 42297524224, "numSms": 108}],\n')
    out.write('  "traceEvents": [\n')
    w.emit(f'{{"name": "process_name", "ph": "M", "ts": {_us(t0)}, "pid": {PID}, "tid": 0, "args": {{"name": "python3.10"}}}}')
    for tid in THREADS:
        w.emit(f'{{"name": "thread_name", "ph": "M", "ts": {_us(t0)}, "pid": {PID}, "tid": {tid}, "args": {{"name": "thread {tid}"}}}}')
    t = t0 + 10_000
    stream_clock = {s: t for s in STREAMS}
    step = 0
    while w.n < events:
        tid = THREADS[step % len(THREADS)]
        w.ext += 1
        step_ext, step_start = w.ext, t
        ops_per_step = w.rng.randint(40, 80)
        t += 3_000
        annot_start = t
        for i in range(ops_per_step):
            t = _op(w, tid, t, OPS[w.rng.randrange(len(OPS))], stream_clock) + w.rng.randint(1_000, 25_000)
            if i == ops_per_step // 2:
                w.ext += 1
                w.x("user_annotation", "## forward ##", PID, tid, annot_start, t - annot_start, f'"External id": {w.ext}, "Record function id": 0, "Ev Idx": {w.n}')
                w.x("gpu_user_annotation", "## forward ##", 0, STREAMS[0], annot_start + 20_000, t - annot_start, f'"External id": {w.ext}')
        t = max(t, *stream_clock.values()) + w.rng.randint(10_000, 200_000)
        w.x("user_annotation", f"ProfilerStep#{step}", PID, tid, step_start, t - step_start, f'"External id": {step_ext}, "Record function id": 0, "Ev Idx": {w.n}')
        step += 1
    w.x("Trace", "PyTorch Profiler (0)", "Spans", "PyTorch Profiler", t0, t - t0, '"Op count": 0')
    w.emit(f'{{"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": {_us(t0)}}}')
    out.write('\n  ],\n  "traceName": "synthetic.pt.trace.json",\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1700000000000000000\n}\n')
    return w.n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="file to write (a .gz name or --gzip writes gzip)")
    parser.add_argument("--events", type=int, default=100_000, help="number of events (at least)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gzip", action="store_true", help="gzip the output")
    args = parser.parse_args(argv)
    tmp = args.out.with_name(args.out.name + ".tmp")
    if args.gzip or args.out.suffix == ".gz":
        raw: IO[bytes] = gzip.open(tmp, "wb", compresslevel=1)
    else:
        raw = open(tmp, "wb")
    with raw, io.TextIOWrapper(raw, encoding="utf-8", write_through=False) as out:
        n = write_trace(out, args.events, args.seed)
    tmp.replace(args.out)
    print(f"{args.out}: {n} events, {args.out.stat().st_size / 2**20:.1f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
