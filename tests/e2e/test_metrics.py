"""Prometheus metrics (REFERENCE.md §4) on the metrics port: the text is parsed with a real
Prometheus parser (Debian's python3-prometheus-client) and checked against the statistics API for
the same traffic; the --metrics-* flags; bad requests to the endpoint.
"""

import shutil
import socket

import numpy as np
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from grpc_helpers import GrpcServer, infer_request, pbs  # noqa: F401
from helpers import Server, assert_error, free_port, repo, run_to_exit, tensor

MODEL_FAMILIES = {
    "nv_inference_request_success": "counter",
    "nv_inference_request_failure": "counter",
    "nv_inference_count": "counter",
    "nv_inference_exec_count": "counter",
    "nv_inference_request_duration_us": "counter",
    "nv_inference_queue_duration_us": "counter",
    "nv_inference_compute_input_duration_us": "counter",
    "nv_inference_compute_infer_duration_us": "counter",
    "nv_inference_compute_output_duration_us": "counter",
    "nv_inference_pending_request_count": "gauge",
    "nv_model_load_duration_secs": "gauge",
}
CPU_FAMILIES = ["nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"]
DURATION_FAMILIES = {
    "nv_inference_request_duration_us": "success",
    "nv_inference_queue_duration_us": "queue",
    "nv_inference_compute_input_duration_us": "compute_input",
    "nv_inference_compute_infer_duration_us": "compute_infer",
    "nv_inference_compute_output_duration_us": "compute_output",
}


def scrape(server):
    r = requests.get(server.metrics_url(), timeout=10)
    assert r.status_code == 200, r.content
    assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    return families, r.text


def value(families, family, **labels):
    """The one sample of `family` whose labels include `labels`."""
    found = [s for s in families[family].samples
             if all(s.labels.get(k) == v for k, v in labels.items())
             and not s.name.endswith(("_created",))]
    assert len(found) == 1, (family, labels, found)
    return found[0].value


def infer_simple(server, batch):
    a = np.ones((batch, 16), np.int32)
    r = server.infer("simple", [tensor("INPUT0", "INT32", a), tensor("INPUT1", "INT32", a)])
    assert r.status_code == 200, r.content


def infer_odd_fails(server, n):
    return server.infer("odd_fails", [tensor("INPUT0", "FP32", np.ones(n, np.float32))])


@pytest.fixture
def server():
    with Server([repo("fixtures", "stats")], name="metrics") as s:
        yield s


def test_metrics_match_the_statistics_api(server):
    for batch in (1, 2, 4):
        infer_simple(server, batch)
    assert_error(infer_odd_fails(server, 3))
    assert infer_odd_fails(server, 2).status_code == 200
    stats = {(m["name"], m["version"]): m for m in server.get("/v2/models/stats").json()["model_stats"]}
    families, text = scrape(server)

    for name, kind in MODEL_FAMILIES.items():
        assert families[name].type == kind, (name, families[name].type)
    assert families["nv_inference_request_success"].documentation == \
        "Number of successful inference requests, all batch sizes"
    for (model, version), s in stats.items():
        labels = {"model": model, "version": version}
        inf = s["inference_stats"]
        assert value(families, "nv_inference_request_success", **labels) == inf["success"]["count"]
        assert value(families, "nv_inference_count", **labels) == s["inference_count"]
        assert value(families, "nv_inference_exec_count", **labels) == s["execution_count"]
        for family, field in DURATION_FAMILIES.items():
            assert value(families, family, **labels) == inf[field]["ns"] // 1000, family
        failures = {r: value(families, "nv_inference_request_failure", reason=r, **labels)
                    for r in ("REJECTED", "CANCELED", "BACKEND", "OTHER")}
        assert sum(failures.values()) == inf["fail"]["count"]
        assert value(families, "nv_inference_pending_request_count", **labels) == 0
        assert value(families, "nv_model_load_duration_secs", **labels) > 0
    assert value(families, "nv_inference_count", model="simple", version="1") == 7
    assert value(families, "nv_inference_exec_count", model="simple", version="1") == 3
    assert value(families, "nv_inference_request_failure", model="odd_fails", version="1",
                 reason="BACKEND") == 1
    # Five versions, one sample each; failures carry four reasons each.
    assert len(families["nv_inference_count"].samples) == 5
    assert len(families["nv_inference_request_failure"].samples) == 20
    # No summaries or histograms unless --metrics-config asks for them.
    assert not [n for n in families if "summary" in n or "histogram" in n]
    assert "# TYPE nv_inference_count counter\n" in text


