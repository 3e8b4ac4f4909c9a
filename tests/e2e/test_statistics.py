"""Statistics extension (seed 004) over HTTP and gRPC: exact counts after known request patterns,
consistency between the fields, Triton's inclusion rules (what counts in success, fail, or not at
all), last_inference, several versions, and every bad input with Triton's error text.

Each test that counts starts its own server on the `stats` fixture repository so nothing else
has touched the counters.
"""

import json
import threading
import time

import grpc
import numpy as np
import pytest
from google.protobuf import json_format

from grpc_helpers import GrpcServer, infer_request, pbs  # noqa: F401
from helpers import Server, assert_error, build_infer_request, new_session, repo, tensor

DURATIONS = ["success", "fail", "queue", "compute_input", "compute_infer", "compute_output",
             "cache_hit", "cache_miss"]


@pytest.fixture
def server(pbs):  # noqa: F811
    s = GrpcServer([repo("fixtures", "stats")], name="stats").start()
    try:
        yield s
    finally:
        rc = s.stop()
    assert rc == 0, s.stderr()[-4000:]


def stats(server, model=None, version=None):
    path = "/v2/models/stats" if model is None else (
        f"/v2/models/{model}/stats" if version is None
        else f"/v2/models/{model}/versions/{version}/stats")
    r = server.get(path)
    assert r.status_code == 200, r.content
    assert r.headers["Content-Type"] == "application/json"
    return r.json()["model_stats"]


def one(server, model, version=None):
    entries = stats(server, model, version)
    assert len(entries) == 1, entries
    return entries[0]


def infer_simple(server, batch=1):
    a = np.arange(16 * batch, dtype=np.int32).reshape(batch, 16)
    r = server.infer("simple", [tensor("INPUT0", "INT32", a), tensor("INPUT1", "INT32", a)])
    assert r.status_code == 200, r.content
    return r


def infer_odd_fails(server, n):
    return server.infer("odd_fails", [tensor("INPUT0", "FP32", np.ones(n, np.float32))])


def grpc_stats(server, name="", version=""):
    resp = server.stub().ModelStatistics(stubs_pb().ModelStatisticsRequest(name=name,
                                                                           version=version))
    return [normalize(json_format.MessageToDict(m, preserving_proto_field_name=True,
                                                including_default_value_fields=True))
            for m in resp.model_stats]


def stubs_pb():
    from grpc_helpers import stubs
    return stubs().pb


def normalize(d):
    """protobuf JSON writes uint64 as strings: back to ints so it compares with HTTP's JSON."""
    if isinstance(d, dict):
        return {k: normalize(v) for k, v in d.items()}
    if isinstance(d, list):
        return [normalize(v) for v in d]
    if isinstance(d, str) and d.isdigit():
        return int(d)
    return d


def http_as_grpc(entry):
    """The HTTP entry with the version as an int, as normalize() leaves the gRPC one."""
    e = dict(entry)
    e["version"] = int(e["version"])
    return e


def check_consistent(s):
    """Relations that hold for every model served by the default scheduler without a cache."""
    inf = s["inference_stats"]
    assert set(inf) == set(DURATIONS)
    n = inf["success"]["count"]
    for phase in ("queue", "compute_input", "compute_infer", "compute_output"):
        assert inf[phase]["count"] == n, (phase, inf)
    assert s["execution_count"] == n  # one execution per request without dynamic batching
    assert sum(b["compute_infer"]["count"] for b in s["batch_stats"]) == s["execution_count"]
    assert sum(b["batch_size"] * b["compute_infer"]["count"] for b in s["batch_stats"]) == \
        s["inference_count"]
    for phase in ("compute_input", "compute_infer", "compute_output"):
        assert sum(b[phase]["ns"] for b in s["batch_stats"]) == inf[phase]["ns"]
    parts = sum(inf[p]["ns"] for p in ("queue", "compute_input", "compute_infer", "compute_output"))
    assert parts <= inf["success"]["ns"], inf
    assert inf["cache_hit"] == {"count": 0, "ns": 0}
    assert inf["cache_miss"] == {"count": 0, "ns": 0}
    assert s["response_stats"] == {}  # one response per request: Triton reports none
    if n:
        assert inf["compute_infer"]["ns"] > 0
        assert inf["success"]["ns"] > 0


