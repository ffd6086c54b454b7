"""What tutorial 04 (fused attention) prints from the records: its opening paragraph, the
naive version against the fused kernel, the tuning sweeps, and the speed and memory of
our kernel relative to the other attention implementations, every GPU with records.

The benchmarks are :data:`~gpuperf.bench.catalog.ATTENTION_FORWARD`,
:data:`~gpuperf.bench.catalog.ATTENTION_BACKWARD` and
:data:`~gpuperf.bench.catalog.ATTENTION_MEMORY`; their providers are keyed
``triton`` (ours), ``flash``, ``cudnn``, ``efficient``, ``math``, ``flex`` and
``naive`` (:data:`~gpuperf.bench.catalog.ATTENTION_IMPLEMENTATIONS`).
"""

from __future__ import annotations

import ast
from pathlib import Path

from gpuperf.bench import metrics, records
from gpuperf.bench.catalog import (
    ATTENTION_BACKWARD,
    ATTENTION_FORWARD,
    ATTENTION_IMPLEMENTATIONS,
    ATTENTION_MEMORY,
)
from gpuperf.bench.sources import PACKAGE_ROOT
from gpuperf.pages import hardware, prose
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.report import Result, check_result, load
from gpuperf.pages.tables import Cell, Section, render, row_cell

#: The shortest sequence the page's summaries count: below it, launch and tail effects
#: dominate every implementation.
MIN_SEQ = 4096
#: The axis combination the naive-versus-fused table shows (that of ATTENTION_MEMORY).
NAIVE_COMBO = {"dtype": "float16", "head_dim": 128, "causal": False}
#: How the page names each provider in sentences and column headers.
NAMES = {
    "triton": "ours",
    "flash": "FlashAttention-2",
    "cudnn": "cuDNN",
    "efficient": "memory-efficient",
    "math": "math",
    "flex": "FlexAttention",
    "naive": "naive",
}
#: The attention kernels a tuning sweep times, in launch order.
KERNELS = ("forward", "dkdv", "dq")
#: The backward's two kernels, by the ``@triton.jit`` function that holds each one's loop
#: over tiles in ``gpuperf/kernels/attention.py`` (:func:`backward_products` reads them).
BACKWARD_LOOPS = {"dK/dV kernel": "_dkdv_tiles", "dQ kernel": "_dq_tiles"}


def speedup(result: Result, other: str, min_seq: int = MIN_SEQ, **axes) -> dict[int, float]:
    """Our kernel's speed relative to ``other`` at one axis combination of ``result``'s
    own record (one GPU).

    Args:
        result: a forward or backward attention result (TFLOP/s per sequence length).
        other: a provider key (``'flash'``, ``'cudnn'``, ``'flex'``, ...).
        min_seq: the shortest sequence length kept.
        axes: the combination (``dtype="float16", head_dim=128, causal=False``).

    Returns:
        ``{S: our TFLOP/s / other's TFLOP/s}`` (equally, other's time over ours: above 1
        means ours is faster) for each ``S >= min_seq`` where both ran; ``{}`` without
        a record.

    Raises:
        TypeError: ``result`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``other`` is not an attention provider, or ``axes`` is not one of
            the benchmark's combinations.
    """
    check_result(result)
    if other not in ATTENTION_IMPLEMENTATIONS:
        raise ValueError(f"other must be one of {list(ATTENTION_IMPLEMENTATIONS)}, got {other!r}")
    ours, theirs = result.values(**axes), result.values(other, **axes)
    return {s: v / theirs[s] for s, v in ours.items() if s >= min_seq and theirs.get(s)}


def _all_speedups(result: Result, other: str) -> list[float]:
    """Every ratio of :func:`speedup` over all the benchmark's axis combinations."""
    return [v for combo in result.benchmark.combos() for v in speedup(result, other, **combo).values()]


def _gpus() -> list[str]:
    """Folders of the page's GPU (first) and of every GPU with ceilings or an attention
    record: a GPU that misses a record still gets its notes."""
    found = {hardware.page_gpu(), *hardware.gpus()}
    for bench in (ATTENTION_FORWARD, ATTENTION_BACKWARD, ATTENTION_MEMORY):
        found.update(records.gpus_with_record(bench.name))
    return hardware.first_then_by_name(found, hardware.page_gpu())


