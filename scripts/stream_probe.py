"""Probe: how fast HBM streams for several read/write mixes (not a record; prints JSON)."""
import json, os, sys
import torch, triton, triton.language as tl
from gpuperf.bench.timing import time_ms
from gpuperf.bench import hardware

@triton.jit
def _read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    base = pid * BLOCK * ITERS
    for i in range(ITERS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc))

def triton_read(x, block=4096, iters=16, warps=8):
    n = x.numel(); grid = (triton.cdiv(n, block * iters),)
    out = torch.empty(grid[0], device=x.device, dtype=torch.float32)
    return lambda: _read_kernel[grid](x, out, n, BLOCK=block, ITERS=iters, num_warps=warps)

B = hardware.COPY_BYTES
res = {}
def rate(name, fn, moved):
    t = time_ms(fn); res[name] = round(moved / (t.ms * 1e-3) / 1e9, 1); print(name, res[name], flush=True)
x = torch.randn(B // 4, device="cuda"); y = torch.randn_like(x); z = torch.randn_like(x); w = torch.empty_like(x)
for rep in range(3):
    rate(f"copy#{rep}", lambda: w.copy_(x), 2 * B)
    rate(f"addcmul#{rep}", lambda: torch.addcmul(x, y, z, out=w), 4 * B)
rate("add", lambda: torch.add(x, y, out=w), 3 * B)
rate("sum", lambda: x.sum(), B)
rate("sum_rows8192", lambda: x.view(-1, 8192).sum(1), B)
rate("amax", lambda: x.amax(), B)
xb = x.view(torch.bfloat16)
rate("sum_bf16_rows", lambda: xb.view(-1, 8192).sum(1, dtype=torch.float32), B)
for block, iters, warps in [(4096, 16, 8), (2048, 32, 8), (8192, 8, 16), (1024, 64, 4)]:
    rate(f"triton_read_{block}x{iters}w{warps}", triton_read(x, block, iters, warps), B)
os.makedirs(os.environ.get("OUT", "/tmp"), exist_ok=True)
json.dump(res, open(os.path.join(os.environ.get("OUT", "/tmp"), "stream_probe.json"), "w"), indent=1)
