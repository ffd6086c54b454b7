"""The code hash that decides when a record is stale (:mod:`gpuperf.bench.sources`): it
changes with what runs and with nothing else, the same on every Python, and it follows a
benchmark's sources through their imports."""

import shutil

import pytest

from gpuperf.bench import catalog, records, sources

BASE = 'def f(x):\n    """Doc."""\n    return x + 1  # add one\n'


@pytest.mark.parametrize(
    "edited",
    [
        '# a new comment\ndef f(x):\n\n    """Doc."""\n    return x + 1\n',
        'def f(x):\n    """A reworded docstring,\n    on two lines."""\n    return (x\n            + 1)\n',
        "def f(x):\n    return x + 1\n",
        'def f(x):\n    "Doc."\n    "A lone string: evaluated, thrown away."\n    return x + 1\n',
    ],
    ids=["comment-and-blank-line", "docstring-and-layout", "no-docstring", "lone-strings"],
)
def test_comments_docstrings_and_layout_leave_the_code_as_it_was(edited):
    assert sources.canonical_code(edited) == sources.canonical_code(BASE)


@pytest.mark.parametrize(
    "edited",
    [
        BASE.replace("x + 1", "x + 2"),
        BASE.replace("x + 1", "1 + x"),
        BASE.replace("def f(x)", "def g(x)"),
        BASE + 'y = f"{a} b"\n',
    ],
    ids=["constant", "operand-order", "name", "new-statement"],
)
def test_any_change_to_what_runs_changes_the_code(edited):
    assert sources.canonical_code(edited) != sources.canonical_code(BASE)


def test_canonical_code_is_written_the_same_on_every_python():
    # Python 3.11 and 3.12 tokenize f-strings differently, 3.12 adds fields to function
    # nodes (type_params), and 3.13's ast.dump leaves out empty ones: the canonical form
    # is none of those, so the text below holds on 3.10 to 3.13 (checked there).
    code = 'def f(x, *, n: int = 2):\n    return f"{x + n!r:>8}"\n'
    assert sources.canonical_code(code) == (
        "(Module,body=[(FunctionDef,name='f',args=(arguments,args=[(arg,arg='x')],kwonlyargs="
        "[(arg,arg='n',annotation=(Name,id='int'))],kw_defaults=[(Constant,value=2)]),body="
        "[(Return,value=(JoinedStr,values=[(FormattedValue,value=(BinOp,left=(Name,id='x'),"
        "op=(Add),right=(Name,id='n')),conversion=114,format_spec=(JoinedStr,values=["
        "(Constant,value='>8')]))]))])])"
    )


def test_a_benchmark_hashes_every_module_its_sources_import():
    # Softmax names its kernel module; its launch path, checks and configs come with it.
    closure = sources.closure(catalog.SOFTMAX.sources)
    assert {"kernels/softmax.py", "kernels/launch.py", "kernels/_validation.py", "_runtime.py"} <= set(
        closure
    )
    # Only the code under study is followed: not the references, the bench or the pages.
    assert all(sources.followed(rel) for rel in closure)
    # A function-level import counts: the Llama layer imports its kernels inside functions.
    assert {"kernels/attention.py", "kernels/rms_norm.py"} <= set(sources.closure(("models/llama.py",)))


def test_a_missing_source_is_named():
    with pytest.raises(FileNotFoundError, match=r"kernels/no_such\.py"):
        sources.closure(("kernels/no_such.py",))


