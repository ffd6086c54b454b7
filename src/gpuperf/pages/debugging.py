"""The debugging guide: its captures as the page shows them, and the sentences it prints
from them.

The captures (``scripts/debugging_capture.py``, on a GPU) keep what the demos of
:mod:`gpuperf.bench.debugging` printed, cut to whole lines with their line numbers
(:func:`gpuperf.bench.debugging.excerpt`). The render functions here print them for
:func:`gpuperf.pages.captures.show`: a ``...`` line stands for the lines left out, a line
wider than :data:`WIDTH` columns is cut and ends with `` ...``, and a path into the
package on the machine that ran the demo is written from the package's name
(``gpuperf/bench/debugging.py``). The reading functions say in a sentence what a capture
shows, from its text (the instructions counted, the errors reported), never from
expectation; where the text does not say, neither do they.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from gpuperf.bench.debugging import within_package
from gpuperf.pages import captures as pages_captures
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.prose import Paragraph, and_list, paragraph
from gpuperf.pages.tables import Cell, Section, render

#: The captures the guide shows, as ``scripts/debugging_capture.py`` names them.
PRINT = "debugging_print"
ASSERT = "debugging_assert"
SANITIZER = "debugging_sanitizer"
COMPILED = "debugging_compiled"
MLIR_DUMP = "debugging_mlir_dump"
INDUCTOR = "debugging_inductor"
CAPTURES = (PRINT, ASSERT, SANITIZER, COMPILED, MLIR_DUMP, INDUCTOR)

#: Widest line printed; a wider one is cut (PTX's wgmma lines list 64 registers).
WIDTH = 100
#: The stages of a compiled kernel, as the page names them.
STAGE_NAMES = {
    "ttir": "TTIR (Triton IR)",
    "ttgir": "TTGIR (Triton GPU IR)",
    "llir": "LLVM IR",
    "ptx": "PTX",
    "sass": "SASS",
}


# --- text as kept ---------------------------------------------------------------------------


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 4] + " ..."


def excerpt_text(kept: dict, root: str = "", width: int = WIDTH) -> str:
    """The lines an excerpt kept (``{"total", "blocks"}``,
    :func:`gpuperf.bench.debugging.excerpt`), a ``...`` line wherever lines were left out,
    each line cut at ``width`` and with paths into ``root`` (the package's folder where the
    output was made) written from the package's name.

    Raises:
        TypeError: ``kept`` is not an excerpt.
    """
    if not isinstance(kept, Mapping) or "blocks" not in kept or "total" not in kept:
        raise TypeError(f"expected an excerpt {{'total', 'blocks'}}, got {type(kept).__name__}")
    out, line_no = [], 1
    for start, lines in kept["blocks"]:
        if start > line_no:
            out.append("...")
        out += [_cut(within_package(line, root), width) for line in lines]
        line_no = start + len(lines)
    if line_no <= kept["total"]:
        out.append("...")
    return "\n".join(out)


def first_lines(kept: dict, count: int) -> dict:
    """The excerpt ``kept`` shortened to its first ``count`` kept lines (to show less of a
    capture than it keeps)."""
    blocks, left = [], count
    for start, lines in kept["blocks"]:
        if left <= 0:
            break
        blocks.append([start, lines[:left]])
        left -= len(lines)
    return {"total": kept["total"], "blocks": blocks}


def run_text(ran: dict, root: str = "") -> str:
    """A run a capture kept (``{"command", "returncode", "output"}``) as a terminal shows it:
    ``$ command``, its output (:func:`excerpt_text`), its exit status when not 0."""
    status = [] if ran["returncode"] == 0 else [f"(exit status {ran['returncode']})"]
    return "\n".join([f"$ {ran['command']}", excerpt_text(ran["output"], root), *status])


def _root(capture: dict) -> str:
    return capture["payload"].get("package_root", "")


def _text(ran: dict) -> str:
    """The kept output of a run as one text (for the readings' searches)."""
    return "\n".join(line for _, lines in ran["output"]["blocks"] for line in lines)


# --- render functions for captures.show --------------------------------------------------------


def printed(capture: dict) -> str:
    """The one run of a capture (``debugging_print``), as a terminal shows it."""
    return run_text(capture["payload"]["run"], _root(capture))


def runs(capture: dict) -> str:
    """Each run of a capture (``debugging_assert``, ``debugging_sanitizer``), one after the
    other, as a terminal shows them."""
    return "\n\n".join(run_text(ran, _root(capture)) for ran in capture["payload"]["runs"])


def compiled_code(kernel: str, *stages: str) -> Callable[[dict], str]:
    """A render function for :func:`gpuperf.pages.captures.show`: what ``debugging_compiled``
    kept of each of ``stages`` (default: every stage kept) of the compiled ``kernel``, each
    under its name and how many of its lines are shown.

    Raises:
        ValueError: an unknown stage (:data:`STAGE_NAMES`).
    """
    unknown = [s for s in stages if s not in STAGE_NAMES]
    if unknown:
        raise ValueError(f"stages must be among {list(STAGE_NAMES)}, got {unknown}")

    def render(capture: dict) -> str:
        entry = capture["payload"]["kernels"][kernel]
        parts = []
        for stage in stages or [s for s in STAGE_NAMES if s in entry["code"]]:
            kept = entry["code"][stage]
            shown = sum(len(lines) for _, lines in kept["blocks"])
            parts.append(f"--- {STAGE_NAMES[stage]}: {shown} of {kept['total']} lines")
            parts.append(excerpt_text(kept, _root(capture)))
        return "\n".join(parts)

    return render


def resources(capture: dict) -> str:
    """What one program of each compiled kernel needs (``debugging_compiled``): warps,
    pipeline stages, shared memory, registers per thread and registers spilled."""
    header = ["kernel", "warps", "stages", "shared memory", "registers / thread", "spills"]
    rows = []
    for name, entry in capture["payload"]["kernels"].items():
        rows.append(
            [
                Cell(name),
                Cell(str(entry["num_warps"]), entry["num_warps"]),
                Cell(str(entry["num_stages"]), entry["num_stages"]),
                Cell(f"{entry['shared'] / 1024:.0f} KiB" if entry["shared"] else "0", entry["shared"]),
                Cell(str(entry["n_regs"]), entry["n_regs"]),
                Cell(str(entry["n_spills"]), entry["n_spills"]),
            ]
        )
    return render([Section("", header, rows)])


def _window(lines: list[str], start: str, end: str) -> list[str]:
    """The part of a filtered dump from the pass header that matches ``start`` through the
    lines under the first header after it that matches ``end`` (up to the next header);
    all of ``lines`` when ``start`` is not found."""
    first = next((i for i, line in enumerate(lines) if re.search(start, line)), None)
    if first is None:
        return lines
    last = next((i for i in range(first + 1, len(lines)) if re.search(end, lines[i])), len(lines) - 1)
    stop = next((i for i in range(last + 1, len(lines)) if "IR Dump" in lines[i]), len(lines))
    return lines[first:stop]


#: Lines of the first MLIR dump the page shows.
DUMP_HEAD = 12


def mlir_dump(capture: dict) -> str:
    """``debugging_mlir_dump``: the command, how long its dump was, the first
    :data:`DUMP_HEAD` lines of its first dump, then the dump filtered (pass headers and
    layouts) from the conversion to TTGIR through the layouts the coalescing pass left."""
    payload = capture["payload"]
    first = payload["runs"][0]
    filtered = [line for _, lines in payload["filtered"]["blocks"] for line in lines]
    window = _window(filtered, r"Before ConvertTritonToTritonGPU", r"Before TritonGPU(?!Coalesce)")
    return "\n".join(
        [
            f"$ {first['command']}",
            f"({first['lines']} lines, {first['dumps']} dumps: the IR before each pass; the first of them:)",
            excerpt_text(first_lines(payload["first_dump"], DUMP_HEAD), _root(capture)),
            "",
            f"$ {first['command']} 2>&1 | grep -E '{payload['filter']}'",
            "...",
            *(_cut(within_package(line, _root(capture)), WIDTH) for line in window),
            "...",
        ]
    )


def cache(capture: dict) -> str:
    """``debugging_mlir_dump``'s three runs on one cache folder (how many passes each
    dumped) and the files Triton kept there."""
    payload = capture["payload"]
    lines = [f"$ {ran['command']}\n  {ran['dumps']} dumps" for ran in payload["runs"]]
    lines.append("the cache folder:")
    lines += [f"  {path}  ({size:,} bytes)" for path, size in payload["cache_files"]]
    return "\n".join(lines)


#: The prefix PyTorch's logging puts before each line of a ``TORCH_LOGS=output_code`` log
#: (level and date, time, process, source line, compile id, artifact name).
_LOG_PREFIX = re.compile(r"^[VIWDE]\d{4}\b.*?\[__output_code\] ?")


def output_code(capture: dict) -> str:
    """``debugging_inductor``: what ``TORCH_LOGS=output_code`` printed, the generated Triton
    kernel and its launch kept. Each line's logging prefix is left out, so that the code fits
    the width, and the first of them is shown once above it."""
    ran = capture["payload"]["output_code"]
    lines = [line for _, kept in ran["output"]["blocks"] for line in kept]
    prefix = next((m.group(0) for line in lines if (m := _LOG_PREFIX.match(line))), None)
    if prefix is None:
        return run_text(ran, _root(capture))
    blocks = [
        [start, [_LOG_PREFIX.sub("", line) for line in kept]] for start, kept in ran["output"]["blocks"]
    ]
    stripped = {**ran, "output": {**ran["output"], "blocks": blocks}}
    text = run_text(stripped, _root(capture))
    command, _, rest = text.partition("\n")
    note = f"(each line of the log begins {prefix.strip()!r}, left out below)"
    return "\n".join([command, note, rest])


def debug_files(capture: dict) -> str:
    """``debugging_inductor``: the ``TORCH_COMPILE_DEBUG=1`` run and the files it wrote."""
    payload = capture["payload"]
    lines = [
        run_text(payload["compile_debug"], _root(capture)),
        f"it wrote {payload['debug_file_count']} files:",
    ]
    lines += [f"  {path}  ({size:,} bytes)" for path, size in payload["debug_files"]]
    if payload["debug_file_count"] > len(payload["debug_files"]):
        lines.append("  ...")
    return "\n".join(lines)


# --- what the captures say ---------------------------------------------------------------------

#: One line of ``tl.device_print``'s output on a GPU: the program's id, the element's index.
_DEVICE_PRINT = re.compile(r"^pid \((\d+), (\d+), (\d+)\) idx \(\s*(\d+)\) (\w+): ")


def print_reading(shown: Mapping[str, dict]) -> str:
    """How many lines each value's print gave on each GPU, and who printed them
    (``debugging_print``, what :func:`gpuperf.pages.captures.show` returned)."""

    def write(capture: dict) -> list[str]:
        run = capture["payload"]["run"]
        found = [m for line in _text(run).splitlines() if (m := _DEVICE_PRINT.match(line))]
        if not found:
            return ["the capture holds no line of tl.device_print's form 'pid (x, y, z) idx (i) name: value'"]
        names = sorted({m.group(5) for m in found})
        programs = sorted({m.group(1) for m in found})
        counts = ", ".join(f"{sum(m.group(5) == n for m in found)} lines of {n}" for n in names)
        cut = (
            " (the capture keeps the first lines)"
            if run["output"]["total"] > len(_text(run).splitlines())
            else ""
        )
        return [
            f"the GPU printed {counts}{cut}, one line per element, from program "
            f"{', '.join(programs)} alone: each line names its program and the element's index"
        ]

    return pages_captures.per_gpu(shown, write, "no capture of the GPU's prints yet")


def _assert_facts(capture: dict) -> tuple[dict, dict]:
    """What each run of ``debugging_assert`` printed: with TRITON_DEBUG=1, and without."""
    found = {}
    for ran in capture["payload"]["runs"]:
        text = _text(ran)
        key = "debug" if "TRITON_DEBUG=1" in ran["command"] else "plain"
        found[key] = {
            "assertion": next((line for line in text.splitlines() if "Assertion" in line), None),
            "raised": _found(r"synchronization raised (.+)", text),
            "later": _found(r"any later CUDA call: (.+)", text),
            "equal": _found(r"y equals x: (True|False)", text),
            "after": _found(r"the element after y: (\S+)", text),
        }
    return found.get("debug", {}), found.get("plain", {})


def assert_reading(shown: Mapping[str, dict]) -> str:
    """What ``tl.device_assert`` did on each GPU, with ``TRITON_DEBUG=1`` and without."""

    def write(capture: dict) -> list[str]:
        debug, plain = _assert_facts(capture)
        lines = []
        if debug.get("raised"):
            later = " and every later CUDA call in the process failed too" if debug.get("later") else ""
            printed = "the GPU printed the failed assertion, " if debug.get("assertion") else ""
            lines.append(f"with TRITON_DEBUG=1: {printed}the next synchronization raised{later}")
        elif debug:
            lines.append("with TRITON_DEBUG=1: no error was raised")
        if plain.get("equal") is not None:
            wrote = f", and the element past it became {plain['after']}" if plain.get("after") else ""
            same = "equals" if plain["equal"] == "True" else "differs from"
            lines.append(f"without it: no error, y {same} x{wrote}")
        return lines or ["the capture holds neither run"]

    return pages_captures.per_gpu(shown, write, "no capture of tl.device_assert on a GPU yet")


def _found(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text)
    return match.group(1) if match else None


def _sanitizer_facts(ran: dict) -> dict:
    text = _text(ran)
    summary = _found(r"ERROR SUMMARY: (\d+) error", text)
    return {
        "accesses": re.findall(r"Invalid __global__ (read|write) of size (\d+)", text),
        "failed calls": len(re.findall(r"Program hit \w+", text)),
        "summary": int(summary) if summary is not None else None,
        "equal": _found(r"y equals x: (True|False)", text),
        "x adjacent": _found(r"after_x starts where x ends: (True|False)", text),
        "y adjacent": _found(r"after_y starts where y ends: (True|False)", text),
        "after y": _found(r"after_y\[0\]: (\S+)", text),
        "was": _found(r"\(it was (\S+);", text),
        "after x": _found(r"after_x\[0\] is (\S+?)\)", text),
        "raised": _found(r"synchronization raised (.+)", text),
    }


def _damage(facts: dict) -> str | None:
    """What the plain run says became of the tensor after ``y``, or None where it does not say."""
    if facts["after y"] is None:
        return None
    if facts["after y"] == facts["was"]:
        return f"the tensor after y is unchanged (its first element still {facts['after y']})"
    moved = facts["after y"] == facts["after x"] and facts["x adjacent"] == facts["y adjacent"] == "True"
    source = ": the first element of the tensor after x" if moved else ""
    return (
        f"the first element of the tensor after y became {facts['after y']} (it was {facts['was']}){source}"
    )


def _sanitizer_runs(capture: dict) -> dict[str, dict]:
    """``{"plain" | "memcheck" | "memcheck, no caching" | "memcheck, no caching, y last": facts}``
    of ``debugging_sanitizer``."""
    found = {}
    for ran in capture["payload"]["runs"]:
        if "compute-sanitizer" not in ran["command"]:
            key = "plain"
        elif ran["command"].endswith(" oob_last"):
            key = "memcheck, no caching, y last"
        elif "PYTORCH_NO_CUDA_MEMORY_CACHING=1" in ran["command"]:
            key = "memcheck, no caching"
        else:
            key = "memcheck"
        found[key] = _sanitizer_facts(ran)
    return found


def _accesses(facts: dict) -> str:
    """memcheck's error count of one run and what its report says they were: the invalid
    accesses (by kind and size) and the CUDA calls that failed after them (``Program hit
    ...``), which the summary counts too."""
    if facts["summary"] is None:
        return "no error summary (the run did not finish)"
    n = facts["summary"]
    total = f"{n} error{'' if n == 1 else 's'}"
    counts: dict[tuple[str, str], int] = {}
    for kind, size in facts["accesses"]:
        counts[kind, size] = counts.get((kind, size), 0) + 1
    kinds = [
        f"{count} invalid {kind}{'' if count == 1 else 's'} of {size} bytes"
        for (kind, size), count in sorted(counts.items())
    ]
    if not kinds:
        return total
    calls = facts.get("failed calls", 0)
    if calls and len(facts["accesses"]) + calls == n:
        it = "it" if len(facts["accesses"]) == 1 else "them"
        after = f"{calls} CUDA call{'' if calls == 1 else 's'} that failed after {it}"
        return f"{total}: {and_list(kinds)}, then {after}"
    if len(facts["accesses"]) == n:
        return f"{total}: {and_list(kinds)}"
    return f"{total}, among them {and_list(kinds)}"


def sanitizer_reading(shown: Mapping[str, dict]) -> str:
    """What each run of the off-by-one copy showed on each GPU (``debugging_sanitizer``):
    the answer and the next tensor without a tool, and what memcheck reported with
    PyTorch's caching allocator and without it."""

    def write(capture: dict) -> list[str]:
        runs = _sanitizer_runs(capture)
        lines = []
        plain = runs.get("plain")
        if plain and plain["equal"] is not None:
            same = "equals" if plain["equal"] == "True" else "differs from"
            damage = _damage(plain)
            lines.append(f"without a tool: y {same} x, no error" + (f"; {damage}" if damage else ""))
        for key, label in (
            ("memcheck", "memcheck"),
            ("memcheck, no caching", "memcheck, caching allocator off"),
            ("memcheck, no caching, y last", "memcheck, caching allocator off, nothing allocated after y"),
        ):
            if key in runs:
                lines.append(f"{label}: {_accesses(runs[key])}")
        return lines or ["the capture holds none of the runs"]

    return pages_captures.per_gpu(shown, write, "no capture of compute-sanitizer yet")


def compiled_reading(shown: Mapping[str, dict]) -> str:
    """The instructions that tell the kernels apart on each GPU (``debugging_compiled``): the
    copies' global loads per thread, the matmul's tensor-core instructions and resources."""

    def write(capture: dict) -> list[str]:
        kernels = capture["payload"]["kernels"]
        lines = []
        for name in ("copy_kernel", "copy_off_by_one_kernel"):
            if name in kernels:
                ptx, sass = kernels[name]["counts"]["ptx"], kernels[name]["counts"]["sass"]
                lines.append(
                    f"{name}: {ptx['loads']} global load(s) per thread in PTX, {ptx['vector loads']} of them "
                    f"vector loads (ld.global.v4: 16 bytes); in SASS {sass['LDG']} LDG, "
                    f"{sass['LDG.E.128']} of them LDG.E.128"
                )
        if "matmul_kernel" in kernels:
            mm = kernels["matmul_kernel"]
            ptx, sass = mm["counts"]["ptx"], mm["counts"]["sass"]
            lines.append(
                f"matmul_kernel: {ptx['wgmma']} wgmma.mma_async in PTX, {sass['HGMMA']} HGMMA in SASS; "
                f"{ptx['async copies']} cp.async copies into shared memory ({sass['LDGSTS']} LDGSTS); "
                f"{mm['shared'] / 1024:.0f} KiB of shared memory, {mm['n_regs']} registers per thread, "
                f"{mm['n_spills']} spilled"
            )
        return lines

    return pages_captures.per_gpu(shown, write, "no capture of the compiled kernels yet")


#: Bytes per element of the dtypes a matmul capture may name.
ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1, "float8_e5m2": 1}


