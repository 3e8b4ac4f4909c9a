"""Malformed and hostile inference requests: each gets an error status with a JSON
{"error": "..."} body, and the server keeps serving afterwards."""

import gzip
import json
import socket
import struct

import numpy as np
import pytest

from helpers import (Server, assert_4xx_error, assert_error, build_infer_request, check_simple,
                     read_http_response, repo, simple_inputs)

SMALL_LIMIT = 4096
A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.ones((1, 16), dtype=np.int32)
GOOD = json.dumps({"inputs": [
    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": A.flatten().tolist()},
    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": B.flatten().tolist()}]})
JSON_HEADERS = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def small_server():
    s = Server([repo("examples")], [f"--http-max-input-size={SMALL_LIMIT}"], name="small").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


@pytest.fixture(autouse=True)
def server_survives(examples_server):
    yield
    assert examples_server.alive(), "the server died during this test"


def post(server, body, headers=None, model="simple"):
    return server.post(f"/v2/models/{model}/infer", data=body,
                       headers=JSON_HEADERS if headers is None else headers)


def simple_body(**override):
    """GOOD as a dict with the given top-level fields replaced."""
    d = json.loads(GOOD)
    d.update(override)
    return d


def inputs_with(i, **fields):
    """GOOD as JSON text with fields of input i replaced."""
    d = json.loads(GOOD)
    d["inputs"][i].update(fields)
    return json.dumps(d)


# ------------------------------------------------------------------------------------ JSON


def test_malformed_json(examples_server):
    assert_error(post(examples_server, b'{inputs: [}'), status=400)


def test_truncated_json(examples_server):
    assert_error(post(examples_server, GOOD[: len(GOOD) // 2]), status=400)


def test_body_is_json_array(examples_server):
    assert_error(post(examples_server, b'[{"inputs": []}]'), status=400)


def test_body_is_json_string(examples_server):
    assert_error(post(examples_server, b'"inputs"'), status=400)


def test_json_nested_101_deep(examples_server):
    deep = "[" * 101 + "]" * 101
    body = GOOD[:-1] + ', "parameters": {"a": ' + deep + "}}"
    assert_error(post(examples_server, body), status=400)


def test_json_nested_100000_deep_does_not_crash(examples_server):
    body = '{"inputs": ' + "[" * 100000 + "]" * 100000 + "}"
    assert_error(post(examples_server, body), status=400)


def test_empty_body(examples_server):
    assert_error(post(examples_server, b""), status=400)


def test_missing_inputs_field(examples_server):
    assert_error(post(examples_server, b'{"outputs": []}'), status=400)


def test_inputs_not_an_array(examples_server):
    assert_error(post(examples_server, json.dumps(simple_body(inputs={"INPUT0": 1}))), status=400)


def test_input_without_datatype(examples_server):
    d = json.loads(GOOD)
    del d["inputs"][0]["datatype"]
    assert_error(post(examples_server, json.dumps(d)), status=400)


def test_data_element_of_wrong_json_type(examples_server):
    assert_error(post(examples_server, inputs_with(0, data=["x"] * 16)), status=400)


# ------------------------------------------------------------------------------------ tensors


def test_unknown_datatype_name(examples_server):
    assert_error(post(examples_server, inputs_with(0, datatype="INT33")), status=400)


def test_data_count_not_matching_shape(examples_server):
    r = post(examples_server, inputs_with(0, data=list(range(15))))
    assert_error(r, status=400, contains="Shape does not match")


def test_data_count_more_than_shape(examples_server):
    r = post(examples_server, inputs_with(1, data=[1] * 17))
    assert_error(r, status=400, contains="Shape does not match")


def test_wrong_datatype_for_model(examples_server):
    r = post(examples_server, inputs_with(0, datatype="FP32", data=[0.5] * 16))
    assert_error(r, status=400, contains="INT32")


def test_shape_with_negative_dim(examples_server):
    # Triton answers 500 here (its JSON reader wants an unsigned integer); any error will do.
    assert_error(post(examples_server, inputs_with(0, shape=[-1, 16])))


def test_shape_wrong_inner_dim(examples_server):
    assert_error(post(examples_server, inputs_with(0, shape=[2, 8])), status=400)


def test_shape_whose_byte_size_overflows(examples_server):
    # 2**62 FP32 elements are 2**64 bytes, which wraps to 0 in unchecked 64-bit arithmetic and
    # would then "match" an empty binary tensor.
    d = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 2**62],
                     "parameters": {"binary_data_size": 0}}]}
    js = json.dumps(d).encode()
    r = post(examples_server, js, {"Inference-Header-Content-Length": str(len(js))},
             model="vardim_fp32")
    assert_error(r, status=400)


def test_shape_element_count_overflows_json(examples_server):
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32",
                                   "shape": [1, 2**32, 2**32], "data": []}]})
    assert_error(post(examples_server, body, model="vardim_fp32"), status=400)


