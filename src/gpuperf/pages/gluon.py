"""Tutorial 08's topic module (Gluon on Hopper): its opening paragraph, the two ladders'
ratios per rung (the FP8 matmul and the FlashAttention-3-style attention), and what the
compiler made of each schedule.

The page shows the kernels, the arithmetic of each schedule and the calls; compiling a
kernel for ``sm_90`` without a GPU (:mod:`gpuperf.kernels.gluon.offline`), reading
``ptxas``'s report and the committed records, and formatting them happen here.
"""

from __future__ import annotations

import os
import re
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from gpuperf.bench.catalog import GLUON_ATTENTION, GLUON_FP8
from gpuperf.pages import hardware
from gpuperf.pages.plotting import format_x, short_gpu_name
from gpuperf.pages.prose import WIDTH, Paragraph, and_list, paragraph, times_span
from gpuperf.pages.report import Result, check_result, load
from gpuperf.pages.tables import Cell, Section, render

#: The FP8 ladder's providers, bottom rung first, and how the page names them.
FP8_RUNGS = {
    "gluon_drain": "Gluon, drain then promote",
    "gluon_pingpong": "Gluon, promote beside next MMA",
    "gluon_persistent": "Gluon, + persistent",
    "gluon": "Gluon, + TMA store",
    "triton": "Triton matmul_fp8, tuned",
}


#: The attention ladder's providers, bottom rung first, and how the page names them.
ATTENTION_RUNGS = {
    "gluon_ws": "Gluon, producer + consumers, FA2 order",
    "gluon_overlap": "Gluon, + softmax beside next GEMM",
    "gluon_pingpong": "Gluon, + ping-pong (side branch)",
    "gluon": "Gluon, overlap + persistent if not causal",
    "triton": "Triton attention (tutorial 04)",
    "flash": "FlashAttention-2 (SDPA)",
}

#: How the page names the scalings.
SCALINGS = {"tensor": "per-tensor scales", "row": "per-row scales"}

#: What one Hopper SM (compute capability 9.0) completes in a clock: dense tensor-core
#: FLOPs in float16 or bfloat16 (``fp16_tflops``) and in FP8 (``fp8_tflops``), a
#: multiply-add counted as two; float32 additions on its 128 CUDA cores (``fp32_add``);
#: base-2 exponentials on its special function units (``exp2``). Sources: NVIDIA H100
#: Tensor Core GPU Architecture whitepaper (four tensor cores an SM, 512 dense float16
#: multiply-adds a clock each, FP8 twice that); CUDA C++ Programming Guide, arithmetic
#: instruction throughput (compute capability 9.0: 128 float32 adds and 16 ``exp2`` a
#: clock per SM).
SM_PER_CLOCK = {"fp16_tflops": 4096, "fp8_tflops": 8192, "fp32_add": 128, "exp2": 16}


def clock_ghz(ceilings: hardware.Ceilings, key: str) -> float:
    """The SM clock, GHz, that a measured matmul ceiling implies on a Hopper GPU: its FLOP/s
    over the tensor-core FLOPs all SMs complete in a clock (SMs x ``SM_PER_CLOCK[key]``).

    It is the clock at which tensor cores busy every clock would deliver the measured rate,
    so a lower bound of the clock the ceiling ran at (no library keeps them busy every
    clock). Timing every unit in clocks, then converting at this one clock, keeps the
    tensor cores and the other units on the same (measured, not datasheet) clock.

    Args:
        ceilings: the GPU's measured ceilings (:func:`gpuperf.pages.hardware.ceilings`).
        key: ``"fp16_tflops"`` or ``"fp8_tflops"``.

    Raises:
        TypeError: ``ceilings`` is not a :class:`~gpuperf.pages.hardware.Ceilings`.
        ValueError: ``key`` is not a tensor-core rate of :data:`SM_PER_CLOCK`, or the
            ceilings lack it or the SM count.
    """
    if not isinstance(ceilings, hardware.Ceilings):
        raise TypeError(f"ceilings must be a gpuperf.pages.hardware.Ceilings, got {type(ceilings).__name__}")
    if key not in ("fp16_tflops", "fp8_tflops"):
        raise ValueError(f"key must be 'fp16_tflops' or 'fp8_tflops', got {key!r}")
    sms = ceilings.provenance.get("sm_count")
    if key not in ceilings.measured or not sms:
        raise ValueError(f"{ceilings.gpu} has no measured {key} or no SM count to derive a clock from")
    return ceilings.measured[key] * 1e12 / (sms * SM_PER_CLOCK[key]) / 1e9