# ------------------------------------------------------------------------------------ counts

def test_fresh_server_lists_every_ready_version_with_zero_counts(server):
    entries = stats(server)
    assert [(e["name"], e["version"]) for e in entries] == [
        ("odd_fails", "1"), ("simple", "1"), ("versioned", "1"), ("versioned", "2"),
        ("versioned", "3")]
    for e in entries:
        assert list(e) == ["name", "version", "last_inference", "inference_count",
                           "execution_count", "inference_stats", "response_stats", "batch_stats",
                           "memory_usage"]
        assert e["last_inference"] == 0
        assert e["inference_count"] == 0 and e["execution_count"] == 0
        assert all(e["inference_stats"][d] == {"count": 0, "ns": 0} for d in DURATIONS)
        assert e["batch_stats"] == [] and e["response_stats"] == {}
        for m in e["memory_usage"]:
            assert m["type"] == "CPU" and m["id"] == 0 and m["byte_size"] > 0


def test_single_requests(server):
    for _ in range(5):
        infer_simple(server)
    s = one(server, "simple")
    assert s["inference_count"] == 5
    assert s["execution_count"] == 5
    assert s["inference_stats"]["success"]["count"] == 5
    assert s["inference_stats"]["fail"] == {"count": 0, "ns": 0}
    assert [b["batch_size"] for b in s["batch_stats"]] == [1]
    assert s["batch_stats"][0]["compute_infer"]["count"] == 5
    check_consistent(s)
    # Other models are untouched.
    assert one(server, "odd_fails")["inference_stats"]["success"]["count"] == 0


def test_client_side_batch_counts_every_element(server):
    infer_simple(server, batch=4)
    infer_simple(server, batch=4)
    infer_simple(server, batch=1)
    infer_simple(server, batch=8)
    s = one(server, "simple")
    assert s["inference_count"] == 17
    assert s["execution_count"] == 4
    assert s["inference_stats"]["success"]["count"] == 4
    assert [(b["batch_size"], b["compute_infer"]["count"]) for b in s["batch_stats"]] == \
        [(1, 1), (4, 2), (8, 1)]
    check_consistent(s)


def test_backend_failure_counts_in_fail_only(server):
    r = infer_odd_fails(server, 3)  # passes validation, fails in ONNX Runtime
    assert_error(r, status=(400, 500))
    assert infer_odd_fails(server, 4).status_code == 200
    assert infer_odd_fails(server, 2).status_code == 200
    s = one(server, "odd_fails")
    inf = s["inference_stats"]
    assert inf["fail"]["count"] == 1 and inf["fail"]["ns"] > 0
    assert inf["success"]["count"] == 2
    assert s["inference_count"] == 2 and s["execution_count"] == 2
    check_consistent(s)


def test_requests_rejected_by_validation_are_not_counted(server):
    a = np.zeros((1, 16), np.int32)
    bad = [
        [tensor("INPUT0", "INT32", a)],                                            # missing input
        [tensor("INPUT0", "INT32", np.zeros((1, 15), np.int32)), tensor("INPUT1", "INT32", a)],
        [tensor("INPUT0", "FP32", a.astype(np.float32)), tensor("INPUT1", "INT32", a)],
        [tensor("INPUT0", "INT32", np.zeros((9, 16), np.int32)),                   # > max batch
         tensor("INPUT1", "INT32", np.zeros((9, 16), np.int32))],
    ]
    for inputs in bad:
        assert_error(server.infer("simple", inputs), status=400)
    assert_error(server.infer("simple", [tensor("INPUT0", "INT32", a), tensor("INPUT1", "INT32", a)],
                              outputs=["NOPE"]), status=400)
    s = one(server, "simple")
    assert all(s["inference_stats"][d]["count"] == 0 for d in DURATIONS), s  # as Triton
    assert s["inference_count"] == 0 and s["last_inference"] == 0


