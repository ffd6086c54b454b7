"""The guide on PyTorch's performance recipes (guide 05), in tables, figures and sentences
read from its captures.

``python scripts/recipes_capture.py`` measures seven recipes of the PyTorch
performance-tuning guide on a GPU and writes one capture for each (:data:`RECIPES`). Each
capture's payload holds ``cases`` (one per size), each a ``baseline`` key and its
``configs``; a config is ``{"key", "label", "step": {"median", "p20", "p80"}, ...}``, its
``step`` the wall time of one training step in milliseconds, host included, and what else
the recipe measured beside it (a peak memory, a first step's seconds, the ops the profiler
counted). Each recipe has here:

* a ``*_table(capture)``: the render :func:`gpuperf.pages.captures.show` prints;
* :func:`figure` draws it: the step times as bars, with what else it measured beside them;
* a ``*_reading(shown)``: the sentences that read its numbers, one block per GPU;
* :func:`in_one_paragraph`: the page's opening, one clause per recipe.

A speed-up inside the run-to-run spread (:func:`no_gain`) is said to be no gain.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping

from gpuperf.bench import captures
from gpuperf.bench.traces import GPU_WORK, union_ms
from gpuperf.pages import captures as pages_captures
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.prose import WIDTH, Paragraph, and_list, paragraph, percent, span, times
from gpuperf.pages.tables import Cell, Section, number, render

#: The captures, in the order the guide shows them.
DATA_LOADING = "recipe_data_loading"
PRECISION = "recipe_precision"
ZERO_GRAD = "recipe_zero_grad"
SYNCS = "recipe_syncs"
CONV = "recipe_conv"
CHECKPOINTING = "recipe_checkpointing"
COMPILE = "recipe_compile"
RECIPES = (DATA_LOADING, PRECISION, ZERO_GRAD, SYNCS, CONV, CHECKPOINTING, COMPILE)
#: Each recipe's figure title.
TITLES = {
    DATA_LOADING: "DataLoader workers and pinned memory: time per training step",
    PRECISION: "TF32 and bfloat16 autocast: an MLP's training step",
    ZERO_GRAD: "zero_grad(set_to_none): time per training step",
    SYNCS: "Host-device synchronizations in the loop: time per training step",
    CONV: "cudnn.benchmark and channels_last: a conv net's training step",
    CHECKPOINTING: "Gradient checkpointing: step time against peak memory",
    COMPILE: "torch.compile (default mode) on the MLP's training step",
}
#: Below this relative difference a speed-up is no gain, even outside the spread.
NOISE = 0.03

_GIB = 2**30


# --- reading a capture ----------------------------------------------------------------------


def cases(capture: dict) -> list[dict]:
    """The cases of a recipe's capture.

    Raises:
        TypeError: ``capture`` is not a dict.
        ValueError: its payload has no list of ``cases``.
    """
    if not isinstance(capture, dict):
        raise TypeError(f"expected a capture (dict), got {type(capture).__name__}")
    found = capture.get("payload", {}).get("cases")
    if not isinstance(found, list) or not found:
        raise ValueError(f"capture {capture.get('name')!r} has no list of cases in its payload")
    return found


def configs(case: dict) -> dict[str, dict]:
    """``{key: config}`` of one case, in the order measured."""
    return {c["key"]: c for c in case["configs"]}


def config(case: dict, key: str) -> dict:
    """The config ``key`` of ``case``.

    Raises:
        KeyError: no such config; the message lists those there are.
    """
    found = configs(case)
    if key not in found:
        raise KeyError(f"no config {key!r} in case {case.get('key')!r}; it has {list(found)}")
    return found[key]


def median(config: dict) -> float:
    """A config's median time per step, ms."""
    return config["step"]["median"]


def speedup(case: dict, key: str, over: str | None = None) -> float:
    """How many times faster the config ``key`` runs a step than ``over`` (default: the
    case's baseline): above 1 it is faster."""
    return median(config(case, over or case["baseline"])) / median(config(case, key))


def ratio_spread(case: dict, key: str, over: str | None = None) -> tuple[float, float]:
    """The range of ``key``'s speed over ``over`` (default: the baseline) that the two
    configs' 20th-80th percentiles allow: ``(over's p20 / key's p80, over's p80 / key's
    p20)``; above 1 is faster."""
    a, b = config(case, key)["step"], config(case, over or case["baseline"])["step"]
    return b["p20"] / a["p80"], b["p80"] / a["p20"]


def no_gain(case: dict, key: str, over: str | None = None) -> bool:
    """Whether ``key`` and ``over`` (default: the baseline) differ by less than the
    measurement tells apart: their 20th-80th percentile ranges overlap (the
    :func:`ratio_spread` holds 1), or their medians differ by less than :data:`NOISE`."""
    low, high = ratio_spread(case, key, over)
    return low <= 1 <= high or abs(speedup(case, key, over) - 1) < NOISE


def verdict(case: dict, key: str, over: str | None = None) -> str:
    """``'faster'`` or ``'slower'`` (``key`` against ``over``, default: the baseline), or
    ``'no measurable difference'`` where :func:`no_gain`."""
    if no_gain(case, key, over):
        return "no measurable difference"
    return "faster" if speedup(case, key, over) > 1 else "slower"


def _why_no_gain(case: dict, key: str, over: str | None) -> str:
    low, high = ratio_spread(case, key, over)
    return "within the run-to-run spread" if low <= 1 <= high else f"within {NOISE:.0%}"


def said(case: dict, key: str, over: str | None = None) -> str:
    """The speed of ``key`` over ``over`` (default: the baseline) as the page writes it, the
    words from :func:`verdict`: ``'1.85× faster'``, ``'0.80× (slower)'``, ``'1.04× (within
    the run-to-run spread: no measurable gain)'``, or ``'0.91× (slower, but within the
    run-to-run spread: no measurable difference)'``."""
    ratio = speedup(case, key, over)
    found = verdict(case, key, over)
    if found == "faster":
        return f"{times(ratio)} faster"
    if found == "slower":
        return f"{times(ratio)} (slower)"
    why = _why_no_gain(case, key, over)
    if round(ratio, 2) < 1:
        return f"{times(ratio)} (slower, but {why}: no measurable difference)"
    return f"{times(ratio)} ({why}: no measurable gain)"


