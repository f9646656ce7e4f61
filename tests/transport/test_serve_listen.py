"""``codex-app-bridge serve --listen unix://… / ws://…`` as a process: banner, clients, auth flags,
the non-loopback refusal (decided before anything is bound), a live socket left alone, SIGTERM."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.abc
import orjson
import pytest
from websockets.asyncio.client import connect, unix_connect
from websockets.exceptions import InvalidStatus

from codex_app_bridge.cli import build_parser
from codex_app_bridge.cli._serve import StartError, serve_settings
from tests.conftest import bridge_command, bridge_env
from tests.transport._serving import listening_url, serve_process, serving

TIMEOUT = 60
INIT = {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}}


def run(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*bridge_command(), "serve", *args],
        capture_output=True,
        timeout=TIMEOUT,
        env=bridge_env(),
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.anyio
async def test_a_unix_socket_server_serves_clients_and_removes_its_socket(tmp_path: Path) -> None:
    path = Path("/tmp") / f"cab-serve-{os.getpid()}.sock"
    try:
        async with serving(["--listen", f"unix://{path}"]) as banner:
            assert listening_url(banner) == f"unix://{path}"
            async with unix_connect(str(path), uri="ws://localhost/") as ws:
                await ws.send(orjson.dumps(INIT), text=True)
                with anyio.fail_after(TIMEOUT):
                    answer = orjson.loads(await ws.recv())
                assert answer["id"] == 1
                assert "userAgent" in answer["result"]
            # A second server does not steal the live socket.
            second = await anyio.to_thread.run_sync(run, ["--listen", f"unix://{path}"])
            assert second.returncode == 1
            assert f"app-server control socket is already in use at {path}" in (
                second.stderr.decode()
            )
            assert path.exists()
        assert not path.exists()
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.anyio
async def test_a_websocket_server_with_a_token_refuses_clients_without_it(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("let-me-in\n")
    args = ["--listen", "ws://127.0.0.1:0", "--ws-auth", "capability-token"]
    async with serving([*args, "--ws-token-file", str(token)]) as banner:
        url = listening_url(banner)
        assert f"readyz: http://{url.removeprefix('ws://')}/readyz" in banner
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            with pytest.raises(InvalidStatus) as refused:
                async with connect(url, additional_headers=headers):
                    pass
            assert refused.value.response.status_code == 401
        async with connect(url, additional_headers={"Authorization": "Bearer let-me-in"}) as ws:
            await ws.send(orjson.dumps(INIT), text=True)
            with anyio.fail_after(TIMEOUT):
                assert orjson.loads(await ws.recv())["id"] == 1


@pytest.mark.parametrize(
    ("flags", "code", "message"),
    [
        (
            ["--ws-token-file", "/x"],
            2,
            "websocket auth flags require `--ws-auth capability-token`",
        ),
        (
            ["--ws-auth", "capability-token"],
            2,
            "`--ws-token-file` or `--ws-token-sha256` is required",
        ),
        (
            ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", "/x"],
            2,
            "`--ws-auth signed-bearer-token` is not supported by codex-app-bridge yet",
        ),
        (
            ["--ws-auth", "capability-token", "--ws-token-file", "/nonexistent/token"],
            1,
            "failed to read websocket auth secret /nonexistent/token",
        ),
        (["--outbound-budget", "lots"], 2, "invalid byte count `lots`"),
    ],
)
def test_bad_auth_and_budget_flags_stop_before_serving(
    flags: list[str], code: int, message: str
) -> None:
    proc = run(["--listen", "ws://127.0.0.1:0", *flags])
    assert proc.returncode == code
    assert message in proc.stderr.decode()


@pytest.mark.parametrize("url", ["ws://0.0.0.0:0", "ws://[::]:0"])
def test_a_non_loopback_address_without_auth_is_refused(url: str) -> None:
    # Refused while checking the flags: nothing is ever bound.
    proc = run(["--listen", url])
    assert proc.returncode == 2
    assert f"refusing to serve {url} without authentication" in proc.stderr.decode()


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def test_allow_unauthenticated_accepts_a_non_loopback_address_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    settings = serve_settings(_args("--listen", "ws://0.0.0.0:4500", "--allow-unauthenticated"))
    assert settings.listen.host == "0.0.0.0"
    assert settings.token is None
    assert "WARNING: serving ws://0.0.0.0:4500 without authentication" in capsys.readouterr().err
    token = tmp_path / "t"
    token.write_text("x")
    authed = serve_settings(
        _args(
            "--listen",
            "ws://0.0.0.0:4500",
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            str(token),
        )
    )
    assert authed.token is not None
    assert capsys.readouterr().err == ""
    loopback = serve_settings(_args("--listen", "ws://[::1]:4500"))
    assert loopback.listen.is_loopback
    with pytest.raises(StartError):
        serve_settings(_args("--listen", "ws://10.0.0.1:4500"))
    assert serve_settings(_args("--outbound-budget", "2M")).outbound_budget == 2 << 20


_GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not _GLIBC, reason="the system allocator is used with glibc only")
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "system"),
    [
        (["--listen", "ws://127.0.0.1:0"], True),
        (["--listen", "ws://127.0.0.1:0", "--allocator", "python"], False),
    ],
    ids=["default", "python"],
)
async def test_a_listening_server_runs_under_the_system_allocator(
    args: list[str], system: bool
) -> None:
    # issue 23's soak: under CPython's allocator the arenas a busy spell filled stayed resident
    # after it, held by a few blocks each; a socket server runs under glibc's malloc instead
    async with serve_process(args) as (process, banner):
        # the environment it was (last) started with
        initial = (await anyio.Path(f"/proc/{process.pid}/environ").read_bytes()).split(b"\0")
        assert (b"PYTHONMALLOC=malloc" in initial) is system
        async with connect(listening_url(banner)) as ws:
            await ws.send(orjson.dumps(INIT), text=True)
            with anyio.fail_after(TIMEOUT):
                assert orjson.loads(await ws.recv())["id"] == 1


@pytest.mark.parametrize(
    ("args", "system"),
    [
        ([], False),
        (["--listen", "unix://"], True),
        (["--listen", "ws://127.0.0.1:0"], True),
        (["--allocator", "system"], True),
        (["--listen", "unix://", "--allocator", "python"], False),
    ],
)
def test_the_allocator_is_the_systems_for_a_socket_listener_unless_told(
    args: list[str], system: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import codex_app_bridge._gc as gc_module
    from codex_app_bridge.cli._serve import _prepare_process  # pyright: ignore[reportPrivateUsage]

    calls: list[bool] = []
    monkeypatch.setattr(gc_module, "use_system_allocator", lambda: calls.append(True) or True)
    _prepare_process(build_parser().parse_args(["serve", *args]))
    assert calls == ([True] if system else [])
