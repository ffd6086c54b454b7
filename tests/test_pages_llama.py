"""Tutorial 07's page module (gpuperf.pages.llama) on the committed records and capture: the
paragraph states each phase's headline, the tables and sentences read the records, the
charts are legible, and wrong inputs are refused."""

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from gpuperf.bench import catalog
from gpuperf.pages import llama as page
from gpuperf.pages.plotting import overlapping_texts
from gpuperf.pages.report import above_roof, load, roof_caveat, x_named


@pytest.fixture(autouse=True)
def committed_records(monkeypatch):
    monkeypatch.setenv("GPUPERF_BENCH", "records")
    monkeypatch.setenv("GPUPERF_TABLES", "text")
    yield
    plt.close("all")


def test_the_paragraph_reads_every_phase_from_the_records():
    text = page.in_one_paragraph().text()
    prefill = load(catalog.LLAMA_PREFILL)
    eager = [prefill.ratios("triton").get(b) for b in catalog.PREFILL_BATCHES]
    assert f"{min(eager):.2f}" in text and "as fast as eager PyTorch" in text
    assert "CUDA graph" in text and "reduce-overhead" in text
    kernel = load(catalog.ATTENTION_DECODE)
    flat = " ".join(text.split())
    # The ceiling is named from the record the shares come from, never typed.
    assert f"of the {kernel.ceiling_name(batch=64)} at batch 64." in flat
    assert "training step" in text.lower()


def test_the_paragraph_says_where_decode_attention_passes_its_roof():
    flat = " ".join(page.in_one_paragraph().text().split())
    kernel = load(catalog.ATTENTION_DECODE)
    above = [s for s in above_roof(kernel) if s.row["provider"] == "triton" and s.combo == {"batch": 64}]
    if not above:
        assert "passes that roof" not in flat
        return
    where = ", ".join(x_named(kernel.record, s.x) for s in above)
    assert f"At {where} it passes that roof beyond the spread of both timings: " in flat
    assert roof_caveat(above[0].key, above[0].ceiling) in flat


def test_the_paragraph_says_whether_torch_compile_trains_faster_than_ours():
    text = " ".join(page.in_one_paragraph().text().split())
    train = load(catalog.LLAMA_TRAIN)
    batch = catalog.LLAMA_TRAIN.x_values[0]
    ours, compiled = train.ms("triton")[batch], train.ms("compile")[batch]
    faster = "faster than ours" if compiled < ours else "slower than ours"
    assert f"torch.compile's is {faster}: {compiled:.1f} ms against our {ours:.1f} ms" in text
    assert f"(ours {compiled / ours:.2f}× as fast)" in text


def test_prefill_table_gives_time_tokens_per_second_and_the_ratio_to_eager():
    result = load(catalog.LLAMA_PREFILL)
    table = page.prefill_table(result)
    ours = result.ms("triton")[1]
    assert f"{ours:.2f}" in table and "tokens/s" in table
    assert f"{result.ratios('triton')[1]:.2f}x" in table


def test_decode_table_and_launch_bound_use_the_decode_record():
    result = load(catalog.LLAMA_DECODE)
    table = page.decode_table(result, batch=1)
    graph = result.ms("triton_graph", batch=1)[4096]
    assert f"{graph * 1e3:.0f}" in table
    bound = page.launch_bound()
    assert "GPU busy" in bound and f"{result.ms('triton', batch=1)[4096] * 1e3:.0f}" in bound


def test_amdahl_bounds_the_prefill_by_the_matmuls_share():
    text = " ".join(page.amdahl().split())
    assert "Amdahl's law" in text and "the parts that hold the four projections" in text


def test_amdahl_names_each_part_where_ours_is_slower_than_eager():
    from gpuperf.pages import captures

    capture, _ = captures.load(page.BREAKDOWN)
    case = next(c for c in capture["payload"]["cases"] if c["phase"] == "prefill")
    ours, eager = (case["providers"][k]["parts_us"] for k in ("triton", "eager"))
    text = " ".join(page.amdahl().split())
    for part, us in ours.items():
        named = f"{part} ({us:.0f} µs against {eager[part]:.0f} µs)" in text
        assert named == (us > page.SLOWER_PART * eager[part])


def test_training_summary_explains_a_provider_that_was_not_timed():
    train, memory = load(catalog.LLAMA_TRAIN), load(catalog.LLAMA_TRAIN_MEMORY)
    text = page.training_summary(train, memory)
    assert "ours:" in text and " ms" in text
    for row in train.record["rows"]:
        if row["status"] != "ok":
            assert f"{page.NAMES[row['provider']]}: not timed" in text