def _mark(case: dict, key: str) -> str:
    """What a table writes after a config's speed: nothing where it is faster."""
    found = verdict(case, key)
    if found == "faster" or key == case["baseline"]:
        return ""
    if found == "slower":
        return " (slower)"
    return (
        " (within spread)" if _why_no_gain(case, key, None).endswith("spread") else f" (within {NOISE:.0%})"
    )


def gpu_work(events: dict | None) -> dict | None:
    """What one profiled step did on the GPU, from its events on the GPU's timeline
    (``{category: [[start, end], ...]}`` in µs, as ``scripts/recipes_capture.py`` keeps
    them): ``{"ops": n, "busy_ms": t}``, ``n`` the kernels, copies and memsets
    (:data:`gpuperf.bench.traces.GPU_WORK`) and ``t`` the time at least one of them ran
    (:func:`gpuperf.bench.traces.union_ms`).
    Annotated ranges are neither counted nor timed. None without events (a step on the
    CPU, or a capture that did not keep them).

    Raises:
        TypeError: ``events`` is neither None nor a dict.
    """
    if events is None:
        return None
    if not isinstance(events, dict):
        raise TypeError(f"events must be a dict of intervals by category, got {type(events).__name__}")
    work = [interval for cat in GPU_WORK for interval in events.get(cat, [])]
    return {"ops": len(work), "busy_ms": union_ms(work)}


def ms(value: float) -> str:
    """Milliseconds with three significant digits: ``'0.412 ms'``, ``'12.3 ms'``."""
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms" if value >= 1 else f"{value:.3f} ms"


def _rate(value: float) -> str:
    """TFLOP/s as a whole number, or with three significant digits below 10."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.3g}"


def _fill(*sentences: str) -> str:
    return textwrap.fill(" ".join(s for s in sentences if s), WIDTH, break_on_hyphens=False)


def _read(shown: Mapping[str, dict], write: Callable[[dict], list[str]]) -> str:
    """``write``'s sentences for each GPU's capture, each wrapped to the page's width."""
    return pages_captures.per_gpu(shown, lambda c: [_fill(s) for s in write(c)])


# --- tables ---------------------------------------------------------------------------------

#: An extra column: its header and the cell of one config (``(config, capture) -> Cell``).
Column = tuple[str, Callable[[dict, dict], Cell]]


def step_table(capture: dict, extra: tuple[Column, ...] = ()) -> str:
    """One table per case: each config's median time per step with its 20th-80th
    percentiles (ms), its speed against the baseline, then the ``extra`` columns; the
    model measured (the payload's ``model``) in each table's heading."""
    sections = []
    model = capture["payload"].get("model", "")
    for case in cases(capture):
        base = config(case, case["baseline"])["label"]
        header = ["configuration", "ms per step", "p20-p80", f"speed vs {base}", *(h for h, _ in extra)]
        heading = "; ".join(h for h in (model, case["label"] if len(cases(capture)) > 1 else "") if h)
        section = Section(heading, header)
        for c in case["configs"]:
            step = c["step"]
            ratio = speedup(case, c["key"])
            mark = _mark(case, c["key"])
            section.rows.append(
                [
                    Cell(c["label"]),
                    Cell(ms(step["median"]).removesuffix(" ms"), step["median"]),
                    Cell(f"{ms(step['p20']).removesuffix(' ms')}-{ms(step['p80']).removesuffix(' ms')}"),
                    Cell(times(ratio) + mark, ratio),
                    *(cell(c, capture) for _, cell in extra),
                ]
            )
        sections.append(section)
    return render(sections)


def _loading(c: dict, capture: dict) -> Cell:
    return number(c.get("loading", {}).get("median"), ".2f")


def _matmul_tflops(c: dict, capture: dict) -> float | None:
    matmul = capture["payload"].get("matmul", {})
    timing = matmul.get("times", {}).get(c["key"])
    return None if not timing else matmul["flops"] / timing["median"] / 1e9


def _gpu_work(c: dict) -> dict | None:
    return gpu_work(c.get("ops", {}).get("gpu_events"))


def _gpu_ops(c: dict, capture: dict) -> float | None:
    work = _gpu_work(c)
    return None if work is None else work["ops"]


def _gpu_busy(c: dict, capture: dict) -> float | None:
    work = _gpu_work(c)
    return None if work is None else work["busy_ms"]


def _first_step(c: dict, capture: dict) -> float | None:
    return c.get("first_step_s")


def _peak_gib(c: dict, capture: dict) -> float | None:
    peak = c.get("peak_bytes")
    return None if peak is None else peak / _GIB


def data_loading_table(capture: dict) -> str:
    """The loader's configs: time per step, and the loading alone per batch (ms)."""
    return step_table(capture, (("loading alone, ms per batch", _loading),))


def errors_measured(capture: dict) -> bool:
    """Whether the capture's forward errors were taken on the weights its float64 reference
    was given (``errors_on``). Earlier captures took TF32's and bfloat16's after the
    float32 steps had trained the model, which no longer matched the reference: their
    errors are not shown."""
    return capture["payload"].get("errors_on") == "initial weights"


def precision_table(capture: dict) -> str:
    """Float32, TF32 and bfloat16 autocast: time per step, the forward's largest error
    relative to float64 (where :func:`errors_measured`), and the matmul alone in TFLOP/s."""
    n = capture["payload"]["matmul"]["n"]
    error = ("forward's error vs float64", lambda c, _: number(c.get("relative_error"), ".1e"))
    matmul = (f"{n}^3 matmul alone, TFLOP/s", lambda c, cap: number(_matmul_tflops(c, cap), ".0f"))
    return step_table(capture, (error, matmul) if errors_measured(capture) else (matmul,))


