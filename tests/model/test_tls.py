"""The model client's TLS context (``model._tls``): its CA certificates load on the first TLS
connection, or in the warm-up of an ``https`` provider, never for a plain ``http`` one; a
connection is verified against them (``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else certifi's
bundle, as httpx chooses)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import anyio
import pytest

from codex_app_bridge.model import ModelError, ResponsesClient, warm_http_stack
from codex_app_bridge.model import _client as model_client  # pyright: ignore[reportPrivateUsage]
from codex_app_bridge.model._tls import LazyTLSContext  # pyright: ignore[reportPrivateUsage]
from tests.conftest import DATA_DIR
from tests.model.mock_server import OK, completed, mock_server

pytestmark = pytest.mark.anyio

WAIT = 60  # seconds: a hang guard
CERT = DATA_DIR / "tls" / "cert.pem"
KEY = DATA_DIR / "tls" / "key.pem"


@pytest.fixture
def shared() -> Iterator[list[LazyTLSContext]]:
    """A fresh shared context for the test (the process's is left as it was)."""
    saved = list(model_client._SSL)  # pyright: ignore[reportPrivateUsage]
    model_client._SSL.clear()  # pyright: ignore[reportPrivateUsage]
    try:
        yield model_client._SSL  # pyright: ignore[reportPrivateUsage]
    finally:
        model_client._SSL[:] = saved  # pyright: ignore[reportPrivateUsage]


def _server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERT, KEY)
    return context


async def _events(url: str) -> list[dict[str, object]]:
    from codex_app_bridge.model import Endpoint

    client = ResponsesClient(Endpoint(url, {}, request_max_retries=0))
    try:
        with anyio.fail_after(WAIT):
            async with client.stream(b"{}") as stream:
                return [event async for event in stream]
    finally:
        await client.aclose()


async def test_a_plain_http_provider_never_loads_the_certificates(
    shared: list[LazyTLSContext],
) -> None:
    async with mock_server(OK) as server:
        assert server.url.startswith("http://")
        assert (await _events(server.url))[-1] == completed()
    [context] = shared
    assert not context.loaded


async def test_an_https_provider_is_verified_against_ssl_cert_file(
    shared: list[LazyTLSContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(CERT))
    async with mock_server(OK, tls=_server_context()) as server:
        assert server.url.startswith("https://")
        assert (await _events(server.url))[-1] == completed()
        assert len(server.requests) == 1
    [context] = shared
    assert context.loaded


async def test_a_certificate_the_bundle_does_not_know_fails_the_request(
    shared: list[LazyTLSContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    async with mock_server(OK, tls=_server_context()) as server:
        with pytest.raises(ModelError):
            await _events(server.url)
        assert server.requests == []
    [context] = shared
    assert context.loaded


def test_the_warm_up_loads_the_certificates_only_for_tls(shared: list[LazyTLSContext]) -> None:
    warm_http_stack(tls=False)
    [context] = shared
    assert not context.loaded
    warm_http_stack(tls=True)
    assert shared == [context]
    assert context.loaded


def test_the_context_verifies_as_the_default_one() -> None:
    context = LazyTLSContext.create()
    default = ssl.create_default_context()
    assert context.verify_mode == default.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert default.check_hostname
    assert context.verify_flags == default.verify_flags
    assert context.options == default.options
    assert context.minimum_version == default.minimum_version
