"""What `perfsite run --ray ADDRESS --target NAME` may say, checked before anything starts, and the handshake
that tells a Ray head from any other server listening on a port.

The command line checks the words (`check_ray_address`, `check_target_name`) before a spec is loaded or a model
built. Before joining, the driver asks the address for the first frame every gRPC server (a Ray head's GCS, a
Ray Client server) sends (`check_ray_head`): `ray.init` given a port that accepts connections but speaks
something else retries for minutes and prints Ray's own log lines meanwhile. No Ray import here: the handshake
is the HTTP/2 connection preface, a few bytes over a socket (RFC 9113, section 3.4).
"""

from __future__ import annotations

import os
import re
import socket
import time
from dataclasses import dataclass

from generator.errors import RunError
from generator.spec.fields import SLUG_HELP, SLUG_MAX_LENGTH, SLUG_PATTERN

AUTO = "auto"
CLIENT_SCHEME = "ray"
MAX_PORT = 65535
# Connecting and the first answer each get this long: a Ray head answers in milliseconds, even far away.
HANDSHAKE_TIMEOUT_S = 5.0
# The client's connection preface: a fixed string, then a SETTINGS frame (here empty). A gRPC server answers with
# its own SETTINGS frame: 9 header bytes (length 3, type 1, flags 1, stream id 4).
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
FRAME_HEADER_BYTES = 9
SETTINGS_FRAME = 4
# Ray's switch for TLS between its processes: the head then answers a TLS handshake first, not HTTP/2.
TLS_ENV = "RAY_USE_TLS"
HOST_PATTERN = r"[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.%A-Za-z]+\]"  # a name, an IPv4 address or a bracketed IPv6 one
ALLOWED = ("Allowed: `--ray` alone or `--ray auto` (the cluster this machine is a node of, or $RAY_ADDRESS), "
           "`--ray HOST:PORT`, the address of a running Ray head as `ray start --head` prints it (port 6379 by "
           "default) from a machine that is a node of the cluster, or `--ray ray://HOST:10001` (Ray Client). "
           "Start the cluster first: docs/ray.md.")


@dataclass(frozen=True)
class RayAddress:
    """A `--ray` address other than auto: where the head (or its Ray Client server) listens."""

    host: str  # as given; an IPv6 address without its brackets
    port: int
    client: bool  # ray://: Ray Client, not the GCS


def check_ray_address(address: str | None, given: str = "--ray") -> RayAddress | None:
    """The address `--ray` (or $RAY_ADDRESS, `given`) names (None: auto), or a RunError naming it and what is
    allowed."""
    if address is None or address in ("", AUTO):
        return None
    scheme, sep, rest = address.partition("://")
    if sep and scheme != CLIENT_SCHEME:
        _refuse(given, address, f"`{scheme}://` is not an address Ray joins")
    host, colon, port = (rest if sep else address).rpartition(":")
    if not colon:
        _refuse(given, address, "it has no port")
    if not host:
        _refuse(given, address, "the host is empty")
    if not re.fullmatch(HOST_PATTERN, host):
        _refuse(given, address, f"`{host}` is not a host name or IP address (an IPv6 address goes in brackets)")
    if not port.isdigit() or not 1 <= int(port) <= MAX_PORT:
        _refuse(given, address, f"the port `{port}` is not a number from 1 to {MAX_PORT}")
    return RayAddress(host.strip("[]"), int(port), bool(sep))


def _refuse(given: str, address: str, why: str) -> None:
    raise RunError(f"{given} {address!r} is not a Ray cluster's address: {why}. {ALLOWED}")


def check_target_name(name: str | None) -> None:
    """`--target NAME` follows the rule of the spec's `targets:`: a name Ray offers as resource `target:NAME`."""
    if name is not None and (len(name) > SLUG_MAX_LENGTH or not re.fullmatch(SLUG_PATTERN, name)):
        raise RunError(f"--target {name!r} is not a target name. Allowed: {SLUG_HELP}, at most {SLUG_MAX_LENGTH} "
                       "characters, as in a spec's `targets:` (each is the Ray resource `target:NAME` the nodes of "
                       "that kind offer, docs/ray.md), e.g. `--target arm-server`.")


def check_ray_head(address: RayAddress) -> str | None:
    """Why the address is not a Ray head (or Ray Client server) one can join, or None when it answers as one.
    At most two HANDSHAKE_TIMEOUT_S: connecting, then its first frame."""
    try:
        with socket.create_connection((address.host, address.port), timeout=HANDSHAKE_TIMEOUT_S) as conn:
            if os.environ.get(TLS_ENV, "0").lower() in ("1", "true"):
                return None  # a TLS head answers a TLS handshake, which Ray makes with its own certificates
            conn.sendall(HTTP2_PREFACE)
            header = _first_bytes(conn, FRAME_HEADER_BYTES, time.monotonic() + HANDSHAKE_TIMEOUT_S)
    except TimeoutError:
        return (f"it accepts connections but did not answer within {HANDSHAKE_TIMEOUT_S:g} s, as a Ray head "
                "does at once: something else listens on that port")
    except OSError as e:
        return str(e).strip() or type(e).__name__
    if len(header) < FRAME_HEADER_BYTES or header[3] != SETTINGS_FRAME:
        return "it answers, but not as a Ray head does (gRPC): something else listens on that port"
    return None


def _first_bytes(conn: socket.socket, count: int, deadline: float) -> bytes:
    """Up to `count` bytes, fewer if the server closes; TimeoutError at the deadline."""
    data = b""
    while len(data) < count:
        conn.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = conn.recv(count - len(data))
        if not chunk:
            break
        data += chunk
    return data
