"""Tutorial 07 (a Llama decoder layer, end to end) in words, tables and charts, read from
the records and the captures.

The page shows the layer's code, the arithmetic of its work per token and one-line calls;
what it prints about the measurements comes from here:

* :func:`in_one_paragraph`: the page's answer, from every benchmark it shows;
* :func:`work_per_token`: FLOPs and bytes per token of prefill and decode, against the
  GPU's ridge point (why one is compute-bound and the other memory-bound);
* :func:`prefill_table`, :func:`decode_table`: time per layer, tokens per second and
  microseconds per token, provider by provider;
* :func:`autotune_cost`: what ``max-autotune``'s first call cost, compiling and tuning;
* :func:`plot_time_breakdown` and :func:`amdahl`: where a step's GPU time goes, part
  by part (the ``llama_time_breakdown`` capture), and what that bounds;
* :func:`launch_bound`: the kernels' sum against the step's time in decode;
* :func:`plot_roofline`: each phase placed on the GPU's roofline;
* :func:`training_summary`: the training step's speed and peak memory.

The benchmarks are :data:`~gpuperf.bench.catalog.LLAMA_PREFILL`,
:data:`~gpuperf.bench.catalog.LLAMA_DECODE`, :data:`~gpuperf.bench.catalog.LLAMA_TRAIN`,
:data:`~gpuperf.bench.catalog.LLAMA_TRAIN_MEMORY` and, for the decode kernel,
:data:`~gpuperf.bench.catalog.ATTENTION_DECODE`.
"""

from __future__ import annotations

import textwrap

from gpuperf.bench import captures as bench_captures
from gpuperf.bench import metrics
from gpuperf.bench.catalog import (
    ATTENTION_DECODE,
    LLAMA_DECODE,
    LLAMA_PREFILL,
    LLAMA_PREFILL_AUTOTUNE,
    LLAMA_SEQ_LEN,
    LLAMA_TRAIN,
    LLAMA_TRAIN_MEMORY,
    RMS_NORM,
    ROPE,
    SWIGLU,
)
from gpuperf.pages import breakdown, captures, hardware, prose
from gpuperf.pages.plotting import PROVIDER_COLORS, format_rate, format_x, short_gpu_name
from gpuperf.pages.prose import WIDTH
from gpuperf.pages.report import Result, check_result, load, passes_roof
from gpuperf.pages.tables import Cell, Section, number, render

#: The capture of where a step's time goes (``scripts/llama_capture.py``).
BREAKDOWN = "llama_time_breakdown"
#: How the page names each provider of the layer's benchmarks.
NAMES = {
    "triton": "ours",
    "triton_compile": "ours, compiled",
    "triton_graph": "ours, CUDA graph",
    "eager": "eager PyTorch",
    "compile": "torch.compile",
    "compile_max": "max-autotune",
    "compile_ro": "reduce-overhead",
    "sdpa": "SDPA",
    "sdpa_flash": "SDPA (flash)",
    "sdpa_masked": "SDPA (mask)",
}
#: The parts of a step that are matmuls (the projections): the rest is what fusion can shrink.
MATMUL_PARTS = ("qkv_proj", "o_proj", "gate_up", "down")
#: One colour per part of the layer in the breakdown chart.
PART_COLORS = {
    "attn_norm": "#c7c7c7",
    "qkv_proj": "#1f77b4",
    "rope": "#17becf",
    "kv_cache_write": "#bcbd22",
    "attention": "#d62728",
    "o_proj": "#aec7e8",
    "mlp_norm": "#7f7f7f",
    "gate_up": "#2ca02c",
    "down": "#98df8a",
    "other": "#ff7f0e",
}


def _config():
    from gpuperf.models.llama import LLAMA_3_8B

    return LLAMA_3_8B


# --- the arithmetic ------------------------------------------------------------------------


