"""The launch rules and tuned configs that bench and pages read.

The kernels keep their launch parameters as data in private modules, one per family,
so that a change to one family's configs leaves the others' committed measurements
current. The tuning sweeps (:mod:`gpuperf.bench.tuning`) and the pages that show
them read those rules and configs here, the one public face of them all:

* softmax's launch rule: the longest row read in one pass (:data:`SOFTMAX_MAX_FUSED_COLS`),
  the online kernel's chunk (:data:`SOFTMAX_ONLINE_BLOCK_N`) and the rows and warps per
  program of the one-pass kernel (:func:`softmax_fused_launch`);
* where the committed sweeps live (:data:`TUNED_DIR`) and the shared-memory budget
  every config must fit (:data:`SHARED_MEMORY_BYTES`);
* the tiled matmul: :class:`MatmulConfig`, its candidates (:data:`MATMUL_CONFIGS`,
  :func:`matmul_candidates`) and the committed sweep's choice (:func:`matmul_config`);
* the persistent matmuls (16-bit and FP8): :class:`PersistentConfig`, tutorial 06's
  ladder of :data:`VARIANTS` and :func:`variant`, FP8's :data:`ACCUMULATIONS`, and
  the candidates of each kernel (:func:`candidate_pool`, :func:`candidates`);
* attention: :class:`AttentionConfig`, its three kernels (:data:`ATTENTION_KERNELS`),
  their candidates and defaults per head dim;
* the Mixture-of-Experts kernels (grouped matmul, block-scaled FP8 matmul): their defaults
  and the candidates of a sweep (:data:`GROUPED_MATMUL_CANDIDATES`,
  :data:`GROUPED_MATMUL_TMA_CANDIDATES`, :data:`FP8_BLOCKWISE_CANDIDATES`,
  :data:`FP8_BLOCKWISE_TMA_CANDIDATES`, :data:`FP8_BLOCKWISE_GLUON_CANDIDATES`, pruned by
  :func:`moe_candidates`).
"""

from gpuperf.kernels._attention_configs import (
    ATTENTION_DEFAULT,
    ATTENTION_DKDV_CANDIDATES,
    ATTENTION_DQ_CANDIDATES,
    ATTENTION_FORWARD_CANDIDATES,
    ATTENTION_KERNELS,
    AttentionConfig,
)
from gpuperf.kernels._configs import (
    MATMUL_CONFIGS,
    SHARED_MEMORY_BYTES,
    SOFTMAX_MAX_FUSED_COLS,
    SOFTMAX_ONLINE_BLOCK_N,
    TUNED_DIR,
    MatmulConfig,
    matmul_candidates,
    matmul_config,
    softmax_fused_launch,
)
from gpuperf.kernels._moe_configs import (
    FP8_BLOCKWISE_CANDIDATES,
    FP8_BLOCKWISE_DEFAULT,
    FP8_BLOCKWISE_GLUON_BY_SIZE,
    FP8_BLOCKWISE_GLUON_CANDIDATES,
    FP8_BLOCKWISE_INTERPRETER,
    FP8_BLOCKWISE_TMA_CANDIDATES,
    FP8_BLOCKWISE_TMA_DEFAULT,
    FP8_SCALE_BLOCK,
    GROUPED_DECODE_ROWS_PER_EXPERT,
    GROUPED_MATMUL_CANDIDATES,
    GROUPED_MATMUL_DEFAULT,
    GROUPED_MATMUL_INTERPRETER,
    GROUPED_MATMUL_TMA_CANDIDATES,
    GROUPED_MATMUL_TMA_DECODE,
    GROUPED_MATMUL_TMA_DEFAULT,
    GROUPED_MATMUL_TMA_INTERPRETER,
    GROUPED_TMA_MAX_EXPERTS,
    fp8_blockwise_gluon_config,
    moe_candidates,
)
from gpuperf.kernels._persistent_configs import (
    ACCUMULATIONS,
    VARIANTS,
    PersistentConfig,
    candidate_pool,
    candidates,
    variant,
)

__all__ = [
    "ACCUMULATIONS",
    "ATTENTION_DEFAULT",
    "ATTENTION_DKDV_CANDIDATES",
    "ATTENTION_DQ_CANDIDATES",
    "ATTENTION_FORWARD_CANDIDATES",
    "ATTENTION_KERNELS",
    "FP8_BLOCKWISE_CANDIDATES",
    "FP8_BLOCKWISE_DEFAULT",
    "FP8_BLOCKWISE_GLUON_BY_SIZE",
    "FP8_BLOCKWISE_GLUON_CANDIDATES",
    "FP8_BLOCKWISE_INTERPRETER",
    "FP8_BLOCKWISE_TMA_CANDIDATES",
    "FP8_BLOCKWISE_TMA_DEFAULT",
    "FP8_SCALE_BLOCK",
    "GROUPED_DECODE_ROWS_PER_EXPERT",
    "GROUPED_MATMUL_CANDIDATES",
    "GROUPED_MATMUL_DEFAULT",
    "GROUPED_MATMUL_INTERPRETER",
    "GROUPED_MATMUL_TMA_CANDIDATES",
    "GROUPED_MATMUL_TMA_DECODE",
    "GROUPED_MATMUL_TMA_DEFAULT",
    "GROUPED_MATMUL_TMA_INTERPRETER",
    "GROUPED_TMA_MAX_EXPERTS",
    "MATMUL_CONFIGS",
    "SHARED_MEMORY_BYTES",
    "SOFTMAX_MAX_FUSED_COLS",
    "SOFTMAX_ONLINE_BLOCK_N",
    "TUNED_DIR",
    "VARIANTS",
    "AttentionConfig",
    "MatmulConfig",
    "PersistentConfig",
    "candidate_pool",
    "candidates",
    "fp8_blockwise_gluon_config",
    "matmul_candidates",
    "matmul_config",
    "moe_candidates",
    "softmax_fused_launch",
    "variant",
]
