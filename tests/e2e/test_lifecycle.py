"""Command line, start-up failures, signals and graceful shutdown, concurrency."""

import json
import signal
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests

from helpers import (COMMON_FLAGS, Server, build_infer_request, free_port, new_session,
                     parse_infer_response, read_http_response, repo, run_to_exit, simple_inputs, tensor)


def text(p):
    return p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def repo_flag(name="single_good"):
    return f"--model-repository={repo('fixtures', name)}"


# ------------------------------------------------------------------------------------ command line


def test_help_exits_zero_and_lists_flags():
    p = run_to_exit(["--help"])
    out, err = text(p)
    assert p.returncode == 0, err
    for flag in ["--model-repository", "--http-port", "--http-address", "--exit-on-error",
                 "--strict-readiness", "--exit-timeout-secs", "--http-max-input-size",
                 "--http-thread-count", "--disable-auto-complete-config", "--log-verbose"]:
        assert flag in out, f"{flag} missing from --help"


def test_unknown_flag_fails_with_one_error_line():
    p = run_to_exit([repo_flag(), "--no-such-flag=1"])
    out, err = text(p)
    assert p.returncode != 0
    error_lines = [line for line in err.splitlines() if "error" in line.lower()]
    assert len(error_lines) == 1, err
    assert "no-such-flag" in error_lines[0], err


def test_unwritable_log_file_fails_cleanly():
    p = run_to_exit([repo_flag(), f"--http-port={free_port()}",
                     "--log-file=/etc/hostname/nereid.log"])
    out, err = text(p)
    assert p.returncode == 1, err
    assert "cannot open log file '/etc/hostname/nereid.log'" in err, err


def test_log_file_receives_the_log(tmp_path):
    log = tmp_path / "nereid.log"
    s = Server([repo("fixtures", "single_good")], [f"--log-file={log}"], name="log-file").start()
    assert s.stop() == 0, s.stderr()
    assert "Started HTTPService" in log.read_text()


def test_missing_model_repository_fails():
    p = run_to_exit([f"--http-port={free_port()}"])
    out, err = text(p)
    assert p.returncode != 0
    assert "--model-repository must be specified" in err


def test_positional_argument_is_rejected():
    p = run_to_exit([repo_flag(), "stray_positional"])
    assert p.returncode != 0
    assert "stray_positional" in text(p)[1]


def test_non_numeric_port_is_rejected():
    p = run_to_exit([repo_flag(), "--http-port=eighty"])
    assert p.returncode != 0
    assert "http-port" in text(p)[1]


def test_zero_max_input_size_is_rejected():
    p = run_to_exit([repo_flag(), f"--http-port={free_port()}", "--http-max-input-size=0"])
    assert p.returncode == 1
    assert ('Bad option: "--http-max-input-size". Error: --http-max-input-size must be greater '
            'than 0.') in text(p)[1]


def test_port_already_in_use_fails_start():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        p = run_to_exit([repo_flag(), f"--http-port={port}"] + COMMON_FLAGS)
    assert p.returncode != 0, text(p)[1]


# ------------------------------------------------------------------------------------ signals


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_on_idle_server_exits_zero(sig):
    s = Server([repo("fixtures", "single_good")], name=f"idle-{sig.name}").start()
    assert s.get("/v2/health/ready").status_code == 200
    assert s.stop(sig) == 0, s.stderr()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", s.port), timeout=5).close()


def test_graceful_shutdown_finishes_in_flight_request():
    s = Server([repo("fixtures", "features")], ["--log-verbose=1"], name="graceful").start()
    try:
        x = np.array([3.25], dtype=np.float32)
        body, headers = build_infer_request([tensor("INPUT0", "FP32", x)])
        result = {}

        def send():
            try:
                result["resp"] = requests.post(s.url("/v2/models/slow_identity/infer"),
                                               data=body, headers=headers, timeout=60)
            except Exception as e:  # reported below
                result["error"] = e

        t = threading.Thread(target=send)
        t.start()
        # The request has reached the server once it is logged (--log-verbose=1 logs requests).
        s.wait_for_log("/v2/models/slow_identity/infer")
        s.send_signal(signal.SIGTERM)
        t.join(60)
        assert not t.is_alive(), "in-flight request never finished"
        assert "error" not in result, f"in-flight request failed: {result.get('error')!r}"
        r = result["resp"]
        assert r.status_code == 200, r.content
        _, values, _ = parse_infer_response(r.headers, r.content)
        np.testing.assert_array_equal(values["OUTPUT0"], x)
        assert s.wait() == 0, s.stderr()
    finally:
        s.kill()


# ------------------------------------------------------------------------------------ concurrency


