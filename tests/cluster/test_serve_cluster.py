"""``serve --cluster URL``: two ``serve`` processes share a thread through a real NATS server;
bad flags and an unreachable NATS are reported before anything is served (issue 24.1)."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest

from tests.cluster.conftest import NatsServer
from tests.conftest import bridge_command, bridge_env
from tests.e2e._harness import TIMEOUT, _stdio_bridge, is_turn_completed  # pyright: ignore[reportPrivateUsage]


async def test_two_serve_processes_share_a_thread(nats_server: NatsServer) -> None:
    args = ["--pace", "0", "--cluster", nats_server.url]
    with anyio.fail_after(TIMEOUT * 2):
        async with _stdio_bridge([*args, "--cluster-name", "a"]) as node_a:
            alice = await node_a.connect()
            await alice.initialize(name="alice")
            thread_id = await alice.start_thread()
            first, _ = await alice.run_turn(thread_id, "stored in the log")
            async with _stdio_bridge([*args, "--cluster-name", "b"]) as node_b:
                bob = await node_b.connect()
                await bob.initialize(name="bob")
                resumed = await bob.result("thread/resume", {"threadId": thread_id})
                assert [t["id"] for t in resumed["thread"]["turns"]] == [first]
                second, _ = await bob.run_turn(thread_id, "played by a, asked on b")
                await alice.until(is_turn_completed(second))
                await bob.close()
            await alice.close()


pytestmark = pytest.mark.anyio


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*bridge_command(), "serve", *args],
        input="",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=bridge_env(),
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster", "http://127.0.0.1:4222"], "invalid --cluster URL"),
        (["--cluster", "nats://127.0.0.1:notaport"], "invalid --cluster URL"),
        (["--cluster-creds", "x.creds"], "--cluster-creds needs --cluster URL"),
        (
            ["--cluster", "nats://127.0.0.1:4222", "--cluster-tls-cert", "c.pem"],
            "--cluster-tls-cert and --cluster-tls-key go together",
        ),
        (
            ["--cluster", "nats://127.0.0.1:4222", "--allow-inject"],
            "--allow-inject cannot be combined with --cluster",
        ),
    ],
)
def test_bad_cluster_flags_exit_2_with_the_reason(args: list[str], message: str) -> None:
    done = _serve(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_an_unreachable_nats_exits_1_with_the_reason(nats_server: NatsServer) -> None:
    url = nats_server.url
    nats_server.stop()  # a port nothing listens on any more
    done = _serve("--cluster", url)
    assert done.returncode == 1, done.stderr
    assert f"cannot join the cluster at {url}" in done.stderr
    assert "Traceback" not in done.stderr


_JOIN_AND_LOOK = """
import sys, anyio
from codex_app_bridge.cluster import ClusterNode, ClusterOptions

async def main() -> None:
    before = "codex_app_bridge.server._registry" in sys.modules
    async with ClusterNode(ClusterOptions.parse(sys.argv[1], name="look")):
        print(before, "codex_app_bridge.server._registry" in sys.modules)

anyio.run(main)
"""


def test_a_node_loads_the_thread_registry_as_it_joins(nats_server: NatsServer) -> None:
    """A node's every request needs the thread registry (it holds the threads other nodes
    share): it is imported as the node joins, not by the first ``thread/list``."""
    done = subprocess.run(
        [sys.executable, "-c", _JOIN_AND_LOOK, nats_server.url],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=bridge_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
