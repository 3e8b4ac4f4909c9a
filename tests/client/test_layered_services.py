"""The three services main wires from separate libraries (docs/architecture.md, "Layers"), through
Triton's own client: the HTTP service from nereid_http's StartTritonHttpServer, the gRPC service,
and the metrics service, which knows no transport and is served through the MetricsEndpoint that
src/app binds to the HTTP server's text endpoint. Requests sent by the clients (HTTP and gRPC,
sync and asyncio) show up in the scrape; the metrics port answers only GET /metrics."""

import asyncio

import numpy as np
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from client_support import GrpcServer, aio_clients, clients, grpcclient, httpclient
from helpers import repo


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("examples")], name="client-layered").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def simple_inputs(module):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
              module.InferInput("INPUT1", [1, 16], "INT32")]
    for i in inputs:
        i.set_data_from_numpy(a)
    return a, inputs


def successes(server):
    r = requests.get(server.metrics_url(), timeout=10)
    assert r.status_code == 200, r.content
    assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
    for family in text_string_to_metric_families(r.text):
        if family.name == "nv_inference_request_success":
            for sample in family.samples:
                if sample.labels.get("model") == "simple":
                    return int(sample.value)
    return 0


def test_http_and_grpc_requests_are_counted_by_the_metrics_service(server):
    before = successes(server)
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        assert c.is_server_live() and c.is_server_ready()
        a, inputs = simple_inputs(module)
        result = c.infer("simple", inputs)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + a)

    async def aio():
        for name, c in aio_clients(server):
            module = httpclient if name == "http" else grpcclient
            try:
                a, inputs = simple_inputs(module)
                result = await c.infer("simple", inputs)
                np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - a)
            finally:
                await c.close()

    asyncio.run(aio())
    assert successes(server) == before + 4


@pytest.mark.parametrize("method, path, status, error", [
    ("POST", "/metrics", 405, "Method Not Allowed"),
    ("DELETE", "/metrics", 405, "Method Not Allowed"),
    ("GET", "/v2/health/live", 400, "Bad Request"),
    ("GET", "/metrics/", 400, "Bad Request"),
])
def test_metrics_port_serves_only_get_metrics(server, method, path, status, error):
    r = requests.request(method, server.metrics_url(path), timeout=10)
    assert r.status_code == status
    assert r.json() == {"error": error}
    # and the HTTP service keeps Triton's routes: the same path there is another answer
    assert httpclient.InferenceServerClient(f"127.0.0.1:{server.port}").is_server_live()
