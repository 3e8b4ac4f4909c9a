"""--http-restricted-api and --grpc-restricted-protocol through Triton's own client: each
restricted group refuses a call without its header (HTTP 403 "This API is restricted, expecting
header '<key>'", gRPC UNAVAILABLE "This protocol is restricted, expecting header
'triton-grpc-protocol-<key>'") and serves it with the header, sync and asyncio; groups come from
repeated flags; unrestricted APIs stay open."""

import asyncio
import queue
import time

import numpy as np
import pytest
import requests

from client_support import (GrpcServer, InferenceServerException, grpcclient, grpcclient_aio,
                            httpclient, httpclient_aio)
from helpers import repo

ADMIN = "admin-key"
ADMIN_VALUE = "admin-secret"
INFER = "infer-key"
INFER_VALUE = "infer-secret"
GRPC_PREFIX = "triton-grpc-protocol-"

FLAGS = [
    "--model-control-mode=explicit", "--load-model=simple",
    f"--http-restricted-api=health,metadata,model-config,model-repository,statistics:"
    f"{ADMIN}={ADMIN_VALUE}",
    f"--http-restricted-api=inference:{INFER}={INFER_VALUE}",
    f"--grpc-restricted-protocol=health,metadata,model-config,model-repository,statistics:"
    f"{ADMIN}={ADMIN_VALUE}",
    f"--grpc-restricted-protocol=inference:{INFER}={INFER_VALUE}",
]


class RestrictedServer(GrpcServer):
    """HTTP health is restricted too, so "started" is /v2/health/live answering at all."""

    def _wait_live(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"nereid exited during start-up:\n{self.stderr()}")
            try:
                r = requests.get(self.url("/v2/health/live"), timeout=1.0)
                assert r.status_code == 403, (r.status_code, r.text)
                return
            except requests.RequestException:
                time.sleep(0.05)
        raise AssertionError(f"nereid did not answer:\n{self.stderr()}")


@pytest.fixture(scope="module")
def server():
    s = RestrictedServer([repo("examples")], FLAGS, name="client-restricted").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def http(server):
    return httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")


def grpc(server):
    return grpcclient.InferenceServerClient(server.target())


def headers(kind, key, value):
    return {(GRPC_PREFIX + key) if kind == "grpc" else key: value}


def expect_refused(kind, key, call):
    with pytest.raises(InferenceServerException) as e:
        call()
    if kind == "http":
        assert e.value.status() == "403", e.value
        assert e.value.message() == f"This API is restricted, expecting header '{key}'"
    else:
        assert e.value.status() == "StatusCode.UNAVAILABLE", e.value
        assert e.value.message() == \
            f"This protocol is restricted, expecting header '{GRPC_PREFIX}{key}'"


def simple_inputs(module):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
              module.InferInput("INPUT1", [1, 16], "INT32")]
    for i in inputs:
        i.set_data_from_numpy(a)
    return a, inputs


ADMIN_CALLS = {
    "metadata": lambda c, h: c.get_server_metadata(headers=h),
    "model_metadata": lambda c, h: c.get_model_metadata("simple", headers=h),
    "model-config": lambda c, h: c.get_model_config("simple", headers=h),
    "model-repository": lambda c, h: c.get_model_repository_index(headers=h),
    "statistics": lambda c, h: c.get_inference_statistics("simple", headers=h),
    "model_ready": lambda c, h: c.is_model_ready("simple", headers=h),
}


@pytest.mark.parametrize("kind", ["http", "grpc"])
@pytest.mark.parametrize("api", sorted(ADMIN_CALLS))
def test_admin_group_needs_its_header(server, kind, api):
    c = http(server) if kind == "http" else grpc(server)
    call = ADMIN_CALLS[api]
    if kind == "http" and api == "model_ready":
        # tritonclient.http reads any non-200 as "not ready" rather than raising.
        assert c.is_model_ready("simple") is False
    else:
        expect_refused(kind, ADMIN, lambda: call(c, None))
        # The other group's header does not open this group.
        expect_refused(kind, ADMIN, lambda: call(c, headers(kind, INFER, INFER_VALUE)))
        # A wrong value is refused like a missing header.
        expect_refused(kind, ADMIN, lambda: call(c, headers(kind, ADMIN, "wrong")))
    assert call(c, headers(kind, ADMIN, ADMIN_VALUE))


@pytest.mark.parametrize("kind", ["http", "grpc"])
def test_health_is_restricted(server, kind):
    c = http(server) if kind == "http" else grpc(server)
    if kind == "http":
        assert c.is_server_live() is False and c.is_server_ready() is False
        r = requests.get(server.url("/v2/health/ready"), timeout=10)
        assert r.status_code == 403
        assert r.json() == {"error": f"This API is restricted, expecting header '{ADMIN}'"}
        # Header names are case-insensitive in HTTP; the value is compared exactly.
        assert requests.get(server.url("/v2/health/ready"), timeout=10,
                            headers={ADMIN.upper(): ADMIN_VALUE}).status_code == 200
    else:
        expect_refused(kind, ADMIN, lambda: c.is_server_live())
        expect_refused(kind, ADMIN, lambda: c.is_server_ready())
    h = headers(kind, ADMIN, ADMIN_VALUE)
    assert c.is_server_live(headers=h) and c.is_server_ready(headers=h)