def test_versions_are_counted_separately(server):
    for version, n in ((1, 1), (2, 2), (3, 3)):
        for _ in range(n):
            r = server.infer("versioned", [tensor("INPUT0", "INT32", np.zeros(4, np.int32))],
                             version=version)
            assert r.status_code == 200, r.content
    r = server.infer("versioned", [tensor("INPUT0", "INT32", np.zeros(4, np.int32))])
    assert r.status_code == 200  # no version: the latest, 3
    entries = stats(server, "versioned")
    assert [(e["version"], e["inference_stats"]["success"]["count"]) for e in entries] == \
        [("1", 1), ("2", 2), ("3", 4)]
    for e in entries:
        check_consistent(e)
    v2 = one(server, "versioned", 2)
    assert v2["version"] == "2" and v2["execution_count"] == 2
    # Non-batching model: every execution is recorded as batch size 1.
    assert [b["batch_size"] for b in v2["batch_stats"]] == [1]


def test_last_inference_moves(server):
    assert one(server, "simple")["last_inference"] == 0
    before = int(time.time() * 1000)
    infer_simple(server)
    after = int(time.time() * 1000)
    first = one(server, "simple")["last_inference"]
    assert before - 5 <= first <= after + 5, (before, first, after)
    time.sleep(0.02)
    infer_simple(server)
    second = one(server, "simple")["last_inference"]
    assert second >= first + 15, (first, second)
    # A failed request does not move it (Triton moves it when an execution is recorded).
    time.sleep(0.02)
    infer_odd_fails(server, 3)
    assert one(server, "odd_fails")["last_inference"] == 0


def test_concurrent_traffic_loses_nothing(server):
    sizes = [1, 2, 3, 8]
    errors = []

    def worker(k):
        session = new_session()  # requests sessions are not thread-safe: one per thread
        try:
            for i in range(20):
                a = np.ones((sizes[(k + i) % len(sizes)], 16), np.int32)
                body, hdrs = build_infer_request([tensor("INPUT0", "INT32", a),
                                                  tensor("INPUT1", "INT32", a)])
                r = session.post(server.url("/v2/models/simple/infer"), data=body, headers=hdrs,
                                 timeout=30)
                assert r.status_code == 200, r.content
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            session.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    s = one(server, "simple")
    assert s["inference_stats"]["success"]["count"] == 80
    assert s["inference_count"] == 20 * sum(sizes)
    check_consistent(s)


# ------------------------------------------------------------------------------------ gRPC

def test_grpc_matches_http(server):
    for _ in range(2):
        infer_simple(server, batch=2)
    req = infer_request("simple", [("INPUT0", "INT32", np.ones((3, 16), np.int32)),
                                   ("INPUT1", "INT32", np.ones((3, 16), np.int32))])
    server.stub().ModelInfer(req)
    infer_odd_fails(server, 5)
    everything = grpc_stats(server)
    assert [http_as_grpc(e) for e in stats(server)] == everything
    simple = grpc_stats(server, "simple")
    assert len(simple) == 1 and simple[0]["inference_count"] == 7
    assert simple[0]["execution_count"] == 3
    assert grpc_stats(server, "simple", "1") == simple
    assert [e["version"] for e in grpc_stats(server, "versioned")] == [1, 2, 3]
    assert grpc_stats(server, "odd_fails")[0]["inference_stats"]["fail"]["count"] == 1


def test_grpc_stream_requests_are_counted(server):
    reqs = [infer_request("simple", [("INPUT0", "INT32", np.ones((b, 16), np.int32)),
                                     ("INPUT1", "INT32", np.ones((b, 16), np.int32))])
            for b in (1, 2, 5)]
    reqs.append(infer_request("odd_fails", [("INPUT0", "FP32", np.ones(3, np.float32))]))
    replies = list(server.stub().ModelStreamInfer(iter(reqs)))
    assert [bool(r.error_message) for r in replies] == [False, False, False, True]
    simple = grpc_stats(server, "simple")[0]
    assert simple["inference_count"] == 8 and simple["execution_count"] == 3
    assert grpc_stats(server, "odd_fails")[0]["inference_stats"]["fail"]["count"] == 1


def test_grpc_empty_name_ignores_the_version(server):
    assert len(grpc_stats(server, "", "7")) == 5  # Triton returns every model


