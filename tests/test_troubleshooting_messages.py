"""scripts/troubleshooting_messages.py: each message it triggers names a section of the
troubleshooting page, its ids are unique, and it runs a message apart and prints its block
(on the CPU, the one message that needs no GPU: which logger carries the skip warning),
and the page shows the example file whose line numbers its torch.compile messages name."""

import importlib.util
import itertools
import re
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
_SCRIPT = ROOT / "scripts/troubleshooting_messages.py"
_spec = importlib.util.spec_from_file_location("troubleshooting_messages", _SCRIPT)
messages = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = messages  # its dataclass looks its module up there
_spec.loader.exec_module(messages)


def _section_ids(rst: str) -> set[str]:
    """The HTML ids Sphinx gives the page's section titles (a title is a line underlined by
    a line of ``-`` or ``=`` as long): lower case, every run of other characters a hyphen."""
    lines = rst.splitlines()
    titles = [
        line
        for line, under in itertools.pairwise(lines)
        if line.strip() and re.fullmatch(r"[-=]{3,}", under) and len(under) >= len(line.rstrip())
    ]
    return {re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-") for t in titles}


def test_every_message_names_a_section_of_the_page():
    sections = _section_ids((ROOT / "docs/troubleshooting.rst").read_text())
    assert "triton-out-of-resource-shared-memory" in sections
    for message in messages.MESSAGES:
        assert message.section in sections, message.id
    ids = [m.id for m in messages.MESSAGES]
    assert len(ids) == len(set(ids))


def _code_block_after(rst: str, marker: str) -> str:
    """The text of the first ``code-block`` after ``marker``, dedented, its options left out."""
    lines = rst[rst.index(marker) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(".. code-block::")) + 1
    while lines[start].strip().startswith(":") or not lines[start].strip():
        start += 1
    body = []
    for line in lines[start:]:
        if line and not line.startswith("   "):
            break
        body.append(line[3:])
    return "\n".join(body).strip() + "\n"


def test_the_page_shows_the_example_file_the_torch_compile_messages_name():
    """The page's graph break is at line 5 of example.py and ``g`` starts at line 10: the
    file it shows is the one the script compiles."""
    rst = (ROOT / "docs/troubleshooting.rst").read_text()
    shown = _code_block_after(rst, "file ``example.py``:")
    assert shown == messages.EXAMPLE
    assert shown.splitlines()[4].strip() == "if x.sum() > 0:"
    assert shown.splitlines()[9] == "@torch.compile"


def test_list_prints_every_id(capsys):
    assert messages.main(["--list"]) == 0
    assert capsys.readouterr().out.split() == [m.id for m in messages.MESSAGES]


def test_unknown_ids_are_refused():
    with pytest.raises(SystemExit):
        messages.main(["no-such/message"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a CUDA GPU")
def test_without_a_gpu_it_says_so(capsys):
    assert messages.main([]) == 1
    assert "need a CUDA GPU" in capsys.readouterr().err


def test_a_message_runs_apart_and_prints_its_block():
    logger = next(m for m in messages.MESSAGES if m.name == "skip-logger")
    block = messages.run_apart(logger, timeout=120).splitlines()
    assert block[0] == f"===== {logger.id} =====" and block[-1] == "===== end ====="
    assert block[1] == f"{messages.versions()} | TORCH_LOGS=<unset>"
    assert any("def log_cudagraph_skip_and_bump_counter" in line for line in block)
    assert any(line.startswith("artifact 'perf_hints': registered True") for line in block)
    assert "no exception" in block
