"""Hardening of per-request parsing (issue 22 items 2 and 7), over real sockets: caps on
parameters, inputs and outputs with the same text over HTTP (400) and gRPC (INVALID_ARGUMENT);
floating-point JSON values out of range; FP16 wrong-type wording; a repeated
Inference-Header-Content-Length; negative gRPC sequence IDs; bounded echo of client text in errors;
BOOL bytes other than 0/1; the per-model instance cap. docs/security.md lists them.
"""

import json
import socket

import grpc
import numpy as np
import pytest

from grpc_helpers import infer_request, pbs, serve_grpc, stubs  # noqa: F401
from helpers import assert_error, read_http_response, repo
from mm_helpers import copy_model, load, mode_server

MAX_PARAMS = 1024
MAX_TENSORS = 4096
TOO_MANY_PARAMS = "inference request exceeds the limit of 1024 parameters"
TOO_MANY_INPUT_PARAMS = "inference request exceeds the limit of 1024 parameters per input"
TOO_MANY_OUTPUT_PARAMS = ("inference request exceeds the limit of 1024 parameters per requested "
                          "output")
TOO_MANY_INPUTS = "inference request exceeds the limit of 4096 inputs"
TOO_MANY_OUTPUTS = "inference request exceeds the limit of 4096 requested outputs"
NEGATIVE_SEQUENCE_ID = "Unable to parse 'sequence_id': attempt to access JSON non-string as string"
BOOL_RULE = "BOOL elements must be 0 (false) or 1 (true)"
# An error quoting a client value keeps at most 128 bytes of it plus "... (<n> bytes)".
MAX_ERROR = 1000
PROMPT = 10  # seconds: far above what a capped request costs, far below the quadratic time

X = np.ones((1, 4), np.float32)


@pytest.fixture(scope="module")
def server(pbs):  # noqa: F811
    yield from serve_grpc([repo("fixtures", "types")], "security-parsing")


def stubs_pb():
    return stubs().pb


def fp32_input(**extra):
    d = {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}
    d.update(extra)
    return d


def post_json(server, body, model="identity_fp32", timeout=PROMPT):
    return server.post(f"/v2/models/{model}/infer", data=json.dumps(body),
                       headers={"Content-Type": "application/json"}, timeout=timeout)


def grpc_error(server, req, timeout=PROMPT):
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(req, timeout=timeout)
    return e.value


def identity_req(**kw):
    return infer_request("identity_fp32", [("INPUT0", "FP32", X)], **kw)


def still_serving(server):
    r = post_json(server, {"inputs": [fp32_input()]})
    assert r.status_code == 200, r.content
    assert server.stub().ModelInfer(identity_req(), timeout=PROMPT).outputs[0].name == "OUTPUT0"


# ------------------------------------------------------------------------ item 2: counts and caps

def test_http_100k_request_parameters_get_a_prompt_400(server):
    params = {f"p{i}": i for i in range(100000)}
    r = post_json(server, {"parameters": params, "inputs": [fp32_input()]})
    assert_error(r, 400, TOO_MANY_PARAMS)
    still_serving(server)


def test_http_parameters_at_the_cap_are_accepted(server):
    params = {f"p{i}": i for i in range(MAX_PARAMS)}
    r = post_json(server, {"parameters": params, "inputs": [fp32_input()]})
    assert r.status_code == 200, r.content[:500]


def test_http_tensor_parameter_caps(server):
    params = {f"p{i}": 1 for i in range(MAX_PARAMS + 1)}
    r = post_json(server, {"inputs": [fp32_input(parameters=params)]})
    assert_error(r, 400, TOO_MANY_INPUT_PARAMS)
    r = post_json(server, {"inputs": [fp32_input()],
                           "outputs": [{"name": "OUTPUT0", "parameters": params}]})
    assert_error(r, 400, TOO_MANY_OUTPUT_PARAMS)


def test_http_input_and_output_count_caps(server):
    inputs = [fp32_input(name=f"I{i}") for i in range(MAX_TENSORS + 1)]
    assert_error(post_json(server, {"inputs": inputs}), 400, TOO_MANY_INPUTS)
    outputs = [{"name": f"O{i}"} for i in range(MAX_TENSORS + 1)]
    r = post_json(server, {"inputs": [fp32_input()], "outputs": outputs})
    assert_error(r, 400, TOO_MANY_OUTPUTS)


def test_grpc_40k_request_parameters_get_a_prompt_invalid_argument(server):
    req = identity_req()
    for i in range(40000):
        req.parameters[f"p{i}"].int64_param = i
    err = grpc_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == TOO_MANY_PARAMS
    still_serving(server)


