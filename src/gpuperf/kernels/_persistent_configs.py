"""Launch parameters of the persistent matmuls (16-bit and FP8), kept as data: candidates,
defaults, and the committed tuning sweeps that choose among them
(``kernels/tuned/<gpu>/matmul_persistent.json`` and ``matmul_fp8.json``).

Apart from :mod:`gpuperf.kernels._configs` so that a change here does not mark the
other kernels' committed measurements stale (their records name ``_configs.py``).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass

from gpuperf.kernels._configs import SHARED_MEMORY_BYTES, TUNED_DIR
from gpuperf.kernels._validation import check_launch_config


@dataclass(frozen=True)
class PersistentConfig:
    """One launch configuration of the persistent matmul kernels.

    Attributes:
        block_m, block_n, block_k: the output tile each step computes and the depth of
            each step along K; powers of two, at least 16 (32 along K for FP8: the
            tensor cores take 32 one-byte elements per step).
        group_m: rows of tiles per group in the grouped tile order (1: row-major).
        num_warps: warps per program (4 or 8: one or two Hopper warpgroups).
        num_stages: depth of the software pipeline (tiles of A and B in flight).
        tma: load the tiles of A and B through tensor descriptors (the Hopper copy
            engine, TMA) instead of computed pointers.
        warp_specialize: split each program's warps into a producer that issues the
            loads and consumers that run the tensor cores and the epilogue
            (``tl.range(..., warp_specialize=True)``); needs ``tma``.
    """

    block_m: int
    block_n: int
    block_k: int
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 3
    tma: bool = True
    warp_specialize: bool = False

    def __post_init__(self):
        check_launch_config(
            self,
            ("block_m", "block_n", "block_k"),
            ("group_m", "num_warps", "num_stages"),
            ("tma", "warp_specialize"),
        )
        if self.warp_specialize and not self.tma:
            raise ValueError(
                "PersistentConfig.warp_specialize needs tma=True (the producer issues TMA loads)"
            )

    def as_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        """Short form for tables: ``'128x256x64 g8 w8 s3 tma ws'``."""
        flags = (" tma" if self.tma else "") + (" ws" if self.warp_specialize else "")
        return (
            f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} "
            f"w{self.num_warps} s{self.num_stages}{flags}"
        )


def _grid(tiles, ks, stages, warps, *, ws) -> tuple[PersistentConfig, ...]:
    return tuple(
        PersistentConfig(bm, bn, bk, 8, w, s, True, ws)
        for (bm, bn) in tiles
        for bk in ks
        for s in stages
        for w in warps
    )


def _pointer(tiles, bk, stages) -> tuple[PersistentConfig, ...]:
    return tuple(PersistentConfig(bm, bn, bk, 8, 8, s, tma=False) for (bm, bn) in tiles for s in stages)


#: 16-bit candidates timed by ``nox -s bench`` (``kernels/tuned/<gpu>/matmul_persistent.json``):
#: the 128-row tiles Hopper's wgmma favours (one instruction covers 64 rows per
#: warpgroup), with and without warp specialization, two to four stages deep; and
#: the same tiles loaded through computed pointers, the rung below TMA in tutorial 06.
PERSISTENT_CANDIDATES: tuple[PersistentConfig, ...] = (
    _grid(((128, 256), (128, 128)), (64,), (3, 4), (8,), ws=False)
    + _grid(((128, 256), (128, 128)), (64,), (2, 3, 4), (4, 8), ws=True)
    + _pointer(((128, 256), (128, 128)), 64, (3, 4))
)

#: FP8 candidates: one byte per element, so a 128-deep step along K loads what a
#: 64-deep step loads in 16 bits.
FP8_CANDIDATES: tuple[PersistentConfig, ...] = (
    _grid(((128, 256), (128, 128)), (128,), (3, 4), (8,), ws=False)
    + _grid(((128, 256), (128, 128)), (128,), (2, 3, 4), (4, 8), ws=True)
    + _pointer(((128, 256), (128, 128)), 128, (3, 4))
)

#: FP8 candidates for float32-promoted accumulation (``fast_accum=False``). Hopper's
#: tensor cores cannot promote inside an instruction, so the kernel promotes once per
#: step along K, and each promotion stalls the wgmma pipeline: fewer, deeper steps
#: (256 along K: a promotion every 256 products) and smaller tiles win here. On the
#: H100 at 8192 x 8192 x 4096, 128x128x256 with 3 stages ran at 1120 TFLOP/s where the
#: fast-accumulation winner 128x256x128 ran at 600 with promotion (probe, 2026-11-23).
FP8_PROMOTED_CANDIDATES: tuple[PersistentConfig, ...] = (
    _grid(((128, 256), (128, 128)), (128, 256), (3, 4), (8,), ws=False)
    + _grid(((128, 128),), (128, 256), (2, 3), (4, 8), ws=True)
    + _pointer(((128, 256), (128, 128)), 128, (3,))
    + _pointer(((128, 128),), 256, (3,))
)

#: How FP8 products are summed: ``"fast"`` (the tensor cores' reduced-precision
#: accumulator across all of K) or ``"float32"`` (promoted once per step along K).
ACCUMULATIONS = ("fast", "float32")

#: The rungs of tutorial 06's ladder, by name: what loads the tiles.
VARIANTS = ("pointer", "tma", "tma_ws")


def variant(config: PersistentConfig) -> str:
    """Which rung of :data:`VARIANTS` ``config`` is."""
    return "tma_ws" if config.warp_specialize else "tma" if config.tma else "pointer"


#: Without a committed sweep: a tile whose pipeline fits every Hopper GPU, no warp
#: specialization (the variant that compiles everywhere TMA exists).
PERSISTENT_DEFAULT = PersistentConfig(128, 128, 64, num_warps=8, num_stages=4)
FP8_DEFAULT = PersistentConfig(128, 128, 128, num_warps=8, num_stages=4)
FP8_PROMOTED_DEFAULT = PersistentConfig(128, 128, 256, num_warps=8, num_stages=3)
#: GPUs with FP8 tensor cores but no TMA (compute capability 8.9): computed pointers.
FP8_POINTER_DEFAULT = PersistentConfig(128, 128, 64, num_warps=8, num_stages=3, tma=False)

#: Under Triton's interpreter: small tiles (32 along K, the least FP8 takes).
PERSISTENT_INTERPRETER = PersistentConfig(32, 32, 32, group_m=2, num_warps=4, num_stages=1)
POINTER_INTERPRETER = PersistentConfig(32, 32, 32, group_m=2, num_warps=4, num_stages=1, tma=False)


def fits(config: PersistentConfig, element_size: int) -> bool:
    """Whether ``config``'s pipeline fits in one program's shared memory."""
    stage = (config.block_m + config.block_n) * config.block_k * element_size
    return stage * config.num_stages <= SHARED_MEMORY_BYTES


def candidate_pool(kernel: str, accumulation: str = "fast") -> tuple[PersistentConfig, ...]:
    """Every candidate of ``kernel`` (``"matmul_persistent"`` or ``"matmul_fp8"``); for FP8,
    those of one of :data:`ACCUMULATIONS`."""
    if kernel == "matmul_persistent":
        return PERSISTENT_CANDIDATES
    return FP8_CANDIDATES if accumulation == "fast" else FP8_PROMOTED_CANDIDATES


def candidates(kernel: str, m: int, n: int, k: int, accumulation: str = "fast") -> list[PersistentConfig]:
    """The candidates of ``kernel`` (``"matmul_persistent"`` or ``"matmul_fp8"``, with one of
    :data:`ACCUMULATIONS`) worth timing at a shape."""
    pool = candidate_pool(kernel, accumulation)
    element_size = 2 if kernel == "matmul_persistent" else 1
    kept = []
    for c in pool:
        # A tile over twice the matrix computes mostly padding.
        if c.block_m > 2 * max(16, m) or c.block_n > 2 * max(16, n):
            continue
        if not fits(c, element_size):
            continue
        # Over 128 fp32 accumulators per thread spill to local memory.
        if c.block_m * c.block_n // (32 * c.num_warps) > 128:
            continue
        kept.append(c)
    return kept


@functools.cache
def _tuned_table(gpu_slug: str, kernel: str) -> dict:
    """``{(accumulation, variant): [((M, N, K), PersistentConfig), ...]}`` from the committed
    sweep of ``kernel`` (variant ``"best"``: the fastest of any variant at each shape;
    accumulation ``"fast"`` for the 16-bit kernel and for entries that name none)."""
    path = TUNED_DIR / gpu_slug / f"{kernel}.json"
    if not path.exists():
        return {}
    table: dict[tuple, list] = {}
    for entry in json.loads(path.read_text())["best"]:
        key = (entry.get("accumulation", "fast"), entry["variant"])
        table.setdefault(key, []).append((tuple(entry["shape"]), PersistentConfig(**entry["config"])))
    return table


@functools.lru_cache(maxsize=4096)
def tuned_config(
    kernel: str,
    gpu_slug: str | None,
    m: int,
    n: int,
    k: int,
    which: str = "best",
    accumulation: str = "fast",
) -> PersistentConfig | None:
    """The tuned config for the nearest benchmarked shape (the smallest sum of
    ``|log2(size / tuned size)|`` over M, N and K): the fastest (``which="best"``)
    or the fastest of one of :data:`VARIANTS`, for one of :data:`ACCUMULATIONS`
    (FP8). None without a committed sweep for this GPU. One sweep serves every dtype
    of the kernel (bfloat16 and float16 move the same bytes; so do the two FP8
    formats). Answers are cached by their arguments (:func:`forget_tuned`)."""
    if gpu_slug is None:
        return PERSISTENT_INTERPRETER if which != "pointer" else POINTER_INTERPRETER
    entries = _tuned_table(gpu_slug, kernel).get((accumulation, which))
    if not entries:
        return None

    def distance(shape):
        return sum(abs(math.log2(max(a, 1) / b)) for a, b in zip((m, n, k), shape, strict=True))

    return min(entries, key=lambda e: distance(e[0]))[1]


def forget_tuned() -> None:
    """Drop the cached sweeps and answers: the next call reads ``kernels/tuned`` again."""
    _tuned_table.cache_clear()
    tuned_config.cache_clear()
