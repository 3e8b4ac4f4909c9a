"""Inference with JSON tensors: `simple`, every datatype, strings, variable dims, batching."""

import json

import numpy as np
import pytest

from helpers import (assert_error, check_simple, output_by_name, parse_response, simple_inputs,
                     tensor)

A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 3, dtype=np.int32)


def post_json(server, model, body, version=None):
    path = f"/v2/models/{model}/infer" if version is None else \
        f"/v2/models/{model}/versions/{version}/infer"
    return server.post(path, data=json.dumps(body), headers={"Content-Type": "application/json"})


# ------------------------------------------------------------------------------------ simple


def test_simple_add_sub_flat_data(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B))
    header = check_simple(r, A, B)
    assert r.headers["Content-Type"].startswith("application/json")
    assert header["model_name"] == "simple"
    for name in ("OUTPUT0", "OUTPUT1"):
        out = output_by_name(header, name)
        assert out["datatype"] == "INT32"
        assert out["shape"] == [1, 16]


def test_simple_add_sub_nested_data(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B), nested=True)
    check_simple(r, A, B)


def test_simple_batch_of_two_nested(examples_server):
    a = np.arange(32, dtype=np.int32).reshape(2, 16) - 10
    b = np.arange(32, dtype=np.int32).reshape(2, 16)[::-1].copy()
    header = check_simple(examples_server.infer("simple", simple_inputs(a, b), nested=True), a, b)
    assert output_by_name(header, "OUTPUT0")["shape"] == [2, 16]


def test_model_version_is_string_one(examples_server):
    header, _, _ = parse_response(examples_server.infer("simple", simple_inputs(A, B)))
    assert header["model_version"] == "1"


def test_request_id_is_echoed(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B), request_id="my-request-42")
    header, _, _ = parse_response(r)
    assert header["id"] == "my-request-42"


def test_explicit_version_in_path(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B), version=1)
    header = check_simple(r, A, B)
    assert header["model_version"] == "1"


def test_requested_output_subset(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B), outputs=["OUTPUT1"])
    header, values, _ = parse_response(r)
    assert [o["name"] for o in header["outputs"]] == ["OUTPUT1"]
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def test_requested_outputs_in_reverse_order_both_returned(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B), outputs=["OUTPUT1", "OUTPUT0"])
    header, values, _ = parse_response(r)
    assert sorted(o["name"] for o in header["outputs"]) == ["OUTPUT0", "OUTPUT1"]
    np.testing.assert_array_equal(values["OUTPUT0"], A + B)
    np.testing.assert_array_equal(values["OUTPUT1"], A - B)


def test_batch_of_eight_is_accepted(examples_server):
    a = np.arange(8 * 16, dtype=np.int32).reshape(8, 16)
    b = np.ones((8, 16), dtype=np.int32) * 7
    header = check_simple(examples_server.infer("simple", simple_inputs(a, b)), a, b)
    assert output_by_name(header, "OUTPUT1")["shape"] == [8, 16]


def test_batch_of_nine_is_rejected(examples_server):
    a = np.zeros((9, 16), dtype=np.int32)
    assert_error(examples_server.infer("simple", simple_inputs(a, a)), status=400)


def test_unknown_request_parameters_are_accepted(examples_server):
    r = examples_server.infer("simple", simple_inputs(A, B), parameters={"my_key": "v", "n": 3})
    check_simple(r, A, B)


def test_json_integers_accepted_for_float_input(examples_server):
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 3], "data": [1, -2, 3]}]}
    _, values, _ = parse_response(post_json(examples_server, "vardim_fp32", body))
    np.testing.assert_array_equal(values["OUTPUT0"], np.array([[2, -4, 6]], np.float32))


# ------------------------------------------------------------------------------------ datatypes

