"""The PyTorch performance-tuning guide's recipes, each measured in one run (guide 05).

Usage (a CUDA GPU; about three minutes on an H100): ``python scripts/recipes_capture.py [--out DIR]
[--part NAME ...]``. Writes one capture per recipe under ``<out>/<gpu>/captures/``
(default ``src/gpuperf/measurements``):

* ``recipe_data_loading``: a DataLoader's ``num_workers``, ``pin_memory`` and
  ``non_blocking`` copies (each apart and both together) feeding a small conv net's
  training step, and how long a copy keeps the host while the GPU is busy;
* ``recipe_precision``: an MLP's training step in float32, with TF32 matmuls
  (``torch.set_float32_matmul_precision("high")``) and under bfloat16 autocast;
* ``recipe_zero_grad``: ``optimizer.zero_grad(set_to_none=True)`` against ``False``, with
  the events one step puts on the GPU's timeline (torch.profiler);
* ``recipe_syncs``: a training loop with host-device synchronizations (``.item()``,
  ``print(tensor)``, ``if tensor:``), found with ``torch.cuda.set_sync_debug_mode("warn")``,
  against the same loop without them;
* ``recipe_conv``: ``torch.backends.cudnn.benchmark`` and ``channels_last`` on a small
  conv net under bfloat16 autocast, each benchmark setting in a fresh process;
* ``recipe_checkpointing``: gradient checkpointing (``torch.utils.checkpoint``), peak
  memory against step time;
* ``recipe_compile``: ``torch.compile`` (default mode) on the MLP's training step, the
  compilation (from an empty cache) timed apart from the steps.

A training step is timed as the user meets it, host included: wall time over a few dozen
steps between two ``torch.cuda.synchronize()``, per step, several rounds (median, 20th and
80th percentiles). A single call (a matmul, a copy) is timed with
``triton.testing.do_bench``. Each part is written as soon as it is done; a part that fails
is reported and skipped, and the others still run.

Check it on the CPU: ``python scripts/recipes_capture.py --device cpu --smoke`` runs every
part on tiny sizes into a temporary folder, skipping what needs CUDA (pinned memory,
``do_bench``, the sync debug mode, peak GPU memory, Inductor's GPU code) and saying so.
The models and loops are defined here, so a capture does not hash them: run this script
again after changing them.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import gc
import io
import json
import multiprocessing
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

#: When this process started: the time budget (--budget) counts from here, imports included.
STARTED = time.perf_counter()

# torch.compile's time is measured from an empty cache: Inductor and Triton compile into a
# fresh folder, removed at the end. Set before torch is imported.
_SCRATCH = Path(tempfile.mkdtemp(prefix="gpuperf-recipes-"))
atexit.register(shutil.rmtree, _SCRATCH, True)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(_SCRATCH / "inductor")
os.environ["TRITON_CACHE_DIR"] = str(_SCRATCH / "triton")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    """Every size the parts use; :data:`FULL` on a GPU, :data:`SMOKE` for a check on the CPU."""

    steps: int  # training steps per timed round
    rounds: int  # timed rounds
    warmup: int  # untimed steps first
    batch: int  # images per batch (data loading, conv)
    image: int  # image height = width
    conv_width: int  # channels of the conv net's first layer
    workers: tuple  # num_workers tried
    tokens: int  # rows of the MLP's input
    width: int  # the MLP's width (its hidden layer is 4x)
    depth: int  # the MLP's blocks
    matmul: int  # n of the n x n x n matmul timed alone
    small_width: int  # zero_grad's many-small-layers model
    small_depth: int
    small_tokens: int
    sync_widths: tuple  # widths of the sync loop's model
    sync_tokens: int
    checkpoint_tokens: int
    checkpoint_depth: int
    log_every: int  # the sync loop prints every this many steps


FULL = Sizes(
    steps=10,
    rounds=5,
    warmup=3,
    batch=256,
    image=64,
    conv_width=64,
    workers=(0, 2, 4),
    tokens=8192,
    width=1024,
    depth=4,
    matmul=4096,
    small_width=256,
    small_depth=16,
    small_tokens=256,
    sync_widths=(256, 1024, 2048),
    sync_tokens=2048,
    checkpoint_tokens=16384,
    checkpoint_depth=8,
    log_every=10,
)
SMOKE = Sizes(
    steps=1,
    rounds=2,
    warmup=1,
    batch=4,
    image=8,
    conv_width=4,
    workers=(0, 2),
    tokens=32,
    width=32,
    depth=2,
    matmul=64,
    small_width=16,
    small_depth=3,
    small_tokens=8,
    sync_widths=(16, 32),
    sync_tokens=16,
    checkpoint_tokens=32,
    checkpoint_depth=2,
    log_every=2,
)


def log(message: str) -> None:
    print(message, flush=True)


class Skipped(Exception):
    """A part, or a piece of one, that cannot run on this device; the message says why."""


# --- timing -----------------------------------------------------------------------------


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def spread(values: list[float]) -> dict:
    """Median, 20th and 80th percentiles of ``values`` (ms), and the values themselves."""
    from gpuperf.bench.timing import quantile

    return {
        "median": statistics.median(values),
        "p20": quantile(values, 0.2),
        "p80": quantile(values, 0.8),
        "runs": list(values),
    }


def step_ms(step, device: torch.device, sizes: Sizes) -> dict:
    """Wall time per call of ``step()`` as a training loop meets it, host included:
    ``sizes.warmup`` untimed calls, then ``sizes.rounds`` rounds of ``sizes.steps``
    calls, each round between two synchronizations. Milliseconds per call,
    :func:`spread`."""
    for _ in range(sizes.warmup):
        step()
    per_step = []
    for _ in range(sizes.rounds):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(sizes.steps):
            step()
        synchronize(device)
        per_step.append((time.perf_counter() - start) * 1e3 / sizes.steps)
    return spread(per_step)


def first_call_s(fn, device: torch.device) -> float:
    """Seconds one call of ``fn()`` takes, synchronized: a first call, with what it sets up."""
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - start


def call_ms(fn, device: torch.device) -> dict:
    """One call of ``fn`` timed alone: ``triton.testing.do_bench`` on a GPU (L2 flushed,
    median and 20th/80th percentiles, ms)."""
    if device.type != "cuda":
        raise Skipped("do_bench times with CUDA events")
    from triton.testing import do_bench

    median, p20, p80 = do_bench(fn, warmup=25, rep=100, quantiles=[0.5, 0.2, 0.8])
    return {"median": median, "p20": p20, "p80": p80}


def config(key: str, label: str, step: dict, **extra) -> dict:
    """One configuration of a recipe as the capture keeps it."""
    return {"key": key, "label": label, "step": step, **extra}


def case(key: str, label: str, configs: list[dict], baseline: str) -> dict:
    """The configurations of one recipe at one size, and the one the others are read against."""
    return {"key": key, "label": label, "baseline": baseline, "configs": configs}


# --- the models ---------------------------------------------------------------------------


class Block(nn.Module):
    """``x + W2 GELU(W1 LayerNorm(x))``: a transformer's MLP sub-block, its hidden
    layer 4x the width."""

    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class MLP(nn.Module):
    """``depth`` :class:`Block` one after another; with ``checkpoint_every=k``
    every k-th block is checkpointed (``k=1``: all of them)."""

    def __init__(self, width: int, depth: int, checkpoint_every: int = 0):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.checkpoint_every = checkpoint_every

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            if self.checkpoint_every and i % self.checkpoint_every == 0:
                x = checkpointed(block, x)
            else:
                x = block(x)
        return x


def checkpointed(block: nn.Module, x):
    """``block(x)`` keeping only ``x`` for the backward pass, which runs the block's
    forward again to get its activations back."""
    return checkpoint(block, x, use_reentrant=False)


def conv_net(width: int, classes: int = 10) -> nn.Sequential:
    """A small convolutional classifier: four 3x3 conv + BatchNorm + ReLU layers,
    one 2x2 pooling, global average pooling and a linear head."""

    def layer(c_in, c_out):
        conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        return [conv, nn.BatchNorm2d(c_out), nn.ReLU()]

    return nn.Sequential(
        *layer(3, width),
        *layer(width, width),
        nn.MaxPool2d(2),
        *layer(width, 2 * width),
        *layer(2 * width, 2 * width),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(2 * width, classes),
    )


def train_step(model, opt, x, y, *, autocast_dtype=None, set_to_none=True):
    """One training step: forward, loss, backward, optimizer step. Returns the loss,
    still on the device (reading it would make the host wait for the GPU)."""
    opt.zero_grad(set_to_none=set_to_none)
    use_autocast = autocast_dtype is not None
    with torch.autocast(x.device.type, dtype=autocast_dtype, enabled=use_autocast):
        out = model(x)
        if y.dtype == torch.long:  # class labels
            loss = F.cross_entropy(out, y)
        else:
            loss = F.mse_loss(out.float(), y)
    loss.backward()
    opt.step()
    return loss


def _mlp_setup(width: int, depth: int, tokens: int, device, checkpoint_every: int = 0):
    torch.manual_seed(0)
    model = MLP(width, depth, checkpoint_every).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(tokens, width, device=device)
    y = torch.randn(tokens, width, device=device)
    return model, opt, x, y


def _parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --- 1. data loading ----------------------------------------------------------------------


class AugmentedImages(Dataset):
    """Images kept as uint8 (as a decoder would give them), each sample cropped, maybe
    flipped and normalized to float32 on the host: the per-sample work of a vision input
    pipeline. Sample ``i`` is ``(float32 [3, size, size], label)``."""

    MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)

    def __init__(self, n_samples: int, size: int, stored: int = 64, classes: int = 10):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.randint(
            0, 256, (stored, 3, size + 8, size + 8), dtype=torch.uint8, generator=generator
        )
        self.n_samples, self.size, self.classes = n_samples, size, classes

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, i: int):
        image = self.images[i % len(self.images)]
        top, left = (7 * i) % 9, (5 * i) % 9
        image = image[:, top : top + self.size, left : left + self.size]
        if i % 2:
            image = image.flip(-1)
        return (image.float() / 255 - self.MEAN) / self.STD, i % self.classes


def make_loader(dataset, batch_size: int, num_workers: int, pin_memory: bool):
    """Batches of ``dataset`` made by ``num_workers`` worker processes (0: by the
    training process itself), in page-locked (pinned) host memory when
    ``pin_memory``."""
    return DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=num_workers,
        pin_memory=pin_memory,
        persistent_workers=num_workers > 0,
    )


def train_from_loader(batches, model, opt, device, steps: int, non_blocking: bool):
    """``steps`` training steps on the next batches of the iterator ``batches``: each
    batch copied to the GPU, then one bfloat16 step. Without ``non_blocking`` the copy
    returns only once the GPU has run everything queued before it."""
    for _ in range(steps):
        x, y = next(batches)
        x = x.to(device, non_blocking=non_blocking)
        y = y.to(device, non_blocking=non_blocking)
        train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)


def _loader_ms(loader, device, sizes: Sizes, consume) -> dict:
    """Per batch: ``consume(batch)`` on the batches of one pass over ``loader`` (the
    workers started once), :func:`step_ms`'s rounds."""
    batches = iter(loader)
    return step_ms(lambda: consume(next(batches)), device, sizes)


