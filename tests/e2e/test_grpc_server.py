"""gRPC server: TLS and mutual TLS with certificates made by the test, the command-line flags,
start-up errors, and graceful shutdown with calls and streams open."""

import queue
import signal
import socket
import subprocess
import time

import grpc
import numpy as np
import pytest

from grpc_helpers import GrpcServer, infer_request, output_array, pbs  # noqa: F401
from helpers import Server, free_port, repo, run_to_exit

X = np.arange(4, dtype=np.float32).reshape(1, 4)


def make_cert(folder, name):
    """A self-signed certificate for 127.0.0.1/localhost that is also its own CA."""
    key, crt = folder / f"{name}.key", folder / f"{name}.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(crt),
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-addext", "basicConstraints=critical,CA:TRUE"],
                   check=True, capture_output=True)
    return key, crt


def test_tls_round_trip(tmp_path, pbs):  # noqa: F811
    key, crt = make_cert(tmp_path, "server")
    flags = ["--grpc-use-ssl=true", f"--grpc-server-cert={crt}", f"--grpc-server-key={key}"]
    with GrpcServer([repo("examples")], flags=flags, name="grpc-tls") as s:
        creds = grpc.ssl_channel_credentials(root_certificates=crt.read_bytes())
        with grpc.secure_channel(s.target(), creds) as channel:
            stub = pbs.pb_grpc.GRPCInferenceServiceStub(channel)
            assert stub.ServerLive(pbs.pb.ServerLiveRequest()).live
            r = stub.ModelInfer(infer_request("identity_fp32", [("INPUT0", "FP32", X)]))
            np.testing.assert_array_equal(output_array(r), X)
        with grpc.insecure_channel(s.target()) as plain:  # plaintext is refused
            with pytest.raises(grpc.RpcError):
                pbs.pb_grpc.GRPCInferenceServiceStub(plain).ServerLive(
                    pbs.pb.ServerLiveRequest(), timeout=5)
    assert s.returncode == 0


def test_mutual_tls_requires_a_client_certificate(tmp_path, pbs):  # noqa: F811
    key, crt = make_cert(tmp_path, "server")
    ckey, ccrt = make_cert(tmp_path, "client")
    flags = ["--grpc-use-ssl-mutual=true", f"--grpc-server-cert={crt}",
             f"--grpc-server-key={key}", f"--grpc-root-cert={ccrt}"]
    with GrpcServer([repo("examples")], flags=flags, name="grpc-mtls") as s:
        good = grpc.ssl_channel_credentials(crt.read_bytes(), ckey.read_bytes(), ccrt.read_bytes())
        with grpc.secure_channel(s.target(), good) as channel:
            stub = pbs.pb_grpc.GRPCInferenceServiceStub(channel)
            assert stub.ServerReady(pbs.pb.ServerReadyRequest()).ready
        anonymous = grpc.ssl_channel_credentials(crt.read_bytes())
        with grpc.secure_channel(s.target(), anonymous) as channel:
            with pytest.raises(grpc.RpcError):
                pbs.pb_grpc.GRPCInferenceServiceStub(channel).ServerReady(
                    pbs.pb.ServerReadyRequest(), timeout=5)
    assert s.returncode == 0


def test_tls_with_unreadable_certificate_fails_start_up(tmp_path):
    r = run_to_exit([f"--model-repository={repo('examples')}", "--http-address=127.0.0.1",
                     f"--http-port={free_port()}", "--grpc-address=127.0.0.1", "--grpc-port=0",
                     "--allow-metrics=false", "--grpc-use-ssl=true",
                     f"--grpc-server-cert={tmp_path}/missing.crt",
                     f"--grpc-server-key={tmp_path}/missing.key"])
    assert r.returncode != 0
    assert b"--grpc-server-cert" in r.stderr


def test_flags_keepalive_compression_threads(pbs):  # noqa: F811
    flags = ["--grpc-infer-thread-count=1", "--grpc-keepalive-time=10000",
             "--grpc-keepalive-timeout=5000", "--grpc-keepalive-permit-without-calls=true",
             "--grpc-http2-max-pings-without-data=0",
             "--grpc-http2-min-recv-ping-interval-without-data=1000",
             "--grpc-http2-max-ping-strikes=5", "--grpc-max-connection-age=60000",
             "--grpc-max-connection-age-grace=1000",
             "--grpc-infer-response-compression-level=high"]
    with GrpcServer([repo("examples")], flags=flags, name="grpc-flags") as s:
        data = np.zeros((1, 4096), np.float32)
        r = s.stub().ModelInfer(infer_request("identity_fp32", [("INPUT0", "FP32", data)]))
        np.testing.assert_array_equal(output_array(r), data)
        assert "option --grpc" not in s.stderr()  # every gRPC flag took effect
    assert s.returncode == 0


