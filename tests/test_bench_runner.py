"""The runner's output check: one output, or a tuple of them (a backward pass's gradients)."""

import pytest
import torch

from gpuperf.bench.runner import check


def test_check_compares_each_output_of_a_tuple():
    a, b = torch.ones(3, dtype=torch.float16), torch.zeros(2, dtype=torch.float16)
    check("grads", (a.double(), b.double()), (a, b))
    with pytest.raises(AssertionError, match=r"grads\[1\]"):
        check("grads", (a.double(), b.double()), (a, b + 1))
    with pytest.raises(AssertionError, match="expected 2 outputs"):
        check("grads", (a.double(), b.double()), a)


def test_check_compares_a_single_output():
    a = torch.ones(3, dtype=torch.float16)
    check("out", a.double(), a)
    with pytest.raises(AssertionError, match="out"):
        check("out", a.double(), a * 2)
