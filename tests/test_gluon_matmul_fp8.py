"""The Gluon FP8 matmul with promoted accumulation: its checks and errors on any machine, its
compiled schedule for sm_90 on a CPU (Triton's compiler and ptxas run without a GPU), and
its results on a Hopper GPU against the float64 product and cuBLASLt's error."""

import os

import pytest
import torch

from gpuperf.bench.catalog import fp8_check_k
from gpuperf.kernels import device, to_fp8
from gpuperf.kernels.gluon import SCHEDULES, GluonFP8Config, matmul_fp8_promoted
from gpuperf.reference import matmul_fp8_ref
from gpuperf.testing import assert_close
from tests._params import assert_close_fp8, changed_call, ptxas_report
from tests.conftest import DEVICE

E4M3 = torch.float8_e4m3fn


def operands(m, n, k, *, device=DEVICE, axis=None, seed=0):
    """e4m3 ``a`` (M, K) row-major and ``b`` (K, N) column-major with their scales."""
    g = torch.Generator().manual_seed(seed)
    a, scale_a = to_fp8(torch.randn(m, k, generator=g).to(device), axis=axis)
    bt, scale_bt = to_fp8(torch.randn(n, k, generator=g).to(device), axis=axis)
    return a, bt.t(), scale_a, scale_bt.t()


# --- checks and errors (any machine) --------------------------------------------------------


@pytest.mark.parametrize(
    "change, error, match",
    [
        pytest.param({"a": lambda a: a.float()}, TypeError, "a has dtype float32; supported", id="a-fp32"),
        pytest.param({"b": lambda b: b.to(torch.int8)}, TypeError, "b has dtype int8; supported", id="int8"),
        pytest.param({"a": lambda a: a[:, :16]}, ValueError, "inner dimensions must match", id="inner"),
        pytest.param({"a": lambda a: a[0]}, ValueError, "must be 2-D", id="1d"),
        pytest.param({"scale_a": lambda s: torch.ones(3)}, ValueError, "scale_a must have shape", id="scale"),
        pytest.param({"scale_b": lambda s: s.double()}, TypeError, "scale_b must be float32", id="fp64"),
        pytest.param({"scale_a": lambda s: 2.0}, TypeError, "scale_a must be a torch.Tensor", id="scale-py"),
        pytest.param({"out_dtype": torch.int32}, TypeError, "out_dtype must be one of", id="out-dtype"),
        pytest.param({"config": {"block_m": 128}}, TypeError, "config must be a GluonFP8Config", id="config"),
    ],
)  # fmt: skip
def test_bad_arguments_are_named(change, error, match):
    a, b, scale_a, scale_b = operands(8, 8, 32)
    args = {"a": a, "b": b, "scale_a": scale_a, "scale_b": scale_b}
    args, kwargs = changed_call(args, change)
    with pytest.raises(error, match=match):
        matmul_fp8_promoted(*args, **kwargs)


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"schedule": "fast"}, "schedule must be one of"),
        ({"block_m": 64}, "block_m must be 16 \\* num_warps"),
        ({"num_warps": 6, "block_m": 96}, "block_m must be 16 \\* num_warps"),
        ({"block_n": 96}, "block_n must be a power of two"),
        ({"block_k": 48}, "block_k a multiple of 32"),
        ({"num_stages": 0}, "num_stages must be a positive int"),
        ({"group_m": 2.0}, "group_m must be a positive int"),
        ({"tma_store": 1}, "tma_store must be a bool"),
    ],
)
def test_bad_configs_are_named(fields, match):
    with pytest.raises(ValueError, match=match):
        GluonFP8Config(**fields)


