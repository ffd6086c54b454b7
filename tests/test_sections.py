"""gpuperf.models.sections: the named parts of a model's step a profiler adds up."""

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from gpuperf.models.moe import SECTIONS
from gpuperf.models.sections import Sections


def test_outside_recording_a_part_opens_no_range():
    parts = Sections("t.", ("a", "b"))
    with profile(activities=[ProfilerActivity.CPU]) as prof, parts("a"):
        torch.ones(4).sum()
    assert not [e for e in prof.events() if e.name.startswith("t.")]


def test_inside_recording_each_part_opens_its_named_range():
    parts = Sections("t.", ("a", "b"))
    with parts.recording(), profile(activities=[ProfilerActivity.CPU]) as prof:
        with parts("a"):
            torch.ones(4).sum()
        with parts("b"):
            torch.ones(4).sum()
    names = [e.name for e in prof.events() if e.name.startswith("t.")]
    assert names == ["t.a", "t.b"]
    with parts("a"):  # recording ended: no range, and no error
        pass


def test_an_unknown_part_is_refused_by_name():
    with pytest.raises(ValueError, match="'c'"):
        Sections("t.", ("a", "b"))("c")


def test_the_moe_block_names_every_part_it_runs():
    assert SECTIONS.prefix == "moe."
    assert SECTIONS.names == ("router", "permute", "gate_up", "activation", "down", "combine", "shared")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA events need a CUDA GPU")
def test_timing_marks_each_part_between_cuda_events():
    from gpuperf.models.sections import event_times_us

    parts = Sections("t.", ("a",))
    x = torch.randn(1 << 20, device="cuda")
    with parts.timing() as marks:
        for _ in range(3):
            with parts("a"):
                x.mul_(1.0)
        torch.cuda.synchronize()
    assert [m[0] for m in marks] == ["a", "a", "a"]
    assert event_times_us(marks, 3)["a"] > 0