def work_per_token(gpu: str | None = None) -> str:
    """A table of the layer's FLOPs and bytes per token in prefill (batch 4 of 2048-token
    prompts) and in decode (one token per sequence, 4096 cached, batch 1, 8 and 64), the
    KV cache's share of those bytes, their ratio (the arithmetic intensity) and the GPU's
    bf16 ridge point beside it."""
    c = _config()
    ridge = hardware.ceilings(gpu).ridge_point("bf16")
    cases = [("prefill, batch 4", 4, LLAMA_SEQ_LEN, LLAMA_SEQ_LEN, 0)]
    cases += [(f"decode, batch {b}, 4096 cached", b, 1, 4096, 4096) for b in (1, 8, 64)]
    header = ["phase", "tokens", "GFLOP/token", "MB/token", "KV cache", "FLOP/byte", "ridge", "bound by"]
    section = Section("Work per token of one layer (bf16)", header)
    for name, batch, q_len, kv_len, cache in cases:
        tokens = batch * q_len
        flops = metrics.llama_layer_flops(c, batch=batch, q_len=q_len, kv_len=kv_len)
        n_bytes = metrics.llama_layer_bytes(c, tokens=tokens, kv_len=cache, batch=batch if cache else 0)
        kv_share = 1 - metrics.llama_layer_bytes(c, tokens=tokens) / n_bytes
        intensity = flops / n_bytes
        section.rows.append(
            [
                Cell(name),
                Cell(f"{tokens}", tokens),
                Cell(f"{flops / tokens / 1e9:.2f}", flops / tokens),
                Cell(f"{n_bytes / tokens / 1e6:.2f}", n_bytes / tokens),
                Cell(prose.percent(kv_share), kv_share),
                Cell(f"{intensity:.0f}", intensity),
                Cell(f"{ridge:.0f}", ridge),
                Cell("compute" if intensity > ridge else "memory"),
            ]
        )
    return render([section])


# --- prefill -------------------------------------------------------------------------------


def autotune_cost(gpu: str | None = None) -> str:
    """What ``max-autotune`` cost before its first result, from the
    ``llama_prefill_autotune`` record of ``gpu`` (default: the reference GPU): each
    provider's first call in seconds (compiling, and for ``max-autotune`` timing its GEMM
    candidates) at each batch the record holds; the record's notes when it has none.

    Raises:
        TypeError: ``gpu`` is not a string.
    """
    if gpu is not None and not isinstance(gpu, str):
        raise TypeError(f"gpu must be a GPU folder name (str), got {type(gpu).__name__}")
    result = load(LLAMA_PREFILL_AUTOTUNE, gpu)
    if result.record is None:
        return "\n".join(result.notes) or f"no {LLAMA_PREFILL_AUTOTUNE.name} record for {gpu}"
    lines = []
    for batch in sorted({r["x"] for r in result.record["rows"]}):
        firsts = {
            key: row["first_call_s"]
            for key in NAMES
            if (row := result.rows(key).get(batch)) and row.get("first_call_s") is not None
        }
        each = ", ".join(f"{NAMES[key]} {_seconds(seconds)}" for key, seconds in firsts.items())
        lines.append(f"{result.name}, batch {batch}, time of the first call in that run: {each}")
    return "\n".join([*(textwrap.fill(line, WIDTH, subsequent_indent="  ") for line in lines), *result.notes])


def _seconds(seconds: float) -> str:
    """A first call's time: ``'61.5 s'``, or ``'under 0.1 s'`` where one decimal would read 0.0."""
    return f"{seconds:.1f} s" if seconds >= 0.05 else "under 0.1 s"


