"""The permutation, combine and SwiGLU-gate kernels compiled for sm_90 here, without a GPU
(Triton's compiler and ptxas on the CPU, as tests/test_moe_hopper_compile.py does): each
compiles at DeepSeek-V3's prefill shape and spills nothing."""

import pytest

from tests._params import compiled_offline, ptxas_report

#: Each launch of the three ops as they make it, on CPU tensors (the device check waived),
#: compiled by ``warmup`` under the stand-in sm_90 driver. Prints ``{name: ptx}``.
_COMPILE = r"""
import json, torch
from gpuperf.kernels import _validation
_validation.check_kernel_device = lambda name, t: None
from gpuperf.kernels.gluon.offline import hopper_target
from gpuperf.kernels.launch import Launch
from gpuperf.kernels.moe_activation import silu_mul
from gpuperf.kernels.moe_permute import moe_combine, moe_permute

def compile_all(fn, *args):
    out = {}
    for launch in fn.__wrapped__(*args)[1]:
        if type(launch) is not Launch:
            continue
        kernel, grid, args_, constexprs, num_warps, num_stages = launch
        with hopper_target(kernel):
            binary = kernel.warmup(*args_, *constexprs, grid=grid, num_warps=num_warps, num_stages=num_stages)
        out[kernel.fn.__name__] = binary.asm["ptx"]
    return out

tokens, k, experts, d, ffn = 4096, 8, 256, 7168, 2048
x = torch.zeros(tokens, d, dtype=torch.bfloat16)
ids = torch.zeros(tokens, k, dtype=torch.int64)
out = compile_all(moe_permute, x, ids, experts)
y = torch.zeros(tokens * k, d, dtype=torch.bfloat16)
rows = torch.zeros(tokens * k, dtype=torch.int32)
out.update(compile_all(moe_combine, y, rows, torch.zeros(tokens, k)))
out.update(compile_all(silu_mul, torch.zeros(tokens * k, 2 * ffn, dtype=torch.bfloat16)))
print(json.dumps(out))
"""

KERNELS = [
    "_count_kernel",
    "_scan_kernel",
    "_scatter_kernel",
    "_gather_kernel",
    "_combine_kernel",
    "_silu_mul_kernel",
]


@pytest.fixture(scope="module")
def compiled() -> dict:
    return compiled_offline(_COMPILE)


@pytest.mark.parametrize("name", KERNELS)
def test_compiles_for_hopper_without_spilling(compiled, name):
    report = ptxas_report(compiled[name])
    assert "0 bytes spill stores" in report, report
