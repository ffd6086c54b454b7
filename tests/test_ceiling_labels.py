"""A label beside a ceiling names the shape and mode its record holds (issue 35, item 1).

The pages once named every matmul ceiling "cuBLAS at 8192³" while ``hardware.json`` had
measured bf16 and fp16 at 4096³ and FP8 at 6144³: a label typed once and never checked. These
tests find every phrase that ties a ceiling to a shape or an accumulation mode, in the pages'
source text (tutorials, guides, ``docs/*.rst``, :mod:`gpuperf.pages`) and in the sentences the
page helpers print, and check each against the reference GPU's committed records: its
``hardware.json`` and the ceilings each record copies. A benchmark shape ("ours / cuBLAS at
8192³", "the squares from 1024³ to 8192³") is not a ceiling's and is left alone.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from gpuperf.bench import catalog, records
from gpuperf.bench.hardware import FP8_ACCUMULATION
from gpuperf.pages import fp8, hardware, matmul, plotting, roofline_readings, strategy
from gpuperf.pages.plotting import ceiling_label
from gpuperf.pages.report import headline, load
from tests._pages import records_as_text  # noqa: F401 (autouse)

ROOT = Path(__file__).resolve().parents[1]
#: Where a page's words live: its script, the hand-written docs, and the helpers that print.
SOURCES = sorted(
    [
        *ROOT.glob("tutorials/*.py"),
        *ROOT.glob("guides/*.py"),
        *ROOT.glob("docs/*.rst"),
        *ROOT.glob("src/gpuperf/pages/**/*.py"),
    ]
)

_SHAPE = r"(?P<n>\d{3,5})³"
#: The calls and libraries a matmul ceiling is named by.
_CALL = r"(?:cuBLASLt|cuBLAS|torch\.matmul|torch\._scaled_mm|_scaled_mm)"
#: Phrases that put a shape on a ceiling wherever they stand: the ceiling "at" a shape, a
#: share "of" a call's rate at a shape, a ceiling label ("... matmul (torch.matmul) at 4096³").
_ALWAYS = [
    rf"\bceilings?\b(?: measured)? at {_SHAPE}",
    rf"\bof (?:the )?{_CALL}'s (?:rate )?(?:at )?{_SHAPE}",
    rf"\bmatmul \({_CALL}[^()]{{0,40}}\) at {_SHAPE}",
]
#: Phrases that name a call at a shape: a ceiling's only where a sentence says so near by
#: (:data:`_NEAR` characters), else a benchmark shape ("the ratio to cuBLAS at 4096³").
_CALL_AT = [
    rf"{_CALL}(?:'s)?\W{{0,4}} (?:at|of two random) {_SHAPE}",
    rf"{_SHAPE}\W{{0,4}} {_CALL}",
]
_NEAR = 100
#: An accumulation mode put on the FP8 ceiling.
_MODE = [
    r"\b(?P<mode>fast|promoted)[ -]accumulation (?:FP8 |fp8 )?ceiling",
    r"_scaled_mm,? (?P<mode>fast|promoted) accumulation\)",
    r"\bFP8 \((?P<mode>fast|promoted) accumulation\)",
]


def _plain(text: str) -> str:
    """``text`` as a reader reads it: reST markup and math written as ``N³``, one space
    between words."""
    text = re.sub(r":math:`(\d+)\^3`", r"\1³", text)
    text = re.sub(r"\b(\d+)\^3\b", r"\1³", text)
    text = re.sub(r"\b(\d+) ?[×x] ?\1 matri", r"\1³ matri", text)
    text = text.replace("``", "").replace(":term:", "")
    return re.sub(r"\s+", " ", text)


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.;])\s+(?=[A-Z(])", _plain(text))


def claims(text: str) -> list[tuple[str, str, str]]:
    """``(phrase, what, value)`` for each phrase of ``text`` that puts a shape (``what``:
    ``"shape"``, ``value`` ``"4096³"``) or an accumulation mode (``"mode"``, ``"promoted"``)
    on a ceiling, ``phrase`` the words around it."""
    found = []
    for sentence in _sentences(text):
        spans = [m for p in _ALWAYS for m in re.finditer(p, sentence)]
        for p in _CALL_AT:
            for m in re.finditer(p, sentence):
                near = sentence[max(0, m.start() - _NEAR) : m.end() + _NEAR]
                if re.search(r"\bceilings?\b", near, re.IGNORECASE):
                    spans.append(m)
        for start in sorted({m.start("n") for m in spans}):  # two phrases may name one shape
            m = next(m for m in spans if m.start("n") == start)
            found.append((_around(sentence, m), "shape", f"{m['n']}³"))
        for p in _MODE:
            for m in re.finditer(p, sentence):
                found.append((_around(sentence, m), "mode", m["mode"]))
    return found


def _around(sentence: str, m: re.Match) -> str:
    return sentence[max(0, m.start() - 50) : m.end() + 30].strip()


def _keys(phrase: str) -> tuple[str, ...]:
    """The ceilings a phrase may mean: FP8's where it names FP8 or its call, a dtype's where
    it names one, else cuBLAS's bf16 and fp16 (the tutorials' two)."""
    if re.search(r"_scaled_mm|cuBLASLt|\bfp8\b|\bFP8\b", phrase):
        return tuple(FP8_ACCUMULATION)
    named = [k for k, words in _DTYPE_WORDS.items() if re.search(words, phrase)]
    return tuple(named) or ("bf16_tflops", "fp16_tflops")


_DTYPE_WORDS = {
    "bf16_tflops": r"\bbf16\b|\bbfloat16\b",
    "fp16_tflops": r"\bfp16\b|\bfloat16\b",
    "fp32_tflops": r"\bfp32\b",
}


def recorded(gpu: str | None = None) -> dict[str, dict[str, set]]:
    """``{key: {"shape": {...}, "mode": {...}}}``: what the reference GPU's ``hardware.json``
    and every record beside it hold for each matmul ceiling (shapes as ``'4096³'``)."""
    folder = records.measurements_dir() / (gpu or records.reference_gpu())
    entries = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and isinstance(data.get("ceilings"), dict):
            entries += data["ceilings"].items()
    held: dict[str, dict[str, set]] = {}
    for key, entry in entries:
        if not key.endswith("_tflops"):
            continue
        slot = held.setdefault(key, {"shape": set(), "mode": set()})
        if entry.get("shape"):
            slot["shape"].add(f"{entry['shape'][0]}³" if len(set(entry["shape"])) == 1 else "")
        if key in FP8_ACCUMULATION:
            slot["mode"].add(entry.get("accumulation", FP8_ACCUMULATION[key]))
    return held


def wrong(text: str, held: dict) -> list[str]:
    """The claims of ``text`` that no ceiling they may mean holds: ``'phrase (shape 8192³;
    the records hold 4096³)'``."""
    out = []
    for phrase, what, value in claims(text):
        keys = _keys(phrase) if what == "shape" else tuple(FP8_ACCUMULATION)
        holds = set().union(*(held.get(k, {}).get(what, set()) for k in keys))
        if value not in holds:
            out.append(f"{phrase!r} ({what} {value}; the records hold {sorted(holds) or 'none'})")
    return out


