"""The Gluon FlashAttention-3 forward: its checks and errors on any machine, its compiled
schedule for sm_90 on a CPU (Triton's compiler and ptxas run without a GPU), and its
output on a Hopper GPU against the float32 reference at odd shapes, for every rung."""

import re

import pytest
import torch

from gpuperf.kernels.gluon import FA3Config, attention_fa3
from gpuperf.reference import attention_ref
from gpuperf.testing import assert_close
from tests._params import changed_call, ptxas_report, randn
from tests.conftest import DEVICE


def qkv(shape, dtype=torch.float16, device=DEVICE, seed=0):
    b, h, h_kv, s_q, s_k, d = shape
    return (
        randn((b, h, s_q, d), dtype, seed=seed).to(device),
        randn((b, h_kv, s_k, d), dtype, seed=seed + 1).to(device),
        randn((b, h_kv, s_k, d), dtype, seed=seed + 2).to(device),
    )


# --- checks and errors (any machine) --------------------------------------------------------


@pytest.mark.parametrize(
    "change, error, match",
    [
        pytest.param({"q": lambda t: t.float()}, TypeError, "dtype float32", id="fp32"),
        pytest.param({"k": lambda t: t.bfloat16()}, TypeError, "same dtype|dtype", id="mixed"),
        pytest.param({"q": lambda t: t[0]}, ValueError, "must be 4-D", id="3d"),
        pytest.param({"q": lambda t: t[..., :32], "k": lambda t: t[..., :32], "v": lambda t: t[..., :32]},
                     ValueError, "head dim 32 is not supported", id="d32"),
        pytest.param({"k": lambda t: t[:, :, :5]}, ValueError, "same shape", id="kv"),
        pytest.param({"q": lambda t: t[:, :3]}, ValueError, "multiple of the key/value heads", id="gqa"),
        pytest.param({"causal": 1}, TypeError, "causal must be a bool", id="causal"),
        pytest.param({"scale": -1.0}, ValueError, "scale must be positive", id="scale"),
        pytest.param({"scale": "0.1"}, TypeError, "scale must be a number", id="scale-str"),
        pytest.param({"config": {"overlap": True}}, TypeError, "config must be an FA3Config", id="config"),
        pytest.param({"q": lambda t: torch.cat([t, t], -1), "k": lambda t: torch.cat([t, t], -1),
                      "v": lambda t: torch.cat([t, t], -1), "config": FA3Config(consumers=3)},
                     ValueError, "consumers=3 is for head dim 64", id="c3-d128"),
    ],
)  # fmt: skip
def test_bad_arguments_are_named(change, error, match):
    q, k, v = qkv((1, 4, 2, 8, 8, 64))
    args = {"q": q, "k": k, "v": v}
    args, kwargs = changed_call(args, change)
    with pytest.raises(error, match=match):
        attention_fa3(*args, **kwargs)


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"block_n": 96}, "block_n must be 64 or 128"),
        ({"num_stages": 1}, "num_stages must be None or an int >= 2"),
        ({"overlap": 1}, "overlap must be a bool"),
        ({"pingpong": None}, "pingpong must be a bool"),
        ({"persistent": "yes"}, "persistent must be a bool or None"),
        ({"consumer_registers": 250}, "consumer_registers must be None or a multiple of 8"),
        ({"consumers": 4}, "consumers must be 2 or 3"),
    ],
)
def test_bad_configs_are_named(fields, match):
    with pytest.raises(ValueError, match=match):
        FA3Config(**fields)


def test_register_budgets_leave_the_producer_its_24():
    assert FA3Config().registers_for(128) == (240, 24)
    assert FA3Config(consumers=3).registers_for(64) == (160, 32)
    with pytest.raises(ValueError, match="leave the producer 8 registers"):
        FA3Config(consumer_registers=248).registers_for(64)