def test_ipv6_address_form(pbs):  # noqa: F811
    try:
        socket.socket(socket.AF_INET6).close()
    except OSError:
        pytest.skip("no IPv6 on this machine")
    s = GrpcServer([repo("examples")], name="grpc-ipv6",
                   grpc_flags=["--grpc-address=ipv6:[::1]", "--grpc-port=0"])
    try:
        s.start()
    except AssertionError as e:
        s.kill()  # the HTTP side may be up: never leave the process behind
        if "failed to listen" in str(e):
            pytest.skip("IPv6 loopback not available")
        raise
    try:  # not `with s:`, which would start a second process and leak this one
        assert "Started GRPCInferenceService at [::1]:" in s.stderr()
        with grpc.insecure_channel(f"[::1]:{s.grpc_port}") as channel:
            stub = pbs.pb_grpc.GRPCInferenceServiceStub(channel)
            assert stub.ServerLive(pbs.pb.ServerLiveRequest()).live
    finally:
        s.stop()


def test_http_and_grpc_on_the_same_port_is_a_start_up_error():
    port = free_port()
    r = run_to_exit([f"--model-repository={repo('examples')}", f"--http-port={port}",
                     f"--grpc-port={port}", "--allow-metrics=false"])
    assert r.returncode != 0
    assert (f"The server cannot listen to HTTP requests and GRPC requests at the same address "
            f"and port 0.0.0.0:{port}").encode() in r.stderr


def test_grpc_port_in_use_is_a_start_up_error():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run_to_exit([f"--model-repository={repo('examples')}", "--http-address=127.0.0.1",
                         f"--http-port={free_port()}", "--grpc-address=127.0.0.1",
                         f"--grpc-port={port}", "--allow-metrics=false"])
    assert r.returncode != 0
    assert b"failed to start GRPC service" in r.stderr


def test_allow_grpc_false_serves_no_grpc():
    with Server([repo("examples")], flags=["--grpc-port=8001"], name="grpc-off") as s:
        assert s.get("/v2/health/ready").status_code == 200
    assert "GRPCInferenceService" not in s.stderr()


def test_shutdown_with_a_stream_open_exits_zero_within_the_timeout(pbs):  # noqa: F811
    s = GrpcServer([repo("examples")], flags=["--exit-timeout-secs=2"], name="grpc-stop").start()
    q = queue.Queue()

    def gen():
        yield infer_request("identity_fp32", [("INPUT0", "FP32", X)], request_id="first")
        q.get()

    call = s.stub().ModelStreamInfer(gen())
    assert next(call).infer_response.id == "first"
    start = time.monotonic()
    s.send_signal(signal.SIGTERM)
    assert s.wait(timeout=20) == 0
    assert time.monotonic() - start < 15
    with pytest.raises(grpc.RpcError):
        list(call)
    q.put(None)
    s.stop()


def test_shutdown_drains_a_stream_with_a_request_in_flight(pbs):  # noqa: F811
    """SIGTERM while a slow request runs on an open stream: the stream is still served (its reply
    arrives), the client closes it, and the server exits 0 without waiting for the timeout."""
    s = GrpcServer([repo("examples"), repo("fixtures", "features")],
                   flags=["--exit-timeout-secs=20"], name="grpc-stop-inflight").start()
    q = queue.Queue()

    def gen():
        yield infer_request("identity_fp32", [("INPUT0", "FP32", X)], request_id="fast")
        yield infer_request("slow_identity", [("INPUT0", "FP32", np.array([3.0], np.float32))],
                            request_id="slow")
        q.get()

    call = s.stub().ModelStreamInfer(gen())
    assert next(call).infer_response.id == "fast"
    start = time.monotonic()
    s.send_signal(signal.SIGTERM)
    slow = next(call)
    assert slow.error_message == "" and slow.infer_response.id == "slow"
    assert output_array(slow.infer_response)[0] == 3.0
    q.put(None)  # half-close: the stream ends with OK
    assert list(call) == []
    assert s.wait(timeout=30) == 0
    assert time.monotonic() - start < 15
    s.stop()