def prefill_table(result: Result) -> str:
    """Milliseconds per layer and tokens per second of each provider at each batch, every
    GPU with a record, and ours relative to eager PyTorch.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``LLAMA_PREFILL``.
    """
    check_result(result, LLAMA_PREFILL)
    sections = []
    for r in result.gpus():
        keys = [p.key for p in LLAMA_PREFILL.providers]
        header = ["batch", *(f"{NAMES[k]} ms" for k in keys), "ours tokens/s", "ours / eager"]
        section = Section(r.name, header)
        times = {k: r.ms(k) for k in keys}
        for b in LLAMA_PREFILL.x_values:
            cells = [Cell(str(b), b)]
            for k in keys:
                t = times[k].get(b)
                cells.append(number(t, ".2f"))
            ours, eager = times["triton"].get(b), times["eager"].get(b)
            rate = b * LLAMA_SEQ_LEN / (ours * 1e-3) if ours else None
            cells.append(Cell("-") if rate is None else Cell(f"{rate / 1e6:.2f} M", rate))
            cells.append(Cell("-") if not (ours and eager) else Cell(f"{eager / ours:.2f}x", eager / ours))
            section.rows.append(cells)
        sections.append(section)
    return render(sections, result.all_notes())


def _speedups(result: Result, provider: str, over: str, **axes) -> list[float]:
    return list(result.ratios(provider, over=over, **axes).values())


# --- decode --------------------------------------------------------------------------------


def decode_table(result: Result, batch: int) -> str:
    """Microseconds per token per layer (one decode step) of each provider at ``batch``,
    at each cache length the GPU's record holds a time at, every GPU with a record.

    Raises:
        TypeError, ValueError: ``result`` is not a result of ``LLAMA_DECODE``, or ``batch``
            is not one of its batches.
    """
    check_result(result, LLAMA_DECODE)
    keys = [p.key for p in LLAMA_DECODE.providers]
    sections = []
    for r in result.gpus():
        header = ["cached", *(f"{NAMES[k]} µs" for k in keys), "graph / reduce-overhead"]
        section = Section(f"{r.name}, batch {batch}", header)
        times = {k: r.ms(k, batch=batch) for k in keys}
        for n in LLAMA_DECODE.x_values:
            if not any(n in times[k] for k in keys):
                continue  # not measured on that GPU (a quick live build measures part)
            cells = [Cell(str(n), n)]
            for k in keys:
                t = times[k].get(n)
                cells.append(Cell("-") if t is None else Cell(f"{t * 1e3:.0f}", t))
            graph, ro = times["triton_graph"].get(n), times["compile_ro"].get(n)
            cells.append(Cell("-") if not (graph and ro) else Cell(f"{ro / graph:.2f}x", ro / graph))
            section.rows.append(cells)
        sections.append(section)
    return render(sections, result.all_notes())


def _decode_step_ms(batch: int, kv_len: int, provider: str, gpu: str | None) -> float | None:
    """One decode step's time from the ``llama_decode`` record (a loop of steps, no profiler)."""
    result = load(LLAMA_DECODE, gpu)
    if result.record is None:
        return None
    return result.ms(provider, batch=batch).get(kv_len)


def launch_bound(gpu: str | None = None) -> str:
    """For each decode case of the breakdown capture, each provider's step time (from the
    ``llama_decode`` record: a loop of steps, without the profiler), the sum of its
    kernels' GPU time (from the capture) and how busy that keeps the GPU."""
    capture, notes = captures.load(BREAKDOWN, gpu)
    if capture is None:
        return "\n".join(notes)
    header = ["case", "provider", "step µs", "kernels µs", "kernels", "GPU busy"]
    section = Section("Decode steps: the kernels' time against the step's", header)
    for case in capture["payload"]["cases"]:
        if case["phase"] != "decode":
            continue
        batch = case["axes"]["batch"]
        name = f"batch {batch}, {case['x']} cached"
        for key, p in case["providers"].items():
            step_ms = _decode_step_ms(batch, case["x"], key, gpu)
            if step_ms is None:
                continue
            busy = p["kernels_us"] / (step_ms * 1e3)
            section.rows.append(
                [
                    Cell(name),
                    Cell(NAMES.get(key, key)),
                    Cell(f"{step_ms * 1e3:.0f}", step_ms),
                    Cell(f"{p['kernels_us']:.0f}", p["kernels_us"]),
                    Cell(f"{p['kernel_count']:.0f}", p["kernel_count"]),
                    Cell(prose.percent(busy), busy),
                ]
            )
    caption = textwrap.fill(bench_captures.caption(capture), WIDTH)
    return render([section], notes) + "\n" + caption


