"""attention_decode: the decode step against a KV cache, against the float64 reference and the
masked SDPA a model writes; per-sequence lengths, garbage past them, splits, NaN for bad
lengths, the plan path, strides, every bad input, torch.compile and CUDA graphs."""

import functools
import importlib
import itertools
import math
import re

import pytest
import torch

from gpuperf.kernels import attention_decode
from gpuperf.kernels.attention_decode import (
    DECODE_CONFIGS,
    DECODE_MAX_SPLITS,
    DECODE_MIN_KEYS_PER_SPLIT,
    DECODE_SINGLE_SPLIT_FILL,
    decode_launch,
    decode_splits,
)
from gpuperf.reference import attention_decode_ref, attention_decode_sdpa
from gpuperf.testing import tolerance
from tests._params import called_ops, randn, recording_backend
from tests.conftest import DEVICE

DTYPES = [
    pytest.param(torch.float16, id="fp16"),
    pytest.param(torch.bfloat16, id="bf16"),
]

# (B, H, H_kv, S_q, S_max, D, lengths): S_q 1, 3, 7 and 16; D 16 to 256; groups of 1, 2, 4, 8
# heads and multi-query (H_kv = 1); lengths that differ per sequence, equal to S_q and to
# S_max; S_max off every tile (16 keys a tile under the interpreter); query rows
# (G * S_q) beyond one tile (64 rows at D = 64 and 128, 32 at D = 16, 32 and 256): two
# row blocks.
SHAPES = [
    pytest.param((1, 1, 1, 1, 1, 64, [1]), id="one-key"),
    pytest.param((3, 4, 2, 3, 70, 64, [3, 70, 41]), id="gqa2-Sq3-S70-D64"),
    pytest.param((2, 4, 1, 1, 37, 64, [37, 5]), id="mqa-Sq1-S37-D64"),
    pytest.param((2, 2, 2, 16, 50, 32, [16, 50]), id="mha-Sq16-S50-D32"),
    pytest.param((2, 4, 2, 7, 32, 16, [7, 30]), id="gqa2-Sq7-S32-D16"),
    pytest.param((2, 8, 2, 1, 45, 128, [45, 17]), id="gqa4-Sq1-S45-D128"),
    pytest.param((1, 8, 1, 16, 40, 64, [33]), id="mqa8-Sq16-rowblocks-D64"),
    pytest.param((1, 4, 1, 16, 33, 256, [20]), id="gqa4-Sq16-rowblocks-D256"),
]


def make(shape, dtype, seed=0):
    b, h, h_kv, s_q, s_max, d, lengths = shape
    q = randn((b, h, s_q, d), dtype, seed=seed)
    k = randn((b, h_kv, s_max, d), dtype, seed=seed + 1)
    v = randn((b, h_kv, s_max, d), dtype, seed=seed + 2)
    return q, k, v, torch.tensor(lengths, dtype=torch.int32, device=DEVICE)


# gpuperf.kernels.attention_decode is the function; the module is looked up by name.
decode_module = importlib.import_module("gpuperf.kernels.attention_decode")


def assert_close(name, ref, out):
    """``out`` against the float64 ``ref``, sequence by sequence, NaNs in the same places.

    The relative tolerance of :func:`gpuperf.testing.tolerance` for ``out``'s dtype, and an
    absolute one of a rounding unit of the sequence's largest output: the probabilities are
    rounded to the inputs' dtype before ``P @ V`` (as FlashAttention does), an error
    relative to the output's scale. Attention spread over many random keys has small
    outputs (about 0.03 at 32k keys), so a fixed absolute tolerance would either fail
    components near zero or let any error through.
    """
    assert out.shape == ref.shape, f"{name}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    rtol, atol = tolerance(out.dtype)
    eps = torch.finfo(out.dtype).eps
    for b in range(out.shape[0]):
        expected = ref[b].to(device=out.device, dtype=torch.float64)
        finite = expected[torch.isfinite(expected)]
        scale = finite.abs().max().item() if finite.numel() else 0.0
        torch.testing.assert_close(
            out[b].double(),
            expected,
            rtol=rtol,
            atol=max(atol, eps * scale),
            equal_nan=True,
            msg=lambda detail, b=b: f"{name}, sequence {b} ({out.dtype}): {detail}",
        )


