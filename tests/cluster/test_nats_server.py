"""The ``nats_server`` fixture itself: ``restart()`` finds its port free because the fixture
holds it while the server is stopped (another pytest-xdist worker could otherwise be given it,
and the nodes, which reconnect to the same URL, would never find their server again)."""

from __future__ import annotations

import errno
import socket

import pytest

from tests.cluster.conftest import NatsServer

TIMEOUT = 30


def test_a_stopped_server_s_port_is_held_until_it_restarts_there(nats_server: NatsServer) -> None:
    url, port = nats_server.url, nats_server.port
    assert port is not None
    nats_server.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT).close()
    with socket.socket() as other, pytest.raises(OSError, match="in use") as taken:
        other.bind(("127.0.0.1", port))
    assert taken.value.errno == errno.EADDRINUSE
    nats_server.start()
    assert nats_server.url == url
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as client:
        assert client.makefile("rb").readline().startswith(b"INFO ")
    nats_server.restart()
    assert nats_server.url == url