#: The loader's copies measured at each ``num_workers``: (key suffix, ``pin_memory``,
#: ``non_blocking``, label suffix). Pinning and ``non_blocking`` apart, then together.
LOADER_COPIES = (
    ("", False, False, ""),
    ("_pin_blocking", True, False, ", pin_memory"),
    ("_nonblocking", False, True, ", non_blocking"),
    ("_pinned", True, True, ", pin_memory, non_blocking"),
)


def host_wait_ms(copy, keep_busy, device, repeats: int = 5) -> dict:
    """How long ``copy()`` keeps the host while the GPU is busy: ``keep_busy()`` queues work
    on the GPU and returns, then ``copy()`` is timed on the host's clock until it returns.
    Milliseconds, :func:`spread` of ``repeats``."""
    waits = []
    for _ in range(repeats):
        synchronize(device)
        keep_busy()
        start = time.perf_counter()
        copy()
        waits.append((time.perf_counter() - start) * 1e3)
        synchronize(device)
    return spread(waits)


def copy_waits(pageable, pinned, device) -> dict:
    """The host's wait in ``.to(device)`` of a batch from ``pageable`` and from ``pinned``
    memory, blocking and ``non_blocking``, each queued behind a few milliseconds of matmuls
    (``busy``: their GPU time alone, :func:`call_ms`)."""
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)

    def keep_busy():
        for _ in range(4):
            a @ a

    waits = {}
    for memory, batch in (("pageable", pageable), ("pinned", pinned)):
        for non_blocking in (False, True):
            key = f"{memory}_{'non_blocking' if non_blocking else 'blocking'}"
            waits[key] = host_wait_ms(
                lambda b=batch, nb=non_blocking: b.to(device, non_blocking=nb), keep_busy, device
            )
    return {"busy": call_ms(keep_busy, device), "host_wait": waits}


