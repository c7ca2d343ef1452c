"""A port that answers but is not Kafka fails at once, in one line, exit 3: not after --timeout.

An operator's first mistake is often the port: a web console, an SSH daemon, the
TLS listener reached without ``security.protocol=SSL``. Each case runs ``kshare``
with ``--timeout 30s`` against a local server of that kind and holds it to one
stderr line that names the address, says "does not answer as a Kafka broker",
says what the server was where its bytes make that certain (the TLS hint only
for TLS bytes), exits 3, and ends well inside the timeout. A server that accepts
and never speaks gets the handshake bound (5 s), not the whole timeout.
"""

from __future__ import annotations

import dataclasses
import http.server
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import Result

from kshare_cli.errors import ExitCode
from tests.cli.conftest import Kshare, ShareGroups, assert_one_error_line
from tests.support.tls import TlsMaterial

TIMEOUT = "30s"
#: Well under --timeout: the handshake bound is 5 s, and every other case is immediate.
PROMPTLY_S = 8.0
NOT_KAFKA = "does not answer as a Kafka broker"
TLS_HINT = "security.protocol=SSL or SASL_SSL"

Behaviour = Callable[[socket.socket], None]


@dataclass
class LocalServer:
    """A TCP server on 127.0.0.1 that treats each accepted connection with ``behaviour``."""

    behaviour: Behaviour
    listener: socket.socket = field(default_factory=socket.socket)
    connections: list[socket.socket] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.listener.getsockname()[1]}"

    def start(self) -> threading.Thread:
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        thread = threading.Thread(target=self._serve, daemon=True)
        thread.start()
        return thread

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # the listener was closed: the test is over
            self.connections.append(connection)
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        try:
            self.behaviour(connection)
        except OSError:
            pass  # the client went away first (or the test closed the socket)


@pytest.fixture
def local_server() -> Iterator[Callable[[Behaviour], LocalServer]]:
    """Factory of LocalServers; each is closed (listener and connections) at teardown."""
    started: list[tuple[LocalServer, threading.Thread]] = []

    def start(behaviour: Behaviour) -> LocalServer:
        server = LocalServer(behaviour)
        started.append((server, server.start()))
        return server

    yield start
    for server, thread in started:
        server.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in _serve
        server.listener.close()
        for connection in server.connections:
            connection.close()
        thread.join(5)


def drain(connection: socket.socket) -> None:
    """Read and ignore whatever arrives until the client closes."""
    while connection.recv(65536):
        pass


def silent(connection: socket.socket) -> None:
    """Accept and never say a word: a hung process, or a protocol whose client speaks first."""
    drain(connection)