@dataclass(frozen=True)
class CompiledSchedule:
    """What the compiler made of one configuration of the Gluon FP8 kernel, for ``sm_90``.

    Attributes:
        waits: the distinct ``wgmma.wait_group N`` instructions in its PTX (``N``: how many
            MMA groups may still run when the wait returns).
        registers: registers a thread, from ``ptxas -v``.
        spilled: bytes of spill stores (0: none).
        serialized: whether ptxas serialized the ``wgmma`` instructions (its note C7514),
            which undoes any overlap the schedule asks for.
        shared_bytes: shared memory a program allocates.
        partition_registers: in a warp-specialized kernel, the register budgets a thread of
            its worker partitions asks for (``setmaxnreg``); empty otherwise.
    """

    waits: tuple[str, ...]
    registers: int
    spilled: int
    serialized: bool
    shared_bytes: int
    partition_registers: tuple[int, ...] = ()

    def line(self) -> str:
        waits = ", ".join(w.removeprefix("wgmma.") for w in self.waits)
        serial = "serialized by ptxas" if self.serialized else "asynchronous"
        registers = f"{self.registers} registers"
        if self.partition_registers:
            registers += f" (workers: {' and '.join(map(str, self.partition_registers))})"
        return (
            f"{waits}; {registers}; {self.spilled} B spilled; wgmma {serial}; "
            f"{self.shared_bytes // 1024} KiB shared"
        )


def compile_fp8_schedule(config, m: int = 4096, n: int = 4096, k: int = 4096) -> CompiledSchedule:
    """Compile :func:`gpuperf.kernels.gluon.matmul_fp8_promoted`'s kernel with ``config`` (a
    :class:`~gpuperf.kernels.gluon.GluonFP8Config`) for ``sm_90`` on this machine, GPU or
    not, and read its PTX and ``ptxas -v``'s report (the ``ptxas`` in Triton's wheel).

    Raises:
        RuntimeError: Triton's wheel carries no ``ptxas`` here.
    """
    from dataclasses import asdict

    from gpuperf.kernels.gluon.offline import compile_matmul_fp8

    return _read_compiled(lambda: compile_matmul_fp8(asdict(config), m, n, k))


def compile_attention_schedule(config, head_dim: int = 128, causal: bool = False) -> CompiledSchedule:
    """Compile :func:`gpuperf.kernels.gluon.attention_fa3`'s kernel with ``config`` (an
    :class:`~gpuperf.kernels.gluon.FA3Config`) for ``sm_90`` on this machine, at a float16
    grouped-query shape with ``head_dim``, and read its PTX and ``ptxas -v``'s report.

    Raises:
        RuntimeError: Triton's wheel carries no ``ptxas`` here.
    """
    from dataclasses import asdict

    from gpuperf.kernels.gluon.offline import compile_attention_fa3

    shape = (2, 8, 2, 4096, 4096, head_dim)
    return _read_compiled(lambda: compile_attention_fa3(asdict(config), shape, causal=causal))


def compile_schedules(compile_one, configs: dict) -> dict[str, CompiledSchedule]:
    """``{name: compile_one(config)}`` for each ``name: config`` of ``configs``, compiled side
    by side: each compile runs in a Python process of its own and then ``ptxas``, so up to one
    thread per CPU waits on them at once (five schedules in the time of about one or two).
    ``compile_one`` is :func:`compile_fp8_schedule` or :func:`compile_attention_schedule`.

    Raises:
        RuntimeError: a compile failed (the first failure, as :func:`compile_one` raised it).
    """
    with ThreadPoolExecutor(max_workers=max(1, min(len(configs), os.cpu_count() or 1))) as pool:
        compiled = list(pool.map(compile_one, configs.values()))
    return dict(zip(configs, compiled, strict=True))


