"""Triton kernels, one op per module, each behind a validating public wrapper.

Importing this package compiles nothing. When no CUDA device is present and
``TRITON_INTERPRET`` is unset, it turns Triton's interpreter on first, so the
kernels run (slowly, on small shapes) on the CPU: ``@triton.jit`` reads that
variable when each kernel is defined. Under the interpreter it also makes bfloat16
compute as numbers, as on a GPU (:mod:`gpuperf._interpreter`). Each op is also registered with
``torch.library`` (``torch.ops.gpuperf.<op>``) so that ``torch.compile`` can
keep a model that calls it in one graph.
"""

from gpuperf._interpreter import fix_bfloat16
from gpuperf._runtime import enable_interpreter_without_gpu

if enable_interpreter_without_gpu():
    fix_bfloat16()

from gpuperf.kernels.add_relu_mul import add_relu_mul
from gpuperf.kernels.attention import attention
from gpuperf.kernels.attention_decode import attention_decode
from gpuperf.kernels.gelu import gelu
from gpuperf.kernels.grouped_matmul import grouped_matmul
from gpuperf.kernels.matmul import MatmulConfig, matmul
from gpuperf.kernels.matmul_fp8 import matmul_fp8, to_fp8
from gpuperf.kernels.matmul_fp8_blockwise import matmul_fp8_blockwise, quantize_fp8_blockwise
from gpuperf.kernels.matmul_persistent import PersistentConfig, matmul_persistent
from gpuperf.kernels.matmul_splitk import matmul_splitk
from gpuperf.kernels.rms_norm import rms_norm
from gpuperf.kernels.rope import rope, rope_cos_sin
from gpuperf.kernels.row_mean import row_mean
from gpuperf.kernels.scale_shift import scale_shift
from gpuperf.kernels.softmax import softmax
from gpuperf.kernels.strided_copy import strided_copy
from gpuperf.kernels.swiglu import swiglu
from gpuperf.kernels.vector_add import vector_add

__all__ = [
    "MatmulConfig",
    "PersistentConfig",
    "add_relu_mul",
    "attention",
    "attention_decode",
    "gelu",
    "grouped_matmul",
    "matmul",
    "matmul_fp8",
    "matmul_fp8_blockwise",
    "matmul_persistent",
    "matmul_splitk",
    "quantize_fp8_blockwise",
    "rms_norm",
    "rope",
    "rope_cos_sin",
    "row_mean",
    "scale_shift",
    "softmax",
    "strided_copy",
    "swiglu",
    "to_fp8",
    "vector_add",
]