def pipeline_reading(shown: Mapping[str, dict]) -> str:
    """For each GPU's ``debugging_compiled`` capture, the matmul's shared memory worked out
    from its tiles: ``num_stages`` copies of an A tile (``BLOCK_M x BLOCK_K``) and a B tile
    (``BLOCK_K x BLOCK_N``) of the capture's dtype, against what ``metadata.shared`` reports."""

    def write(capture: dict) -> list[str]:
        payload = capture["payload"]
        mm = payload.get("kernels", {}).get("matmul_kernel")
        size = ELEMENT_BYTES.get(payload.get("dtype", ""))
        if mm is None or size is None or len(payload.get("tile") or ()) != 3:
            return ["the capture holds no matmul tiles to work the shared memory out from"]
        bm, bn, bk = payload["tile"]
        stages, shared = mm["num_stages"], mm["shared"]
        pipeline = stages * (bm * bk + bk * bn) * size
        reported = (
            "  exactly what metadata.shared reports"
            if pipeline == shared
            else f"  and metadata.shared reports {shared:,} bytes"
        )
        return [
            f"num_stages x (BLOCK_M x BLOCK_K + BLOCK_K x BLOCK_N) x {size} bytes ({payload['dtype']})",
            f"  = {stages} x ({bm} x {bk} + {bk} x {bn}) x {size} = {pipeline:,} bytes,",
            reported,
        ]

    return pages_captures.per_gpu(shown, write, "no capture of the compiled kernels yet")