def check(q, k, v, lengths, name="attention_decode", scale=None, **kwargs):
    out = attention_decode(q, k, v, lengths, scale=scale, **kwargs)
    assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
    assert_close(name, attention_decode_ref(q, k, v, lengths, scale), out)
    return out


def spoil_past_lengths(k, v, lengths):
    """Garbage after each sequence's keys: NaN keys, infinite and huge values."""
    k, v = k.clone(), v.clone()
    for b, n in enumerate(lengths.tolist()):
        k[b, :, n:] = float("nan")
        v[b, :, n:] = float("inf")
        v[b, :, n + 1 :] = 6e4 if v.dtype == torch.float16 else 1e30
    return k, v


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_reference(shape, dtype):
    q, k, v, lengths = make(shape, dtype)
    check(q, k, v, lengths)


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_the_masked_sdpa_a_model_writes(shape):
    q, k, v, lengths = make(shape, torch.float16, seed=3)
    out = attention_decode(q, k, v, lengths)
    # SDPA in float32 on the same (fp16-valued) inputs, over the padded cache with its mask.
    expected = attention_decode_sdpa(q.float(), k.float(), v.float(), lengths)
    assert_close("attention_decode vs masked SDPA", expected, out)


@functools.cache
def _split_case():
    """The inputs of :func:`test_every_split_count_gives_the_same_answer`, their float64
    reference and the one-split output, computed once for every split count."""
    q, k, v, lengths = make((3, 4, 2, 3, 70, 64, [3, 70, 41]), torch.float16, seed=4)
    one = attention_decode(q, k, v, lengths, _num_splits=1)
    return (q, k, v, lengths), attention_decode_ref(q, k, v, lengths), one


@pytest.mark.parametrize("splits", [1, 2, 3, 5, 8], ids=lambda s: f"splits{s}")
def test_every_split_count_gives_the_same_answer(splits):
    """One split (no combine), several, and more splits than tiles (S_max 70: 5 tiles of 16)."""
    (q, k, v, lengths), expected, one = _split_case()
    out = attention_decode(q, k, v, lengths, _num_splits=splits)
    assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
    assert_close(f"{splits} splits", expected, out)
    # The splits change the order of the float32 sums only: a few units of rounding.
    torch.testing.assert_close(out, one, rtol=2e-3, atol=2e-3)


def test_many_splits_for_one_sequence_of_many_tiles():
    """More splits than the combine merges at once (16) over a longer cache."""
    q, k, v, lengths = make((1, 2, 1, 2, 300, 64, [299]), torch.float16, seed=5)
    check(q, k, v, lengths, name="40 splits", _num_splits=40)


@pytest.mark.skipif(DEVICE != "cpu", reason="the interpreter's launch rule (2 SMs, 16-key tiles)")
def test_the_launch_rule_splits_small_batches_here():
    """Under the interpreter (2 SMs counted) one sequence with one KV head gets several
    splits by default: the tests above run the combine on the default path too."""
    launch = decode_launch(2, 1, 4, 37, 64, -1)
    assert launch.num_splits > 1 and launch.n_row_blocks == 1
    assert decode_launch(1, 1, 128, 40, 64, -1).n_row_blocks == 2
    assert decode_launch(1, 1, 64, 33, 256, -1).n_row_blocks == 2


@pytest.mark.parametrize("splits", [None, 1, 4], ids=["default", "one-split", "four-splits"])
def test_garbage_past_the_lengths_never_reaches_the_output(splits):
    q, k, v, lengths = make((3, 4, 2, 3, 70, 64, [3, 70, 41]), torch.float16, seed=6)
    expected = attention_decode_ref(q, k, v, lengths)
    k_bad, v_bad = spoil_past_lengths(k, v, lengths)
    out = attention_decode(q, k_bad, v_bad, lengths, _num_splits=splits)
    assert torch.isfinite(out).all()
    assert_close("attention_decode with garbage", expected, out)