def test_metric_tags_become_labels(server):
    families, _ = scrape(server)
    sample = [s for s in families["nv_inference_count"].samples if s.labels["model"] == "simple"]
    assert sample[0].labels == {"model": "simple", "version": "1", "_team": "search"}
    other = [s for s in families["nv_inference_count"].samples if s.labels["model"] == "odd_fails"]
    assert other[0].labels == {"model": "odd_fails", "version": "1"}


def test_cpu_metrics(server):
    families, _ = scrape(server)
    for name in CPU_FAMILIES:
        assert families[name].type == "gauge"
        assert len(families[name].samples) == 1 and families[name].samples[0].labels == {}
    assert 0.0 <= value(families, "nv_cpu_utilization") <= 1.0
    total = value(families, "nv_cpu_memory_total_bytes")
    assert 0 < value(families, "nv_cpu_memory_used_bytes") <= total


def test_counter_latencies_false_drops_only_the_duration_counters():
    with Server([repo("fixtures", "stats")], flags=["--metrics-config=counter_latencies=false"],
                name="metrics-nocounters") as s:
        infer_simple(s, 2)
        families, _ = scrape(s)
        for name in DURATION_FAMILIES:
            assert name not in families
        assert value(families, "nv_inference_request_success", model="simple", version="1") == 1
        assert value(families, "nv_inference_count", model="simple", version="1") == 2


def test_summary_latencies():
    flags = ["--metrics-config=summary_latencies=true",
             "--metrics-config=summary_quantiles=0.5:0.05,0.9:0.01"]
    with Server([repo("fixtures", "stats")], flags=flags, name="metrics-summaries") as s:
        for batch in (1, 1, 3):
            infer_simple(s, batch)
        assert_error(infer_odd_fails(s, 3))
        stats = s.get("/v2/models/simple/stats").json()["model_stats"][0]["inference_stats"]
        families, text = scrape(s)
        for kind in ("request", "queue", "compute_input", "compute_infer", "compute_output"):
            name = f"nv_inference_{kind}_summary_us"
            assert families[name].type == "summary"
            samples = [x for x in families[name].samples if x.labels.get("model") == "simple"]
            count = [x.value for x in samples if x.name == name + "_count"]
            total = [x.value for x in samples if x.name == name + "_sum"]
            quantiles = sorted(x.labels["quantile"] for x in samples if x.name == name)
            assert count == [3], (name, samples)
            field = "success" if kind == "request" else kind
            # Each observation is truncated to whole microseconds; the counter truncates the sum.
            assert stats[field]["ns"] // 1000 - 3 <= total[0] <= stats[field]["ns"] // 1000
            assert quantiles == ["0.5", "0.9"]
        # A failed request is not observed.
        odd = [x for x in families["nv_inference_request_summary_us"].samples
               if x.labels.get("model") == "odd_fails" and x.name.endswith("_count")]
        assert [x.value for x in odd] == [0]
        assert 'quantile="0.5"' in text


def test_allow_cpu_metrics_false():
    with Server([repo("fixtures", "stats")], flags=["--allow-cpu-metrics=false"],
                name="metrics-nocpu") as s:
        families, _ = scrape(s)
        assert not [n for n in CPU_FAMILIES if n in families]
        assert "nv_inference_count" in families


def test_metrics_port_address_and_interval_flags():
    port = free_port()
    flags = [f"--metrics-port={port}", "--metrics-address=127.0.0.1", "--metrics-interval-ms=50"]
    with Server([repo("fixtures", "stats")], flags=flags, name="metrics-port") as s:
        assert s.metrics_port == port
        families, _ = scrape(s)
        assert 0.0 <= value(families, "nv_cpu_utilization") <= 1.0


def test_allow_metrics_false_opens_no_port():
    port = free_port()
    with Server([repo("fixtures", "stats")], flags=["--allow-metrics=false",
                                                    f"--metrics-port={port}"],
                name="metrics-off") as s:
        assert "Started Metrics Service" not in s.stderr()
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0
        assert s.get("/v2/health/ready").status_code == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "HEAD", "PATCH"])
def test_metrics_other_methods_are_not_allowed(server, method):
    r = requests.request(method, server.metrics_url(), timeout=10)
    assert r.status_code == 405
    if method != "HEAD":
        assert r.json() == {"error": "Method Not Allowed"}


@pytest.mark.parametrize("path", ["/", "/metrics/", "/metrics/extra", "/v2/models/stats"])
def test_metrics_port_serves_only_metrics(server, path):
    assert_error(requests.get(server.metrics_url(path), timeout=10), status=400)


def test_metrics_query_string_is_ignored(server):
    assert requests.get(server.metrics_url("/metrics?name[]=x"), timeout=10).status_code == 200


