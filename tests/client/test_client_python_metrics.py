"""pb_utils.MetricFamily (Triton's custom metrics API for model.py, issue 18) through Triton's
own client: counters, gauges and histograms a Python model creates in initialize() and updates
per request appear on /metrics in Triton's format; Triton's error texts for bad names, another
kind under the same name, negative counter increments, unsupported operations and bad buckets or
labels; the metrics of an unloaded model disappear (docs/python_backend.md)."""

import asyncio
import re

import numpy as np
import pytest
import requests

from cancel_support import wait_for
from client_support import GrpcServer, aio_clients, clients, grpcclient, httpclient
import python_models

MODEL = "custom_metrics_py"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("custom-metrics-repo")
    cfg = python_models.config(MODEL, [python_models.io("TEXT", "TYPE_STRING", [1])],
                               [python_models.io("ANSWER", "TYPE_STRING", [1])])
    (root / MODEL / "1").mkdir(parents=True)
    (root / MODEL / "config.pbtxt").write_text(cfg)
    (root / MODEL / "1" / "model.py").write_text(python_models.CUSTOM_METRICS)
    s = GrpcServer([str(root)], ["--model-control-mode=explicit", f"--load-model={MODEL}"],
                   name="client-python-metrics").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def ask(module, client, text):
    t = module.InferInput("TEXT", [1], "BYTES")
    t.set_data_from_numpy(np.array([text.encode()], dtype=object))
    return client.infer(MODEL, [t]).as_numpy("ANSWER")[0].decode()


def scrape(server):
    return requests.get(server.metrics_url(), timeout=10).text


def sample(text, line_start):
    m = re.search("^" + re.escape(line_start) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def test_families_on_metrics_endpoint(server):
    text = scrape(server)
    assert "# HELP custom_requests Requests seen by the model\n# TYPE custom_requests counter\n" \
        in text
    assert "# TYPE custom_last_value gauge" in text
    assert "# TYPE custom_sizes histogram" in text
    before = sample(text, f'custom_requests{{model="{MODEL}"}}')
    assert before is not None
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        assert ask(module, c, "value=1.5").startswith("counter ")
    text = scrape(server)
    assert sample(text, f'custom_requests{{model="{MODEL}"}}') == before + 2
    assert sample(text, 'custom_last_value{kind="last"}') == 1.5
    assert sample(text, 'custom_sizes_count{unit="rows"}') >= 2
    assert sample(text, 'custom_sizes_bucket{unit="rows",le="1"}') == 0
    assert sample(text, 'custom_sizes_bucket{unit="rows",le="2.5"}') >= 2
    assert sample(text, 'custom_sizes_bucket{unit="rows",le="+Inf"}') >= 2


def test_aio_clients_update_metrics(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                module = httpclient if name == "http" else grpcclient
                t = module.InferInput("TEXT", [1], "BYTES")
                t.set_data_from_numpy(np.array([b"value=7"], dtype=object))
                result = await c.infer(MODEL, [t])
                assert result.as_numpy("ANSWER")[0].decode().endswith("gauge 7")
            finally:
                await c.close()
    asyncio.run(run())
    assert sample(scrape(server), 'custom_last_value{kind="last"}') == 7


@pytest.mark.parametrize("check,expected", [
    ("bad_name", "TritonModelException: Error when creating MetricFamily: Invalid metric name"),
    ("other_kind", "TritonModelException: Error when creating MetricFamily: Family name already "
                   "exists with different type"),
    ("negative", "TritonModelException: Failed to increment metric value: "
                 "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
                 "non-negative values."),
    ("counter_set", "TritonModelException: Failed to set metric value: "
                    "TRITONSERVER_METRIC_KIND_COUNTER does not support Set"),
    ("histogram_value", "TritonModelException: Failed to get metric value: "
                        "TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value"),
    ("missing_buckets", "TritonModelException: Failed to create metric. Missing required buckets."),
    ("unsorted_buckets", "TritonModelException: Error when creating Metric: Bucket Boundaries "
                         "must be strictly sorted"),
    ("unexpected_buckets", "TritonModelException: Failed to create metric. Unexpected buckets "
                           "found."),
    ("labels_not_dict", "TritonModelException: Failed to create metric. Labels must be a "
                        "dictionary."),
    ("bad_label", "TritonModelException: Error when creating Metric: Invalid label name"),
])
def test_triton_error_texts(server, check, expected):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        assert ask(module, c, check) == expected


def test_same_family_again_is_the_same_family(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    answer = ask(httpclient, c, "same_family_again")
    assert answer.startswith("value ") and float(answer[6:]) >= 1
    assert "# HELP custom_requests Requests seen by the model\n" in scrape(server)  # first kept
    assert "# HELP custom_requests other" not in scrape(server)


def test_unloaded_model_metrics_disappear(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    assert "custom_requests{" in scrape(server)
    c.unload_model(MODEL)
    wait_for(lambda: "custom_requests" not in scrape(server), "the families to go")
    text = scrape(server)
    assert "custom_requests" not in text and "custom_sizes" not in text
    c.load_model(MODEL)
    assert sample(scrape(server), f'custom_requests{{model="{MODEL}"}}') == 0
