"""Health, server/model metadata, readiness, config, routing errors and keep-alive."""

import http.client
import json
import re
import socket

import pytest

from helpers import assert_error, assert_not_ready, read_http_response

# ------------------------------------------------------------------------------------ server


def test_server_metadata_name_version_extensions(examples_server):
    r = examples_server.get("/v2")
    assert r.status_code == 200
    meta = r.json()
    assert meta["name"] == "triton"
    assert isinstance(meta["version"], str) and meta["version"]
    assert isinstance(meta["extensions"], list)
    assert "binary_tensor_data" in meta["extensions"]
    assert "model_configuration" in meta["extensions"]


def test_server_metadata_never_reports_generate_extension(examples_server):
    # REFERENCE §1.1: "generate" is never reported even though the endpoint exists.
    assert "generate" not in examples_server.get("/v2").json()["extensions"]


def test_health_live_is_200(examples_server):
    assert examples_server.get("/v2/health/live").status_code == 200


def test_health_ready_is_200_when_all_models_ready(examples_server):
    assert examples_server.get("/v2/health/ready").status_code == 200


def test_startup_log_names_http_service(examples_server):
    assert "Started HTTPService at" in examples_server.stderr()


# ------------------------------------------------------------------------------------ model metadata


def test_model_metadata_simple_has_batch_dim_and_kserve_types(examples_server):
    r = examples_server.get("/v2/models/simple")
    assert r.status_code == 200
    m = r.json()
    assert m["name"] == "simple"
    assert m["versions"] == ["1"]
    assert m["platform"] == "onnxruntime_onnx"
    assert [(t["name"], t["datatype"], t["shape"]) for t in m["inputs"]] == [
        ("INPUT0", "INT32", [-1, 16]), ("INPUT1", "INT32", [-1, 16])]
    assert [(t["name"], t["datatype"], t["shape"]) for t in m["outputs"]] == [
        ("OUTPUT0", "INT32", [-1, 16]), ("OUTPUT1", "INT32", [-1, 16])]


def test_model_metadata_with_version_in_path(examples_server):
    r = examples_server.get("/v2/models/simple/versions/1")
    assert r.status_code == 200
    assert r.json()["versions"] == ["1"]


def test_model_metadata_string_model_uses_bytes_datatype(examples_server):
    m = examples_server.get("/v2/models/simple_string").json()
    assert {t["datatype"] for t in m["inputs"] + m["outputs"]} == {"BYTES"}
    assert m["inputs"][0]["shape"] == [-1, 16]


def test_model_metadata_variable_dim_model(examples_server):
    m = examples_server.get("/v2/models/vardim_fp32").json()
    assert [(t["name"], t["datatype"], t["shape"]) for t in m["inputs"]] == [
        ("INPUT0", "FP32", [-1, -1])]
    assert [(t["name"], t["datatype"], t["shape"]) for t in m["outputs"]] == [
        ("OUTPUT0", "FP32", [-1, -1])]


def test_model_metadata_platform_falls_back_to_backend(examples_server):
    # identity_fp32 has `backend: "identity"` and no platform (REFERENCE §1.2 row 5).
    assert examples_server.get("/v2/models/identity_fp32").json()["platform"] == "identity"


def test_model_metadata_nobatch_model_has_no_leading_minus_one(types_server):
    m = types_server.get("/v2/models/add_sub_int32_nobatch").json()
    assert [t["shape"] for t in m["inputs"]] == [[16], [16]]
    assert [t["shape"] for t in m["outputs"]] == [[16], [16]]


@pytest.mark.parametrize("t,kserve", [
    ("bool", "BOOL"), ("uint8", "UINT8"), ("uint16", "UINT16"), ("uint32", "UINT32"),
    ("uint64", "UINT64"), ("int8", "INT8"), ("int16", "INT16"), ("int32", "INT32"),
    ("int64", "INT64"), ("fp16", "FP16"), ("fp32", "FP32"), ("fp64", "FP64"),
    ("string", "BYTES")])
def test_model_metadata_datatype_names(types_server, t, kserve):
    m = types_server.get(f"/v2/models/identity_{t}").json()
    assert m["inputs"][0]["datatype"] == kserve
    assert m["outputs"][0]["datatype"] == kserve


