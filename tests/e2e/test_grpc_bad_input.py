"""gRPC: malformed or hostile ModelInfer requests get the right status code and a message, the
text of core errors equals what HTTP answers, and the server keeps serving."""

import struct

import grpc
import numpy as np
import pytest

from grpc_helpers import infer_request, output_array, pbs, serve_grpc  # noqa: F401
from helpers import repo

X = np.ones((1, 4), np.float32)


@pytest.fixture(scope="module")
def server(pbs):  # noqa: F811
    yield from serve_grpc([repo("examples")], "grpc-bad-input")


def infer_error(server, req):
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(req)
    return e.value


def identity(**kw):
    return infer_request("identity_fp32", [("INPUT0", "FP32", X)], **kw)


def test_unknown_model_same_message_as_http(server):
    err = infer_error(server, infer_request("nope", [("INPUT0", "FP32", X)]))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    http = server.post("/v2/models/nope/infer", json={"inputs": []}).json()["error"]
    assert err.details() == http


def test_unknown_version(server):
    err = infer_error(server, identity(version="7"))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = infer_error(server, identity(version="one"))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_wrong_datatype_same_message_as_http(server):
    req = infer_request("identity_fp32", [("INPUT0", "INT32", X.astype(np.int32))])
    err = infer_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    body = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 4],
                        "data": [1, 1, 1, 1]}]}
    assert err.details() == server.post("/v2/models/identity_fp32/infer", json=body).json()["error"]


def test_unknown_datatype_name(server):
    req = identity()
    req.inputs[0].datatype = "FLOAT32"
    assert infer_error(server, req).code() == grpc.StatusCode.INVALID_ARGUMENT


def test_raw_count_mismatch(server):
    req = identity()
    req.raw_input_contents.append(b"\0" * 16)
    err = infer_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "expected 1 inputs but got 2 raw_input_contents" in err.details()


def test_raw_size_mismatch(server):
    req = identity()
    req.raw_input_contents[0] = b"\0" * 15
    err = infer_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "byte size" in err.details()


def test_both_contents_and_raw(server):
    req = identity()
    req.inputs[0].contents.fp32_contents.extend([1, 1, 1, 1])
    err = infer_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "contents field must not be specified" in err.details()


def test_typed_contents_count_and_field_mismatch(server):
    req = identity(typed=True)
    req.inputs[0].contents.fp32_contents.append(5)
    assert infer_error(server, req).code() == grpc.StatusCode.INVALID_ARGUMENT
    req = identity(typed=True)
    req.inputs[0].contents.int_contents.append(5)
    err = infer_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Triton's words (grpc/infer_handler.cc InferGRPCToInputHelper).
    assert err.details().startswith("unexpected explicit tensor data for input tensor 'INPUT0'")
    assert err.details().endswith("of type 'INT32', expected datatype 'FP32'")


def test_no_data_at_all(server):
    req = identity()
    del req.raw_input_contents[:]
    assert infer_error(server, req).code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("blob", [struct.pack("<I", 100) + b"abc", b"\x01\x00"],
                         ids=["length-past-end", "truncated-prefix"])
def test_bytes_bad_length_prefix(server, blob):
    req = infer_request("simple_string", [("INPUT0", "BYTES", [b"1"] * 16, [1, 16]),
                                          ("INPUT1", "BYTES", [b"1"] * 16, [1, 16])])
    req.raw_input_contents[0] = blob
    err = infer_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_negative_dims(server):
    req = identity()
    del req.inputs[0].shape[:]
    req.inputs[0].shape.extend([1, -4])
    assert infer_error(server, req).code() == grpc.StatusCode.INVALID_ARGUMENT


def test_missing_and_unknown_inputs_and_outputs(server):
    req = infer_request("simple", [("INPUT0", "INT32", np.ones((1, 16), np.int32))])
    assert "INPUT1" in infer_error(server, req).details()
    req = identity(outputs=["NOPE"])
    assert infer_error(server, req).code() == grpc.StatusCode.INVALID_ARGUMENT
    req = identity(outputs=["OUTPUT0", "OUTPUT0"])
    err = infer_error(server, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == "output 'OUTPUT0' already exists in request"


def test_reserved_and_empty_parameters(server):
    req = identity(parameters={"triton_anything": 1})
    assert "reserved" in infer_error(server, req).details()
    req = identity()
    req.parameters["empty"].Clear()
    req.parameters["empty"]  # present with no value set
    assert infer_error(server, req).code() == grpc.StatusCode.INVALID_ARGUMENT


def test_batch_too_large(server):
    req = infer_request("identity_fp32", [("INPUT0", "FP32", np.ones((9, 2), np.float32))])
    assert infer_error(server, req).code() == grpc.StatusCode.INVALID_ARGUMENT


def test_garbage_message_bytes(server, pbs):  # noqa: F811
    call = server.channel().unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                        request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError) as e:
        call(b"\xff\xff\xff\xff\xff")
    assert e.value.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT)


def test_unknown_method_is_unimplemented(server):
    call = server.channel().unary_unary("/inference.GRPCInferenceService/NoSuchRpc",
                                        request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError) as e:
        call(b"")
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_server_still_serves_after_bad_input(server):
    r = server.stub().ModelInfer(identity())
    np.testing.assert_array_equal(output_array(r), X)