def amdahl(gpu: str | None = None) -> str:
    """What the prefill breakdown bounds: the matmuls' share of eager PyTorch's kernel time,
    the largest speed-up that making everything else free could give (Amdahl's law), what
    ours measured, and the parts where ours takes longer than eager PyTorch (by more than
    :data:`SLOWER_PART`)."""
    capture, notes = captures.load(BREAKDOWN, gpu)
    if capture is None:
        return "\n".join(notes)
    case = next(c for c in capture["payload"]["cases"] if c["phase"] == "prefill")
    eager, ours = case["providers"]["eager"], case["providers"]["triton"]
    share = sum(eager["parts_us"].get(p, 0.0) for p in MATMUL_PARTS) / eager["kernels_us"]
    text = (
        f"Prefill at batch {case['x']}: the parts that hold the four projections (each matmul "
        f"with the elementwise work inside its part: the residual adds, and in eager PyTorch "
        f"SwiGLU's gating) are {prose.percent(share)} of eager PyTorch's kernel time. With "
        f"everything else made free and those parts as they are, the layer could run at most "
        f"{1 / share:.2f}× as fast (Amdahl's law); ours, whose matmuls differ too, takes "
        f"{ours['kernels_us'] / eager['kernels_us']:.2f} of eager's kernel time."
    )
    slower = [
        f"{part} ({ours['parts_us'][part]:.0f} µs against {eager['parts_us'][part]:.0f} µs)"
        for part in ours["parts_us"]
        if eager["parts_us"].get(part) and ours["parts_us"][part] > SLOWER_PART * eager["parts_us"][part]
    ]
    if slower:
        text += f" Part by part, ours takes longer than eager PyTorch in {prose.and_list(slower)}."
    return "\n".join([textwrap.fill(text, WIDTH), *notes])


#: A part of ours counts as slower than eager PyTorch's above this ratio of their times.
SLOWER_PART = 1.05


def _case_title(case: dict) -> str:
    """A breakdown case as its panel names it: ``'decode, batch 1, 4096 cached'``."""
    where = f"batch {case['axes']['batch']}, {case['x']} cached" if case["axes"] else f"batch {case['x']}"
    return f"{case['phase']}, {where}"


def plot_time_breakdown(gpu: str | None = None):
    """A stacked bar per provider and case of the breakdown capture: each part's GPU time
    per step, in microseconds, the parts in the layer's order, its share written on the
    larger segments; a placeholder when the capture is missing
    (:func:`gpuperf.pages.breakdown.plot_time_breakdown`)."""
    return breakdown.plot_time_breakdown(
        BREAKDOWN, names=NAMES, colors=PART_COLORS, title_of=_case_title, gpu=gpu
    )


# --- the roofline --------------------------------------------------------------------------


def _points(gpu: str | None = None) -> list[tuple[str, str, float, float]]:
    """``(label, provider, FLOP/byte, TFLOP/s)`` of each phase's measurements on ``gpu``."""
    points = []
    prefill, decode = load(LLAMA_PREFILL, gpu), load(LLAMA_DECODE, gpu)
    if prefill.record is not None:
        for key in ("triton", "eager"):
            for b, r in prefill.rows(key).items():
                if b in (1, max(LLAMA_PREFILL.x_values)):
                    points.append((f"prefill b{b}", key, r["flops"] / r["bytes"], r["flops"] / r["ms"] / 1e9))
    if decode.record is not None:
        for batch in (1, 64):
            for n, r in decode.rows("triton_graph", batch=batch).items():
                if n == 4096:
                    label = f"decode b{batch}"
                    points.append(
                        (label, "triton_graph", r["flops"] / r["bytes"], r["flops"] / r["ms"] / 1e9)
                    )
    return points