@pytest.mark.parametrize("flags,message", [
    (["--metrics-config=summary_latencies"],
     "--metrics-config option format is <setting>=<value>. Got summary_latencies"),
    (["--metrics-interval-ms=0"], "--metrics-interval-ms"),
    (["--metrics-port=-1"], "--metrics-port"),
    (["--http-port=9000", "--metrics-port=9000"],
     "The server cannot listen to HTTP requests and metrics requests at the same address and "
     "port 0.0.0.0:9000"),
])
def test_bad_metrics_flags_fail_at_start(flags, message):
    r = run_to_exit([f"--model-repository={repo('fixtures', 'stats')}"] + flags)
    assert r.returncode != 0
    assert message in r.stderr.decode(), r.stderr


def test_busy_metrics_port_fails_start():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run_to_exit([f"--model-repository={repo('fixtures', 'stats')}", "--allow-grpc=false",
                         "--http-address=127.0.0.1", "--http-port=0", f"--metrics-port={port}"])
    assert r.returncode == 1
    assert "failed to start Metrics Service" in r.stderr.decode()


def test_first_response_histogram_for_decoupled_models(tmp_path, pbs):  # noqa: F811
    """histogram_latencies=true: nv_inference_first_response_histogram_ms for decoupled models only
    (Triton's rule), Triton's default buckets or the model_metrics override, failures included."""
    for name, extra in (("dec_default", ""),
                        ("dec_custom", 'model_metrics { metric_control [ { metric_identifier { '
                                       'family: "nv_inference_first_response_histogram_ms" } '
                                       'histogram_options { buckets: [ 1, 2.5 ] } } ] }')):
        dst = tmp_path / name
        shutil.copytree(repo("fixtures", "stats", "odd_fails"), dst)
        cfg = (dst / "config.pbtxt").read_text().replace('name: "odd_fails"', f'name: "{name}"')
        (dst / "config.pbtxt").write_text(
            cfg + "\nmodel_transaction_policy { decoupled: true }\n" + extra + "\n")
    shutil.copytree(repo("fixtures", "stats", "simple"), tmp_path / "simple")
    with GrpcServer([str(tmp_path)], flags=["--metrics-config=histogram_latencies=true"],
                    name="metrics-histogram") as s:
        reqs = [infer_request("dec_default", [("INPUT0", "FP32", np.ones(n, np.float32))])
                for n in (2, 4, 3)]
        reqs.append(infer_request("dec_custom", [("INPUT0", "FP32", np.ones(2, np.float32))]))
        replies = list(s.stub().ModelStreamInfer(iter(reqs)))
        assert [bool(r.error_message) for r in replies] == [False, False, True, False]
        infer_simple(s, 1)
        families, _ = scrape(s)
        h = families["nv_inference_first_response_histogram_ms"]
        assert h.type == "histogram"
        assert {x.labels["model"] for x in h.samples} == {"dec_default", "dec_custom"}
        default = {x.labels.get("le"): x.value for x in h.samples
                   if x.labels["model"] == "dec_default" and x.name.endswith("_bucket")}
        assert sorted(default, key=float) == ["100", "500", "2000", "5000", "+Inf"]
        assert default["+Inf"] == 3  # the failed request's (error) response counts too
        count = [x.value for x in h.samples
                 if x.labels["model"] == "dec_default" and x.name.endswith("_count")]
        assert count == [3]
        custom = [x.labels["le"] for x in h.samples
                  if x.labels["model"] == "dec_custom" and x.name.endswith("_bucket")]
        assert sorted(custom, key=float) == ["1", "2.5", "+Inf"]
        stats = s.get("/v2/models/dec_default/stats").json()["model_stats"][0]
        assert stats["inference_stats"]["success"]["count"] == 2
        assert stats["inference_stats"]["fail"]["count"] == 1


def test_histogram_latencies_off_by_default_even_for_decoupled(tmp_path, pbs):  # noqa: F811
    dst = tmp_path / "dec"
    shutil.copytree(repo("fixtures", "stats", "odd_fails"), dst)
    cfg = (dst / "config.pbtxt").read_text().replace('name: "odd_fails"', 'name: "dec"')
    (dst / "config.pbtxt").write_text(cfg + "\nmodel_transaction_policy { decoupled: true }\n")
    with GrpcServer([str(tmp_path)], name="metrics-nohistogram") as s:
        list(s.stub().ModelStreamInfer(iter([infer_request(
            "dec", [("INPUT0", "FP32", np.ones(2, np.float32))])])))
        families, _ = scrape(s)
        assert "nv_inference_first_response_histogram_ms" not in families
        assert value(families, "nv_inference_request_success", model="dec", version="1") == 1
