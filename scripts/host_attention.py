"""Host time per call of gpuperf's attention against SDPA's, the GPU kept busy (a log, not
a record): the check before and after a change to attention's launch path.

Usage (a CUDA GPU): ``python scripts/host_attention.py``. On the H100, 2026-11-25: main's
torch.library path cost 96 us a call against SDPA's 23-37 us; branch ``attention-host-path``
(fb72558) 18-19 us against 18-20 us, and 39 us with gradients against main's 210 us.
"""

import torch
import torch.nn.functional as F

from gpuperf.bench.timing import host_time_ms
from gpuperf.kernels import attention

q = torch.randn(1, 32, 128, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(1, 8, 128, 128, device="cuda", dtype=torch.bfloat16)
for causal in (False, True):
    ours = host_time_ms(lambda: attention(q, k, k, causal=causal)).ms * 1e3
    sdpa = (
        host_time_ms(lambda: F.scaled_dot_product_attention(q, k, k, is_causal=causal, enable_gqa=True)).ms
        * 1e3
    )
    print(f"attention causal={causal}: ours {ours:.1f} us, SDPA {sdpa:.1f} us, ratio {ours / sdpa:.2f}")
with_grad = q.clone().requires_grad_()
ours = host_time_ms(lambda: attention(with_grad, k, k, causal=True)).ms * 1e3
print(f"attention with gradients, causal: ours {ours:.1f} us")