def test_statistics_extension_is_listed(server, pbs):  # noqa: F811
    assert "statistics" in server.get("/v2").json()["extensions"]
    assert "statistics" in server.stub().ServerMetadata(pbs.pb.ServerMetadataRequest()).extensions


# ------------------------------------------------------------------------------------ bad input

@pytest.mark.parametrize("path,message", [
    ("/v2/models/nope/stats", "requested model 'nope' is not available"),
    ("/v2/models/nope/versions/1/stats", "requested model 'nope' is not available"),
    ("/v2/models/simple/versions/2/stats",
     "requested model version is not available for model 'simple'"),
    ("/v2/models/simple/versions/0/stats",
     "requested model version is not available for model 'simple'"),
    ("/v2/models/..%2F..%2Fetc%2Fpasswd/stats",
     "requested model '../../etc/passwd' is not available"),
    ("/v2/models/..%2Fsimple/stats", "requested model '../simple' is not available"),
    ("/v2/models/%2E%2E/stats", "requested model '..' is not available"),
    ("/v2/models/simple/versions/abc/stats", "version must be a non-negative integer"),
    ("/v2/models/simple/versions/-1/stats", "version must be a non-negative integer"),
    ("/v2/models/simple/versions/99999999999999999999/stats",
     "version must be a non-negative integer"),
    ("/v2/models/bad%ZZname/stats", "malformed percent-encoding"),
])
def test_http_bad_requests(server, path, message):
    status, headers, body = server.raw("GET", path)  # the path exactly as written, not re-quoted
    assert status == 400, (status, body)
    assert headers["content-type"] == "application/json"
    msg = json.loads(body)["error"]
    assert message in msg, msg


def test_http_stats_of_a_version_that_is_not_a_number_says_so_once(server):
    msg = assert_error(server.get("/v2/models/simple/versions/1x/stats"), status=400)
    assert "'1x'" in msg


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
@pytest.mark.parametrize("path", ["/v2/models/stats", "/v2/models/simple/stats",
                                  "/v2/models/simple/versions/1/stats"])
def test_http_other_methods_are_not_allowed(server, method, path):
    assert_error(server.request(method, path), status=405, contains="Method Not Allowed")


def test_http_unknown_sub_path_is_not_found(server):
    assert_error(server.get("/v2/models/stats/extra"), status=404)
    assert_error(server.get("/v2/models/simple/stats/extra"), status=404)


@pytest.mark.parametrize("name,version,message", [
    ("nope", "", "requested model 'nope' is not available"),
    ("simple", "2", "requested model version is not available for model 'simple'"),
    ("../simple", "", "requested model '../simple' is not available"),
    ("simple/../simple", "", "requested model 'simple/../simple' is not available"),
    ("simple", "abc", "failed to get model version from specified version string 'abc'"),
    ("simple", "-1", "failed to get model version from specified version string '-1'"),
    ("", "x", "failed to get model version from specified version string 'x'"),
])
def test_grpc_bad_requests(server, name, version, message):
    with pytest.raises(grpc.RpcError) as e:
        grpc_stats(server, name, version)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in e.value.details()


def test_unknown_model_error_has_the_same_text_on_both_protocols(server):
    http = assert_error(server.get("/v2/models/nope/stats"), status=400)
    with pytest.raises(grpc.RpcError) as e:
        grpc_stats(server, "nope")
    assert e.value.details() == http


def test_memory_usage_is_measured_at_load():
    """mlp_fp32 holds 27 MB of weights: the resident memory its load added says so. Loads run one
    at a time here: with parallel loads the figure also moves with the other models' loads (an
    estimate, as documented)."""
    with Server([repo("examples")], flags=["--model-load-thread-count=1"],
                name="stats-memory") as s:
        usage = one(s, "mlp_fp32")["memory_usage"]
        assert len(usage) == 1 and usage[0]["type"] == "CPU" and usage[0]["id"] == 0
        assert usage[0]["byte_size"] >= 20 * 1024 * 1024, usage
        assert one(s, "mlp_fp32", 1)["memory_usage"] == usage  # fixed at load
