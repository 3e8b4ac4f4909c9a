"""Binary tensor data extension (seed 001): binary inputs/outputs, BYTES and BOOL encodings, the
seed's example request, raw binary requests, and compressed request/response bodies."""

import gzip
import json
import struct
import zlib

import numpy as np
import pytest

from helpers import (build_infer_request, check_simple, decode_bytes_elements, deflate_bytes,
                     encode_bytes_elements, gzip_bytes, np_dtype, output_by_name, parse_infer_response,
                     parse_response, simple_inputs, tensor)

A = (np.arange(32, dtype=np.int32).reshape(2, 16) - 7) * 3
B = np.arange(32, dtype=np.int32).reshape(2, 16)[:, ::-1].copy()


def header_length(resp_headers):
    for k, v in resp_headers.items():
        if k.lower() == "inference-header-content-length":
            return int(v)
    return None


# ------------------------------------------------------------------------------------ inputs/outputs


def test_binary_inputs_json_outputs(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B, binary=True))
    header = check_simple(r, A, B)
    _, _, binary = parse_response(r)
    assert binary == {"OUTPUT0": False, "OUTPUT1": False}
    assert output_by_name(header, "OUTPUT0")["shape"] == [2, 16]


def test_binary_output_requested_per_output(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B, binary=True),
                              outputs=[("OUTPUT0", True), ("OUTPUT1", None)])
    assert r.status_code == 200, r.content
    assert r.headers["Content-Type"].startswith("application/octet-stream")
    hl = header_length(r.headers)
    assert hl is not None and hl < len(r.content)
    header, values, binary = parse_infer_response(r.headers, r.content)
    assert binary == {"OUTPUT0": True, "OUTPUT1": False}
    out0 = output_by_name(header, "OUTPUT0")
    assert out0["parameters"]["binary_data_size"] == 2 * 16 * 4
    assert out0["datatype"] == "INT32" and out0["shape"] == [2, 16]
    np.testing.assert_array_equal(values["OUTPUT0"], A + B)
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def test_binary_data_output_parameter_makes_every_output_binary(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B), parameters={"binary_data_output": True})
    header, values, binary = parse_response(r)
    assert binary == {"OUTPUT0": True, "OUTPUT1": True}
    assert len(r.content) == header_length(r.headers) + 2 * 128
    np.testing.assert_array_equal(values["OUTPUT0"], A + B)
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def test_binary_data_output_is_only_the_default_for_unlisted_outputs(examples_server):
    # Triton: a listed output is binary only when its own binary_data says so; OUTPUT1, listed
    # without it, is JSON although the request sets binary_data_output.
    r = examples_server.infer("simple", simple_inputs(A, B), parameters={"binary_data_output": True},
                              outputs=[("OUTPUT0", True), ("OUTPUT1", None)])
    _, values, binary = parse_response(r)
    assert binary == {"OUTPUT0": True, "OUTPUT1": False}
    np.testing.assert_array_equal(values["OUTPUT0"], A + B)
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def test_binary_data_false_gives_json_outputs(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B, binary=True),
                              outputs=[("OUTPUT0", False), ("OUTPUT1", False)])
    _, values, binary = parse_response(r)
    assert binary == {"OUTPUT0": False, "OUTPUT1": False}
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def test_mixed_json_and_binary_inputs(examples_server):
    inputs = [tensor("INPUT0", "INT32", A), tensor("INPUT1", "INT32", B, binary=True)]
    r = examples_server.infer("simple", inputs, outputs=[("OUTPUT1", True), ("OUTPUT0", False)])
    _, values, binary = parse_response(r)
    assert binary == {"OUTPUT0": False, "OUTPUT1": True}
    np.testing.assert_array_equal(values["OUTPUT0"], A + B)
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def test_binary_blobs_follow_json_output_order(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B, binary=True),
                              outputs=[("OUTPUT1", True), ("OUTPUT0", True)])
    header, values, _ = parse_response(r)
    # parse_response reads blobs in JSON order; wrong order would swap sum and difference.
    np.testing.assert_array_equal(values["OUTPUT0"], A + B)
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)
    assert {o["name"] for o in header["outputs"]} == {"OUTPUT0", "OUTPUT1"}