def zero_grad_table(capture: dict) -> str:
    """Both settings of ``set_to_none`` at each model: time per step, and what one profiled
    step ran on the GPU (:func:`gpu_work`): its kernels, copies and memsets, and the time at
    least one of them ran ("-" where the capture kept no events)."""
    ops = ("GPU kernels, copies, memsets", lambda c, cap: number(_gpu_ops(c, cap), ",.0f"))
    busy = ("GPU busy, ms", lambda c, cap: number(_gpu_busy(c, cap), ".3f"))
    return step_table(capture, (ops, busy))


def syncs_table(capture: dict) -> str:
    """The synchronizations the debug mode reported in each loop (where in the loop, how
    many), what it printed, then the loops' time per step at each width."""
    payload = capture["payload"]
    lines = []
    found = payload.get("found")
    if found:
        for key, f in found.items():
            lines.append(
                f"{_loop_name(capture, key)}: {f['count']} synchronizations in {f['steps']} steps "
                f"(width {payload['counted_at_width']})"
            )
            lines += [f"  {n:>4}  {line}" for line, n in f["by_line"].items()]
        for message in payload.get("messages", []):
            lines.append(f"the warning: {message}")
    else:
        lines.append("synchronizations not counted: the debug mode needs a CUDA device")
    return "\n".join([*lines, "", step_table(capture)])


def conv_table(capture: dict) -> str:
    """The four layouts and algorithm choices: time per step, and the first step's seconds
    (where ``cudnn.benchmark`` times the algorithms)."""
    return step_table(capture, (("first step, s", lambda c, cap: number(_first_step(c, cap), ".2f")),))


def checkpointing_table(capture: dict) -> str:
    """No, half and full checkpointing: time per step and the step's peak memory (GiB)."""
    peak = ("peak memory of a step, GiB", lambda c, cap: number(_peak_gib(c, cap), ".2f"))
    return step_table(capture, (peak,))


def compile_table(capture: dict) -> str:
    """Eager and compiled: time per step, and the first step's seconds (the compilation)."""
    return step_table(capture, (("first step, s", lambda c, cap: number(_first_step(c, cap), ".2f")),))


#: The render of each capture, for :func:`gpuperf.pages.captures.show`.
TABLES = {
    DATA_LOADING: data_loading_table,
    PRECISION: precision_table,
    ZERO_GRAD: zero_grad_table,
    SYNCS: syncs_table,
    CONV: conv_table,
    CHECKPOINTING: checkpointing_table,
    COMPILE: compile_table,
}


def show(name: str) -> pages_captures.Shown:
    """Print every GPU's capture ``name`` through its table (:data:`TABLES`), with its
    provenance, or say that it is missing and how to take it.

    Raises:
        ValueError: ``name`` is not one of :data:`RECIPES`.
    """
    if name not in TABLES:
        raise ValueError(f"name must be one of {list(RECIPES)}, got {name!r}")
    return pages_captures.show(name, TABLES[name])


# --- figures --------------------------------------------------------------------------------

#: The panel drawn beside the step times: its axis label and each config's value.
EXTRA_PANELS: dict[str, tuple[str, Callable[[dict, dict], float | None]]] = {
    DATA_LOADING: ("loading alone, ms per batch", lambda c, cap: c.get("loading", {}).get("median")),
    PRECISION: ("the matmul alone, TFLOP/s", _matmul_tflops),
    ZERO_GRAD: ("GPU kernels, copies, memsets per step", _gpu_ops),
    CONV: ("first step, s", _first_step),
    CHECKPOINTING: ("peak memory of a step, GiB", _peak_gib),
    COMPILE: ("first step, s (compilation)", _first_step),
}
_COLORS = {"baseline": "#7f7f7f", "faster": "#2ca02c", "none": "#1f77b4", "slower": "#d62728"}


def _color(case: dict, key: str) -> str:
    if key == case["baseline"]:
        return _COLORS["baseline"]
    if no_gain(case, key):
        return _COLORS["none"]
    return _COLORS["faster"] if speedup(case, key) > 1 else _COLORS["slower"]


def _step_panel(ax, case: dict, reference: float | None) -> None:
    """Horizontal bars of the median step time, the 20th-80th percentiles as whiskers,
    each bar's speed against the baseline written after it."""
    items = case["configs"]
    y = list(range(len(items)))
    medians = [median(c) for c in items]
    low = [m - c["step"]["p20"] for m, c in zip(medians, items, strict=True)]
    high = [c["step"]["p80"] - m for m, c in zip(medians, items, strict=True)]
    colors = [_color(case, c["key"]) for c in items]
    ax.barh(y, medians, xerr=[low, high], color=colors, height=0.6, capsize=2, ecolor="#333333")
    right = max(m + h for m, h in zip(medians, high, strict=True))
    for i, c in enumerate(items):
        text = "baseline" if c["key"] == case["baseline"] else times(speedup(case, c["key"]))
        ax.text(medians[i] + high[i] + 0.02 * right, i, text, va="center", fontsize=8)
    if reference is not None:
        ax.axvline(reference, color="#444444", ls="--", lw=1)
        right = max(right, reference)
    ax.set_xlim(0, right * 1.25)
    ax.set_yticks(y, [c["label"] for c in items])
    ax.invert_yaxis()
    ax.set_xlabel("ms per step (median, p20-p80)")
    ax.grid(True, axis="x", alpha=0.3)


def _extra_panel(ax, case: dict, capture: dict, label: str, value) -> None:
    items = case["configs"]
    values = [value(c, capture) for c in items]
    known = [v for v in values if v is not None]
    right = max(known, default=1.0) or 1.0
    for i, v in enumerate(values):
        if v is None:
            ax.text(0.02 * right, i, "not measured", va="center", fontsize=8, color="#666666")
            continue
        ax.barh(i, v, color=_color(case, items[i]["key"]), height=0.6)
        ax.text(v + 0.02 * right, i, f"{v:,.3g}", va="center", fontsize=8)
    ax.set_ylim(len(items) - 0.5, -0.5)
    ax.set_yticks(range(len(items)), [""] * len(items))
    ax.set_xlim(0, right * 1.3)
    ax.set_xlabel(label)
    ax.grid(True, axis="x", alpha=0.3)


