"""Where a step's GPU time goes, part by part: the captures of ``torch.profiler`` ranges
around each part of a model layer, drawn as stacked bars, shared by tutorial 07
(``llama_time_breakdown``) and tutorial 09 (``moe_time_breakdown``).

Such a capture's payload is::

    {"steps": int,                        # profiled steps averaged
     "sections": [part, ..., "other"],    # the layer's parts, in its order
     "cases": [{"phase": "prefill" | "decode", "x_name": str, "x": int,
                "axes": {name: value},    # what else picks the case (batch, model)
                "providers": {key: {"label": str,
                                    "parts_us": {part: µs},  # GPU time per part and step
                                    "kernels_us": float,     # every kernel of the step
                                    "kernel_count": float,
                                    "step_us": float}}}]}

:func:`check_payload` checks that shape; :func:`plot_time_breakdown` draws one panel per
case, one bar per provider.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping

from gpuperf.bench import captures as bench_captures
from gpuperf.pages import captures, prose

#: The keys every case and every provider entry of a breakdown payload holds.
CASE_KEYS = ("phase", "x_name", "x", "axes", "providers")
PROVIDER_KEYS = ("parts_us", "kernels_us", "kernel_count")
#: A part's share of its bar above which the bar writes it (smaller segments are too narrow).
LABEL_SHARE = 0.12


def check_payload(payload) -> dict:
    """``payload``, checked to be a breakdown payload (see the module's text).

    Raises:
        TypeError: ``payload`` is not a dict.
        ValueError: it lacks ``sections`` or ``cases``, or a case or a provider entry lacks a
            key; the message names the key and where it is missing.
    """
    if not isinstance(payload, dict):
        raise TypeError(f"payload must be a breakdown capture's payload (dict), got {type(payload).__name__}")
    for key in ("sections", "cases"):
        if key not in payload:
            raise ValueError(f"a breakdown payload needs {key!r}; it has {sorted(payload)}")
    for i, case in enumerate(payload["cases"]):
        missing = [k for k in CASE_KEYS if k not in case]
        if missing:
            raise ValueError(f"case {i} of the breakdown payload lacks {missing}")
        for key, entry in case["providers"].items():
            missing = [k for k in PROVIDER_KEYS if k not in entry]
            if missing:
                raise ValueError(f"provider {key!r} of case {i} of the breakdown payload lacks {missing}")
    return payload


def plot_time_breakdown(
    name: str,
    *,
    names: Mapping[str, str],
    colors: Mapping[str, str],
    title_of: Callable[[dict], str],
    gpu: str | None = None,
    ncols: int = 1,
):
    """A stacked bar per provider and case of the breakdown capture ``name`` of ``gpu``
    (default: the reference GPU): each part's GPU time per step in microseconds, the parts
    in the layer's order, each part's share written on segments above
    :data:`LABEL_SHARE`; the capture's provenance under the chart. A placeholder saying why
    when the capture is missing.

    Args:
        name: the capture (``"llama_time_breakdown"``).
        names: how the page names each provider key (a key not in it is shown as it is).
        colors: one colour per part (a part not in it is drawn dark grey).
        title_of: a case's panel title before ``": GPU µs per step"``.
        gpu: a GPU folder, or None for the reference GPU.
        ncols: panels per row (cases fill the rows in the payload's order).

    Raises:
        TypeError: ``title_of`` is not callable.
        ValueError: ``ncols`` is not a positive int; a malformed payload (:func:`check_payload`).
    """
    import matplotlib.pyplot as plt

    from gpuperf.pages.plotting import plot_missing

    if not callable(title_of):
        raise TypeError(f"title_of must be callable (a case -> its title), got {type(title_of).__name__}")
    if type(ncols) is not int or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got {ncols!r}")
    capture, notes = captures.load(name, gpu)
    if capture is None:
        return plot_missing("Where a step's time goes", " ".join(notes))
    payload = check_payload(capture["payload"])
    cases, parts = payload["cases"], payload["sections"]
    width = 8.0 if ncols == 1 else 4.2 * ncols
    caption = textwrap.wrap(bench_captures.caption(capture), int(125 * width / 8.0))
    caption_h = 0.13 * len(caption) + 0.1  # inches, at 7 points a line
    rows = math.ceil(len(cases) / ncols)
    height = 1.35 * rows + 1.5 + caption_h
    fig, axes = plt.subplots(rows, ncols, figsize=(width, height), squeeze=False)
    fig.patch.set_facecolor("white")
    for ax in axes.flat[len(cases) :]:
        ax.set_axis_off()
    used = set()
    for ax, case in zip(axes.flat, cases, strict=False):
        keys = list(case["providers"])
        for row, key in enumerate(keys):
            p = case["providers"][key]
            total, left = p["kernels_us"], 0.0
            for part in parts:
                us = p["parts_us"].get(part, 0.0)
                if us <= 0:
                    continue
                ax.barh(row, us, left=left, color=colors.get(part, "#333333"), edgecolor="white")
                used.add(part)
                if us / total > LABEL_SHARE:
                    ax.text(
                        left + us / 2, row, prose.percent(us / total), ha="center", va="center", fontsize=8
                    )
                left += us
        ax.set_yticks(range(len(keys)), [names.get(k, k) for k in keys])
        ax.invert_yaxis()
        ax.set_title(f"{title_of(case)}: GPU µs per step", fontsize=9.5, loc="left")
        ax.set_xlim(0, max(p["kernels_us"] for p in case["providers"].values()) * 1.02)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors.get(p, "#333333")) for p in parts if p in used]
    fig.legend(
        handles,
        [p for p in parts if p in used],
        loc="lower center",
        bbox_to_anchor=(0.5, caption_h / height),
        ncol=5 if ncols == 1 else len(handles),
        frameon=False,
        fontsize=8.5,
    )
    fig.suptitle("Where a step's GPU time goes, part by part (kernels launched in each part)", fontsize=11)
    fig.text(0.01, 0.01, "\n".join(caption), fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, (caption_h + 0.6) / height, 1, 1 - 0.35 / height))
    return fig


__all__ = ["CASE_KEYS", "LABEL_SHARE", "PROVIDER_KEYS", "check_payload", "plot_time_breakdown"]