def ssh_banner(connection: socket.socket) -> None:
    """An SSH server sends its identification line first (RFC 4253, 4.2)."""
    connection.sendall(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n")
    drain(connection)


def tls_listener(material: TlsMaterial) -> Behaviour:
    """A TLS server with a certificate from the test CA (OpenSSL: it closes on plaintext)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(material.server_cert), str(material.server_key))

    def behaviour(connection: socket.socket) -> None:
        try:
            with context.wrap_socket(connection, server_side=True) as tls:
                drain(tls)
        except ssl.SSLError:
            connection.close()

    return behaviour


class RejectingHttpHandler(http.server.BaseHTTPRequestHandler):
    """Rejects a request that cannot start an HTTP request line at once, as nginx does.

    (Python's own handler waits for a newline first, so it stays silent to Kafka's
    binary request; ``test_a_stock_http_server_is_cut_off_by_the_handshake_bound``
    runs that one.)
    """

    def handle_one_request(self) -> None:
        self.close_connection = True
        if not self.rfile.read(1):
            return
        self.requestline, self.command, self.request_version = "", "", "HTTP/1.1"
        self.send_error(400, "Bad Request")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 -- the base's name
        pass


class QuietHttpHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 -- the base's name
        pass


@pytest.fixture
def http_server() -> Iterator[Callable[[type[http.server.BaseHTTPRequestHandler]], str]]:
    """Factory: an http.server in a thread with the given handler; returns HOST:PORT."""
    servers: list[tuple[http.server.ThreadingHTTPServer, threading.Thread]] = []

    def start(handler: type[http.server.BaseHTTPRequestHandler]) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return f"127.0.0.1:{server.server_address[1]}"

    yield start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def offline(tmp_path: Path) -> Kshare:
    """A kshare with no cluster configured: each test names the server it connects to."""
    return Kshare("127.0.0.1:1", None, tmp_path / "no-profiles" / "config.toml")


def run_against(kshare: Kshare, bootstrap: str, *command: str) -> tuple[Result, float]:
    """``kshare COMMAND -b BOOTSTRAP --timeout 30s`` and how long it took."""
    started = time.monotonic()
    result = dataclasses.replace(kshare, bootstrap=bootstrap).run(*command, "--timeout", TIMEOUT)
    return result, time.monotonic() - started


def assert_not_kafka(result: Result, elapsed: float, address: str, *fragments: str) -> str:
    """Exit 3, nothing on stdout, one stderr line naming the address; well inside --timeout."""
    assert result.exit_code == ExitCode.CONNECTION, (result.exit_code, result.stderr)
    assert result.stdout == ""
    line = assert_one_error_line(
        result.stderr, "kshare: error:", f"{address} {NOT_KAFKA}", *fragments
    )
    assert elapsed < PROMPTLY_S, (elapsed, line)
    return line


# --------------------------------------------------------------------------- what it was


def test_an_http_server_is_named_and_gets_no_tls_hint(
    offline: Kshare, http_server: Callable[[type[http.server.BaseHTTPRequestHandler]], str]
) -> None:
    address = http_server(RejectingHttpHandler)
    result, elapsed = run_against(offline, address, "list")
    line = assert_not_kafka(result, elapsed, address, "HTTP", "400 Bad Request")
    assert "security.protocol" not in line
    assert "TLS" not in line


def test_an_ssh_server_is_named_by_its_banner(
    offline: Kshare, local_server: Callable[[Behaviour], LocalServer]
) -> None:
    server = local_server(ssh_banner)
    result, elapsed = run_against(offline, server.address, "list")
    line = assert_not_kafka(result, elapsed, server.address, "SSH", "SSH-2.0-OpenSSH_9.6p1")
    assert "security.protocol" not in line


def test_a_tls_listener_reached_in_plaintext_gets_the_tls_hint(
    offline: Kshare,
    local_server: Callable[[Behaviour], LocalServer],
    tls_material: TlsMaterial,
) -> None:
    server = local_server(tls_listener(tls_material))
    result, elapsed = run_against(offline, server.address, "list")
    assert_not_kafka(result, elapsed, server.address, "TLS", TLS_HINT)


# --------------------------------------------------------------------------- nothing at all


def test_a_server_that_never_answers_is_cut_off_by_the_handshake_bound(
    offline: Kshare, local_server: Callable[[Behaviour], LocalServer]
) -> None:
    """5 s of silence to ApiVersions is not Kafka (or a hung broker): exit 3, not 4 at 30 s."""
    server = local_server(silent)
    result, elapsed = run_against(offline, server.address, "list")
    line = assert_not_kafka(result, elapsed, server.address, "no answer to ApiVersions within 5 s")
    assert "security.protocol" not in line
    assert elapsed > 4.5, elapsed  # the bound, not some earlier failure


def test_a_stock_http_server_is_cut_off_by_the_handshake_bound(
    offline: Kshare, http_server: Callable[[type[http.server.BaseHTTPRequestHandler]], str]
) -> None:
    """Python's http.server waits for a request line that never comes: silence, no TLS hint."""
    address = http_server(QuietHttpHandler)
    result, elapsed = run_against(offline, address, "list")
    line = assert_not_kafka(result, elapsed, address, "no answer to ApiVersions")
    assert "security.protocol" not in line


# --------------------------------------------------------------------------- other commands


def test_describe_and_config_get_fail_the_same_way(
    offline: Kshare, local_server: Callable[[Behaviour], LocalServer]
) -> None:
    server = local_server(ssh_banner)
    for command in (["describe", "some-group"], ["config", "get", "some-group"]):
        result, elapsed = run_against(offline, server.address, *command)
        assert_not_kafka(result, elapsed, server.address, "SSH")


# --------------------------------------------------------------------------- several servers


def test_a_non_kafka_bootstrap_server_does_not_stop_the_next(
    kshare: Kshare,
    share_groups: ShareGroups,
    local_server: Callable[[Behaviour], LocalServer],
) -> None:
    """Bootstrap order is the operator's: a wrong first entry costs nothing when another works."""
    server = local_server(ssh_banner)
    result, elapsed = run_against(kshare, f"{server.address},{kshare.bootstrap}", "list")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert result.stderr == ""
    assert share_groups.drained in result.stdout
    assert elapsed < PROMPTLY_S, elapsed


def test_when_no_bootstrap_server_is_kafka_each_is_named(
    offline: Kshare,
    local_server: Callable[[Behaviour], LocalServer],
    http_server: Callable[[type[http.server.BaseHTTPRequestHandler]], str],
) -> None:
    ssh = local_server(ssh_banner)
    web = http_server(RejectingHttpHandler)
    result, elapsed = run_against(offline, f"{ssh.address},{web}", "list")
    assert_not_kafka(result, elapsed, ssh.address, f"{web} {NOT_KAFKA}", "SSH", "HTTP")
