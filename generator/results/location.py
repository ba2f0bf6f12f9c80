"""Where a results store lives: a local folder, or a URL that fsspec opens (s3://bucket/results, gs://, az://).

Both kinds give every object whole or not at all, which is what a store's atomic trials rest on:

- a local folder (a path, or a file:// URL) writes each file under a dot-prefixed temporary name, fsyncs it and
  renames it into place (atomic on POSIX);
- an object store writes each object with one PUT (s3fs sends small objects in one request and large ones as a
  multipart upload, which becomes visible only when completed), so a reader never sees half an object.

A trial is then made atomic by the order of its objects (generator.results.store): its data first, its
`trials/<key>.parquet` row last, the commit marker; readers ignore data whose marker is absent.

Credentials and endpoints come from where fsspec's backend looks (for S3: the AWS_* environment variables,
AWS_ENDPOINT_URL, ~/.aws, fsspec's configuration); perfsite never reads or prints them (docs/stores.md).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any

from generator.errors import ResultsError
from generator.paths import atomic_write_bytes

StoreRoot = str | Path  # what --results takes: a folder, or a URL
# scheme://... as fsspec writes URLs; `s3:/bucket` (one slash) is a typo, not a local folder named "s3:".
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")
_ALMOST_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/(?!/)")
# Modules whose exceptions are the transport's (a refused connection, a bad bucket name), not perfsite bugs.
_TRANSPORT_MODULES = ("botocore", "aiobotocore", "aiohttp", "s3fs", "fsspec", "gcsfs", "adlfs", "google")
# What tells a rewritten object apart in fsspec's info(), by backend: S3's ETag, GCS's and Azure's etag, else a
# modification time (local: mtime; S3: LastModified; Azure: last_modified; GCS: updated).
CHANGE_MARKERS = ("ETag", "etag", "mtime", "LastModified", "last_modified", "updated")
# fsspec protocols whose files live in this process's memory only: a store there is gone when the command ends
# (`run --results memory://b/x` said "Results in memory://b/x/…" and the next `build` found nothing).
IN_PROCESS_PROTOCOLS = ("memory",)
ALLOWED = ("Allowed for --results: a local folder, or an fsspec URL such as s3://bucket/results (s3:// needs "
           "`pip install 'perfsite[s3]'`), with credentials and endpoint from the usual places (AWS_ACCESS_KEY_ID, "
           "AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, ~/.aws, fsspec's configuration; docs/stores.md).")


def is_url(root: StoreRoot) -> bool:
    """A URL fsspec opens (file:// included); a Path is never one."""
    return isinstance(root, str) and _URL.match(root) is not None


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/@]*)@")


def shown(root: StoreRoot) -> str:
    """The store as messages name it: a URL without any `user:password@` part (never print a secret)."""
    return _USERINFO.sub(r"\1", str(root))


def refuse_url(text: str, what: str) -> None:
    """A local-folder option or argument given a URL (`s3://…`): one paragraph naming it without its secret,
    before a Path folds `s3://` into `s3:/` and the message quotes the user's credentials as a missing folder.
    `what` says which option takes folders only."""
    if _URL.match(text) or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/[^/]", text):
        raise ResultsError(f"{what} reads a results folder on this machine, and {shown(text)} is a URL. Allowed: a "
                           "local folder; copy the store first (for example `aws s3 sync s3://bucket/path DIR`), "
                           "then give DIR. `perfsite run`, `perfsite build --results` and `perfsite query` take "
                           "URLs (docs/stores.md).")


def refuse_in_process(root: StoreRoot) -> None:
    """A store URL whose filesystem lives in this process only (IN_PROCESS_PROTOCOLS): refused, as `run` would
    measure into it, report success and keep nothing."""
    match = _URL.match(str(root)) if is_url(root) else None
    if match and match["scheme"].lower() in IN_PROCESS_PROTOCOLS:
        raise ResultsError(f"--results {shown(root)} names a store in this process's memory, gone when the command "
                           "ends: nothing written there would be found again by `build`, `query` or the next `run`. "
                           f"{ALLOWED}")


def _scrubbed(text: str, url: str) -> str:
    """A backend's message with the URL's `user:password` part (which it may quote) cut out."""
    match = _USERINFO.match(url)
    return text.replace(match[2], "…") if match and match[2] else text