# --- the paragraph ----------------------------------------------------------------------------


def _sanitizer_sentence(capture: dict) -> str | None:
    gpu = short_gpu_name(capture["provenance"]["gpu"])
    runs = _sanitizer_runs(capture)
    plain = runs.get("plain")
    if not plain or plain["equal"] is None:
        return None
    answer = "the right answer" if plain["equal"] == "True" else "a wrong answer"
    damage = _damage(plain)
    sentence = (
        f"On the {gpu}, the copy whose mask lets one lane past the end returned {answer} with no "
        f"error" + (f", and {damage}" if damage else "")
    )
    counts = []
    if "memcheck" in runs and runs["memcheck"]["summary"] is not None:
        counts.append(f"{runs['memcheck']['summary']} errors with PyTorch's caching allocator on")
    if "memcheck, no caching" in runs and runs["memcheck, no caching"]["summary"] is not None:
        counts.append(f"{runs['memcheck, no caching']['summary']} with it off")
    if counts:
        sentence += f"; compute-sanitizer's memcheck reported {' and '.join(counts)}"
    last = runs.get("memcheck, no caching, y last")
    if last and last["summary"] is not None:
        sentence += f"; once nothing was allocated after y, it reported {_accesses(last)}"
        if last["summary"]:
            sentence += ". memcheck sees an access only where it lands outside every allocation"
    return sentence + "."


