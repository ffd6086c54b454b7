"""Another GPU's record of code that has changed since is left out: the pages that read
it still render, and leave that GPU out of what they say about that kernel."""

import json

import matplotlib.pyplot as plt
import pytest

from gpuperf.bench import catalog, records
from gpuperf.pages import roofline, roofline_plot, strategy
from gpuperf.pages import roofline_readings as readings
from gpuperf.pages import vector_add as vector_add_page
from gpuperf.pages.plotting import short_gpu_name
from gpuperf.pages.report import gpus_with_current
from tests._pages import copy_measurements, records_as_text  # noqa: F401 (autouse)
from tests._params import with_changed_source

#: The readings of the roofline guide that read nothing but the benchmark named.
ONLY = {
    "vector_add": (readings.memory_bound, readings.launch_bound),
    "matmul": (readings.compute_bound,),
    "softmax": (readings.far_below,),
}

EVERY_READING = (
    readings.roofs,
    readings.memory_bound,
    readings.read_mix,
    readings.compute_bound,
    readings.real_traffic,
    readings.far_below,
    readings.launch_bound,
    readings.l2_resident,
    readings.causal,
    readings.head_dims,
    readings.skipped,
)


def _other_gpu() -> str:
    others = [gpu for gpu in roofline.gpus() if gpu != records.reference_gpu()]
    if not others:
        pytest.skip("only the reference GPU has records")
    return others[0]


def _section(table: str, name: str) -> str:
    """The section of a fixed-width table headed by ``name`` ('' without one)."""
    return next((s for s in table.split("\n\n") if s.splitlines()[0].strip() == name), "")


@pytest.mark.parametrize("bench", sorted(ONLY))
def test_a_stale_record_on_another_gpu_leaves_that_gpu_out_of_its_kernel(bench, tmp_path, monkeypatch):
    gpu = _other_gpu()
    root = copy_measurements(tmp_path, monkeypatch)
    path = root / gpu / f"{bench}.json"
    if not path.exists():
        pytest.skip(f"{gpu} has no record of {bench}")
    path.write_text(json.dumps(with_changed_source(json.loads(path.read_text()))))
    benchmark = catalog.by_name(bench)
    assert gpu not in gpus_with_current(benchmark)
    assert records.reference_gpu() in gpus_with_current(benchmark)

    places = readings.placements()
    place = next(p for p in places if p.slug == gpu)
    name = short_gpu_name(place.gpu)
    assert not place.has(bench) and not place.find(bench)
    assert (
        bench,
        "measured before its code changed",
        len(json.loads(path.read_text())["rows"]),
    ) in place.skipped

    # Every reading renders; those reading only this kernel leave the GPU out, the
    # reference GPU stays in.
    texts = {reading: reading(places) for reading in EVERY_READING}
    for reading in ONLY[bench]:
        assert name not in texts[reading], reading.__name__
        assert short_gpu_name(places[0].gpu) in texts[reading], reading.__name__
    mix = {b for b, _, _ in readings.READ_MIX}
    if bench in mix:
        line = next((t for t in texts[readings.read_mix].splitlines() if t.startswith(name)), "")
        assert f"{bench} " not in line

    # The opening paragraph: no clause on that kernel for that GPU, and no note about it.
    para = readings.in_one_paragraph(places)
    mine = next((s for s in para.sentences if s.startswith(f"On the {name} ")), "")
    words = {"vector_add": "vector add", "matmul": "bf16 matmul"}
    if bench in words:
        assert words[bench] not in mine
    assert not any(n.startswith(name) for n in para.notes)

    # The classify table: that GPU's table (if any) has no row of the kernel.
    table = strategy.classify_table()
    reference = _section(table, short_gpu_name(places[0].gpu))
    assert any(line.split()[0] == bench for line in reference.splitlines()[3:])
    section = _section(table, name)
    assert not any(line.split()[0] == bench for line in section.splitlines()[3:])

    # Vector add's paragraph names that GPU only while its vector add record is current.
    text = vector_add_page.in_one_paragraph().text()
    assert f"On the {short_gpu_name(places[0].gpu)}," in text
    assert (f"On the {name}," in text) == (gpu in gpus_with_current(catalog.VECTOR_ADD))
    if bench == "vector_add":
        assert f"On the {name}," not in text


def test_a_gpu_whose_every_record_is_stale_gets_no_chart(tmp_path, monkeypatch):
    gpu = _other_gpu()
    root = copy_measurements(tmp_path, monkeypatch)
    for path in root.glob(f"{gpu}/*.json"):
        record = json.loads(path.read_text())
        if isinstance(record, dict) and isinstance(record.get("sources"), dict) and record.get("rows"):
            path.write_text(json.dumps(with_changed_source(record)))
    places = readings.placements()
    stale = next(p for p in places if p.slug == gpu)
    assert not stale.points
    charted = readings.charted(places)
    assert stale not in charted
    assert [p.slug for p in charted] == [p.slug for p in places if p.points]
    assert records.reference_gpu() in [p.slug for p in charted]
    # The guide's charts draw for every GPU charted, on axes shared with the rest.
    for place in charted:
        for draw in (roofline_plot.overview, roofline_plot.compute_bound):
            figure = draw(place, shared=places, marks=readings.MARKS)
            assert figure.axes
            plt.close(figure)