def join(root: StoreRoot, *names: str) -> StoreRoot:
    """A folder inside a store: a Path under a local root, a URL under a URL root."""
    if is_url(root):
        return "/".join([str(root).rstrip("/"), *names])
    return Path(root).joinpath(*names)


def local_path(root: StoreRoot) -> Path | None:
    """The local folder a root names (a path or a file:// URL), or None for an object store."""
    if not is_url(root):
        text = str(root)
        if _almost_url(text) and not os.path.exists(text):
            raise ResultsError(f"The results store {shown(text)} is not a valid URL: a URL is written "
                               f"scheme://bucket/path (two slashes). {ALLOWED}")
        return Path(root)
    refuse_in_process(root)
    match = _URL.match(str(root))
    if match["scheme"].lower() not in ("file", "local"):
        # `s3://bucket//path`: object stores keep the empty segment in the key (`/path/...`) and list it as
        # another folder, so results were written where no later run, build or query found them.
        if "//" in match["rest"].rstrip("/"):
            raise ResultsError(f"The results store {shown(root)} has an empty path segment (`//`), which an object "
                               f"store keeps in its keys: what is written there is not found again. {ALLOWED}")
        return None
    return _file_url_path(str(root), match["rest"])


def _almost_url(text: str) -> bool:
    """`s3:/bucket` (one slash), or a protocol fsspec knows and a colon without slashes (`s3:bucket/results`,
    `file:results`): a typo of a URL, which was taken for a local folder named `s3:bucket`."""
    if _ALMOST_URL.match(text):
        return True
    scheme, colon, _ = text.partition(":")
    if not colon or "/" in scheme:
        return False
    import fsspec

    return scheme.lower() in fsspec.available_protocols()


def _file_url_path(root: str, rest: str) -> Path:
    """file:///p and file://localhost/p name the folder /p. Any other host part (a machine, `user:password@`) is
    refused: perfsite reads and writes this machine's folders only, and such a part was once taken for the first
    folder under / (`file://u:pw@localhost/tmp/x` wrote /u:pw@localhost/tmp/x and printed the password).
    The path is percent-decoded, as a file URL's is (RFC 8089; a browser's address bar shows
    `file:///srv/my%20results`): it was taken literally, so `run` wrote a new folder named `my%20results`."""
    if rest.startswith("/"):
        return Path("/" + urllib.parse.unquote(rest.lstrip("/")))
    host, _, path = rest.partition("/")
    if host.lower() != "localhost":
        raise ResultsError(f"The results store {shown(root)} is a file:// URL with a host or credentials part: "
                           "perfsite reads and writes folders of this machine only, written file:///path or "
                           f"file://localhost/path. {ALLOWED}")
    return Path("/" + urllib.parse.unquote(path.lstrip("/")))


def open_filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of a URL and the store's path on it; the one place perfsite opens one (the query
    views and the store's reads and writes share it). A new instance each time: fsspec's instance cache
    would keep an endpoint or credentials from before the environment changed."""
    try:
        import fsspec
    except ImportError as e:
        raise ResultsError(f"Cannot open the results store {shown(url)}: fsspec is not installed. Install "
                           "perfsite with the s3 extra: `pip install 'perfsite[s3]'`.") from e
    try:
        options = _transport_options(url)
        fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True, **options)
        if options:
            fs.retries = 1  # s3fs's attempts around each call (a class attribute, not an option)
    except ImportError as e:  # fsspec names the package a protocol needs ("Install s3fs to access S3")
        raise ResultsError(f"Cannot open the results store {shown(url)}: {_scrubbed(str(e), url)}. Install that "
                           "package into perfsite's environment (for s3://: `pip install 'perfsite[s3]'`) and run "
                           "the command again.") from e
    except ValueError as e:  # "Protocol not known: xyz"
        raise ResultsError(f"Cannot open the results store {shown(url)}: {_scrubbed(str(e), url)}. {ALLOWED}") from e
    except Exception as e:  # backends that connect when opened (ftp://, sftp://): a refused connection
        if not is_transport_error(e):
            raise
        raise remote_failure(url, "open", e) from e
    root = root.rstrip("/")
    if not root:
        raise ResultsError(f"The results store {shown(url)} names no bucket or folder. {ALLOWED}")
    return fs, root


# botocore waits 60 s for a connection and 60 s for each answer, five times over: an endpoint that accepts the
# connection and never answers held `build`, `run` and `query` silent for minutes. Small objects answer in well
# under a second; a few seconds of headroom for slow links, two attempts unless AWS_MAX_ATTEMPTS says otherwise,
# and no second layer of retries in s3fs (its own five, around botocore's).
S3_TIMEOUTS = {"connect_timeout": 10, "read_timeout": 15}
S3_ATTEMPTS = 2


def _transport_options(url: str) -> dict[str, Any]:
    """fsspec options perfsite sets for a protocol: S3's timeouts and retries (see S3_TIMEOUTS)."""
    if _URL.match(url)["scheme"].lower() not in ("s3", "s3a"):
        return {}
    config: dict[str, Any] = dict(S3_TIMEOUTS)
    if not os.environ.get("AWS_MAX_ATTEMPTS"):
        config["retries"] = {"max_attempts": S3_ATTEMPTS, "mode": "standard"}
    session = _s3_session()
    return {"config_kwargs": config} | ({"session": session} if session is not None else {})


