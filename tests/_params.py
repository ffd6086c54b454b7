"""Shared test tables: dtypes the current mode can check, and readable ids."""

import pytest
import torch

from tests.conftest import DEVICE

# The interpreter computes bfloat16 arithmetic wrongly (it works on raw bits), so
# bfloat16 is checked on a GPU only.
FLOAT_DTYPES = [
    pytest.param(torch.float32, id="fp32"),
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16", marks=pytest.mark.gpu),
]


def shape_id(shape) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def randn(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float32).to(device=DEVICE, dtype=dtype)