def _assert_sentence(capture: dict) -> str | None:
    debug, plain = _assert_facts(capture)
    if not debug.get("raised"):
        return None
    later = ", and every CUDA call after it failed" if debug.get("later") else ""
    without = (
        "; without it the assertion is not compiled and nothing is reported" if plain.get("equal") else ""
    )
    return (
        f"Compiled with TRITON_DEBUG=1, a tl.device_assert on those lanes stopped the kernel{later}{without}."
    )


def _compiled_sentence(capture: dict) -> str | None:
    kernels = capture["payload"]["kernels"]
    if "copy_kernel" not in kernels or "copy_off_by_one_kernel" not in kernels:
        return None
    good, bad = kernels["copy_kernel"]["counts"]["ptx"], kernels["copy_off_by_one_kernel"]["counts"]["ptx"]
    if good["vector loads"] > 0 and bad["vector loads"] == 0:
        return (
            f"The compiled code shows a second effect of the bug: with the mask a lane too wide, "
            f"Triton can no longer prove that a thread's elements are all in or all out, and each "
            f"thread's global loads went from {good['loads']} ({good['vector loads']} of them "
            f"ld.global.v4, 16 bytes at once, in PTX) to {bad['loads']}, none of them vector loads."
        )
    return (
        f"In the compiled code (PTX), each thread of the correct copy makes {good['loads']} global "
        f"loads ({good['vector loads']} vector loads), and of the off-by-one copy {bad['loads']} "
        f"({bad['vector loads']} vector loads)."
    )


def in_one_paragraph() -> Paragraph:
    """The guide's headline, from the reference GPU's captures: what the off-by-one copy did
    without a tool, what compute-sanitizer and ``tl.device_assert`` reported, and what the
    compiled code shows; a note for each capture that is missing or stale.

    Returns:
        A :class:`~gpuperf.pages.prose.Paragraph`.
    """
    sentences = [
        "A kernel that reads or writes past the end of a tensor rarely fails: it returns a plausible "
        "answer. Run it in Triton's interpreter to print and step through it on the CPU; on a GPU, "
        "a device-side assertion catches the access, compute-sanitizer catches it where it lands "
        "outside every allocation, and the compiled code says what the kernel really does."
    ]
    readers = {SANITIZER: _sanitizer_sentence, ASSERT: _assert_sentence, COMPILED: _compiled_sentence}
    found, notes = pages_captures.load_all(readers)
    sentences += [readers[name](capture) or "" for name, capture in found.items()]
    return paragraph(*sentences, notes=notes)
