"""The optimization-strategy guide's readers (gpuperf.pages.strategy) against the
committed records: the opening paragraph's numbers, its notes, and each helper's
tables and errors."""

import shutil

import pytest

from gpuperf.bench import captures, records, tuning
from gpuperf.bench import catalog as cat
from gpuperf.pages import hardware, load, strategy
from gpuperf.pages.plotting import ceiling_label, format_rate, format_x, short_gpu_name
from gpuperf.pages.prose import percent, times
from gpuperf.pages.report import gpus_with_current
from gpuperf.pages.tables import FORMAT_VAR
from tests._pages import current_measurements

SQUARE = (4096, 4096, 4096)
PARAGRAPH_BENCHMARKS = (cat.GELU, cat.MATMUL, cat.MATMUL_PERSISTENT, cat.MATMUL_FP8, cat.STRIDED_COPY)


@pytest.fixture(autouse=True)
def text_and_records(monkeypatch):
    monkeypatch.setenv(FORMAT_VAR, "text")
    monkeypatch.setenv("GPUPERF_BENCH", "records")


def _expected_clauses(gpu: str) -> list[str]:
    """The paragraph's numbers for ``gpu``, computed here from the Result API."""
    gelu, matmul = load(cat.GELU, gpu), load(cat.MATMUL, gpu)
    persistent, fp8 = load(cat.MATMUL_PERSISTENT, gpu), load(cat.MATMUL_FP8, gpu)
    strided = load(cat.STRIDED_COPY, gpu)
    n = strategy.LARGEST
    clauses = [
        f"{times(matmul.ratios(dtype='bfloat16')[SQUARE])} cuBLAS at 4096³ bf16",
        # The strided copy is read against the copy bandwidth, named from its record.
        f"keeps {percent(strided.fraction_of_ceiling()[8])} of the {strided.ceiling_name()}",
    ]
    # (Another GPU's record of code that has changed since, or read against another ceiling
    # than the benchmark declares, is not shown: no clause.)
    if gelu.record is not None:
        # naive / triton time = (torch / triton) / (torch / naive)
        fusion = gelu.ratios("triton", dtype="float32")[n] / gelu.ratios("naive", dtype="float32")[n]
        named = gelu.record["ceilings"][gelu.rows(dtype="float32")[n]["ceiling"]]["label"]
        clauses += [
            f"{times(fusion, 1)} faster",
            f"{percent(gelu.fraction_of_ceiling(dtype='float32')[n])} of the {named})",
        ]
    if persistent.record is not None:
        clauses.append(f"{times(persistent.ratios()[SQUARE])} as a persistent TMA kernel")
    if persistent.record is not None and fp8.record is not None:
        bf16_rate = persistent.values()[SQUARE]
        fast = fp8.values(scaling="tensor", accumulation="fast")[SQUARE]
        promoted = fp8.values(scaling="tensor", accumulation="float32")[SQUARE]
        clauses.append(
            f"FP8 with fast accumulation runs {times(fast / bf16_rate)} the persistent kernel's bf16 rate "
            f"at {format_x(SQUARE)} ({times(promoted / bf16_rate)} with promoted accumulation)"
        )
    return clauses


def test_paragraph_names_every_gpu_with_the_numbers_of_its_records(tmp_path, monkeypatch):
    current_measurements(tmp_path, monkeypatch)  # every GPU's records current: each is named
    gpus = hardware.gpus()
    assert len(gpus) >= 2  # the H100 and the H200 are committed
    para = strategy.in_one_paragraph()
    assert para.title == "In one paragraph"
    assert not para.notes  # every record it reads is committed and fresh
    sentences = [s for s in para.sentences if s.startswith("On the ")]
    assert len(sentences) == len(gpus)
    for gpu, sentence in zip(gpus, sentences, strict=True):
        name = short_gpu_name(load(cat.STRIDED_COPY, gpu).gpu)
        assert sentence.startswith(f"On the {name}, ")
        for clause in _expected_clauses(gpu):
            assert clause in sentence, (clause, sentence)


def _copy_measurements(tmp_path, drop=()):
    """The committed ceilings and the paragraph's records under ``tmp_path``, less
    ``drop`` (``(gpu, benchmark name)`` pairs)."""
    src = records.measurements_dir()
    for gpu in hardware.gpus():
        (tmp_path / gpu).mkdir()
        shutil.copy(src / gpu / "hardware.json", tmp_path / gpu)
        for bench in PARAGRAPH_BENCHMARKS:
            if (gpu, bench.name) not in drop:
                shutil.copy(src / gpu / f"{bench.name}.json", tmp_path / gpu)