def test_second_call_reads_new_lengths_and_new_inputs():
    """The second call launches from the plan the first made (on a GPU): lengths are read
    on the device, so changing their values (in place) changes the answer."""
    q, k, v, lengths = make((3, 4, 2, 1, 70, 64, [70, 20, 1]), torch.float16, seed=7)
    check(q, k, v, lengths, name="first call")
    lengths.copy_(torch.tensor([5, 66, 33], dtype=torch.int32))
    check(q, k, v, lengths, name="new lengths")
    q.copy_(randn(tuple(q.shape), torch.float16, seed=8))
    k.copy_(randn(tuple(k.shape), torch.float16, seed=9))
    check(q, k, v, lengths, name="new inputs")


@pytest.mark.parametrize("splits", [None, 1, 3], ids=["default", "one-split", "three-splits"])
def test_bad_lengths_give_nan_for_their_sequence_only(splits):
    q, k, v, _ = make((5, 4, 2, 3, 40, 64, [3] * 5), torch.float16, seed=10)
    # Too short for S_q, past S_max, negative, huge; and one good sequence in the middle.
    lengths = torch.tensor([2, 41, 25, -7, 2**31 - 1], dtype=torch.int32, device=DEVICE)
    out = attention_decode(q, k, v, lengths, _num_splits=splits)
    bad = [0, 1, 3, 4]
    assert torch.isnan(out[bad]).all()
    assert_close("the good sequence", attention_decode_ref(q[2:3], k[2:3], v[2:3], lengths[2:3]), out[2:3])
    assert torch.isnan(attention_decode_ref(q, k, v, lengths)[bad]).all()  # the reference agrees


def test_check_lengths_raises_on_the_first_bad_length():
    q, k, v, _ = make((4, 2, 1, 3, 40, 64, [3] * 4), torch.float16, seed=11)
    lengths = torch.tensor([3, 40, 41, 2], dtype=torch.int32, device=DEVICE)
    with pytest.raises(
        ValueError,
        match=re.escape("cache_seqlens[2] = 41 is outside the allowed range [S_q, S_max] = [3, 40]"),
    ):
        attention_decode(q, k, v, lengths, check_lengths=True)
    lengths[2] = 2
    with pytest.raises(ValueError, match=re.escape("cache_seqlens[2] = 2 is outside")):
        attention_decode(q, k, v, lengths, check_lengths=True)
    lengths[2:] = 30
    check(q, k, v, lengths, check_lengths=True)


def test_strided_inputs_are_read_in_place():
    # q from a (B, S_q, H, D) projection, caches laid out (B, S_max, H_kv, D), lengths a
    # strided slice, and a cache whose last dimension has stride 2.
    b, h, h_kv, s_q, s_max, d = 2, 4, 2, 3, 45, 64
    q = randn((b, s_q, h, d), torch.float16, seed=12).transpose(1, 2)
    k = randn((b, s_max, h_kv, d), torch.float16, seed=13).transpose(1, 2)
    v = randn((b, h_kv, s_max, 2 * d), torch.float16, seed=14)[..., ::2]
    lengths = torch.tensor([45, 0, 9, 0], dtype=torch.int32, device=DEVICE)[::2]
    assert not q.is_contiguous() and v.stride(-1) == 2 and lengths.stride(0) == 2
    check(q, k, v, lengths, name="strided")
    check(q, k, v, lengths, name="strided, 3 splits", _num_splits=3)


def test_custom_scale_and_default_scale():
    q, k, v, lengths = make((2, 4, 2, 2, 30, 64, [30, 7]), torch.float16, seed=15)
    check(q, k, v, lengths, scale=0.3)
    check(q, k, v, lengths, scale=2)
    torch.testing.assert_close(
        attention_decode(q, k, v, lengths), attention_decode(q, k, v, lengths, scale=64**-0.5), rtol=0, atol=0
    )


def test_empty_batch_and_no_heads_give_empty_outputs():
    q, k, v, lengths = make((0, 4, 2, 1, 8, 64, []), torch.float16)
    assert attention_decode(q, k, v, lengths).shape == (0, 4, 1, 64)
    q, k, v, lengths = make((2, 0, 2, 1, 8, 64, [8, 8]), torch.float16)
    assert attention_decode(q, k, v, lengths).shape == (2, 0, 1, 64)