def _read_compiled(compile_kernel) -> CompiledSchedule:
    """Run ``compile_kernel() -> {"ptx", "shared", ...}`` and read what ptxas says of the PTX."""
    from gpuperf.kernels.gluon.offline import ptxas_report

    compiled = compile_kernel()
    ptx = compiled["ptx"]
    report = ptxas_report(ptx)
    waits = sorted({line.strip().rstrip(";") for line in ptx.splitlines() if "wgmma.wait_group" in line})
    return CompiledSchedule(
        waits=tuple(w.replace(".sync.aligned", "") for w in waits),
        registers=int(re.search(r"Used (\d+) registers", report).group(1)),
        spilled=int(re.search(r"(\d+) bytes spill stores", report).group(1)),
        serialized="C7514" in report,
        shared_bytes=compiled["shared"],
        partition_registers=tuple(compiled.get("worker_registers", ())),
    )


def fp8_sentence(result: Result) -> str:
    """One GPU's FP8 ladder in a sentence: the Gluon kernel's top rung against cuBLASLt and
    Triton, and what each rung bought.

    Raises:
        ValueError: ``result`` has no record.
    """
    if result.record is None:
        raise ValueError(f"no {result.benchmark.name} record to describe: {result.notes}")
    vs_cublaslt = [v for c in GLUON_FP8.combos() for v in result.ratios("gluon", **c).values()]

    def bought(provider, over):
        return [r for c in GLUON_FP8.combos() for r in result.ratios(provider, over=over, **c).values()]

    vs_triton = bought("gluon", "triton")

    return (
        f"On the {short_gpu_name(result.gpu)}, the Gluon FP8 matmul with float32 promotion "
        f"runs at {times_span(vs_cublaslt)} cuBLASLt's speed and {times_span(vs_triton)} "
        f"Triton's tuned kernel: overlapping the promotion with the next MMA bought "
        f"{times_span(bought('gluon_pingpong', 'gluon_drain'))}, persistence "
        f"{times_span(bought('gluon_persistent', 'gluon_pingpong'))}, storing by TMA "
        f"{times_span(bought('gluon', 'gluon_persistent'))}."
    )


def attention_sentence(result: Result) -> str:
    """One GPU's attention ladder in a sentence: the Gluon kernel (default rungs) against
    cuDNN and tutorial 04's Triton kernel at each head dim over the long sequences
    (:data:`LONG_SEQUENCE` and longer), and what each rung bought at D 128.

    Raises:
        ValueError: ``result`` has no record.
    """
    if result.record is None:
        raise ValueError(f"no {result.benchmark.name} record to describe: {result.notes}")

    def ratios(provider, over=None, head_dim=128, causal=None):
        combos = [c for c in GLUON_ATTENTION.combos() if c["head_dim"] == head_dim]
        combos = [c for c in combos if causal is None or c["causal"] == causal]
        return [
            r
            for c in combos
            for x, r in result.ratios(provider, over=over, **c).items()
            if x >= LONG_SEQUENCE
        ]

    return (
        f"On the {short_gpu_name(result.gpu)}, the Gluon attention forward (float16, S 4096 to 16384) "
        f"runs at {times_span(ratios('gluon'))} cuDNN's speed at D 128 and "
        f"{times_span(ratios('gluon', head_dim=64))} at D 64, and {times_span(ratios('gluon', 'triton'))} "
        f"tutorial 04's Triton kernel at D 128 ({times_span(ratios('gluon', 'triton', head_dim=64))} "
        f"at D 64). At D 128, overlapping the softmax with the next GEMM bought "
        f"{times_span(ratios('gluon_overlap', 'gluon_ws'))}, ping-pong between the consumers "
        f"{times_span(ratios('gluon_pingpong', 'gluon_overlap'))}, persistence (not causal) "
        f"{times_span(ratios('gluon', 'gluon_overlap', causal=False))}."
    )