@functools.cache
def _botocore_loader() -> Any:
    from botocore.loaders import create_loader

    return create_loader(os.environ.get("AWS_DATA_PATH"))  # botocore's own search path setting


def _s3_session() -> Any:
    """A new botocore session (credentials and endpoint read afresh, as a new instance is for), sharing one
    loader of botocore's data files: each session parsed its endpoint and S3 service files again, about 0.3 s
    of JSON a store opened. None where aiobotocore is missing (s3fs then says what to install)."""
    try:
        from aiobotocore.session import AioSession
    except ImportError:
        return None
    session = AioSession()
    session.register_component("data_loader", _botocore_loader())
    return session


def is_transport_error(error: BaseException) -> bool:
    return isinstance(error, OSError) or type(error).__module__.split(".")[0] in _TRANSPORT_MODULES


def remote_failure(url: str, action: str, error: BaseException) -> ResultsError:
    """One paragraph for a failed call to an object store: what could not be done, why in the store's words,
    and what is allowed. The store's own message names no secret (botocore never quotes a key)."""
    name = type(error).__name__
    reason = _scrubbed(" ".join(str(error).split()) or name, url)
    if isinstance(error, FileNotFoundError) or "NoSuchBucket" in reason:
        why = (f"the bucket or path does not exist ({reason}); create the bucket first (for S3: `aws s3 mb "
               "s3://BUCKET`, or the provider's console)")
    elif isinstance(error, PermissionError) or "AccessDenied" in reason or "InvalidAccessKeyId" in reason:
        why = (f"access was refused ({reason}); check the credentials perfsite runs with and that they may "
               "list, read and write that bucket")
    elif name in ("ParamValidationError", "InvalidBucketName"):
        why = f"the URL is malformed ({reason})"
    elif name == "NoCredentialsError":
        why = "no credentials were found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile)"
    else:
        why = f"the storage endpoint cannot be reached ({name}: {reason}); check {_endpoint_setting(url)}"
    return ResultsError(f"Cannot {action} the results store {shown(url)}: {why}. {ALLOWED}")


def _endpoint_setting(url: str) -> str:
    """Where the endpoint of `url`'s store is set: AWS_ENDPOINT_URL for S3 (an S3-compatible server), the URL's
    own host and port for every other protocol (ftp://, sftp://, ...), which AWS_ENDPOINT_URL does not touch."""
    match = _URL.match(url)
    if match and match["scheme"].lower() in ("s3", "s3a"):
        return "AWS_ENDPOINT_URL (an S3-compatible server) and the network"
    return "the host and port in the URL, and the network"


@contextlib.contextmanager
def _remote(url: str, action: str) -> Iterator[None]:
    try:
        yield
    except ResultsError:
        raise
    except Exception as e:
        if not is_transport_error(e):
            raise
        raise remote_failure(url, action, e) from e