@pytest.mark.parametrize("kind", ["http", "grpc"])
def test_inference_needs_its_own_header(server, kind):
    module = httpclient if kind == "http" else grpcclient
    c = http(server) if kind == "http" else grpc(server)
    a, inputs = simple_inputs(module)
    expect_refused(kind, INFER, lambda: c.infer("simple", inputs))
    expect_refused(kind, INFER, lambda: c.infer("simple", inputs,
                                                headers=headers(kind, ADMIN, ADMIN_VALUE)))
    result = c.infer("simple", inputs, headers=headers(kind, INFER, INFER_VALUE))
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + a)


@pytest.mark.parametrize("kind", ["http", "grpc"])
def test_load_and_unload_need_the_repository_header(server, kind):
    c = http(server) if kind == "http" else grpc(server)
    expect_refused(kind, ADMIN, lambda: c.unload_model("simple"))
    expect_refused(kind, ADMIN, lambda: c.load_model("simple"))
    h = headers(kind, ADMIN, ADMIN_VALUE)
    c.load_model("identity_fp32", headers=h)
    assert c.is_model_ready("identity_fp32", headers=h)
    c.unload_model("identity_fp32", headers=h)


def test_grpc_stream_needs_the_inference_header(server):
    results = queue.Queue()
    _, inputs = simple_inputs(grpcclient)
    c = grpc(server)
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        c.async_stream_infer("simple", inputs)
    except InferenceServerException as e:  # the server may end the stream before the send
        assert "no longer in valid state" in e.message(), e
    result, error = results.get(timeout=30)
    c.stop_stream()
    assert result is None
    assert error.status() == "StatusCode.UNAVAILABLE"
    assert error.message() == \
        f"This protocol is restricted, expecting header '{GRPC_PREFIX}{INFER}'"
    c = grpc(server)
    c.start_stream(callback=lambda result, error: results.put((result, error)),
                   headers=headers("grpc", INFER, INFER_VALUE))
    c.async_stream_infer("simple", inputs)
    result, error = results.get(timeout=30)
    c.stop_stream()
    assert error is None and result.as_numpy("OUTPUT0") is not None


def test_asyncio_clients(server):
    async def run():
        hc = httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")
        gc = grpcclient_aio.InferenceServerClient(server.target())
        try:
            for kind, c in (("http", hc), ("grpc", gc)):
                with pytest.raises(InferenceServerException) as e:
                    await c.get_model_metadata("simple")
                assert ADMIN in e.value.message(), e.value
                meta = await c.get_model_metadata("simple",
                                                  headers=headers(kind, ADMIN, ADMIN_VALUE))
                assert meta
                module = httpclient if kind == "http" else grpcclient
                a, inputs = simple_inputs(module)
                with pytest.raises(InferenceServerException) as e:
                    await c.infer("simple", inputs)
                assert INFER in e.value.message(), e.value
                r = await c.infer("simple", inputs, headers=headers(kind, INFER, INFER_VALUE))
                np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + a)
        finally:
            await hc.close()
            await gc.close()

    asyncio.run(run())


def test_unrestricted_server_needs_no_header():
    with GrpcServer([repo("examples")], [f"--http-restricted-api=logging:k=v",
                                         f"--grpc-restricted-protocol=trace:k=v"],
                    name="client-restricted-other") as s:
        for c in (http(s), grpc(s)):
            assert c.is_server_ready()
            assert c.get_model_metadata("simple")


# Logging and shared memory (the families added after issue 13), and the header rules: the HTTP
# header's name in any case with its value exact; of repeated headers the first counts (libevhtp's
# evhtp_kv_find); gRPC metadata keys are lower case on the wire.
OPS_FLAGS = [f"--http-restricted-api=logging,shared-memory:{ADMIN}={ADMIN_VALUE}",
             f"--grpc-restricted-protocol=logging,shared-memory:{ADMIN}={ADMIN_VALUE}",
             "--grpc-restricted-protocol=trace:t=v", "--allow-client-shm=true"]

OPS_CALLS = {
    "logging_get": lambda c, h: c.get_log_settings(headers=h),
    "logging_update": lambda c, h: c.update_log_settings({"log_verbose_level": 0}, headers=h),
    "shm_status": lambda c, h: c.get_system_shared_memory_status(headers=h),
    "shm_unregister": lambda c, h: c.unregister_system_shared_memory(headers=h),
    "cuda_shm_status": lambda c, h: c.get_cuda_shared_memory_status(headers=h),
}