def test_a_missing_record_is_a_note_and_its_clause_is_left_out(tmp_path, monkeypatch):
    current_measurements(tmp_path / "current", monkeypatch)  # the others current: they speak
    gpus = hardware.gpus()
    (tmp_path / "dropped").mkdir()
    _copy_measurements(tmp_path / "dropped", drop={(gpus[0], "gelu")})
    tmp_path = tmp_path / "dropped"
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    para = strategy.in_one_paragraph()
    assert len(para.notes) == 1
    assert para.notes[0].startswith(f"{gpus[0]}: MISSING") and "gelu" in para.notes[0]
    first = next(s for s in para.sentences if s.startswith("On the "))
    assert "fusing GELU" not in first
    assert "cuBLAS at 4096³" in first  # the GPU's other records still speak


def test_no_records_at_all_is_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_MEASUREMENTS", str(tmp_path))
    para = strategy.in_one_paragraph()
    assert not [s for s in para.sentences if s.startswith("On the ")]
    assert para.notes and para.notes[-1].startswith("MISSING")


def test_short_kernel_keeps_the_functor_of_a_cpp_name_and_other_names_as_they_are():
    name = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
        "float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, ...)"
    )
    assert strategy.short_kernel(name) == "MulFunctor"
    assert strategy.short_kernel("triton_poi_fused_add_mul_relu_0") == "triton_poi_fused_add_mul_relu_0"
    with pytest.raises(TypeError, match="must be a string"):
        strategy.short_kernel(None)


def test_kernels_table_counts_each_providers_kernels():
    capture = captures.load("kernels_per_call", records.reference_gpu())
    text = strategy.kernels_table(capture)
    eager = next(line for line in text.splitlines() if "eager formula (8 kernels)" in line)
    assert eager.split()[5] == "8" and "MulFunctor" in eager and "void" not in text
    with pytest.raises(KeyError):
        strategy.kernels_table({"payload": {}})


def test_classify_table_reads_each_kernel_against_the_roof_of_its_engine():
    gpu = hardware.gpus()[0]
    row = next(
        r for r in load(cat.VECTOR_ADD, gpu).record["rows"] if r["x"] == 2**28 and r["provider"] == "triton"
    )
    text = strategy.classify_table([(cat.VECTOR_ADD, 2**28, {})])
    # Elementwise: the CUDA cores' float32 roof and its ridge.
    ridge = hardware.ceilings(gpu).ridge_point("fp32")
    line = next(line for line in text.splitlines() if line.strip().startswith("vector_add"))
    assert line.split()[2:6] == [f"{row['flops'] / row['bytes']:.1f}", "fp32", f"({ridge:.0f})", "memory"]
    with pytest.raises(TypeError, match=r"\(Benchmark, x, axes\)"):
        strategy.classify_table([("vector_add", 2**28, {})])


def test_classify_table_and_the_roofline_guide_agree_on_every_kernel():
    from gpuperf.pages import roofline

    # Each GPU's table holds the kernels it has a current record of; a GPU with none has no table.
    text = strategy.classify_table()
    sections = text.split("\n\n")
    read = {gpu: [c for c in strategy.CLASSIFY if gpu in gpus_with_current(c[0])] for gpu in hardware.gpus()}
    read = {gpu: cases for gpu, cases in read.items() if cases}
    assert read[hardware.gpus()[0]] == list(strategy.CLASSIFY)
    for (gpu, cases), section in zip(read.items(), sections, strict=True):
        placement = roofline.load_gpu(gpu)
        assert section.splitlines()[0].strip().startswith(hardware.ceilings(gpu).name), gpu
        lines = section.splitlines()[3:]
        for (bench, x, axes), line in zip(cases, lines, strict=True):
            (point,) = placement.find(bench.name, bench.subject.key, x, **axes)
            roof = placement.roof_of(point)
            cells = line.split()
            assert cells[-4:] == [
                roof.key.removesuffix("_tflops"),
                f"({roof.ridge:.0f})",
                roofline.bound_by(placement, point),
                percent(placement.fraction(point)),
            ], (gpu, bench.name, x)
    # The decode-time matmul: a bf16 matmul on the tensor cores, left of their ridge, read
    # as a share of intensity x bandwidth (not of the tensor cores' peak).
    first = sections[0].splitlines()
    decode = next(line for line in first if "16×14336×4096" in line)
    assert decode.split()[3:5] == [
        "bf16",
        f"({hardware.ceilings(hardware.gpus()[0]).ridge_point('bf16'):.0f})",
    ]