@dataclass(frozen=True)
class ObjectStore:
    """A store on an fsspec filesystem that is not the local disk: objects are written whole, in one PUT."""

    url: str  # the store's URL, as the user gave it (shown without secrets)
    fs: Any
    root: str  # the store's path on `fs` (bucket/prefix)

    def _path(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    def shown(self, rel: str = "") -> str:
        return shown(f"{self.url.rstrip('/')}/{rel}" if rel else self.url)

    def child(self, name: str) -> ObjectStore:
        return ObjectStore(f"{self.url.rstrip('/')}/{name}", self.fs, self._path(name))

    def write(self, rel: str, data: bytes) -> None:
        with _remote(self.url, f"write {rel} into"):
            self.fs.pipe_file(self._path(rel), data)

    def read(self, rel: str) -> bytes:
        with _remote(self.url, f"read {rel} from"):
            return self.fs.cat_file(self._path(rel))

    def read_many(self, rels: list[str]) -> list[bytes]:
        """Several objects, fetched concurrently where the backend can (s3fs batches them)."""
        if not rels:
            return []
        with _remote(self.url, "read"):
            found = self.fs.cat([self._path(r) for r in rels], on_error="raise")
        return [found[self._path(r)] for r in rels]

    def remove(self, rel: str) -> None:
        with _remote(self.url, f"delete {rel} from"), contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._path(rel))

    def exists(self, rel: str) -> bool:
        with _remote(self.url, "read"):
            return self.fs.exists(self._path(rel))

    def names(self, rel: str) -> list[str]:
        """The Parquet file names in a folder of the store, sorted, dot-prefixed ones left out; [] if none."""
        return sorted(name for name, is_folder in self._entries(rel)
                      if not is_folder and name.endswith(".parquet") and not name.startswith("."))

    def folders(self) -> list[str]:
        return sorted(name for name, is_folder in self._entries("") if is_folder and not name.startswith("."))

    def _entries(self, rel: str) -> list[tuple[str, bool]]:
        path = self._path(rel)
        with _remote(self.url, "list"):
            self.fs.invalidate_cache(path)  # another writer's objects since the last listing count too
            try:
                entries = self.fs.ls(path, detail=True)
            except FileNotFoundError:
                if rel:  # a folder a store lacks (no nodes/ yet); the store itself missing is an error
                    return []
                raise
        return [(e["name"].rstrip("/").rsplit("/", 1)[-1], e["type"] == "directory") for e in entries
                if e["name"].rstrip("/") != path]

    def is_store(self) -> bool:
        with _remote(self.url, "list"):
            self.fs.invalidate_cache(self.root)
            return self.fs.isdir(self.root)

    def ensure_writable(self) -> None:
        """Write and delete a probe object: a missing bucket or refused credentials are reported before any
        measurement, naming the store."""
        probe = self._path(f".write-probe-{os.getpid()}")
        with _remote(self.url, "write into"):
            self.fs.pipe_file(probe, b"")
            self.fs.rm_file(probe)

    def stamps(self) -> list[tuple[str, int, str]] | None:
        """Every object of the store (path relative to it, size, change marker) as fsspec's `info()` gives
        them, for generator.site.incremental's page keys: the ETag where the backend gives one, else its
        modification time; None when an object has neither (nothing then tells a rewritten object apart)."""
        with _remote(self.url, "list"):
            self.fs.invalidate_cache(self.root)
            found = self.fs.find(self.root, detail=True)
        out = []
        for name, info in sorted(found.items()):
            rel = name.rstrip("/")[len(self.root) + 1:]
            if info.get("type") == "directory" or not rel or any(p.startswith(".") for p in rel.split("/")):
                continue  # a write probe is not a result
            marker = next((info[k] for k in CHANGE_MARKERS if info.get(k) not in (None, "")), None)
            if marker is None:
                return None
            out.append((rel, int(info.get("size") or 0), str(marker)))
        return out

    @property
    def lock_folder(self) -> Path:
        """Where this machine's `perfsite run` processes lock the trials of this store (generator.runner.locks):
        an object store has no lock, and none is needed across machines, since a trial key includes the
        environment's fingerprint (two machines never measure the same key). One folder per store URL."""
        digest = hashlib.sha256(self.url.rstrip("/").encode()).hexdigest()[:20]
        uid = os.getuid() if hasattr(os, "getuid") else 0
        return Path(tempfile.gettempdir()) / f"perfsite-locks-{uid}" / digest


    def sources(self, rel: str, names: list[str]) -> list[Any]:
        """Each file of a folder as the store reads it: its bytes, fetched together."""
        return self.read_many([f"{rel}/{n}" for n in names])


