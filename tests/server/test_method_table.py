"""Completeness: every 0.163.0 client method is either handled or answers the documented
unsupported error, and the README lists exactly the supported ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codex_app_bridge.protocol.v2.methods import (
    ALL_CLIENT_REQUEST_METHODS,
    EXPERIMENTAL_CLIENT_REQUEST_METHODS,
)
from codex_app_bridge.server import SUPPORTED_METHODS, BridgeServer
from tests.e2e._harness import open_bridge

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_table_lists_all_175_methods_in_the_real_servers_order() -> None:
    table = BridgeServer().table
    assert table.names == ALL_CLIENT_REQUEST_METHODS
    assert len(table) == 175
    assert {spec.name for spec in table if spec.experimental} == set(
        EXPERIMENTAL_CLIENT_REQUEST_METHODS
    )


def test_exactly_the_supported_methods_have_handlers() -> None:
    table = BridgeServer().table
    assert set(table.supported_names) == set(SUPPORTED_METHODS)
    assert len(table.unsupported_names) == 175 - len(SUPPORTED_METHODS)
    inline = [spec.name for spec in table if spec.inline]
    assert inline == ["initialize"]


@pytest.mark.anyio
async def test_every_method_is_handled_or_answers_the_unsupported_error() -> None:
    async with open_bridge("memory") as bridge:
        client = await bridge.connect()
        await client.initialize(experimentalApi=True)
        handled: list[str] = []
        for method in ALL_CLIENT_REQUEST_METHODS:
            if method == "initialize":
                continue
            reply = await client.call(method, {})
            unsupported = {
                "code": -32601,
                "message": f"{method} is not supported by codex-app-bridge",
                "data": {"method": method, "reason": "unsupported"},
            }
            if method in SUPPORTED_METHODS:
                assert reply.get("error") != unsupported, method
                handled.append(method)
            else:
                assert reply.get("error") == unsupported, (method, reply)
        assert sorted(handled) == sorted(set(SUPPORTED_METHODS) - {"initialize"})


def test_the_readme_lists_the_supported_methods() -> None:
    text = README.read_text(encoding="utf-8")
    section = re.search(r"## Supported methods\n(.*?)\n## ", text, re.S)
    assert section, "README needs a '## Supported methods' section"
    listed = re.findall(r"^\| `([a-z/A-Z]+)` \|", section.group(1), re.M)
    assert sorted(listed) == sorted(SUPPORTED_METHODS)