def test_batch_size_zero(examples_server):
    d = json.loads(GOOD)
    for i in (0, 1):
        d["inputs"][i].update(shape=[0, 16], data=[])
    assert_error(post(examples_server, json.dumps(d)), status=400)


def test_missing_input(examples_server):
    d = json.loads(GOOD)
    d["inputs"] = d["inputs"][:1]
    assert_error(post(examples_server, json.dumps(d)), status=400)


def test_extra_unknown_input(examples_server):
    d = json.loads(GOOD)
    d["inputs"].append(dict(d["inputs"][0], name="INPUT2"))
    assert_error(post(examples_server, json.dumps(d)), status=400)


def test_duplicate_input_names(examples_server):
    d = json.loads(GOOD)
    d["inputs"][1]["name"] = "INPUT0"
    assert_error(post(examples_server, json.dumps(d)), status=400)


def test_duplicate_output_names(examples_server):
    body = json.dumps(simple_body(outputs=[{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]))
    assert_error(post(examples_server, body), status=400,
                 contains="output 'OUTPUT0' already exists in request")


def test_unknown_output_name(examples_server):
    body = json.dumps(simple_body(outputs=[{"name": "OUTPUT7"}]))
    assert_error(post(examples_server, body), status=400)


# ------------------------------------------------------------------------------------ binary


def binary_body(sizes, blob):
    """GOOD with both inputs switched to binary sizes `sizes`, followed by `blob`."""
    d = json.loads(GOOD)
    for i, n in enumerate(sizes):
        del d["inputs"][i]["data"]
        d["inputs"][i]["parameters"] = {"binary_data_size": n}
    js = json.dumps(d).encode()
    return js, js + blob


def test_binary_size_not_matching_shape(examples_server):
    js, body = binary_body([60, 64], b"\x01" * 124)
    r = post(examples_server, body, {"Inference-Header-Content-Length": str(len(js))})
    assert_error(r, status=400)


def test_binary_sizes_beyond_body(examples_server):
    js, body = binary_body([64, 64], b"\x01" * 100)
    r = post(examples_server, body, {"Inference-Header-Content-Length": str(len(js))})
    assert_error(r, status=400)


def test_extra_bytes_after_binary_inputs(examples_server):
    # Triton: "unexpected additional input data for model 'simple'".
    js, body = binary_body([64, 64], b"\x01" * 130)
    r = post(examples_server, body, {"Inference-Header-Content-Length": str(len(js))})
    assert_error(r, status=400)


def test_negative_binary_data_size(examples_server):
    js, body = binary_body([-64, 64], b"\x01" * 64)
    r = post(examples_server, body, {"Inference-Header-Content-Length": str(len(js))})
    assert_error(r, status=400)


def test_binary_data_size_not_an_integer(examples_server):
    js, body = binary_body(["64", 64], b"\x01" * 128)
    r = post(examples_server, body, {"Inference-Header-Content-Length": str(len(js))})
    assert_error(r, status=400)


def test_binary_data_without_header_length(examples_server):
    js, body = binary_body([64, 64], b"\x01" * 128)
    assert_error(post(examples_server, body), status=400)


def test_header_length_larger_than_body(examples_server):
    body = GOOD.encode()
    r = post(examples_server, body, {"Inference-Header-Content-Length": str(len(body) + 10)})
    assert_error(r, status=400)


def test_header_length_negative(examples_server):
    r = post(examples_server, GOOD, {"Inference-Header-Content-Length": "-5"})
    assert_error(r, status=400)


def test_header_length_not_a_number(examples_server):
    r = post(examples_server, GOOD, {"Inference-Header-Content-Length": "abc"})
    assert_error(r, status=400)


def test_header_length_huge_number(examples_server):
    r = post(examples_server, GOOD, {"Inference-Header-Content-Length": "99999999999999999999999"})
    assert_error(r, status=400)


def test_bytes_length_prefix_past_the_end(examples_server):
    bad = struct.pack("<I", 1000) + b"abc"
    d = {"inputs": [
        {"name": "INPUT0", "datatype": "BYTES", "shape": [1, 16],
         "parameters": {"binary_data_size": len(bad)}},
        {"name": "INPUT1", "datatype": "BYTES", "shape": [1, 16], "data": ["1"] * 16}]}
    js = json.dumps(d).encode()
    r = post(examples_server, js + bad, {"Inference-Header-Content-Length": str(len(js))},
             model="simple_string")
    assert_error(r, status=400)


def test_raw_binary_to_two_input_model(examples_server):
    r = post(examples_server, A.tobytes() + B.tobytes(),
             {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": "0"})
    assert_error(r, status=400)


def test_raw_binary_with_wrong_element_size(examples_server):
    # 7 bytes cannot be a whole number of FP32 elements.
    r = post(examples_server, b"\x00" * 7, {"Inference-Header-Content-Length": "0"},
             model="identity_fp32")
    assert_error(r, status=400)


# ------------------------------------------------------------------------------------ size limits


def test_body_over_max_input_size(small_server):
    pad = "x" * (2 * SMALL_LIMIT)
    body = GOOD[:-1] + ', "parameters": {"pad": "' + pad + '"}}'
    assert_error(post(small_server, body), 400,
                 f"Request JSON size of {len(body)} bytes exceeds the maximum allowed value of "
                 f"{SMALL_LIMIT} bytes. Use --http-max-input-size to increase the limit.")
    assert small_server.alive()


def test_gzip_body_inflating_past_max_input_size(small_server):
    pad = " " * (200 * SMALL_LIMIT)
    small = gzip.compress((GOOD[:-1] + ', "parameters": {"pad": "' + pad + '"}}').encode())
    assert len(small) < SMALL_LIMIT
    r = post(small_server, small, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert_error(r, 400, f"Decompressed request size exceeds the maximum allowed value of "
                 f"{SMALL_LIMIT} bytes. Use --http-max-input-size to increase the limit.")
    assert small_server.alive()


def test_small_limit_server_still_serves_small_requests(small_server):
    check_simple(post(small_server, GOOD), A, B)
    body, headers = build_infer_request(simple_inputs(A, B))
    headers["Content-Encoding"] = "gzip"
    check_simple(post(small_server, gzip.compress(body), headers), A, B)


# ------------------------------------------------------------------------------------ encodings


def test_corrupt_gzip(examples_server):
    r = post(examples_server, b"\x1f\x8b\x08\x00garbage that is not deflate",
             {"Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert_error(r, status=400)


def test_truncated_gzip(examples_server):
    z = gzip.compress(GOOD.encode())
    r = post(examples_server, z[: len(z) // 2],
             {"Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert_error(r, status=400)


def test_unknown_content_encoding(examples_server):
    # Triton answers 415 Unsupported Media Type and lists what it accepts in Accept-Encoding.
    r = post(examples_server, GOOD, {"Content-Type": "application/json", "Content-Encoding": "br"})
    assert_error(r, status=415)
    accepted = r.headers.get("Accept-Encoding", "")
    assert "gzip" in accepted and "deflate" in accepted, r.headers


# ------------------------------------------------------------------------------------ routing


def test_unknown_model(examples_server):
    r = post(examples_server, GOOD, model="no_such_model")
    assert_error(r, status=404, contains="unknown model")


def test_unknown_version(examples_server):
    r = examples_server.post("/v2/models/simple/versions/9/infer", data=GOOD, headers=JSON_HEADERS)
    assert_4xx_error(r)


def test_non_numeric_version_in_path(examples_server):
    r = examples_server.post("/v2/models/simple/versions/abc/infer", data=GOOD,
                             headers=JSON_HEADERS)
    assert_error(r, status=(400, 404))


def test_version_out_of_int64_range(examples_server):
    r = examples_server.post("/v2/models/simple/versions/99999999999999999999999/infer",
                             data=GOOD, headers=JSON_HEADERS)
    assert_error(r, status=(400, 404))


# ------------------------------------------------------------------------------------ HTTP framing


def raw_exchange(server, payload):
    """Sends raw bytes on a fresh connection and reads one response."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(payload)
        status, headers, body = read_http_response(s.makefile("rb"))
    return status, body


def assert_raw_error(status, body):
    assert 400 <= status < 500, (status, body)
    assert isinstance(json.loads(body).get("error"), str), body


def test_request_line_garbage(examples_server):
    assert_raw_error(*raw_exchange(examples_server, b"GARBAGE\r\n\r\n"))


def test_very_long_url(examples_server):
    payload = b"GET /v2/models/" + b"a" * 200000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    assert_raw_error(*raw_exchange(examples_server, payload))


def test_very_many_headers(examples_server):
    headers = b"".join(b"X-Filler-%d: value\r\n" % i for i in range(20000))
    assert_raw_error(*raw_exchange(examples_server, b"GET /v2 HTTP/1.1\r\n" + headers + b"\r\n"))


@pytest.mark.parametrize("value", [b"-1", b"99999999999999999999", b"12abc"])
def test_bad_content_length(examples_server, value):
    payload = b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: " + value + \
        b"\r\n\r\n"
    assert_raw_error(*raw_exchange(examples_server, payload))


def test_bad_chunk_size(examples_server):
    payload = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n"
               b"Transfer-Encoding: chunked\r\n\r\nZZ\r\n")
    assert_raw_error(*raw_exchange(examples_server, payload))


# ------------------------------------------------------------------------------------ afterwards


def test_zz_server_still_healthy_and_serving(examples_server):
    # Runs last in this module (pytest keeps file order).
    assert examples_server.get("/v2/health/live").status_code == 200
    assert examples_server.get("/v2/health/ready").status_code == 200
    check_simple(post(examples_server, GOOD), A, B)
