#!/usr/bin/env python3
"""The model client's HTTP stack, chosen by figures: one Responses stream of N
``response.output_text.delta`` events from the project's mock endpoint on 127.0.0.1 (scenario
``throughput``, in its own process), read by each candidate in a fresh child process,
alternating, for several rounds:

* ``bridge``: ``codex_app_bridge.model.ResponsesClient`` (httpx, our SSE decoder over the raw
  bytes, orjson), ``async for event in stream``;
* ``bridge-batches``: the same client, ``async for events in stream.batches()``;
* ``httpx-sse``: httpx + httpx-sse (``aiter_sse``), ``orjson.loads`` of each event's data;
* ``openai``: the official ``openai`` SDK, ``responses.create(stream=True)`` (typed events);
* ``floor``: a blocking socket and our SSE decoder, no HTTP library (the parser's own cost).

Each child counts the delta events and joins their texts (checked against what the mock sent:
a wrong count or text fails the run). Printed per run and as medians: events/s (first event to
``response.completed``), CPU per event (the child's process time from the request to the end,
over every event of the stream; imports are done before) and the child's peak RSS
(``ru_maxrss``, imports included).
Then how fast the server sees a closed connection when a reader leaves the stream block:
milliseconds from leaving the block to the server's ``recv`` returning end-of-file.

    .venv/bin/python bench/model_stream_client.py [--events 100000] [--rounds 3]
                                                  [--candidates bridge,httpx-sse,openai,...]
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass

import orjson
from _common import bridge_env, median, parse_servers, ratio

CANDIDATES = ("bridge", "bridge-batches", "httpx-sse", "openai", "floor")
DELTA = "response.output_text.delta"
BODY = orjson.dumps({"model": "mock-model", "input": "stream", "stream": True})
HEADERS = {"content-type": "application/json", "accept": "text/event-stream"}


# ------------------------------------------------------------------------ child: one reader


def _expected(n: int) -> str:
    from codex_app_bridge.conformance.mock_responses import throughput_chunk

    return "".join(throughput_chunk(i) for i in range(n))


async def _read_bridge(base_url: str, batches: bool) -> tuple[list[str], int, float, float]:
    from codex_app_bridge.model import Endpoint, ResponsesClient

    client = ResponsesClient(Endpoint(base_url + "/responses"))
    texts: list[str] = []
    events = 0
    first = 0.0
    async with client.stream(BODY, HEADERS) as stream:
        if batches:
            async for batch in stream.batches():
                if not first:
                    first = time.perf_counter()
                events += len(batch)
                texts += [e["delta"] for e in batch if e["type"] == DELTA]
        else:
            async for event in stream:
                if not first:
                    first = time.perf_counter()
                events += 1
                if event["type"] == DELTA:
                    texts.append(event["delta"])
        assert stream.completed
    end = time.perf_counter()
    await client.aclose()
    return texts, events, first, end


async def _read_httpx_sse(base_url: str) -> tuple[list[str], int, float, float]:
    import httpx
    from httpx_sse import aconnect_sse

    texts: list[str] = []
    events = 0
    first = 0.0
    async with (
        httpx.AsyncClient(timeout=None) as http,
        aconnect_sse(http, "POST", base_url + "/responses", content=BODY, headers=HEADERS) as es,
    ):
        async for sse in es.aiter_sse():
            if not first:
                first = time.perf_counter()
            event = orjson.loads(sse.data)
            events += 1
            if event["type"] == DELTA:
                texts.append(event["delta"])
            elif event["type"] == "response.completed":
                break
    return texts, events, first, time.perf_counter()


async def _read_openai(base_url: str) -> tuple[list[str], int, float, float]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0)
    texts: list[str] = []
    events = 0
    first = 0.0
    stream = await client.responses.create(model="mock-model", input="stream", stream=True)
    async for event in stream:
        if not first:
            first = time.perf_counter()
        events += 1
        if event.type == DELTA:
            texts.append(event.delta)
        elif event.type == "response.completed":
            break
    end = time.perf_counter()
    await stream.close()
    await client.close()
    return texts, events, first, end


def _read_floor(base_url: str) -> tuple[list[str], int, float, float]:
    from urllib.parse import urlsplit

    from codex_app_bridge.model._sse import SSEDecoder

    url = urlsplit(base_url + "/responses")
    sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 80))
    head = (
        f"POST {url.path} HTTP/1.1\r\nhost: {url.netloc}\r\ncontent-type: application/json\r\n"
        f"accept: text/event-stream\r\ncontent-length: {len(BODY)}\r\n\r\n"
    ).encode()
    sock.sendall(head + BODY)
    decoder = SSEDecoder()
    texts: list[str] = []
    events = 0
    first = 0.0
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(1 << 16)
    chunk = data.split(b"\r\n\r\n", 1)[1]
    done = False
    while not done:
        batch = decoder.feed(chunk)
        if batch and not first:
            first = time.perf_counter()
        for event in batch:
            events += 1
            if event["type"] == DELTA:
                texts.append(event["delta"])
            elif event["type"] == "response.completed":
                done = True
                break
        if not done:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
    sock.close()
    return texts, events, first, time.perf_counter()


def _preload(name: str) -> None:
    """Import what the candidate needs before the clock starts (start-up is not measured)."""
    import anyio  # noqa: F401

    import codex_app_bridge.model  # noqa: F401

    if name in ("bridge", "bridge-batches", "httpx-sse"):
        import httpx  # noqa: F401
    if name == "httpx-sse":
        import httpx_sse  # noqa: F401
    if name == "openai":
        import openai  # noqa: F401


def child(name: str, base_url: str, n: int) -> None:
    import anyio

    _preload(name)
    cpu0 = time.process_time()
    if name in ("bridge", "bridge-batches"):
        texts, events, first, end = anyio.run(_read_bridge, base_url, name == "bridge-batches")
    elif name == "httpx-sse":
        texts, events, first, end = anyio.run(_read_httpx_sse, base_url)
    elif name == "openai":
        texts, events, first, end = anyio.run(_read_openai, base_url)
    else:
        texts, events, first, end = _read_floor(base_url)
    cpu = time.process_time() - cpu0
    if len(texts) != n or "".join(texts) != _expected(n):
        sys.exit(f"{name}: got {len(texts)} deltas of {n}, or the wrong text")
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"events": events, "seconds": end - first, "cpu": cpu, "rss_kb": rss_kb}))


# ------------------------------------------------------------------------ parent: the runs


@dataclass
class Run:
    candidate: str
    events_per_s: float
    cpu_us_per_event: float
    peak_rss_mb: float


def _start_mock() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            *(sys.executable, "-W", "ignore::RuntimeWarning"),
            *("-m", "codex_app_bridge.conformance.mock_responses", "--port", "0"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=bridge_env(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("URL "):
        proc.kill()
        sys.exit(f"the mock did not start: {line!r}")
    return proc, line.split()[1]


def _select(root: str, n: int) -> None:
    request = urllib.request.Request(
        root + "/_mock/scenario",
        data=json.dumps({"name": "throughput", "params": {"n": n}}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()


def run_child(name: str, base_url: str, n: int) -> Run:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", name, "--url", base_url, "--events", str(n)],
        capture_output=True,
        text=True,
        env=bridge_env(),
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"{name} failed:\n{proc.stdout}{proc.stderr}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return Run(
        name,
        got["events"] / max(got["seconds"], 1e-9),
        got["cpu"] / got["events"] * 1e6,
        got["rss_kb"] / 1024,
    )


# ------------------------------------------------------------------------ disconnect latency


def disconnect_latency_ms(samples: int) -> list[float]:
    """Milliseconds from leaving ``client.stream(...)`` to the server reading end-of-file."""
    import anyio

    from codex_app_bridge.model import Endpoint, ResponsesClient

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen: list[float] = []
    gone = threading.Semaphore(0)

    def serve() -> None:
        for _ in range(samples):
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                while len(body) < length:
                    body += conn.recv(65536)
                event = b'data: {"type":"response.created","response":{"id":"r"}}\n\n'
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(event), event)
                )
                while conn.recv(65536):
                    pass
                seen.append(time.perf_counter())
                gone.release()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    left: list[float] = []

    async def read_one_event_and_leave() -> None:
        client = ResponsesClient(Endpoint(f"http://127.0.0.1:{port}/v1/responses"))
        for _ in range(samples):
            async with client.stream(BODY, HEADERS) as stream:
                await stream.__anext__()
                left.append(time.perf_counter())
            await anyio.to_thread.run_sync(gone.acquire)
        await client.aclose()

    anyio.run(read_one_event_and_leave)
    server.join(timeout=10)
    listener.close()
    return [(s - t) * 1000 for s, t in zip(seen, left, strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--events", type=int, default=100_000, help="delta events in the stream")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--disconnects", type=int, default=20, help="disconnect latency samples")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.url, args.events)
        return
    candidates = parse_servers(ap, args.candidates, CANDIDATES)
    mock, root = _start_mock()
    runs: list[Run] = []
    try:
        _select(root, args.events)
        print(f"one stream of {args.events:,} {DELTA} events, {args.rounds} round(s)")
        print(f"{'round':<6}{'candidate':<16}{'events/s':>12}{'CPU us/event':>14}{'peak RSS':>10}")
        for r in range(args.rounds):
            order = candidates[r % len(candidates) :] + candidates[: r % len(candidates)]
            for name in order:
                run = run_child(name, root + "/v1", args.events)
                runs.append(run)
                print(
                    f"{r:<6}{name:<16}{run.events_per_s:>12,.0f}{run.cpu_us_per_event:>14.2f}"
                    f"{run.peak_rss_mb:>7.0f} MiB",
                    flush=True,
                )
    finally:
        mock.terminate()
        mock.wait(timeout=10)
    print("\nmedians")
    medians: dict[str, tuple[float, float, float]] = {}
    for name in candidates:
        mine = [run for run in runs if run.candidate == name]
        medians[name] = (
            median([run.events_per_s for run in mine]),
            median([run.cpu_us_per_event for run in mine]),
            median([run.peak_rss_mb for run in mine]),
        )
        eps, cpu, rss = medians[name]
        print(f"  {name:<16}{eps:>12,.0f} events/s{cpu:>9.2f} us/event{rss:>7.0f} MiB")
    if "bridge" in medians:
        bridge = medians["bridge"]
        for other in ("httpx-sse", "openai", "floor"):
            if other in medians:
                theirs = medians[other]
                print(
                    f"  bridge/{other}: events/s {ratio(bridge[0], theirs[0])}, "
                    f"CPU per event {ratio(bridge[1], theirs[1])}"
                )
    if args.disconnects:
        latencies = disconnect_latency_ms(args.disconnects)
        print(
            f"\nleaving the stream block -> server sees end-of-file: median "
            f"{median(latencies):.2f} ms, max {max(latencies):.2f} ms "
            f"({len(latencies)} samples)"
        )


if __name__ == "__main__":
    main()
