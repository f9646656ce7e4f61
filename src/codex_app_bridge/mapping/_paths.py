"""``file:`` URIs as the app-server renders them: the working directory of a command item and the
paths of its ``read`` actions.

Codex 0.163.0 carries a command's ``cwd`` as a ``file:`` URI (``file:///home/dev/project``) and the
app-server shows it to clients as a plain path in the *convention the URI itself implies*, not the
host's: a URI with an authority or a leading drive segment (``file:///C:/src``) is a Windows path
and renders with backslashes (``C:\\src``) on every host; anything else is POSIX. A ``read``
action's relative path is joined to that URI lexically (``..`` never climbs above the root, drive
or UNC share), so the item shows where the file is *for the machine that ran the command*.

This is a small port of the behaviour of Codex's ``PathUri`` / ``LegacyAppPathString`` for those
two uses, written from the 0.163.0 behaviour and the upstream tests, not a general URL library:
``file:`` only; query, fragment, port and credentials are rejected; ``localhost`` means no
authority; percent-escapes are decoded once, invalid UTF-8 becomes U+FFFD. Opaque fallback URIs
(``file:///%00/bad/path/<base64>``, Codex's spelling of a path no URI can hold) render back to the
path they encode. Nothing here raises: an input that is not a usable URI gives ``None``.

Boundary: pure string functions, no file system access and no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, unquote_to_bytes

__all__ = ["FileUri", "render_cwd", "resolve_cwd"]

Convention = Literal["posix", "windows"]

_OPAQUE_PREFIX = "file:///%00/bad/path/"
_DRIVE = re.compile(r"[A-Za-z]:")
# Hosts the URL parser accepts for a file URI authority (a DNS name or an IPv4 address).
_HOST = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=-]+")
# Characters a pushed path segment keeps as is; everything else is percent-encoded, so that
# decoding gives the segment back exactly.
_SEGMENT_SAFE = "!$&'()*+,;=:@"


def _decode(segment: str) -> str:
    """A URI path segment as text: percent-escapes decoded once, bad UTF-8 replaced."""
    return unquote_to_bytes(segment).decode("utf-8", errors="replace")


def _encode(segment: str) -> str:
    """A path segment in URI form (the inverse of :func:`_decode` for every text)."""
    return quote(segment.encode("utf-8", errors="surrogatepass"), safe=_SEGMENT_SAFE)


def _is_separator(char: str) -> bool:
    return char in "\\/"


def _opaque_bytes(uri_text: str) -> bytes | None:
    """The native path bytes of an opaque fallback URI, or ``None`` for any other URI."""
    if not uri_text.startswith(_OPAQUE_PREFIX):
        return None
    encoded = uri_text[len(_OPAQUE_PREFIX) :]
    if not encoded or "/" in encoded:
        return None
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        return None
    # only the canonical (unpadded) spelling of those bytes names them
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != encoded:
        return None
    return raw


def _utf16_path(raw: bytes) -> str | None:
    """A Windows path encoded as UTF-16LE code units, when the bytes hold an absolute one."""
    if len(raw) % 2:
        return None
    text = raw.decode("utf-16-le", errors="replace")
    drive_root = len(text) >= 3 and _DRIVE.fullmatch(text[:2]) and _is_separator(text[2])
    unc_or_namespace = len(text) >= 2 and _is_separator(text[0]) and _is_separator(text[1])
    return text if drive_root or unc_or_namespace else None


def _normalized_dot_segments(segments: list[str]) -> list[str]:
    """URL-parser dot-segment removal: ``.`` dropped, ``..`` pops, a trailing one leaves ``/``."""
    out: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        lowered = segment.lower()
        if lowered in ("..", ".%2e", "%2e.", "%2e%2e"):
            keep_drive = len(out) == 1 and _DRIVE.fullmatch(out[0]) is not None
            if out and not keep_drive:
                out.pop()
            if index == last:
                out.append("")
        elif lowered in (".", "%2e"):
            if index == last:
                out.append("")
        else:
            out.append(segment)
    return out or [""]


@dataclass(frozen=True, slots=True)
class FileUri:
    """A parsed ``file:`` URI: an optional authority (UNC host) and its encoded path segments.

    ``segments`` are the parts of the URI path after its leading ``/``, still percent-encoded
    (``file:///a%20b/c`` has ``("a%20b", "c")``; ``file:///`` has ``("",)``).
    """

    host: str | None
    segments: tuple[str, ...]

    # ----------------------------------------------------------------------------- construction

    @classmethod
    def parse(cls, text: str) -> FileUri | None:
        """The URI ``text`` names, or ``None`` if it is not a valid ``file:`` URI."""
        scheme, colon, rest = text.partition(":")
        if not colon or scheme.lower() != "file" or "?" in rest or "#" in rest:
            return None
        rest = rest.replace("\\", "/")
        host: str | None = None
        if rest.startswith("//"):
            authority, slash, path = rest[2:].partition("/")
            path = slash + path
            if "@" in authority or ":" in authority:
                return None  # credentials or a port: no meaning for a file URI
            if authority and _HOST.fullmatch(authority) is None:
                return None
            host = authority.lower() or None
            if host == "localhost":
                host = None
        else:
            path = rest if rest.startswith("/") else "/" + rest
        if not path:
            path = "/"
        segments = _normalized_dot_segments(path[1:].split("/"))
        uri = cls(host, tuple(segments))
        if b"\x00" in unquote_to_bytes("/".join(uri.segments)) and uri.opaque_bytes() is None:
            return None  # a NUL cannot be a native path byte
        return uri

    @classmethod
    def from_native(cls, path: str, convention: Convention) -> FileUri | None:
        """The URI of an absolute native ``path`` in ``convention``; ``None`` if not absolute."""
        if convention == "posix":
            if not path.startswith("/"):
                return None
            if "\x00" in path:
                return cls._opaque(path.encode("utf-8", errors="surrogatepass"))
            return cls._from_segments("posix", None, path[1:].split("/"))
        if "\x00" in path or (
            len(path) >= 4
            and _is_separator(path[0])
            and _is_separator(path[1])
            and path[2] in ".?"
            and _is_separator(path[3])
        ):
            return cls._opaque(path.encode("utf-16-le", errors="surrogatepass"))
        if len(path) >= 3 and _DRIVE.fullmatch(path[:2]) and _is_separator(path[2]):
            return cls._from_segments("windows", None, [path[:2], *re.split(r"[\\/]", path[3:])])
        if len(path) >= 2 and _is_separator(path[0]) and _is_separator(path[1]):
            parts = re.split(r"[\\/]", path[2:])
            if len(parts) < 2 or not parts[0] or not parts[1]:
                return None
            host = parts[0]
            if _HOST.fullmatch(host) is None:
                return cls._opaque(path.encode("utf-16-le", errors="surrogatepass"))
            return cls._from_segments("windows", host, parts[1:])
        return None

    @classmethod
    def _opaque(cls, raw: bytes) -> FileUri:
        encoded = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        return cls(None, ("%00", "bad", "path", encoded))

    @classmethod
    def _from_segments(
        cls, convention: Convention, host: str | None, segments: list[str]
    ) -> FileUri:
        anchor = 1 if convention == "windows" else 0
        out: list[str] = []
        depth = 0
        for segment in segments:
            if segment == ".":
                continue
            if segment == "..":
                while out and out[-1] == "":
                    out.pop()
                if depth > anchor:
                    out.pop()
                    depth -= 1
                continue
            out.append(segment)
            depth += 1 if segment else 0
        host = host.lower() if host else None
        return cls(None if host == "localhost" else host, tuple(_encode(s) for s in out) or ("",))

    # ----------------------------------------------------------------------------- inspection

    def to_uri(self) -> str:
        """The URI spelled out again (``file://host/a/b``)."""
        return f"file://{self.host or ''}/" + "/".join(self.segments)

    def opaque_bytes(self) -> bytes | None:
        """The native path bytes an opaque fallback URI encodes, ``None`` for ordinary URIs."""
        return _opaque_bytes(self.to_uri()) if self.host is None else None

    def convention(self) -> Convention | None:
        """POSIX or Windows, as the URI's spelling implies (``None``: an unreadable fallback)."""
        raw = self.opaque_bytes()
        if raw is not None:
            if raw.startswith(b"/"):
                return "posix"
            return "windows" if _utf16_path(raw) is not None else None
        if self.host is not None:
            return "windows"
        first = next((s for s in self.segments if s), None)
        return "windows" if first is not None and _DRIVE.fullmatch(first) else "posix"

    def native_path(self) -> str:
        """The path in the URI's own convention; the URI itself when it has none."""
        rendered = self._render()
        return self.to_uri() if rendered is None else rendered

    def _render(self) -> str | None:
        convention = self.convention()
        raw = self.opaque_bytes()
        if raw is not None:
            if convention == "posix":
                return raw.decode("utf-8", errors="replace")
            return _utf16_path(raw)
        if convention == "posix":
            return "".join("/" + _decode(s) for s in self.segments)
        if convention is None:
            return None
        segments = list(self.segments)
        first = _decode(segments.pop(0))
        if self.host is not None:
            if not first:
                return None
            rendered = f"\\\\{self.host}\\{first}"
        else:
            rendered = first
        rendered += "".join("\\" + _decode(s) for s in segments)
        return rendered + "\\" if len(rendered) == 2 and rendered[1] == ":" else rendered

    # ----------------------------------------------------------------------------- joining

    def join(self, path: str) -> FileUri | None:
        """``path`` resolved lexically against this URI (an absolute ``path`` replaces it).

        ``None`` when it cannot be: a NUL in ``path``, a Windows drive-relative ``path``
        (``C:x``), or a base that is an opaque fallback or has no convention.
        """
        if "\x00" in path:
            return None
        if not path:
            return self
        convention = self.convention()
        if convention is None:
            return None
        absolute = FileUri.from_native(path, convention)
        if absolute is not None:
            return absolute
        if convention == "windows" and _DRIVE.match(path):
            return None
        if self.opaque_bytes() is not None:
            return None
        anchor = 1 if convention == "windows" else 0
        segments = list(self.segments)
        depth = sum(1 for s in segments if s)
        if segments and segments[-1] == "":
            segments.pop()
        root_relative = (
            convention == "windows"
            and _is_separator(path[0])
            and not (len(path) > 1 and _is_separator(path[1]))
        )
        if root_relative:
            while depth > anchor:
                segments.pop()
                depth -= 1
        components = path.replace("\\", "/") if convention == "windows" else path
        for component in components.split("/"):
            if component in ("", "."):
                continue
            if component == "..":
                if depth > anchor:
                    segments.pop()
                    depth -= 1
                continue
            segments.append(_encode(component))
            depth += 1
        return FileUri(self.host, tuple(segments))


def _native_convention(path: str) -> Convention | None:
    """The convention an absolute plain path is spelled in (``None`` for a relative one)."""
    if (len(path) >= 3 and _DRIVE.fullmatch(path[:2]) and _is_separator(path[2])) or (
        path.startswith("\\\\")
    ):
        return "windows"
    return "posix" if path.startswith("/") else None


def resolve_cwd(cwd: str) -> FileUri | None:
    """The working directory as a URI: parsed from a ``file:`` URI, or from an absolute plain
    path (older producers send ``/repo``); ``None`` when it is neither."""
    uri = FileUri.parse(cwd)
    if uri is not None:
        return uri
    convention = _native_convention(cwd)
    return None if convention is None else FileUri.from_native(cwd, convention)


def render_cwd(cwd: str) -> str:
    """The ``cwd`` a command item shows: a ``file:`` URI as its native path, any other string
    (a plain path from an older producer) unchanged."""
    uri = FileUri.parse(cwd)
    return cwd if uri is None else uri.native_path()