def run_simple(base_url, thread_id, count):
    """count requests on one keep-alive session; returns a list of problems."""
    problems = []
    session = new_session()
    for i in range(count):
        a = (np.arange(16, dtype=np.int32) + thread_id * 1000 + i).reshape(1, 16)
        b = np.full((1, 16), thread_id - i, dtype=np.int32)
        body, headers = build_infer_request(simple_inputs(a, b, binary=(i % 2 == 1)))
        try:
            r = session.post(base_url + "/v2/models/simple/infer", data=body, headers=headers,
                             timeout=60)
        except requests.RequestException as e:
            problems.append(f"thread {thread_id} request {i}: {e!r}")
            continue
        if r.status_code != 200:
            problems.append(f"thread {thread_id} request {i}: {r.status_code} {r.content[:200]}")
            continue
        _, values, _ = parse_infer_response(r.headers, r.content)
        if not (np.array_equal(values["OUTPUT0"], a + b) and
                np.array_equal(values["OUTPUT1"], a - b)):
            problems.append(f"thread {thread_id} request {i}: wrong result")
    session.close()
    return problems


def test_concurrency_16_threads_x_20_requests(examples_server):
    base = examples_server.url("")
    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(run_simple, base, t, 20) for t in range(16)]
        problems = [p for f in futures for p in f.result()]
    assert problems == []
    assert examples_server.get("/v2/health/live").status_code == 200


def test_two_instances_handle_two_concurrent_requests(features_server):
    barrier = threading.Barrier(2)

    def one(k):
        x = np.arange(1000, dtype=np.float32) * (k + 1)
        body, headers = build_infer_request([tensor("INPUT0", "FP32", x)])
        barrier.wait(30)
        r = requests.post(features_server.url("/v2/models/two_instances/infer"), data=body,
                          headers=headers, timeout=60)
        assert r.status_code == 200, r.content
        _, values, _ = parse_infer_response(r.headers, r.content)
        np.testing.assert_array_equal(values["OUTPUT0"], x)
        return True

    with ThreadPoolExecutor(2) as pool:
        assert [f.result() for f in [pool.submit(one, k) for k in range(2)]] == [True, True]


@pytest.fixture(scope="module")
def one_thread_server():
    s = Server([repo("examples"), repo("fixtures", "features")], ["--http-thread-count=1"],
               name="one-thread").start()
    yield s
    assert s.stop() == 0, s.stderr()


def test_single_http_thread_serves_concurrent_clients(one_thread_server):
    base = one_thread_server.url("")
    slow_x = np.array([-1.5], dtype=np.float32)
    slow_body, slow_headers = build_infer_request([tensor("INPUT0", "FP32", slow_x)])

    def slow():
        r = requests.post(base + "/v2/models/slow_identity/infer", data=slow_body,
                          headers=slow_headers, timeout=60)
        _, values, _ = parse_infer_response(r.headers, r.content)
        return r.status_code == 200 and np.array_equal(values["OUTPUT0"], slow_x)

    with ThreadPoolExecutor(10) as pool:
        slow_futures = [pool.submit(slow) for _ in range(2)]
        fast_futures = [pool.submit(run_simple, base, t, 10) for t in range(8)]
        problems = [p for f in fast_futures for p in f.result()]
        assert all(f.result() for f in slow_futures)
    assert problems == []


def test_single_http_thread_partial_request_does_not_block_others(one_thread_server):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    body, _ = build_infer_request(simple_inputs(a, a))
    head = (f"POST /v2/models/simple/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", one_thread_server.port), timeout=30) as stalled:
        stalled.sendall(head + body[:20])  # the rest comes later
        # Meanwhile other clients are served by the single I/O thread.
        for t in range(3):
            assert run_simple(one_thread_server.url(""), t, 5) == []
        stalled.sendall(body[20:])
        status, _, data = read_http_response(stalled.makefile("rb"))
        assert status == 200, data
        out = {o["name"]: o["data"] for o in json.loads(data)["outputs"]}
        assert out["OUTPUT0"] == (a + a).flatten().tolist()


def test_inline_execution_leaves_an_io_thread_for_other_clients():
    # With two I/O threads one may run a model inline (docs/adr/0003). While slow_identity runs
    # there (and a second slow request waits for its only instance), other clients must still be
    # answered by the remaining thread: the fast requests finish before the slow ones do.
    s = Server([repo("examples"), repo("fixtures", "features")],
               ["--http-thread-count=2", "--log-verbose=1"], name="inline").start()
    try:
        slow_x = np.array([7.5], dtype=np.float32)
        slow_body, slow_headers = build_infer_request([tensor("INPUT0", "FP32", slow_x)])
        slow_ok = []

        def slow():
            r = requests.post(s.url("/v2/models/slow_identity/infer"), data=slow_body,
                              headers=slow_headers, timeout=60)
            _, values, _ = parse_infer_response(r.headers, r.content)
            slow_ok.append(r.status_code == 200 and np.array_equal(values["OUTPUT0"], slow_x))

        slow_threads = [threading.Thread(target=slow) for _ in range(2)]
        for t in slow_threads:
            t.start()
        s.wait_for_log("/v2/models/slow_identity/infer")
        assert run_simple(s.url(""), 0, 5) == []
        assert any(t.is_alive() for t in slow_threads), \
            "slow requests finished before the fast ones: nothing shows the I/O thread was free"
        for t in slow_threads:
            t.join(60)
        assert slow_ok == [True, True]
        assert s.stop() == 0, s.stderr()
    finally:
        s.kill()