@pytest.mark.parametrize(
    "helper",
    [
        strategy.fused_vs_eager,
        strategy.gelu_at_largest,
        strategy.add_relu_mul_at_largest,
        strategy.matmul_vs_cublas,
        strategy.share_of_roof,
        strategy.strided_table,
        strategy.tuned_vs_max_autotune,
        strategy.persistent_ladder,
    ],
)
def test_result_helpers_refuse_what_is_not_a_result(helper):
    with pytest.raises(TypeError, match=r"must be a gpuperf\.pages\.Result"):
        helper(cat.GELU)


def test_fp8_and_roof_helpers_refuse_what_is_not_a_result():
    persistent = load(cat.MATMUL_PERSISTENT)
    with pytest.raises(TypeError, match="fp8 must be"):
        strategy.fp8_vs_bf16("matmul_fp8", persistent)
    with pytest.raises(TypeError, match="each item of results"):
        strategy.roof_table([persistent, cat.MATMUL])


def test_fused_vs_eager_is_the_ratio_of_the_two_providers_times():
    result = load(cat.SOFTMAX)
    a, b = result.ratios("triton"), result.ratios("naive")
    ratio = [a[x] / b[x] for x in a if x in b]
    text = strategy.fused_vs_eager(result)
    assert f"{min(ratio):.1f}x to {max(ratio):.1f}x faster than naive" in text.splitlines()[0]


def test_strided_table_derives_the_bytes_fetched_from_the_time():
    result = load(cat.STRIDED_COPY)
    copy = result.record["ceilings"]["copy_gbps"]["value"] * 1e9
    row = next(r for r in result.record["rows"] if r["x"] == 8 and r["provider"] == "triton")
    fetched = copy * row["ms"] * 1e-3 / cat.STRIDED_COPY_ELEMENTS - 4
    line = next(line for line in strategy.strided_table(result).splitlines() if line.split()[:1] == ["8"])
    assert line.split()[1:3] == [percent(result.fraction_of_ceiling()[8]), f"{fetched:.0f}"]


def test_strided_share_explains_its_share_from_the_bytes_fetched():
    result = load(cat.STRIDED_COPY)
    text = " ".join(strategy.strided_share(result).split())
    for r in result.gpus():
        copy = r.record["ceilings"]["copy_gbps"]["value"] * 1e9
        row = next(x for x in r.record["rows"] if x["x"] == 8 and x["provider"] == "triton")
        fetched = copy * row["ms"] * 1e-3 / cat.STRIDED_COPY_ELEMENTS - 4
        share = r.fraction_of_ceiling()[8]
        # The share is the 8 useful bytes over what the time paid for: above an eighth.
        assert share == pytest.approx(8 / (fetched + 4))
        assert share > 1 / 8
        assert f"stride 8 (32 bytes), {percent(share)} of the copy bandwidth, not 1/8" in text
        assert f"8 / ({fetched:.0f} + 4) = {percent(8 / (fetched + 4))}" in text
    assert f"8 / (32 + 4) = {percent(8 / 36)}" in text


def test_roof_table_gives_each_gpus_best_share_of_its_roof(monkeypatch):
    monkeypatch.setenv(FORMAT_VAR, "text")
    result = load(cat.VECTOR_ADD)
    best = max(result.fraction_of_ceiling().values())
    text = strategy.roof_table([result])
    row = text.splitlines()[2]
    assert f" {percent(best)} " in row
    # The roof is named, with its value, from the record that measured it: the stream
    # bandwidth its rows are read against, with the stream that set it.
    key = result.rows()[max(result.rows())]["ceiling"]
    entry = result.record["ceilings"][key]
    named = ceiling_label(key, entry)
    assert row.rstrip().endswith(f"{format_rate(entry['value'], entry['unit'])}, {named}")


def test_roof_table_reads_fp8_rows_against_the_ceiling_of_their_accumulation(monkeypatch):
    monkeypatch.setenv(FORMAT_VAR, "text")
    result = load(cat.MATMUL_FP8)
    if result.record is None:
        pytest.skip("no matmul_fp8 record for the reference GPU")
    text = strategy.roof_table([result])
    row = text.splitlines()[2]
    mode = "fast" if "accumulation=fast" in row else "promoted"
    key = "fp8_fast_tflops" if mode == "fast" else "fp8_tflops"
    entry = result.record["ceilings"][key]
    assert f"{mode} accumulation" in row and format_rate(entry["value"], entry["unit"]) in row