def test_inputs_that_require_grad_are_refused():
    q, k, v, lengths = make((1, 2, 1, 1, 8, 64, [8]), torch.float16)
    q.requires_grad_()
    with pytest.raises(RuntimeError, match=r"not differentiable .* torch.no_grad\(\)"):
        attention_decode(q, k, v, lengths)
    with pytest.raises(RuntimeError, match="not differentiable"):
        attention_decode(q.detach(), k.requires_grad_(), v, lengths)
    with torch.no_grad():
        check(q, k, v, lengths, name="no_grad")
    with torch.inference_mode():
        check(q.detach(), k.detach(), v, lengths, name="inference_mode")


def _t(*shape, dtype=torch.float16):
    return randn(shape, dtype)


def _lens(*values, dtype=torch.int32):
    return torch.tensor(values, dtype=dtype, device=DEVICE)


# The good call: q (2, 4, 3, 64), caches (2, 2, 20, 64), lengths (2,).
BAD_INPUTS = [
    pytest.param({"q": [[1.0]]}, TypeError, "q must be a torch.Tensor, got list", id="q-list"),
    pytest.param(
        {"k_cache": _t(2, 2, 20, 64, dtype=torch.float32)},
        TypeError,
        "k_cache has dtype float32",
        id="k-fp32",
    ),
    pytest.param(
        {
            "q": _t(2, 4, 3, 64, dtype=torch.float32),
            "k_cache": _t(2, 2, 20, 64, dtype=torch.float32),
            "v_cache": _t(2, 2, 20, 64, dtype=torch.float32),
        },
        TypeError,
        "supported dtypes are float16, bfloat16",
        id="all-fp32",
    ),
    pytest.param(
        {"v_cache": _t(2, 2, 20, 64, dtype=torch.bfloat16)}, TypeError, "same dtype", id="mixed-dtypes"
    ),
    pytest.param(
        {"cache_seqlens": [3, 4]}, TypeError, "cache_seqlens must be a torch.Tensor, got list", id="lens-list"
    ),
    pytest.param(
        {"cache_seqlens": _lens(3, 4, dtype=torch.int64)},
        TypeError,
        "must have dtype int32, got int64",
        id="lens-int64",
    ),
    pytest.param(
        {"cache_seqlens": _lens(3, 4, dtype=torch.float32)}, TypeError, "int32, got float32", id="lens-fp32"
    ),
    pytest.param(
        {"cache_seqlens": _lens(3, 4, 5)}, ValueError, r"shape \(B,\) = \(2,\), got \(3,\)", id="lens-3"
    ),
    pytest.param({"cache_seqlens": _lens(3, 4).view(2, 1)}, ValueError, r"got \(2, 1\)", id="lens-2d"),
    pytest.param(
        {"cache_seqlens": torch.tensor(3, dtype=torch.int32, device=DEVICE)},
        ValueError,
        r"got \(\)",
        id="lens-0d",
    ),
    pytest.param({"q": _t(4, 3, 64)}, ValueError, "q must be .B, H, S_q, D.", id="q-3d"),
    pytest.param({"k_cache": _t(2, 2, 20, 64, 1)}, ValueError, "must be .B, H, S_q, D.", id="k-5d"),
    pytest.param(
        {"v_cache": _t(2, 2, 21, 64)},
        ValueError,
        "k_cache and v_cache must have the same shape",
        id="kv-mismatch",
    ),
    pytest.param(
        {"k_cache": _t(3, 2, 20, 64), "v_cache": _t(3, 2, 20, 64)},
        ValueError,
        "same batch size, got 2 and 3",
        id="batch",
    ),
    pytest.param(
        {"k_cache": _t(2, 2, 20, 32), "v_cache": _t(2, 2, 20, 32)},
        ValueError,
        "same head dim",
        id="head-dim-mismatch",
    ),
    pytest.param(
        {"q": _t(2, 4, 3, 48), "k_cache": _t(2, 2, 20, 48), "v_cache": _t(2, 2, 20, 48)},
        ValueError,
        r"supported head dims are \(16, 32, 64, 128, 256\)",
        id="head-dim-48",
    ),
    pytest.param(
        {"q": _t(2, 4, 3, 8), "k_cache": _t(2, 2, 20, 8), "v_cache": _t(2, 2, 20, 8)},
        ValueError,
        "head dim 8 is not supported",
        id="head-dim-8",
    ),
    pytest.param(
        {"k_cache": _t(2, 3, 20, 64), "v_cache": _t(2, 3, 20, 64)},
        ValueError,
        r"query heads \(4\) must be a multiple",
        id="gqa",
    ),
    pytest.param(
        {"k_cache": _t(2, 0, 20, 64), "v_cache": _t(2, 0, 20, 64)},
        ValueError,
        r"key/value heads \(0\)",
        id="no-kv-heads",
    ),
    pytest.param({"q": _t(2, 4, 17, 64)}, ValueError, "1 to 16 queries per sequence .*, got 17", id="Sq-17"),
    pytest.param({"q": _t(2, 4, 0, 64)}, ValueError, "got 0; for longer", id="Sq-0"),
    pytest.param(
        {"k_cache": _t(2, 2, 2, 64), "v_cache": _t(2, 2, 2, 64)},
        ValueError,
        "at least S_q = 3 keys .*S_max = 2",
        id="Smax-lt-Sq",
    ),
    pytest.param({"scale": "0.5"}, TypeError, "scale must be a number or None, got str", id="scale-str"),
    pytest.param({"scale": True}, TypeError, "got bool", id="scale-bool"),
    pytest.param({"scale": 0.0}, ValueError, "positive and finite, got 0.0", id="scale-0"),
    pytest.param({"scale": -1.0}, ValueError, "positive and finite", id="scale-negative"),
    pytest.param({"scale": float("inf")}, ValueError, "positive and finite, got inf", id="scale-inf"),
    pytest.param({"scale": float("nan")}, ValueError, "positive and finite, got nan", id="scale-nan"),
    pytest.param({"check_lengths": 1}, TypeError, "check_lengths must be a bool, got int", id="check-int"),
    pytest.param(
        {"_num_splits": 0},
        ValueError,
        "_num_splits must be None or an int from 1 to 256, got 0",
        id="splits-0",
    ),
    pytest.param({"_num_splits": 2.0}, ValueError, "_num_splits must be", id="splits-float"),
    pytest.param({"_num_splits": 1000}, ValueError, "got 1000", id="splits-1000"),
    pytest.param(
        {"_config": (48, 4, 3)}, ValueError, r"_config must be .*got \(48, 4, 3\)", id="config-block-n"
    ),
    pytest.param({"_config": (64, 3, 3)}, ValueError, "_config must be", id="config-warps"),
    pytest.param({"_config": [64, 4, 3]}, ValueError, "_config must be", id="config-list"),
]