def test_the_interpreter_gets_a_clear_error(monkeypatch):
    """Gluon compiles for the hardware: under TRITON_INTERPRET=1 the call raises, after its
    arguments were checked, instead of running anything."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    a, b, scale_a, scale_b = operands(8, 8, 32, device="cpu")
    with pytest.raises(RuntimeError, match="Gluon kernel, which Triton's interpreter"):
        matmul_fp8_promoted(a, b, scale_a, scale_b)
    with pytest.raises(TypeError, match="a has dtype float32; supported"):
        matmul_fp8_promoted(a.float(), b, scale_a, scale_b)


def test_a_cpu_tensor_without_the_interpreter_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    a, b, scale_a, scale_b = operands(8, 8, 32, device="cpu")
    with pytest.raises(ValueError, match="a must be on a CUDA device"):
        matmul_fp8_promoted(a, b, scale_a, scale_b)


def test_a_trace_gets_a_clear_error(monkeypatch):
    """The kernel takes host TMA descriptors, which a graph cannot hold: on a trace's tensors
    (fake, as torch.compile traces) the op says so instead of failing inside the trace. (The
    Hopper check is passed over here, on the CPU, to reach it.)"""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuperf.kernels.gluon import matmul_fp8 as module

    monkeypatch.setattr(module, "require_gluon_hopper", lambda name, t: None)
    monkeypatch.setattr(module, "check_kernel_device", lambda name, t: None)
    real = operands(8, 8, 32, device="cpu")
    with FakeTensorMode() as mode:
        a, b, scale_a, scale_b = (mode.from_tensor(t) for t in real)
        with pytest.raises(RuntimeError, match=r"matmul_fp8_promoted cannot run inside torch\.compile"):
            matmul_fp8_promoted(a, b, scale_a, scale_b)


# --- the schedule, compiled for sm_90 here ---------------------------------------------------


def _compile(config: GluonFP8Config, m=300, n=200, k=512, axis=None) -> dict:
    """The kernel compiled for sm_90 (no GPU needed, in a process of its own): its PTX and
    shared memory."""
    from dataclasses import asdict

    from gpuperf.kernels.gluon.offline import compile_matmul_fp8

    return compile_matmul_fp8(asdict(config), m, n, k, row_scales=axis is not None)


@pytest.mark.parametrize("axis", [None, -1], ids=["tensor", "row"])
def test_pingpong_keeps_one_mma_in_flight_while_it_promotes(axis):
    """The overlapped schedule, as compiled: each step waits until one wgmma group is left
    (``wgmma.wait_group 1``: the step before has finished, this one runs on), ptxas keeps
    the wgmma instructions asynchronous (no C7514 'serialized' note) and spills nothing."""
    ptx = _compile(GluonFP8Config(), axis=axis)["ptx"]
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx
    report = ptxas_report(ptx)
    assert "C7514" not in report and "serialized" not in report, report
    assert "0 bytes spill stores" in report, report


def test_drain_waits_for_every_mma():
    """Triton's schedule, as the ladder's first rung: every wait drains the tensor cores."""
    ptx = _compile(GluonFP8Config(schedule="drain"))["ptx"]
    waits = [line.strip() for line in ptx.splitlines() if "wgmma.wait_group" in line]
    assert waits and all(w == "wgmma.wait_group.sync.aligned 0;" for w in waits)


def test_the_ring_fits_in_shared_memory():
    """Four slots of 128 x 128 FP8 tiles of A and B (32 KiB each) and their barriers."""
    shared = _compile(GluonFP8Config())["shared"]
    assert 4 * 2 * 128 * 128 <= shared <= 227 * 1024


# --- on a Hopper GPU ------------------------------------------------------------------------

#: Rows of the output off and on TMA's 16-byte rule (N = 264: stored by TMA, tiles clipped).
ODD_SHAPES = [
    (1, 1, 16),
    (1, 17, 32),
    (130, 70, 208),
    (130, 264, 208),
    (257, 136, 4112),
    (33, 300, 144),
    (300, 257, 1040),
]
#: Both schedules, tiles stored by TMA or from the registers, persistent or a program a tile.
CONFIGS = {
    f"{schedule}-{'tma' if tma_store else 'registers'}-{'persistent' if persistent else 'grid'}": (
        GluonFP8Config(schedule=schedule, tma_store=tma_store, persistent=persistent)
    )
    for schedule in SCHEDULES
    for tma_store in (True, False)
    for persistent in (True, False)
}


@pytest.mark.gpu
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("axis", [None, -1], ids=["tensor", "row"])
@pytest.mark.parametrize("m, n, k", ODD_SHAPES, ids=["x".join(map(str, s)) for s in ODD_SHAPES])
def test_gpu_matches_the_float64_product(m, n, k, axis, config):
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma kernels run on Hopper only")
    a, b, scale_a, scale_b = operands(m, n, k, axis=axis, seed=m + n)
    out = matmul_fp8_promoted(a, b, scale_a, scale_b, config=config)
    assert out.shape == (m, n) and out.dtype == torch.bfloat16 and out.is_contiguous()
    assert_close("gluon fp8", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=fp8_check_k(k, "float32"))


@pytest.mark.gpu
@pytest.mark.parametrize("out_dtype", [torch.float16, torch.float32])
def test_gpu_other_outputs_and_layouts(out_dtype):
    """float16 and float32 outputs; a column-major ``a`` and a row-major ``b`` (copied into
    the K-major layouts), an e5m2 operand, and K = 0."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma kernels run on Hopper only")
    a, b, scale_a, scale_b = operands(70, 90, 400, axis=-1)
    b5 = b.float().to(torch.float8_e5m2)
    a_col = a.t().contiguous().t()
    out = matmul_fp8_promoted(a_col, b5.contiguous(), scale_a, scale_b, out_dtype=out_dtype)
    assert out.dtype == out_dtype
    assert_close_fp8("gluon fp8", matmul_fp8_ref(a, b5, scale_a, scale_b), out, k=fp8_check_k(400, "float32"))
    empty = matmul_fp8_promoted(a[:, :0], b[:0], scale_a, scale_b, out_dtype=out_dtype)
    assert empty.shape == (70, 90) and not empty.any()


