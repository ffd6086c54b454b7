"""Memory-bound benchmarks: vector add and softmax (tutorials 01 and 02), the row mean
(the profiling guide). Each is read in GB/s against the measured copy bandwidth."""

from __future__ import annotations

import torch

from gpuperf import reference
from gpuperf.bench import metrics
from gpuperf.bench.catalog.benchmark import Benchmark, Provider, call, compiled, kernels


def _vector_add(x, y):
    return kernels().vector_add(x, y)


def _softmax(x):
    return kernels().softmax(x)


def random_pair(n: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Two random float32 tensors of ``n`` elements on ``device``."""
    return (torch.randn(n, device=device), torch.randn(n, device=device))


VECTOR_ADD = Benchmark(
    name="vector_add",
    title="Vector add, float32",
    x_name="n_elements",
    x_label="elements per tensor",
    x_values=tuple(2**p for p in range(12, 29)),
    make_inputs=random_pair,
    reference=reference.vector_add_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.vector_add)", call(_vector_add)),
        Provider("torch", "PyTorch x + y", call(torch.add)),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.elementwise_bytes(n, element_size=4),
    flops=metrics.vector_add_flops,
    ceiling="copy_gbps",
    sources=("kernels/vector_add.py", "kernels/_configs.py"),
)

SOFTMAX_ROWS = 4096
SOFTMAX_LONG_ROWS = 1024

_SOFTMAX_PROVIDERS = (
    Provider("triton", "Triton (gpuperf.kernels.softmax)", call(_softmax)),
    Provider("torch", "torch.softmax", call(lambda x: torch.softmax(x, dim=-1))),
    Provider("compile", "torch.compile(naive)", compiled(reference.softmax_naive)),
    Provider("naive", "naive eager PyTorch", call(reference.softmax_naive)),
)

SOFTMAX = Benchmark(
    name="softmax",
    title=f"Softmax, float32, {SOFTMAX_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=tuple(2**p for p in range(8, 16)),
    make_inputs=lambda n, device: (torch.randn(SOFTMAX_ROWS, n, device=device),),
    reference=reference.softmax_ref,
    providers=_SOFTMAX_PROVIDERS,
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.softmax_bytes(SOFTMAX_ROWS, n, element_size=4),
    flops=lambda n: metrics.softmax_flops(SOFTMAX_ROWS, n),
    ceiling="copy_gbps",
    sources=("kernels/softmax.py", "kernels/_configs.py"),
)

SOFTMAX_LONG = Benchmark(
    name="softmax_long_rows",
    title=f"Softmax on long rows, float32, {SOFTMAX_LONG_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=(65536, 131072, 262144),
    make_inputs=lambda n, device: (torch.randn(SOFTMAX_LONG_ROWS, n, device=device),),
    reference=reference.softmax_ref,
    providers=_SOFTMAX_PROVIDERS,
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.softmax_bytes(SOFTMAX_LONG_ROWS, n, element_size=4),
    flops=lambda n: metrics.softmax_flops(SOFTMAX_LONG_ROWS, n),
    ceiling="copy_gbps",
    sources=("kernels/softmax.py", "kernels/_configs.py"),
)

# --- row mean (the profiling guide) ------------------------------------------------

ROW_MEAN_ROWS = 4096


def _row_mean(x):
    return kernels().row_mean(x)


def _row_mean_cuda(x):
    from gpuperf.kernels.row_mean_cuda import row_mean_cuda

    return row_mean_cuda(x)


ROW_MEAN = Benchmark(
    name="row_mean",
    title=f"Row mean, float32, {ROW_MEAN_ROWS} rows",
    x_name="n_cols",
    x_label="row length (columns)",
    x_values=tuple(2**p for p in range(8, 16)),
    make_inputs=lambda n, device: (torch.randn(ROW_MEAN_ROWS, n, device=device),),
    reference=reference.row_mean_ref,
    providers=(
        Provider("triton", "Triton (gpuperf.kernels.row_mean)", call(_row_mean)),
        Provider("cuda", "CUDA C++ via load_inline (row_mean_cuda)", call(_row_mean_cuda)),
        Provider("torch", "x.mean(dim=-1)", call(lambda x: x.mean(dim=-1))),
    ),
    baseline="torch",
    metric="GB/s",
    bytes=lambda n: metrics.row_mean_bytes(ROW_MEAN_ROWS, n, element_size=4),
    flops=lambda n: metrics.row_mean_flops(ROW_MEAN_ROWS, n),
    ceiling="copy_gbps",
    sources=("kernels/row_mean.py", "kernels/row_mean_cuda.py"),
)