def plot_roofline(gpu: str | None = None):
    """The GPU's measured roofline (memory roof, bf16 matmul; both named with their values
    in the legend) with the layer's phases on it: prefill at batch 1 and 8 (ours and
    eager), a decode step at batch 1 and 64 with 4096 cached tokens (ours in a CUDA
    graph)."""
    import matplotlib.pyplot as plt

    c = hardware.ceilings(gpu)
    bw, peak = c.memory_gbps * 1e9, c.tflops("bf16") * 1e12
    fig, ax = plt.subplots(figsize=(8.0, 4.8))
    fig.patch.set_facecolor("white")
    xs = (0.5, 1e5)
    ridge = peak / bw
    roofs = (
        f"measured roofs: {c.memory_label}, {format_rate(c.memory_gbps, 'GB/s')};\n"
        f"{c.label('bf16')}, {c.tflops('bf16'):.0f} TFLOP/s"
    )
    ax.plot(
        [xs[0], ridge, xs[1]], [bw * xs[0] / 1e12, peak / 1e12, peak / 1e12],
        color="#555555", lw=1.5, label=roofs,
    )  # fmt: skip
    ax.annotate(f"ridge {ridge:.0f} FLOP/byte", (ridge, peak / 1e12), (ridge * 1.6, peak / 1e12 * 0.3),
                fontsize=8.5, arrowprops={"arrowstyle": "-", "color": "#999999"})  # fmt: skip
    shown = set()
    for label, key, x, y in _points(gpu):
        name = None if key in shown else NAMES[key]
        shown.add(key)
        ax.scatter(x, y, color=PROVIDER_COLORS.get(key, "#333333"), zorder=3, label=name)
        below = key == "eager"
        ax.annotate(label, (x, y), (6, -12 if below else 5), textcoords="offset points", fontsize=8)
    ax.legend(loc="lower right", frameon=False, fontsize=8.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xs)
    ax.set_ylim(0.3, peak / 1e12 * 2)
    ax.set_xlabel("arithmetic intensity, FLOP per byte of weights, activations and KV cache")
    ax.set_ylabel("TFLOP/s (log)")
    ax.set_title(f"The layer's phases on the {c.name}'s roofline (measured ceilings)", fontsize=10)
    ax.grid(True, which="major", color="#eeeeee")
    fig.tight_layout()
    return fig


# --- training ------------------------------------------------------------------------------


def training_summary(train: Result, memory: Result) -> str:
    """Each GPU's training step: each provider's milliseconds and peak GiB, or why it was not
    timed (a provider whose gradients did not match the float32 layer's is not timed)."""
    check_result(train, LLAMA_TRAIN)
    check_result(memory, LLAMA_TRAIN_MEMORY)
    lines = []
    b = LLAMA_TRAIN.x_values[0]
    for r in train.gpus():
        rows = {row["provider"]: row for row in r.record["rows"] if row["x"] == b}
        try:
            mem = memory.on(r.gpu)
            gib = {p.key: mem.values(p.key).get(b) for p in LLAMA_TRAIN_MEMORY.providers}
        except ValueError:
            gib = {}
        lines.append(f"{r.name}, batch {b} x {LLAMA_SEQ_LEN}:")
        for key, row in rows.items():
            if row["status"] == "ok":
                peak = f", peak {gib[key]:.2f} GiB beyond the inputs" if gib.get(key) else ""
                lines.append(f"  {NAMES[key]}: {row['ms']:.1f} ms{peak}")
            else:
                lines.append(f"  {NAMES[key]}: not timed, {_why(row)}")
    return "\n".join(lines + train.all_notes() + memory.all_notes())


