"""Serve a built site on 127.0.0.1 (for `perfsite serve` and the browser tests). Local only, read only."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from generator.errors import SiteError

HOST = "127.0.0.1"


# Names a browser on this machine uses for the server. Any other Host is a page elsewhere whose domain was made
# to resolve to 127.0.0.1 (DNS rebinding): refused, so that no web page can read the preview.
LOCAL_HOSTS = frozenset({HOST, "localhost", "[::1]"})


class _QuietHandler(SimpleHTTPRequestHandler):
    """Serves the site's own files and nothing else: no file a symlink leads to outside the site folder, no
    directory listing, no other Host than this machine's names; a NUL byte in a URL is a 404, not a traceback."""

    def send_head(self):  # noqa: ANN201 (the base class's signature)
        if not _local_host(self.headers.get("Host")):
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "perfsite serve answers only http://127.0.0.1/")
            return None
        if not all(_inside_site(self.directory, p) for p in _served(self.translate_path(self.path))):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        return super().send_head()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A missing page answers with the site's own 404.html (its theme, its navigation, a search box), still
        with status 404; other errors, and a site without one, as the base class answers."""
        page = os.path.join(self.directory, "404.html")
        if code != HTTPStatus.NOT_FOUND or not os.path.isfile(page) or not _inside_site(self.directory, page):
            super().send_error(code, message, explain)
            return
        with open(page, "rb") as f:
            body = f.read()
        self.send_response(code, message)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def list_directory(self, path: str) -> None:  # noqa: ARG002 (the base class's signature)
        # A built site has an index.html wherever a page is; a listing would only show what is not published.
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        # Library code does not print; a request log on stderr would also garble the CLI's output.
        pass


def _local_host(host: str | None) -> bool:
    """A request without Host (HTTP/1.0) or naming this machine, with or without the port."""
    if host is None:
        return True
    name = host.strip().lower()
    name = name.rpartition(":")[0] if name.rpartition(":")[2].isdigit() else name
    return name in LOCAL_HOSTS


def _served(path: str) -> list[str]:
    """The files a request for `path` can open: the path, and for a folder the index files the base class
    serves from it (a symlinked index.html leads out of the site as surely as a symlinked page)."""
    if "\0" in path or not os.path.isdir(path):
        return [path]
    return [path, *(p for p in (os.path.join(path, "index.html"), os.path.join(path, "index.htm"))
                    if os.path.lexists(p))]


def _inside_site(site: str, path: str) -> bool:
    """The file a URL names, symlinks followed, is the site folder or inside it."""
    if "\0" in path:
        return False
    root = os.path.realpath(site)
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


MAX_PORT = 65535


def make_server(site_dir: Path, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for site_dir bound to 127.0.0.1:port (port 0: any free port, see server_address)."""
    site_dir = Path(site_dir)
    if not 0 <= port <= MAX_PORT:
        raise SiteError(f"--port {port} is not a TCP port. Allowed: 1 to {MAX_PORT} (0: any free port, printed "
                        "when the server starts); ports below 1024 need administrator rights.")
    if not (site_dir / "index.html").is_file():
        what = ("is a file, not a site folder" if site_dir.is_file() else "does not exist" if not site_dir.exists()
                else "holds no index.html")
        raise SiteError(
            f"{site_dir} {what}: it is not a built site. Build it first with `perfsite build`, "
            "or point --site at the folder `perfsite build` wrote."
        )
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    try:
        return ThreadingHTTPServer((HOST, port), handler)
    except OSError as e:
        reason = e.strerror or e
        raise SiteError(f"Cannot listen on {HOST}:{port} ({reason}); choose another port with --port.") from e


def serve(site_dir: Path, port: int, announce: Callable[[str], None] = lambda _url: None) -> None:
    """Serve site_dir on http://127.0.0.1:port/ until interrupted (KeyboardInterrupt propagates); `announce`
    gets the URL once the server listens (with port 0, the port the system chose)."""
    with make_server(site_dir, port) as server:
        host, bound = server.server_address[:2]
        announce(f"http://{host}:{bound}/")
        server.serve_forever()


serve_forever = serve  # the name generator.cli imports


class BackgroundServer:
    """A server on a background thread, for tests and previews: `with BackgroundServer(site) as url: ...`."""

    def __init__(self, site_dir: Path, port: int = 0):
        self.server = make_server(site_dir, port)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/"

    def __enter__(self) -> str:
        self.thread.start()
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