def test_the_interpreter_gets_a_clear_error(monkeypatch):
    """Gluon compiles for the hardware: under TRITON_INTERPRET=1 the call raises, after its
    arguments were checked, instead of running anything."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    q, k, v = qkv((1, 2, 2, 8, 8, 64), device="cpu")
    with pytest.raises(RuntimeError, match="Gluon kernel, which Triton's interpreter"):
        attention_fa3(q, k, v)
    with pytest.raises(ValueError, match="head dim 16 is not supported"):
        attention_fa3(q[..., :16], k[..., :16], v[..., :16])


def test_a_cpu_tensor_without_the_interpreter_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = qkv((1, 2, 2, 8, 8, 64), device="cpu")
    with pytest.raises(ValueError, match="q must be on a CUDA device"):
        attention_fa3(q, k, v)


def test_a_trace_gets_a_clear_error(monkeypatch):
    """The kernel takes host TMA descriptors, which a graph cannot hold: on a trace's tensors
    (fake, as torch.compile traces) the op says so instead of failing inside the trace. (The
    Hopper check is passed over here, on the CPU, to reach it.)"""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuperf.kernels.gluon import attention as module

    monkeypatch.setattr(module, "require_gluon_hopper", lambda name, t: None)
    monkeypatch.setattr(module, "check_kernel_device", lambda name, t: None)
    # (Tensors of the device the tests run on: its checks ask for a kernel's device.)
    real = qkv((1, 2, 2, 8, 8, 64))
    with FakeTensorMode() as mode:
        q, k, v = (mode.from_tensor(t) for t in real)
        with pytest.raises(RuntimeError, match=r"attention_fa3 cannot run inside torch\.compile"):
            attention_fa3(q, k, v, causal=True, config=FA3Config(num_stages=2))


# --- the schedule, compiled for sm_90 here ---------------------------------------------------

#: The ladder's rungs (all warp-specialized: a producer warp and two consumer warpgroups).
RUNGS = {
    "fa2-order": FA3Config(overlap=False, persistent=False),
    "overlap": FA3Config(persistent=False),
    "pingpong": FA3Config(pingpong=True, persistent=False),
    "persistent": FA3Config(persistent=True),
}


def _compile(config: FA3Config, head_dim=128, causal=False) -> dict:
    """The kernel compiled for sm_90 (no GPU needed, in a process of its own) at a
    grouped-query shape like the benchmark's (sequence lengths that are multiples of 16, as
    Triton specializes them): its PTX and shared memory."""
    from dataclasses import asdict

    from gpuperf.kernels.gluon.offline import compile_attention_fa3

    return compile_attention_fa3(asdict(config), (2, 8, 2, 4096, 4096, head_dim), causal=causal)


def _spilled(report: str) -> int:
    return int(re.search(r"(\d+) bytes spill stores", report).group(1))


#: Spill stores ptxas may emit. At D 128 the overlapped consumer holds the output tile, the
#: scores of tile j and the probabilities of tile j - 1 (64 + 64 + 32 registers a thread)
#: beside its row statistics and addresses in 240 registers, and ptxas spills 4 to 12 bytes
#: (one to three registers) of it; 240 is the most the producer's 24 leave (3 x 168 a lane).
MAX_SPILL_BYTES = 16


def _waits(ptx: str) -> list[str]:
    return [line.strip() for line in ptx.splitlines() if "wgmma.wait_group" in line]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_overlap_keeps_p_v_in_flight_during_the_softmax(head_dim, causal):
    """As compiled: the consumers wait for the scores with the second GEMM still running
    (``wgmma.wait_group 1``), the producer warp gives its registers to the consumers
    (``setmaxnreg``: 24 and 240), P is the register operand of ``P V``, and ptxas keeps
    every wgmma asynchronous (no C7514 note) and spills at most a few registers."""
    ptx = _compile(FA3Config(), head_dim, causal)["ptx"]
    assert "wgmma.wait_group.sync.aligned 1;" in _waits(ptx)
    assert "setmaxnreg.dec.sync.aligned.u32 \t24;" in ptx and "setmaxnreg.inc.sync.aligned.u32 \t240;" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{head_dim}k16.f32.f16.f16" in ptx
    report = ptxas_report(ptx)
    assert "C7514" not in report and "serialized" not in report, report
    assert _spilled(report) <= MAX_SPILL_BYTES, report


def test_fa2_order_waits_for_both_gemms():
    """FlashAttention-2's order, the ladder's first rung: every wait drains the tensor cores."""
    waits = _waits(_compile(RUNGS["fa2-order"])["ptx"])
    assert waits and all(w == "wgmma.wait_group.sync.aligned 0;" for w in waits)


@pytest.mark.parametrize("rung", ["pingpong", "persistent"])
def test_the_upper_rungs_compile_without_serialization(rung):
    report = ptxas_report(_compile(RUNGS[rung])["ptx"])
    assert "C7514" not in report and _spilled(report) <= MAX_SPILL_BYTES, report


def test_three_consumers_compile_at_d64():
    """Four warpgroups share 128 registers a thread: consumers 160 each, the producer 32.
    (ptxas spills more at 160 than at 240: the option's cost, measured in the tutorial.)"""
    compiled = _compile(FA3Config(consumers=3), head_dim=64)
    assert compiled["worker_registers"] == [160, 160, 32]
    assert "C7514" not in ptxas_report(compiled["ptx"])


@pytest.mark.parametrize("head_dim, stages", [(128, 3), (64, 4)])
def test_the_ring_fits_in_shared_memory(head_dim, stages):
    """Q's two 64-row tiles and ``stages`` slots of K and V tiles (128 keys each)."""
    shared = _compile(FA3Config(), head_dim)["shared"]
    assert (2 * 64 + stages * 2 * 128) * head_dim * 2 <= shared <= 227 * 1024


# --- on a Hopper GPU ------------------------------------------------------------------------

# (batch, heads, kv heads, S_q, S_k, head dim): a single query, sequences off every tile,
# S_q != S_k, grouped-query and multi-query heads, both head dims.
SHAPES = [
    pytest.param((1, 1, 1, 1, 1, 64), id="single"),
    pytest.param((2, 4, 2, 300, 300, 128), id="gqa-S300"),
    pytest.param((1, 8, 1, 130, 777, 64), id="mqa-Sq130-Sk777"),
    pytest.param((1, 2, 2, 1, 513, 128), id="Sq1-Sk513"),
    pytest.param((2, 3, 3, 65, 65, 64), id="S65"),
    pytest.param((1, 2, 2, 1024, 1024, 128), id="S1024"),
]
CONFIGS = {
    **RUNGS,
    "n64": FA3Config(block_n=64),
    "s2": FA3Config(num_stages=2),
    "c3": FA3Config(consumers=3),
    "c3-pingpong": FA3Config(consumers=3, pingpong=True, persistent=False),
}


def _hopper():
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("Gluon's wgmma kernels run on Hopper only")


@pytest.mark.gpu
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", SHAPES)
def test_gpu_matches_the_reference(shape, causal, config):
    _hopper()
    if causal and shape[3] != shape[4]:
        pytest.skip("causal needs S_q == S_k")
    if config.consumers == 3 and shape[5] != 64:
        pytest.skip("three consumers hold D 64 tiles only")
    q, k, v = qkv(shape, seed=sum(shape))
    out = attention_fa3(q, k, v, causal=causal, config=config)
    assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
    assert_close("attention_fa3", attention_ref(q, k, v, causal), out, k=shape[4])


@pytest.mark.gpu
def test_gpu_strided_bfloat16_and_scale():
    """A (B, S, H, D) layout read in place through TMA, bfloat16, a given scale; and a
    last-dimension stride TMA cannot take, copied first."""
    _hopper()
    q = randn((2, 200, 4, 128), torch.bfloat16, seed=1).cuda().transpose(1, 2)
    k = randn((2, 200, 2, 128), torch.bfloat16, seed=2).cuda().transpose(1, 2)
    v = randn((2, 200, 2, 128), torch.bfloat16, seed=3).cuda().transpose(1, 2)
    out = attention_fa3(q, k, v, causal=True, scale=0.05)
    assert_close("strided", attention_ref(q, k, v, True, 0.05), out, k=200)
    q2 = randn((1, 2, 100, 64, 2), torch.float16, seed=4).cuda()[..., 0]
    k2, v2 = (randn((1, 2, 90, 64), torch.float16, seed=s).cuda() for s in (5, 6))
    assert_close("copied", attention_ref(q2, k2, v2), attention_fa3(q2, k2, v2), k=90)


@pytest.mark.gpu
def test_gpu_a_second_call_launches_from_the_plan():
    """Inputs like ones already checked launch from their plan, which describes the new inputs
    and the output again (the config's optional fields, None or set, each a plan of its own);
    an input that had to be copied leaves none."""
    _hopper()
    plans = attention_fa3.plans
    plans.clear()
    for config in (None, FA3Config(num_stages=2, persistent=False, consumer_registers=232)):
        for seed in (0, 1):
            q, k, v = qkv((2, 4, 2, 300, 300, 128), seed=seed)
            out = attention_fa3(q, k, v, causal=True, config=config)
            assert_close("attention_fa3", attention_ref(q, k, v, True), out, k=300)
    assert len(plans) == 2
    plans.clear()
    q, k, v = qkv((1, 2, 2, 100, 100, 64))
    strided = randn((1, 2, 100, 64, 2), torch.float16, seed=7).cuda()[..., 0]  # last stride 2: copied
    assert_close("copied", attention_ref(strided, k, v), attention_fa3(strided, k, v), k=100)
    assert len(plans) == 0


@pytest.mark.gpu
def test_gpu_torch_compile_gets_a_clear_error():
    _hopper()
    q, k, v = qkv((1, 2, 2, 64, 64, 64))
    compiled = torch.compile(attention_fa3, fullgraph=True)
    with pytest.raises(Exception, match=r"attention_fa3 cannot run inside torch\.compile"):
        compiled(q, k, v)