def test_large_binary_request_and_response(examples_server):
    x = np.linspace(-1, 1, 1_000_000, dtype="<f4").reshape(1, -1)  # 4 MB each way
    r = examples_server.infer("vardim_fp32", [tensor("INPUT0", "FP32", x, binary=True)],
                              outputs=[("OUTPUT0", True)])
    _, values, _ = parse_response(r)
    np.testing.assert_array_equal(values["OUTPUT0"], x * 2)


# ------------------------------------------------------------------------------------ datatypes

NUMERIC = {
    "uint8": ("UINT8", [0, 1, 128, 255]), "uint16": ("UINT16", [0, 1, 40000, 65535]),
    "uint32": ("UINT32", [0, 7, 3000000000, 2**32 - 1]),
    "uint64": ("UINT64", [0, 2**32, 2**63, 2**64 - 1]),
    "int8": ("INT8", [-128, -1, 0, 127]), "int16": ("INT16", [-32768, -2, 3, 32767]),
    "int32": ("INT32", [-2**31, -1, 5, 2**31 - 1]),
    "int64": ("INT64", [-2**63, -1, 2**40, 2**63 - 1]),
    "fp16": ("FP16", [0.5, -1.25, 65504.0, -0.0]),
    "fp32": ("FP32", [0.1, -2.25, 3.4028234663852886e38, float("inf")]),
    "fp64": ("FP64", [0.1, -2.5, 5e-324, float("-inf")]),
}


@pytest.mark.parametrize("t", sorted(NUMERIC))
def test_binary_round_trip_is_bit_exact(types_server, t):
    datatype, vals = NUMERIC[t]
    x = np.array([vals, vals[::-1]], dtype=np_dtype(datatype))
    r = types_server.infer(f"identity_{t}", [tensor("INPUT0", datatype, x, binary=True)],
                           outputs=[("OUTPUT0", True)])
    header, values, binary = parse_response(r)
    assert binary == {"OUTPUT0": True}
    out = header["outputs"][0]
    assert out["datatype"] == datatype and out["shape"] == [2, 4]
    assert values["OUTPUT0"].tobytes() == x.tobytes()


