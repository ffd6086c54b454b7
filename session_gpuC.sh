#!/usr/bin/env bash
set -uo pipefail
export GPUPERF_COMMIT=$1 PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src"
python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_grouped_matmul.py tests/test_moe_layer.py tests/test_moe_catalog.py tests/test_moe_permute.py tests/test_moe_transformers.py tests/test_gluon_attention_fa3.py tests/test_sections.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed|Mismatch|Greatest" | tail -n 20
timeout 90 compute-sanitizer --tool memcheck python3 - <<'PY' 2>&1 | tail -n 3
import torch
from gpuperf.kernels import grouped_matmul
for sizes in ([5, 0, 300, 1, 129], [0, 0, 64]):
    m = sum(sizes) + 3
    a = torch.randn(m, 200, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(len(sizes), 200, 264, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
    grouped_matmul(a, b, offs).backward(torch.randn(m, 264, device="cuda", dtype=torch.bfloat16))
torch.cuda.synchronize(); print("wgrad sanitized")
PY
(time python3 -m gpuperf.bench --no-tune grouped_matmul matmul_fp8_blockwise moe_layer moe_layer_decode) > "$OUT/moe_bench.log" 2>&1
tr '\r' '\n' < "$OUT/moe_bench.log" | grep -E "^ +moe_layer_decode tokens=1|wrote|rror|^real" | grep -v "%" | tail -n 20
(time python3 scripts/moe_capture.py) > "$OUT/moe_capture.log" 2>&1; grep -E "decode 1 triton|wrote|rror" "$OUT/moe_capture.log"
tar -czf "$OUT/results.tgz" src/gpuperf/measurements
