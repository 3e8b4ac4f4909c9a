"""Helpers for the model management suites: servers in a given control mode over a private copy
of fixture models (so tests may change files), the repository API, and polling with deadlines
(never a bare sleep as synchronization)."""

import base64
import json
import os
import shutil
import time

import numpy as np

from helpers import Server, build_infer_request, parse_response, repo, simple_inputs

A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.ones((1, 16), dtype=np.int32)


def copy_model(src_repo, name, dst_repo, new_name=None):
    """Copies fixture model `name` of repository src_repo (e.g. ("fixtures", "single_good")) into
    dst_repo, renamed new_name (config.pbtxt's name follows). Returns the new directory."""
    new_name = new_name or name
    dst = os.path.join(str(dst_repo), new_name)
    shutil.copytree(os.path.join(repo(*src_repo), name), dst)
    cfg = os.path.join(dst, "config.pbtxt")
    if new_name != name and os.path.exists(cfg):
        with open(cfg) as f:
            text = f.read().replace(f'name: "{name}"', f'name: "{new_name}"')
        with open(cfg, "w") as f:
            f.write(text)
    return dst


def mode_server(repos, mode, flags=(), name=None):
    """A started Server in --model-control-mode=mode."""
    return Server([str(r) for r in repos], [f"--model-control-mode={mode}"] + list(flags),
                  name=name or f"mm-{mode}").start()


def index(server, ready=None):
    body = None if ready is None else json.dumps({"ready": ready})
    r = server.post("/v2/repository/index", data=body)
    assert r.status_code == 200, r.content
    return r.json()


def index_entry(server, model, version=None):
    """The index rows of `model` (and `version` when given, as in the index: a string)."""
    rows = [e for e in index(server) if e["name"] == model]
    if version is not None:
        rows = [e for e in rows if e.get("version") == str(version)]
    return rows


def load(server, model, parameters=None, timeout=60):
    body = None if parameters is None else json.dumps({"parameters": parameters})
    return server.post(f"/v2/repository/models/{model}/load", data=body, timeout=timeout)


def unload(server, model, parameters=None):
    body = None if parameters is None else json.dumps({"parameters": parameters})
    return server.post(f"/v2/repository/models/{model}/unload", data=body)


def b64(data):
    return base64.b64encode(data).decode("ascii")


def file_bytes(*parts):
    with open(repo(*parts), "rb") as f:
        return f.read()


def simple_config_json(name):
    """The `simple` add/sub model's configuration as a load API `config` string."""
    return json.dumps({
        "name": name, "platform": "onnxruntime_onnx", "max_batch_size": 8,
        "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                  {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [16]}],
        "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                   {"name": "OUTPUT1", "data_type": "TYPE_INT32", "dims": [16]}]})


def infer_simple(server, model, session=None):
    """Infers `simple`-shaped model `model`; returns the response (not asserted)."""
    body, headers = build_infer_request(simple_inputs(A, B))
    url = server.url(f"/v2/models/{model}/infer")
    if session is None:
        return server.post(f"/v2/models/{model}/infer", data=body, headers=headers)
    return session.post(url, data=body, headers=headers, timeout=30)


def check_simple_ok(resp):
    _, values, _ = parse_response(resp)
    np.testing.assert_array_equal(values["OUTPUT0"], A + B)
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def infer_versioned(server, model, version=None):
    """Infers a `versioned*` fixture model (OUTPUT0 = INPUT0 + version); returns the added value,
    or None when the request failed."""
    from helpers import tensor
    body, headers = build_infer_request([tensor("INPUT0", "INT32", np.zeros(4, np.int32))])
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
    r = server.post(path, data=body, headers=headers)
    if r.status_code != 200:
        return None
    _, values, _ = parse_response(r)
    return int(values["OUTPUT0"][0])


def wait_until(predicate, timeout=30.0, interval=0.05, what="condition"):
    """Polls predicate() until it returns a truthy value (returned) or the deadline passes."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def ready(server, model, version=None):
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/ready"
    return server.get(path).status_code == 200


def log_count(server, needle):
    return server.stderr().count(needle)