def test_bool_binary_is_one_byte_per_element(types_server):
    raw = bytes([1, 0, 1, 1, 0])
    header = {"inputs": [{"name": "INPUT0", "datatype": "BOOL", "shape": [1, 5],
                          "parameters": {"binary_data_size": 5}}],
              "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
    js = json.dumps(header).encode()
    r = types_server.post("/v2/models/identity_bool/infer", data=js + raw,
                          headers={"Inference-Header-Content-Length": str(len(js))})
    assert r.status_code == 200, r.content
    hl = header_length(r.headers)
    out = json.loads(r.content[:hl])["outputs"][0]
    assert out["datatype"] == "BOOL" and out["parameters"]["binary_data_size"] == 5
    assert r.content[hl:] == raw


def test_bytes_binary_round_trip_with_length_prefixes(types_server):
    elems = [b"abc", b"", b"\x00\xff\x01 binary", "\u4e2d\u6587".encode(), b"x" * 300]
    r = types_server.infer("identity_string",
                           [tensor("INPUT0", "BYTES", elems, shape=[1, 5], binary=True)],
                           outputs=[("OUTPUT0", True)])
    assert r.status_code == 200, r.content
    hl = header_length(r.headers)
    out = json.loads(r.content[:hl])["outputs"][0]
    assert out["datatype"] == "BYTES" and out["shape"] == [1, 5]
    blob = r.content[hl:]
    assert out["parameters"]["binary_data_size"] == len(blob) == sum(4 + len(e) for e in elems)
    assert blob == encode_bytes_elements(elems)
    assert decode_bytes_elements(blob) == elems


def test_bytes_json_input_binary_output(types_server):
    elems = ["one", "two \u2713", ""]
    _, values, binary = parse_response(types_server.infer(
        "identity_string", [tensor("INPUT0", "BYTES", elems, shape=[1, 3])],
        parameters={"binary_data_output": True}))
    assert binary == {"OUTPUT0": True}
    assert values["OUTPUT0"] == [e.encode() for e in elems]


def test_bytes_binary_input_json_output(types_server):
    elems = [b"alpha", "\u00e9t\u00e9".encode()]
    _, values, binary = parse_response(types_server.infer(
        "identity_string", [tensor("INPUT0", "BYTES", elems, shape=[1, 2], binary=True)]))
    assert binary == {"OUTPUT0": False}
    assert values["OUTPUT0"] == ["alpha", "\u00e9t\u00e9"]


# ------------------------------------------------------------------------------------ seed 001


def seed_request(model, name, datatype, shape, blob, out_name):
    """The seed's request layout: JSON header, then the raw tensor bytes, sent with exactly the
    seed's headers (Content-Type octet-stream, Inference-Header-Content-Length, Content-Length)."""
    header = {"model_name": model,
              "inputs": [{"name": name, "shape": shape, "datatype": datatype,
                          "parameters": {"binary_data_size": len(blob)}}],
              "outputs": [{"name": out_name, "parameters": {"binary_data": True}}]}
    js = json.dumps(header, indent=1).encode()
    return js + blob, {"Content-Type": "application/octet-stream",
                       "Inference-Header-Content-Length": str(len(js))}


def test_seed_example_uint32_2x2_binary(types_server):
    x = np.array([[1, 2], [2**32 - 1, 4]], dtype="<u4")
    body, headers = seed_request("identity_uint32", "INPUT0", "UINT32", [2, 2], x.tobytes(),
                                 "OUTPUT0")
    status, rh, data = types_server.raw("POST", "/v2/models/identity_uint32/infer", body, headers)
    assert status == 200, data
    assert rh["content-type"].startswith("application/octet-stream")
    assert int(rh["content-length"]) == len(data)
    hl = int(rh["inference-header-content-length"])
    out = json.loads(data[:hl])["outputs"][0]
    assert (out["name"], out["shape"], out["datatype"]) == ("OUTPUT0", [2, 2], "UINT32")
    assert out["parameters"]["binary_data_size"] == 16
    assert data[hl:] == x.tobytes()


def test_seed_example_bool_3_binary(types_server):
    raw = bytes([1, 0, 1])
    body, headers = seed_request("identity_bool", "INPUT0", "BOOL", [1, 3], raw, "OUTPUT0")
    status, rh, data = types_server.raw("POST", "/v2/models/identity_bool/infer", body, headers)
    assert status == 200, data
    hl = int(rh["inference-header-content-length"])
    out = json.loads(data[:hl])["outputs"][0]
    assert (out["shape"], out["datatype"]) == ([1, 3], "BOOL")
    assert out["parameters"]["binary_data_size"] == 3
    assert data[hl:] == raw


def test_seed_layout_two_binary_inputs_back_to_back(features_server):
    # identity_multi: INT32 [-1] + STRING [-1], no batching. Two binary inputs follow the JSON in
    # input order, like the seed's 16 + 3 bytes.
    ints = np.array([10, -20, 30, 2**31 - 1], dtype="<i4")
    strs = [b"a", b"", b"xyz"]
    inputs = [tensor("INPUT0", "INT32", ints, binary=True),
              tensor("INPUT1", "BYTES", strs, shape=[3], binary=True)]
    r = features_server.infer("identity_multi", inputs,
                              outputs=[("OUTPUT0", True), ("OUTPUT1", True)])
    header, values, _ = parse_response(r)
    assert output_by_name(header, "OUTPUT0")["shape"] == [4]
    assert output_by_name(header, "OUTPUT1")["shape"] == [3]
    assert values["OUTPUT0"].tobytes() == ints.tobytes()
    assert values["OUTPUT1"] == strs


# ------------------------------------------------------------------------------------ raw binary

RAW_HEADERS = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": "0"}


@pytest.mark.parametrize("server_name", ["types_server", "examples_server"])
def test_raw_binary_request_fp32(request, server_name):
    server = request.getfixturevalue(server_name)  # ONNX identity and identity backend
    x = np.array([1.5, -2.0, 0.0, 1e30, -7.25], dtype="<f4")
    status, rh, data = server.raw("POST", "/v2/models/identity_fp32/infer", x.tobytes(),
                                  RAW_HEADERS)
    assert status == 200, data
    header, values, binary = parse_infer_response(rh, data)
    assert binary == {"OUTPUT0": True}
    out = header["outputs"][0]
    assert (out["shape"], out["datatype"]) == ([1, 5], "FP32")
    assert out["parameters"]["binary_data_size"] == 20
    assert values["OUTPUT0"].tobytes() == x.tobytes()


def test_raw_binary_request_bytes_needs_input_shape_1(types_server):
    # Seed 001: for BYTES the model input shape must be [1]; identity_string has dims [-1], so
    # Triton rejects it ("For BYTE datatype raw input ... must have input shape [1]").
    status, rh, data = types_server.raw("POST", "/v2/models/identity_string/infer",
                                        b"raw string", RAW_HEADERS)
    assert status == 400, data
    assert ("For BYTE datatype raw input 'INPUT0', the model must have input shape [1]"
            in json.loads(data)["error"])


def test_chunked_request_body(types_server):
    x = np.arange(8, dtype="<f4")
    blob = x.tobytes()
    chunked = b"%X\r\n%s\r\n0\r\n\r\n" % (len(blob), blob)
    status, rh, data = types_server.raw(
        "POST", "/v2/models/identity_fp32/infer", chunked,
        dict(RAW_HEADERS, **{"Transfer-Encoding": "chunked"}))
    assert status == 200, data
    assert data[int(rh["inference-header-content-length"]):] == blob


def test_chunked_json_request_in_many_chunks(examples_server):
    body, headers = build_infer_request(simple_inputs(A, B))
    chunks = [body[i:i + 7] for i in range(0, len(body), 7)]
    check_simple(examples_server.post("/v2/models/simple/infer", data=iter(chunks),
                                      headers=headers), A, B)


# ------------------------------------------------------------------------------------ compression


@pytest.mark.parametrize("encoding,compress", [("gzip", gzip_bytes), ("deflate", deflate_bytes)])
def test_compressed_json_request_body(examples_server, encoding, compress):
    body, headers = build_infer_request(simple_inputs(A, B))
    headers["Content-Encoding"] = encoding
    check_simple(examples_server.post("/v2/models/simple/infer", data=compress(body),
                                      headers=headers), A, B)


def test_identity_content_encoding_is_plain(examples_server):
    body, headers = build_infer_request(simple_inputs(A, B))
    headers["Content-Encoding"] = "identity"
    check_simple(examples_server.post("/v2/models/simple/infer", data=body, headers=headers), A, B)


def test_gzip_request_with_binary_inputs(examples_server):
    # Inference-Header-Content-Length counts the decompressed JSON header.
    body, headers = build_infer_request(simple_inputs(A, B, binary=True))
    headers["Content-Encoding"] = "gzip"
    check_simple(examples_server.post("/v2/models/simple/infer", data=gzip_bytes(body),
                                      headers=headers), A, B)


@pytest.mark.parametrize("encoding,decompress", [("gzip", gzip.decompress),
                                                 ("deflate", zlib.decompress)])
def test_compressed_json_response(examples_server, encoding, decompress):
    body, headers = build_infer_request(simple_inputs(A, B))
    headers["Accept-Encoding"] = encoding
    status, rh, data = examples_server.raw("POST", "/v2/models/simple/infer", body, headers)
    assert status == 200, data
    assert rh.get("content-encoding") == encoding
    plain = decompress(data)
    _, values, _ = parse_infer_response(rh, plain)
    np.testing.assert_array_equal(values["OUTPUT0"], A + B)


def test_gzip_response_with_binary_outputs(examples_server):
    body, headers = build_infer_request(simple_inputs(A, B), parameters={"binary_data_output": True})
    headers["Accept-Encoding"] = "gzip"
    status, rh, data = examples_server.raw("POST", "/v2/models/simple/infer", body, headers)
    assert status == 200, data
    assert rh.get("content-encoding") == "gzip"
    plain = gzip.decompress(data)
    _, values, binary = parse_infer_response(rh, plain)  # header length is of the plain body
    assert binary == {"OUTPUT0": True, "OUTPUT1": True}
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def test_no_accept_encoding_means_plain_response(examples_server):
    body, headers = build_infer_request(simple_inputs(A, B))
    status, rh, data = examples_server.raw("POST", "/v2/models/simple/infer", body, headers)
    assert status == 200
    assert "content-encoding" not in rh or rh["content-encoding"] == "identity"
    json.loads(data)


def test_raw_binary_fp32_little_endian_layout(types_server):
    # The bytes on the wire are little-endian IEEE floats, independent of numpy: 1.0f.
    status, rh, data = types_server.raw("POST", "/v2/models/identity_fp32/infer",
                                        struct.pack("<ff", 1.0, -2.0), RAW_HEADERS)
    assert status == 200, data
    hl = int(rh["inference-header-content-length"])
    assert data[hl:] == b"\x00\x00\x80\x3f\x00\x00\x00\xc0"
