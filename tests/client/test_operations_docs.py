"""docs/operations.md's Grafana dashboard and PromQL examples name only metrics the server exports:
the dashboard is valid JSON with one query per panel, and every nv_* family in it (and in the
guide's PromQL block) is in /metrics after a request through Triton's client."""

import json
import os
import re

import numpy as np
import requests

from client_support import GrpcServer, clients, grpcclient, httpclient
from helpers import repo

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DASHBOARD = os.path.join(ROOT, "docs", "grafana", "nereid_dashboard.json")
GUIDE = os.path.join(ROOT, "docs", "operations.md")


def dashboard_metrics():
    with open(DASHBOARD) as f:
        board = json.load(f)
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    assert len(board["panels"]) >= 6 and all(exprs)
    ids = [p["id"] for p in board["panels"]]
    assert len(set(ids)) == len(ids)
    return {m for e in exprs for m in re.findall(r"\bnv_[a-z_]+", e)}


def guide_metrics():
    text = open(GUIDE).read()
    block = text.split("```promql", 1)[1].split("```", 1)[0]
    return set(re.findall(r"\bnv_[a-z_]+", block))


def test_dashboard_and_promql_name_exported_metrics():
    wanted = dashboard_metrics() | guide_metrics()
    assert "nv_inference_request_success" in wanted
    with GrpcServer([repo("examples")], name="client-ops-docs") as s:
        for name, c in clients(s):
            module = httpclient if name == "http" else grpcclient
            inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
                      module.InferInput("INPUT1", [1, 16], "INT32")]
            for i in inputs:
                i.set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
            c.infer("simple", inputs)
        exported = requests.get(s.metrics_url(), timeout=10).text
    families = set(re.findall(r"^# TYPE (\S+)", exported, re.M))
    missing = sorted(wanted - families)
    assert not missing, missing