def bars_figure(capture: dict, title: str, extra=None, reference=None, notes=()):
    """The step times of each case of ``capture`` as bars (one row of panels per case),
    with ``extra`` (``(label, value(config, capture))``) drawn beside them and a dashed
    line at ``reference`` ms; the provenance caption and ``notes`` underneath.

    Raises:
        TypeError, ValueError: ``capture`` is not a recipe's capture (:func:`cases`).
    """
    import matplotlib.pyplot as plt

    from gpuperf.pages.plotting import PLOT_STYLE

    with plt.rc_context(PLOT_STYLE):
        return _bars_figure(capture, title, extra, reference, notes)


def _bars_figure(capture: dict, title: str, extra, reference, notes):
    import matplotlib.pyplot as plt

    rows = cases(capture)
    caption = textwrap.wrap(captures.caption(capture), 120) + [
        n for note in notes for n in textwrap.wrap(note, 120)
    ]
    heights = [0.32 * len(case["configs"]) + 0.75 for case in rows]
    caption_h = 0.12 * len(caption) + 0.1
    height = sum(heights) + caption_h + 0.45
    columns = 2 if extra else 1
    fig, axes = plt.subplots(
        len(rows),
        columns,
        figsize=(8.0, height),
        squeeze=False,
        gridspec_kw={"height_ratios": heights, "width_ratios": [3, 2] if extra else [1]},
        facecolor="white",
    )
    for i, case in enumerate(rows):
        _step_panel(axes[i, 0], case, reference)
        if len(rows) > 1:
            axes[i, 0].set_title(case["label"], fontsize=9, loc="left")
        elif reference is not None:
            axes[i, 0].set_title("dashed: the step on a batch already on the GPU", fontsize=8.5, loc="left")
        if extra:
            _extra_panel(axes[i, 1], case, capture, *extra)
    fig.suptitle(f"{title} ({short_gpu_name(capture['provenance']['gpu'])})", fontsize=10.5)
    fig.text(0.01, 0.01, "\n".join(caption), fontsize=7, va="bottom", color="#333333")
    fig.tight_layout(rect=(0, (caption_h + 0.05) / height, 1, 1 - 0.1 / height))
    return fig


def figure(name: str, gpu: str | None = None):
    """The figure of the recipe ``name`` on ``gpu`` (default: the reference GPU), or a
    placeholder that says its capture is missing and how to take it.

    Raises:
        ValueError: ``name`` is not one of :data:`RECIPES`.
    """
    from gpuperf.pages.plotting import plot_missing

    if name not in TITLES:
        raise ValueError(f"name must be one of {list(RECIPES)}, got {name!r}")
    capture, notes = pages_captures.load(name, gpu)
    if capture is None:
        return plot_missing(TITLES[name], " ".join(notes) or f"no capture {name!r} for {gpu}")
    reference = None
    if name == DATA_LOADING:
        reference = capture["payload"]["gpu_step"]["median"]
    return bars_figure(capture, TITLES[name], EXTRA_PANELS.get(name), reference, notes)


# --- the readings ---------------------------------------------------------------------------


def _only(capture: dict) -> dict:
    return cases(capture)[0]


def _data_loading(capture: dict) -> list[str]:
    payload, case = capture["payload"], _only(capture)
    found = configs(case)
    base = config(case, case["baseline"])
    best_key = min(found, key=lambda k: median(found[k]))
    best = found[best_key]
    gpu = payload["gpu_step"]["median"]
    own = base.get("loading", {}).get("median")
    if best_key == case["baseline"]:
        out = [f"Fastest: {base['label']} itself ({ms(median(base))} per step): no other setting gained."]
    else:
        out = [
            f"Fastest: {best['label']}; against {base['label']}, {ms(median(base))} → "
            f"{ms(median(best))} per step: {said(case, best_key)}."
        ]
    if own is not None:
        pace = "the GPU waited for the host" if own > gpu else "the host kept up"
        out.append(
            f"Making a batch in the training process takes {ms(own)}, against {ms(gpu)} for the step on a "
            f"batch already on the GPU (the dashed line): {pace}."
        )
    left = median(best) - gpu
    if left <= NOISE * gpu or median(best) <= payload["gpu_step"]["p80"]:
        out.append(
            f"With {best['label']} the input pipeline is hidden: the step takes what it takes on "
            "resident data."
        )
    else:
        out.append(f"With {best['label']} a step still waits {ms(left)} for its input.")
    out += _copies(payload, case)
    return out


def copy_settings(c: dict) -> tuple[bool, bool]:
    """``(pin_memory, non_blocking)`` of a loader's config. A capture that kept no
    ``non_blocking`` copied with it exactly when the batch was pinned."""
    pin = bool(c.get("pin_memory"))
    return pin, bool(c.get("non_blocking", pin))


#: The copy settings read against pageable batches copied without ``non_blocking``.
COPY_SETTINGS = (
    ((True, False), "pin_memory alone"),
    ((False, True), "non_blocking alone"),
    ((True, True), "both"),
)
#: The host's waits in ``.to("cuda")`` the capture measured (``copies["host_wait"]``), as read.
WAITS = {
    "pageable_blocking": "blocking from pageable memory",
    "pinned_blocking": "blocking from pinned memory",
    "pageable_non_blocking": "non_blocking from pageable memory",
    "pinned_non_blocking": "non_blocking from pinned memory",
}


def _by_workers(case: dict) -> dict[int, dict[tuple[bool, bool], str]]:
    """``{num_workers: {(pin_memory, non_blocking): key}}`` of a loader's configs."""
    found: dict[int, dict[tuple[bool, bool], str]] = {}
    for c in case["configs"]:
        found.setdefault(c["num_workers"], {})[copy_settings(c)] = c["key"]
    return found