def source_texts(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of each passage of prose in ``path``: a reST file's paragraphs; a
    Python file's comment blocks and string literals (an f-string's fields as ``{}``)."""
    source = path.read_text()
    if path.suffix == ".rst":
        out, line = [], 1
        for block in re.split(r"\n\s*\n", source):
            out.append((line, block))
            line += block.count("\n") + 2
        return out
    out, block, start, last = [], [], 0, -2
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        row = tok.start[0]
        text = tok.string.lstrip("#").strip()
        if row != last + 1 or not text:
            if block:
                out.append((start, " ".join(block)))
            block, start = [], row
        if text:
            block.append(text)
        last = row
    if block:
        out.append((start, " ".join(block)))
    tree = ast.parse(source)
    fields = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in fields:
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "{}" for v in node.values]
            out.append((node.lineno, "".join(parts)))
    return out


@pytest.fixture(scope="module")
def held() -> dict:
    return recorded()


def test_the_reference_records_name_their_ceilings_shapes(held):
    # The check below is only as good as what it checks against: every matmul ceiling of
    # the reference GPU names its shape, and FP8's its mode.
    assert set(held) >= {"bf16_tflops", "fp16_tflops", "fp32_tflops", "fp8_tflops"}
    assert all(slot["shape"] for slot in held.values())
    assert held["fp8_tflops"]["mode"] == {"promoted"}
    assert held["fp8_fast_tflops"]["mode"] == {"fast"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_source_text_names_ceilings_as_their_records_do(path, held):
    bad = [f"passage at line {line}: {w}" for line, text in source_texts(path) for w in wrong(text, held)]
    assert not bad, "a ceiling named with a shape or mode its record does not hold:\n" + "\n".join(bad)


def _rendered():
    """The sentences the page helpers print about ceilings, from the reference GPU's records."""
    plain = load(catalog.MATMUL)
    yield "hardware.ceilings", str(hardware.ceilings())
    yield "matmul.in_one_paragraph", str(matmul.in_one_paragraph())
    yield "matmul.against_cublas", matmul.against_cublas(plain)
    yield "matmul.ceilings_by_run", matmul.ceilings_by_run(plain)
    yield "strategy.matmul_vs_cublas", strategy.matmul_vs_cublas(plain)
    yield "fp8.in_one_paragraph", str(fp8.in_one_paragraph())
    yield "roofline_readings.roofs", roofline_readings.roofs(roofline_readings.placements())
    for benchmark in (catalog.MATMUL, catalog.MATMUL_PERSISTENT, catalog.MATMUL_FP8):
        yield f"headline({benchmark.name})", headline(load(benchmark)) or ""
    for key in ("bf16_tflops", "fp16_tflops", "fp32_tflops", "fp8_tflops", "fp8_fast_tflops"):
        yield f"hardware.ceilings().label({key!r})", hardware.ceilings().label(key)