@pytest.mark.parametrize(("changes", "error", "message"), BAD_INPUTS)
def test_bad_input_raises_a_clear_error(changes, error, message):
    args = {"q": _t(2, 4, 3, 64), "k_cache": _t(2, 2, 20, 64), "v_cache": _t(2, 2, 20, 64)}
    args["cache_seqlens"] = _lens(20, 3)
    kwargs = {}
    for name, value in changes.items():
        (args if name in args else kwargs)[name] = value
    with pytest.raises(error, match=message):
        attention_decode(*args.values(), **kwargs)


def test_bad_scale_is_refused_after_a_planned_call():
    """A plan made with scale=1.0 must not let scale=True (equal to 1.0 as a key) through."""
    q, k, v, lengths = make((1, 2, 1, 1, 8, 64, [8]), torch.float16)
    attention_decode(q, k, v, lengths, scale=1.0)
    with pytest.raises(TypeError, match="got bool"):
        attention_decode(q, k, v, lengths, scale=True)


@pytest.mark.parametrize("splits", [None, 1, 3], ids=["default", "one-split", "three-splits"])
def test_eager_calls_are_the_ops_bit_for_bit(splits):
    """Eager calls (the first, which plans, and the planned ones) launch the op's kernels with
    the op's launch and arguments: equal outputs, bit for bit."""
    q, k, v, lengths = make((3, 4, 2, 3, 70, 64, [3, 70, 41]), torch.float16, seed=31)
    expected = torch.ops.gpuperf.attention_decode(q, k, v, lengths, 0.125, splits, None, None, None)
    for _ in range(2):
        assert torch.equal(attention_decode(q, k, v, lengths, scale=0.125, _num_splits=splits), expected)