def d64_reading(result: Result) -> str:
    """Per GPU, where the Gluon attention kernel (the default rung) stands at D 64: against
    cuDNN at every sequence length measured (where it is closest), and against tutorial
    04's Triton kernel on the sequences shorter than :data:`LONG_SEQUENCE`, which the
    opening paragraph leaves out.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the result of :data:`~gpuperf.bench.catalog.GLUON_ATTENTION`.
    """
    check_result(result, GLUON_ATTENTION)
    lines = []
    for r in result.gpus():
        combos = [c for c in GLUON_ATTENTION.combos() if c["head_dim"] == 64]

        def ratios(over=None, r=r, combos=combos):
            return {(c["causal"], x): v for c in combos for x, v in r.ratios("gluon", over=over, **c).items()}

        def named(items):
            return [f"S {s} ({'causal' if c else 'not causal'})" for (c, s), v in sorted(items)]

        vs_cudnn, vs_triton = ratios(), ratios("triton")
        if not vs_cudnn:
            continue
        (causal, x), best = max(vs_cudnn.items(), key=lambda item: item[1])
        where = f"S {x} ({'causal' if causal else 'not causal'})"
        if best < 1:
            line = (
                f"{r.name}: at D 64 the Gluon kernel runs at {times_span(vs_cudnn.values())} cuDNN's "
                f"speed, short of it at every length measured, closest at {where}."
            )
        else:
            faster = named(item for item in vs_cudnn.items() if item[1] >= 1)
            line = (
                f"{r.name}: at D 64 the Gluon kernel runs at {times_span(vs_cudnn.values())} cuDNN's "
                f"speed, at least as fast only at {and_list(faster)}."
            )
        short = {key: v for key, v in vs_triton.items() if key[1] < LONG_SEQUENCE}
        lost = named(item for item in short.items() if item[1] < 1)
        if lost:
            line += (
                f" Below S {LONG_SEQUENCE} it runs at {times_span(short.values())} tutorial 04's "
                f"Triton kernel's speed, slower than it at {and_list(lost)}."
            )
        lines.append(textwrap.fill(line, WIDTH, subsequent_indent="  "))
    return "\n".join(lines) or "\n".join(result.all_notes())


#: The shortest sequence the attention summaries count (S 4096 to 16384: the long sequences).
LONG_SEQUENCE = 4096


def in_one_paragraph() -> Paragraph:
    """The page's answer, from the ``gluon_fp8`` and ``gluon_attention`` records of every GPU
    with measured ceilings (:func:`gpuperf.pages.hardware.gpus`): one :func:`fp8_sentence`
    and one :func:`attention_sentence` each, and a note for each missing or stale record."""
    sentences, notes = [], []
    for gpu in hardware.gpus():
        for benchmark, sentence in ((GLUON_FP8, fp8_sentence), (GLUON_ATTENTION, attention_sentence)):
            result = load(benchmark, gpu=gpu)
            notes += result.notes
            if result.record is not None:
                sentences.append(sentence(result))
    return paragraph(*sentences, notes=notes)


def fp8_ladder_table(result: Result) -> str:
    """Each GPU's FP8 ladder: TFLOP/s of every rung at every shape and scaling, and its speed
    relative to cuBLASLt (above 1: faster).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the result of :data:`~gpuperf.bench.catalog.GLUON_FP8`.
    """
    return _ladder_table(
        result, GLUON_FP8, FP8_RUNGS, "scaled_mm", "cuBLASLt", lambda combo: SCALINGS[combo["scaling"]]
    )


