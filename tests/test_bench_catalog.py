"""Benchmark declarations: what they must say, and the helpers the runner and pages use."""

import dataclasses

import pytest

from gpuperf.bench import catalog, runs
from gpuperf.bench.catalog import Provider, call
from tests.test_bench_records import HOST_LIKE, MATMUL_LIKE

_TRITON = catalog.VECTOR_ADD.providers[0]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"baseline": "cublas"}, "baseline must be one of the provider keys"),
        ({"providers": (_TRITON, _TRITON)}, "providers must have unique keys"),
        ({"providers": ()}, "providers must not be empty"),
        ({"metric": "GFLOP/s"}, "metric must be one of"),
        ({"timer": "wall"}, "timer must be one of"),
        ({"x_values": ()}, "x_values must be a non-empty tuple"),
        ({"x_values": (1, "two")}, "x_values must be .* all of one kind"),
        ({"x_values": ([1, 2, 3],)}, "x_values must be"),
        ({"x_values": (4, 4)}, "x_values must be unique"),
        ({"axes": (("dtype", ()),)}, "axes: 'dtype' needs a non-empty tuple"),
        ({"axes": (("dtype", ("a",)), ("dtype", ("b",)))}, "axes must have unique names"),
        ({"axes": (("device", ("cuda",)),)}, "axes must have unique names other than"),
        ({"ceiling": "hbm_gbps"}, "ceiling must be a key of"),
        ({"ceiling": "bf16_tflops"}, "ceiling 'bf16_tflops' is in TFLOP/s, not in the metric GB/s"),
        ({"ceiling": lambda: "nope"}, "ceiling must be a key of"),
        ({"metric": "us/call"}, "ceiling 'stream_gbps' is in GB/s, not in the metric us/call"),
        (
            {"axes": (("dtype", ("float32",)),), "ceiling": lambda: "copy_gbps"},
            r"ceiling\(dtype='float32'\) failed",
        ),
        ({"compute_roof": "copy_gbps"}, "compute_roof must be one of"),
        ({"compute_roof": "tf32_tflops"}, "compute_roof must be one of"),
        (
            {"axes": (("dtype", ("float32",)),), "compute_roof": lambda: "bf16_tflops"},
            r"compute_roof\(dtype='float32'\) failed",
        ),
        ({"quick": (("size", (4096,)),)}, "quick: 'size' is neither the x"),
        ({"quick": (("n_elements", (3,)),)}, "quick: 'n_elements' needs distinct values among"),
        ({"quick": (("n_elements", ()),)}, "quick: 'n_elements' needs distinct values"),
        ({"quick": (("n_elements", (4096,)), ("n_elements", (8192,)))}, "quick must name each"),
        ({"quick": (("provider", ("triton", "cuda")),)}, "quick: 'provider' needs distinct values among"),
        ({"quick": (("provider", ("triton",)),)}, "must keep the baseline 'torch'"),
    ],
    ids=lambda v: next(iter(v)) if isinstance(v, dict) else None,
)
def test_inconsistent_declarations_are_refused(change, field):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(catalog.VECTOR_ADD, **change)


def test_a_quick_sweep_keeps_the_declared_values_it_names_in_declared_order():
    attention = catalog.ATTENTION_FORWARD
    xs, combos = attention.sweep(quick=True)
    assert xs == (4096, 16384)
    assert [c["dtype"] for c in combos] == ["float16"] * 4
    masks = [(c["head_dim"], c["causal"]) for c in combos]
    assert masks == [(64, False), (64, True), (128, False), (128, True)]
    assert attention.sweep() == (attention.x_values, attention.combos())
    # Without a quick part, a quick run is the whole sweep.
    assert catalog.VECTOR_ADD.sweep(quick=True) == (catalog.VECTOR_ADD.x_values, [{}])
    reordered = dataclasses.replace(catalog.VECTOR_ADD, quick=(("n_elements", (2**20, 2**12)),))
    assert reordered.sweep(quick=True)[0] == (2**12, 2**20)


def test_a_quick_run_measures_the_providers_it_names_in_declared_order():
    attention = catalog.ATTENTION_FORWARD
    assert [p.key for p in attention.measured_providers(quick=True)] == ["triton", "flash", "cudnn", "naive"]
    assert attention.measured_providers() == attention.providers
    assert catalog.VECTOR_ADD.measured_providers(quick=True) == catalog.VECTOR_ADD.providers
    # 2 sequence lengths x 4 masks x 4 providers, of 6 x 8 x 7 in the whole sweep.
    assert runs.points(attention, quick=True) == 32 and runs.points(attention) == 336


