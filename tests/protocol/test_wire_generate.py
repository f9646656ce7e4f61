"""protocol-schemas/generate.py: the committed outputs are what it generates, the vendored
schema is what PINNED.json pins, and its normalisation steps do what they claim."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "protocol-schemas" / "generate.py"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("codex_wire_generate", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATE_TIMEOUT = 600
"""A whole regeneration: about 15 s of CPU (datamodel-codegen, ruff, the core schemas)."""


def _generate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "protocol-schemas" / "generate.py"), *args],
        capture_output=True,
        text=True,
        timeout=GENERATE_TIMEOUT,
        cwd=root,
        check=False,
    )


def _load(script: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"generate_{abs(hash(script))}", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of what the generator reads and writes, regenerated once by the copy's own
    ``generate.py`` (its ROOT is the copy), which also writes the copy's record."""
    root = tmp_path_factory.mktemp("tree")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "protocol-schemas", root / "protocol-schemas", ignore=ignore)
    shutil.copytree(ROOT / "src", root / "src", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    result = _generate(root)
    assert result.returncode == 0, result.stdout + result.stderr
    return root


GENERATED_FILES = [
    "src/codex_app_bridge/protocol/v2/_generated.py",
    "src/codex_app_bridge/protocol/v2/_generated.pyi",
    "src/codex_app_bridge/protocol/v2/_generated_names.py",
    *(
        f"protocol-schemas/core/{p.name}"
        for p in sorted((ROOT / "protocol-schemas/core").iterdir())
    ),
]


def test_the_committed_outputs_are_what_the_generator_writes(generated_copy: Path) -> None:
    for rel in GENERATED_FILES:
        assert (generated_copy / rel).read_bytes() == (ROOT / rel).read_bytes(), rel
    record = json.loads((generated_copy / "protocol-schemas/RECORD.json").read_text("utf-8"))
    assert sorted(record["outputs"]) == sorted(GENERATED_FILES)


def test_the_committed_record_names_the_inputs_and_outputs_as_they_are(
    generated_copy: Path,
) -> None:
    # a stale hash passes ``--check`` (it regenerates to compare) but costs every run seconds and
    # prints "the record does not match"; the environment may differ between machines, the files not
    committed = json.loads((ROOT / "protocol-schemas/RECORD.json").read_text("utf-8"))
    fresh = json.loads((generated_copy / "protocol-schemas/RECORD.json").read_text("utf-8"))
    assert committed["inputs"] == fresh["inputs"], "run python protocol-schemas/generate.py"
    assert committed["outputs"] == fresh["outputs"], "run python protocol-schemas/generate.py"


def test_check_trusts_a_matching_record_without_regenerating(generated_copy: Path) -> None:
    result = _generate(generated_copy, "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == (
        "up to date: 10 generated file(s), inputs and outputs as recorded in "
        "protocol-schemas/RECORD.json\n"
    )


def test_check_regenerates_and_fails_on_a_hand_edited_output(generated_copy: Path) -> None:
    """The one regeneration shows the edit, and only it: every other output is still what the
    generator writes."""
    path = generated_copy / "src/codex_app_bridge/protocol/v2/_generated.pyi"
    original = path.read_text(encoding="utf-8")
    edited = original.replace("class Turn(WireModel):", "class Turn(WireModel):  # edited", 1)
    assert edited != original
    path.write_text(edited, encoding="utf-8")
    try:
        result = _generate(generated_copy, "--check")
    finally:
        path.write_text(original, encoding="utf-8")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "regenerating to compare, the record does not match: "
        "src/codex_app_bridge/protocol/v2/_generated.pyi: changed"
    )
    assert [line for line in lines if line.endswith(": out of date")] == [
        "src/codex_app_bridge/protocol/v2/_generated.pyi: out of date"
    ]
    assert "-class Turn(WireModel):  # edited" in lines
    assert "+class Turn(WireModel):" in lines


def _repin(root: Path, rel: str) -> None:
    vendored = root / "protocol-schemas/codex-app-server/0.163.0"
    pinned_path = vendored / "PINNED.json"
    pinned = json.loads(pinned_path.read_text(encoding="utf-8"))
    digest = hashlib.sha256((vendored / rel).read_bytes()).hexdigest()
    pinned["files"][rel] = digest
    pinned_path.write_text(json.dumps(pinned, indent=2) + "\n", encoding="utf-8")


def _schema_changed(root: Path) -> None:
    path = root / "protocol-schemas/codex-app-server/0.163.0/v2/TurnStartResponse.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    schema["required"] = [*schema.get("required", []), "extra"]
    path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
    _repin(root, "v2/TurnStartResponse.json")


