"""The TOML document behind config edits: encoders, round trips and edits that keep comments.

The texts the real binary wrote for the probed cases are checked in
``tests/server/test_config_methods.py``; here, properties over generated documents: a document
renders back byte for byte, values and keys the encoders write read back the same, and writes
change exactly the keys they name while every comment of a key that stays survives.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_app_bridge.config import ConfigEdit, load_layers, write_config
from codex_app_bridge.config._document import parse_document
from codex_app_bridge.config._encode import (
    _ryu,  # pyright: ignore[reportPrivateUsage]
    encode_key,
    encode_string,
    encode_value,
    layer_version,
)

KEYS = st.text(alphabet=st.sampled_from("abcdefghij_-0123456789. \"'é"), min_size=1, max_size=8)
BARE = st.text(alphabet=st.sampled_from("abcdefghij_"), min_size=1, max_size=6)
TEXT = st.text(max_size=20)
SCALARS = st.one_of(
    TEXT,
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(BARE, inner, max_size=3),
    max_leaves=8,
)


@given(TEXT)
def test_a_string_the_encoder_writes_reads_back_the_same(text: str) -> None:
    assert tomllib.loads(f"x = {encode_string(text)}")["x"] == text


@given(KEYS)
def test_a_key_the_encoder_writes_reads_back_the_same(key: str) -> None:
    assert tomllib.loads(f"{encode_key(key)} = 1") == {key: 1}


@given(VALUES)
def test_a_value_the_encoder_writes_reads_back_the_same(value: Any) -> None:
    assert tomllib.loads(f"x = {encode_value(value)}")["x"] == value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5, "1.5"),
        (1e10, "10000000000.0"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e16"),
        (1.5e-7, "1.5e-7"),
        (1e-5, "0.00001"),
        (-0.0, "-0.0"),
        (123.456, "123.456"),
    ],
)
def test_floats_hash_as_serde_json_writes_them(value: float, text: str) -> None:
    assert _ryu(value) == text


def test_layer_versions_hash_the_sorted_compact_json() -> None:
    # probed: {} and {"model": "x"} (and the versions of every recorded write)
    assert layer_version({}) == (
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    )
    assert layer_version({"model": "x"}) == (
        "sha256:78b0e11c6754fc9671c2034f4a068d3a0e53c1c22a5a33900dd46bc8cd9136f3"
    )


# ------------------------------------------------------------------ generated documents

SPELLINGS = {
    "int": ["{n}", "+{n}", "0x{hex}", "1_000"],
    "str": ['"{s}"', "'{s}'", '"""{s}"""', "'''{s}'''"],
}


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, dict[str, list[str]]]:
    """A valid document in assorted layouts, and the comment of every key (by table)."""
    lines: list[str] = []
    comments: dict[str, list[str]] = {}
    counter = 0

    def body(table: str) -> None:
        nonlocal counter
        names = draw(st.lists(BARE, unique=True, max_size=4))
        for name in names:
            if draw(st.booleans()):
                lines.append(draw(st.sampled_from(["", "# a note", "  # indented note"])))
            counter += 1
            kind = draw(st.sampled_from(["int", "str", "array", "inline"]))
            if kind == "int":
                n = draw(st.integers(min_value=0, max_value=999))
                value = draw(st.sampled_from(SPELLINGS["int"])).format(n=n, hex=f"{n:x}")
            elif kind == "str":
                s = draw(st.text(alphabet="abc xyz", max_size=5))
                value = draw(st.sampled_from(SPELLINGS["str"])).format(s=s)
            elif kind == "array":
                value = draw(st.sampled_from(["[]", "[1, 2]", "[\n  1,\n  2, # two\n]"]))
            else:
                value = draw(st.sampled_from(["{}", "{ a = 1 }", "{a=1,b='x'}"]))
            space = draw(st.sampled_from([" = ", "=", "  =  "]))
            tag = f"k{counter}"
            lines.append(f"{name}{space}{value}  # {tag}")
            comments.setdefault(table, []).append(f"{name}:{tag}")

    body("")
    for header in draw(st.lists(BARE, unique=True, max_size=3)):
        lines.append(draw(st.sampled_from(["", "# section"])))
        if draw(st.booleans()):
            lines.append(f"[parent.t{header}]")
            body(f"parent.t{header}")
        else:
            lines.append(f"[t{header}]  # head")
            body(f"t{header}")
    # every line ends with a newline (Codex's writer adds one to a last line that has none)
    text = "".join(f"{line}\n" for line in lines) + draw(st.sampled_from(["", "\n# end\n"]))
    return text, comments


@given(documents())
def test_a_parsed_document_renders_back_byte_for_byte(case: tuple[str, Any]) -> None:
    text, _ = case
    tomllib.loads(text)  # the generator writes valid TOML
    assert parse_document(text).render() == text


def _set(table: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        if value is None and part not in table:
            return
        table = table.setdefault(part, {})
    if value is None:
        table.pop(path[-1], None)
    else:
        table[path[-1]] = value


def _drop_new_empty_tables(table: dict[str, Any], original: Any) -> None:
    """A table an edit created and a later edit of the same write emptied is not written (the
    binary's editor makes such tables implicit, and an implicit table without keys renders
    nothing; probed), while a table the file already had stays, even empty."""
    for name, value in list(table.items()):
        if not isinstance(value, dict):
            continue
        before = original.get(name) if isinstance(original, dict) else None
        _drop_new_empty_tables(cast("dict[str, Any]", value), before)
        if not value and not isinstance(before, dict):
            del table[name]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(documents(), st.data())
def test_writes_change_the_keys_they_name_and_keep_every_other_comment(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, dict[str, list[str]]], data: Any
) -> None:
    text, comments = case
    home: Path = tmp_path_factory.mktemp("home")
    (home / "config.toml").write_text(text, encoding="utf-8")
    expected = tomllib.loads(text)
    known = [
        (table, entry.split(":")[0]) for table, entries in comments.items() for entry in entries
    ]
    edits: list[ConfigEdit] = []
    removed: set[str] = set()
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        if known and data.draw(st.booleans()):
            table, name = data.draw(st.sampled_from(known))
        else:
            table, name = data.draw(st.sampled_from(["", "tnew", "parent.tnew"])), data.draw(BARE)
        value = data.draw(st.one_of(st.none(), SCALARS.filter(lambda v: v == v)))
        path = [*(table.split(".") if table else []), name]
        parent: Any = expected
        for part in path[:-1]:
            parent = parent.get(part, {}) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue
        edits.append(ConfigEdit(".".join(path), value))
        if value is None:
            removed.add(".".join(path))
        _set(expected, path, value)
    # the answer's version is of the edited value, where an emptied new table is still present
    # (the binary answers the same version; probed), the file is what renders
    version = layer_version(expected)
    _drop_new_empty_tables(expected, tomllib.loads(text))
    layers = load_layers(home, system_config=home / "no-system.toml")
    answer = write_config(layers, edits)
    written = (home / "config.toml").read_text("utf-8")
    assert tomllib.loads(written) == expected
    assert answer["version"] == version
    for table, entries in comments.items():
        section: Any = expected
        for part in table.split(".") if table else []:
            section = section.get(part, {})
        for entry in entries:
            name, tag = entry.split(":")
            dotted = f"{table}.{name}" if table else name
            if isinstance(section, dict) and name in section and dotted not in removed:
                assert f"# {tag}" in written, (entry, written)
