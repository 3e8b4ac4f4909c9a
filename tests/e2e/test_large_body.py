"""Issue 21 goal 5, bad input and framing around large binary bodies over raw sockets: a
Content-Length body of 64 KiB or more is read past the parser straight into one buffer
(src/frontends/http/http_session_body.h). Bodies split across many TCP segments with pauses come
back byte for byte; a Content-Length larger than what is sent, then a close, ends the connection
without a reply, a hang or a crash, and frees it; a Content-Length over --http-max-input-size and an
Inference-Header-Content-Length larger than the body get Triton's texts."""

import json
import os
import socket
import time

import numpy as np
import pytest

from helpers import Server, build_infer_request, parse_infer_response, read_http_response, repo
from helpers import tensor

LIMIT = 4 * 1024 * 1024  # --http-max-input-size of the server below


@pytest.fixture(scope="module")
def server():
    with Server([repo("examples")], [f"--http-max-input-size={LIMIT}"], name="large-body") as s:
        yield s


def identity_request(n_floats, seed=0):
    data = np.random.default_rng(seed).standard_normal((1, n_floats)).astype(np.float32)
    body, headers = build_infer_request([tensor("INPUT0", "FP32", data, binary=True)],
                                        outputs=[("OUTPUT0", True)])
    head = (f"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\n"
            f"Content-Length: {len(body)}\r\n" +
            "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()
    return data, head, body


def check_identity_reply(f, data):
    status, headers, content = read_http_response(f)
    assert status == 200, content[:500]
    _, values, binary = parse_infer_response(headers, content)
    assert binary["OUTPUT0"]
    assert values["OUTPUT0"].tobytes() == data.tobytes()


def server_fds(server):
    return len(os.listdir(f"/proc/{server.proc.pid}/fd"))


def wait_for_fds(server, at_most, within=5.0):
    deadline = time.monotonic() + within
    while server_fds(server) > at_most and time.monotonic() < deadline:
        time.sleep(0.05)
    return server_fds(server)


def error_text(content):
    return json.loads(content)["error"]


@pytest.mark.parametrize("split", ["header_with_body_start", "header_alone", "one_byte_first"])
def test_body_split_across_many_segments_with_pauses(server, split):
    data, head, body = identity_request(262144 + 3, seed=len(split))  # 1 MiB + 12 bytes
    wire = head + body
    first = {"header_with_body_start": len(head) + 100, "header_alone": len(head),
             "one_byte_first": 1}[split]
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(wire[:first])
        at, piece, pieces = first, 1, 0
        while at < len(wire):
            sock.sendall(wire[at:at + piece])
            at += piece
            pieces += 1
            piece = min(piece * 2 + 13, 65521)
            time.sleep(0.002)
        assert pieces > 20
        with sock.makefile("rb") as f:
            check_identity_reply(f, data)
            # The connection carries on: a second request right after the first.
            sock.sendall(wire)
            check_identity_reply(f, data)


def test_content_length_larger_than_sent_then_close_frees_the_connection(server):
    data, head, body = identity_request(262144)
    baseline = server_fds(server)
    for close_kind in ["half_close", "close", "reset"] * 4:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        longer = head.replace(f"Content-Length: {len(body)}".encode(),
                              f"Content-Length: {len(body) + 500000}".encode())
        sock.sendall(longer + body)
        if close_kind == "half_close":
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(5)
            assert sock.recv(4096) == b"", "the server answered a body that never ended"
            sock.close()
        elif close_kind == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.close()
        else:
            sock.close()
    assert wait_for_fds(server, baseline) <= baseline, "connections were not freed"
    assert server.alive()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head + body)
        with sock.makefile("rb") as f:
            check_identity_reply(f, data)


@pytest.mark.parametrize("icl", [True, False])
def test_content_length_over_the_limit_is_refused_with_tritons_text(server, icl):
    extra = "Inference-Header-Content-Length: 120\r\n" if icl else ""
    head = (f"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\n"
            f"Content-Length: {LIMIT + 1}\r\n{extra}\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head + b"{" * 70000)  # the body's start: refused from the header alone
        with sock.makefile("rb") as f:
            status, _, content = read_http_response(f)
    assert status == 400, content
    what = "Request size" if icl else "Request JSON size"
    assert error_text(content) == (
        f"{what} of {LIMIT + 1} bytes exceeds the maximum allowed value of {LIMIT} bytes. "
        "Use --http-max-input-size to increase the limit.")


def test_inference_header_content_length_larger_than_the_body(server):
    _, head, body = identity_request(65536)
    wrong = len(body) + 1
    head = head.replace(b"Inference-Header-Content-Length: ",
                        f"Inference-Header-Content-Length: {wrong}\r\nX-Old: ".encode())
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head + body)
        with sock.makefile("rb") as f:
            status, _, content = read_http_response(f)
    assert status == 400, content
    assert error_text(content) == (
        f"inference header size should be in range (0, {len(body)}), got: {wrong}")