def test_repeat_calls_launch_from_the_plan_the_first_left(monkeypatch):
    """The first call of a layout checks and plans; the next ones, on new tensors and new
    lengths, skip the checks (none run) and compute on their own inputs. A call that reads
    the lengths on the host, or overrides the launch, is checked every time (then, overriding
    the launch, launched from a plan of its own)."""
    checks = []
    check = decode_module._check
    monkeypatch.setattr(decode_module, "_check", lambda *a: checks.append(a[4:]) or check(*a))
    attention_decode.plans.clear()
    shape = (2, 4, 1, 1, 40, 64, [39, 8])
    for seed, splits in itertools.product((1, 2, 3), (None, 1)):
        q, k, v, lengths = make(shape, torch.float16, seed=seed)
        lengths.fill_(10 * seed)
        out = attention_decode(q, k, v, lengths, _num_splits=splits)
        assert_close(
            f"planned decode, call {seed}, {splits} splits", attention_decode_ref(q, k, v, lengths), out
        )
    assert len(checks) == 2 and len(attention_decode.plans) == 2  # one per split count
    lengths[1] = 41
    with pytest.raises(ValueError, match=re.escape("cache_seqlens[1] = 41 is outside")):
        attention_decode(q, k, v, lengths, check_lengths=True)
    lengths[1] = 40
    for _ in range(2):
        attention_decode(q, k, v, lengths, check_lengths=True)
        attention_decode(q, k, v, lengths, _config=(16, 4, 1))
    # 1 refused, 2 with check_lengths (then the plan), 3 with _config (its own plan after the first)
    assert len(checks) == 8 and len(attention_decode.plans) == 3


def test_options_are_keyword_only():
    q, k, v, lengths = make((1, 2, 1, 1, 8, 64, [8]), torch.float16)
    with pytest.raises(TypeError):
        attention_decode(q, k, v, lengths, 0.125)


@pytest.mark.skipif(DEVICE != "cpu", reason="checks the device error on a machine without a GPU")
def test_tensors_on_another_device_are_rejected():
    q, k, v, _ = make((1, 2, 1, 1, 8, 64, [8]), torch.float16)
    with pytest.raises(ValueError, match=r"cache_seqlens must be on q's device, got cache_seqlens on meta"):
        attention_decode(q, k, v, torch.ones(1, dtype=torch.int32, device="meta"))
    with pytest.raises(ValueError, match=r"same device, got q on cpu, k_cache on meta"):
        attention_decode(q, k.to("meta"), v, torch.ones(1, dtype=torch.int32))


def test_cpu_tensor_is_refused_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q = torch.ones(1, 2, 1, 64, dtype=torch.float16)
    k = torch.ones(1, 1, 8, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="q must be on a CUDA device"):
        attention_decode(q, k, k, torch.ones(1, dtype=torch.int32))


# --- the launch rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "programs, s_max, expected",
    [
        pytest.param(512, 8192, 1, id="B64-Llama: one split"),
        pytest.param(math.ceil(DECODE_SINGLE_SPLIT_FILL * 132), 8192, 1, id="at the fill threshold"),
        pytest.param(math.ceil(DECODE_SINGLE_SPLIT_FILL * 132) - 1, 8192, 1, id="below it: a wave holds one"),
        pytest.param(40, 8192, 3, id="three splits of 40 programs fill 120 of 132"),
        pytest.param(64, 8192, 2, id="B8-Llama: 128 of 132 slots"),
        pytest.param(8, 32768, 16, id="B1-Llama: 128 of 132 slots"),
        pytest.param(8, 1024, 16, id="B1-1k: 64 keys a split"),
        pytest.param(8, 512, 8, id="B1-512: no split under 64 keys"),
        pytest.param(8, 100, 1, id="fewer keys than a split's least"),
    ],
)
def test_launch_rule_on_an_h100(programs, s_max, expected):
    assert decode_splits(programs, s_max, 132) == expected