def _why(row: dict) -> str:
    """Why a row has no time, in words: for a mismatch, how far it was from the reference."""
    message = row.get("message") or ""
    for line in message.splitlines():
        if line.startswith("Greatest relative difference"):
            value = float(line.split(":")[1].split()[0])
            return f"its gradients were {prose.percent(value)} from float32's (bf16 allows 1.6%)"
        if "||out - ref|| / ||ref|| = " in line:
            value, allowed = line.split("||out - ref|| / ||ref|| = ")[1].split(", more than ")
            return (
                f"its gradients were {prose.percent(float(value))} from float32's, norm-wise "
                f"(the check allows {prose.percent(float(allowed))})"
            )
    return f"{row['status']}: {message.splitlines()[0][:60] if message else ''}"


# --- the opening paragraph -------------------------------------------------------------------


def _span_or_none(values) -> str | None:
    values = list(values)
    return prose.span(values) if values else None


#: The three kernels tutorial 07 adds, each beside Liger-Kernel's: (benchmark, what Liger runs).
LIGER_OPS = (
    (RMS_NORM, "RMSNorm"),
    (ROPE, "RoPE of q and k"),
    (SWIGLU, "SwiGLU (gate and up matmul with the gating)"),
)


def liger_table(gpu: str | None = None) -> str:
    """RMSNorm, RoPE and SwiGLU, ours beside Liger-Kernel's and torch.compile's, from the
    ``rms_norm``, ``rope`` and ``swiglu`` records of ``gpu`` (default: the reference GPU):
    each size's rate (the record's metric) and ours over Liger's; the records' notes (a
    missing or stale record, or a Liger row that holds an error) under the table.

    Raises:
        ValueError: a record without a ``liger`` provider's rows (a record from before
            Liger-Kernel was measured beside the kernels).
    """
    sections, notes, footer = [], [], None
    for bench, what in LIGER_OPS:
        result = load(bench, gpu)
        notes += result.all_notes()
        if result.record is None:
            continue
        ours, liger, compiled = result.values("triton"), result.values("liger"), result.values("compile")
        if not liger:
            raise ValueError(f"the {bench.name} record has no Liger-Kernel rows")
        metric = result.record["metric"]
        header = [result.record["x_label"], f"ours {metric}", f"Liger {metric}", f"compile {metric}"]
        header.append("ours / Liger")
        section = Section(what, header)
        for x, value in ours.items():
            if x not in liger:
                continue
            row = [Cell(format_x(x), x), Cell(f"{value:.0f}", value), Cell(f"{liger[x]:.0f}", liger[x])]
            row.append(Cell(f"{compiled[x]:.0f}", compiled[x]) if x in compiled else Cell("-"))
            row.append(Cell(f"{value / liger[x]:.2f}×", value / liger[x]))
            section.rows.append(row)
        sections.append(section)
        footer = result.measured_on()
    return render(sections, notes, footer=footer)


def liger_reading(gpu: str | None = None) -> str:
    """One sentence per kernel, read off :func:`liger_table`'s numbers: the range of ours
    over Liger-Kernel's across the sizes measured."""
    parts = []
    for bench, what in LIGER_OPS:
        result = load(bench, gpu)
        if result.record is None:
            continue
        ours, liger = result.values("triton"), result.values("liger")
        ratios = [ours[x] / liger[x] for x in ours if x in liger]
        if ratios:
            parts.append(f"{what.split(' (')[0]} {prose.span(ratios)}×")
    if not parts:
        return ""
    return textwrap.fill("Ours over Liger-Kernel's, across the sizes measured: " + "; ".join(parts) + ".", 88)