def _host_waits(copies: dict | None) -> list[str]:
    """How long ``.to("cuda")`` held the host behind GPU work, each way, and which copies
    waited for that work (held the host half its time or more)."""
    waits = (copies or {}).get("host_wait")
    if not waits:
        return []
    busy = copies["busy"]["median"]
    got = {k: waits[k]["median"] for k in WAITS if k in waits}
    held = and_list([f"{ms(v)} {WAITS[k]}" for k, v in got.items()])
    free = [WAITS[k] for k, v in got.items() if v < 0.5 * busy]
    if not free:
        tail = "each waited for that work"
    elif len(free) == len(got):
        tail = "each returned before that work was done"
    else:
        which = f"the copy {free[0]}" if len(free) == 1 else f"the copies {and_list(free)}"
        tail = f"{which} returned before that work was done, the others waited for it"
    started = any(v < busy for k, v in got.items() if WAITS[k] not in free)
    behind = f"{ms(busy)} of GPU work" + (
        " (part of it run while the host queued it, so a wait can be shorter)" if started else ""
    )
    return [f'Queued behind {behind}, .to("cuda") of one batch held the host {held}: {tail}.']


def _copies(payload: dict, case: dict) -> list[str]:
    """One batch's copy from pageable and pinned memory, how long each way of copying held
    the host, and what pin_memory and non_blocking did to the step at each num_workers."""
    copies = payload.get("copies")
    out = []
    saving = None
    if copies:
        pageable, pinned = copies["pageable"]["median"], copies["pinned"]["median"]
        saving = pageable - pinned
        gbps = lambda t: copies["bytes"] / t / 1e6
        out.append(
            f"One batch ({copies['bytes'] / 1e6:.1f} MB) copies to the GPU in {ms(pageable)} from pageable "
            f"memory ({gbps(pageable):,.0f} GB/s) and {ms(pinned)} from pinned memory "
            f"({gbps(pinned):,.0f} GB/s): pinning saves {ms(saving)} of copy per batch."
        )
    out += _host_waits(copies)
    workers = _by_workers(case)
    apart = any((True, False) in keys or (False, True) in keys for keys in workers.values())
    compared = {n: keys for n, keys in workers.items() if (False, False) in keys and (True, True) in keys}
    if apart:
        for n, keys in workers.items():
            plain = keys.get((False, False))
            parts = [
                f"{name} {said(case, keys[flags], over=plain)}"
                for flags, name in COPY_SETTINGS
                if flags in keys
            ]
            if plain is not None and parts:
                out.append(
                    f"At num_workers={n}, against pageable batches copied without non_blocking: "
                    + "; ".join(parts)
                    + "."
                )
    elif compared:
        readings = [
            f"{n} workers: {said(case, k[(True, True)], over=k[(False, False)])}" for n, k in compared.items()
        ]
        out.append(
            "pin_memory with non_blocking copies, against the same num_workers without either: "
            + "; ".join(readings)
            + ". This capture changed the two together, so it cannot say which of them gave what."
        )
    if apart and compared:
        n = max(compared)
        out += _copy_settings_apart(case, n, workers[n], saving, copies)
    elif saving and compared:
        n = max(compared)
        plain, both = compared[n][(False, False)], compared[n][(True, True)]
        step_saving = median(config(case, plain)) - median(config(case, both))
        if step_saving > 0 and not no_gain(case, both, over=plain):
            out.append(
                f"At num_workers={n} the step with both is {ms(step_saving)} shorter than with neither: "
                f"{times(step_saving / saving)} the {ms(saving)} that pinning saves on the copy itself."
            )
    return out


def _copy_settings_apart(
    case: dict, n: int, keys: dict[tuple[bool, bool], str], saving: float | None, copies: dict | None
) -> list[str]:
    """At ``num_workers=n``, what each copy setting gave and why, read from the configs
    measured apart: ``non_blocking`` alone against how long a copy from pageable memory held
    the host; ``pin_memory`` alone (its copies still blocking) against what pinning saves on
    the copy; ``non_blocking`` on top of ``pin_memory``, the wait removed."""
    plain, pin, free, both = (keys.get((p, b)) for p, b in ((0, 0), (1, 0), (0, 1), (1, 1)))
    out = []
    waits = (copies or {}).get("host_wait", {})
    held, blocking = (waits.get(k, {}).get("median") for k in ("pageable_non_blocking", "pageable_blocking"))
    waited = held and blocking and held >= 0.5 * copies["busy"]["median"]
    if free and waited and no_gain(case, free, over=plain):
        out.append(
            f"non_blocking alone gains nothing measurable at num_workers={n}: from pageable memory the copy "
            f"held the host {ms(held)} behind the GPU's work, as the blocking copy did ({ms(blocking)})."
        )
    if pin and saving and verdict(case, pin, over=plain) == "faster":
        pin_saved = median(config(case, plain)) - median(config(case, pin))
        line = (
            f"pin_memory alone, its copies still blocking, shortened the step at num_workers={n} by "
            f"{ms(pin_saved)}, {times(pin_saved / saving)} the {ms(saving)} that pinning saves on the copy"
        )
        if pin_saved > 1.5 * saving and n > 0:
            line += (
                ": the rest is neither the copy nor the wait, which a blocking copy keeps. With workers, "
                "pin_memory=True also moves work off the training thread: a thread of the DataLoader "
                "takes each batch from the workers' queue and copies it into pinned memory in the "
                "background, where without it the training thread takes each batch from that queue "
                "itself (this capture does not time that work apart)"
            )
        out.append(line + ".")
    if pin and both:
        out.append(
            f"non_blocking on top of pin_memory, the host's wait removed: {said(case, both, over=pin)}."
        )
    return out


def data_loading_reading(shown: Mapping[str, dict]) -> str:
    """The fastest loader against ``num_workers=0``; the batch's making against the step on
    resident data (who waits for whom); one batch's copy from pageable and from pinned
    memory, and how long each way of copying holds the host behind GPU work; and what
    ``pin_memory`` and ``non_blocking`` did to the step, apart and together, at each
    ``num_workers`` (together only, in a capture that measured nothing else)."""
    return _read(shown, _data_loading)