@pytest.fixture(scope="module")
def ops_server():
    s = GrpcServer([repo("examples")], OPS_FLAGS, name="client-restricted-ops").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


@pytest.mark.parametrize("kind", ["http", "grpc"])
@pytest.mark.parametrize("api", sorted(OPS_CALLS))
def test_logging_and_shared_memory_need_their_header(ops_server, kind, api):
    c = http(ops_server) if kind == "http" else grpc(ops_server)
    call = OPS_CALLS[api]
    expect_refused(kind, ADMIN, lambda: call(c, None))
    expect_refused(kind, ADMIN, lambda: call(c, headers(kind, ADMIN, ADMIN_VALUE.upper())))
    call(c, headers(kind, ADMIN, ADMIN_VALUE))
    # Unrestricted families stay open.
    assert c.is_server_ready()


def test_logging_restricted_asyncio(ops_server):
    async def run():
        hc = httpclient_aio.InferenceServerClient(f"127.0.0.1:{ops_server.port}")
        gc = grpcclient_aio.InferenceServerClient(ops_server.target())
        try:
            for kind, c in (("http", hc), ("grpc", gc)):
                with pytest.raises(InferenceServerException) as e:
                    await c.get_log_settings()
                assert "restricted, expecting header" in e.value.message()
                await c.update_log_settings({"log_info": True},
                                            headers=headers(kind, ADMIN, ADMIN_VALUE))
        finally:
            await hc.close()
            await gc.close()

    asyncio.run(run())


def raw_get(server, path, header_lines):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.putrequest("GET", path)
    for k, v in header_lines:
        conn.putheader(k, v)
    conn.endheaders()
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


def test_http_header_name_case_and_repeated_values(ops_server):
    ok = ADMIN_VALUE
    assert raw_get(ops_server, "/v2/logging", [(ADMIN.upper(), ok)])[0] == 200
    assert raw_get(ops_server, "/v2/logging", [("Admin-Key", ok)])[0] == 200
    status, body = raw_get(ops_server, "/v2/logging", [(ADMIN, ok.upper())])
    assert status == 403
    assert body == b'{"error":"This API is restricted, expecting header \'admin-key\'"}'
    # Repeated: the first occurrence counts.
    assert raw_get(ops_server, "/v2/logging", [(ADMIN, ok), (ADMIN, "wrong")])[0] == 200
    assert raw_get(ops_server, "/v2/logging", [(ADMIN, "wrong"), (ADMIN, ok)])[0] == 403
    # One header holding both values (a comma-joined list) is not the value.
    assert raw_get(ops_server, "/v2/logging", [(ADMIN, f"{ok}, {ok}")])[0] == 403
    assert raw_get(ops_server, "/v2/systemsharedmemory/status", [(ADMIN, ok)])[0] == 200
    assert raw_get(ops_server, "/v2/systemsharedmemory/status", [])[0] == 403


def test_grpc_metadata_case_and_repeated_values(ops_server):
    import grpc as grpc_lib
    from tritonclient.grpc import service_pb2
    key = GRPC_PREFIX + ADMIN
    with grpc_lib.insecure_channel(ops_server.target()) as channel:
        call = channel.unary_unary(
            "/inference.GRPCInferenceService/LogSettings",
            request_serializer=service_pb2.LogSettingsRequest.SerializeToString,
            response_deserializer=service_pb2.LogSettingsResponse.FromString)
        assert call(service_pb2.LogSettingsRequest(), metadata=[(key, ADMIN_VALUE)])
        with pytest.raises(grpc_lib.RpcError) as e:
            call(service_pb2.LogSettingsRequest(), metadata=[(key, "wrong"), (key, "wrong2")])
        assert e.value.code() == grpc_lib.StatusCode.UNAVAILABLE
        assert e.value.details() == f"This protocol is restricted, expecting header '{key}'"
        assert call(service_pb2.LogSettingsRequest(),
                    metadata=[(key, ADMIN_VALUE), (key, ADMIN_VALUE)])
        # gRPC refuses upper-case metadata keys on the client side, so a wrong case never
        # reaches the server.
        with pytest.raises(Exception):
            call(service_pb2.LogSettingsRequest(), metadata=[(key.upper(), ADMIN_VALUE)])
        # The trace family is restricted too, and served with its header.
        trace = channel.unary_unary(
            "/inference.GRPCInferenceService/TraceSetting",
            request_serializer=service_pb2.TraceSettingRequest.SerializeToString,
            response_deserializer=service_pb2.TraceSettingResponse.FromString)
        with pytest.raises(grpc_lib.RpcError) as e:
            trace(service_pb2.TraceSettingRequest())
        assert e.value.details() == \
            f"This protocol is restricted, expecting header '{GRPC_PREFIX}t'"
        assert trace(service_pb2.TraceSettingRequest(), metadata=[(f"{GRPC_PREFIX}t", "v")])
