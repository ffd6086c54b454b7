"""A look at configurations of tutorial 08's Gluon attention beyond its benchmark's rungs, on
a Hopper GPU (not a benchmark: no records; the GPU tests check every one for correctness).

Usage: ``python scripts/fa3_explore.py [D ...]`` (128 and 64 by default) prints TFLOP/s and
the ratio to cuDNN at the attention benchmarks' shapes (float16, B·S = 16384, H·D = 2048),
for every provider of the ``gluon_attention`` benchmark and the variants below, all in one
run, from ``gpuperf.bench.timing.time_ms``. Tutorial 08 quotes two of its findings: a
persistent causal launch (a static round robin over tiles of unequal length) and three
consumer warpgroups at D 64.
"""

import sys

import torch

from gpuperf.bench.catalog import GLUON_ATTENTION
from gpuperf.bench.catalog.attention import attention_shape
from gpuperf.bench.timing import time_ms
from gpuperf.kernels.gluon import FA3Config, attention_fa3

#: Configurations the benchmark does not measure: persistent whatever the masking, and three
#: consumer warpgroups (D 64 only) at two register splits, with and without ping-pong.
VARIANTS = {
    "persistent": FA3Config(persistent=True),
    "c3": FA3Config(consumers=3),
    "c3_r152": FA3Config(consumers=3, consumer_registers=152),
    "c3_np": FA3Config(consumers=3, persistent=False),
    "c3_pp": FA3Config(consumers=3, pingpong=True, persistent=False),
}
SEQ_LENS = (1024, 4096, 8192, 16384)


def main(head_dims):
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for d in head_dims:
        for causal in (False, True):
            for s in SEQ_LENS:
                q, k, v, _ = GLUON_ATTENTION.make_inputs(s, torch.device("cuda"), head_dim=d, causal=causal)
                flops = GLUON_ATTENTION.flops(s, head_dim=d, causal=causal)
                calls = {p.key: p.make(q, k, v, causal) for p in GLUON_ATTENTION.providers}
                for key, config in VARIANTS.items():
                    if config.consumers == 3 and d > 64:
                        continue
                    calls[key] = lambda c=config: attention_fa3(q, k, v, causal=causal, config=c)
                times = {key: time_ms(fn).ms for key, fn in calls.items()}
                line = "  ".join(
                    f"{key} {flops / ms / 1e9:.0f} ({times['cudnn'] / ms:.2f}x)" for key, ms in times.items()
                )
                print(
                    f"D{d} {'causal' if causal else 'full  '} S{s:5} {attention_shape(s, d)}: {line}",
                    flush=True,
                )


if __name__ == "__main__":
    main([int(d) for d in sys.argv[1:]] or [128, 64])
