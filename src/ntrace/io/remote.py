"""Traces behind fsspec URLs (s3://bucket/prefix/…): listed, sized against the disk and memory available, downloaded into a temporary directory for the time of one analysis.

Credentials are the backend's own (for S3, s3fs reads the user's normal AWS configuration:
environment, ~/.aws, instance roles); ntrace never reads or prints them. NTRACE_S3_ENDPOINT
points s3:// URLs at another S3-compatible endpoint (AWS_ENDPOINT_URL works too, through botocore).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ntrace.errors import InputError, NtraceError
from ntrace.io.files import check_fits
from ntrace.units import size

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
#: How the temporary directory of a run's downloaded copies is named (in the system's temporary directory).
COPIES_PREFIX = "ntrace-remote-"


def is_url(path: str | Path) -> bool:
    """True when `path` is a URL for fsspec (scheme://…) rather than a local path; a Path never is (it has lost the double slash)."""
    return isinstance(path, str) and bool(_URL.match(path))


@dataclass(frozen=True)
class LocalCopies:
    """The inputs as local paths (a URL's temporary copy in its place), and the URL each copy stands for, to name it by."""

    paths: list[str | Path]
    urls: dict[str, str] = field(default_factory=dict)  # a copy's path → its URL
    deferred: dict[Path, tuple[Any, str, str]] = field(default_factory=dict)  # a file not downloaded yet: where it goes → (file system, URL, its name there)

    def __iter__(self) -> Iterator[str | Path]:
        return iter(self.paths)

    def fetch(self, local: Path) -> None:
        """Download the deferred file that belongs at `local` (see local_copies' `defer`)."""
        fs, url, name = self.deferred.pop(local)
        nbytes = int(fs.info(name).get("size") or 0)
        where = local.parent
        while not where.exists():
            where = where.parent
        if nbytes > (free := shutil.disk_usage(where).free):
            raise InputError(url, f"{name}: is too large to download: {size(nbytes)}, {size(free)} free in {where}")
        _get(fs, url, name, local)

    def shown(self, text: str) -> str:
        """`text` with every path at or under a copy written as the URL it came from (the copy is gone when the user reads it)."""
        for copy, url in sorted(self.urls.items(), key=lambda c: -len(c[0])):  # the longest first: …/1 must not take …/10
            text = re.sub(re.escape(copy) + r"(?=/|$|[^\w.~-])", lambda _: url, text)
        return text


@contextlib.contextmanager
def local_copies(paths: Sequence[str | Path], defer: Callable[[str], bool] | None = None) -> Iterator[LocalCopies]:
    """`paths` with each URL replaced by a local copy of what it names (a file, or a directory of everything under a prefix), removed afterwards.

    Files under a prefix whose name there (relative, with /) `defer` accepts are not downloaded:
    they wait in LocalCopies.deferred until `fetch`ed.
    """
    if not any(is_url(p) for p in paths):
        yield LocalCopies(list(paths))
        return
    with tempfile.TemporaryDirectory(prefix=COPIES_PREFIX) as tmp:
        deferred: dict[Path, tuple[Any, str, str]] = {}
        copies = {str(p): _download(str(p), Path(tmp) / str(i), defer, deferred) for i, p in enumerate(paths) if is_url(p)}  # URL → the file or directory standing for it
        local = LocalCopies([copies.get(str(p), p) for p in paths], {str(copy): url.rstrip("/") for url, copy in copies.items()}, deferred)
        try:
            yield local
        except NtraceError as exc:  # an error about a downloaded file names it by its URL, not its temporary copy
            raise type(exc)(local.shown(exc.path), exc.problem) if exc.path is not None else exc from None


def _filesystem(url: str) -> tuple[Any, str]:
    """The fsspec file system for `url` and the path within it."""
    try:
        import fsspec
    except ImportError:
        raise InputError(url, "is a URL: reading it needs fsspec (and s3fs for s3://): pip install 'ntrace[remote]'") from None
    options: dict[str, Any] = {}
    if url.startswith(("s3://", "s3a://")) and (endpoint := os.environ.get("NTRACE_S3_ENDPOINT")):
        options["endpoint_url"] = endpoint
    try:
        fs, root = fsspec.core.url_to_fs(url, **options)
    except (ImportError, ValueError) as exc:  # no backend installed for the scheme, or a malformed URL
        raise InputError(url, f"cannot be opened ({exc})") from None
    return fs, root


def _download(url: str, dest: Path, defer: Callable[[str], bool] | None, deferred: dict[Path, tuple[Any, str, str]]) -> Path:
    """Copy the file at `url`, or every file under it but those `defer` accepts (noted in `deferred`), into `dest`; the local path standing for `url`."""
    fs, root = _filesystem(url)
    try:
        info = fs.info(root)
        listing = fs.find(root, detail=True) if info["type"] == "directory" else {root: info}
    except FileNotFoundError:
        raise InputError(url, "does not exist (no such bucket, object or prefix)") from None
    except Exception as exc:  # each fsspec backend raises its own errors (botocore's, aiohttp's); none carries credentials
        raise InputError(url, f"cannot be listed ({type(exc).__name__}: {exc})") from None
    files = {name: int(meta.get("size") or 0) for name, meta in listing.items() if meta.get("type") == "file"}
    if not files:
        raise InputError(url, "holds no files")
    base = root.rstrip("/")
    if info["type"] == "directory" and defer is not None:
        for name in [n for n in files if defer(n[len(base) :].lstrip("/"))]:
            del files[name]
            deferred[dest / name[len(base) :].lstrip("/")] = (fs, url, name)
    total = sum(files.values())
    dest.mkdir(parents=True)
    if total > (free := shutil.disk_usage(dest).free):
        raise InputError(url, f"is too large to download: {size(total)} in {len(files)} files, {size(free)} free in {dest.parent}")
    for name, nbytes in files.items():
        if name.endswith(".json"):  # plain JSON: its size is what decoding needs memory for (gzip is checked as it inflates)
            check_fits(Path(name), nbytes)
    if info["type"] != "directory":
        local = dest / Path(root).name
        _get(fs, url, root, local)
        return local
    for name in files:
        _get(fs, url, name, dest / name[len(base) :].lstrip("/"))
    return dest


def _get(fs: Any, url: str, name: str, local: Path) -> None:
    """Download one file `name` of the file system to `local`."""
    local.parent.mkdir(parents=True, exist_ok=True)
    try:
        fs.get_file(name, str(local))
    except Exception as exc:  # as in _download
        raise InputError(url, f"{name}: cannot be downloaded ({type(exc).__name__}: {exc})") from None