def _copy_of_package(tmp_path, monkeypatch):
    """A copy of ``src/gpuperf`` that the code hash reads instead of the real one."""
    root = tmp_path / "gpuperf"
    shutil.copytree(sources.PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__", "tuned"))
    monkeypatch.setattr(sources, "PACKAGE_ROOT", root)
    sources._reexports.cache_clear()
    return root


def _current(names=None) -> dict:
    """The reference GPU's records that are current now, by benchmark name."""
    found = {}
    for bench in catalog.ALL:
        path = records.record_path(bench.name, records.REFERENCE_GPU)
        if (names is None or bench.name in names) and path.is_file():
            record = records.read(path)
            if records.staleness(record, bench) == []:
                found[bench.name] = record
    return found


def _stale(current: dict) -> set[str]:
    return {name for name, record in current.items() if records.staleness(record, catalog.by_name(name))}


def test_a_docstring_edit_leaves_the_committed_record_current_and_a_code_edit_does_not(tmp_path, monkeypatch):
    record = records.read(records.record_path(catalog.SOFTMAX.name, records.REFERENCE_GPU))
    assert records.staleness(record, catalog.SOFTMAX) == []
    root = _copy_of_package(tmp_path, monkeypatch)
    kernel = root / "kernels" / "softmax.py"
    text = kernel.read_text()
    kernel.write_text(
        text.replace('"""Softmax over the last dimension', '"""The softmax over the last axis', 1)
    )
    assert kernel.read_text() != text
    assert records.staleness(record, catalog.SOFTMAX) == []
    kernel.write_text(text.replace('eviction_policy="evict_first"', 'eviction_policy="evict_last"', 1))
    (reason,) = records.staleness(record, catalog.SOFTMAX)
    assert "kernels/softmax.py::_softmax_online_kernel changed" in reason


def test_editing_the_launch_glue_leaves_device_records_current_and_stales_the_host_record(
    tmp_path, monkeypatch
):
    current = _current()
    assert {"softmax", "softmax_long_rows", "llama_prefill"} <= set(current)
    root = _copy_of_package(tmp_path, monkeypatch)
    wrapper = root / "kernels" / "softmax.py"
    text = wrapper.read_text()
    # The wrapper's body: its check, and a statement the launch path gains.
    edited = text.replace(
        '    check_tensors(("x",), (x,))\n',
        '    check_tensors(("x",), (x,))\n    x = x if x.is_contiguous() or x.dim() > 0 else x\n',
        1,
    )
    assert edited != text
    wrapper.write_text(edited)
    launch = root / "kernels" / "launch.py"
    launch.write_text(launch.read_text() + "\n\ndef unused_helper():\n    return 1\n")
    # The host time of a call counts every line of the wrapper; the device times do not.
    assert _stale(current) == ({"host_overhead"} & set(current))


def test_editing_a_kernel_stales_exactly_the_records_that_hash_it(tmp_path, monkeypatch):
    current = _current()
    root = _copy_of_package(tmp_path, monkeypatch)
    module = root / "kernels" / "rope.py"
    text = module.read_text()
    edited = text.replace(
        "@triton.jit\ndef _rope_kernel(", "@triton.jit(do_not_specialize=[])\ndef _rope_kernel(", 1
    )
    assert edited != text
    module.write_text(edited)
    hashing = {
        "rope",
        "llama_prefill",
        "llama_prefill_autotune",
        "llama_decode",
        "llama_train",
        "llama_train_memory",
    }
    assert _stale(current) == hashing & set(current)


def test_a_kernel_moved_to_another_module_is_the_same_kernel(tmp_path, monkeypatch):
    current = _current({"rope"})
    assert set(current) == {"rope"}
    root = _copy_of_package(tmp_path, monkeypatch)
    module = root / "kernels" / "rope.py"
    text = module.read_text()
    start = text.index("@triton.jit\ndef _rotate_heads(")
    end = text.index("@triton.jit\ndef _rope_kernel(")
    helper = text[start:end]
    (root / "kernels" / "rope_tiles.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n"
        + helper.replace("_rotate_heads", "rotate_heads", 1)
    )
    module.write_text(
        text[:start].replace(
            "import triton\n", "import triton\n\nfrom gpuperf.kernels.rope_tiles import rotate_heads\n", 1
        )
        + text[end:].replace("_rotate_heads(", "rotate_heads(")
    )
    record = current["rope"]
    assert records.staleness(record, catalog.by_name("rope")) != []  # its caller's body now names it anew
    # The helper alone, moved and renamed, changes nothing: put the caller back as it was.
    module.write_text(
        text[:start].replace(
            "import triton\n",
            "import triton\n\nfrom gpuperf.kernels.rope_tiles import rotate_heads as _rotate_heads\n",
            1,
        )
        + text[end:]
    )
    assert records.staleness(record, catalog.by_name("rope")) == []


def test_a_new_import_of_kernels_makes_a_record_stale_and_one_of_glue_does_not(tmp_path, monkeypatch):
    record = records.read(records.record_path(catalog.VECTOR_ADD.name, records.REFERENCE_GPU))
    root = _copy_of_package(tmp_path, monkeypatch)
    (root / "kernels" / "new_helper.py").write_text("def helper():\n    return 1\n")
    kernel = root / "kernels" / "vector_add.py"
    text = kernel.read_text()
    kernel.write_text(
        text.replace("import torch\n", "import torch\n\nfrom gpuperf.kernels.new_helper import helper\n", 1)
    )
    assert records.staleness(record, catalog.VECTOR_ADD) == []
    (root / "kernels" / "new_helper.py").write_text(
        "import triton\n\n\n@triton.jit\ndef helper(x):\n    return x + 1\n"
    )
    (reason,) = records.staleness(record, catalog.VECTOR_ADD)
    assert "kernels/new_helper.py::helper is new" in reason


def test_a_config_table_keys_on_its_rules_and_fields_not_its_checks(tmp_path, monkeypatch):
    entries = sources.device_entries("kernels/_configs.py")
    assert {"kernels/_configs.py::MatmulConfig", "kernels/_configs.py::softmax_fused_launch"} <= set(entries)
    assert "kernels/_configs.py::SOFTMAX_MAX_FUSED_COLS" in entries
    assert sources.device_entries("kernels/launch.py") == {}  # launch glue: no entry
    kernels = sources.device_entries("kernels/softmax.py")
    assert {"kernels/softmax.py::_softmax_kernel", "kernels/softmax.py::LOG2E"} <= set(kernels)
    assert not any(name.endswith("::softmax") for name in kernels)  # the wrapper is glue
    root = _copy_of_package(tmp_path, monkeypatch)
    table = root / "kernels" / "_configs.py"
    text = table.read_text()
    # A check in a config's __post_init__ is glue; a field's default is what launches.
    table.write_text(
        text.replace("    def __post_init__(self):\n", "    def __post_init__(self):\n        pass\n", 1)
    )
    assert sources.device_entries("kernels/_configs.py") == entries
    table.write_text(text.replace("    num_stages: int = 3\n", "    num_stages: int = 4\n", 1))
    changed = sources.device_entries("kernels/_configs.py")
    assert [e for e in entries if changed[e] != entries[e]] == ["kernels/_configs.py::MatmulConfig"]


def test_a_record_keys_on_the_config_entries_its_code_uses():
    from gpuperf.bench import sources

    attention = sources.config_uses(sources.closure(["kernels/attention.py"]))
    # attention reads TUNED_DIR of the tiled matmul's table (through its own), nothing else
    assert attention["kernels/_configs.py"] == {"TUNED_DIR"}
    assert {"attention_configs", "_attention_table", "ATTENTION_DEFAULT"} <= attention[
        "kernels/_attention_configs.py"
    ]
    hashed = sources.hashes(["kernels/attention.py"])
    assert "kernels/_configs.py::TUNED_DIR" in hashed and "kernels/_configs.py::MatmulConfig" not in hashed
    vector_add = sources.config_uses(sources.closure(["kernels/vector_add.py"]))
    assert vector_add["kernels/_configs.py"] == {"VECTOR_ADD_BLOCK_SIZE", "VECTOR_ADD_NUM_WARPS"}


def test_an_unused_config_entry_stored_is_no_change_and_a_used_one_that_changed_is():
    from gpuperf.bench import sources

    now = sources.hashes(["kernels/attention.py"])
    whole = {**now, "kernels/_configs.py::MatmulConfig": "0" * 64}  # hashed whole, before
    assert sources.changes(whole, ["kernels/attention.py"], host=False) == []
    changed = {**now, "kernels/_configs.py::TUNED_DIR": "0" * 64}
    assert sources.changes(changed, ["kernels/attention.py"], host=False) == [
        "kernels/_configs.py::TUNED_DIR changed"
    ]
    # a kernel's entry gone is still a change
    gone = {**now, "kernels/attention.py::_gone_kernel": "1" * 64}
    assert sources.changes(gone, ["kernels/attention.py"], host=False) == [
        "kernels/attention.py::_gone_kernel is gone"
    ]


def test_a_config_name_passed_on_by_another_table_counts_where_it_is_defined():
    from gpuperf.bench import sources

    # swiglu.py takes SHARED_MEMORY_BYTES from _persistent_configs.py, which imports it from
    # the table that defines it: the entry hashed is the defining table's
    defining = next(
        rel
        for rel in sources.closure(["kernels/swiglu.py"])
        if rel.endswith(sources.CONFIG_SUFFIX)
        and "SHARED_MEMORY_BYTES =" in (sources.PACKAGE_ROOT / rel).read_text()
    )
    assert defining != "kernels/_persistent_configs.py"
    uses = sources.config_uses(sources.closure(["kernels/swiglu.py"]))
    assert "SHARED_MEMORY_BYTES" in uses[defining]
    assert f"{defining}::SHARED_MEMORY_BYTES" in sources.hashes(["kernels/swiglu.py"])