def test_rendered_sentences_name_ceilings_as_their_records_do(held):
    bad = [f"{name}: {w}" for name, text in _rendered() for w in wrong(text, held)]
    assert not bad, "a printed ceiling named with a shape or mode its record does not hold:\n" + "\n".join(
        bad
    )


def test_a_ceiling_label_is_a_claim_the_check_reads(held):
    # The labels ceiling_label formats are read as claims (a check that read none would pass
    # anything), true of the records they come from and false of any other shape or mode.
    for key in ("bf16_tflops", "fp16_tflops", "fp8_tflops"):
        label = hardware.ceilings().label(key)
        assert [what for _, what, _ in claims(label)][:1] == ["shape"], label
        assert not wrong(label, held)
    fp8_label = hardware.ceiling_label("fp8_fast_tflops", {"shape": [8192] * 3, "accumulation": "fast"})
    assert len(wrong(fp8_label, held)) == 1  # fast accumulation is measured, but not at 8192³


@pytest.mark.parametrize(
    "text",
    [
        # The typed labels the pages had, each beside a ceiling its record measured elsewhere.
        "the ceiling the percentages are taken of (cuBLAS at 8192³, measured at the start)",
        "TFLOP/s counts :math:`2MNK`; the ceiling is cuBLAS at :math:`8192^3` in the same run.",
        "the ceiling is ``torch._scaled_mm`` at :math:`8192^3`, measured in the same run.",
        "* **Ceilings measured in the same run**: a 1 GiB device-to-device copy for\n"
        "  bandwidth, 8192³ ``torch.matmul`` (``torch._scaled_mm`` for fp8) for compute.",
        "Both ceilings are the same call, ``torch.matmul`` of two random 8192 × 8192 matrices",
        "The ceilings measured on each GPU (cuBLAS at 8192³, ``torch._scaled_mm`` for FP8) say how much:",
        "bf16 4096³: ours / cuBLAS 0.90x, 89% of cuBLAS's 8192³ rate",
        "(cuBLAS itself reached 90% of that ceiling at 8192³ in this benchmark: the same call)",
        "103% of the measured FP8 ceiling at 8192³",
    ],
)
def test_the_labels_the_pages_had_are_caught(text, held):
    assert wrong(text, held)


@pytest.mark.parametrize(
    "text",
    [
        # Benchmark shapes beside a ceiling's mention are not the ceiling's.
        "the ratio to cuBLAS at the large squares, its geometric mean over the squares from 1024³ "
        "to 8192³ that the run measured, and how close the kernel comes to that ceiling",
        "geometric mean of the ratio to cuBLAS, 1024³-8192³: 0.90×",
        "On the H100, 0.94× cuBLAS's speed at 8192³, 85% of that ceiling",
        "the opening paragraph puts FP8 with fast accumulation against them at 8192³.",
        "Nsight Compute, one launch of each at :math:`8192^3`",
        "cuBLAS bf16 matmul (torch.matmul) at 4096³: 778 TFLOP/s",
        "cuBLAS bf16 matmul (torch.matmul), shape not recorded: 719 TFLOP/s",
        # Both FP8 accumulations have a ceiling of their own.
        "read against the fast-accumulation FP8 ceiling",
        "read against the promoted-accumulation FP8 ceiling",
    ],
)
def test_benchmark_shapes_and_true_labels_pass(text, held):
    assert not wrong(text, held)