def _gpu_sentence(name: str, forward: Result, backward: Result, memory: Result) -> str:
    """What one GPU's records say, in one or two sentences ('' when it has none)."""
    parts = []
    for label, result in (("forward", forward), ("backward", backward)):
        if result.record is None:
            continue
        fa2, cudnn = _all_speedups(result, "flash"), _all_speedups(result, "cudnn")
        if fa2 and cudnn and not parts:
            parts.append(
                f"our {label} runs {prose.span(fa2)}× as fast as SDPA's FlashAttention-2 "
                f"backend and {prose.span(cudnn)}× as fast as cuDNN"
            )
        elif fa2 and cudnn:
            parts.append(f"our {label} {prose.span(fa2)}× and {prose.span(cudnn)}×")
    sentences = []
    if parts:
        sentences.append(
            f"On the {name}, at S ≥ {MIN_SEQ} (fp16 and bf16, D = 64 and 128, causal or not), "
            + "; ".join(parts)
            + "."
        )
    if forward.record is not None:
        naive, ours = forward.values("naive", **NAIVE_COMBO), forward.values(**NAIVE_COMBO)
        if naive and ours:
            sentences.append(
                f"The naive three-line version peaks at {max(naive.values()):.0f} TFLOP/s "
                f"(fp16, D = 128), ours at {max(ours.values()):.0f}."
            )
    if memory.record is not None:
        ours, fa2, naive = (memory.values(p) for p in ("triton", "flash", "naive"))
        s = max(ours, default=None)
        if s is not None and s in fa2 and s in naive:
            sentences.append(
                f"A training step at S = {s} needs {ours[s]:.2f} GiB beyond its inputs, "
                f"FlashAttention-2's {fa2[s]:.2f} GiB, the naive version's {naive[s]:.0f} GiB."
            )
    return " ".join(sentences)


def in_one_paragraph() -> prose.Paragraph:
    """The page's headline measurements for every GPU with records: our forward and
    backward against FlashAttention-2 and cuDNN at ``S >= MIN_SEQ``, the naive
    version's best TFLOP/s against ours, and one training step's peak memory.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`; each missing or stale record is one
        of its notes, prefixed with its GPU.
    """
    sentences, notes = [], []
    for gpu in _gpus():
        loaded = [load(bench, gpu) for bench in (ATTENTION_FORWARD, ATTENTION_BACKWARD, ATTENTION_MEMORY)]
        name = next((short_gpu_name(r.gpu) for r in loaded if r.gpu), gpu)
        sentences.append(_gpu_sentence(name, *loaded))
        notes += [f"{name}: {note}" for r in loaded for note in r.notes]
    if not any(sentences):
        notes.append(f"No GPU has a committed attention record; {records.advice(records.bench_command())}.")
    return prose.paragraph(*sentences, notes=notes)


def _named(result: Result, name: str) -> Result | None:
    """The GPU of ``result`` whose :attr:`~gpuperf.pages.report.Result.name` is ``name``, or None."""
    return next((r for r in result.gpus() if r.name == name), None)


def naive_vs_fused(forward: Result, memory: Result) -> str:
    """The naive version against our kernel, per sequence length and GPU: forward time
    (ms) and TFLOP/s at fp16, D = 128, not causal, and one training step's peak memory
    beyond the inputs (GiB).

    Args:
        forward: the :data:`~gpuperf.bench.catalog.ATTENTION_FORWARD` result.
        memory: the :data:`~gpuperf.bench.catalog.ATTENTION_MEMORY` result.

    Returns:
        A table (text, or HTML with ``GPUPERF_TABLES=html``) headed by the records'
        notes; only the notes when neither has a record.

    Raises:
        TypeError: ``forward`` or ``memory`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: they are not the forward and memory benchmarks.
    """
    check_result(forward, ATTENTION_FORWARD, name="forward")
    check_result(memory, ATTENTION_MEMORY, name="memory")
    notes = [*forward.all_notes(), *memory.all_notes()]
    # By name: a quick live build shows its own points beside the same GPU's committed sweep.
    gpus = list(dict.fromkeys(r.name for r in (*forward.gpus(), *memory.gpus())))
    if not gpus:
        return render([], notes)
    header = ["S", "GPU"]
    for provider in ("naive", "triton"):
        who = NAMES[provider]
        header += [f"{who} forward ms", f"{who} TFLOP/s", f"{who} step GiB"]
    section = Section("fp16, D = 128, not causal", header)
    for s in ATTENTION_FORWARD.x_values:
        for name in gpus:
            fwd, mem = _named(forward, name), _named(memory, name)
            rows = [
                (fwd and fwd.row(p, s, **NAIVE_COMBO), mem and mem.row(p, s)) for p in ("naive", "triton")
            ]
            if not any(row for pair in rows for row in pair):
                continue  # not measured at this S on that GPU
            cells = [Cell(str(s), s), Cell(name, name)]
            for row, step in rows:
                cells += [row_cell(row, "ms", ".2f"), row_cell(row, "value"), row_cell(step, "value", ".2f")]
            section.rows.append(cells)
    return render([section], notes)


