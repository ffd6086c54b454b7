"""One-off migration of the committed records and captures to the code hash of
:mod:`gpuperf.bench.sources` (record schema 3, capture schema 2), without re-measuring.

The old hash joined the token strings of a hand-typed list of sources, docstrings
included. A record or capture whose old hash still matches the code as it stands is
current: it is re-keyed with the new per-file hashes over the closure of its sources.
One that does not match stays stale (its new ``sources`` is empty, so every file reads
as new). Run once from the repository root: ``python scripts/rekey_records.py``.
"""

import hashlib
import io
import json
import sys
import tokenize
from pathlib import Path

from gpuperf.bench import captures, catalog, records
from gpuperf.bench import sources as code

ROOT = records.measurements_dir()


def _old_tokens(text: str) -> str:
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return "".join(t.string for t in tokens if t.type not in skip)


def _old_sha256(sources) -> str:
    h = hashlib.sha256()
    for rel in sorted(sources):
        h.update(rel.encode())
        path = code.PACKAGE_ROOT / rel
        h.update(_old_tokens(path.read_text()).encode() if path.suffix == ".py" else path.read_bytes())
    return h.hexdigest()


def _rekeyed(old: dict, entries, keys, current: bool) -> dict:
    hashed = code.hashes(entries) if current else {}
    new = {k: old[k] for k in keys if k in old}
    new["sources"] = hashed
    new["sources_sha256"] = code.combined_sha256(hashed) if current else old["sources_sha256"]
    return new


def main() -> int:
    done = {"current": 0, "stale": 0}
    for path in sorted(ROOT.glob("*/*.json")):
        if path.name == "hardware.json":
            continue
        old = json.loads(path.read_text())
        if old["schema_version"] != 2:
            continue
        bench = catalog.by_name(old["benchmark"])
        current = old["sources_sha256"] == _old_sha256(bench.sources)
        keyed = {**old, "schema_version": records.SCHEMA_VERSION, "ran": None, "wall_s": None}
        keyed.update(_rekeyed(old, bench.sources, (), current))
        record = {k: keyed[k] for k in records.RECORD_KEYS}
        if current:
            assert records.validate(record) == [], (path, records.validate(record))
        path.write_text(json.dumps(record, indent=1) + "\n")
        done["current" if current else "stale"] += 1
        print(f"{'re-keyed' if current else 'STALE   '} {path.relative_to(ROOT)}")
    for path in sorted(ROOT.glob("*/captures/*.json")):
        old = json.loads(path.read_text())
        if old["schema_version"] != 1:
            continue
        current = old["sources_sha256"] == _old_sha256(old["sources"])
        keyed = {**old, "schema_version": captures.SCHEMA_VERSION}
        keyed.update(_rekeyed(old, old["sources"], (), current))
        capture = {k: keyed[k] for k in captures.KEYS}
        path.write_text(json.dumps(capture, indent=1) + "\n")
        done["current" if current else "stale"] += 1
        print(f"{'re-keyed' if current else 'STALE   '} {path.relative_to(ROOT)}")
    print(done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
