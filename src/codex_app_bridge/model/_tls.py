"""The TLS context every HTTP client shares, whose CA certificates load when first needed.

Role: what ``httpx.create_ssl_context()`` gives (a ``PROTOCOL_TLS_CLIENT`` context as
``ssl.create_default_context`` makes it, verifying against ``SSL_CERT_FILE``, else
``SSL_CERT_DIR``, else certifi's bundle), except that the certificates, whose loading is most
of its cost (about 100 ms of CPU), load on the first TLS connection, or when :meth:`load` is
called (the warm-up of an ``https`` provider, off the event loop). A provider on plain ``http``
(a local mock, a proxy) never pays for them; a connection never starts unverified: ``wrap_bio``
and ``wrap_socket`` load first (anyio runs a subclass's ``wrap_bio`` in a worker thread).

Boundary: the ``ssl`` module and certifi; nothing of HTTP.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
from typing import Any

__all__ = ["LazyTLSContext"]

_LOAD_LOCK = threading.Lock()


class LazyTLSContext(ssl.SSLContext):
    """See the module docstring. Made with :meth:`create`."""

    _loaded: bool

    @classmethod
    def create(cls) -> LazyTLSContext:
        """What ``ssl.create_default_context()`` sets up, but the certificates."""
        context = cls(ssl.PROTOCOL_TLS_CLIENT)  # verify_mode CERT_REQUIRED, check_hostname
        context._loaded = False
        if sys.version_info >= (3, 13):  # as create_default_context does from 3.13
            context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
        keylog = os.environ.get("SSLKEYLOGFILE")
        if keylog and not sys.flags.ignore_environment:
            context.keylog_filename = keylog
        return context

    @property
    def loaded(self) -> bool:
        """Whether the CA certificates are loaded."""
        return self._loaded

    def load(self) -> None:
        """Load the CA certificates as httpx chooses them, once (any thread)."""
        if self._loaded:
            return
        with _LOAD_LOCK:
            if self._loaded:
                return
            if os.environ.get("SSL_CERT_FILE"):
                self.load_verify_locations(cafile=os.environ["SSL_CERT_FILE"])
            elif os.environ.get("SSL_CERT_DIR"):
                self.load_verify_locations(capath=os.environ["SSL_CERT_DIR"])
            else:
                import certifi

                self.load_verify_locations(cafile=certifi.where())
            self._loaded = True

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load()
        return super().wrap_socket(*args, **kwargs)