def overlap_against_arithmetic(result: Result, hidden: float) -> str:
    """Per GPU, what overlapping the promotion with the next MMA bought (the pingpong rung
    over the drain rung, over every shape and scaling) beside ``hidden``, the speed-up that
    hiding every float32 addition would give by the page's arithmetic.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the result of :data:`~gpuperf.bench.catalog.GLUON_FP8`, or
            ``hidden`` is below 1.
    """
    check_result(result, GLUON_FP8)
    if not hidden >= 1:
        raise ValueError(f"hidden must be a speed-up of at least 1, got {hidden!r}")
    lines = []
    for r in result.gpus():
        bought = [
            v
            for c in GLUON_FP8.combos()
            for v in r.ratios("gluon_pingpong", over="gluon_drain", **c).values()
        ]
        if bought:
            line = (
                f"{r.name}: overlapping the promotion bought {times_span(bought)}; "
                f"hiding every addition would give {hidden:.2f}×"
            )
            lines.append(textwrap.fill(line, WIDTH, subsequent_indent="  "))
    return "\n".join(lines) or "\n".join(result.all_notes())


def _ladder_table(result: Result, benchmark, rungs: dict, baseline: str, baseline_name: str, heading) -> str:
    """TFLOP/s of each of ``rungs`` (and of ``baseline``) per x, with the ratio to the baseline,
    one section per GPU and axis combination (``heading(combo)`` names it)."""
    check_result(result, benchmark)
    sections = []
    for r in result.gpus():
        for combo in benchmark.combos():
            base = r.rows(baseline, **combo)
            measured = {key: r.rows(key, **combo) for key in rungs}
            # The x values this GPU has at this combination (a quick live build measures part).
            xs = [x for x in benchmark.x_values if x in base or any(x in m for m in measured.values())]
            if not xs:
                continue
            rows = []
            for key, name in rungs.items():
                cells = [Cell(name)]
                for x in xs:
                    row = measured[key].get(x)
                    ratio = base[x]["ms"] / row["ms"] if row and x in base else None
                    text = (
                        "-" if row is None else f"{row['value']:.0f}" + (f" ({ratio:.2f}×)" if ratio else "")
                    )
                    cells.append(Cell(text, row["value"] if row else None))
                rows.append(cells)
            rows.append(
                [
                    Cell(baseline_name),
                    *(
                        Cell(f"{base[x]['value']:.0f}", base[x]["value"]) if x in base else Cell("-")
                        for x in xs
                    ),
                ]
            )
            header = [f"TFLOP/s (× {baseline_name})", *(format_x(x) for x in xs)]
            sections.append(Section(f"{r.name}, {heading(combo)}:", header, rows))
    return render(sections)


def attention_ladder_table(result: Result) -> str:
    """Each GPU's attention ladder: TFLOP/s of every rung at every sequence length, head dim
    and masking, and its speed relative to cuDNN (above 1: faster).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: it is not the result of :data:`~gpuperf.bench.catalog.GLUON_ATTENTION`.
    """
    return _ladder_table(
        result, GLUON_ATTENTION, ATTENTION_RUNGS, "cudnn", "cuDNN (SDPA)", _attention_heading
    )


def _attention_heading(combo: dict) -> str:
    return f"D {combo['head_dim']}, {'causal' if combo['causal'] else 'not causal'}"