def test_launch_rule_bounds():
    for programs in range(1, 300, 7):
        for s_max in (1, 127, 128, 1000, 4096, 10**6):
            n = decode_splits(programs, s_max, 132)
            assert 1 <= n <= max(1, min(DECODE_MAX_SPLITS, s_max // DECODE_MIN_KEYS_PER_SPLIT))
    assert set(DECODE_CONFIGS) == {16, 32, 64, 128, 256}


# --- torch.library and torch.compile -----------------------------------------------------------


def test_registered_op():
    q, k, v, lengths = make((2, 4, 2, 3, 40, 64, [40, 9]), torch.float16, seed=16)
    # (scale, splits, then block_n, warps, stages: None takes the launch rules)
    out = torch.ops.gpuperf.attention_decode(q, k, v, lengths, 0.125, 3, None, None, None)
    assert_close("torch.ops.gpuperf.attention_decode", attention_decode_ref(q, k, v, lengths, 0.125), out)


def test_compile_fullgraph_keeps_the_op_in_one_graph():
    graphs, backend = recording_backend()

    def step(q, k, v, lengths):
        return attention_decode(q * 2.0, k, v, lengths + 1) * 2.0

    # One KV head: under the interpreter the launch rule splits the keys in two (the
    # combine runs in the graph).
    q, k, v, lengths = make((2, 4, 1, 1, 40, 64, [39, 8]), torch.float16, seed=17)
    assert DEVICE != "cpu" or decode_launch(2, 1, 4, 40, 64, -1).num_splits == 2
    out = torch.compile(step, backend=backend, fullgraph=True)(q, k, v, lengths)
    assert len(graphs) == 1
    called = called_ops(graphs[0])
    assert "gpuperf.attention_decode" in called
    assert_close("compiled attention_decode", attention_decode_ref(q * 2.0, k, v, lengths + 1) * 2.0, out)


@pytest.mark.parametrize("splits", [1, 2], ids=["one-split", "two-splits"])
def test_compile_fullgraph_where_is_compiling_is_false(
    splits, compiling_in_traced_frames_only, eager_launches_of_a_trace
):
    """Dynamo runs the op's body on fake tensors with ``is_compiling()`` False (as torch 2.11
    does): one split takes distinct scratch tensors there, not the output twice; nothing
    launches eagerly on a fake tensor, and the graph's output is the eager call's."""
    graphs, backend = recording_backend()

    def step(q, k, v, lengths):
        return attention_decode(q * 2.0, k, v, lengths, _num_splits=splits) * 2.0

    q, k, v, lengths = make((2, 4, 1, 1, 40, 64, [39, 8]), torch.float16, seed=18)
    out = torch.compile(step, backend=backend, fullgraph=True)(q, k, v, lengths)
    assert len(graphs) == 1 and "gpuperf.attention_decode" in called_ops(graphs[0])
    assert eager_launches_of_a_trace == []
    assert torch.equal(out, step(q, k, v, lengths))
    torch._dynamo.reset()
    out = torch.compile(step, backend="aot_eager", fullgraph=True)(q, k, v, lengths)
    assert eager_launches_of_a_trace == [] and out.shape == q.shape
    if DEVICE == "cuda":  # (the interpreter does not run the kernels of an AOTAutograd graph)
        assert torch.equal(out, step(q, k, v, lengths))


# --- on a GPU, at the sizes the benchmark runs ---------------------------------------------------


def llama(batch, kv_len, s_q=1, s_max=None, seed=0):
    """bfloat16 Llama-3-8B decode inputs: 32 query heads, 8 KV heads of 128."""
    s_max = s_max or kv_len
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(batch, 32, s_q, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(batch, 8, s_max, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(batch, 8, s_max, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    return q, k, v, torch.full((batch,), kv_len, dtype=torch.int32, device="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("batch, kv_len", [(1, 1024), (1, 32768), (8, 4096), (64, 8192), (3, 5000)])
@pytest.mark.parametrize("s_q", [1, 4], ids=["Sq1", "Sq4"])
def test_gpu_llama_shapes_match_the_reference_and_sdpa(batch, kv_len, s_q):
    q, k, v, lengths = llama(batch, kv_len, s_q, seed=batch + kv_len)
    out = check(q, k, v, lengths, name="llama decode")
    # PyTorch's own: SDPA over the full cache, and with the padded-cache mask. Both round
    # the probabilities to bfloat16 too: two rounding units of the largest output apart.
    atol = 2 * torch.finfo(torch.bfloat16).eps * out.abs().max().item()
    if s_q == 1:
        full = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        torch.testing.assert_close(out, full, rtol=1.6e-2, atol=atol)
    torch.testing.assert_close(out, attention_decode_sdpa(q, k, v, lengths), rtol=1.6e-2, atol=atol)


@pytest.mark.gpu
def test_gpu_uneven_lengths_in_a_padded_cache_with_garbage():
    q, k, v, _ = llama(6, 4096, s_q=3, seed=1)
    lengths = torch.tensor([3, 4096, 1000, 17, 2049, 64], dtype=torch.int32, device="cuda")
    k_bad, v_bad = spoil_past_lengths(k, v, lengths)
    for splits in (None, 1, 7, 64):
        out = attention_decode(q, k_bad, v_bad, lengths, _num_splits=splits)
        assert_close(f"padded cache, {splits} splits", attention_decode_ref(q, k, v, lengths), out)


@pytest.mark.gpu
def test_gpu_planned_launches_read_new_inputs_and_lengths():
    attention_decode.plans.clear()
    for batch in (1, 64):  # several splits, and one
        q, k, v, lengths = llama(batch, 2048, seed=batch)
        for step in range(3):
            lengths.fill_(2048 - 100 * step)
            q.normal_()
            assert_close(
                f"B{batch} step {step}",
                attention_decode_ref(q, k, v, lengths),
                attention_decode(q, k, v, lengths),
            )
    assert len(attention_decode.plans) == 2


@pytest.mark.gpu
def test_gpu_cuda_graph_replays_with_new_lengths():
    """Captured once; the lengths (and q) change in place between replays, as a decode loop does."""
    q, k, v, lengths = llama(8, 4096, s_q=1, s_max=4096, seed=2)
    lengths.fill_(1000)
    for splits in (None, 1):
        attention_decode(q, k, v, lengths, _num_splits=splits)  # compile and plan outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = attention_decode(q, k, v, lengths, _num_splits=splits)
        for step, new in enumerate([[1000] * 8, [1, 4096, 2, 3000, 77, 1024, 1025, 4095], [4097] + [50] * 7]):
            lengths.copy_(torch.tensor(new, dtype=torch.int32))
            q.normal_()
            graph.replay()
            assert_close(f"graph replay {step}", attention_decode_ref(q, k, v, lengths), out)


@pytest.mark.gpu
def test_gpu_compile_inductor():
    q, k, v, lengths = llama(2, 3000, s_q=2, s_max=4096, seed=3)
    torch._dynamo.reset()
    compiled = torch.compile(lambda q, k, v, n: attention_decode(q, k, v, n), fullgraph=True)
    assert_close("inductor", attention_decode_ref(q, k, v, lengths), compiled(q, k, v, lengths))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("splits", [None, 1, 5], ids=["default", "one-split", "five-splits"])
def test_gpu_compile_fullgraph_and_cuda_graphs(splits, mode):
    """Inductor sees the op's kernels (the combine too, with several splits, and the split
    kernel alone with one); reduce-overhead records a CUDA graph of them and replays it on
    new queries and lengths."""
    torch._dynamo.reset()
    compiled = torch.compile(
        lambda q, k, v, n: attention_decode(q, k, v, n, _num_splits=splits), fullgraph=True, mode=mode
    )
    for seed in (1, 2, 3):  # reduce-overhead records on a later call, then replays
        q, k, v, lengths = llama(2, 3000, s_q=2, s_max=4096, seed=seed)
        lengths[1] = 17 * seed
        assert_close(
            f"compiled ({mode}), {splits} splits, seed {seed}",
            attention_decode_ref(q, k, v, lengths),
            compiled(q, k, v, lengths),
        )


@pytest.mark.gpu
@pytest.mark.parametrize("splits", [1, 5], ids=["one-split", "five-splits"])
def test_gpu_eager_plan_captures_into_a_cuda_graph(splits):
    """The eager call launches from its plan (the splits' workspace allocated again): a CUDA
    graph captures it, and the replay computes on what q and the lengths hold then."""
    q, k, v, lengths = llama(2, 3000, s_q=2, s_max=4096, seed=4)
    attention_decode(q, k, v, lengths, _num_splits=splits)  # compiles and plans outside the capture
    attention_decode(q, k, v, lengths, _num_splits=splits)
    assert len(attention_decode.plans) >= 1
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = attention_decode(q, k, v, lengths, _num_splits=splits)
    q.normal_()
    lengths.copy_(torch.tensor([2999, 5], dtype=torch.int32))
    graph.replay()
    torch.cuda.synchronize()
    assert_close(f"graph, {splits} splits", attention_decode_ref(q, k, v, lengths), out)
