"""Launch parameters of the attention kernels, kept as data: candidates, defaults, and the
committed tuning sweeps (``kernels/tuned/<gpu>/attention.json``) that choose among them.

Apart from :mod:`gpuperf.kernels._configs` so that a change here does not mark the
other kernels' committed measurements stale (their records name ``_configs.py``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass

from gpuperf.kernels._configs import TUNED_DIR
from gpuperf.kernels._validation import check_launch_config

#: Head dims the attention kernels take: powers of two, so a tile's rows are whole
#: 16-byte vectors and ``tl.dot``'s inner dimension is at least 16.
ATTENTION_HEAD_DIMS = (16, 32, 64, 128)


@dataclass(frozen=True)
class AttentionConfig:
    """The launch configuration of one attention kernel.

    Attributes:
        block_m: queries per tile (rows of Q).
        block_n: keys per tile (rows of K and V).
        num_warps: warps per program.
        num_stages: depth of the software pipeline over the streamed tiles.

    The causal path splits each program's loop where the diagonal begins, so the
    streamed tile must divide the resident one: ``block_m % block_n == 0`` for the
    forward and dQ kernels (queries resident), ``block_n % block_m == 0`` for the
    dK/dV kernel (keys resident).
    """

    block_m: int
    block_n: int
    num_warps: int = 4
    num_stages: int = 3

    def __post_init__(self):
        check_launch_config(self, ("block_m", "block_n"))

    def as_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        """Short form for tables: ``'128x64 w8 s3'``."""
        return f"{self.block_m}x{self.block_n} w{self.num_warps} s{self.num_stages}"


#: Candidates timed by :func:`gpuperf.bench.tuning.tune_attention`, per kernel. Forward: a 128-row
#: tile of Q shared by two warpgroups (8 warps) or one (4), K/V tiles of 32-128 keys.
ATTENTION_FORWARD_CANDIDATES = (
    AttentionConfig(128, 128, 8, 2),
    AttentionConfig(128, 128, 8, 3),
    AttentionConfig(128, 64, 8, 3),
    AttentionConfig(128, 64, 8, 4),
    AttentionConfig(128, 64, 4, 3),
    AttentionConfig(128, 64, 4, 4),
    AttentionConfig(128, 32, 4, 4),
    AttentionConfig(64, 64, 4, 3),
    AttentionConfig(64, 64, 4, 4),
)
#: dK/dV: a tile of keys stays resident (two fp32 accumulators of block_n x D) while
#: the queries stream past; small query tiles keep P and dS in registers.
ATTENTION_DKDV_CANDIDATES = (
    AttentionConfig(32, 128, 8, 3),
    AttentionConfig(64, 128, 8, 3),
    AttentionConfig(64, 128, 8, 2),
    AttentionConfig(32, 128, 4, 3),
    AttentionConfig(32, 64, 4, 3),
    AttentionConfig(32, 64, 4, 4),
    AttentionConfig(64, 64, 4, 3),
    AttentionConfig(64, 64, 8, 3),
)
#: dQ: a tile of queries resident, keys streaming.
ATTENTION_DQ_CANDIDATES = (
    AttentionConfig(128, 32, 8, 3),
    AttentionConfig(128, 64, 8, 3),
    AttentionConfig(128, 64, 8, 2),
    AttentionConfig(128, 32, 4, 3),
    AttentionConfig(64, 32, 4, 3),
    AttentionConfig(64, 32, 4, 4),
    AttentionConfig(64, 64, 4, 3),
    AttentionConfig(64, 64, 8, 3),
)

#: The configs for a GPU without a committed sweep (or a head dim the sweep did not
#: time), per head dim: (forward, dK/dV, dQ). Their pipelines fit in 100 KB of
#: shared memory, so they launch on any GPU since the A100.
ATTENTION_DEFAULT: dict[int, tuple[AttentionConfig, AttentionConfig, AttentionConfig]] = {
    16: (AttentionConfig(128, 64, 4, 3), AttentionConfig(32, 64, 4, 3), AttentionConfig(64, 32, 4, 3)),
    32: (AttentionConfig(128, 64, 4, 3), AttentionConfig(32, 64, 4, 3), AttentionConfig(64, 32, 4, 3)),
    64: (AttentionConfig(128, 64, 4, 3), AttentionConfig(32, 64, 4, 3), AttentionConfig(64, 32, 4, 3)),
    128: (AttentionConfig(128, 64, 8, 3), AttentionConfig(32, 128, 8, 3), AttentionConfig(128, 32, 8, 3)),
}

#: Under Triton's interpreter: small tiles, so small test shapes cross several of them.
ATTENTION_INTERPRETER = (
    AttentionConfig(32, 16, 4, 1),
    AttentionConfig(16, 32, 4, 1),
    AttentionConfig(32, 16, 4, 1),
)

#: The three kernels of the attention op, in the order their configs are given.
ATTENTION_KERNELS = ("forward", "dkdv", "dq")


@functools.cache
def _attention_table(gpu_slug: str) -> dict:
    """``{(head_dim, causal): (forward, dkdv, dq)}`` from the committed sweep of one GPU."""
    path = TUNED_DIR / gpu_slug / "attention.json"
    if not path.exists():
        return {}
    return {
        (e["head_dim"], e["causal"]): tuple(AttentionConfig(**e[kernel]) for kernel in ATTENTION_KERNELS)
        for e in json.loads(path.read_text())["best"]
    }


def attention_configs(
    gpu_slug: str | None, head_dim: int, causal: bool
) -> tuple[AttentionConfig, AttentionConfig, AttentionConfig]:
    """``(forward, dK/dV, dQ)`` launch configs for ``head_dim`` on this GPU.

    From the committed sweep (``kernels/tuned/<gpu>/attention.json``, written by
    ``python -m gpuperf.bench`` before the attention benchmarks) when it timed this head dim and masking; else
    :data:`ATTENTION_DEFAULT`; :data:`ATTENTION_INTERPRETER` when ``gpu_slug`` is
    None (the interpreter).
    """
    if gpu_slug is None:
        return ATTENTION_INTERPRETER
    tuned = _attention_table(gpu_slug).get((head_dim, causal))
    return tuned or ATTENTION_DEFAULT[head_dim]