ROUND_TRIP = {
    "bool": ("BOOL", [True, False, True, True]),
    "uint8": ("UINT8", [0, 1, 200, 255]),
    "uint16": ("UINT16", [0, 1, 40000, 65535]),
    "uint32": ("UINT32", [0, 1, 3000000000, 2**32 - 1]),
    "uint64": ("UINT64", [0, 1, 2**63, 2**64 - 1]),
    "int8": ("INT8", [-128, -1, 0, 127]),
    "int16": ("INT16", [-32768, -1, 0, 32767]),
    "int32": ("INT32", [-2**31, -1, 0, 2**31 - 1]),
    "int64": ("INT64", [-2**63, -1, 2**53 + 1, 2**63 - 1]),
    "fp16": ("FP16", [0.5, -1.25, 65504.0, 0.0999755859375]),
    "fp32": ("FP32", [1.5, -2.25, 0.1, 3.4028234663852886e38]),
    "fp64": ("FP64", [0.1, -2.5, 1.7976931348623157e308, 2.2250738585072014e-308]),
    "string": ("BYTES", ["hello", "", "unicode \u2713 \u00e9 \u4e2d\u6587", "with \"quotes\"\n"]),
}
TOLERANCE = {"FP16": 1e-3, "FP32": 1e-6, "FP64": 1e-12}


@pytest.mark.parametrize("t", sorted(ROUND_TRIP))
def test_json_round_trip_every_datatype(types_server, t):
    datatype, values = ROUND_TRIP[t]
    body = {"inputs": [{"name": "INPUT0", "datatype": datatype, "shape": [1, len(values)],
                        "data": values}]}
    r = post_json(types_server, f"identity_{t}", body)
    assert r.status_code == 200, r.content
    out = r.json()["outputs"][0]
    assert out["name"] == "OUTPUT0"
    assert out["datatype"] == datatype
    assert out["shape"] == [1, len(values)]
    data = out["data"]
    assert len(data) == len(values)
    if datatype == "BOOL":
        assert all(type(v) is bool for v in data), data  # JSON true/false, not 0/1
        assert data == values
    elif datatype == "BYTES":
        assert data == values
    elif datatype in TOLERANCE:
        np.testing.assert_allclose(np.array(data, np.float64), np.array(values, np.float64),
                                   rtol=TOLERANCE[datatype], atol=0)
    else:
        assert all(type(v) is int for v in data), data
        assert data == values  # Python ints: exact, including 2**64-1 and -2**63


def test_json_round_trip_batch_of_two_nested(types_server):
    body = {"inputs": [{"name": "INPUT0", "datatype": "INT64", "shape": [2, 3],
                        "data": [[-1, -2, -3], [4, 5, 2**40]]}]}
    r = post_json(types_server, "identity_int64", body)
    assert r.status_code == 200, r.content
    out = r.json()["outputs"][0]
    assert out["shape"] == [2, 3]
    assert [int(v) for v in np.array(out["data"]).flatten()] == [-1, -2, -3, 4, 5, 2**40]


