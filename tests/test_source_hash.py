"""The records' source hash must come out the same on every Python the project runs on.

The GPU image runs Python 3.12, CI and laptops 3.11. :func:`gpuperf.bench.records.code_tokens`
joins the token strings of a kernel source; Python 3.11 returns an f-string as one token,
whitespace inside its braces included, while 3.12 tokenizes the expressions inside the
braces and drops that whitespace. A kernel source with ``f"{a + b}"`` therefore hashes
differently on the GPU and in CI, and every record of it reads as stale. This test finds
such f-strings in the sources any benchmark names.
"""

import io
import tokenize

import pytest

from gpuperf.bench import catalog
from gpuperf.bench.records import PACKAGE_ROOT

SOURCES = sorted({s for b in catalog.ALL for s in b.sources if s.endswith(".py")})


def whitespace_in_fields(literal: str) -> bool:
    """Whether an f-string literal has whitespace inside a replacement field (outside any
    string nested in it and outside its format spec)."""
    body = literal[literal.index(literal.lstrip("rRbBfFuU")[0]) :]
    i, depth, quote = 0, 0, None
    while i < len(body):
        c = body[i]
        if depth == 0:
            if body.startswith("{{", i):
                i += 2
                continue
            if c == "{":
                depth, quote = 1, None
        elif quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == ":" and depth == 1:
            # The format spec runs to the closing brace: its spaces are literal text.
            depth = 0
            i = body.index("}", i)
        elif c.isspace():
            return True
        i += 1
    return False


@pytest.mark.parametrize(
    "literal, expected",
    [
        ('f"{a}"', False),
        ('f"{a + b}"', True),
        ('f"{x:>8} and {y!r}"', False),
        ("f\"{', '.join(names)}\"", False),
        ('f"{{ literal braces }}"', False),
        ('f"{getattr(self, name)!r}"', True),
    ],
)
def test_whitespace_in_fields(literal, expected):
    assert whitespace_in_fields(literal) is expected


@pytest.mark.parametrize("source", SOURCES)
def test_kernel_sources_hash_alike_on_python_3_11_and_3_12(source):
    text = (PACKAGE_ROOT / source).read_text()
    found = [
        f"line {t.start[0]}: {t.string}"
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type == tokenize.STRING
        and t.string.lstrip("rRbBuU")[:1] in "fF"
        and whitespace_in_fields(t.string)
    ]
    assert not found, (
        f"{source}: f-strings with whitespace inside their braces hash differently on Python 3.11 and "
        "3.12 (write them without it, under `# fmt: off`): " + "; ".join(found)
    )