def part_data_loading(device, sizes: Sizes, out) -> dict:
    cuda = device.type == "cuda"
    n_batches = sizes.warmup + sizes.rounds * sizes.steps
    dataset = AugmentedImages(n_batches * sizes.batch, sizes.image)
    torch.manual_seed(0)
    model = conv_net(sizes.conv_width).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step_on(x, y):
        train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)

    x0, y0 = next(iter(make_loader(dataset, sizes.batch, 0, False)))
    resident_x, resident_y = x0.to(device), y0.to(device)
    gpu_step = step_ms(lambda: step_on(resident_x, resident_y), device, sizes)
    log(f"  step on a batch already on the device: {gpu_step['median']:.2f} ms")

    copies = None
    if cuda:
        pinned_x = x0.pin_memory()
        copies = {
            "bytes": x0.numel() * x0.element_size(),
            "pageable": call_ms(lambda: x0.to(device, non_blocking=True), device),
            "pinned": call_ms(lambda: pinned_x.to(device, non_blocking=True), device),
            **copy_waits(x0, pinned_x, device),
        }
        pageable, pinned = copies["pageable"]["median"], copies["pinned"]["median"]
        log(f"  one batch's copy: pageable {pageable:.3f} ms, pinned {pinned:.3f} ms")
        waits = ", ".join(f"{k} {v['median']:.3f} ms" for k, v in copies["host_wait"].items())
        log(f"  the host waits in .to() behind {copies['busy']['median']:.2f} ms of GPU work: {waits}")
    else:
        log("  skipped on the CPU: pinned memory and the copy's timing need CUDA")

    configs = []
    for workers in sizes.workers:
        for suffix, pin, non_blocking, named in LOADER_COPIES if cuda else LOADER_COPIES[:1]:
            loader = make_loader(dataset, sizes.batch, workers, pin)

            def consume(batch, non_blocking=non_blocking):
                batch[0].to(device, non_blocking=non_blocking)

            loading = _loader_ms(loader, device, sizes, consume)
            loader = make_loader(dataset, sizes.batch, workers, pin)
            batches = iter(loader)
            step = step_ms(
                lambda b=batches, nb=non_blocking: train_from_loader(b, model, opt, device, 1, nb),
                device,
                sizes,
            )
            label = f"num_workers={workers}" + named
            configs.append(
                config(
                    f"w{workers}{suffix}",
                    label,
                    step,
                    num_workers=workers,
                    pin_memory=pin,
                    non_blocking=non_blocking,
                    loading=loading,
                )
            )
            log(f"  {label}: {step['median']:.2f} ms per step, loading {loading['median']:.2f} ms per batch")
            del loader, batches
            gc.collect()  # the persistent workers of this loader exit
    payload = {
        "model": f"conv net, first layer {sizes.conv_width} channels, bfloat16 autocast, AdamW",
        "batch": sizes.batch,
        "sample": [3, sizes.image, sizes.image],
        "sample_work": "crop, flip and normalize a uint8 image to float32 (AugmentedImages)",
        "steps": sizes.steps,
        "rounds": sizes.rounds,
        "gpu_step": gpu_step,
        "copies": copies,
        "cases": [case("loader", f"batches of {sizes.batch}", configs, baseline="w0")],
    }
    return payload