def test_inductor_code_says_when_a_gpu_has_the_same_code():
    capture = captures.load("inductor_elementwise", records.reference_gpu())
    render = strategy.inductor_code("gelu_eager", width=60)
    first = render(capture)
    assert "@triton.jit" in first and max(map(len, first.splitlines())) <= 60
    assert render(capture) == "(the same code as above)"
    with pytest.raises(KeyError, match="no code for 'nope'"):
        strategy.inductor_code("nope")(capture)
    with pytest.raises(TypeError, match="name must be"):
        strategy.inductor_code(3)


def _compile_capture():
    def entry(compile_s, gpu_ms, host_ms, kernels):
        return {
            "status": "ok",
            "compile_s": compile_s,
            "gpu_ms": gpu_ms,
            "host_ms": host_ms,
            "kernels": kernels,
        }

    results = {
        "small": {
            "eager": entry(0.0, 0.030, 0.100, ["void at::native::foo<float>(MulFunctor)"]),
            "default": entry(2.0, 0.030, 0.120, ["triton_poi_0"]),
            "reduce-overhead": entry(3.0, 0.030, 0.070, None),
            "max-autotune": {"status": "error", "message": "timed out"},
        }
    }
    cases = {"small": {"tokens": 8, "dim": 16, "hidden": 64}}
    return {"payload": {"cases": cases, "results": results, "modes": list(results["small"])}}


def test_compile_table_gives_the_speedup_and_the_calls_that_repay_the_compile_time():
    text = strategy.compile_table(_compile_capture())
    lines = {line.split()[0]: line for line in text.splitlines() if line.strip()}
    # per call: eager 0.100 ms (host), reduce-overhead 0.070 ms: 1.43x, 3 s / 0.030 ms = 100,000 calls
    assert "1.43x" in lines["reduce-overhead"] and "100,000 calls" in lines["reduce-overhead"]
    assert "0.83x" in lines["default"] and "host" in lines["default"]
    assert "error" in lines["max-autotune"]
    assert "  eager: foo" in text and "void" not in text  # demangled to its first name
    assert "  default: triton_poi_0" in text
    winners = strategy.compile_winners(_compile_capture())
    assert winners == "small: faster than eager: reduce-overhead (1.43x)"
    with pytest.raises(KeyError):
        strategy.compile_table({"payload": {"modes": []}})


def test_gemm_kernels_tells_cublas_from_inductors_templates():
    assert strategy.gemm_kernels(
        ["nvjet_sm90_tst_64x8", "splitKreduce_kernel", "triton_poi_fused_add_2"]
    ) == {"cuBLAS": 1}
    assert strategy.gemm_kernels(["triton_tem_fused_addmm_1", "triton_tem_fused_addmm_2"]) == {
        "Triton templates": 2
    }
    assert strategy.gemm_kernels(["triton_per_fused_native_layer_norm_0"]) == {}


def test_compile_reading_states_what_each_mode_did():
    text = " ".join(strategy.compile_reading(_compile_capture()).split())
    assert text.startswith("small: eager GPU 30 µs, host 100 µs (host-bound), 1 kernels, GEMMs: none")
    assert (
        "default: GPU 30 µs (1.00x eager's), host 120 µs (1.20x): host-bound, 0.83x eager; GEMMs: none"
        in text
    )
    # No kernel list recorded: no GEMM count, and no claim about a graph's input copy.
    assert text.endswith(
        "reduce-overhead: GPU 30 µs (1.00x eager's), host 70 µs (0.70x): host-bound, 1.43x eager"
    )
    # Its host time dropped below eager's: no question raised.
    assert "asks" not in text


def test_compile_reading_asks_about_a_cuda_graph_mode_no_cheaper_for_the_host():
    capture = _compile_capture()
    slow = capture["payload"]["results"]["small"]["reduce-overhead"]
    slow.update(
        host_ms=0.109, kernels=["void at::native::multi_tensor_apply_kernel<Copy>(x)", "nvjet_sm90_a"]
    )
    text = " ".join(strategy.compile_reading(capture).split())
    assert "reduce-overhead: GPU 30 µs (1.00x eager's), host 109 µs (1.09x): host-bound, 0.92x eager" in text
    assert "GEMMs: cuBLAS 1; copies x into the graph's buffer" in text
    assert "its host time per call (109 µs) is not below eager's (100 µs for 1 launches" in text
    # The input's copy into the graph's buffer shows the graph replayed: the host's time is
    # torch.compile's own around the replay.
    assert "The graph did replay on each call" in text and "not to launching kernels" in text
    assert "it does not show which" not in text
    # Without that copy among its kernels, the reading cannot tell, and says so.
    slow.update(kernels=["nvjet_sm90_a"])
    text = " ".join(strategy.compile_reading(capture).split())
    assert "it does not show which" in text and "did replay" not in text