@pytest.mark.gpu
@pytest.mark.parametrize("axis", [None, -1], ids=["tensor", "row"])
def test_gpu_error_is_no_larger_than_cublaslt(axis):
    """Promoting every 128 products, as cuBLASLt does, the result is as close to the float64
    product as ``torch._scaled_mm``'s (default accumulation) on the same operands."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma kernels run on Hopper only")
    a, b, scale_a, scale_b = operands(1024, 1024, 8192, axis=axis)
    ref = matmul_fp8_ref(a, b, scale_a, scale_b)

    def error(out):
        return ((out.double() - ref).norm() / ref.norm()).item()

    ours = error(matmul_fp8_promoted(a, b, scale_a, scale_b))
    cublaslt = error(torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16))
    assert ours <= cublaslt * 1.01, (ours, cublaslt)


@pytest.mark.gpu
def test_gpu_other_than_hopper_gets_a_clear_error(monkeypatch):
    """An Ada GPU (8.9: FP8 tensor cores, no wgmma). The kernels keep a device's capability
    and the plans of inputs already checked, so both are dropped before and after."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 9))
    device.forget()
    matmul_fp8_promoted.plans.clear()
    a, b, scale_a, scale_b = operands(8, 8, 32)
    try:
        with pytest.raises(RuntimeError, match="written for Hopper"):
            matmul_fp8_promoted(a, b, scale_a, scale_b)
    finally:
        monkeypatch.undo()
        device.forget()


def _fake_ptxas(path, reads: str):
    """A ``ptxas`` that assembles PTX of ``.version`` ``reads`` only, as CUDA's does."""
    path.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in *.ptx) f="$a";; esac; done\n'
        f'if grep -q "^.version {reads}" "$f"; then echo "ptxas info : Used 90 registers"; exit 0; fi\n'
        "echo \"ptxas $f, line 5; fatal   : Unsupported .version 9.0; current version is '8.7'\" >&2\n"
        "exit 255\n"
    )
    path.chmod(0o755)
    return str(path)


def test_ptxas_report_finds_a_ptxas_that_reads_the_ptx_version(tmp_path, monkeypatch):
    """A second docs build on a GPU: the PTX comes from Triton's cache, written while Inductor
    had pointed TRITON_PTXAS_PATH at its newer ptxas (PTX 9.0), and Triton's own ptxas (8.7)
    refuses it. The report then takes the next ptxas that reads it."""
    from gpuperf.kernels.gluon import offline

    old, new = _fake_ptxas(tmp_path / "old", "8.7"), _fake_ptxas(tmp_path / "new", "9.0")
    monkeypatch.setattr(offline, "ptxas_candidates", lambda: [old, new])
    assert "Used 90 registers" in offline.ptxas_report(".version 9.0\n.target sm_90a\n")
    assert "Used 90 registers" in offline.ptxas_report(".version 8.7\n.target sm_90a\n")
    with pytest.raises(RuntimeError, match=r"Unsupported \.version"):
        offline.ptxas_report(".version 9.9\n")
    monkeypatch.setattr(offline, "ptxas_candidates", lambda: [])
    with pytest.raises(FileNotFoundError, match="no ptxas here"):
        offline.ptxas_report(".version 9.0\n")


def test_the_ptxas_candidates_start_with_the_one_triton_compiles_with():
    from triton.backends.nvidia.compiler import get_ptxas

    from gpuperf.kernels.gluon.offline import ptxas_candidates

    found = ptxas_candidates()
    assert len(found) == len(set(found))
    if os.path.isfile(get_ptxas(90).path):
        assert found[0] == get_ptxas(90).path


