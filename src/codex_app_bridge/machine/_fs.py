"""``fs/*``: the host file system as 0.163.0's methods see it (``spec/machine-tools.md`` §7.4).

Blocking functions (the server runs them in a worker thread), each raising ``FsError``: an
``invalid`` one is a request error (-32600, 0.163.0's words), an ``io`` one the bare OS message
as Rust prints it (``No such file or directory (os error 2)``, -32603). Paths are absolute (the
handler checks). No sandbox and no workspace confinement, as 0.163.0 (the client acts for the
user, not the model).
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "FsError",
    "copy",
    "create_directory",
    "get_metadata",
    "read_directory",
    "read_file",
    "remove",
    "write_file",
]


@dataclass
class FsError(Exception):
    kind: Literal["invalid", "io"]
    message: str


def _io(exc: OSError) -> FsError:
    text = exc.strerror or os.strerror(exc.errno or 0)
    return FsError("io", f"{text} (os error {exc.errno})")


def read_file(path: str) -> bytes:
    if os.path.isdir(path):
        raise FsError("invalid", f"path `{path}` is not a file")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise _io(exc) from None


def write_file(path: str, data: bytes) -> None:
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise _io(exc) from None


def create_directory(path: str, recursive: bool) -> None:
    try:
        if recursive:
            if os.path.isfile(path):
                raise FileExistsError(17, os.strerror(17))
            os.makedirs(path, exist_ok=True)
        else:
            os.mkdir(path)
    except FileExistsError as exc:
        if os.path.isdir(path) and recursive:
            return
        raise _io(exc) from None
    except OSError as exc:
        raise _io(exc) from None


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def get_metadata(path: str) -> dict[str, Any]:
    try:
        link = os.lstat(path)
    except OSError as exc:
        raise _io(exc) from None
    is_link = stat.S_ISLNK(link.st_mode)
    try:
        target = os.stat(path) if is_link else link
    except OSError:
        target = link
    birth = getattr(target, "st_birthtime", None)
    return {
        "isDirectory": stat.S_ISDIR(target.st_mode),
        "isFile": stat.S_ISREG(target.st_mode),
        "isSymlink": is_link,
        "createdAtMs": _ms(birth) if isinstance(birth, int | float) else 0,
        "modifiedAtMs": _ms(target.st_mtime),
    }


def read_directory(path: str) -> list[dict[str, Any]]:
    try:
        entries = list(os.scandir(path))
    except OSError as exc:
        raise _io(exc) from None
    out: list[dict[str, Any]] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=True)
            is_file = entry.is_file(follow_symlinks=True)
        except OSError:
            is_dir = is_file = False
        out.append({"fileName": entry.name, "isDirectory": is_dir, "isFile": is_file})
    return out


def remove(path: str, recursive: bool, force: bool) -> None:
    try:
        if os.path.islink(path) or not os.path.isdir(path):
            os.remove(path)
        elif recursive:
            shutil.rmtree(path)
        else:
            os.rmdir(path)
    except FileNotFoundError as exc:
        if not force:
            raise _io(exc) from None
    except OSError as exc:
        raise _io(exc) from None


def copy(source: str, destination: str, recursive: bool) -> None:
    try:
        is_dir = os.path.isdir(source)
        if is_dir:
            if not recursive:
                raise FsError(
                    "invalid", "fs/copy requires recursive: true when sourcePath is a directory"
                )
            real_source = os.path.realpath(source)
            real_dest = os.path.realpath(destination)
            if real_dest == real_source or real_dest.startswith(real_source + os.sep):
                raise FsError(
                    "invalid",
                    "fs/copy cannot copy a directory to itself or one of its descendants",
                )
            shutil.copytree(source, destination, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, destination)
            shutil.copymode(source, destination)
    except FsError:
        raise
    except OSError as exc:
        raise _io(exc) from None