def test_compile_reading_of_the_committed_captures():
    for gpu in hardware.gpus():
        capture = captures.load("compile_modes", gpu)
        text = " ".join(strategy.compile_reading(capture).split())
        assert text.startswith(f"{short_gpu_name(capture['provenance']['gpu'])}: ")
        for results in capture["payload"]["results"].values():
            eager = results["eager"]
            for mode, e in results.items():
                if mode == "eager" or e["status"] != "ok":
                    continue
                bound = "host" if e["host_ms"] > e["gpu_ms"] else "GPU"
                ratio = max(eager["gpu_ms"], eager["host_ms"]) / max(e["gpu_ms"], e["host_ms"])
                gemms = strategy.gemm_kernels([strategy.short_kernel(k) for k in e["kernels"]])
                expected = (
                    f"{mode}: GPU {e['gpu_ms'] * 1e3:.0f} µs ({e['gpu_ms'] / eager['gpu_ms']:.2f}x eager's), "
                    f"host {e['host_ms'] * 1e3:.0f} µs ({e['host_ms'] / eager['host_ms']:.2f}x): "
                    f"{bound}-bound, {ratio:.2f}x eager; GEMMs: "
                    + ", ".join(f"{who} {n}" for who, n in gemms.items())
                )
                assert expected in text, (gpu, mode)


def test_matmul_sweep_figure_refuses_a_dtype_the_sweep_did_not_time():
    with pytest.raises(ValueError, match="dtype must be one of"):
        strategy.matmul_sweep_figure("float64")


def test_gelu_at_largest_gives_the_eager_formulas_share_of_its_roof_on_the_bytes_it_moves():
    from gpuperf.bench import metrics

    result = load(cat.GELU)
    n = strategy.LARGEST
    row = result.rows("naive", dtype="float32")[n]
    entry = result.record["ceilings"][row["ceiling"]]
    # GB/s of a record count the fused kernel's bytes: scale to the bytes eager moves.
    scale = metrics.gelu_eager_bytes(n, 4) / metrics.elementwise_bytes(n, 4, n_inputs=1)
    real = row["value"] * scale / entry["value"]
    text = strategy.gelu_at_largest(result)
    named = ceiling_label(row["ceiling"], entry)
    assert f"{percent(real)} of the {named} on the bytes it really moves" in text
    # The table's heading names the roof its shares are of, from the record, with its value.
    assert f"% of the {named} measured in the same run, {format_rate(entry['value'], 'GB/s')}" in text
    short = row["ceiling"].removesuffix("_gbps")
    fused = result.rows("triton", dtype="float32")[n]
    assert f"triton µs (% of {short})" in text
    assert f"{fused['ms'] * 1e3:.0f} ({percent(fused['value'] / entry['value'])})" in text
    assert "the eager formula in bfloat16: mismatch" in text


def test_persistent_ladder_gives_each_rung_against_cublas():
    result = load(cat.MATMUL_PERSISTENT)
    text = strategy.persistent_ladder(result)
    line = next(line for line in text.splitlines() if "4096³" in line)
    expected = [f"{result.ratios(key)[SQUARE]:.2f}" for key, _ in strategy.LADDER]
    assert line.split()[-len(expected) :] == expected


def test_matmul_vs_cublas_names_the_ceiling_its_shares_are_of():
    matmul = load(cat.MATMUL)
    text = strategy.matmul_vs_cublas(matmul)
    share = matmul.fraction_of_ceiling(dtype="bfloat16")[SQUARE]
    assert (
        f"ours / cuBLAS {matmul.ratios(dtype='bfloat16')[SQUARE]:.2f}x, {percent(share)} of the ceiling"
        in text
    )
    # The ceiling is named from the record's own entry (its call and the shape that set it).
    entry = matmul.record["ceilings"]["bf16_tflops"]
    named = (
        f"the ceiling, same run: {hardware.ceiling_label('bf16_tflops', entry)}, {entry['value']:.0f} TFLOP/s"
    )
    assert named in " ".join(text.split())


def test_tuned_vs_max_autotune_reads_the_bf16_sweep_only():
    text = strategy.tuned_vs_max_autotune(load(cat.MATMUL))
    sweep = tuning.read_tuning(records.reference_gpu())
    for shape in strategy.SQUARES:
        ok = [
            t["tflops"]
            for t in sweep["trials"]
            if tuple(t["shape"]) == shape and t["dtype"] == "bfloat16" and t["status"] == "ok"
        ]
        line = f"{format_x(shape)}: worst / best = {min(ok) / max(ok):.2f} over {len(ok)} configs"
        assert line in text
    assert "tuning sweep, bf16:" in text