def speedups(forward: Result, backward: Result, others=("flash", "cudnn", "flex")) -> str:
    """Our speed relative to each of ``others``, per pass, axis combination and GPU, as
    the range over ``S >= MIN_SEQ`` (above 1: ours is faster).

    Returns:
        Two tables (forward, backward; text, or HTML with ``GPUPERF_TABLES=html``),
        each row ``min–max×`` per other provider, ``-`` where none ran.

    Raises:
        TypeError: ``forward`` or ``backward`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: a provider in ``others`` is not an attention provider.
    """
    check_result(forward, name="forward")
    check_result(backward, name="backward")
    unknown = [p for p in others if p not in ATTENTION_IMPLEMENTATIONS]
    if unknown:
        raise ValueError(f"others must be among {list(ATTENTION_IMPLEMENTATIONS)}, got {unknown}")
    sections = []
    for label, result in (("forward", forward), ("backward", backward)):
        header = ["dtype", "D", "causal", "GPU", *(f"vs {NAMES[p]}" for p in others)]
        section = Section(f"{label}, S ≥ {MIN_SEQ}: other's time / ours", header)
        for combo in result.benchmark.combos():
            for gpu_result in result.gpus():
                if not gpu_result.values(**combo):
                    continue  # not measured on that GPU (a quick live build measures part)
                name = gpu_result.name
                cells = [Cell(combo["dtype"]), Cell(str(combo["head_dim"]), combo["head_dim"])]
                cells += [Cell(str(combo["causal"])), Cell(name)]
                for other in others:
                    ratios = speedup(gpu_result, other, **combo).values()
                    text = f"{prose.span(ratios)}×" if ratios else "-"
                    cells.append(Cell(text, min(ratios) if ratios else None))
                section.rows.append(cells)
        sections.append(section)
    return render(sections, [*forward.all_notes(), *backward.all_notes()])


def memory_saving(memory: Result) -> str:
    """One line per GPU: how many times our training step's peak memory
    FlashAttention-2's and the naive version's need, the range over every sequence
    length (``'H200: FlashAttention-2 needs 1.98×, the naive version 4–127× our
    memory'``), after the record's notes.

    Raises:
        TypeError: ``memory`` is not a :class:`~gpuperf.pages.report.Result`.
        ValueError: ``memory`` is not the :data:`~gpuperf.bench.catalog.ATTENTION_MEMORY`
            result.
    """
    check_result(memory, ATTENTION_MEMORY, name="memory")
    lines = list(memory.all_notes())
    for result in memory.gpus():
        ours, naive = result.values(), result.values("naive")
        fa2 = result.ratios()
        parts = []
        if fa2:
            parts.append(f"FlashAttention-2 needs {prose.span(fa2.values())}×")
        by_naive = [naive[s] / ours[s] for s in ours if s in naive and ours[s]]
        if by_naive:
            parts.append(f"the naive version {prose.span(by_naive, '{:.0f}'.format)}×")
        if parts:
            lines.append(f"{result.name}: {', '.join(parts)} our memory")
    return "\n".join(lines)


def _sweep_gpus(root: Path) -> list[str]:
    """Folders under ``root`` holding an attention sweep, the page's GPU first."""
    found = [p.parent.name for p in root.glob("*/attention.json")] if root.is_dir() else []
    return hardware.first_then_by_name(found, hardware.page_gpu())


