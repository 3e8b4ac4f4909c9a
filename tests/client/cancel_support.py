"""Helpers shared by the cancellation suites: the server's metrics and statistics as numbers."""

import re
import time

import pytest
import requests


def gauge(server, family, model, reason=None):
    """A model's sample of a metric family (with `reason` for nv_inference_request_failure)."""
    text = requests.get(server.metrics_url(), timeout=10).text
    extra = r'[^}]*reason="%s"' % reason if reason else ""
    m = re.search(r'%s\{[^}]*model="%s"%s[^}]*\} (\d+)' % (family, model, extra), text)
    return int(float(m.group(1))) if m else 0


def canceled(server, model):
    return gauge(server, "nv_inference_request_failure", model, reason="CANCELED")


def executions(server, model):
    r = requests.get(f"http://127.0.0.1:{server.port}/v2/models/{model}/stats", timeout=10)
    return int(r.json()["model_stats"][0]["execution_count"])


def wait_for(predicate, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")