def in_one_paragraph() -> prose.Paragraph:
    """The page's answer, from the committed records of the page's GPU (or measured live)."""
    prefill, autotune, decode = load(LLAMA_PREFILL), load(LLAMA_PREFILL_AUTOTUNE), load(LLAMA_DECODE)
    train, memory, kernel = load(LLAMA_TRAIN), load(LLAMA_TRAIN_MEMORY), load(ATTENTION_DECODE)
    sentences, notes = [], []
    for r in (prefill, autotune, decode, train, memory, kernel):
        notes += r.notes
    if prefill.record is not None:
        eager = _span_or_none(_speedups(prefill, "triton", "eager"))
        compiled = _span_or_none(_speedups(prefill, "triton", "compile"))
        if eager and compiled:
            batches = sorted(prefill.ms("triton"))
            tuned = autotune.ms("compile_max") if autotune.record is not None else {}
            autotune_ratio = _span_or_none(_speedups(autotune, "triton", "compile_max")) if tuned else None
            sentences.append(
                f"On the {short_gpu_name(prefill.gpu)}, one Llama-3-8B layer built from this "
                f"site's kernels runs a prefill of {LLAMA_SEQ_LEN}-token prompts {eager}× as fast "
                f"as eager PyTorch and {compiled}× as fast as torch.compile (batch "
                f"{batches[0]} to {batches[-1]})"
                + (
                    f", {autotune_ratio}× as fast as max-autotune at batch "
                    f"{', '.join(str(b) for b in sorted(tuned))}."
                    if autotune_ratio
                    else "."
                )
            )
    if decode.record is not None:
        graph = _span_or_none(_speedups(decode, "triton_graph", "compile_ro", batch=1))
        eager = _span_or_none(_speedups(decode, "triton", "eager", batch=1))
        if graph and eager:
            sentences.append(
                f"A decode step at batch 1 is launch-bound: our kernels launched one by one run "
                f"{eager}× as fast as eager PyTorch; captured in one CUDA graph, {graph}× as fast "
                f"as torch.compile's reduce-overhead mode."
            )
    if kernel.record is not None:
        ratios = [v for b in (1, 8, 64) for v in kernel.ratios(batch=b).values()]
        frac = kernel.fraction_of_ceiling(batch=64)
        if ratios and frac:
            sentences.append(
                f"Flash-Decoding reads the KV cache at {prose.span(ratios)}× SDPA's speed, and at "
                f"{prose.percent_span(frac.values())} of the {kernel.ceiling_name(batch=64)} at batch 64."
            )
            sentences += passes_roof(kernel, batch=64)
    if train.record is not None:
        batch = LLAMA_TRAIN.x_values[0]
        ours = train.ms("triton").get(batch)
        eager = _span_or_none(_speedups(train, "triton", "eager"))
        gib = {}
        if memory.record is not None:
            gib = {p: memory.values(p).get(batch) for p in ("triton", "eager", "compile")}
        if eager:
            sentence = f"A training step of ours runs {eager}× as fast as eager PyTorch"
            compiled = train.ms("compile").get(batch)
            if ours and compiled:
                faster = "faster than ours" if compiled < ours else "slower than ours"
                sentence += (
                    f"; torch.compile's is {faster}: {compiled:.1f} ms against our {ours:.1f} ms "
                    f"(ours {compiled / ours:.2f}× as fast)"
                )
            sentences.append(sentence + ".")
            if gib.get("triton") and gib.get("eager"):
                sentence = (
                    f"Our step's peak memory is {gib['triton']:.2f} GiB against eager's "
                    f"{gib['eager']:.2f} GiB"
                )
                if gib.get("compile"):
                    sentence += f" and torch.compile's {gib['compile']:.2f} GiB"
                sentences.append(sentence + ".")
        elif ours:
            sentences.append(
                f"A training step of ours takes {ours:.1f} ms at batch {batch}; eager PyTorch's bf16 "
                f"gradients missed the float32 check, so it has no time to compare."
            )
    return prose.paragraph(*sentences, notes=notes)


__all__ = [
    "LIGER_OPS",
    "amdahl",
    "autotune_cost",
    "decode_table",
    "in_one_paragraph",
    "launch_bound",
    "liger_reading",
    "liger_table",
    "plot_roofline",
    "plot_time_breakdown",
    "prefill_table",
    "training_summary",
    "work_per_token",
]