def _append(rel: str, text: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        with (root / rel).open("a", encoding="utf-8") as f:
            f.write(text)

    return change


def _remove(rel: str) -> Callable[[Path], None]:
    return lambda root: (root / rel).unlink()


def _write(rel: str, text: str) -> Callable[[Path], None]:
    return lambda root: (root / rel).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("change", "difference"),
    [
        (_schema_changed, "protocol-schemas/codex-app-server/0.163.0/PINNED.json: changed"),
        (_append("protocol-schemas/generate.py", "\nX = 1\n"), "protocol-schemas/generate.py: changed"),
        (
            _append("src/codex_app_bridge/protocol/core/_turn_item.py", "\nX = 1\n"),
            "src/codex_app_bridge/protocol/core/_turn_item.py: changed",
        ),
        (_append("pyproject.toml", "\n[tool.ruff.format]\nquote-style = 'single'\n"), "ruff configuration"),
        (_remove("protocol-schemas/core/TurnItem.json"), "protocol-schemas/core/TurnItem.json: missing"),
        (_write("protocol-schemas/core/Extra.json", "{}\n"), "protocol-schemas/core/Extra.json: not recorded"),
        (_remove("protocol-schemas/RECORD.json"), "no protocol-schemas/RECORD.json"),
        (_write("protocol-schemas/RECORD.json", "[]\n"), "is not a record generate.py wrote"),
    ],
    ids=["schema", "generator", "core model", "ruff config", "core output gone", "core output added", "no record", "bad record"],
)  # fmt: skip
def test_the_record_no_longer_matches_after_any_change_to_what_shapes_the_outputs(
    generated_copy: Path, tmp_path: Path, change: Callable[[Path], None], difference: str
) -> None:
    """Each of these sends ``--check`` to the regeneration (shown above to find drift)."""
    root = tmp_path / "tree"
    shutil.copytree(generated_copy, root)
    gen = _load(root / "protocol-schemas" / "generate.py")
    assert gen.record_differences() == []
    change(root)
    differences = gen.record_differences()
    assert any(difference in d for d in differences), differences


