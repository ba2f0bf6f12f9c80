"""`perfsite serve` shows the site and nothing else: not a file a symlink leads to outside it, not a folder's
listing, not to a page whose domain was made to resolve to 127.0.0.1, and a NUL byte in a URL is a 404."""

from __future__ import annotations

import http.client
from pathlib import Path

import pytest

from generator.site.serve import BackgroundServer


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "assets").mkdir(parents=True)
    (site / "index.html").write_text("<p>home</p>")
    (site / "assets" / "app.js").write_text("//js")
    (tmp_path / "secret.txt").write_text("the secret")
    (site / "secret.txt").symlink_to(tmp_path / "secret.txt")
    (site / "outside").symlink_to(tmp_path)
    (site / "home.html").symlink_to(site / "index.html")  # a symlink inside the site is fine
    (site / "leaky").mkdir()
    (site / "leaky" / "index.html").symlink_to(tmp_path / "secret.txt")  # a folder's index leading out
    return site


def _get(url: str, path: str, host: str | None = None) -> tuple[int, bytes]:
    address = url.removeprefix("http://").rstrip("/")
    connection = http.client.HTTPConnection(address, timeout=10)
    connection.putrequest("GET", path, skip_host=host is not None)
    if host is not None:
        connection.putheader("Host", host)
    connection.endheaders()
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body


def test_serve_shows_the_site_and_nothing_outside_it(site):
    with BackgroundServer(site) as url:
        assert _get(url, "/") == (200, b"<p>home</p>")
        assert _get(url, "/assets/app.js") == (200, b"//js")
        assert _get(url, "/home.html") == (200, b"<p>home</p>")
        port = url.rstrip("/").rpartition(":")[2]
        assert _get(url, "/", host=f"localhost:{port}")[0] == 200
        for path in ("/secret.txt", "/outside/secret.txt", "/outside/", "/assets/", "/../secret.txt",
                     "/%2e%2e/secret.txt", "/..%2fsecret.txt", "/index.html%00.png", "/%00", "/leaky/",
                     "/leaky/?q=1", "/leaky/index.html"):
            status, body = _get(url, path)
            assert status == 404 and b"the secret" not in body and b"app.js" not in body, path
        status, body = _get(url, "/", host=f"rebound.example:{port}")
        assert status == 421 and b"home" not in body and b"only http://127.0.0.1/" in body


def test_a_missing_page_gets_the_sites_own_404_page_with_status_404(site, tmp_path):
    with BackgroundServer(site) as url:
        status, body = _get(url, "/reports/nope.html")
        assert status == 404 and b"Error response" in body  # no 404.html: the server's own answer
        (site / "404.html").write_text("<title>404 - Not found</title><p>the site's page</p>")
        for path in ("/reports/nope.html", "/secret.txt", "/assets/"):
            assert _get(url, path) == (404, b"<title>404 - Not found</title><p>the site's page</p>"), path
        (site / "404.html").unlink()
        (site / "404.html").symlink_to(tmp_path / "secret.txt")  # a 404 page leading out is not served
        status, body = _get(url, "/reports/nope.html")
        assert status == 404 and b"the secret" not in body
