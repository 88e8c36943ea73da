#!/usr/bin/env python3
"""Write SYNTHETIC processed Neuron device profiles (the Parquet tables Neuron Explorer writes) for the fixtures.

    .venv/bin/python scripts/make_device_fixtures.py [OUT_DIR [SOURCE_DIR]]   # default: fixtures/ (both)

Every value written here is SYNTHETIC: invented to be plausible and internally consistent, never measured
on a Trainium machine. The tables, field names, types and units follow
shared/reference/neuron-device-profile.md (schema 7.4.0, as the aws-neuron-sdk repository documents it).

What it writes (byte for byte the same on every run):

- for every NEFF of each RMSNorm capture session under SOURCE_DIR/rmsnorm/<variant>/<instance>_pid_<pid>/<ts>/,
  one processed device profile `<session>/device_profiles/<neff file stem>/<Table>.parquet`, whose
  ExecutionInfo rows are the session trace.json's `nc_exec_running` kernel events naming that NEFF (durations
  read from the JSON number text to the nanosecond) and whose NeffHeader is read from the NEFF's 1024-byte
  header (formats.md section 4);
- fixtures/device/{compute_bound,memory_bound,collectives,throttled,schema_v7,schema_v12}/: one profile each;
- fixtures/device/damaged/<damage>/: profiles damaged in one labelled way each.

See fixtures/device/README.md for what each profile imitates and what is invented. The derived tables
(ActiveTime, OpcodeSummary, Summary, HbmUsage, FrameworkInstruction, HloInstruction, ThrottleSummary) are
computed here from the generated rows; tests/device_oracle.py recomputes them independently.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import struct
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

# ---------------------------------------------------------------- the schema (reference notation)

# The tables this script writes, as listed in shared/reference/neuron-device-profile.md (schema 7.4.0):
# name:type[unit], `*` = required. The tests parse that markdown itself and check the files against it.
SCHEMA_LINES = r"""
ActiveTime: start_ts:int64[nanoseconds]*, end_ts:int64[nanoseconds]*, engine:str*, pcore_idx:int64*, duration_ns:int64[nanoseconds]*
CcOp: start_ts:int64[nanoseconds]*, end_ts:int64[nanoseconds]*, duration_ns:int64[nanoseconds]*, operation:str*, algorithm:str*, num_elements:int64*, dtype:str*, op_id:int64*, stream_id:int64*, stream_index:int64*, trigger_engine:str*, input_size:int64[bytes], output_size:int64[bytes], algorithm_bandwidth:float[bytes_per_second], bus_bandwidth:float[bytes_per_second], trigger_start_ts:int64[nanoseconds], cc_trigger_start_delay:int64[nanoseconds], replica_group_id:int64, replica_group:str
DmaPacket: start_ts:int64[nanoseconds]*, end_ts:int64[nanoseconds]*, duration_ns:int64[nanoseconds]*, pcore_idx:int64, id:int64*, packet_idx:int32*, packet_aggregation_id:int64*, engine_idx:int64, read_bytes:int64[bytes]*, write_bytes:int64[bytes]*, transfer_bytes:int64[bytes]*, throughput:float[bytes_per_second]*, queue_type:str (enum DmaQueueType)*, variable:str, queue_name:str, queue_idx:int64, crc:int64*
DmaPacketAggregated: start_ts:int64[nanoseconds]*, end_ts:int64[nanoseconds]*, duration_ns:int64[nanoseconds]*, id:int64*, pcore_idx:int64, block_id:int32*, queue_idx:int64*, queue_name:str*, queue_type:str (enum DmaQueueType), op:str*, variable:str*, read_bytes:int64[bytes]*, write_bytes:int64[bytes]*, transfer_bytes:int64[bytes]*, throughput:float[bytes_per_second]*, source:str*, dest:str*, semaphore_id:str*, modular_flow_function:str, read_sbuf_partitions:str*, read_num_sbuf_partitions:int32*, read_shape:str*, read_offset:str*, read_steps:str*, write_sbuf_partitions:str*, write_num_sbuf_partitions:int32*, write_shape:str*, write_offset:str*, write_steps:str*, is_transpose_mode:boolean, transpose_element_size:str, transpose_shape:str, transpose_from_shape:str, transpose_to_shape:str, transpose_unroll_factor:str, trigger:int64, completion:int64
ExecutionInfo: execution_index:int32*, neff_name:str, execution_start_ts:int64[nanoseconds], execution_end_ts:int64[nanoseconds], num_subgraphs:int32, row_count:int64
FrameworkInstruction: id:int64*, raw_bir_id:int64*, raw_penguin_id:int64*, raw_hlo_id:int64*, raw_framework_id:int64*, modular_flow_invocation_idx:int64, framework_name:str, start_ts:int64[nanoseconds]*, end_ts:int64[nanoseconds]*, time_intervals:str*, element_count_per_interval:list<int64>*, transpose_element_count_per_interval:list<int64>*, hbm_transfer_size_per_interval:list<int64>[bytes]*, hbm_read_bytes:int64[bytes]*, hbm_write_bytes:int64[bytes]*, sbuf_read_bytes:int64[bytes], sbuf_write_bytes:int64[bytes], load_weight_bytes:int64[bytes], tensor_engine_instruction_count:int64, scalar_engine_instruction_count:int64, sync_engine_instruction_count:int64, gpsimd_engine_instruction_count:int64, vector_engine_instruction_count:int64
HbmUsage: timestamp:int64[nanoseconds]*, current_throughput:float[bytes_per_second]*, total_transfer_bytes:int64[bytes]*, pcore_idx:int64
HloInstruction: id:int64*, raw_bir_id:int64*, raw_penguin_id:int64*, raw_hlo_id:int64*, raw_framework_id:int64*, hlo_name:str*, modular_flow_invocation_idx:int64, start_ts:int64[nanoseconds]*, end_ts:int64[nanoseconds]*, time_intervals:str*, element_count_per_interval:list<int64>*, transpose_element_count_per_interval:list<int64>*, hbm_transfer_size_per_interval:list<int64>[bytes]*, hbm_read_bytes:int64[bytes]*, hbm_write_bytes:int64[bytes]*, sbuf_read_bytes:int64[bytes], sbuf_write_bytes:int64[bytes], load_weight_bytes:int64[bytes]
Instruction: start_ts:int64[nanoseconds]*, end_ts:int64[nanoseconds]*, duration_ns:int64[nanoseconds]*, engine:str*, timeline_track:str, pcore_idx:int64, opcode:str*, operands:str*, compiler_opcode:str, compiler_operands:str, id:int64*, pc:int64*, compiler_pc:int64, penguin_id:str, raw_penguin_id:int64, bir_id:str*, raw_bir_id:int64, bir_instruction_name:str, kernel_instruction_name:str, crc_in:int64, crc_out:int64, evt_wait_time_ns:int64[nanoseconds], hlo_attrs:str, hlo_name:str, raw_hlo_id:int64, raw_framework_id:int64, layer:str, stack_frame_ids:str, nki_source_location:str, bir_debug_info_source_location:str, dma_trigger_start_ts:int64, dma_trigger_end_ts:int64, dma_wait_time_ns:int64[nanoseconds], instruction_chain:str, hbm_read_bytes:int64, hbm_write_bytes:int64, sbuf_read_bytes:int64, sbuf_write_bytes:int64, spill_save_bytes:int64, spill_reload_bytes:int64, psum_read_bytes:int64, psum_write_bytes:int64, psum_read_sbuf_write_bytes:int64, input_queue_bytes:int64, output_queue_bytes:int64, weight_queue_bytes:int64, performance_mode:str (enum PerformanceMode), tensor_instruction_type:str, tensor_elements:int64, raw_flops:int64, adjusted_flops:int64, tensor_elements_transpose:int64, flops_transpose:int64, adjusted_flops_transpose:int64, scalar_activation_fn:str
Metadata: profile_schema_version:str*, ntff_version:int32*, num_physical_cores:int32*, vnc_enabled:boolean*, first_hw_timestamp:int64[nanoseconds]*, last_hw_timestamp:int64[nanoseconds]*, first_ts:str*, last_ts:str*, dma_ddr_bandwidth:float[bytes_per_second]*, num_dma_engines_per_neuroncore:int32*, hbm_ddr_bandwidth:float[bytes_per_second]*, tensor_engine_num_rows:int64*, tensor_engine_num_cols:int64*, tensor_engine_clock_freq:float[gigahertz]*, vector_engine_clock_freq:float[gigahertz]*, vector_engine_num_channels:int64*, scalar_engine_clock_freq:float[gigahertz]*, scalar_engine_num_channels:int64*, gpsimd_engine_clock_freq:float[gigahertz]*, gpsimd_engine_num_channels:int64*, neuroncore_clock_freq:float[gigahertz]*, ticks_per_nanosec:int64*, instance_type:str, runtime_version:str, collectives_version:str, driver_version:str, explorer_version:str, compiler_version:str, neuroncore_idx:int64, neuron_device_idx:int64, ultraserver_id:int64, ultraserver_type:str, ultraserver_size:int32, ultraserver_instance_index:int32, s3_bucket_path:str, profile_name:str, explorer_build_time:str, is_simulation:boolean
NeffHeader: network_name:str, uuid:str, hash:str, enabled_features:str, header_size:int64[bytes], data_size:int64[bytes], major_version:int64, minor_version:int64, package_version:str, build_version:str, cc_participant_count:int64, neuroncore_count:int64, logical_neuroncore_count:int64, pcore_count_per_lnc:int64
OpcodeSummary: engine:str*, opcode:str*, instruction_count:int64*, instruction_time_ns:int64[nanoseconds]*, active_time_ns:int64[nanoseconds]*, active_time_percent:float*
SchemaFields: table_name:str*, table_description:str*, field_name:str*, field_description:str*, field_example:str, field_type:str*, field_required:boolean*, field_format:str, field_unit:str, field_minimum:float, field_maximum:float, field_enum_values:str
Summary: total_time:float[seconds], neuroncore_cycle_count:int64[cycles], model_flops:int64[flops], hardware_flops:int64[flops], transpose_flops:int64[flops], adjusted_hardware_flops:int64[flops], adjusted_transpose_flops:int64[flops], mm_arithmetic_intensity:float, peak_flops_bandwidth_ratio:float, trace_count:int64, event_count:int64, total_row_count:int64, dma_active_cycles:int64[cycles], dma_active_time:float[seconds], dma_active_time_percent:float[percent], static_dma_active_time:float[seconds], dynamic_dma_active_time_percent:float[percent], static_dma_active_time_percent:float[percent], dma_transfer_average_bytes:float[bytes], dma_packet_time:float[seconds], dma_transfer_time:float[seconds], dma_transfer_count:int64, dma_transfer_total_bytes:int64[bytes], dma_queue_count:int64, inputs_and_weights_size_bytes:int64[bytes], inputs_outputs_weights_size_bytes:int64[bytes], weight_size_bytes:int64[bytes], static_dma_packet_count:int64, static_dma_size:int64[bytes], dynamic_dma_packet_percent:float[percent], static_dma_packet_percent:float[percent], dynamic_dma_size_percent:float[percent], static_dma_size_percent:float[percent], mbu_estimated_percent:float[percent], mbu_min_read_util_percent:float[percent], hbm_write_bytes:int64[bytes], hbm_read_bytes:int64[bytes], sbuf_write_bytes:int64[bytes], sbuf_read_bytes:int64[bytes], spill_save_bytes:int64[bytes], spill_reload_bytes:int64[bytes], psum_write_bytes:int64[bytes], psum_read_bytes:int64[bytes], psum_read_sbuf_write_count:int64, psum_read_sbuf_write_bytes:int64[bytes], input_queue_bytes:int64[bytes], output_queue_bytes:int64[bytes], weight_queue_bytes:int64[bytes], software_dynamic_dma_active_time:float[seconds], software_dynamic_dma_active_time_percent:float[percent], software_dynamic_dma_packet_count:int64, software_dynamic_dma_size:int64[bytes], software_dynamic_dma_packet_percent:float[percent], software_dynamic_dma_size_percent:float[percent], hardware_dynamic_dma_active_time:float[seconds], hardware_dynamic_dma_active_time_percent:float[percent], hardware_dynamic_dma_packet_count:int64, hardware_dynamic_dma_size:int64[bytes], hardware_dynamic_dma_packet_percent:float[percent], hardware_dynamic_dma_size_percent:float[percent], tensor_engine_instruction_time:float[seconds], tensor_engine_active_time:float[seconds], tensor_engine_active_time_percent:float[percent], tensor_engine_instruction_count:int64, matmul_instruction_count:int64, mfu_estimated_percent:float[percent], mfu_max_achievable_estimated_percent:float[percent], mfu_hlo_estimated_percent:float[percent], mfu_hlo_max_achievable_estimated_percent:float[percent], mfu_inst_estimated_percent:float[percent], mfu_inst_max_achievable_estimated_percent:float[percent], hfu_estimated_percent:float[percent], vector_engine_instruction_time:float[seconds], vector_engine_active_time:float[seconds], vector_engine_active_time_percent:float[percent], vector_engine_instruction_count:int64, scalar_engine_instruction_time:float[seconds], scalar_engine_active_time:float[seconds], scalar_engine_active_time_percent:float[percent], scalar_engine_instruction_count:int64, activate_instruction_time:float[seconds], activate_instruction_count:int64, sync_engine_instruction_time:float[seconds], sync_engine_active_time:float[seconds], sync_engine_active_time_percent:float[percent], sync_engine_instruction_count:int64, gpsimd_engine_instruction_time:float[seconds], gpsimd_engine_active_time:float[seconds], gpsimd_engine_active_time_percent:float[percent], gpsimd_engine_instruction_count:int64, cc_op_time:float[seconds], cc_op_active_time:float[seconds], cc_op_active_time_percent:float[percent], cc_op_count:int64, cc_cores_instruction_time:float[seconds], cc_cores_instruction_active_time:float[seconds], cc_cores_instruction_active_time_percent:float[percent], cc_cores_instruction_count:int64, total_exec_time:float[seconds], total_active_time:float[seconds], total_active_time_percent:float[percent]
Throttle: duration:int64[nanoseconds]*, k:int32*, n:int32*, timestamp:int64[nanoseconds]*, type:str*, pcore_idx:int64
ThrottleSummary: nc_idx:int32*, throttle_type:str, throttle_active_time_ns:int64[nanoseconds], throttle_active_time_percent:float[percent], max_achievable_util_with_throttling_percent:float[percent]
Warning: message:str*, category:str*
"""

DTYPES = {"int64": pl.Int64, "int32": pl.Int32, "float": pl.Float32, "double": pl.Float64, "str": pl.Utf8, "boolean": pl.Boolean, "list<int64>": pl.List(pl.Int64)}
ENUMS = {"DmaQueueType": "instruction,input,output,data,software_dynamic,hardware_dynamic,unknown", "PerformanceMode": "2x,4x"}


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # int64, int32, float, double, str, boolean, list<int64>
    unit: str | None
    required: bool
    enum: str | None


def parse_schema(text: str) -> dict[str, list[Field]]:
    tables: dict[str, list[Field]] = {}
    for line in text.strip().splitlines():
        table, _, spec = line.partition(": ")
        fields = []
        for item in spec.split(", "):
            m = re.fullmatch(r"(\w+):(.+?)(?:\[([^\]]*)\])?(\*)?", item)
            assert m, item
            name, typ, unit, star = m.groups()
            enum = None
            if e := re.fullmatch(r"str \(enum (\w+)\)", typ):
                typ, enum = "str", e.group(1)
            fields.append(Field(name, typ, unit, bool(star), enum))
        tables[table] = fields
    return tables


SCHEMA = parse_schema(SCHEMA_LINES)

TABLE_DESCRIPTIONS = {
    "ActiveTime": "Merged busy periods of each compute engine on each physical core.",
    "CcOp": "Collective operations run by the collective engines.",
    "DmaPacket": "Single DMA packets, the smallest unit of DMA data movement.",
    "DmaPacketAggregated": "DMA transfers: the packets that move one or more tensors, grouped.",
    "ExecutionInfo": "One row per execution held by the profile.",
    "FrameworkInstruction": "Instructions rolled up by framework operation.",
    "HbmUsage": "HBM traffic sampled over time.",
    "HloInstruction": "Instructions rolled up by HLO operation.",
    "Instruction": "Compute engine instructions, one row per executed instruction.",
    "Metadata": "Profile and system description.",
    "NeffHeader": "Fields read from the NEFF header.",
    "OpcodeSummary": "Instruction counts and times per engine and opcode.",
    "SchemaFields": "Self-description: one row per table and field in this profile.",
    "Summary": "Whole-profile metrics.",
    "Throttle": "Hardware throttling events.",
    "ThrottleSummary": "Throttling totals per NeuronCore and throttle type.",
    "Warning": "Data-quality warnings written while processing.",
}

# ---------------------------------------------------------------- constants of the invented machine

TE_ROWS = TE_COLS = 128
CLOCK_GHZ = 1.4  # NeuronCore and engine clocks (the Trainium1 base clock the schema mentions)
HBM_BW = 410e9  # bytes/s of one HBM stack (invented)
DMA_BW = 27e9  # bytes/s of DMA DDR bandwidth per physical core (invented)
PEAK_RATIO = TE_ROWS * TE_COLS * 2 * CLOCK_GHZ * 1e9 / HBM_BW  # peak tensor FLOPS / peak DRAM bandwidth
SPLIT_ROWS = 256  # Instruction and DmaPacket tables with more rows are written as <Table>_0, _1, …
LEAD_NS = 2_000  # profile time 0 is this long before the first execution of the NEFF
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")
TRACKS = {"tensor": "TensorMatrix", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd", "sync": "Sync"}
SETUP_OPCODES = {"NOP", "SET_ORDERING_MODE", "EVENT_SEMAPHORE", "EVENT_SEMAPHORE_RANGE_CLEAR", "NOTIFY", "COMPARE_BRANCH", "DRAIN", "WRITE", "TENSOR_LOAD", "MODIFY_POOL_CONFIG"}
STATIC_QUEUES = ("instruction", "input", "output", "data")
QUEUES = {  # kind -> (queue_type, queue name stem, queue_idx, source, dest)
    "ifetch": ("instruction", "qInstFetch", 0, "HBM", "INSTRUCTION_BUFFER"),
    "load": ("input", "qInput", 1, "HBM", "SBUF"),
    "weight": ("data", "qWeight", 2, "HBM", "SBUF"),
    "store": ("output", "qOutput", 3, "SBUF", "HBM"),
    "spill_save": ("data", "qSpillSave", 4, "SBUF", "HBM"),
    "spill_reload": ("data", "qSpillReload", 5, "HBM", "SBUF"),
    "dge": ("hardware_dynamic", "qDGE", 6, "HBM", "SBUF"),
    "swdge": ("software_dynamic", "qSwDGE", 7, "HBM", "SBUF"),
}


class Rng:
    """xorshift64*: the same stream on every Python version (random.Random's helpers have changed between versions)."""

    def __init__(self, seed: str) -> None:
        self.s = zlib.crc32(seed.encode()) | 1 << 40

    def below(self, n: int) -> int:
        self.s ^= self.s >> 12
        self.s ^= (self.s << 25) & (2**64 - 1)
        self.s ^= self.s >> 27
        return (((self.s * 0x2545F4914F6CDD1D) & (2**64 - 1)) >> 11) % max(n, 1)

    def jitter(self, ns: int, pct: int = 8) -> int:
        """ns ± pct %."""
        span = ns * pct // 100
        return ns - span + self.below(2 * span + 1) if span else ns


# ---------------------------------------------------------------- the device model


@dataclass
class Inst:
    start: int
    end: int
    engine: str
    pcore: int
    opcode: str
    operands: str
    compiler_opcode: str
    framework: str | None = None
    hlo: str | None = None
    exec_index: int = 0
    hbm_read: int = 0
    hbm_write: int = 0
    sbuf_read: int = 0
    sbuf_write: int = 0
    spill_save: int = 0
    spill_reload: int = 0
    raw_flops: int | None = None
    flops_transpose: int | None = None
    itype: str | None = None
    act_fn: str | None = None
    perf_mode: str | None = None
    evt_wait: int = 0
    dma_wait: int | None = None
    seq: int = 0
    id: int = 0
    pc: int = 0


@dataclass
class Transfer:
    pcore: int
    kind: str
    variable: str
    packets: list  # [(start, end, bytes)]
    exec_index: int
    id: int = 0
    seq: int = 0

    @property
    def start(self) -> int:
        return self.packets[0][0]

    @property
    def end(self) -> int:
        return max(p[1] for p in self.packets)

    @property
    def nbytes(self) -> int:
        return sum(p[2] for p in self.packets)


@dataclass
class CcOp:
    start: int
    end: int
    operation: str
    input_size: int
    output_size: int
    delay: int
    op_id: int


@dataclass
class ThrottleEvent:
    timestamp: int
    duration: int
    k: int
    n: int
    type: str
    pcore: int


@dataclass
class Step:
    """One framework op inside a NEFF: DMA loads, a chain of compute instructions, DMA stores."""

    framework: str
    hlo: str
    loads: list  # [(variable, bytes, kind)]
    work: list  # [(engine, opcode, count, dur_ns, options)] options: sbuf, flops, transpose, act, perf, overlap, hlo
    stores: list  # [(variable, bytes, kind)]
    tiles: int = 1  # repeat `work` this many times (compiler tiling)


@dataclass
class Profile:
    """Everything one processed profile holds, before it becomes tables."""

    name: str  # profile_name
    neff_name: str  # ExecutionInfo.neff_name
    neff_header: dict
    executions: list  # [(start, end)] ns relative to profile start
    schema_version: str = "7.4.0"
    first_ts: dt.datetime = dt.datetime(2026, 1, 15, 10, 0, tzinfo=dt.timezone.utc)
    insts: list = field(default_factory=list)
    transfers: list = field(default_factory=list)
    ccops: list = field(default_factory=list)
    throttles: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    split_rows: int = SPLIT_ROWS


class Device:
    """Lays out instructions and DMA transfers on the engines of the physical cores of one profile."""

    def __init__(self, profile: Profile, rng: Rng, packet: int, dma_bw: float, dma_wait: int) -> None:
        self.p, self.rng, self.packet, self.bw, self.dma_wait = profile, rng, packet, dma_bw, dma_wait
        self.seq = 0

    def inst(self, engine: str, pcore: int, start: int, dur: int, opcode: str, *, compiler_opcode: str | None = None, operands: str = "", ex: int = 0, **kw) -> Inst:
        self.seq += 1
        i = Inst(start, start + dur, engine, pcore, opcode, operands or f"{opcode.lower()} p{pcore}", compiler_opcode or opcode, exec_index=ex, seq=self.seq, **kw)
        self.p.insts.append(i)
        return i

    def transfer(self, pcore: int, t: int, variable: str, nbytes: int, kind: str, ex: int, framework: str | None, hlo: str | None) -> int:
        """A sync-engine trigger at t and the DMA packets it starts; returns the time the last packet ends."""
        trig = self.inst("sync", pcore, t, self.rng.jitter(64), "WRITE", compiler_opcode="PSEUDO_DMA_TRIGGER", operands=f"{QUEUES[kind][1]}{pcore} {variable} size={nbytes}", ex=ex, framework=framework, hlo=hlo)
        start = trig.end + self.rng.jitter(self.dma_wait)
        packets, cursor, left = [], start, nbytes
        while left:
            size = min(left, self.packet)
            dur = 90 + int(size * 1e9 / self.bw)
            packets.append((cursor, cursor + dur, size))
            cursor += dur + 20
            left -= size
        self.seq += 1
        tr = Transfer(pcore, kind, variable, packets, ex, seq=self.seq)
        self.p.transfers.append(tr)
        src, dst = QUEUES[kind][3], QUEUES[kind][4]
        trig.hbm_read = nbytes if src == "HBM" else 0
        trig.hbm_write = nbytes if dst == "HBM" else 0
        trig.spill_save = nbytes if kind == "spill_save" else 0
        trig.spill_reload = nbytes if kind == "spill_reload" else 0
        trig.dma_wait = start - trig.end
        return tr.end

    def step(self, pcore: int, t: int, step: Step, ex: int) -> int:
        """Loads (in parallel), the compute chain, stores; returns the end of the last store."""
        ends = [t]
        for variable, nbytes, kind in step.loads:
            ends.append(self.transfer(pcore, t, variable, nbytes, kind, ex, step.framework, step.hlo))
            t = self.p.insts[-1].end + 30
        cursor, prev = max(ends) + self.rng.jitter(150), None
        for _ in range(step.tiles):
            for engine, opcode, count, dur, opts in step.work:
                for _ in range(count):
                    overlap = opts.get("overlap", 0)
                    start = prev.end - overlap if overlap and prev is not None and prev.engine == engine else cursor
                    flops = opts.get("flops")
                    prev = self.inst(
                        engine, pcore, start, self.rng.jitter(dur), opcode, ex=ex, framework=step.framework, hlo=opts.get("hlo", step.hlo),
                        sbuf_read=opts.get("sbuf", 0), sbuf_write=opts.get("sbuf", 0) // (2 if opcode == "TENSOR_REDUCE" else 1),
                        raw_flops=flops, flops_transpose=(flops if opts.get("transpose") else 0) if flops is not None else None,
                        itype=("TRANSPOSE" if opts.get("transpose") else "REGULAR") if engine == "tensor" and opcode == "MATMUL" else None,
                        act_fn=opts.get("act"), perf_mode=opts.get("perf"), evt_wait=opts.get("wait", 0),
                        operands=opts.get("operands", f"{opcode.lower()} src=sb[{pcore}] size={opts.get('sbuf', 0)}"),
                    )
                    cursor = max(cursor, prev.end) + self.rng.jitter(40, 25)
        t = cursor + self.rng.jitter(120)
        end = t
        for variable, nbytes, kind in step.stores:
            end = max(end, self.transfer(pcore, t, variable, nbytes, kind, ex, step.framework, step.hlo))
            t = self.p.insts[-1].end + 30
        return end

    def execution(self, ex: int, steps: list[Step], *, ifetch: int, work_at: int = 30, pcores: int = 2) -> None:
        """One execution on every physical core: instruction fetch, constant set-up, idle, the steps, a final NOTIFY."""
        s, e = self.p.executions[ex]
        for pcore in range(pcores):
            t = s + 1_200 + 180 * pcore
            t = self.transfer(pcore, t, "instructions", ifetch, "ifetch", ex, None, None)
            self.inst("gpsimd", pcore, t + 100, self.rng.jitter(420), "MEMSET", operands=f"memset ones p{pcore} size=256", ex=ex, sbuf_write=256)
            t = max(t + 700, s + (e - s) * work_at // 100 + 240 * pcore)
            for st in steps:
                t = self.step(pcore, t, st, ex) + self.rng.jitter(900)
            last = self.inst("sync", pcore, t, self.rng.jitter(50), "NOTIFY", operands=f"notify host exec={ex}", ex=ex)
            assert last.end < e - 500, (self.p.name, ex, last.end, e)


# ---------------------------------------------------------------- helpers shared by the tables


def merged(spans) -> list[tuple[int, int]]:
    """Union of [start, end) spans as sorted disjoint intervals (overlapping or touching spans merge)."""
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def busy(spans) -> int:
    return sum(e - s for s, e in merged(spans))


def seconds(ns: int) -> float:
    return ns / 1e9


def pct(part: int | float, whole: int | float) -> float:
    return 100.0 * part / whole if whole else 0.0


def packets(p: Profile) -> list[tuple[Transfer, int, tuple]]:
    return [(tr, i, pk) for tr in p.transfers for i, pk in enumerate(tr.packets)]


def finalize(p: Profile) -> None:
    """Ids in time order; pc per (execution, core, engine); transfer ids; sanity of the layout."""
    p.insts.sort(key=lambda i: (i.start, i.pcore, ENGINES.index(i.engine), i.seq))
    pcs: dict = {}
    for n, i in enumerate(p.insts):
        i.id = n
        key = (i.exec_index, i.pcore, i.engine)
        i.pc, pcs[key] = pcs.get(key, 0), pcs.get(key, 0) + 1
        s, e = p.executions[i.exec_index]
        assert s <= i.start < i.end <= e, (p.name, i)
    p.transfers.sort(key=lambda t: (t.start, t.pcore, t.seq))
    for n, t in enumerate(p.transfers):
        t.id = n
        s, e = p.executions[t.exec_index]
        assert s <= t.start and t.end <= e, (p.name, t)
    for c in p.ccops:
        assert any(s <= c.start - c.delay and c.end <= e for s, e in p.executions)


# ---------------------------------------------------------------- tables


def rows_to_frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """A frame with the reference's column order and dtypes for the columns present in `rows` (all required ones must be)."""
    fields = SCHEMA[table]
    present = {k for r in rows for k in r}
    known = {f.name for f in fields}
    assert present <= known, (table, present - known)
    missing = [f.name for f in fields if f.required and f.name not in present]
    assert not missing, (table, missing)
    return pl.DataFrame([pl.Series(f.name, [r.get(f.name) for r in rows], dtype=DTYPES[f.type]) for f in fields if f.name in present])


def instruction_rows(p: Profile) -> list[dict]:
    fw_ids, hlo_ids = ids_of(p)
    out = []
    for i in p.insts:
        tensor = i.engine == "tensor" and i.raw_flops is not None
        out.append({
            "start_ts": i.start, "end_ts": i.end, "duration_ns": i.end - i.start, "engine": i.engine,
            "timeline_track": f"{TRACKS[i.engine]}{i.pcore}", "pcore_idx": i.pcore, "opcode": i.opcode, "operands": i.operands,
            "compiler_opcode": i.compiler_opcode, "id": i.id, "pc": i.pc, "bir_id": f"sg0000:{1000 + i.id}",
            "hlo_name": i.hlo, "raw_hlo_id": hlo_ids.get(i.hlo), "raw_framework_id": fw_ids.get(i.framework),
            "evt_wait_time_ns": i.evt_wait, "dma_wait_time_ns": i.dma_wait,
            "hbm_read_bytes": i.hbm_read, "hbm_write_bytes": i.hbm_write, "sbuf_read_bytes": i.sbuf_read, "sbuf_write_bytes": i.sbuf_write,
            "spill_save_bytes": i.spill_save, "spill_reload_bytes": i.spill_reload,
            "performance_mode": i.perf_mode, "tensor_instruction_type": i.itype,
            "raw_flops": i.raw_flops if tensor else None, "adjusted_flops": i.raw_flops if tensor else None,  # BF16: 1.0x
            "flops_transpose": i.flops_transpose if tensor else None, "adjusted_flops_transpose": i.flops_transpose if tensor else None,
            "scalar_activation_fn": i.act_fn,
        })
    return out


def ids_of(p: Profile) -> tuple[dict, dict]:
    fw, hlo = {}, {}
    for i in sorted(p.insts, key=lambda i: i.seq):
        if i.framework is not None:
            fw.setdefault(i.framework, 100 + len(fw))
        if i.hlo is not None:
            hlo.setdefault(i.hlo, 500 + len(hlo))
    return fw, hlo


def active_rows(p: Profile) -> list[dict]:
    out = []
    for engine in ENGINES:
        for pcore in sorted({i.pcore for i in p.insts}):
            for s, e in merged((i.start, i.end) for i in p.insts if i.engine == engine and i.pcore == pcore):
                out.append({"start_ts": s, "end_ts": e, "engine": engine, "pcore_idx": pcore, "duration_ns": e - s})
    return out


def total_ns(p: Profile) -> int:
    """Summary.total_time in ns: the sum of the executions' spans (idle gaps inside an execution count)."""
    return sum(e - s for s, e in p.executions)


def opcode_rows(p: Profile) -> list[dict]:
    whole = total_ns(p)
    keys = sorted({(i.engine, i.opcode) for i in p.insts}, key=lambda k: (ENGINES.index(k[0]), k[1]))
    out = []
    for engine, opcode in keys:
        mine = [i for i in p.insts if i.engine == engine and i.opcode == opcode]
        active = busy((i.start, i.end) for i in mine)  # across both physical cores
        out.append({"engine": engine, "opcode": opcode, "instruction_count": len(mine), "instruction_time_ns": sum(i.end - i.start for i in mine),
                    "active_time_ns": active, "active_time_percent": pct(active, whole)})
    return out


def dma_rows(p: Profile) -> tuple[list[dict], list[dict]]:
    agg, pk_rows = [], []
    for tr in p.transfers:
        qtype, qname, qidx, src, dst = QUEUES[tr.kind]
        name = f"{qname}{tr.pcore}-Q{qidx}-E{qidx + 8 * tr.pcore}"
        rows_sbuf = 2 if "SBUF" in (src, dst) else 0
        agg.append({
            "start_ts": tr.start, "end_ts": tr.end, "duration_ns": tr.end - tr.start, "id": tr.id, "pcore_idx": tr.pcore, "block_id": tr.id % 64,
            "queue_idx": qidx, "queue_name": name, "queue_type": qtype, "op": "copy", "variable": tr.variable,
            "read_bytes": tr.nbytes, "write_bytes": tr.nbytes, "transfer_bytes": tr.nbytes, "throughput": tr.nbytes / seconds(tr.end - tr.start),
            "source": src, "dest": dst, "semaphore_id": f"sem{qidx}_{tr.pcore}",
            "read_sbuf_partitions": "0-1" if src == "SBUF" else "", "read_num_sbuf_partitions": rows_sbuf if src == "SBUF" else 0,
            "read_shape": f"[{tr.nbytes}]", "read_offset": "0", "read_steps": "1",
            "write_sbuf_partitions": "0-1" if dst == "SBUF" else "", "write_num_sbuf_partitions": rows_sbuf if dst == "SBUF" else 0,
            "write_shape": f"[{tr.nbytes}]", "write_offset": "0", "write_steps": "1",
        })
    flat = sorted(packets(p), key=lambda x: (x[2][0], x[0].pcore, x[0].id, x[1]))
    for n, (tr, k, (s, e, size)) in enumerate(flat):
        qtype, qname, qidx, _, _ = QUEUES[tr.kind]
        pk_rows.append({
            "start_ts": s, "end_ts": e, "duration_ns": e - s, "pcore_idx": tr.pcore, "id": n, "packet_idx": k, "packet_aggregation_id": tr.id,
            "engine_idx": qidx + 8 * tr.pcore, "read_bytes": size, "write_bytes": size, "transfer_bytes": size, "throughput": size / seconds(e - s),
            "queue_type": qtype, "variable": tr.variable, "queue_name": f"{qname}{tr.pcore}-Q{qidx}-E{qidx + 8 * tr.pcore}", "queue_idx": qidx,
            "crc": zlib.crc32(f"{p.name}/{n}".encode()),
        })
    return agg, pk_rows


def hbm_usage_rows(p: Profile) -> list[dict]:
    """Per physical core: cumulative HBM bytes of the packets ended by each sample time, and the rate since the previous sample."""
    last = max(e for _, e in p.executions)
    step = max(1_000, -(-last // 48) // 1_000 * 1_000)
    out = []
    hbm = [(tr.pcore, pk[1], pk[2]) for tr, _, pk in packets(p) if "HBM" in QUEUES[tr.kind][3:]]
    for pcore in sorted({c for c, _, _ in hbm}):
        prev = 0
        for k in range(1, -(-last // step) + 1):
            t = k * step
            total = sum(b for c, end, b in hbm if c == pcore and end <= t)
            out.append({"timestamp": t, "current_throughput": (total - prev) / seconds(step), "total_transfer_bytes": total, "pcore_idx": pcore})
            prev = total
    return out


def rollup_rows(p: Profile, level: str) -> list[dict]:
    """FrameworkInstruction (level 'framework') or HloInstruction (level 'hlo') rows from the instructions they group."""
    fw_ids, hlo_ids = ids_of(p)
    names = fw_ids if level == "framework" else hlo_ids
    out = []
    for name in names:
        mine = [i for i in p.insts if getattr(i, level) == name]
        intervals = merged((i.start, i.end) for i in mine)
        def per_interval(value) -> list[int]:
            return [sum(value(i) for i in mine if s <= i.start < e) for s, e in intervals]
        first = min(mine, key=lambda i: i.id)
        row = {
            "id": first.id, "raw_bir_id": 1000 + first.id, "raw_penguin_id": 3000 + hlo_ids.get(first.hlo, 0), "raw_hlo_id": hlo_ids.get(first.hlo, 0),
            "raw_framework_id": fw_ids.get(first.framework, 0), "modular_flow_invocation_idx": 0,
            "start_ts": min(i.start for i in mine), "end_ts": max(i.end for i in mine),
            "time_intervals": json.dumps([list(iv) for iv in intervals]),
            "element_count_per_interval": per_interval(lambda i: i.sbuf_read // 2),
            "transpose_element_count_per_interval": per_interval(lambda i: i.sbuf_read // 2 if i.itype == "TRANSPOSE" else 0),
            "hbm_transfer_size_per_interval": per_interval(lambda i: i.hbm_read + i.hbm_write),
            "hbm_read_bytes": sum(i.hbm_read for i in mine), "hbm_write_bytes": sum(i.hbm_write for i in mine),
            "sbuf_read_bytes": sum(i.sbuf_read for i in mine), "sbuf_write_bytes": sum(i.sbuf_write for i in mine),
        }
        if level == "framework":
            row["framework_name"] = name
            row["raw_hlo_id"] = min(hlo_ids.get(i.hlo, 0) for i in mine)
            for engine in ENGINES:
                row[f"{engine}_engine_instruction_count"] = sum(i.engine == engine for i in mine)
        else:
            row["hlo_name"] = name
        out.append(row)
    return out


def summary_row(p: Profile) -> dict:
    """The Summary fields the fixtures model (Summary has no required field; a real profile writes many more).

    Every *_percent uses total_time (the executions' summed spans) as 100 %. Per-engine figures are over both
    physical cores: counts and instruction time add up, active time is the union of both cores' intervals.
    """
    whole = total_ns(p)
    tensor = [i for i in p.insts if i.engine == "tensor" and i.raw_flops is not None]
    hw = sum(i.raw_flops for i in tensor)
    tr = sum(i.flops_transpose for i in tensor)
    hbm_r, hbm_w = sum(i.hbm_read for i in p.insts), sum(i.hbm_write for i in p.insts)
    pks = [(QUEUES[t.kind][0], pk) for t, _, pk in packets(p)]
    dma_active = busy((pk[0], pk[1]) for _, pk in pks)
    total_bytes = sum(pk[2] for _, pk in pks)
    static = [pk for q, pk in pks if q in STATIC_QUEUES]
    row: dict = {
        "total_time": seconds(whole),
        "model_flops": hw - tr, "hardware_flops": hw, "transpose_flops": tr, "adjusted_hardware_flops": hw, "adjusted_transpose_flops": tr,  # bf16: 1.0x
        "mm_arithmetic_intensity": (hw - tr) / (hbm_r + hbm_w), "peak_flops_bandwidth_ratio": PEAK_RATIO,
        "dma_active_time": seconds(dma_active), "dma_active_time_percent": pct(dma_active, whole),
        "dma_transfer_average_bytes": total_bytes / len(p.transfers), "dma_packet_time": seconds(sum(pk[1] - pk[0] for _, pk in pks)),
        "dma_transfer_count": len(p.transfers), "dma_transfer_total_bytes": total_bytes,
        "static_dma_packet_count": len(static), "static_dma_size": sum(pk[2] for pk in static),
    }
    for q in ("software_dynamic", "hardware_dynamic"):
        mine = [pk for kind, pk in pks if kind == q]
        row |= {f"{q}_dma_packet_count": len(mine), f"{q}_dma_size": sum(pk[2] for pk in mine)}
    row |= {"hbm_write_bytes": hbm_w, "hbm_read_bytes": hbm_r,
            "spill_save_bytes": sum(i.spill_save for i in p.insts), "spill_reload_bytes": sum(i.spill_reload for i in p.insts)}
    for engine in ENGINES:
        mine = [i for i in p.insts if i.engine == engine]
        active = busy((i.start, i.end) for i in mine)
        row |= {f"{engine}_engine_instruction_time": seconds(sum(i.end - i.start for i in mine)), f"{engine}_engine_active_time": seconds(active),
                f"{engine}_engine_active_time_percent": pct(active, whole), f"{engine}_engine_instruction_count": len(mine)}
        if engine == "tensor":
            row["matmul_instruction_count"] = sum(i.opcode == "MATMUL" for i in mine)
    if p.ccops:  # written only for a profile with collectives
        cc_active = busy((c.start, c.end) for c in p.ccops)
        row |= {"cc_op_time": seconds(sum(c.end - c.start for c in p.ccops)), "cc_op_active_time": seconds(cc_active),
                "cc_op_active_time_percent": pct(cc_active, whole), "cc_op_count": len(p.ccops)}
    work = [(i.start, i.end) for i in p.insts if i.opcode not in SETUP_OPCODES] + [(pk[0], pk[1]) for _, pk in pks]
    all_active = busy([(i.start, i.end) for i in p.insts] + [(pk[0], pk[1]) for _, pk in pks] + [(c.start, c.end) for c in p.ccops])
    row |= {"total_exec_time": seconds(max(e for _, e in work) - min(s for s, _ in work)), "total_active_time": seconds(all_active),
            "total_active_time_percent": pct(all_active, whole)}
    return row


def execution_row_counts(p: Profile) -> list[int]:
    """Timeline rows (instructions, DMA packets, collectives) that start inside each execution."""
    starts = [i.start for i in p.insts] + [pk[0] for _, _, pk in packets(p)] + [c.start for c in p.ccops]
    return [sum(s <= t < e for t in starts) for s, e in p.executions]


def execution_rows(p: Profile) -> list[dict]:
    counts = execution_row_counts(p)
    return [{"execution_index": n, "neff_name": p.neff_name, "execution_start_ts": s, "execution_end_ts": e, "num_subgraphs": 1, "row_count": counts[n]}
            for n, (s, e) in enumerate(p.executions)]


def fmt_ts(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S.%f") + "+00:00"


def metadata_row(p: Profile) -> dict:
    last = max(e for _, e in p.executions)
    return {
        "profile_schema_version": p.schema_version, "ntff_version": 6, "num_physical_cores": 2, "vnc_enabled": True,
        "first_hw_timestamp": 0, "last_hw_timestamp": last,
        "first_ts": fmt_ts(p.first_ts), "last_ts": fmt_ts(p.first_ts + dt.timedelta(microseconds=last // 1000)),
        "dma_ddr_bandwidth": DMA_BW, "num_dma_engines_per_neuroncore": 16, "hbm_ddr_bandwidth": HBM_BW,
        "tensor_engine_num_rows": TE_ROWS, "tensor_engine_num_cols": TE_COLS, "tensor_engine_clock_freq": CLOCK_GHZ,
        "vector_engine_clock_freq": CLOCK_GHZ, "vector_engine_num_channels": 128, "scalar_engine_clock_freq": CLOCK_GHZ,
        "scalar_engine_num_channels": 128, "gpsimd_engine_clock_freq": CLOCK_GHZ, "gpsimd_engine_num_channels": 8,
        "neuroncore_clock_freq": CLOCK_GHZ, "ticks_per_nanosec": 1, "instance_type": "trn1.2xlarge",
        "runtime_version": "0.0.0+synthetic", "collectives_version": "0.0.0+synthetic", "driver_version": "0.0.0+synthetic",
        "explorer_version": "synthetic", "compiler_version": "0.0.0+synthetic", "profile_name": p.name,
    }


def ccop_rows(p: Profile) -> list[dict]:
    ranks = 2
    out = []
    for c in p.ccops:
        dur = c.end - c.start
        algbw = max(c.input_size, c.output_size) / seconds(dur)
        factor = 2 * (ranks - 1) / ranks if c.operation == "AllReduce" else (ranks - 1) / ranks  # ring bus-bandwidth factors
        out.append({"start_ts": c.start, "end_ts": c.end, "duration_ns": dur, "operation": c.operation, "algorithm": "Ring",
                    "num_elements": c.input_size // 2, "dtype": "bf16", "op_id": c.op_id, "stream_id": 0, "stream_index": 0, "trigger_engine": "Pool",
                    "input_size": c.input_size, "output_size": c.output_size, "algorithm_bandwidth": algbw, "bus_bandwidth": algbw * factor,
                    "trigger_start_ts": c.start - c.delay, "cc_trigger_start_delay": c.delay, "replica_group_id": 0, "replica_group": "[[0, 1]]"})
    return out


def throttle_rows(p: Profile) -> tuple[list[dict], list[dict]]:
    events = [{"duration": t.duration, "k": t.k, "n": t.n, "timestamp": t.timestamp, "type": t.type, "pcore_idx": t.pcore} for t in p.throttles]
    whole = total_ns(p)
    summary = []
    for kind in [*sorted({t.type for t in p.throttles}), "all"]:
        mine = [t for t in p.throttles if kind in ("all", t.type)]
        active = busy((t.timestamp, t.timestamp + t.duration) for t in mine)
        util = sum(t.duration * t.k / t.n for t in mine) / sum(t.duration for t in mine)  # over the throttled periods
        summary.append({"nc_idx": 0, "throttle_type": kind, "throttle_active_time_ns": active, "throttle_active_time_percent": pct(active, whole),
                        "max_achievable_util_with_throttling_percent": 100.0 * util})
    return events, summary


def schema_rows(tables: dict[str, pl.DataFrame]) -> list[dict]:
    kinds = {"int64": ("integer", "int64"), "int32": ("integer", "int32"), "float": ("number", "float"), "double": ("number", "double"),
             "str": ("string", None), "boolean": ("boolean", None), "list<int64>": ("array", "int64")}
    cols = {"SchemaFields": ["table_name", "table_description", "field_name", "field_description", "field_type", "field_required", "field_format", "field_unit", "field_enum_values"]}
    out = []
    for table in [*tables, "SchemaFields"]:
        names = cols.get(table) or tables[table].columns
        for f in SCHEMA[table]:
            if f.name not in names:
                continue
            typ, fmt = kinds[f.type]
            out.append({"table_name": table, "table_description": TABLE_DESCRIPTIONS[table], "field_name": f.name,
                        "field_description": describe(f), "field_type": typ, "field_required": f.required, "field_format": fmt,
                        "field_unit": f.unit, "field_enum_values": ENUMS.get(f.enum) if f.enum else None})
    return out


def describe(f: Field) -> str:
    """A short description in our own words (synthetic fixtures say what the value is, not how Explorer computes it)."""
    words = f.name.replace("_", " ")
    unit = f" in {f.unit}" if f.unit else ""
    return f"{words[0].upper()}{words[1:]}{unit} (synthetic fixture value)."


def profile_tables(p: Profile, only: tuple[str, ...] | None = None) -> dict[str, pl.DataFrame]:
    """Every table of the profile that has rows (or those of `only`), as frames typed per the schema."""
    finalize(p)
    agg, pks = dma_rows(p)
    tables: dict[str, list[dict]] = {
        "Metadata": [metadata_row(p)],
        "NeffHeader": [p.neff_header],
        "ExecutionInfo": execution_rows(p),
        "Summary": [summary_row(p)],
        "ActiveTime": active_rows(p),
        "Instruction": instruction_rows(p),
        "OpcodeSummary": opcode_rows(p),
        "DmaPacketAggregated": agg,
        "DmaPacket": pks,
        "HbmUsage": hbm_usage_rows(p),
        "FrameworkInstruction": rollup_rows(p, "framework"),
        "HloInstruction": rollup_rows(p, "hlo"),
        "CcOp": ccop_rows(p),
        "Warning": [{"message": m, "category": c} for m, c in p.warnings],
    }
    if p.throttles:
        tables["Throttle"], tables["ThrottleSummary"] = throttle_rows(p)
    frames = {name: rows_to_frame(name, rows) for name, rows in tables.items() if rows and (only is None or name in only)}  # no rows -> no file
    frames["SchemaFields"] = rows_to_frame("SchemaFields", schema_rows(frames))
    return frames


def write_frame(directory: Path, table: str, df: pl.DataFrame, split_rows: int | None = None) -> list[Path]:
    """<table>.parquet, or <table>_0.parquet, _1, … when the table is longer than split_rows (the documented split)."""
    directory.mkdir(parents=True, exist_ok=True)
    if split_rows is None or df.height <= split_rows:
        paths = [(directory / f"{table}.parquet", df)]
    else:
        paths = [(directory / f"{table}_{n}.parquet", df.slice(off, split_rows)) for n, off in enumerate(range(0, df.height, split_rows))]
    for path, part in paths:
        part.write_parquet(path, compression="zstd", statistics=False)
    return [path for path, _ in paths]


def write_profile(directory: Path, p: Profile, only: tuple[str, ...] | None = None) -> dict[str, pl.DataFrame]:
    shutil.rmtree(directory, ignore_errors=True)
    frames = profile_tables(p, only)
    for table, df in frames.items():
        write_frame(directory, table, df, p.split_rows if table in ("Instruction", "DmaPacket") else None)
    return frames


# ---------------------------------------------------------------- reading the capture sessions


def number_ns(text: str) -> int:
    """A JSON number in µs (its text) as exact integer ns: whole part × 1000 + up to three fraction digits."""
    whole, _, frac = text.partition(".")
    assert re.fullmatch(r"\d+", whole) and re.fullmatch(r"\d{0,3}", frac), text
    return int(whole) * 1000 + int((frac + "000")[:3])


def executions_in_trace(trace: Path) -> tuple[dict[str, list[tuple[int, int]]], int | None]:
    """{neff stem: [(start_ns, dur_ns)]} from the nc_exec_running kernel events (their documented model_name arg names the NEFF), and the profiler span's start."""
    doc = json.loads(trace.read_text(), parse_float=str, parse_int=str)
    out: dict[str, list[tuple[int, int]]] = {}
    span = None
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("name") == "nc_exec_running":
            out.setdefault(e["args"]["model_name"].removesuffix(".neff"), []).append((number_ns(e["ts"]), number_ns(e["dur"])))
        if e.get("ph") == "X" and e.get("cat") == "Trace":
            span = number_ns(e["ts"])
    return {k: sorted(v) for k, v in out.items()}, span


def neff_header(path: Path) -> dict:
    """NeffHeader fields from the 1024-byte header (formats.md section 4)."""
    raw = path.read_bytes()[:1024]
    pkg, header_size, data_size, major, minor = struct.unpack_from("<QQQQQ", raw, 0)
    build = raw[40:168].rstrip(b"\0").decode()
    (num_tpb,) = struct.unpack_from("<I", raw, 168)
    digest = raw[172:204] if pkg == 1 else raw[172:188]  # sha256, or md5 (pkg_version 2)
    uuid, name = raw[204:220], raw[220:476].rstrip(b"\0").decode()
    return {"network_name": name, "uuid": uuid.hex(), "hash": digest.hex(), "header_size": header_size, "data_size": data_size,
            "major_version": major, "minor_version": minor, "package_version": str(pkg), "build_version": build, "neuroncore_count": num_tpb}


# ---------------------------------------------------------------- the RMSNorm programs (4x512 bf16, 2 rows per physical core)

X_CORE = 2 * 512 * 2  # bytes of x on one physical core
W = 512 * 2
FW = "rms_norm/aten."

NAIVE_STEPS = [  # one per NEFF, in the order the trace launches them
    Step(FW + "mul", "multiply.1", [("x", X_CORE, "load")], [("vector", "TENSOR_TENSOR", 2, 620, {"sbuf": 1024})], [("x_sq", X_CORE, "store")]),
    Step(FW + "mean", "reduce.1", [("x_sq", X_CORE, "load")],
         [("vector", "TENSOR_REDUCE", 2, 540, {"sbuf": 1024}), ("tensor", "MATMUL", 1, 180, {"sbuf": 1024, "flops": 2 * 2 * 512})], [("mean", 4, "store")]),
    Step(FW + "add", "add.1", [("mean", 4, "load"), ("eps", 2, "load")], [("vector", "TENSOR_SCALAR", 1, 210, {"sbuf": 4})], [("var_eps", 4, "store")]),
    Step(FW + "rsqrt", "rsqrt.1", [("var_eps", 4, "load")], [("scalar", "ACTIVATE", 1, 340, {"sbuf": 4, "act": "Rsqrt"})], [("rstd", 4, "store")]),
    Step(FW + "mul", "multiply.1", [("x", X_CORE, "load"), ("rstd", 4, "load")], [("vector", "TENSOR_SCALAR_PTR", 2, 600, {"sbuf": 1024})], [("x_norm", X_CORE, "store")]),
    Step(FW + "mul", "multiply.1", [("x_norm", X_CORE, "load"), ("weight", W, "weight")], [("vector", "TENSOR_TENSOR", 2, 630, {"sbuf": 1024})], [("out", X_CORE, "store")]),
]


def tiled_rmsnorm(names: list[str], tiles: int) -> list[Step]:
    """The whole RMSNorm in one NEFF: square+reduce per tile, a ones-vector MATMUL to sum across partitions, rsqrt, scale, weight.

    `names` are the framework names of the six stages (one fused op for torch.rms_norm, the six aten ops for torch.compile).
    """
    sq, mean, add, rsqrt, mul_r, mul_w = names
    tile = 1024 // tiles
    return [
        Step(sq, "multiply.1", [("x", X_CORE, "load"), ("weight", W, "weight")],
             [("vector", "TENSOR_TENSOR", 1, 150, {"sbuf": tile, "perf": "2x"}), ("vector", "TENSOR_REDUCE", 1, 120, {"sbuf": tile, "overlap": 30, "hlo": "reduce.2"})],
             [], tiles=tiles),
        Step(mean, "dot.3", [], [("tensor", "LDWEIGHTS", 1, 40, {"sbuf": 256}), ("tensor", "MATMUL", 1, 90, {"sbuf": tile, "flops": 4096, "overlap": 10})], [], tiles=tiles),
        Step(mean, "transpose.4", [], [("tensor", "MATMUL", 2, 110, {"sbuf": 256, "flops": 2048, "transpose": True})], []),
        Step(add, "add.5", [], [("vector", "TENSOR_SCALAR", 1, 200, {"sbuf": 8})], []),
        Step(rsqrt, "rsqrt.6", [], [("scalar", "ACTIVATE", 1, 300, {"sbuf": 8, "act": "Rsqrt"})], []),
        Step(mul_r, "multiply.7", [], [("vector", "TENSOR_SCALAR_PTR", 1, 140, {"sbuf": tile, "perf": "2x"})], [], tiles=tiles),
        Step(mul_w, "multiply.8", [], [("gpsimd", "TENSOR_TENSOR", 1, 160, {"sbuf": tile})], [("out", X_CORE, "store")], tiles=tiles),
    ]


RMSNORM_PROGRAMS = {  # variant -> one program (list of steps) per NEFF, in launch order
    "naive": [[s] for s in NAIVE_STEPS],
    "fused": [tiled_rmsnorm([FW + "_fused_rms_norm"] * 6, tiles=32)],
    "compiled": [tiled_rmsnorm([FW + n for n in ("mul", "mean", "add", "rsqrt", "mul", "mul")], tiles=16)],
}

WARN_UNATTRIBUTED = "{n} instructions carry no framework debug info (instruction fetch triggers, constant set-up, end-of-execution notify); synthetic fixture"
WARN_SKEW = ("Timestamps of physical cores 0 and 1 come from separate counters and were not re-aligned; synthetic fixture", "Timestamp Alignment")


def add_warnings(p: Profile) -> None:
    n = sum(i.framework is None for i in p.insts)
    p.warnings = [(WARN_UNATTRIBUTED.format(n=n), "Missing Data"), WARN_SKEW]


def rmsnorm_profiles(source: Path) -> list[tuple[Path, Profile]]:
    """(relative directory, profile) for every NEFF of every RMSNorm session under source/rmsnorm."""
    out = []
    for variant, programs in RMSNORM_PROGRAMS.items():
        (trace,) = sorted((source / "rmsnorm" / variant).glob("*/*/trace.json"))
        session = trace.parent
        capture = json.loads((session.parents[1] / "capture.json").read_text())
        started = dt.datetime.fromisoformat(capture["start_time"].replace("Z", "+00:00"))
        runs, span = executions_in_trace(trace)
        order = sorted(runs, key=lambda stem: runs[stem][0][0])  # NEFFs in launch order
        assert len(order) == len(programs), (variant, order)
        for stem, steps in zip(order, programs):
            zero = runs[stem][0][0] - LEAD_NS
            first = started + dt.timedelta(microseconds=(zero - (span if span is not None else zero)) // 1000)
            p = Profile(
                name=f"SYNTHETIC rmsnorm {variant} {stem}", neff_name=f"{stem}.neff", neff_header=neff_header(session / f"{stem}.neff"),
                executions=[(ts - zero, ts - zero + dur) for ts, dur in runs[stem]], first_ts=first,
            )
            dev = Device(p, Rng(p.name), packet=1024, dma_bw=DMA_BW / 3, dma_wait=1_400)
            for ex in range(len(p.executions)):
                dev.execution(ex, steps, ifetch=3 * 1536, work_at=30)
            add_warnings(p)
            out.append((session.relative_to(source) / "device_profiles" / stem, p))
    return out


# ---------------------------------------------------------------- the extra profiles under fixtures/device/


def synthetic_header(name: str, digest_seed: str) -> dict:
    digest = zlib.crc32(digest_seed.encode()).to_bytes(4, "little") * 8
    uuid = zlib.crc32(name.encode()).to_bytes(4, "little") * 4
    return {"network_name": name, "uuid": uuid.hex(), "hash": digest.hex(), "header_size": 1024, "data_size": 65536, "major_version": 2, "minor_version": 0,
            "package_version": "1", "build_version": "synthetic-0.0.0", "neuroncore_count": 1, "logical_neuroncore_count": 1, "pcore_count_per_lnc": 2}


def device_profile(tag: str, neff_hash: str, executions: list[tuple[int, int]], **kw) -> Profile:
    stem = f"neff_{neff_hash}_vnc_0"
    return Profile(name=f"SYNTHETIC {tag} {stem}", neff_name=f"{stem}.neff", neff_header=synthetic_header(f"synthetic_{tag}", stem), executions=executions, **kw)


def matmul_steps(n: int, load: int, weight: int, store: int, flops: int, dur: int) -> list[Step]:
    return [
        Step("matmul/aten.mm", "dot.1", [("a", load, "load"), ("b", weight, "weight")],
             [("tensor", "LDWEIGHTS", 1, 60, {"sbuf": 32768}), ("tensor", "MATMUL", 1, dur, {"sbuf": 65536, "flops": flops})], [], tiles=n),
        Step("matmul/aten.mm", "copy.2", [], [("vector", "TENSOR_COPY", 4, 900, {"sbuf": 65536})], [("c", store, "store")]),
    ]


def compute_bound() -> Profile:
    """Two executions of a large bf16 matmul: the tensor engine busy most of the time, arithmetic intensity far above the peak ratio."""
    p = device_profile("compute_bound", "700000000000001", [(LEAD_NS, LEAD_NS + 90_000), (LEAD_NS + 115_000, LEAD_NS + 205_000)])
    dev = Device(p, Rng(p.name), packet=65536, dma_bw=120e9, dma_wait=900)
    steps = matmul_steps(60, 512 * 1024, 512 * 1024, 256 * 1024, 2 * 128 * 128 * 1024, 760)
    for ex in range(2):
        dev.execution(ex, steps, ifetch=4 * 4096, work_at=3)
    add_warnings(p)
    return p


def memory_bound() -> Profile:
    """One execution streaming 1 MiB per core through the vector engine, with spills and dynamic DMA: far below the peak ratio."""
    p = device_profile("memory_bound", "700000000000002", [(LEAD_NS, LEAD_NS + 140_000)])
    dev = Device(p, Rng(p.name), packet=65536, dma_bw=60e9, dma_wait=1_100)
    steps = [
        Step("model/aten.add", "add.1", [("x", 1024 * 1024, "load"), ("table", 64 * 1024, "dge"), ("index", 32 * 1024, "swdge")],
             [("vector", "TENSOR_TENSOR", 32, 300, {"sbuf": 32768}), ("tensor", "MATMUL", 4, 400, {"sbuf": 65536, "flops": 2 * 128 * 128 * 128})],
             [("tmp", 256 * 1024, "spill_save")]),
        Step("model/aten.mul", "multiply.2", [("tmp", 512 * 1024, "spill_reload")], [("vector", "TENSOR_TENSOR", 32, 300, {"sbuf": 32768})],
             [("y", 1024 * 1024, "store")]),
    ]
    dev.execution(0, steps, ifetch=2 * 4096, work_at=3)
    add_warnings(p)
    return p


def collectives() -> Profile:
    """AllReduce and AllGather (Ring, 2 ranks) between compute steps; the fourth AllReduce is a 4x outlier against its group's median."""
    p = device_profile("collectives", "700000000000003", [(LEAD_NS, LEAD_NS + 900_000)])
    dev = Device(p, Rng(p.name), packet=4096, dma_bw=40e9, dma_wait=900)
    step = Step("model/aten.linear", "dot.1", [("x", 16384, "load")], [("tensor", "MATMUL", 4, 300, {"sbuf": 16384, "flops": 2 * 128 * 128 * 8}), ("vector", "TENSOR_COPY", 2, 250, {"sbuf": 16384})], [("y", 16384, "store")])
    dev.execution(0, [step], ifetch=2 * 4096, work_at=1)
    ops = [("AllReduce", 1 << 20, 1 << 20, d) for d in (41_000, 42_500, 40_200, 168_000, 43_100)] + [("AllGather", 256 << 10, 512 << 10, d) for d in (15_200, 16_000, 15_600, 16_800)]
    order = [0, 5, 1, 6, 2, 7, 3, 8, 4]  # interleave the two kinds
    t = 40_000
    for op_id, k in enumerate(order):
        name, size_in, size_out, dur = ops[k]
        delay = 800 + 170 * op_id
        trig = dev.inst("gpsimd", 0, t, 120, "PSEUDO_TRIGGER_COLLECTIVE", operands=f"cc op_id={op_id} {name}", framework=f"model/c10d.{name.lower()}", hlo=f"{name.lower()}.{op_id}")
        p.ccops.append(CcOp(trig.start + delay, trig.start + delay + dur, name, size_in, size_out, delay, op_id))
        t = trig.start + delay + dur + 30_000
    add_warnings(p)
    return p


def throttled() -> Profile:
    """A tensor-heavy execution during which the hardware limits utilization: Throttle events overlap tensor activity."""
    p = device_profile("throttled", "700000000000004", [(LEAD_NS, LEAD_NS + 120_000)])
    dev = Device(p, Rng(p.name), packet=65536, dma_bw=120e9, dma_wait=900)
    dev.execution(0, matmul_steps(70, 256 * 1024, 256 * 1024, 128 * 1024, 2 * 128 * 128 * 512, 600), ifetch=2 * 4096, work_at=3)
    # pcore 0 and pcore 1 throttle at different times, so the NeuronCore's throttled time is the same whether one
    # takes the union over the physical cores or the sum
    # (the last event falls after the tensor work: throttling while the engine is idle anyway)
    p.throttles = [ThrottleEvent(12_000, 8_000, 12, 16, "activity_0", 0), ThrottleEvent(24_000, 9_000, 12, 16, "activity_0", 0),
                   ThrottleEvent(38_000, 5_000, 8, 16, "activity_0", 0), ThrottleEvent(45_000, 8_000, 8, 16, "activity_1", 1),
                   ThrottleEvent(55_000, 5_000, 10, 16, "activity_1", 1), ThrottleEvent(90_000, 6_000, 10, 16, "activity_1", 1)]
    add_warnings(p)
    return p


def small(tag: str, neff_hash: str, version: str, split_rows: int = SPLIT_ROWS) -> Profile:
    """A small elementwise profile (like the naive mul) with the given schema version."""
    p = device_profile(tag, neff_hash, [(LEAD_NS, LEAD_NS + 60_000)], schema_version=version, split_rows=split_rows)
    dev = Device(p, Rng(p.name), packet=1024, dma_bw=DMA_BW / 3, dma_wait=1_400)
    dev.execution(0, [NAIVE_STEPS[0]], ifetch=2 * 1536, work_at=20)
    add_warnings(p)
    return p


SCHEMA_VERSIONS = {"schema_v7": "7.4.0", "schema_v12": "12.0.1"}  # the MAJOR versions the Neuron documents name


# The damaged profiles keep a reduced set of tables, to stay small; apart from its one damage each is consistent.
DAMAGED_TABLES = ("Metadata", "ExecutionInfo", "ActiveTime", "Instruction", "DmaPacket")


def damaged(out: Path) -> None:
    """One directory per damage, named for it; the rest of each profile is a healthy small profile (schema 7.4.0)."""
    root = out / "device" / "damaged"
    shutil.rmtree(root, ignore_errors=True)

    d = root / "wrong_column_types"
    frames = write_profile(d, small("damaged_wrong_column_types", "700000000000101", "7.4.0"), DAMAGED_TABLES)
    inst = frames["Instruction"].with_columns(pl.col("start_ts").cast(pl.Float64), pl.col("engine").replace_strict({e: n for n, e in enumerate(ENGINES)}, return_dtype=pl.Int32))
    write_frame(d, "Instruction", inst)
    write_frame(d, "ActiveTime", frames["ActiveTime"].with_columns(pl.col("duration_ns").cast(pl.Utf8)))

    d = root / "missing_required_columns"
    frames = write_profile(d, small("damaged_missing_required_columns", "700000000000102", "7.4.0"), DAMAGED_TABLES)
    write_frame(d, "Instruction", frames["Instruction"].drop("opcode", "duration_ns"))
    write_frame(d, "DmaPacket", frames["DmaPacket"].drop("queue_type"))

    d = root / "truncated_parquet"
    write_profile(d, small("damaged_truncated_parquet", "700000000000103", "7.4.0"), DAMAGED_TABLES)
    raw = (d / "Instruction.parquet").read_bytes()
    (d / "Instruction.parquet").write_bytes(raw[: len(raw) // 2])

    d = root / "unknown_major_version"
    write_profile(d, small("damaged_unknown_major_version", "700000000000104", "99.0.0"), DAMAGED_TABLES)

    d = root / "split_part_missing"
    p = small("damaged_split_part_missing", "700000000000105", "7.4.0", split_rows=5)
    write_profile(d, p, DAMAGED_TABLES)
    parts = sorted(d.glob("Instruction_*.parquet"))
    assert len(parts) >= 3, parts
    (d / "Instruction_1.parquet").unlink()
    for extra in parts[3:]:
        extra.unlink()  # keep exactly Instruction_0 and Instruction_2


def main(out: Path, source: Path | None = None) -> None:
    """Write every device profile under `out`, reading the capture sessions from `source` (default: `out`)."""
    source = source or out
    profiles = rmsnorm_profiles(source)
    for parent in sorted({rel.parent for rel, _ in profiles}):
        shutil.rmtree(out / parent, ignore_errors=True)  # device_profiles/ of each session: nothing stale stays
    for rel, p in profiles:
        write_profile(out / rel, p)
    dev_root = out / "device"
    for old in sorted(dev_root.glob("*")) if dev_root.is_dir() else []:
        if old.is_dir():
            shutil.rmtree(old)
    for name, make in (("compute_bound", compute_bound), ("memory_bound", memory_bound), ("collectives", collectives), ("throttled", throttled)):
        write_profile(dev_root / name, make())
    for n, (name, version) in enumerate(SCHEMA_VERSIONS.items()):
        write_profile(dev_root / name, small(name, f"70000000000001{n}", version))
    damaged(out)


if __name__ == "__main__":
    here = Path(__file__).resolve().parent.parent / "fixtures"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here, Path(sys.argv[2]) if len(sys.argv) > 2 else None)