#: The columns of :func:`ncu_table`: a heading and the metric it reads (scaled to the unit shown).
NCU_COLUMNS = (
    ("ms", "gpu__time_duration.sum", 1e-6),
    ("tensor pipe %", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("L2 TB/s", "lts__t_bytes.sum.per_second", 1e-12),
    ("L2 % of peak", "lts__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("regs", "launch__registers_per_thread", 1),
    ("grid", "launch__grid_size", 1),
    ("stall: barrier %", "smsp__warp_issue_stalled_barrier_per_warp_active.pct", 1),
    ("stall: wait %", "smsp__warp_issue_stalled_wait_per_warp_active.pct", 1),
    ("stall: long scoreboard %", "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", 1),
    ("exp2 pipe %", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", 1),
)
#: The units the scales of :data:`NCU_COLUMNS` assume (ncu's CSV prints base units).
_NCU_UNITS = {"gpu__time_duration.sum": "ns", "lts__t_bytes.sum.per_second": "byte/s"}
#: How :func:`ncu_table` names each profiled provider, by capture.
NCU_NAMES = {
    "ncu_gluon_fp8": {**FP8_RUNGS, "scaled_mm": "cuBLASLt"},
    "ncu_gluon_attention": {**ATTENTION_RUNGS, "cudnn": "cuDNN (SDPA)"},
    "ncu_gluon_attention_d64": {**ATTENTION_RUNGS, "cudnn": "cuDNN (SDPA)"},
}


def ncu_table(capture: dict) -> str:
    """A capture of ``scripts/gluon_capture.py`` (``ncu_gluon_fp8``, ``ncu_gluon_attention``)
    as a table: per provider, its time, how busy the tensor pipe was, L2 traffic, registers,
    the largest stall reasons (percent of active warps' cycles) and, where captured, the
    share of the transcendental pipe (MUFU: the softmax's ``exp2``); then the kernels the
    libraries ran.

    Raises:
        ValueError: a metric is in another unit than the table's scale assumes."""
    payload = capture["payload"]
    names = NCU_NAMES.get(capture["name"], {})
    columns = [c for c in NCU_COLUMNS if c[1] in payload["metrics"]]
    rows = []
    for row in payload["rows"]:
        metrics = row["metrics"]
        cells = [Cell(names.get(row["provider"], row["provider"]))]
        for _heading, metric, scale in columns:
            m = metrics.get(metric)
            if m is None:
                cells.append(Cell("-"))
                continue
            expected = _NCU_UNITS.get(metric)
            if expected is not None and m["unit"] != expected:
                raise ValueError(
                    f"{metric} is in {m['unit']!r} in this capture; the table reads {expected!r}"
                )
            value = m["value"] * scale
            cells.append(Cell(f"{value:.3g}" if value < 100 else f"{value:.0f}", value))
        rows.append(cells)
    header = [_capture_heading(payload), *(h for h, _, _ in columns)]
    # The libraries' kernel names say what they chose (cuBLASLt's names its tile and cluster).
    kernels = [
        [Cell(names.get(row["provider"], row["provider"])), Cell(row["kernel"])]
        for row in payload["rows"]
        if not row["provider"].startswith("gluon")
    ]
    return render([Section("", header, rows), Section("", ["library", "kernel it ran"], kernels)])


#: The FP8 capture's rows :func:`l2_reading` compares: the top Gluon rung, and cuBLASLt.
L2_PROVIDERS = ("gluon", "scaled_mm")
#: Bytes of one FP8 (e4m3) operand element.
FP8_BYTES = 1


def tile_intensity(config: dict, element_bytes: int = FP8_BYTES) -> float:
    """FLOPs per byte of operands a matmul tile loads: per step along K, a ``block_m`` x
    ``block_k`` tile of A and a ``block_k`` x ``block_n`` tile of B (``element_bytes`` each)
    give ``2 * block_m * block_n * block_k`` FLOPs, so ``2 * block_m * block_n / ((block_m +
    block_n) * element_bytes)``: 128 for a 128 x 128 FP8 tile.

    Raises:
        KeyError: ``config`` lacks ``block_m`` or ``block_n``.
        ValueError: a size is not a positive integer.
    """
    m, n = config["block_m"], config["block_n"]
    for name, value in (("block_m", m), ("block_n", n), ("element_bytes", element_bytes)):
        if type(value) is not int or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    return 2 * m * n / ((m + n) * element_bytes)


def _ncu(row: dict, metric: str, unit: str) -> float:
    """A metric of a capture's row in ``unit``; ValueError when it is missing or in another unit."""
    m = row["metrics"].get(metric)
    if m is None:
        raise ValueError(f"the {row['provider']} row of the capture has no {metric}")
    if m["unit"] != unit:
        raise ValueError(f"{metric} is in {m['unit']!r} in this capture; expected {unit!r}")
    return m["value"]


def l2_lines(capture: dict, result: Result) -> list[str]:
    """What the ``ncu_gluon_fp8`` capture says of L2 as the FP8 kernels' limit, in lines:

    * for each of :data:`L2_PROVIDERS`: the L2 rate ncu measured, the bytes that rate makes
      over the launch's time, the FLOPs per byte that counts and the launch's TFLOP/s;
    * for the top Gluon rung: its tile's FLOPs per byte of operands (:func:`tile_intensity`,
      the tile from its row of ``result``'s record at the capture's shape and scaling), the
      operand bytes that makes at the capture's shape (every one crosses L2: the Gluon
      kernel loads without multicast) and the rate they need over the launch's time;
    * where the rate times the time counts fewer bytes than that, the two cannot both
      describe the launch: the line says so, with the bytes counted for every Gluon rung
      of the capture whose record row has the same tile (they load the same operands),
      and draws no conclusion on L2 as the limit. Otherwise, the TFLOP/s L2 could feed at
      the measured rate against what the rung reached in the launch and in the benchmark;
    * L2's share of its peak throughput and the tensor pipe's busy share, the Gluon rung's
      against cuBLASLt's (and, where the bytes counted are consistent, the Gluon rung's
      FLOPs per L2 byte over cuBLASLt's).

    Args:
        capture: an ``ncu_gluon_fp8`` capture (``scripts/gluon_capture.py``).
        result: the ``gluon_fp8`` result (:func:`~gpuperf.pages.report.run_or_load`).

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``result`` is not the ``gluon_fp8`` one, the capture lacks a row or a
            metric read here, or the record has no Gluon row at the capture's shape.
    """
    check_result(result, GLUON_FP8)
    from gpuperf.bench.metrics import matmul_flops

    payload = capture["payload"]
    shape, scaling = tuple(payload["shape"]), payload["scaling"]
    flops = matmul_flops(*shape)
    rows = {r["provider"]: r for r in payload["rows"]}

    def read(key: str) -> dict:
        rate = _ncu(rows[key], "lts__t_bytes.sum.per_second", "byte/s")
        seconds = _ncu(rows[key], "gpu__time_duration.sum", "ns") * 1e-9
        return {
            "rate": rate,
            "seconds": seconds,
            "moved": rate * seconds,
            "per_byte": flops / (rate * seconds),
            "tflops": flops / seconds / 1e12,
            "busy": _ncu(rows[key], "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "%"),
            "l2_peak": _ncu(rows[key], "lts__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        }

    for key in L2_PROVIDERS:
        if key not in rows:
            raise ValueError(f"the capture has no {key} row")
    counted = {key: read(key) for key in L2_PROVIDERS}
    names = NCU_NAMES["ncu_gluon_fp8"]
    lines = [
        f"{names[key]}: L2 at {r['rate'] / 1e12:.2f} TB/s over the launch: {r['moved'] / 1e9:.2f} GB, "
        f"{r['per_byte']:.0f} FLOPs per byte; {r['tflops']:.0f} TFLOP/s in this launch"
        for key, r in counted.items()
    ]
    gpu_result = result.on(capture["provenance"]["gpu"])
    gluon_rows = {key: gpu_result.rows(key, scaling=scaling).get(shape) for key in FP8_RUNGS}
    row = gluon_rows["gluon"]
    if row is None or not row.get("config"):
        raise ValueError(f"the {GLUON_FP8.name} record has no Gluon row with a config at {format_x(shape)}")
    config, gluon = row["config"], counted["gluon"]
    intensity = tile_intensity(config)
    operands = flops / intensity
    tile = f"{config['block_m']} x {config['block_n']}"
    line = (
        f"A {tile} FP8 tile does {intensity:.0f} FLOPs per byte of operands it loads: "
        f"{operands / 1e9:.2f} GB of operands at {format_x(shape)}, every byte through L2 (no "
        f"multicast), {operands / gluon['seconds'] / 1e12:.2f} TB/s over the launch's "
        f"{gluon['seconds'] * 1e3:.3g} ms."
    )
    consistent = gluon["moved"] >= operands
    if not consistent:
        same_tile = [
            key
            for key, r in gluon_rows.items()
            if key.startswith("gluon") and key in rows and r is not None and r.get("config")
            and (r["config"]["block_m"], r["config"]["block_n"]) == (config["block_m"], config["block_n"])
        ]  # fmt: skip
        moved = "; ".join(f"{names[key]}: {read(key)['moved'] / 1e9:.2f} GB" for key in same_tile)
        line += (
            f" ncu's L2 rate times that time counts {gluon['moved'] / 1e9:.2f} GB, "
            f"{gluon['moved'] / operands:.2f}x the operands"
        )
        if len(same_tile) > 1:
            line += f". The Gluon rungs load the same {tile} tiles, and count ({moved})"
        line += (
            ". The measured rate times the launch's time is not the launch's traffic, so this "
            "capture cannot say whether L2's rate bounds the kernel."
        )
    else:
        fed = gluon["rate"] * intensity / 1e12
        reached = min(gluon["tflops"], row["value"])
        line += (
            f" At the measured {gluon['rate'] / 1e12:.2f} TB/s, L2 could feed at most {fed:.0f} "
            f"TFLOP/s; the rung ran at {gluon['tflops']:.0f} in this launch and {row['value']:.0f} "
            f"in the benchmark ({SCALINGS[scaling]}): {reached / fed:.0%} of what that rate can feed."
        )
    lines.append(line)
    base = counted["scaled_mm"]
    last = (
        f"L2 was at {gluon['l2_peak']:.0f}% of its peak throughput in the Gluon rung's launch, "
        f"{base['l2_peak']:.0f}% in cuBLASLt's; the Gluon rung's tensor pipe was busy "
        f"{gluon['busy']:.0f}% of active cycles, cuBLASLt's {base['busy']:.0f}%."
    )
    if consistent:
        ratio = gluon["per_byte"] / base["per_byte"]
        last += f" Per byte through L2 the Gluon rung did {ratio:.2f}x cuBLASLt's FLOPs."
    lines.append(last)
    return [textwrap.fill(line, WIDTH, subsequent_indent="  ") for line in lines]


def l2_reading(shown, result: Result) -> str:
    """:func:`l2_lines` for each GPU's ``ncu_gluon_fp8`` capture in ``shown`` (what
    :func:`gpuperf.pages.captures.show` returned), under the GPU's name when there are
    several; a note when there is none.

    Raises:
        TypeError: ``shown`` is not the ``{gpu: capture}`` that ``captures.show`` returns, or
            ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: as :func:`l2_lines`.
    """
    from gpuperf.pages.captures import per_gpu

    return per_gpu(
        shown, lambda capture: l2_lines(capture, result), "Nothing to read: the capture is missing."
    )


def _capture_heading(payload: dict) -> str:
    """What a capture profiled: the FP8 matmul's shape and scaling, or attention's S, D, masking."""
    if "shape" in payload:
        return f"{format_x(tuple(payload['shape']))}, {SCALINGS[payload['scaling']]}"
    masking = "causal" if payload["causal"] else "not causal"
    return f"S {payload['seq_len']}, D {payload['head_dim']}, {payload['dtype']}, {masking}"


__all__ = [
    "ATTENTION_RUNGS",
    "FP8_RUNGS",
    "NCU_COLUMNS",
    "SM_PER_CLOCK",
    "CompiledSchedule",
    "attention_ladder_table",
    "attention_sentence",
    "clock_ghz",
    "compile_attention_schedule",
    "compile_fp8_schedule",
    "compile_schedules",
    "fp8_ladder_table",
    "fp8_sentence",
    "in_one_paragraph",
    "l2_lines",
    "l2_reading",
    "ncu_table",
    "overlap_against_arithmetic",
    "tile_intensity",
]