def _precision(capture: dict) -> list[str]:
    payload, case = capture["payload"], _only(capture)
    flops = payload["flops_per_step"]
    rate = lambda c: flops / median(c) / 1e9
    base = config(case, "fp32")
    out = []
    for key in ("tf32", "bf16"):
        c = config(case, key)
        out.append(
            f"{c['label']} against float32, {ms(median(base))} → {ms(median(c))} per step "
            f"({_rate(rate(base))} → {_rate(rate(c))} TFLOP/s of matmul work): {said(case, key)}."
        )
    matmul = {k: _matmul_tflops(config(case, k), capture) for k in ("fp32", "tf32", "bf16")}
    if None not in matmul.values():
        out.append(
            f"The {payload['matmul']['n']}³ matmul alone: float32 {_rate(matmul['fp32'])} TFLOP/s, "
            f"TF32 {_rate(matmul['tf32'])}, bfloat16 {_rate(matmul['bf16'])}."
        )
        if no_gain(case, "tf32"):
            why = (
                "the matmul alone is no faster in TF32 either"
                if matmul["tf32"] < (1 + NOISE) * matmul["fp32"]
                else "the step's time is not in its matmuls"
            )
            out.append(f"TF32 brings no gain to this step because {why}.")
    if errors_measured(capture):
        errors = {k: config(case, k)["relative_error"] for k in ("fp32", "tf32", "bf16")}
        out.append(
            f"The price: the forward's largest error, relative to float64, is {errors['fp32']:.0e} in "
            f"float32, {errors['tf32']:.0e} with TF32 and {errors['bf16']:.0e} under bfloat16 autocast."
        )
    return out


def precision_reading(shown: Mapping[str, dict]) -> str:
    """TF32 and bfloat16 autocast against float32 (time per step and the TFLOP/s of the
    step's matmul work), the matmul alone, and the error each costs."""
    return _read(shown, _precision)