def test_combos_without_axes():
    assert catalog.VECTOR_ADD.combos() == [{}]
    assert catalog.VECTOR_ADD.ceiling_key() == "stream_gbps"
    assert HOST_LIKE.ceiling_key() is None


def test_combos_cover_every_combination_in_declared_order():
    bench = dataclasses.replace(
        MATMUL_LIKE,
        axes=(("dtype", ("float16", "bfloat16")), ("bias", (False, True))),
        ceiling=lambda dtype, bias: MATMUL_LIKE.ceiling_key(dtype=dtype),
    )
    assert bench.combos() == [
        {"dtype": "float16", "bias": False},
        {"dtype": "float16", "bias": True},
        {"dtype": "bfloat16", "bias": False},
        {"dtype": "bfloat16", "bias": True},
    ]


def test_ceiling_key_follows_the_axes():
    assert MATMUL_LIKE.ceiling_key(dtype="float16") == "fp16_tflops"
    assert MATMUL_LIKE.ceiling_key(dtype="bfloat16") == "bf16_tflops"


def test_compute_roof_names_the_engine_of_a_benchmark_read_against_a_bandwidth():
    # An elementwise kernel computes on the CUDA cores in float32, whatever it stores.
    assert catalog.VECTOR_ADD.compute_roof is None
    assert catalog.VECTOR_ADD.compute_roof_key() == "fp32_tflops"
    # A bfloat16 matmul with a small dimension is read in GB/s, but computes on the tensor cores.
    assert catalog.MATMUL_SMALL_M.ceiling_key() == "stream_gbps"
    assert catalog.MATMUL_SMALL_M.compute_roof_key() == "bf16_tflops"
    for bench in (catalog.ATTENTION_DECODE, catalog.LLAMA_DECODE):
        assert {bench.compute_roof_key(**c) for c in bench.combos()} == {"bf16_tflops"}
    # A benchmark read in TFLOP/s is bounded by its own ceiling, whatever compute_roof says.
    both = dataclasses.replace(MATMUL_LIKE, compute_roof="fp32_tflops")
    assert both.compute_roof_key(dtype="float16") == "fp16_tflops"
    by_axes = dataclasses.replace(
        catalog.VECTOR_ADD,
        axes=(("dtype", ("float32", "bfloat16")),),
        compute_roof=lambda dtype: "bf16_tflops",
    )
    assert by_axes.compute_roof_key(dtype="float32") == "bf16_tflops"


def test_subject_is_the_first_provider():
    assert MATMUL_LIKE.subject.key == "triton"
    assert MATMUL_LIKE.providers[0].config(None, None) == {"BLOCK_M": 128}
    assert Provider("x", "x", call(abs)).config is None


def test_call_makes_a_zero_argument_function():
    fn = call(lambda a, b: a - b)(5, 3)
    assert fn() == 2


def test_catalog_entries_count_bytes_and_flops():
    assert catalog.VECTOR_ADD.bytes(1000) == 12_000 and catalog.VECTOR_ADD.flops(1000) == 1000
    assert catalog.SOFTMAX.bytes(256) == 2 * catalog.SOFTMAX_ROWS * 256 * 4
    assert catalog.SOFTMAX.flops(256) == 5 * catalog.SOFTMAX_ROWS * 256
    assert catalog.SOFTMAX_LONG.flops(65536) == 5 * catalog.SOFTMAX_LONG_ROWS * 65536
    assert {b.ceiling for b in (catalog.VECTOR_ADD, catalog.SOFTMAX, catalog.SOFTMAX_LONG)} == {"stream_gbps"}
    m = catalog.MATMUL
    assert m.flops((8192, 14336, 4096), dtype="bfloat16") == 2 * 8192 * 14336 * 4096
    assert m.bytes((16, 14336, 4096), dtype="float16") == 2 * (16 * 4096 + 4096 * 14336 + 16 * 14336)
    assert [m.ceiling_key(**c) for c in m.combos()] == ["fp16_tflops", "bf16_tflops"]
    assert m.reduction((64, 32, 16), dtype="float16") == 16
    assert catalog.MATMUL_EPILOGUE.bytes((4, 8, 16)) == 2 * (4 * 16 + 16 * 8 + 4 * 8 + 8)
    assert catalog.HOST_OVERHEAD.ceiling is None and catalog.HOST_OVERHEAD.timer == "host"


def test_by_name():
    assert catalog.by_name("softmax") is catalog.SOFTMAX
    with pytest.raises(KeyError, match="known"):
        catalog.by_name("nope")
