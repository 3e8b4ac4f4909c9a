"""--metrics-config through Triton's own client: with histogram_latencies=true the decoupled
models get Triton's nv_inference_first_response_histogram_ms (labels model, version, le; Triton's
default buckets 100, 500, 2000, 5000 ms), with summary_latencies=true every model gets the
nv_inference_*_summary_us families with the quantiles of summary_quantiles, read as leniently as
Triton reads them. /metrics is scraped while tritonclient (HTTP and gRPC, sync, streaming and
asyncio) sends requests."""

import asyncio
import queue
import shutil
import threading

import numpy as np
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from client_support import GrpcServer, grpcclient, grpcclient_aio, httpclient, httpclient_aio
from helpers import repo

HISTOGRAM = "nv_inference_first_response_histogram_ms"
SUMMARIES = ["nv_inference_request_summary_us", "nv_inference_queue_summary_us",
             "nv_inference_compute_input_summary_us", "nv_inference_compute_infer_summary_us",
             "nv_inference_compute_output_summary_us"]


def scrape(server):
    r = requests.get(server.metrics_url(), timeout=10)
    assert r.status_code == 200, r.content
    return {f.name: f for f in text_string_to_metric_families(r.text)}, r.text


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("metrics-repo")
    dst = root / "dec"  # odd_fails fails odd sizes; decoupled, it answers over the stream only
    shutil.copytree(repo("fixtures", "stats", "odd_fails"), dst)
    cfg = (dst / "config.pbtxt").read_text().replace('name: "odd_fails"', 'name: "dec"')
    (dst / "config.pbtxt").write_text(cfg + "\nmodel_transaction_policy { decoupled: true }\n")
    shutil.copytree(repo("examples", "simple"), root / "simple")
    # Repeated --metrics-config; the quantile list as Triton's std::stod reads it: a leading
    # blank and trailing text after each number are ignored.
    flags = ["--metrics-config=histogram_latencies=true",
             "--metrics-config=summary_latencies=true",
             "--metrics-config=summary_quantiles= 0.5:0.05x,0.9:0.01 ms"]
    s = GrpcServer([str(root)], flags, name="client-metrics-config").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def simple_inputs(module):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
              module.InferInput("INPUT1", [1, 16], "INT32")]
    for i in inputs:
        i.set_data_from_numpy(a)
    return inputs


def dec_input(n):
    i = grpcclient.InferInput("INPUT0", [n], "FP32")
    i.set_data_from_numpy(np.ones(n, np.float32))
    return [i]


def stream(server, sizes):
    """Sends one decoupled request per size over one gRPC stream; returns (ok, failed)."""
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put(error))
    for n in sizes:
        c.async_stream_infer("dec", dec_input(n))
    errors = [results.get(timeout=30) for _ in sizes]
    c.stop_stream()
    return sum(e is None for e in errors), sum(e is not None for e in errors)


def test_histogram_and_summaries_while_clients_send(server):
    stop = threading.Event()
    sent = {"simple": 0}
    errors = []

    def send():
        try:
            hc = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
            gc = grpcclient.InferenceServerClient(server.target())
            while not stop.is_set():
                hc.infer("simple", simple_inputs(httpclient))
                gc.infer("simple", simple_inputs(grpcclient))
                sent["simple"] += 2
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        ok, failed = stream(server, [2, 4, 3])
        seen = []
        for _ in range(20):  # scrapes interleaved with the sender's requests
            families, _ = scrape(server)
            seen.append(sum(s.value for s in families["nv_inference_request_success"].samples
                            if s.labels["model"] == "simple"))
    finally:
        stop.set()
        sender.join(timeout=60)
    assert not errors, errors
    assert (ok, failed) == (2, 1)
    assert seen == sorted(seen)  # counters never go back
    families, text = scrape(server)
    assert f"# TYPE {HISTOGRAM} histogram" in text
    assert f"# HELP {HISTOGRAM} Duration from request to first response in milliseconds" in text
    h = families[HISTOGRAM]
    # Decoupled models only, as in Triton.
    assert {x.labels["model"] for x in h.samples} == {"dec"}
    buckets = {x.labels["le"]: x.value for x in h.samples if x.name == HISTOGRAM + "_bucket"}
    assert sorted(buckets, key=float) == ["100", "500", "2000", "5000", "+Inf"]
    assert buckets["+Inf"] == 3  # the failed request's error response is a first response too
    assert all(set(x.labels) - {"le"} == {"model", "version"} for x in h.samples)
    assert [x.value for x in h.samples if x.name == HISTOGRAM + "_count"] == [3]
    for name in SUMMARIES:
        f = families[name]
        assert f.type == "summary", name
        quantiles = sorted({x.labels["quantile"] for x in f.samples
                            if x.labels["model"] == "simple" and "quantile" in x.labels})
        assert quantiles == ["0.5", "0.9"], (name, quantiles)
        count = [x.value for x in f.samples
                 if x.labels["model"] == "simple" and x.name == name + "_count"]
        assert count == [sent["simple"]], (name, count, sent)


def test_asyncio_clients_are_counted(server):
    async def run():
        hc = httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")
        gc = grpcclient_aio.InferenceServerClient(server.target())
        try:
            before, _ = scrape(server)
            await hc.infer("simple", simple_inputs(httpclient))
            await gc.infer("simple", simple_inputs(grpcclient))
            after, _ = scrape(server)
        finally:
            await hc.close()
            await gc.close()
        return before, after

    before, after = asyncio.run(run())

    def count(families):
        return [x.value for x in families["nv_inference_queue_summary_us"].samples
                if x.labels["model"] == "simple" and x.name.endswith("_count")][0]

    assert count(after) == count(before) + 2


def test_histogram_off_without_the_setting(tmp_path):
    dst = tmp_path / "dec"
    shutil.copytree(repo("fixtures", "stats", "odd_fails"), dst)
    cfg = (dst / "config.pbtxt").read_text().replace('name: "odd_fails"', 'name: "dec"')
    (dst / "config.pbtxt").write_text(cfg + "\nmodel_transaction_policy { decoupled: true }\n")
    # Only the exact word "true" turns histograms on, as in Triton.
    with GrpcServer([str(tmp_path)], ["--metrics-config=histogram_latencies=True"],
                    name="client-metrics-nohistogram") as s:
        assert stream(s, [2]) == (1, 0)
        families, _ = scrape(s)
        assert HISTOGRAM not in families
        assert not [n for n in families if n.endswith("_summary_us")]


def test_tritons_qa_quantiles_with_a_malformed_error_value():
    # L0_metrics' SUMMARY_QUANTILES: "0.0.1" is read as 0.0 by std::stod, so all three quantiles
    # are exported (Triton's QA checks each quantile="..." label).
    quantiles = "0.1:0.0.1,0.7:0.01,0.75:0.01"
    with GrpcServer([repo("examples")], ["--metrics-config=summary_latencies=true",
                                         f"--metrics-config=summary_quantiles={quantiles}"],
                    name="client-metrics-qa-quantiles") as s:
        httpclient.InferenceServerClient(f"127.0.0.1:{s.port}").infer(
            "simple", simple_inputs(httpclient))
        _, text = scrape(s)
        for q in ("0.1", "0.7", "0.75"):
            assert f'quantile="{q}"' in text, q
        assert 'quantile="0.5"' not in text  # the defaults were replaced