def test_grpc_caps_use_the_http_text(server):
    req = identity_req()
    for i in range(MAX_PARAMS + 1):
        req.inputs[0].parameters[f"p{i}"].int64_param = 1
    err = grpc_error(server, req)
    assert (err.code(), err.details()) == (grpc.StatusCode.INVALID_ARGUMENT, TOO_MANY_INPUT_PARAMS)

    req = identity_req(outputs=["OUTPUT0"])
    for i in range(MAX_PARAMS + 1):
        req.outputs[0].parameters[f"p{i}"].int64_param = 1
    err = grpc_error(server, req)
    assert (err.code(), err.details()) == (grpc.StatusCode.INVALID_ARGUMENT,
                                           TOO_MANY_OUTPUT_PARAMS)

    req = infer_request("identity_fp32", [(f"I{i}", "FP32", X) for i in range(MAX_TENSORS + 1)])
    err = grpc_error(server, req)
    assert (err.code(), err.details()) == (grpc.StatusCode.INVALID_ARGUMENT, TOO_MANY_INPUTS)

    req = identity_req(outputs=[f"O{i}" for i in range(MAX_TENSORS + 1)])
    err = grpc_error(server, req)
    assert (err.code(), err.details()) == (grpc.StatusCode.INVALID_ARGUMENT, TOO_MANY_OUTPUTS)


# ------------------------------------------------------------------------ item 7: smaller items

@pytest.mark.parametrize("model,datatype,value", [
    ("identity_fp32", "FP32", 1e39), ("identity_fp32", "FP32", -3.5e38),
    ("identity_fp16", "FP16", 70000.0), ("identity_fp16", "FP16", -65520.0)])
def test_json_float_out_of_range_is_refused(server, model, datatype, value):
    body = {"inputs": [{"name": "INPUT0", "datatype": datatype, "shape": [1, 2],
                        "data": [1.0, value]}]}
    assert_error(post_json(server, body, model), 400, f"is out of range for {datatype}")


def test_json_float_at_the_limits_and_explicit_infinity_are_kept(server):
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP16", "shape": [1, 2],
                        "data": [65504.0, -65504.0]}]}
    r = post_json(server, body, "identity_fp16")
    assert r.status_code == 200, r.content
    assert r.json()["outputs"][0]["data"] == [65504.0, -65504.0]
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": [1]}]}
    text = json.dumps(body).replace("[1]}", "[Infinity]}")
    r = server.post("/v2/models/identity_fp32/infer", data=text, timeout=PROMPT)
    assert r.status_code == 200, r.content


def test_fp16_wrong_type_names_a_number(server):
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP16", "shape": [1, 1], "data": [True]}]}
    msg = assert_error(post_json(server, body, "identity_fp16"), 400)
    assert "expected a number for datatype FP16, got a boolean" in msg, msg
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 1], "data": ["1"]}]}
    msg = assert_error(post_json(server, body), 400)
    assert "expected a number for datatype FP32, got a string" in msg, msg


def raw_http(server, head_lines, body):
    lines = "".join(f"{h}\r\n" for h in head_lines)
    request = (f"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n{lines}"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", server.port), timeout=PROMPT) as s:
        s.sendall(request)
        return read_http_response(s.makefile("rb"))


def test_repeated_inference_header_content_length_is_refused(server):
    header = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4],
                                     "parameters": {"binary_data_size": 16}}]}).encode()
    body = header + X.tobytes()
    ihcl = f"Inference-Header-Content-Length: {len(header)}"
    status, _, _ = raw_http(server, [ihcl], body)
    assert status == 200
    status, _, reply = raw_http(server, [ihcl, ihcl.lower()], body)
    assert status == 400, reply
    assert "must not be given more than once" in json.loads(reply)["error"]


def test_grpc_negative_sequence_id_is_refused_like_http(server):
    err = grpc_error(server, identity_req(parameters={"sequence_id": -5}))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == NEGATIVE_SEQUENCE_ID
    r = post_json(server, {"parameters": {"sequence_id": -5}, "inputs": [fp32_input()]})
    assert assert_error(r, 400) == err.details()


def test_http_errors_truncate_client_names_and_shapes(server):
    long_name = "n" * 100000
    msg = assert_error(post_json(server, {"inputs": [fp32_input(name=long_name)]}), 400)
    assert len(msg) < MAX_ERROR and "... (100000 bytes)" in msg, msg[:300]
    body = {"id": "i" * 50000, "inputs": [fp32_input(shape=[1] * 30000, data=[1])]}
    msg = assert_error(post_json(server, body), 400)
    assert len(msg) < MAX_ERROR, msg[:300]
    assert "... (50000 bytes)" in msg and "(30000 dims)" in msg, msg


