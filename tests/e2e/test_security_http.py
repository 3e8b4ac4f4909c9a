"""Issue 22, items 1, 3 and 6 against the real binary: hostile HTTP framing is answered on its
own connection and never ends the process (HTTP and metrics ports); idle and slow connections
are bounded by timeouts and a connection limit, so they cannot lock other clients out; shutdown
keeps to one --exit-timeout-secs. docs/security.md lists these defences."""

import json
import resource
import signal
import socket
import threading
import time

import numpy as np
import pytest
import requests

from helpers import Server, build_infer_request, read_http_response, repo, tensor

# The request of issue 22 item 1: Beast's field container threw std::length_error on the
# 65,534-byte trailer value and std::terminate ended the server.
CRASH = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"1\r\na\r\n0\r\nX-T: " + b"t" * 65534 + b"\r\n\r\n")


def exchange(port, data, timeout=10.0):
    """Sends raw bytes on a fresh connection and reads one response: (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        with sock.makefile("rb") as f:
            return read_http_response(f)


def closed_by_server(sock, within):
    """True when the server closes `sock` (EOF or reset) within `within` seconds."""
    sock.settimeout(within)
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def error_text(body):
    return json.loads(body)["error"]


@pytest.fixture(scope="module")
def server():
    with Server([repo("examples")], name="security-http") as s:
        yield s


@pytest.mark.parametrize("port_kind", ["http", "metrics"])
def test_oversized_trailer_is_431_and_the_server_keeps_serving(server, port_kind):
    port = server.port if port_kind == "http" else server.metrics_port
    for _ in range(3):  # the old binary died at the first one
        status, headers, body = exchange(port, CRASH)
        assert status == 431, body
        assert "trailer" in error_text(body)
        assert headers.get("connection") == "close"
    assert server.alive(), server.stderr()
    assert server.get("/v2/health/ready").status_code == 200
    assert requests.get(server.metrics_url(), timeout=10).status_code == 200


def test_oversized_header_is_431(server):
    status, _, body = exchange(server.port, b"GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: " +
                               b"b" * 70000 + b"\r\n\r\n")
    assert status == 431, body
    assert "header" in error_text(body)
    assert server.get("/v2/health/live").status_code == 200


def test_small_trailer_is_accepted(server):
    payload = json.dumps({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}).encode()
    req = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
           b"\r\n" + b"%x\r\n" % len(payload) + payload + b"\r\n0\r\nX-Checksum: abc\r\n\r\n")
    status, _, body = exchange(server.port, req)
    assert status == 200, body
    out = {o["name"]: o["data"] for o in json.loads(body)["outputs"]}
    assert out["OUTPUT0"] == [i + 1 for i in range(16)]


SIMPLE_PAYLOAD = json.dumps({"inputs": [
    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}).encode()


def chunked(payload):
    return b"%x\r\n" % len(payload) + payload + b"\r\n0\r\n\r\n"


@pytest.mark.parametrize("order", ["cl-first", "te-first"])
def test_chunked_with_content_length_is_read_as_chunked_then_closed(server, order):
    # RFC 9112 §6.3: Transfer-Encoding overrides Content-Length. Issue 13 item 4: read it, do not
    # refuse it. Against request smuggling the Content-Length is ignored (it would end the body
    # after 7 bytes and leave the rest to parse as a second request) and the connection closes
    # after the reply, so the GET sent behind the chunked body is never served.
    fields = [b"Content-Length: 7\r\n", b"Transfer-Encoding: chunked\r\n"]
    if order == "te-first":
        fields.reverse()
    smuggled = b"GET /v2/models/simple/config HTTP/1.1\r\nHost: x\r\n\r\n"
    req = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n" + b"".join(fields) + b"\r\n" +
           chunked(SIMPLE_PAYLOAD) + smuggled)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(req)
        with sock.makefile("rb") as f:
            status, headers, body = read_http_response(f)
            assert status == 200, body
            assert headers.get("connection") == "close"
            out = {o["name"]: o["data"] for o in json.loads(body)["outputs"]}
            assert out["OUTPUT0"] == [i + 1 for i in range(16)]
            assert f.read() == b""  # closed: no reply to the smuggled request
    assert server.get("/v2/health/live").status_code == 200


def test_content_length_with_a_non_chunked_transfer_encoding_is_still_refused(server):
    # Only a final "chunked" coding frames the body; anything else with a Content-Length is
    # ambiguous and stays a 400 on a closed connection.
    status, headers, body = exchange(
        server.port, b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
        b"Transfer-Encoding: gzip\r\n\r\nabcd")
    assert status == 400, body
    assert headers.get("connection") == "close"


def test_too_many_chunks_has_tritons_text(server):
    req = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
           b"\r\n" + b"1\r\n \r\n" * 65537 + b"0\r\n\r\n")
    status, _, body = exchange(server.port, req, timeout=30)
    assert status == 400, body
    assert error_text(body) == ("Chunked request body exceeds maximum of 65536 non-empty chunks. "
                                "Send fewer or larger HTTP chunks.")


def test_slow_header_is_408_after_the_header_timeout():
    with Server([repo("examples")], ["--http-header-timeout-secs=1"], name="header-timeout") as s:
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
            sock.sendall(b"GET /v2 HTTP/1.1\r\nHost: x\r\nX-Drip: ")
            started = time.monotonic()
            with sock.makefile("rb") as f:
                status, _, body = read_http_response(f)
            assert status == 408, body
            assert "--http-header-timeout-secs" in error_text(body)
            assert 0.5 < time.monotonic() - started < 8
        assert s.get("/v2/health/live").status_code == 200


def test_stalled_body_is_408_after_the_read_timeout():
    with Server([repo("examples")], ["--http-read-timeout-secs=1"], name="read-timeout") as s:
        status, _, body = exchange(
            s.port, b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
            b"\r\n{\"inputs\"")
        assert status == 408, body
        assert "--http-read-timeout-secs" in error_text(body)


def test_idle_connection_is_closed_after_the_idle_timeout():
    with Server([repo("examples")], ["--http-idle-timeout-secs=1"], name="idle-timeout") as s:
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as never, \
                socket.create_connection(("127.0.0.1", s.port), timeout=10) as used:
            used.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            with used.makefile("rb") as f:
                assert read_http_response(f)[0] == 200
            assert closed_by_server(never, within=8)
            assert closed_by_server(used, within=8)


class LimitedServer(Server):
    """A server whose open-file limit is `nofile` (soft and hard), as under a default ulimit."""

    def __init__(self, repos, flags=(), name="nereid", nofile=256):
        super().__init__(repos, flags, name)
        self.nofile = nofile

    def args(self, port):
        return ["prlimit", f"--nofile={self.nofile}:{self.nofile}", "--"] + super().args(port)


def raise_own_file_limit(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed <= hard or (hard == resource.RLIM_INFINITY and soft < needed):
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        pytest.skip(f"this test needs {needed} open files; the limit is {soft}")


def test_idle_connections_beyond_the_descriptors_do_not_lock_clients_out():
    # Issue 22 item 3: with nofile=1024, 1,100 idle sockets locked every new client out. Here
    # the limit is 256 and 300 idle sockets are opened: the longest-idle ones make room, so a
    # new client is still answered promptly.
    raise_own_file_limit(600)
    idle = []
    with LimitedServer([repo("examples")], name="nofile-256", nofile=256) as s:
        try:
            for _ in range(300):
                idle.append(socket.create_connection(("127.0.0.1", s.port), timeout=10))
            for attempt in range(3):
                r = requests.get(s.url("/v2/health/ready"), timeout=5)
                assert r.status_code == 200
            a = np.arange(16, dtype=np.int32).reshape(1, 16)
            body, headers = build_infer_request([tensor("INPUT0", "INT32", a),
                                                 tensor("INPUT1", "INT32", a)])
            r = requests.post(s.url("/v2/models/simple/infer"), data=body, headers=headers,
                              timeout=5)
            assert r.status_code == 200, r.content
            closed = sum(closed_by_server(sock, within=0.01) for sock in idle)
            assert closed >= 300 - 192, f"only {closed} idle connections were closed"
        finally:
            for sock in idle:
                sock.close()


def test_at_the_connection_limit_busy_connections_are_kept_and_the_new_client_gets_503():
    with Server([repo("examples")], ["--http-max-connections=2"], name="max-conn") as s:
        # The start-up probe's connection must be gone first: while the server is still closing
        # it, it counts against the limit without being idle, so b's arrival would evict a (idle
        # until its bytes are read, and evictable by design: docs/security.md). Seen under ASan,
        # 2 runs in 5, with no pause here.
        time.sleep(1.0)
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as a, \
                socket.create_connection(("127.0.0.1", s.port), timeout=10) as b:
            a.sendall(b"GET /v2/health/live HTTP/1.1\r\n")  # requests under way: not idle
            b.sendall(b"GET /v2/health/live HTTP/1.1\r\n")
            time.sleep(0.3)  # both accepted and read: busy, not idle
            status, _, body = exchange(s.port, b"GET /v2 HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status == 503, body
            assert "--http-max-connections" in error_text(body)
            a.sendall(b"Host: x\r\n\r\n")
            with a.makefile("rb") as f:
                assert read_http_response(f)[0] == 200


def test_shutdown_keeps_to_one_exit_timeout():
    # Issue 22 item 6: requests queued on a slow model outlast --exit-timeout-secs; the server
    # used to wait the timeout for the inferences and then again for their HTTP connections.
    # Issue 14 item 1: past the deadline the queued requests are answered 503, nothing of the
    # server is destroyed while a request can still complete (ASan saw a use-after-free there),
    # and the process exits 0.
    timeout = 3
    s = Server([repo("fixtures", "features")],
               [f"--exit-timeout-secs={timeout}", "--log-verbose=1"], name="exit-deadline").start()
    try:
        x = np.array([1.0], dtype=np.float32)
        body, headers = build_infer_request([tensor("INPUT0", "FP32", x)])
        statuses = []

        def send():
            try:
                r = requests.post(s.url("/v2/models/slow_identity/infer"), data=body,
                                  headers=headers, timeout=60)
                statuses.append((r.status_code, r.text))
            except requests.RequestException as e:
                statuses.append((0, repr(e)))

        threads = [threading.Thread(target=send, daemon=True) for _ in range(30)]  # ~9 s of work
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30  # every request has reached the server (it logs each)
        while s.stderr().count("/v2/models/slow_identity/infer") < len(threads):
            assert time.monotonic() < deadline, s.stderr()[-2000:]
            time.sleep(0.02)
        started = time.monotonic()
        s.send_signal(signal.SIGTERM)
        assert s.wait(timeout=60) == 0, s.stderr()
        elapsed = time.monotonic() - started
        for t in threads:
            t.join(10)
        assert "Exit timeout expired" in s.stderr()
        assert elapsed < timeout * 1.5, f"exit took {elapsed:.1f} s for a {timeout} s timeout"
        ok = [st for st in statuses if st[0] == 200]
        refused = [st for st in statuses if st[0] == 503]
        assert len(ok) + len(refused) == len(threads), statuses
        assert ok and refused, statuses
        assert all("exit timeout expired" in text for _, text in refused), refused[:3]
    finally:
        s.kill()