@dataclass(frozen=True)
class LocalFolder:
    """A store in a folder on this machine: each file written to a temporary name, then renamed."""

    path: Path

    def shown(self, rel: str = "") -> str:
        return str(self.path / rel) if rel else str(self.path)

    def child(self, name: str) -> LocalFolder:
        return LocalFolder(self.path / name)

    def write(self, rel: str, data: bytes) -> None:
        atomic_write_bytes(self.path / rel, data)

    def read(self, rel: str) -> bytes:
        return (self.path / rel).read_bytes()

    def remove(self, rel: str) -> None:
        (self.path / rel).unlink(missing_ok=True)

    def exists(self, rel: str) -> bool:
        return (self.path / rel).exists()

    def names(self, rel: str) -> list[str]:
        folder = self.path / rel
        if not folder.is_dir():
            return []
        names = sorted(p.name for p in folder.glob("*.parquet") if not p.name.startswith("."))
        for name in names:
            refuse_special_file(folder / name)
        return names

    def folders(self) -> list[str]:
        return sorted(p.name for p in self.path.iterdir() if p.is_dir())

    def is_store(self) -> bool:
        return self.path.is_dir()

    def sources(self, rel: str, names: list[str]) -> list[Any]:
        # Absolute: pyarrow reads a relative `col:on/…` as a URI of the scheme `col` ("Unrecognized filesystem").
        return [(self.path / rel / n).absolute() for n in names]

    def stamps(self) -> list[tuple[str, int, str]]:
        """ObjectStore.stamps of a local folder: os.stat's size, and as the change marker the modification
        time, the inode change time and the inode number; dot-prefixed temporary files left out. The
        modification time alone misses a rewrite that sets it back (`touch -d`, a sync tool preserving times)
        with the same size; the change time cannot be set back by a user, and perfsite's writers replace files
        by rename, which gives a new inode. No content hash: stat only, so a big store is keyed cheaply."""
        # os.walk and one stat per file, not pathlib's rglob, is_file and stat: a rebuild keys every experiment
        # of the store (7,000 files in bench/site_scale.py: 0.14 s before, a thirtieth of the rebuild). Links
        # are followed as rglob and stat follow them; files are listed in rglob's order (by path components).
        found = []
        for folder, dirs, files in os.walk(self.path, followlinks=True):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            parts = Path(folder).relative_to(self.path).parts
            for name in files:
                if name.startswith("."):
                    continue
                try:
                    stat = os.stat(os.path.join(folder, name))
                except OSError:  # a broken link, or a file removed meanwhile
                    continue
                if S_ISREG(stat.st_mode):
                    found.append(((*parts, name), stat))
        found.sort(key=lambda item: item[0])
        return [("/".join(parts), stat.st_size, f"{stat.st_mtime_ns}:{stat.st_ctime_ns}:{stat.st_ino}")
                for parts, stat in found]

    @property
    def lock_folder(self) -> Path:
        return self.path / ".locks"


Location = LocalFolder | ObjectStore


def refuse_special_file(path: Path) -> None:
    """ResultsError for a results file that is a pipe, a device or a socket: pyarrow and DuckDB would wait on a
    pipe for ever and read /dev/zero without end. A broken link or a missing file is left to the readers."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not S_ISREG(mode) and not S_ISDIR(mode):
        raise ResultsError(f"The results file {path} is not a regular file (a pipe, a device or a socket), so "
                           "reading it would never end. Allowed in a results store: the Parquet files `perfsite "
                           "run` writes; remove this one (it holds nothing measured) and run the command again.")


def open_location(root: StoreRoot) -> Location:
    """The store at `root`: a local folder (a path or a file:// URL) or an object store (any other URL)."""
    local = local_path(root)
    if local is not None:
        return LocalFolder(local)
    fs, path = open_filesystem(str(root))
    return ObjectStore(str(root), fs, path)