# --- 2. TF32 and autocast ----------------------------------------------------------------


@contextlib.contextmanager
def float32_matmul_precision(precision: str):
    """Float32 matmuls computed at ``precision`` inside the block: ``"highest"``
    (float32 throughout) or ``"high"`` (TF32 on tensor cores); put back after."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


#: The precision recipes: (key, label, float32 matmul precision, autocast dtype).
PRECISIONS = (
    ("fp32", "float32", "highest", None),
    ("tf32", "TF32 matmuls", "high", None),
    ("bf16", "bfloat16 autocast", "highest", torch.bfloat16),
)


def _matmul_precision_in_force() -> dict:
    """The float32 matmul setting in force, as ``torch.get_float32_matmul_precision()`` and
    (PyTorch 2.9 and later) ``torch.backends.cuda.matmul.fp32_precision`` report it."""
    found = {"matmul_precision": torch.get_float32_matmul_precision()}
    try:
        found["fp32_precision"] = torch.backends.cuda.matmul.fp32_precision
    except (AttributeError, RuntimeError):
        pass
    return found


def _relative_error(out, reference) -> float:
    return ((out.double() - reference).abs().max() / reference.abs().max()).item()


def part_precision(device, sizes: Sizes, out) -> dict:
    model, opt, x, y = _mlp_setup(sizes.width, sizes.depth, sizes.tokens, device)
    reference_model = MLP(sizes.width, sizes.depth).to(device).double()
    reference_model.load_state_dict(model.state_dict())
    with torch.no_grad():
        reference = reference_model(x.double())
    del reference_model
    n = sizes.matmul
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    # Every error first, on the weights the float64 reference was given: the timed steps
    # below train the model, and its output then no longer matches that reference.
    errors = {}
    for key, _, precision, dtype in PRECISIONS:
        with float32_matmul_precision(precision):
            with torch.no_grad(), torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
                errors[key] = _relative_error(model(x), reference)
    configs, matmuls = [], {}
    for key, label, precision, dtype in PRECISIONS:
        error = errors[key]
        with float32_matmul_precision(precision):
            step = step_ms(
                lambda dtype=dtype: train_step(model, opt, x, y, autocast_dtype=dtype), device, sizes
            )
            try:
                # The inputs already in the matmul's dtype: autocast would convert them on
                # every call, and that copy is not the matmul.
                a_, b_ = (a, b) if dtype is None else (a.to(dtype), b.to(dtype))
                matmuls[key] = call_ms(lambda a_=a_, b_=b_: a_ @ b_, device)
            except Skipped as why:
                matmuls[key] = None
                log(f"  {key} matmul alone skipped: {why}")
            in_force = _matmul_precision_in_force()
        configs.append(config(key, label, step, relative_error=error, **in_force))
        log(f"  {label}: {step['median']:.2f} ms per step, forward's relative error {error:.1e}")
    params = _parameters(model)
    return {
        "model": f"{sizes.depth} blocks x + W2 GELU(W1 LayerNorm(x)), width {sizes.width}, AdamW",
        "tokens": sizes.tokens,
        "width": sizes.width,
        "depth": sizes.depth,
        "parameters": params,
        "flops_per_step": 6 * (params - _norm_parameters(model)) * sizes.tokens,
        "steps": sizes.steps,
        "rounds": sizes.rounds,
        "matmul": {"n": n, "flops": 2 * n**3, "times": matmuls},
        "errors_on": "initial weights",
        "cases": [case("mlp", f"{sizes.tokens} tokens, width {sizes.width}", configs, baseline="fp32")],
    }


def _norm_parameters(model: nn.Module) -> int:
    """Parameters that no matmul multiplies: the norms' and the biases."""
    return sum(p.numel() for name, p in model.named_parameters() if "norm" in name or name.endswith("bias"))


# --- 3. zero_grad(set_to_none) -----------------------------------------------------------


