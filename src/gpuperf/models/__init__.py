"""Whole model blocks built from gpuperf's kernels, each with a PyTorch twin.

* :mod:`~gpuperf.models.llama`: a Llama-3-style decoder layer (RMSNorm, fused QKV
  projection, RoPE, grouped-query attention, output projection, SwiGLU MLP) whose
  operations are either PyTorch's or gpuperf's, on the same weights: prefill, a decode
  step against a KV cache, and training.
* :mod:`~gpuperf.models.moe`: a Mixture-of-Experts feed-forward block (router, token
  permutation, grouped gate/up and down matmuls, weighted combine, shared expert) on
  gpuperf's kernels or on ``F.grouped_mm``, at the shapes of Mixtral-8x7B, Qwen3-30B-A3B
  and DeepSeek-V3. Forward only.
"""

from gpuperf.models.llama import GPUPERF_OPS, LLAMA_3_8B, PYTORCH_OPS, DecoderLayer, LlamaConfig

__all__ = ["GPUPERF_OPS", "LLAMA_3_8B", "PYTORCH_OPS", "DecoderLayer", "LlamaConfig"]
