"""Row mean in CUDA C++, compiled at run time with ``torch.utils.cpp_extension.load_inline``.

The same op as :func:`gpuperf.kernels.row_mean`, written the way a CUDA
programmer would: one thread block of :data:`THREADS` threads per row, each
thread summing a strided slice of the row in float32, then a warp-shuffle
reduction within each warp and one more across the warps through shared memory
(the classic block reduction of Mark Harris, "Optimizing Parallel Reduction in
CUDA", NVIDIA, 2007, with warp shuffles in place of the last shared-memory steps).

Nothing is compiled on import. The first call of :func:`row_mean_cuda` builds the
extension with ``nvcc`` and ``ninja`` (tens of seconds; PyTorch caches the build
in ``$TORCH_EXTENSIONS_DIR``, by default ``~/.cache/torch_extensions`` and in a docs
build ``~/.cache/gpuperf/torch_extensions`` (:mod:`gpuperf.caches`), so later processes
only load it).
"""

from __future__ import annotations

import functools
import os
import shutil

import torch

from gpuperf.kernels._validation import check_tensor

#: Threads per block: 8 warps.
THREADS = 256

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int kThreads = THREADS_PER_BLOCK;

template <typename scalar_t>
__global__ void row_mean_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ out,
                                int64_t n_cols, int64_t stride_row) {
  const scalar_t* row = x + static_cast<int64_t>(blockIdx.x) * stride_row;
  // Each thread sums a strided slice: neighbouring threads read neighbouring
  // elements, so every warp's loads are coalesced.
  float sum = 0.0f;
  for (int64_t col = threadIdx.x; col < n_cols; col += kThreads) {
    sum += static_cast<float>(row[col]);
  }
  // Reduce within each warp through register shuffles, no shared memory.
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_down_sync(0xffffffff, sum, offset);
  }
  __shared__ float warp_sums[kThreads / 32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < kThreads / 32 ? warp_sums[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffff, sum, offset);
    }
    if (lane == 0) out[blockIdx.x] = static_cast<scalar_t>(sum / static_cast<float>(n_cols));
  }
}

torch::Tensor row_mean(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(x.dim() == 2 && x.stride(1) == 1, "x must be 2-d with contiguous rows");
  TORCH_CHECK(x.size(0) <= 2147483647, "at most 2**31 - 1 rows (one block each)");
  auto out = torch::empty({x.size(0)}, x.options());
  if (x.size(0) == 0) return out;
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(),
                                  "row_mean", [&] {
    row_mean_kernel<scalar_t><<<static_cast<unsigned int>(x.size(0)), kThreads, 0, stream>>>(
        x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.size(1), x.stride(0));
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
""".replace("THREADS_PER_BLOCK", str(THREADS))

CPP_SOURCE = "torch::Tensor row_mean(torch::Tensor x);"

#: The extension's module name (and its build folder under ``$TORCH_EXTENSIONS_DIR``).
EXTENSION_NAME = "gpuperf_row_mean_cuda"


def can_build() -> str | None:
    """None when the extension can be built here, else why not (no GPU, no nvcc or no ninja)."""
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to PyTorch"
    from torch.utils.cpp_extension import CUDA_HOME

    nvcc = shutil.which("nvcc") or (CUDA_HOME and os.path.join(CUDA_HOME, "bin", "nvcc"))
    if not nvcc or not os.path.exists(nvcc):
        return "nvcc (the CUDA compiler) was not found"
    if shutil.which("ninja") is None:
        return "ninja was not found (load_inline builds with it)"
    return None


@functools.cache
def extension():
    """Build (or load the cached build of) the extension; return the module.

    Compiles for the current GPU's architecture only (``-gencode`` from its
    compute capability), with ``-O3``.

    Raises:
        RuntimeError: no CUDA GPU, ``nvcc`` or ``ninja`` here, or the build failed.
    """
    why = can_build()
    if why is not None:
        raise RuntimeError(f"the CUDA row-mean extension cannot be built: {why}")
    from torch.utils.cpp_extension import load_inline

    major, minor = torch.cuda.get_device_capability()
    # Without TORCH_CUDA_ARCH_LIST, PyTorch also picks the visible GPU's architecture,
    # with a warning; naming it keeps the build to one architecture, quietly.
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")
    return load_inline(
        name=EXTENSION_NAME,
        cpp_sources=CPP_SOURCE,
        cuda_sources=CUDA_SOURCE,
        functions=["row_mean"],
        extra_cuda_cflags=["-O3"],
        verbose=False,
    )


def row_mean_cuda(x: torch.Tensor) -> torch.Tensor:
    """Mean over the last dimension of ``x`` by a CUDA C++ kernel, accumulated in float32.

    Args:
        x: CUDA tensor of rank >= 1 and shape ``(..., N)``; dtype float32, float16
            or bfloat16. Rows that are not contiguous are copied first.

    Returns:
        A new tensor of shape ``x.shape[:-1]`` and ``x``'s dtype, matching
        ``x.mean(dim=-1)`` (NaN for rows of length 0).

    Raises:
        TypeError: ``x`` is not a tensor or has an unsupported dtype.
        ValueError: ``x`` is 0-d or not on a CUDA device.
        RuntimeError: the extension cannot be built here (see :func:`can_build`).

    The first call builds the extension (:func:`extension`).
    """
    check_tensor("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least 1 dimension (the mean runs over the last), got a 0-d tensor")
    if not x.is_cuda:
        raise ValueError(f"x must be on a CUDA device, got a tensor on {x.device}")
    out_shape = x.shape[:-1]
    if x.shape[-1] == 0:
        return torch.full(out_shape, float("nan"), dtype=x.dtype, device=x.device)
    x2d = x.reshape(-1, x.shape[-1])
    if x2d.stride(1) != 1:
        x2d = x2d.contiguous()
    return extension().row_mean(x2d).view(out_shape)