#: The Chrome-trace categories of the events torch.profiler puts on the GPU's timeline: the
#: work (kernels, copies, memsets) and the ranges annotated around it (``gpu_user_annotation``,
#: such as ``Optimizer.step#AdamW.step``, which spans the optimizer's kernels).
GPU_SIDE = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")


def gpu_events(prof) -> dict:
    """The events of ``prof`` (a finished ``torch.profiler.profile``) on the GPU's timeline,
    from the Chrome trace it exports: ``{category: [[start, end], ...]}`` for each category
    of :data:`GPU_SIDE`, in µs from the first event's start. Kept whole, annotations
    included, so that a page can count the work alone and take the union of its intervals
    (:func:`gpuperf.pages.recipes.gpu_work`)."""
    path = _SCRATCH / "profile.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    path.unlink()
    found = [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_SIDE]
    first = min((e["ts"] for e in found), default=0.0)
    by_category = {cat: [] for cat in GPU_SIDE}
    for e in sorted(found, key=lambda e: e["ts"]):
        start = e["ts"] - first
        by_category[e["cat"]].append([round(start, 3), round(start + e["dur"], 3)])
    return by_category


def ops_per_step(step, device) -> dict:
    """The ops one ``step()`` runs, from ``torch.profiler``: each ATen op's count, and on a
    GPU the events on its timeline (:func:`gpu_events`): the kernels, memsets and copies it
    ran there, and the ranges annotated around them."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        step()
        synchronize(device)
    aten = Counter(e.name for e in prof.events() if e.name.startswith("aten::"))
    on_gpu = gpu_events(prof) if device.type == "cuda" else None
    return {"aten": dict(sorted(aten.items())), "gpu_events": on_gpu}


def part_zero_grad(device, sizes: Sizes, out) -> dict:
    shapes = (
        ("many_small", sizes.small_width, sizes.small_depth, sizes.small_tokens),
        ("few_large", sizes.width, sizes.depth, sizes.tokens),
    )
    measured = []
    for key, width, depth, tokens in shapes:
        model, opt, x, y = _mlp_setup(width, depth, tokens, device)
        steps = {}
        for set_to_none in (False, True):

            def step(model=model, opt=opt, x=x, y=y, set_to_none=set_to_none):
                train_step(model, opt, x, y, autocast_dtype=torch.bfloat16, set_to_none=set_to_none)

            steps[set_to_none] = step
        timings = {s: step_ms(steps[s], device, sizes) for s in steps}
        tensors = len(list(model.parameters()))
        measured.append((key, f"{depth} blocks of width {width}, {tokens} tokens", tensors, steps, timings))
    # Profiled after every timing, so the profiler's hooks are nowhere near the times.
    cases = []
    for key, label, tensors, steps, timings in measured:
        configs = []
        for set_to_none, step in steps.items():
            try:
                ops = ops_per_step(step, device)
            except Exception as err:  # the profiler explains the timing; it is not the timing
                ops = {"error": f"{type(err).__name__}: {err}"}
            name = f"zero_grad(set_to_none={set_to_none})"
            timing = timings[set_to_none]
            configs.append(config(f"set_to_none_{str(set_to_none).lower()}", name, timing, ops=ops))
            work = sum(len(v) for k, v in (ops.get("gpu_events") or {}).items() if k != "gpu_user_annotation")
            log(f"  {key}, {name}: {timing['median']:.3f} ms per step, {work} kernels, copies and memsets")
        label = f"{label} ({tensors} parameter tensors)"
        cases.append(case(key, label, configs, baseline="set_to_none_false") | {"parameter_tensors": tensors})
    return {
        "model": "blocks x + W2 GELU(W1 LayerNorm(x)), bfloat16 autocast, AdamW",
        "steps": sizes.steps,
        "rounds": sizes.rounds,
        "cases": cases,
    }


# --- 4. host-device synchronizations -------------------------------------------------------


def train_with_syncs(step, batches, log_every: int) -> list[float]:
    """A training loop as often written: three lines in it make the host wait for
    the GPU."""
    losses = []
    for i, (x, y) in enumerate(batches):
        loss = step(x, y)
        losses.append(loss.item())  # copies the loss to the host: waits for the step
        if loss.isnan():  # a tensor's truth value is read on the host: waits
            raise FloatingPointError(f"loss is NaN at step {i}")
        if i % log_every == 0:
            print(f"step {i}: loss", loss)  # formatting a tensor reads it: waits
    return losses


def train_without_syncs(step, batches, log_every: int) -> list[float]:
    """The same loop with the losses kept on the GPU and read once, at the end."""
    losses = []
    for x, y in batches:
        losses.append(step(x, y).detach())
    losses = torch.stack(losses)
    if losses.isnan().any():
        raise FloatingPointError("loss is NaN")
    for i, loss in enumerate(losses.tolist()):
        if i % log_every == 0:
            print(f"step {i}: loss {loss:.4f}")
    return losses.tolist()


def find_syncs(fn) -> list[str]:
    """Run ``fn()`` under ``torch.cuda.set_sync_debug_mode("warn")``; return, for each
    synchronization it warned about, the line of this script that caused it."""
    found = []

    def record(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" in str(message).lower() and "prototype" not in str(message):
            found.append(_line_in_this_script())
            _MESSAGES.setdefault(str(message).split(" (Triggered")[0], None)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return found


#: The warnings' texts as the sync debug mode printed them (one of each).
_MESSAGES: dict[str, None] = {}


def _line_in_this_script() -> str:
    """The innermost line of this script on the stack, outside :func:`find_syncs`."""
    here = str(Path(__file__).resolve())
    for frame in reversed(traceback.extract_stack()):
        if str(Path(frame.filename).resolve()) == here and frame.name not in (
            "record",
            "_line_in_this_script",
        ):
            return (frame.line or f"line {frame.lineno}").split("  #")[0]
    return "(outside this script)"


def part_syncs(device, sizes: Sizes, out) -> dict:
    cuda = device.type == "cuda"
    n = sizes.steps * 3
    cases = []
    found = {}
    one_step = {}
    for width in sizes.sync_widths:
        model, opt, _, _ = _mlp_setup(width, sizes.depth, sizes.sync_tokens, device)
        batches = [
            (
                torch.randn(sizes.sync_tokens, width, device=device),
                torch.randn(sizes.sync_tokens, width, device=device),
            )
            for _ in range(n)
        ]

        def step(x, y, model=model, opt=opt):
            return train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)

        configs = []
        for key, label, loop in (
            ("syncs", "loop with .item(), if, print", train_with_syncs),
            ("no_syncs", "loop without syncs", train_without_syncs),
        ):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                loop(step, batches[: sizes.warmup], sizes.log_every)  # warm-up
                if cuda and width == sizes.sync_widths[0]:
                    synchronize(device)
                    lines = find_syncs(lambda loop=loop: loop(step, batches, sizes.log_every))
                    found[key] = {
                        "steps": n,
                        "count": len(lines),
                        "by_line": dict(Counter(lines).most_common()),
                    }
                timing = _loop_ms(
                    lambda loop=loop: loop(step, batches, sizes.log_every), n, device, sizes.rounds
                )
            configs.append(config(key, label, timing))
            log(f"  width {width}, {key}: {timing['median']:.3f} ms per step")
        cases.append(case(f"w{width}", f"width {width}", configs, baseline="syncs"))
        one_step[width] = lambda step=step, batch=batches[0]: step(*batch)
    # Profiled after every timing, so the profiler's hooks are nowhere near the times.
    for width, c in zip(sizes.sync_widths, cases, strict=True):
        try:
            c["gpu_events"] = ops_per_step(one_step[width], device)["gpu_events"]
        except Exception as err:  # the profiler explains the timing; it is not the timing
            c["gpu_events"] = None
            log(f"  width {width}: the profiler failed ({type(err).__name__}: {err})")
    if not cuda:
        log("  sync counting skipped on the CPU: torch.cuda.set_sync_debug_mode needs CUDA")
    else:
        for key, f in found.items():
            log(f"  {key}: {f['count']} synchronizations in {f['steps']} steps: {f['by_line']}")
    return {
        "model": f"{sizes.depth} blocks x + W2 GELU(W1 LayerNorm(x)), bfloat16 autocast, AdamW",
        "tokens": sizes.sync_tokens,
        "steps_per_loop": n,
        "log_every": sizes.log_every,
        "rounds": sizes.rounds,
        "found": found or None,
        "messages": list(_MESSAGES),
        "counted_at_width": sizes.sync_widths[0],
        "cases": cases,
    }


def _loop_ms(run_loop, n_steps: int, device, rounds: int) -> dict:
    """Wall time per step of ``run_loop()`` (``n_steps`` steps), synchronized after the
    loop, over ``rounds`` rounds (ms)."""
    per_step = []
    for _ in range(rounds):
        synchronize(device)
        start = time.perf_counter()
        run_loop()
        synchronize(device)
        per_step.append((time.perf_counter() - start) * 1e3 / n_steps)
    return spread(per_step)


# --- 5. cudnn.benchmark and channels_last --------------------------------------------------


def to_channels_last(model: nn.Module, x):
    """The model's 4-d weights and the input laid out NHWC (channels innermost);
    shapes and results stay the same."""
    model = model.to(memory_format=torch.channels_last)
    return model, x.contiguous(memory_format=torch.channels_last)


def conv_configs(benchmark: bool, device_type: str, sizes: Sizes) -> list[dict]:
    """Both layouts' training steps with ``torch.backends.cudnn.benchmark = benchmark``, in
    this process: for NCHW and then channels_last, the first step's seconds (the choice
    of algorithms for the new shapes) and :func:`step_ms`. One step at half the batch comes
    first, so that CUDA, cuDNN, cuBLAS and the optimizer are set up before any first step
    timed here."""
    device = torch.device(device_type)
    torch.backends.cudnn.benchmark = benchmark

    def make_step(layout: str, batch: int):
        torch.manual_seed(0)
        model = conv_net(sizes.conv_width).to(device)
        x = torch.randn(batch, 3, sizes.image, sizes.image, device=device)
        y = torch.randint(0, 10, (batch,), device=device)
        if layout == "nhwc":
            model, x = to_channels_last(model, x)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        return lambda: train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)

    first_call_s(make_step("nchw", max(1, sizes.batch // 2)), device)
    configs = []
    for layout in ("nchw", "nhwc"):
        step = make_step(layout, sizes.batch)
        first = first_call_s(step, device)
        timing = step_ms(step, device, sizes)
        key = f"{layout}_{'benchmark' if benchmark else 'heuristic'}"
        label = ("channels_last" if layout == "nhwc" else "NCHW") + (", cudnn.benchmark" if benchmark else "")
        configs.append(config(key, label, timing, first_step_s=first, benchmark=benchmark, layout=layout))
        log(f"  {label}: {timing['median']:.3f} ms per step, first step {first:.2f} s")
    return configs


def part_conv(device, sizes: Sizes, out) -> dict:
    # PyTorch keeps the algorithm chosen for each convolution's shapes and layout, whether
    # cuDNN's heuristic picked it or benchmark mode timed it, under a key without the
    # benchmark flag: in one process the second setting would reuse the first's choices.
    # So each setting runs in a fresh process.
    spawn = multiprocessing.get_context("spawn")
    configs = []
    for benchmark in (False, True):
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
            configs += pool.submit(conv_configs, benchmark, device.type, sizes).result()
    return {
        "model": f"conv net, first layer {sizes.conv_width} channels, bfloat16 autocast, AdamW",
        "batch": sizes.batch,
        "image": [3, sizes.image, sizes.image],
        "steps": sizes.steps,
        "rounds": sizes.rounds,
        "process_per_setting": True,
        "warmup_batch": max(1, sizes.batch // 2),
        "cases": [
            case(
                "conv",
                f"batch {sizes.batch}, {sizes.image}x{sizes.image}",
                configs,
                baseline="nchw_heuristic",
            )
        ],
    }


# --- 6. gradient checkpointing ------------------------------------------------------------


def peak_step_bytes(step, device) -> int | None:
    """GPU memory one ``step()`` allocates at its peak beyond what was allocated before it
    (weights, optimizer state, the last step's gradients): activations, gradients,
    workspaces, in bytes. None on the CPU."""
    if device.type != "cuda":
        return None
    synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    step()
    synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


def part_checkpointing(device, sizes: Sizes, out) -> dict:
    configs = []
    for every, label in ((0, "no checkpointing"), (2, "every other block"), (1, "every block")):
        model, opt, x, y = _mlp_setup(
            sizes.width, sizes.checkpoint_depth, sizes.checkpoint_tokens, device, every
        )

        def step(model=model, opt=opt, x=x, y=y):
            train_step(model, opt, x, y, autocast_dtype=torch.bfloat16)

        timing = step_ms(step, device, sizes)
        peak = peak_step_bytes(step, device)
        configs.append(config(f"every_{every}", label, timing, checkpoint_every=every, peak_bytes=peak))
        shown = "not measured on the CPU" if peak is None else f"{peak / 2**30:.2f} GiB"
        log(f"  {label}: {timing['median']:.2f} ms per step, peak {shown}")
        del model, opt, x, y
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return {
        "model": f"{sizes.checkpoint_depth} blocks x + W2 GELU(W1 LayerNorm(x)), width {sizes.width}, "
        "bfloat16 autocast, AdamW",
        "tokens": sizes.checkpoint_tokens,
        "steps": sizes.steps,
        "rounds": sizes.rounds,
        "cases": [
            case("mlp", f"{sizes.checkpoint_tokens} tokens, width {sizes.width}", configs, baseline="every_0")
        ],
    }


# --- 7. torch.compile ----------------------------------------------------------------------


def compiled(model: nn.Module, backend: str = "inductor") -> nn.Module:
    """``model`` under ``torch.compile`` (default mode): compiled on its first call,
    forward and backward, for the shapes it meets."""
    return torch.compile(model, backend=backend)


def part_compile(device, sizes: Sizes, out, smoke: bool = False) -> dict:
    # On the CPU check, Dynamo and AOTAutograd run but no code is generated (a C++
    # compile would not fit the check's time).
    backend = "aot_eager" if smoke and device.type != "cuda" else "inductor"
    configs = []
    for key, label in (("eager", "eager"), ("compile", "torch.compile")):
        model, opt, x, y = _mlp_setup(sizes.width, sizes.depth, sizes.tokens, device)
        run = compiled(model, backend) if key == "compile" else model

        def step(run=run, opt=opt, x=x, y=y):
            train_step(run, opt, x, y, autocast_dtype=torch.bfloat16)

        first = first_call_s(step, device)
        timing = step_ms(step, device, sizes)
        configs.append(config(key, label, timing, first_step_s=first))
        log(f"  {label}: first step {first:.2f} s, then {timing['median']:.3f} ms per step")
    return {
        "model": f"{sizes.depth} blocks x + W2 GELU(W1 LayerNorm(x)), width {sizes.width}, "
        "bfloat16 autocast, AdamW (the optimizer eager)",
        "tokens": sizes.tokens,
        "backend": backend,
        "mode": "default",
        "cache": "empty (Inductor's and Triton's caches in a fresh folder)",
        "steps": sizes.steps,
        "rounds": sizes.rounds,
        "cases": [case("mlp", f"{sizes.tokens} tokens, width {sizes.width}", configs, baseline="eager")],
    }


# --- running the parts ---------------------------------------------------------------------

#: Each part: (capture name, function, tool, timing method), in the order they run:
#: torch.compile, the longest and least predictable, after the other timed parts; the two
#: parts that run torch.profiler last, so its hooks come after every other timing.
_STEP_METHOD = "wall time per training step between two torch.cuda.synchronize(), host included"
PARTS = {
    "data_loading": (
        "recipe_data_loading",
        part_data_loading,
        "torch.utils.data.DataLoader; triton.testing.do_bench for one batch's copy",
        _STEP_METHOD + "; one batch's host-to-device copy with triton.testing.do_bench",
    ),
    "precision": (
        "recipe_precision",
        part_precision,
        "torch.set_float32_matmul_precision, torch.autocast; triton.testing.do_bench for the matmul",
        _STEP_METHOD + "; the matmul alone with triton.testing.do_bench",
    ),
    "conv": ("recipe_conv", part_conv, "torch.backends.cudnn.benchmark, torch.channels_last", _STEP_METHOD),
    "checkpointing": (
        "recipe_checkpointing",
        part_checkpointing,
        "torch.utils.checkpoint; torch.cuda.max_memory_allocated",
        _STEP_METHOD + "; peak memory of one step from the caching allocator",
    ),
    "compile": ("recipe_compile", part_compile, "torch.compile (default mode)", _STEP_METHOD),
    "zero_grad": ("recipe_zero_grad", part_zero_grad, "Optimizer.zero_grad; torch.profiler", _STEP_METHOD),
    "syncs": (
        "recipe_syncs",
        part_syncs,
        'torch.cuda.set_sync_debug_mode("warn")',
        "wall time per step of a whole loop, synchronized after it, host included",
    ),
}


def cpu_provenance(method: str) -> dict:
    """Provenance of a smoke run on the CPU: its numbers describe no GPU."""
    from gpuperf.bench import records

    return {
        "gpu": "CPU smoke run",
        "sm_count": 0,
        "memory_gib": 0.0,
        "l2_bytes": None,
        "compute_capability": "none",
        "driver": "none",
        "cuda": "none",
        "torch": torch.__version__,
        "triton": "none",
        "python": platform.python_version(),
        "gpuperf_commit": records.gpuperf_commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "timing_method": method,
    }


def run_part(name: str, device, sizes: Sizes, out: Path | None, smoke: bool) -> Path:
    """Measure one part and write its capture; returns the path written."""
    from gpuperf.bench import captures

    capture_name, measure, tool, method = PARTS[name]
    if name == "compile":
        payload = measure(device, sizes, out, smoke=smoke)
    else:
        payload = measure(device, sizes, out)
    payload = {"device": device.type, "smoke": smoke, **payload}
    provenance = cpu_provenance(method) if device.type != "cuda" else None
    cap = captures.build(capture_name, tool=tool, payload=payload, method=method, provenance=provenance)
    return captures.write(cap, out)


def main(argv: list[str] | None = None) -> int:
    from gpuperf.bench import captures

    parser = captures.script_parser(__doc__.splitlines()[0], PARTS)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a check that every part runs, not a measurement"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=220.0,
        help="seconds since the start: a part not started by then is skipped (default 220)",
    )
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        log("no CUDA GPU: nothing to capture (--device cpu --smoke checks the script on the CPU)")
        return 1
    device = torch.device(args.device)
    sizes = SMOKE if args.smoke else FULL
    out = args.out
    if out is None and (args.smoke or device.type != "cuda"):
        out = Path(tempfile.mkdtemp(prefix="gpuperf-recipes-smoke-"))  # never beside the committed captures
    where = out or "the measurements folder"
    log(f"device {device}, {'smoke' if args.smoke else 'full'} sizes, captures into {where}")
    failed = []
    for name in args.part or PARTS:
        elapsed = time.perf_counter() - STARTED
        if elapsed > args.budget:
            log(f"--- {name}: skipped, {elapsed:.0f} s already spent of the {args.budget:.0f} s budget")
            failed.append(name)
            continue
        log(f"--- {name}")
        part_start = time.perf_counter()
        try:
            path = run_part(name, device, sizes, out, args.smoke)
            log(f"{name} -> {path} ({time.perf_counter() - part_start:.1f} s)")
        except Skipped as why:
            log(f"{name} skipped: {why} ({time.perf_counter() - part_start:.1f} s)")
        except Exception:
            traceback.print_exc()
            log(f"{name} failed after {time.perf_counter() - part_start:.1f} s; the other parts go on")
            failed.append(name)
    log(
        f"all parts, imports included: {time.perf_counter() - STARTED:.1f} s"
        + (f"; not written: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