def test_grpc_errors_truncate_client_names(server):
    err = grpc_error(server, infer_request("m" * 100000, [("INPUT0", "FP32", X)]))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert len(err.details()) < MAX_ERROR and "... (100000 bytes)" in err.details()
    req = identity_req()
    req.inputs[0].datatype = "T" * 100000
    err = grpc_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(err.details()) < MAX_ERROR and "... (100000 bytes)" in err.details()


def test_statistics_and_route_errors_truncate_client_names(server):
    msg = assert_error(server.get("/v2/models/" + "m" * 5000 + "/stats"), 400)
    assert len(msg) < MAX_ERROR and "... (5000 bytes)" in msg, msg[:300]
    msg = assert_error(server.get("/v2/models/identity_fp32/versions/" + "v" * 5000), 400)
    assert len(msg) < MAX_ERROR and "... (5000 bytes)" in msg, msg[:300]
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelStatistics(stubs_pb().ModelStatisticsRequest(name="m" * 100000),
                                      timeout=PROMPT)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(e.value.details()) < MAX_ERROR and "... (100000 bytes)" in e.value.details()


def test_bool_bytes_other_than_0_and_1_are_refused_everywhere(server):
    raw = bytes([1, 0, 2, 1, 0])
    header = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "BOOL", "shape": [1, 5],
                                     "parameters": {"binary_data_size": 5}}]}).encode()
    r = server.post("/v2/models/identity_bool/infer", data=header + raw, timeout=PROMPT,
                    headers={"Inference-Header-Content-Length": str(len(header))})
    http_msg = assert_error(r, 400, BOOL_RULE)
    assert "invalid value 2 at element 2" in http_msg

    req = infer_request("identity_bool", [("INPUT0", "BOOL", np.ones((1, 5), np.bool_))])
    req.raw_input_contents[0] = raw
    err = grpc_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == http_msg

    # JSON takes only true/false, so it cannot carry other bytes.
    body = {"inputs": [{"name": "INPUT0", "datatype": "BOOL", "shape": [1, 1], "data": [2]}]}
    assert_error(post_json(server, body, "identity_bool"), 400, "expected a boolean")
    ok = server.post("/v2/models/identity_bool/infer", timeout=PROMPT,
                     data=header + bytes([1, 0, 1, 1, 0]),
                     headers={"Inference-Header-Content-Length": str(len(header))})
    assert ok.status_code == 200, ok.content


@pytest.fixture(scope="module")
def explicit(tmp_path_factory):
    root = tmp_path_factory.mktemp("security_explicit")
    copy_model(("examples",), "identity_fp32", root, "ident")
    s = mode_server([root], "explicit", name="security-explicit")
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def test_load_api_errors_truncate_parameter_keys(explicit):
    msg = assert_error(load(explicit, "ident", {"k" * 5000: 1}), 400, "Unrecognized load parameter")
    assert len(msg) < MAX_ERROR and "... (5000 bytes)" in msg, msg[:300]


def test_instance_count_is_capped_per_model(explicit):
    cfg = {"name": "ident", "backend": "identity", "max_batch_size": 8,
           "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
           "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
           "instance_group": [{"kind": "KIND_CPU", "count": 300},
                              {"kind": "KIND_CPU", "count": 213}]}
    r = load(explicit, "ident", {"config": json.dumps(cfg)})
    assert_error(r, 400, "at most 512 are allowed per model")
    cfg["instance_group"] = [{"kind": "KIND_CPU", "count": 2}]
    assert load(explicit, "ident", {"config": json.dumps(cfg)}).status_code == 200


# -------------------------------------------- found by fuzzing (issue 14 item 9, docs/fuzzing.md)

LONG_ZERO = "0." + "0" * 495


def test_json_numbers_rapidjson_could_not_convert_do_not_crash(server):
    # rapidjson 1.1.0's full-precision conversion of this number read ~4 GB past a static table:
    # one 500-byte request killed the server (fuzz_json_infer's first finding).
    r = server.post("/v2/models/identity_fp32/infer", data=LONG_ZERO, timeout=PROMPT)
    assert_error(r, 400, "the inference request must be a JSON object")
    text = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP64", "shape": [1, 3],
                                   "data": [7, 8, 9]}]})
    text = text.replace("[7, 8, 9]", f"[{LONG_ZERO}, {LONG_ZERO}1e-2147483600, 0.1]")
    r = server.post("/v2/models/identity_fp64/infer", data=text, timeout=PROMPT)
    assert r.status_code == 200, r.content
    assert r.json()["outputs"][0]["data"] == [0.0, 0.0, 0.1]
    still_serving(server)
