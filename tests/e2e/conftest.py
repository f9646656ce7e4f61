"""The e2e suite runs every test over each transport kind: the in-memory twin, stdio, the unix
socket and the websocket listener."""

from __future__ import annotations

import pytest

from tests.e2e._harness import KINDS


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)