def test_work_per_token_calls_prefill_compute_bound_and_decode_memory_bound():
    table = page.work_per_token()
    lines = table.splitlines()
    assert any("prefill" in line and "compute" in line for line in lines)
    assert all("memory" in line for line in lines if "decode" in line)


def test_work_per_token_gives_the_kv_caches_share_of_the_bytes():
    from gpuperf.bench import metrics
    from gpuperf.models.llama import LLAMA_3_8B as config
    from gpuperf.pages.prose import percent

    table = page.work_per_token()
    for batch in (1, 8, 64):
        with_cache = metrics.llama_layer_bytes(config, tokens=batch, kv_len=4096, batch=batch)
        # Every cached key and value read, and the new token's written, in bfloat16.
        cache = 2 * batch * config.n_kv_heads * config.head_dim * (4096 + 1) * 2
        line = next(row for row in table.splitlines() if f"decode, batch {batch}," in row)
        assert f" {percent(cache / with_cache)} " in line
    prefill = next(row for row in table.splitlines() if "prefill" in row)
    assert " 0% " in prefill


@pytest.mark.parametrize(
    "draw", [page.plot_time_breakdown, page.plot_roofline], ids=["breakdown", "roofline"]
)
def test_charts_are_legible(draw):
    fig = draw()
    assert overlapping_texts(fig) == []
    assert any(ax.get_xlabel() or ax.get_yticklabels() for ax in fig.axes)


def test_wrong_results_are_refused():
    with pytest.raises(TypeError, match=r"must be a gpuperf\.pages\.Result"):
        page.prefill_table("llama_prefill")
    with pytest.raises(ValueError, match="must be a result of 'llama_decode'"):
        page.decode_table(load(catalog.LLAMA_PREFILL), batch=1)


def test_decode_table_lists_the_cache_lengths_a_gpu_has():
    # A record with two of the lengths (as a partial run would hold): two rows, no row of
    # dashes for the lengths it lacks.
    full = load(catalog.LLAMA_DECODE)
    kept = (4096, 32768)
    part = {**full.record, "rows": [r for r in full.record["rows"] if r["x"] in kept]}
    table = page.decode_table(type(full)(catalog.LLAMA_DECODE, part, "live"), batch=1)
    cached = [line.split()[0] for line in table.splitlines() if line.split() and line.split()[0].isdigit()]
    assert cached == [str(n) for n in kept]


def test_the_paragraph_names_the_batches_and_every_providers_peak_memory_from_the_records():
    text = " ".join(page.in_one_paragraph().text().split())
    prefill, autotune = load(catalog.LLAMA_PREFILL), load(catalog.LLAMA_PREFILL_AUTOTUNE)
    batches = sorted(prefill.rows("triton"))
    assert f"(batch {batches[0]} to {batches[-1]})" in text
    tuned = sorted(autotune.rows("compile_max"))
    assert f"as fast as max-autotune at batch {', '.join(map(str, tuned))}." in text
    memory = load(catalog.LLAMA_TRAIN_MEMORY)
    batch = catalog.LLAMA_TRAIN.x_values[0]
    gib = {p: memory.values(p)[batch] for p in ("triton", "eager", "compile")}
    assert (
        f"Our step's peak memory is {gib['triton']:.2f} GiB against eager's {gib['eager']:.2f} GiB "
        f"and torch.compile's {gib['compile']:.2f} GiB." in text
    )


def test_autotune_cost_gives_each_providers_first_call_from_the_record():
    text = " ".join(page.autotune_cost().split())
    result = load(catalog.LLAMA_PREFILL_AUTOTUNE)
    for batch in sorted({r["x"] for r in result.record["rows"]}):
        assert f"{result.name}, batch {batch}, time of the first call in that run:" in text
        for key in ("triton", "eager", "compile_max"):
            seconds = result.rows(key)[batch]["first_call_s"]
            shown = f"{seconds:.1f} s" if seconds >= 0.05 else "under 0.1 s"
            assert f"{page.NAMES[key]} {shown}" in text
    with pytest.raises(TypeError, match="gpu must be a GPU folder name"):
        page.autotune_cost(8)


def test_the_liger_table_puts_ours_beside_liger_for_each_kernel_with_its_ratio():
    from gpuperf.bench.catalog import RMS_NORM
    from gpuperf.pages.report import load

    table = page.liger_table()
    for _, what in page.LIGER_OPS:
        assert what in table
    rms = load(RMS_NORM)
    ours, liger = rms.values("triton"), rms.values("liger")
    x = max(ours)
    assert f"{ours[x] / liger[x]:.2f}×" in table
    reading = page.liger_reading()
    assert reading.startswith("Ours over Liger-Kernel's") and "RMSNorm" in reading