def test_the_record_no_longer_matches_under_another_library_version(
    generated_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gen = _load(generated_copy / "protocol-schemas" / "generate.py")
    assert gen.record_differences() == []
    real_version = gen.importlib.metadata.version

    def version(dist: str) -> str:
        return "99.0" if dist == "pydantic" else real_version(dist)

    monkeypatch.setattr(gen.importlib.metadata, "version", version)
    assert [d for d in gen.record_differences() if d.startswith("pydantic 99.0 (recorded: ")]


def test_check_reports_drift_with_a_diff_and_passes_when_equal(
    gen: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    committed = tmp_path / "out.py"
    committed.write_text("a = 1\n", encoding="utf-8")
    assert gen.check({committed: "a = 2\n"}, core_present=False) == 1
    report = capsys.readouterr().out
    assert "out.py: out of date" in report
    assert "-a = 1" in report
    assert "+a = 2" in report
    assert gen.check({tmp_path / "new.py": "x\n"}, core_present=False) == 1
    assert "new.py: missing" in capsys.readouterr().out
    assert gen.check({committed: "a = 1\n"}, core_present=False) == 0


@pytest.fixture
def vendored_copy(gen: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "0.163.0"
    shutil.copytree(gen.VENDORED_DIR, copy)
    monkeypatch.setattr(gen, "VENDORED_DIR", copy)
    monkeypatch.setattr(gen, "PINNED_PATH", copy / "PINNED.json")
    return copy


@pytest.mark.parametrize(
    ("tamper", "complaint"),
    [
        (lambda d: (d / "v2/TurnStartResponse.json").write_text("{}\n"), "sha256 mismatch: v2/TurnStartResponse.json"),
        (lambda d: (d / "v1/InitializeResponse.json").unlink(), "missing: v1/InitializeResponse.json"),
        (lambda d: (d / "v2/Extra.json").write_text("{}\n"), "not pinned: v2/Extra.json"),
    ],
)  # fmt: skip
def test_pinned_hashes_catch_any_change_to_the_vendored_schema(
    gen: ModuleType, vendored_copy: Path, tamper: Any, complaint: str
) -> None:
    gen.verify_pinned()
    tamper(vendored_copy)
    with pytest.raises(SystemExit, match=complaint):
        gen.verify_pinned()


def test_vendored_bundle_is_complete_and_free_of_description_annotations(gen: ModuleType) -> None:
    files = sorted(p for p in gen.VENDORED_DIR.rglob("*.json") if p.name != "PINNED.json")
    assert len(files) == 318
    pinned = json.loads(gen.PINNED_PATH.read_text(encoding="utf-8"))
    assert pinned["codexVersion"] == "0.163.0"
    assert (
        set(pinned["files"])
        == set(pinned["upstreamFiles"])
        == {p.relative_to(gen.VENDORED_DIR).as_posix() for p in files}
    )
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert gen.dump_json_text(gen.strip_descriptions(json.loads(text))) == text, path


def test_stripping_descriptions_keeps_properties_and_data_named_description(
    gen: ModuleType,
) -> None:
    schema = {
        "description": "doc",
        "definitions": {
            "Tool": {
                "description": "doc",
                "type": "object",
                "properties": {"description": {"type": "string", "description": "doc"}},
                "required": ["description"],
                "default": {"description": "data"},
            },
            # the full bundle nests the v2 definitions under a namespace
            "v2": {"Thread": {"description": "doc", "type": "object"}},
        },
        "oneOf": [{"description": "doc", "enum": ["description"]}],
    }
    assert gen.strip_descriptions(schema) == {
        "definitions": {
            "Tool": {
                "type": "object",
                "properties": {"description": {"type": "string"}},
                "required": ["description"],
                "default": {"description": "data"},
            },
            "v2": {"Thread": {"type": "object"}},
        },
        "oneOf": [{"enum": ["description"]}],
    }


def test_vendoring_writes_the_same_bytes_and_pins_every_file(
    gen: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = tmp_path / "upstream"
    (upstream / "v2").mkdir(parents=True)
    (upstream / "A.json").write_text('{"title":"A","description":"x"}', encoding="utf-8")
    (upstream / "v2" / "B.json").write_text('{"title":"B","type":"string"}', encoding="utf-8")
    target = tmp_path / "vendored"
    monkeypatch.setattr(gen, "VENDORED_DIR", target)
    monkeypatch.setattr(gen, "PINNED_PATH", target / "PINNED.json")
    gen.vendor(upstream)
    first = {p: p.read_bytes() for p in sorted(target.rglob("*.json"))}
    gen.vendor(upstream)
    assert {p: p.read_bytes() for p in sorted(target.rglob("*.json"))} == first
    assert (target / "A.json").read_text(encoding="utf-8") == '{\n  "title": "A"\n}\n'
    pinned = json.loads((target / "PINNED.json").read_text(encoding="utf-8"))
    assert sorted(pinned["files"]) == ["A.json", "v2/B.json"]
    gen.verify_pinned()


def test_generator_pins_match_the_test_extra(gen: ModuleType) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    test_extra = pyproject["project"]["optional-dependencies"]["test"]
    assert f"datamodel-code-generator=={gen.DATAMODEL_CODEGEN_VERSION}" in test_extra
    assert f"ruff=={gen.RUFF_VERSION}" in test_extra


def test_another_generator_version_is_refused_with_a_clear_message(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gen.importlib.metadata, "version", lambda dist: "0.1.0")
    with pytest.raises(SystemExit, match=r"datamodel-code-generator 0\.1\.0 is installed but"):
        gen.check_tool_versions()


def test_bundle_names_union_variants_and_adds_discriminators(gen: ModuleType) -> None:
    definitions = gen.build_bundle()["definitions"]
    assert definitions["ThreadItem"]["discriminator"]["mapping"]["agentMessage"] == (
        "#/definitions/AgentMessageThreadItem"
    )
    notification = definitions["ServerNotification"]["discriminator"]
    assert notification["propertyName"] == "method"
    assert notification["mapping"]["item/started"] == "#/definitions/ItemStartedServerNotification"
    assert definitions["TurnStartClientRequest"]["properties"]["method"]["enum"] == ["turn/start"]
    # the envelope's emittedAtMs is every variant's, and left out when None
    started = definitions["ItemStartedServerNotification"]["properties"]["emittedAtMs"]
    assert started["x-exclude_if"] == "is_none"
    raw = definitions["RawResponseItemCompletedServerNotification"]["properties"]
    assert raw["method"]["enum"] == ["rawResponseItem/completed"]
    assert raw["emittedAtMs"]["x-exclude_if"] == "is_none"
    # v1-only definitions are merged in, the JSON-RPC envelope is not
    assert "InitializeResponse" in definitions
    assert "ServerRequest" in definitions
    assert "JSONRPCMessage" not in definitions


@pytest.mark.parametrize(
    "table", [{"Turn": ("id",)}, {"Turn": ("noSuchField",)}, {"NoSuchModel": ("id",)}]
)
def test_omit_table_entries_must_name_optional_properties(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch, table: dict[str, tuple[str, ...]]
) -> None:
    monkeypatch.setattr(gen, "OMIT_WHEN_NONE", table)
    with pytest.raises(SystemExit, match="omit table"):
        gen.build_bundle()


def test_core_model_schemas_are_written_one_file_per_model(
    gen: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    core = ModuleType(gen.CORE_MODULE)
    schemas = {"TurnItem": {"title": "TurnItem", "oneOf": []}, "EventMsg": {"title": "EventMsg"}}
    core.core_json_schemas = lambda: schemas  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, gen.CORE_MODULE, core)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr(gen, "CORE_DIR", tmp_path / "core")
    rendered = gen.render_core_schemas()
    assert rendered == {
        tmp_path / "core" / "EventMsg.json": '{\n  "title": "EventMsg"\n}\n',
        tmp_path / "core" / "TurnItem.json": '{\n  "title": "TurnItem",\n  "oneOf": []\n}\n',
    }
    gen.write(rendered, core_present=True)
    (tmp_path / "core" / "Stale.json").write_text("{}\n", encoding="utf-8")
    assert gen.check(rendered, core_present=True) == 1
    gen.write(rendered, core_present=True)
    assert sorted(p.name for p in (tmp_path / "core").iterdir()) == [
        "EventMsg.json",
        "TurnItem.json",
    ]
    assert gen.check(rendered, core_present=True) == 0