def _op_difference(more: dict, fewer: dict, top: int = 3) -> str:
    """The ATen ops ``more`` counted more often than ``fewer``, the largest differences first."""
    diff = {name: n - fewer.get(name, 0) for name, n in more.items() if n > fewer.get(name, 0)}
    ranked = sorted(diff.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{name} +{n}" for name, n in ranked)


#: What a reading says of a GPU capture that kept no events of the GPU's timeline.
NO_EVENTS = (
    "The GPU's work per step is not read here: this capture did not keep the profiler's events "
    "on the GPU's timeline."
)


def _without_events(capture: dict, holders: list[dict]) -> bool:
    """Whether ``capture`` was taken on a GPU but some of ``holders`` kept no ``gpu_events``."""
    return capture["payload"].get("device") == "cuda" and any(h.get("gpu_events") is None for h in holders)


def _zero_grad(capture: dict) -> list[str]:
    out = []
    for case in cases(capture):
        on, off = config(case, "set_to_none_true"), config(case, "set_to_none_false")
        line = (
            f"{case['label']}: set_to_none=True against False, {ms(median(off))} → {ms(median(on))} "
            f"per step: {said(case, on['key'])}."
        )
        extra = _op_difference(off.get("ops", {}).get("aten", {}), on.get("ops", {}).get("aten", {}))
        if extra:
            line += f" With set_to_none=False the step called these ATen ops more often: {extra}."
        work_on, work_off = _gpu_work(on), _gpu_work(off)
        if work_on is not None and work_off is not None:
            busy_on, busy_off = work_on["busy_ms"], work_off["busy_ms"]
            line += (
                f" On the GPU one step ran {work_off['ops']:,} kernels, copies and memsets instead of "
                f"{work_on['ops']:,}, and kept it busy {ms(busy_off)} instead of {ms(busy_on)}."
            )
            if no_gain(case, on["key"]):
                if busy_off < 0.5 * median(off):
                    line += (
                        f" No measurable gain: the GPU is busy {percent(busy_off / median(off))} of a "
                        f"{ms(median(off))} step, so the host sets the step's time."
                    )
                elif busy_off - busy_on < NOISE * median(off):
                    line += (
                        f" No measurable gain: the GPU work it skips, {ms(max(busy_off - busy_on, 0))}, "
                        f"is lost in a {ms(median(off))} step."
                    )
        out.append(line)
    if _without_events(capture, [c.get("ops", {}) for case in cases(capture) for c in case["configs"]]):
        out.append(NO_EVENTS)
    return out


def zero_grad_reading(shown: Mapping[str, dict]) -> str:
    """At each model: ``set_to_none=True`` against ``False``, the ATen ops it saves, the GPU
    work of one profiled step each way (:func:`gpu_work`), and why there is no measurable
    gain where there is none."""
    return _read(shown, _zero_grad)


def _loop_name(capture: dict, key: str) -> str:
    case = cases(capture)[0]
    return config(case, key)["label"]


def _syncs(capture: dict) -> list[str]:
    payload = capture["payload"]
    out = []
    found = payload.get("found")
    if found and "syncs" in found:
        f = found["syncs"]
        where = "; ".join(f"{n} at {line}" for line, n in f["by_line"].items())
        out.append(
            f"set_sync_debug_mode('warn') reported {f['count']} synchronizations in {f['steps']} "
            f"steps: {where}."
        )
        if "no_syncs" in found:
            g = found["no_syncs"]
            out.append(f"Without them it reported {g['count']}, all after the last step.")
        prints = _prints(payload, f["by_line"])
        if prints:
            line, n, calls = prints
            out.append(
                f"The {n} at {line} came from {calls} calls of print: formatting a tensor "
                f"synchronized {n / calls:.0f} times a call."
            )
    shares = {}
    for case in cases(capture):
        work = gpu_work(case.get("gpu_events"))
        if work is not None:
            shares[case["key"]] = work["busy_ms"] / median(config(case, "no_syncs"))
    for case in cases(capture):
        no, yes = config(case, "no_syncs"), config(case, "syncs")
        line = (
            f"{case['label']}: removing them, {ms(median(yes))} → {ms(median(no))} per step: "
            f"{said(case, 'no_syncs')}"
        )
        work = gpu_work(case.get("gpu_events"))
        if work is not None:
            line += f"; one step keeps the GPU busy {ms(work['busy_ms'])}"
        if no_gain(case, "no_syncs"):
            line += f". Its rounds ran {_rounds(yes)} with the syncs and {_rounds(no)} without"
            share = shares.get(case["key"])
            # A reason only where no other width contradicts it: a width with the GPU as idle
            # or idler whose syncs did cost time.
            gained = [c for c in cases(capture) if c is not case and verdict(c, "no_syncs") == "faster"]
            if share is not None and share < 0.5:
                if not any(shares.get(c["key"], 1.0) <= share for c in gained):
                    line += (
                        ". No measurable gain: the GPU waited for the host's launches most of each "
                        "step anyway, so a wait for it finds it nearly done"
                    )
            elif share is not None and share > 0.9:
                line += (
                    ". No measurable gain: the GPU is busy nearly all the step, so a wait costs "
                    "one launch's latency"
                )
        out.append(line + ".")
    if _without_events(capture, cases(capture)):
        out.append(NO_EVENTS)
    return out


def _rounds(config: dict) -> str:
    """The range of a config's rounds, ``'4.52–7.27 ms'`` (its 20th-80th percentiles where
    the capture kept no rounds)."""
    runs = config["step"].get("runs") or [config["step"]["p20"], config["step"]["p80"]]
    return f"{span([min(runs), max(runs)], lambda v: ms(v).removesuffix(' ms'))} ms"


def _prints(payload: dict, by_line: dict[str, int]) -> tuple[str, int, int] | None:
    """``(line, synchronizations, calls)`` for the loop's ``print`` line: how many times it
    ran in the steps the debug mode watched (one step in ``log_every``), or None."""
    every, steps = payload.get("log_every"), (payload.get("found") or {}).get("syncs", {}).get("steps")
    line = next((k for k in by_line if k.startswith("print(")), None)
    if not (line and every and steps):
        return None
    return line, by_line[line], len(range(0, steps, every))


def syncs_reading(shown: Mapping[str, dict]) -> str:
    """How many synchronizations the debug mode found, where, and what removing them saved
    at each width, read against the time one step keeps the GPU busy (:func:`gpu_work`)."""
    return _read(shown, _syncs)


def benchmark_apart(capture: dict) -> bool:
    """Whether the conv capture ran each ``cudnn.benchmark`` setting in a process of its own.
    In one process, PyTorch keeps the algorithm chosen for each convolution's shapes and
    layout under a key without the benchmark flag, so the second setting reuses the first's
    choices and its rows do not measure it."""
    return bool(capture["payload"].get("process_per_setting"))


def _conv(capture: dict) -> list[str]:
    payload, case = capture["payload"], _only(capture)
    base = config(case, case["baseline"])
    out = []
    for key in ("nhwc_heuristic", "nchw_benchmark", "nhwc_benchmark"):
        c = config(case, key)
        out.append(
            f"{c['label']} against {base['label']}, {ms(median(base))} → {ms(median(c))} per step: "
            f"{said(case, key)}."
        )
    apart = benchmark_apart(capture)
    if apart:
        plain, tuned = config(case, "nhwc_heuristic"), config(case, "nhwc_benchmark")
        out.append(
            f"cudnn.benchmark on channels_last, against channels_last without it, {ms(median(plain))} → "
            f"{ms(median(tuned))} per step: {said(case, 'nhwc_benchmark', over='nhwc_heuristic')}."
        )
    firsts = {k: config(case, k).get("first_step_s") for k in configs(case)}
    if None in firsts.values():
        return out
    tuned = [firsts["nchw_benchmark"], firsts["nhwc_benchmark"]]
    plain = [firsts["nchw_heuristic"], firsts["nhwc_heuristic"]]
    if apart:
        line = (
            f"The first step at these shapes took {tuned[0]:.2f} s on NCHW and {tuned[1]:.2f} s on "
            f"channels_last with cudnn.benchmark, against {plain[0]:.2f} s and {plain[1]:.2f} s without "
            f"it (each setting in a fresh process, set up by a step at batch {payload['warmup_batch']})"
        )
        if min(tuned) > max(plain):
            line += ": benchmark mode times the algorithms of each convolution there, once per input shape"
        out.append(line + ".")
    else:
        out.append(
            "These cudnn.benchmark steps ran in the process that had already run the same shapes "
            "without it, and PyTorch keeps the algorithm chosen for each convolution's shapes and "
            "layout whichever way it was chosen: they reused the heuristic's algorithms, and their "
            f"first steps ({span(tuned)} s, against {span(plain)} s without it) searched nothing. "
            "They do not measure cudnn.benchmark."
        )
    return out


def conv_reading(shown: Mapping[str, dict]) -> str:
    """``channels_last``, ``cudnn.benchmark`` and both against NCHW with cuDNN's
    heuristics, ``cudnn.benchmark`` on channels_last, and the first step's cost of
    benchmarking; in a capture that ran both settings in one process
    (:func:`benchmark_apart`), why its ``cudnn.benchmark`` rows measure nothing of it."""
    return _read(shown, _conv)


def _checkpointing(capture: dict) -> list[str]:
    case = _only(capture)
    none = config(case, "every_0")
    out = []
    for key in ("every_2", "every_1"):
        c = config(case, key)
        slower = median(c) / median(none)
        line = (
            f"Checkpointing {c['label']}: {times(slower)} the step time "
            f"({ms(median(none))} → {ms(median(c))})"
        )
        if none.get("peak_bytes") and c.get("peak_bytes"):
            line += (
                f", peak memory {none['peak_bytes'] / _GIB:.2f} → {c['peak_bytes'] / _GIB:.2f} GiB "
                f"({times(none['peak_bytes'] / c['peak_bytes'])} less)"
            )
        else:
            line += "; peak memory not measured on this device"
        out.append(line + ".")
    full = median(config(case, "every_1")) / median(none)
    out.append(
        "Running each block's forward again adds a third to a matmul-bound step's work "
        f"(forward 1, backward 2, forward again 1): 1.33× expected, {times(full)} measured."
    )
    return out


def checkpointing_reading(shown: Mapping[str, dict]) -> str:
    """Checkpointing half and all the blocks: the memory saved and the time paid, against
    the third more work that recomputing the forward costs."""
    return _read(shown, _checkpointing)


def _compile(capture: dict) -> list[str]:
    case = _only(capture)
    eager, comp = config(case, "eager"), config(case, "compile")
    out = [
        f"torch.compile against eager, {ms(median(eager))} → {ms(median(comp))} per step: "
        f"{said(case, 'compile')}."
    ]
    first_e, first_c = eager.get("first_step_s"), comp.get("first_step_s")
    if first_e is not None and first_c is not None:
        line = (
            f"Its first step took {first_c:.1f} s, compiling the forward and backward from an empty cache, "
            f"against eager's {first_e:.2f} s"
        )
        saved_s = (median(eager) - median(comp)) / 1e3
        if not no_gain(case, "compile") and saved_s > 0:
            line += f": it pays for itself after {(first_c - first_e) / saved_s:,.0f} steps"
        else:
            line += ", and the steps never win it back"
        out.append(line + ".")
    return out


def compile_reading(shown: Mapping[str, dict]) -> str:
    """Compiled against eager per step, the compilation's seconds, and after how many steps
    it pays for itself."""
    return _read(shown, _compile)


# --- the opening paragraph ---------------------------------------------------------------------


#: How the opening paragraph names the zero_grad capture's models.
_MODELS = {"many_small": "many small layers", "few_large": "a few large layers"}


def _copy_name(c: dict) -> str:
    pin, non_blocking = copy_settings(c)
    return {
        (True, True): "pin_memory with non_blocking copies",
        (True, False): "pin_memory",
        (False, True): "non_blocking copies",
    }.get((pin, non_blocking), "")


def _loader_headline(case: dict) -> str:
    """The fastest loader, each of its two changes credited from its own row: the workers
    against ``num_workers=0``, then its copy settings against the same workers without them."""
    found = configs(case)
    best = min(found.values(), key=median)
    base = config(case, case["baseline"])
    plain = _by_workers(case).get(best["num_workers"], {}).get((False, False))
    if plain is None or best["key"] == case["baseline"]:
        return f"a DataLoader with {best['label']} against {base['label']}: {said(case, best['key'])}"
    parts = []
    if plain != case["baseline"]:
        parts.append(f"num_workers={best['num_workers']} against {base['num_workers']}: {said(case, plain)}")
    if best["key"] != plain:
        parts.append(f"{_copy_name(best)} on top: {said(case, best['key'], over=plain)}")
    return "a DataLoader with " + ", and ".join(parts)


def headline(capture: dict) -> str:
    """One clause for the opening paragraph: the recipe's main reading on this capture, each
    speed credited to the change its own row measured and worded by :func:`said`.

    Raises:
        ValueError: ``capture`` is not one of the recipes' captures.
    """
    name, payload = capture.get("name"), capture["payload"]
    if name == DATA_LOADING:
        return _loader_headline(_only(capture))
    if name == PRECISION:
        case = _only(capture)
        return (
            f"a float32 MLP step with TF32 matmuls: {said(case, 'tf32')}, under bfloat16 autocast: "
            f"{said(case, 'bf16')}"
        )
    if name == ZERO_GRAD:
        said_on = [
            f"{said(c, 'set_to_none_true')} on {_MODELS.get(c['key'], c['label'])}" for c in cases(capture)
        ]
        return f"zero_grad(set_to_none=True) against False: {' and '.join(said_on)}"
    if name == SYNCS:
        said_at = ", ".join(f"{said(c, 'no_syncs')} at {c['label']}" for c in cases(capture))
        found = (payload.get("found") or {}).get("syncs")
        count = (
            f"{found['count']} host synchronizations in {found['steps']} steps"
            if found
            else "host synchronizations"
        )
        return f"removing {count}: {said_at}"
    if name == CONV:
        case = _only(capture)
        line = f"channels_last against NCHW on a conv net's step: {said(case, 'nhwc_heuristic')}"
        if benchmark_apart(capture):
            line += (
                f", cudnn.benchmark against cuDNN's heuristics: {said(case, 'nchw_benchmark')} on NCHW and "
                f"{said(case, 'nhwc_benchmark', over='nhwc_heuristic')} on channels_last"
            )
        return line
    if name == CHECKPOINTING:
        case = _only(capture)
        none, full = config(case, "every_0"), config(case, "every_1")
        memory = ""
        if none.get("peak_bytes") and full.get("peak_bytes"):
            memory = f"{times(none['peak_bytes'] / full['peak_bytes'])} less peak memory for "
        return f"checkpointing every block: {memory}{times(median(full) / median(none))} the step time"
    if name == COMPILE:
        case = _only(capture)
        first = config(case, "compile").get("first_step_s")
        after = f", after a {first:.0f} s first step" if first is not None else ""
        return f"torch.compile against eager: {said(case, 'compile')}{after}"
    raise ValueError(f"not a recipe's capture: {name!r} (expected one of {list(RECIPES)})")


def in_one_paragraph() -> Paragraph:
    """The guide's headline: one clause per recipe measured on the reference GPU, and one
    note naming the recipes not measured yet (and how to measure them).

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`.
    """
    found, notes = pages_captures.load_all(RECIPES)
    clauses = [headline(capture) for capture in found.values()]
    gpu = short_gpu_name(next(iter(found.values()))["provenance"]["gpu"]) if found else None
    sentences = []
    if clauses:
        sentences.append(
            f"Measured on the {gpu} as whole training steps, host included: " + "; ".join(clauses) + "."
        )
    else:
        sentences.append(
            "No recipe has been measured on this page's GPU yet: each section below says what "
            "its measurement will show, and the note below how to take them."
        )
    return paragraph(*sentences, notes=notes)
