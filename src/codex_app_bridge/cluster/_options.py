"""``ClusterOptions``: how a node reaches the NATS servers (``serve --cluster URL ...``).

Plain values, checked without importing ``nats``: the default ``serve`` never loads the client,
and a bad ``--cluster`` flag is reported before anything starts.

Boundary: values only; ``_node`` connects with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from codex_app_bridge.cluster._subjects import LEASE_TTL

__all__ = ["SCHEMES", "ClusterOptions", "ClusterUnavailable"]

SCHEMES: Final = ("nats", "tls", "ws", "wss")
"""URL schemes the NATS client connects with."""


class ClusterUnavailable(ConnectionError):
    """The NATS servers could not be reached, or JetStream is not enabled on them."""


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """The NATS connection of one bridge node (credentials and TLS as ``nats-py`` takes them)."""

    servers: tuple[str, ...]
    """``nats://HOST:PORT`` URLs (``--cluster`` takes them comma-separated); user and password
    or a token may stand in a URL, as the NATS client reads them there."""
    name: str | None = None
    """This node's connection name (seen in NATS monitoring) and lease holder name."""
    creds: str | None = None
    """A ``.creds`` file (user JWT and NKey seed)."""
    nkey_seed: str | None = None
    """A file holding an NKey seed."""
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    connect_timeout: float = 5.0
    lease_ttl: float = LEASE_TTL
    """Seconds a thread's lease lives unless renewed, when this node makes the lease bucket
    (the first node of a cluster does; the others use the bucket's TTL)."""

    @classmethod
    def parse(cls, text: str, **fields: object) -> ClusterOptions:
        """Options for ``--cluster TEXT`` (``ValueError`` naming what is wrong)."""
        servers = tuple(part.strip() for part in text.split(",") if part.strip())
        if not servers:
            raise ValueError("--cluster needs a NATS URL, e.g. nats://127.0.0.1:4222")
        for url in servers:
            parts = urlsplit(url)
            if parts.scheme not in SCHEMES or not parts.hostname:
                raise ValueError(
                    f"invalid --cluster URL {url!r}: expected "
                    f"{' or '.join(s + '://HOST:PORT' for s in SCHEMES[:2])}"
                )
            try:
                parts.port  # noqa: B018 - a bad port raises here
            except ValueError as exc:
                raise ValueError(f"invalid --cluster URL {url!r}: {exc}") from None
        options = cls(servers, **fields)  # pyright: ignore[reportArgumentType]
        if not 0.5 <= options.lease_ttl <= 3600:
            raise ValueError("--cluster-lease-ttl takes 0.5 to 3600 seconds")
        if (options.tls_cert is None) != (options.tls_key is None):
            raise ValueError("--cluster-tls-cert and --cluster-tls-key go together")
        return options

    @property
    def uses_tls(self) -> bool:
        return any(u.startswith(("tls://", "wss://")) for u in self.servers) or bool(
            self.tls_ca or self.tls_cert
        )