def test_model_metadata_unknown_model_is_error(examples_server):
    assert_error(examples_server.get("/v2/models/no_such_model"), status=(400, 404))


def test_model_metadata_unknown_version_is_error(examples_server):
    r = examples_server.get("/v2/models/simple/versions/2")
    assert 400 <= r.status_code < 500
    assert_error(r)


# ------------------------------------------------------------------------------------ readiness


def test_model_ready_200(examples_server):
    assert examples_server.get("/v2/models/simple/ready").status_code == 200


def test_model_version_ready_200(examples_server):
    assert examples_server.get("/v2/models/simple/versions/1/ready").status_code == 200


def test_model_unknown_version_ready_400(examples_server):
    assert_not_ready(examples_server.get("/v2/models/simple/versions/2/ready"))


def test_unknown_model_ready_is_4xx(examples_server):
    r = examples_server.get("/v2/models/no_such_model/ready")
    assert 400 <= r.status_code < 500, r.status_code
    if r.content:
        assert "error" in json.loads(r.content)


# ------------------------------------------------------------------------------------ config

SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
MAP_FIELDS = {"parameters", "metric_tags", "cc_model_filenames", "priority_queue_policy"}


def _check_snake_case(node, path="config"):
    if isinstance(node, dict):
        for k, v in node.items():
            assert SNAKE.match(k), f"key {path}.{k} is not snake_case"
            if k not in MAP_FIELDS:  # map keys are user data, not field names
                _check_snake_case(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _check_snake_case(v, f"{path}[{i}]")


def test_config_json_basics(examples_server):
    r = examples_server.get("/v2/models/simple/config")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/json")
    c = r.json()
    assert c["name"] == "simple"
    assert c["platform"] == "onnxruntime_onnx"
    assert c["max_batch_size"] == 8
    assert [i["name"] for i in c["input"]] == ["INPUT0", "INPUT1"]
    assert [o["name"] for o in c["output"]] == ["OUTPUT0", "OUTPUT1"]


def test_config_keys_are_snake_case(examples_server):
    c = examples_server.get("/v2/models/simple/config").json()
    _check_snake_case(c)
    assert "max_batch_size" in c and "maxBatchSize" not in c


def test_config_dims_are_json_numbers_and_enums_are_names(examples_server):
    c = examples_server.get("/v2/models/simple/config").json()
    for t in c["input"] + c["output"]:
        assert t["dims"] == [16]
        assert all(type(d) is int for d in t["dims"]), t["dims"]
        assert t["data_type"] == "TYPE_INT32"


def test_config_instance_group_is_filled(examples_server):
    c = examples_server.get("/v2/models/simple/config").json()
    groups = c["instance_group"]
    assert isinstance(groups, list) and groups
    assert groups[0]["kind"] == "KIND_CPU"
    assert groups[0]["count"] >= 1
    assert groups[0]["name"] == "simple_0"  # Triton: "<model>_<index>"


def test_config_prints_primitive_fields_at_default(types_server):
    # REFERENCE §2.4: always_print_primitive_fields, so max_batch_size 0 and false flags appear.
    c = types_server.get("/v2/models/add_sub_int32_nobatch/config").json()
    assert c["max_batch_size"] == 0
    for t in c["input"]:
        assert t["is_shape_tensor"] is False
        assert t["allow_ragged_batch"] is False
        assert t["optional"] is False


def test_config_string_model_type_name(examples_server):
    c = examples_server.get("/v2/models/simple_string/config").json()
    assert {t["data_type"] for t in c["input"] + c["output"]} == {"TYPE_STRING"}


def test_config_with_version_in_path(examples_server):
    r = examples_server.get("/v2/models/simple/versions/1/config")
    assert r.status_code == 200
    assert r.json()["name"] == "simple"


def test_config_unknown_model_is_error(examples_server):
    assert_error(examples_server.get("/v2/models/no_such_model/config"), status=(400, 404))


# ------------------------------------------------------------------------------------ routing


@pytest.mark.parametrize("path", ["/v2/nothing_here", "/v3", "//", "/index.html",
                                  "/v2/models/simple/bogus", "/v2/health/alive",
                                  "/v2/health/live/"])
def test_unknown_path_is_404_with_error_body(examples_server, path):
    assert_error(examples_server.get(path), status=404)


def test_root_is_the_status_page(examples_server):
    # Nereid's own page (Triton: 404; ADR 0002 item 8); tests/client/test_status_page.py checks it.
    r = examples_server.get("/")
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"


def test_post_to_health_live_is_405(examples_server):
    assert_error(examples_server.post("/v2/health/live"), status=405)


def test_get_on_infer_is_405(examples_server):
    assert_error(examples_server.get("/v2/models/simple/infer"), status=405)


def test_delete_on_server_metadata_is_405(examples_server):
    assert_error(examples_server.request("DELETE", "/v2"), status=405)


# ------------------------------------------------------------------------------------ keep-alive


def test_keep_alive_many_requests_on_one_session(examples_server):
    paths = ["/v2/health/live", "/v2", "/v2/models/simple", "/v2/models/simple/config",
             "/v2/models/simple/ready"]
    for i in range(100):
        r = examples_server.get(paths[i % len(paths)])
        assert r.status_code == 200, (i, r.status_code)


def test_keep_alive_reuses_one_socket(examples_server):
    conn = http.client.HTTPConnection("127.0.0.1", examples_server.port, timeout=30)
    try:
        conn.connect()
        sock = conn.sock
        body = json.dumps({"inputs": [
            {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
            {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]})
        for i in range(30):
            if i % 3 == 2:
                conn.request("POST", "/v2/models/simple/infer", body=body,
                             headers={"Content-Type": "application/json"})
            else:
                conn.request("GET", "/v2/health/ready" if i % 3 else "/v2")
            r = conn.getresponse()
            r.read()
            assert r.status == 200
            assert not r.will_close, f"server closed the connection after request {i}"
            assert conn.sock is sock, "http.client had to reconnect"
    finally:
        conn.close()


def test_query_string_is_ignored_for_routing(examples_server):
    assert examples_server.get("/v2/health/live?verbose=1&x=%20").status_code == 200
    assert examples_server.get("/v2/models/simple?x=y").json()["name"] == "simple"


# ------------------------------------------------------------------------------------ HTTP/1.x


def read_responses(sock, n):
    """Reads n HTTP responses from a socket; returns [(status, headers, body)]."""
    f = sock.makefile("rb")
    return [read_http_response(f) for _ in range(n)]


def infer_request_bytes(extra_headers=""):
    body = json.dumps({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [2] * 16}]}).encode()
    head = (f"POST /v2/models/simple/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"{extra_headers}\r\n").encode()
    return head, body


def test_pipelined_requests_answered_in_order(examples_server):
    head, body = infer_request_bytes()
    get = b"GET /v2/models/simple HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", examples_server.port), timeout=30) as s:
        s.sendall(head + body + get + head + body)  # three requests in one write
        (s1, _, b1), (s2, _, b2), (s3, _, b3) = read_responses(s, 3)
    assert (s1, s2, s3) == (200, 200, 200)
    assert json.loads(b1)["outputs"][0]["data"] == [i + 2 for i in range(16)]
    assert json.loads(b2)["name"] == "simple"
    assert json.loads(b3)["model_name"] == "simple"


def test_expect_100_continue_gets_interim_response(examples_server):
    # curl sends "Expect: 100-continue" for bodies over 1 KiB and waits for the interim answer.
    head, body = infer_request_bytes("Expect: 100-continue\r\n")
    with socket.create_connection(("127.0.0.1", examples_server.port), timeout=10) as s:
        s.sendall(head)
        interim = b""
        while b"\r\n\r\n" not in interim:
            chunk = s.recv(1)
            assert chunk, "connection closed before the interim response"
            interim += chunk
        assert interim.startswith(b"HTTP/1.1 100"), interim
        s.sendall(body)
        [(status, _, data)] = read_responses(s, 1)
    assert status == 200, data


def test_connection_close_is_honoured(examples_server):
    with socket.create_connection(("127.0.0.1", examples_server.port), timeout=30) as s:
        s.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        [(status, _, _)] = read_responses(s, 1)
        assert status == 200
        assert s.recv(1) == b"", "server kept the connection open"


def test_http_1_0_request_gets_answer(examples_server):
    with socket.create_connection(("127.0.0.1", examples_server.port), timeout=30) as s:
        s.sendall(b"GET /v2/health/live HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.") and b" 200 " in data.split(b"\r\n", 1)[0]