def tuning_table(root: Path | None = None) -> str:
    """Every GPU's committed attention sweep: per head dim, mask and kernel (forward,
    dK/dV, dQ), the configs that ran, the winner and the best and worst TFLOP/s, each
    GPU's table under where and when it ran.

    Args:
        root: the folder of the per-GPU sweeps (default: the one the kernels read,
            ``src/gpuperf/kernels/tuned``).

    Returns:
        Text, or HTML with ``GPUPERF_TABLES=html``; a ``MISSING`` note for the page's
        GPU when it has no sweep.

    Raises:
        TypeError: ``root`` is not a path.
    """
    from gpuperf.bench import tuning
    from gpuperf.kernels.configs import TUNED_DIR, AttentionConfig
    from gpuperf.pages.sweeps import sweep_caption

    if root is not None and not isinstance(root, (str, Path)):
        raise TypeError(f"root must be a path, got {type(root).__name__}")
    root = Path(root) if root is not None else TUNED_DIR
    gpus, notes, sections = _sweep_gpus(root), [], []
    if hardware.page_gpu() not in gpus:
        notes.append(
            f"MISSING: no attention tuning sweep for {hardware.page_gpu()}; "
            f"{records.advice(records.bench_command('attention_forward'), 'that GPU')} (it tunes first)."
        )
    header = ["D", "causal", "kernel", "configs", "winner", "best TFLOP/s", "worst TFLOP/s"]
    for gpu in gpus:
        sweep = tuning.read_tuning(gpu, root, kernel="attention")
        section = Section(sweep_caption(sweep), header)
        for entry in sweep["best"]:
            d, causal = entry["head_dim"], entry["causal"]
            for kernel in KERNELS:
                tried = [
                    t["tflops"]
                    for t in sweep["trials"]
                    if (t["kernel"], t["head_dim"], t["causal"], t["status"]) == (kernel, d, causal, "ok")
                ]
                winner = AttentionConfig(**entry[kernel]).label()
                section.rows.append(
                    [
                        Cell(str(d), d),
                        Cell(str(causal)),
                        Cell(kernel),
                        Cell(str(len(tried)), len(tried)),
                        Cell(winner),
                        Cell(f"{max(tried):.0f}", max(tried)) if tried else Cell("-"),
                        Cell(f"{min(tried):.0f}", min(tried)) if tried else Cell("-"),
                    ]
                )
        sections.append(section)
    return render(sections, notes)


def backward_products(path: Path | None = None) -> dict[str, list[str]]:
    """The matrix products each backward kernel computes per tile of queries and keys: the
    ``tl.dot`` calls in the body of each loop of :data:`BACKWARD_LOOPS`, as written, read
    from the kernel's source (``path``, default ``gpuperf/kernels/attention.py``) without
    importing it.

    Returns:
        ``{kernel: ["tl.dot(k, q_t)", ...]}`` in the order of :data:`BACKWARD_LOOPS`.

    Raises:
        ValueError: a loop of :data:`BACKWARD_LOOPS` is not defined in the file, or has no
            ``tl.dot``.
    """
    path = Path(path) if path is not None else PACKAGE_ROOT / "kernels" / "attention.py"
    functions = {
        node.name: node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)
    }
    found = {}
    for kernel, name in BACKWARD_LOOPS.items():
        if name not in functions:
            raise ValueError(f"{path} defines no {name} (the {kernel}'s loop)")
        calls = [
            node
            for node in ast.walk(functions[name])
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.dot"
        ]
        if not calls:
            raise ValueError(f"{name} in {path} has no tl.dot")
        found[kernel] = [ast.unparse(c) for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]
    return found


def counted_products() -> float:
    """How many matrix products of the forward's size the backward's FLOP count
    (:func:`gpuperf.bench.metrics.attention_flops`, ``backward=True``) stands for: the
    forward's two times the metric's backward factor, FlashAttention-2's five (Dao, 2023:
    QKᵀ, dV, dP, dQ, dK, each once)."""
    forward = metrics.attention_flops(1, 1, 1, 1)
    return 2 * metrics.attention_flops(1, 1, 1, 1, backward=True) / forward


def backward_work(path: Path | None = None) -> str:
    """Each backward kernel's products per tile (:func:`backward_products`), their total
    against the products the backward's FLOP count stands for (:func:`counted_products`),
    and what that makes of the TFLOP/s the page reports for the backward.

    Raises:
        ValueError: as :func:`backward_products`.
    """
    products = backward_products(path)
    lines = [f"{kernel}: {len(dots)} products, " + ", ".join(dots) for kernel, dots in products.items()]
    ran, counted = sum(len(d) for d in products.values()), counted_products()
    lines.append(
        f"In all {ran} products per tile of queries and keys, where the backward's FLOP count "
        f"stands for {counted:g} (FlashAttention-2's single kernel): the kernels execute "
        f"{prose.times(ran / counted)} the FLOPs their TFLOP/s counts."
    )
    return prose.fill(lines, "    ")