#: A stand-in for the compiling process (:func:`gpuperf.kernels.gluon.offline._serve`): each
#: request answered with the process's id, ``{"fail": ...}`` with an error, then the end.
_FAKE_SERVE = """
import json, os, sys
for line in sys.stdin:
    request = json.loads(line)
    if "fail" in request:
        print("what the compiler said", file=sys.stderr, flush=True)
        print(json.dumps({"error": request["fail"]}), flush=True)
        break
    print(json.dumps({"ptx": str(os.getpid()), "shared": 0, "worker_registers": []}), flush=True)
"""


def test_compiles_reuse_their_process_and_a_failed_one_ends_it(monkeypatch):
    """A compile takes an idle process started with the same environment (whichever test
    is running); one with another environment starts its own; a compile that fails raises
    with what the process said, and that process is not used again."""
    from gpuperf.kernels.gluon import offline

    monkeypatch.setattr(offline, "_SERVE", _FAKE_SERVE)
    monkeypatch.setattr(offline, "_IDLE", [])
    monkeypatch.setenv("GPUPERF_TEST_COMPILE", "a")
    first = offline.compile_matmul_fp8({}, 1, 1, 1)["ptx"]
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "another test")
    assert offline.compile_matmul_fp8({}, 1, 1, 1)["ptx"] == first
    monkeypatch.setenv("GPUPERF_TEST_COMPILE", "b")
    other = offline.compile_matmul_fp8({}, 1, 1, 1)["ptx"]
    assert other != first and len(offline._IDLE) == 2
    failed = r"the offline compile failed:\nbroken(.|\n)*what the compiler said"
    with pytest.raises(RuntimeError, match=failed):
        offline._compile_in_child({"fail": "broken"})
    assert len(offline._IDLE) == 1
    assert offline.compile_matmul_fp8({}, 1, 1, 1)["ptx"] not in (first, other)
    offline._close_idle()
    assert offline._IDLE == []


#: A stand-in for the compiling process that answers where it imported gpuperf from.
_WHERE_SERVE = """
import json, sys
import gpuperf
for line in sys.stdin:
    print(json.dumps({"ptx": gpuperf.__file__, "shared": 0, "worker_registers": []}), flush=True)
"""


def test_the_compiling_process_imports_this_gpuperf_from_any_folder(monkeypatch, tmp_path):
    """The child imports the package this process imported, also where ``PYTHONPATH`` names it
    relative to a folder the child is not in (a page run in a folder of its own)."""
    import gpuperf
    from gpuperf.kernels.gluon import offline

    monkeypatch.setattr(offline, "_SERVE", _WHERE_SERVE)
    monkeypatch.setattr(offline, "_IDLE", [])
    monkeypatch.setenv("PYTHONPATH", "src")
    monkeypatch.chdir(tmp_path)
    try:
        assert offline.compile_matmul_fp8({}, 1, 1, 1)["ptx"] == gpuperf.__file__
    finally:
        offline._close_idle()


@pytest.mark.gpu
def test_gpu_a_second_call_launches_from_the_plan():
    """Operands like ones already checked launch from their plan, which describes the new
    operands (and the output) again; an operand that had to be copied leaves none."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma kernels run on Hopper only")
    plans = matmul_fp8_promoted.plans
    for config in (GluonFP8Config(), GluonFP8Config(tma_store=False, schedule="drain")):
        plans.clear()
        for seed in (0, 1, 2):
            a, b, scale_a, scale_b = operands(300, 264, 1040, axis=-1, seed=seed)
            out = matmul_fp8_promoted(a, b, scale_a, scale_b, config=config)
            assert len(plans) == 1
            ref = matmul_fp8_ref(a, b, scale_a, scale_b)
            assert_close("gluon fp8", ref, out, k=fp8_check_k(1040, "float32"))
    plans.clear()
    a, b, scale_a, scale_b = operands(64, 64, 128)
    out = matmul_fp8_promoted(a, b.contiguous(), scale_a, scale_b)  # b row-major: copied
    assert len(plans) == 0
    assert_close("gluon fp8", matmul_fp8_ref(a, b, scale_a, scale_b), out, k=fp8_check_k(128, "float32"))


@pytest.mark.gpu
def test_gpu_torch_compile_gets_a_clear_error():
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma kernels run on Hopper only")
    a, b, scale_a, scale_b = operands(64, 64, 128)
    compiled = torch.compile(matmul_fp8_promoted, fullgraph=True)
    with pytest.raises(Exception, match=r"matmul_fp8_promoted cannot run inside torch\.compile"):
        compiled(a, b, scale_a, scale_b)
