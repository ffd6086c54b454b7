"""The MoE kernels' Hopper paths compiled for sm_90 here, without a GPU (Triton's compiler and
ptxas run on the CPU): each compiles, fits in shared memory, spills nothing, and keeps its
``wgmma`` instructions asynchronous (no ptxas C7514 note)."""

import pytest

from gpuperf.kernels._configs import SHARED_MEMORY_BYTES
from tests._params import compiled_offline, ptxas_report

#: Run in a process of its own without the interpreter (as gpuperf.kernels.gluon.offline
#: compiles): each kernel's launch as the op makes it, on CPU tensors (the device check
#: waived), compiled by ``warmup`` under the stand-in sm_90 driver. Prints ``{name: {"ptx",
#: "shared", "ttgir"}}``.
_COMPILE = r"""
import json, torch
from gpuperf.kernels import _validation
_validation.check_kernel_device = lambda name, t: None
from gpuperf.kernels import configs
from gpuperf.kernels.gluon.offline import hopper_target
from gpuperf.kernels.grouped_matmul import grouped_matmul_launches
from gpuperf.kernels.matmul_fp8_blockwise import matmul_fp8_blockwise_launches

def compiled(launch):
    kernel, grid, args, constexprs, num_warps, num_stages = launch
    with hopper_target(kernel):
        binary = kernel.warmup(*args, *constexprs, grid=grid, num_warps=num_warps, num_stages=num_stages)
    return {"ptx": binary.asm["ptx"], "shared": binary.metadata.shared, "ttgir": binary.asm["ttgir"]}

out = {}
a = torch.zeros(2048, 4096, dtype=torch.bfloat16)
b = torch.zeros(8, 4096, 2048, dtype=torch.bfloat16)
offs = torch.full((8,), 256, dtype=torch.int32).cumsum(0).int()
for name, weights in (("grouped row", b), ("grouped linear", b.transpose(1, 2).contiguous().transpose(1, 2))):
    _, (launch,) = grouped_matmul_launches(a, weights, offs, configs.GROUPED_MATMUL_TMA_DEFAULT)
    out[name] = compiled(launch)
m, n, k = 4096, 2112, 7168
a8 = torch.zeros(m, k, dtype=torch.float8_e4m3fn)
b8 = torch.zeros(n, k, dtype=torch.float8_e4m3fn)
sa, sb = torch.ones(m, k // 128), torch.ones(-(-n // 128), k // 128)
fp8 = [("fp8 tma", configs.FP8_BLOCKWISE_TMA_DEFAULT)]
fp8 += [(f"fp8 gluon {c.block_m}x{c.block_n}", c) for c in configs.FP8_BLOCKWISE_GLUON_BY_SIZE[::2]]
for name, config in fp8:
    _, (launch,) = matmul_fp8_blockwise_launches(a8, b8, sa, sb, config)
    out[name] = compiled(launch)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def compiled() -> dict:
    return compiled_offline(_COMPILE)


KERNELS = ["grouped row", "grouped linear", "fp8 tma", "fp8 gluon 128x128", "fp8 gluon 64x64"]


@pytest.mark.parametrize("name", KERNELS)
def test_compiles_for_hopper_without_spilling_or_serializing(compiled, name):
    kernel = compiled[name]
    assert 0 < kernel["shared"] <= SHARED_MEMORY_BYTES
    report = ptxas_report(kernel["ptx"])
    assert "0 bytes spill stores" in report, report
    assert "C7514" not in report and "serialized" not in report, report
    assert "wgmma.mma_async" in kernel["ptx"]
    assert "cp.async.bulk.tensor" in kernel["ptx"]  # TMA loads


def test_grouped_loop_over_tiles_is_flattened_with_the_k_loop(compiled):
    """Triton's pipeliner fused the loop over tiles with the K loop: one loop issues both the
    wgmma and the TMA loads (the next tile's loads run under this tile's last products)."""
    for name in ("grouped row", "grouped linear"):
        loops = compiled[name]["ttgir"].split("scf.for")[1:]
        assert any("ttng.warp_group_dot" in loop and "async_tma_copy_global_to_local" in loop and
                   "scf.if" in loop for loop in loops)  # fmt: skip


def test_gluon_pingpong_keeps_one_mma_in_flight(compiled):
    for name in ("fp8 gluon 128x128", "fp8 gluon 64x64"):
        assert "wgmma.wait_group.sync.aligned 1;" in compiled[name]["ptx"]
