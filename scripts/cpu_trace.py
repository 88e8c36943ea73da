#!/usr/bin/env python3
"""Capture a real Kineto trace of any size on CPU: a small transformer trained under torch.profiler (for benchmarks on real traces).

No accelerator is needed: the trace is the framework lane only (cpu_op, user_annotation,
python_function with --stack), written by Kineto itself, with shapes, strides and types in args
as any torch capture has them. Each step adds about 2,000 events.

    scripts/cpu_trace.py /tmp/real.pt.trace.json --steps 60 [--stack]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where the trace goes (.json)")
    parser.add_argument("--steps", type=int, default=60, help="profiled training steps")
    parser.add_argument("--stack", action="store_true", help="also record Python frames (python_function events)")
    args = parser.parse_args()
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=4), nn.Linear(64, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(8, 32, 64), torch.randint(0, 8, (8, 32))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=args.stack) as prof:
        for step in range(args.steps):
            with record_function(f"ProfilerStep#{step}"):
                loss = nn.functional.cross_entropy(model(x).reshape(-1, 8), y.reshape(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(args.out))
    print(f"{args.out}: {args.out.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