def test_json_data_nested_deeper_than_shape_is_accepted(types_server):
    # Triton only counts elements: [1, 1] with data nested 50 deep works (L0_http test).
    data = "hello"
    for _ in range(50):
        data = [data]
    body = {"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1, 1], "data": data}]}
    r = post_json(types_server, "identity_string", body)
    assert r.status_code == 200, r.content
    assert r.json()["outputs"][0]["data"] == ["hello"]


def test_json_data_nested_120_deep_is_rejected(types_server):
    data = 123
    for _ in range(120):
        data = [data]
    body = {"inputs": [{"name": "INPUT0", "datatype": "INT64", "shape": [1, 1], "data": data}]}
    assert_error(post_json(types_server, "identity_int64", body), status=400)


def test_json_fp32_values_survive_float32_rounding(types_server):
    # Output numbers must round-trip the float32 value exactly (no lossy %g printing).
    values = [3.4028234663852886e38, 1.401298464324817e-45, 0.1, 16777217.0]
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": values}]}
    r = post_json(types_server, "identity_fp32", body)
    assert r.status_code == 200, r.content
    got = np.array(r.json()["outputs"][0]["data"], dtype=np.float64).astype(np.float32)
    np.testing.assert_array_equal(got, np.array(values, dtype=np.float32))


def test_identity_backend_json(examples_server):
    x = np.array([[1.5, -2.0, 3.25]], np.float32)
    _, values, _ = parse_response(examples_server.infer(
        "identity_fp32", [tensor("INPUT0", "FP32", x)]))
    np.testing.assert_array_equal(values["OUTPUT0"], x)


# ------------------------------------------------------------------------------------ strings


def test_simple_string_sums_decimal_strings(examples_server):
    a = [str(i) for i in range(16)]
    b = [str(-3 * i) for i in range(16)]
    inputs = [tensor("INPUT0", "BYTES", a, shape=[1, 16]),
              tensor("INPUT1", "BYTES", b, shape=[1, 16])]
    header, values, _ = parse_response(examples_server.infer("simple_string", inputs))
    assert output_by_name(header, "OUTPUT0")["datatype"] == "BYTES"
    assert output_by_name(header, "OUTPUT0")["shape"] == [1, 16]
    assert [int(v) for v in values["OUTPUT0"]] == [i - 3 * i for i in range(16)]
    assert [int(v) for v in values["OUTPUT1"]] == [i + 3 * i for i in range(16)]


def test_simple_string_batch_of_two(examples_server):
    a = [str(i) for i in range(32)]
    b = ["100"] * 32
    inputs = [tensor("INPUT0", "BYTES", a, shape=[2, 16]),
              tensor("INPUT1", "BYTES", b, shape=[2, 16])]
    header, values, _ = parse_response(examples_server.infer("simple_string", inputs))
    assert output_by_name(header, "OUTPUT0")["shape"] == [2, 16]
    assert [int(v) for v in values["OUTPUT0"]] == [i + 100 for i in range(32)]


# ------------------------------------------------------------------------------------ shapes


@pytest.mark.parametrize("n", [1, 5, 100, 1000])
def test_vardim_fp32_any_length(examples_server, n):
    x = (np.arange(n, dtype=np.float32) - n / 2).reshape(1, n) / 4
    header, values, _ = parse_response(examples_server.infer(
        "vardim_fp32", [tensor("INPUT0", "FP32", x)]))
    assert output_by_name(header, "OUTPUT0")["shape"] == [1, n]
    np.testing.assert_array_equal(values["OUTPUT0"], x * 2)


def test_vardim_fp32_batch_of_three(examples_server):
    x = np.arange(21, dtype=np.float32).reshape(3, 7)
    _, values, _ = parse_response(examples_server.infer(
        "vardim_fp32", [tensor("INPUT0", "FP32", x)]))
    np.testing.assert_array_equal(values["OUTPUT0"], x * 2)


def test_mlp_fp32_returns_16_finite_values(examples_server):
    x = np.linspace(-1, 1, 256, dtype=np.float32).reshape(1, 256)
    header, values, _ = parse_response(examples_server.infer(
        "mlp_fp32", [tensor("INPUT0", "FP32", x)]))
    assert output_by_name(header, "OUTPUT0")["shape"] == [1, 16]
    assert np.all(np.isfinite(values["OUTPUT0"]))


def test_nobatch_model_with_shape_16(types_server):
    a = np.arange(16, dtype=np.int32)
    b = np.arange(16, dtype=np.int32) * 2
    r = types_server.infer("add_sub_int32_nobatch", simple_inputs(a, b))
    header = check_simple(r, a, b)
    assert output_by_name(header, "OUTPUT0")["shape"] == [16]


def test_nobatch_model_rejects_batch_dimension(types_server):
    a = np.zeros((1, 16), dtype=np.int32)
    assert_error(types_server.infer("add_sub_int32_nobatch", simple_inputs(a, a)), status=400)