# The helper itself ----------------------------------------------------------------------


def test_ceiling_label_names_call_dtype_shape_and_fp8_mode():
    assert ceiling_label("bf16_tflops", {"shape": [4096] * 3}) == "cuBLAS bf16 matmul (torch.matmul) at 4096³"
    assert ceiling_label("fp32_tflops", {"shape": [8192, 8192, 4096]}) == (
        "cuBLAS fp32 matmul (torch.matmul) at 8192×8192×4096"
    )
    # FP8: the call and its accumulation, from the entry where it names one, else promoted:
    # every entry without the field was measured with _scaled_mm's default use_fast_accum=False.
    assert ceiling_label("fp8_tflops", {"shape": [6144] * 3}) == (
        "cuBLASLt fp8 matmul (torch._scaled_mm, promoted accumulation) at 6144³"
    )
    fast = ceiling_label("fp8_tflops", {"shape": [6144] * 3, "accumulation": "fast"})
    assert fast == "cuBLASLt fp8 matmul (torch._scaled_mm, fast accumulation) at 6144³"
    # An entry from before ceilings named their shape says so; it invents none.
    assert (
        ceiling_label("fp16_tflops", {"value": 680.0})
        == "cuBLAS fp16 matmul (torch.matmul), shape not recorded"
    )
    assert ceiling_label("fp16_tflops") == "cuBLAS fp16 matmul (torch.matmul), shape not recorded"
    # Without the library and dtype, for a line that names them already.
    assert ceiling_label("bf16_tflops", {"shape": [4096] * 3}, name=False) == "torch.matmul at 4096³"
    assert (
        ceiling_label("fp8_tflops", {}, name=False)
        == "torch._scaled_mm, promoted accumulation, shape not recorded"
    )
    # Bandwidth ceilings: the label, and the stream that set the stream bandwidth.
    assert ceiling_label("copy_gbps", {"value": 3000.0}) == "copy bandwidth"
    assert ceiling_label("stream_gbps", {"stream": "addcmul"}) == "stream bandwidth (addcmul)"
    with pytest.raises(ValueError, match="key must be one of"):
        ceiling_label("read_gbps", {})
    with pytest.raises(TypeError, match="entry must be a ceiling's entry"):
        ceiling_label("bf16_tflops", [4096] * 3)


def test_ceilings_label_reads_the_hardware_entry():
    c = hardware.ceilings(records.reference_gpu())
    hw = json.loads((records.measurements_dir() / records.reference_gpu() / "hardware.json").read_text())
    for dtype in ("bf16", "fp16", "fp32", "fp8", "fp8_fast"):
        key = f"{dtype}_tflops"
        assert c.label(dtype) == c.label(key) == ceiling_label(key, hw["ceilings"][key])
        assert f"{c.label(dtype)}: " in " ".join(str(c).split())
    with pytest.raises(ValueError, match="key must be one of"):
        c.label("int8_tflops")


def test_the_plot_names_its_ceiling_from_the_record():
    fp8_result = load(catalog.MATMUL_FP8)
    fig = fp8_result.plot(accumulation="fast")
    # Fast accumulation is drawn under the fast-accumulation ceiling, named from its entry.
    entry = fp8_result.record["ceilings"]["fp8_fast_tflops"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(text.startswith(f"{ceiling_label('fp8_fast_tflops', entry)}, measured: ") for text in legend)
    assert not any("promoted accumulation" in text for text in legend)
    # With several GPUs, one legend entry stands for each GPU's ceiling: it names neither
    # call nor shape, which may differ between them.
    one = f"{ceiling_label('fp8_tflops', entry)}, measured: 1408 TFLOP/s"
    assert plotting._legend_key(one, True) == "cuBLASLt fp8 matmul (each GPU's, measured)"
    bare = "cuBLAS bf16 matmul (torch.matmul), shape not recorded, measured: 719 TFLOP/s"
    assert plotting._legend_key(bare, True) == "cuBLAS bf16 matmul (each GPU's, measured)"
