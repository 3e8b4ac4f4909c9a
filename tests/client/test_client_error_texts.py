"""Triton's error texts as Triton's own client shows them (InferenceServerException.message()),
over HTTP and gRPC, sync and asyncio (issue 13 item 2), and the rules around them: a listed output
without its own binary_data is JSON whatever binary_data_output says (item 3), dotted model names
are names and unloading a never-loaded model succeeds (item 5). docs/error_texts.md lists every
text and where Triton's differs."""

import asyncio
import gzip
import json

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients, grpcclient,
                            httpclient, httpclient_aio, module_of)
from helpers import repo

LIMIT = 64 * 1024  # --http-max-input-size of the server below
EMPTY_NAME = "Model name cannot be empty. Please enter a valid name to deploy."


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("fixtures", "types")],
                   ["--model-control-mode=explicit", "--load-model=*",
                    f"--http-max-input-size={LIMIT}"], name="client-error-texts").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def fp32_input(module, values, shape=None, binary=False):
    x = np.asarray(values, dtype=np.float32).reshape(1, -1)
    i = module.InferInput("INPUT0", list(x.shape), "FP32")
    if module is httpclient:
        i.set_data_from_numpy(x, binary_data=binary)
    else:
        i.set_data_from_numpy(x)
    if shape is not None:
        i.set_shape(shape)  # after the data: the client sends a shape the data does not fill
    return i


def message(call):
    with pytest.raises(InferenceServerException) as e:
        call()
    return e.value.message()


# ------------------------------------------------------------------------------ request texts


def test_duplicate_requested_outputs(server):
    for name, c in clients(server):
        m = module_of(name)
        outputs = [m.InferRequestedOutput("OUTPUT0"), m.InferRequestedOutput("OUTPUT0")]
        msg = message(lambda: c.infer("identity_fp32", [fp32_input(m, [1, 2])], outputs=outputs))
        assert msg == "output 'OUTPUT0' already exists in request", (name, msg)


def test_duplicate_requested_outputs_asyncio(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                m = module_of(name)
                outputs = [m.InferRequestedOutput("OUTPUT0"), m.InferRequestedOutput("OUTPUT0")]
                with pytest.raises(InferenceServerException) as e:
                    await c.infer("identity_fp32", [fp32_input(m, [1, 2])], outputs=outputs)
                assert e.value.message() == "output 'OUTPUT0' already exists in request", name
            finally:
                await c.close()
    asyncio.run(run())


def test_short_json_data(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    msg = message(lambda: c.infer("identity_fp32", [fp32_input(httpclient, [1, 2], [1, 4])]))
    assert msg == "Unable to parse 'data': Shape does not match true shape of 'data' field"


def test_element_count_and_byte_size_overflow(server):
    # Triton's QA (L0_http test_buffer_size_overflow) matches these words.
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    msg = message(lambda: c.infer("identity_fp32",
                                  [fp32_input(httpclient, [1], [16, 2**60 + 2])]))
    assert "causes total element count to exceed maximum size of" in msg, msg
    assert "'INPUT0'" in msg, msg
    msg = message(lambda: c.infer("identity_fp32", [fp32_input(httpclient, [1], [4, 2**60 + 2])]))
    assert msg == "byte size overflow for input 'INPUT0'"


def raw_contents_and_typed(c):
    i = fp32_input(grpcclient, [1, 2])  # raw_input_contents
    i._get_tensor().contents.fp32_contents.extend([1, 2])  # and typed contents: refused
    return c.infer("identity_fp32", [i])


def test_grpc_raw_and_typed_contents(server):
    c = grpcclient.InferenceServerClient(server.target())
    assert message(lambda: raw_contents_and_typed(c)) == (
        "contents field must not be specified when using raw_input_contents for 'INPUT0' for "
        "model 'identity_fp32'")


def test_grpc_typed_contents_of_another_type(server):
    c = grpcclient.InferenceServerClient(server.target())
    i = grpcclient.InferInput("INPUT0", [1, 2], "FP32")
    i._get_tensor().contents.int_contents.extend([1, 2])
    assert message(lambda: c.infer("identity_fp32", [i])) == (
        "unexpected explicit tensor data for input tensor 'INPUT0' for model 'identity_fp32' of "
        "type 'INT32', expected datatype 'FP32'")


def test_negative_shape_and_bad_sequence_id(server):
    # Both asserted by Triton's QA (L0_http test_negative_dimensions) or read as TritonJson does.
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    msg = message(lambda: c.infer("identity_fp32", [fp32_input(httpclient, [1, 2], [2, -5])]))
    assert msg == ("Unable to parse 'shape': attempt to access JSON non-unsigned-integer as "
                   "unsigned-integer")
    msg = message(lambda: c.infer("identity_fp32", [fp32_input(httpclient, [1, 2])],
                                  sequence_id=-3))
    assert msg == "Unable to parse 'sequence_id': attempt to access JSON non-string as string"


def test_json_nesting_depth(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    data = "1.0"
    for _ in range(120):
        data = f"[{data}]"
    body = ('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,1],"data":' + data + '}]}')
    r = c._post("v2/models/identity_fp32/infer", body, None, None)
    msg = message(lambda: httpclient._utils._raise_if_error(r))
    assert msg == "JSON nesting depth exceeds maximum allowed limit (100)"


def test_bytes_raw_binary_input_needs_shape_1(server):
    # A raw binary request (Inference-Header-Content-Length: 0) through the client's own POST and
    # error parsing; its infer() always sends a JSON header.
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    r = c._post("v2/models/identity_string/infer", b"raw text",
                {"Inference-Header-Content-Length": "0"}, None)
    msg = message(lambda: httpclient._utils._raise_if_error(r))
    assert msg == "For BYTE datatype raw input 'INPUT0', the model must have input shape [1]"


def test_ready_in_index_request_must_be_a_boolean(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    r = c._post("v2/repository/index", json.dumps({"ready": "yes"}), None, None)
    msg = message(lambda: httpclient._utils._raise_if_error(r))
    assert msg == "Invalid value for 'ready': expected a boolean"
    assert c.get_model_repository_index()  # a well-formed index request still works


# ------------------------------------------------------------------------------ body size limits

def size_text(kind, size):
    amount = f"{size} bytes" if size is not None else f"more than {LIMIT} bytes"
    return (f"{kind} of {amount} exceeds the maximum allowed value of {LIMIT} bytes. "
            "Use --http-max-input-size to increase the limit.")


def test_json_body_over_the_limit(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    inputs = [fp32_input(httpclient, np.ones(LIMIT // 4))]
    body, _ = httpclient.InferenceServerClient.generate_request_body(inputs)
    msg = message(lambda: c.infer("identity_fp32", inputs))
    assert msg == size_text("Request JSON size", len(body))


def test_binary_body_over_the_limit(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    inputs = [fp32_input(httpclient, np.ones(LIMIT // 4), binary=True)]
    body, _ = httpclient.InferenceServerClient.generate_request_body(inputs)
    assert message(lambda: c.infer("identity_fp32", inputs)) == size_text("Request size",
                                                                         len(body))


def test_raw_binary_body_over_the_limit(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    r = c._post("v2/models/identity_fp32/infer", b"\0" * (LIMIT + 4),
                {"Inference-Header-Content-Length": "0"}, None)
    msg = message(lambda: httpclient._utils._raise_if_error(r))
    assert msg == size_text("Raw request size", LIMIT + 4)


def test_compressed_body_inflating_over_the_limit(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    inputs = [fp32_input(httpclient, np.zeros(LIMIT // 2))]  # zeros: compresses far below LIMIT
    body, _ = httpclient.InferenceServerClient.generate_request_body(inputs)
    assert len(gzip.compress(body)) < LIMIT < len(body)
    msg = message(lambda: c.infer("identity_fp32", inputs, request_compression_algorithm="gzip"))
    assert msg == (f"Decompressed request size exceeds the maximum allowed value of {LIMIT} "
                   "bytes. Use --http-max-input-size to increase the limit.")


def test_body_limit_asyncio(server):
    async def run():
        c = httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")
        try:
            inputs = [fp32_input(httpclient, np.ones(LIMIT // 4))]
            body, _ = httpclient.InferenceServerClient.generate_request_body(inputs)
            with pytest.raises(InferenceServerException) as e:
                await c.infer("identity_fp32", inputs)
            assert e.value.message() == size_text("Request JSON size", len(body))
        finally:
            await c.close()
    asyncio.run(run())


# ------------------------------------------------------------------------------ model control


def test_empty_model_name_on_load(server):
    for name, c in clients(server):
        for bad in ([" "] if name == "http" else ["", " "]):  # HTTP cannot send an empty segment
            assert message(lambda: c.load_model(bad)) == EMPTY_NAME, (name, bad)


def test_invalid_load_override_has_tritons_prefix(server):
    for name, c in clients(server):
        msg = message(lambda: c.load_model("identity_fp32", config="{not json"))
        assert msg.startswith("failed to load 'identity_fp32', Invalid config override: "), msg
        msg = message(lambda: c.load_model("uploaded", files={"file:1/model.onnx": b"x"}))
        assert msg == ("failed to load 'uploaded', Load parameter 'config' must be specified for "
                       "model file override"), (name, msg)
        assert c.is_model_ready("identity_fp32")  # a refused override leaves the model serving


def test_invalid_load_override_asyncio(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                with pytest.raises(InferenceServerException) as e:
                    await c.load_model("identity_fp32", config="{not json")
                assert e.value.message().startswith(
                    "failed to load 'identity_fp32', Invalid config override: "), name
                with pytest.raises(InferenceServerException) as e:
                    await c.load_model(" ")
                assert e.value.message() == EMPTY_NAME, name
            finally:
                await c.close()
    asyncio.run(run())


@pytest.mark.parametrize("dotted", ["...", "x..y", "..a", "a.."])
def test_dotted_model_names_are_names(server, dotted):
    for name, c in clients(server):
        msg = message(lambda: c.load_model(dotted))
        assert msg == f"failed to load '{dotted}', failed to poll from model repository", name
        c.unload_model(dotted)  # never loaded: succeeds, as Triton's L0_lifecycle requires


@pytest.mark.parametrize("hostile", ["..", ".", "a/b", "a\\b"])
def test_traversal_names_are_refused(server, hostile):
    for name, c in clients(server):
        if name == "http" and hostile != "a\\b":
            continue  # the client puts these in its URL unescaped; tests/e2e sends them quoted
        for call in (lambda: c.load_model(hostile), lambda: c.unload_model(hostile)):
            msg = message(call)
            assert "model name must not contain path traversal characters" in msg, (name, msg)


def test_unload_of_a_never_loaded_model_succeeds(server):
    for name, c in clients(server):
        c.unload_model("never_loaded")
        c.unload_model("never_loaded", unload_dependents=True)

    async def run():
        for name, c in aio_clients(server):
            try:
                await c.unload_model("never_loaded")
            finally:
                await c.close()
    asyncio.run(run())


# ------------------------------------------------------------------------------ binary_data_output


def test_listed_output_without_binary_data_is_json(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    out = httpclient.InferRequestedOutput("OUTPUT0")
    del out._parameters["binary_data"]  # listed, without a binary_data parameter of its own
    result = c.infer("identity_fp32", [fp32_input(httpclient, [1, 2])], outputs=[out])
    assert result.get_output("OUTPUT0")["data"] == [1.0, 2.0]
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [[1, 2]])


def post_with_binary_data_output(c, outputs):
    body, json_size = httpclient.InferenceServerClient.generate_request_body(
        [fp32_input(httpclient, [1, 2])], outputs=outputs)
    header = json.loads(body[:json_size] if json_size else body)
    header.setdefault("parameters", {})["binary_data_output"] = True
    r = c._post("v2/models/identity_fp32/infer", json.dumps(header), None, None)
    httpclient._utils._raise_if_error(r)
    length = r.get("Inference-Header-Content-Length")
    return httpclient.InferenceServerClient.parse_response_body(
        r.read(), header_length=int(length) if length else None)


def test_binary_data_output_is_the_default_for_unlisted_outputs_only(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    listed = httpclient.InferRequestedOutput("OUTPUT0")
    del listed._parameters["binary_data"]
    result = post_with_binary_data_output(c, [listed])
    assert result.get_output("OUTPUT0")["data"] == [1.0, 2.0]  # JSON despite binary_data_output
    result = post_with_binary_data_output(c, None)  # not listed: the default applies
    assert result.get_output("OUTPUT0")["parameters"]["binary_data_size"] == 8
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [[1, 2]])


def test_listed_output_without_binary_data_is_json_asyncio(server):
    async def run():
        c = httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")
        try:
            out = httpclient.InferRequestedOutput("OUTPUT0")
            del out._parameters["binary_data"]
            result = await c.infer("identity_fp32", [fp32_input(httpclient, [1, 2])],
                                   outputs=[out])
            assert result.get_output("OUTPUT0")["data"] == [1.0, 2.0]
        finally:
            await c.close()
    asyncio.run(run())


# ------------------------------------------- Triton's words for batch dimensions, parameters, loads


def test_input_without_a_batch_dimension(server):
    for name, c in clients(server):
        m = module_of(name)
        i = m.InferInput("INPUT0", [], "FP32")
        i.set_data_from_numpy(np.asarray(1.0, dtype=np.float32))
        assert message(lambda: c.infer("identity_fp32", [i])) == (
            "[request id: <id_unknown>] input 'INPUT0' has no shape but model requires batch "
            "dimension for 'identity_fp32'"), name
        assert message(lambda: c.infer("identity_fp32", [i], request_id="r7")).startswith(
            "[request id: r7] input 'INPUT0' has no shape"), name


def test_grpc_parameter_without_a_value(server):
    from tritonclient.grpc import service_pb2  # tritonclient's own stubs, not grpc_helpers'
    c = grpcclient.InferenceServerClient(server.target())
    request = service_pb2.ModelInferRequest(model_name="identity_fp32")
    request.parameters["empty"].SetInParent()  # present, with no value set
    tensor = request.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 1])
    tensor.contents.fp32_contents.append(1.0)
    with pytest.raises(Exception) as e:
        c._client_stub.ModelInfer(request)
    assert e.value.details() == ("invalid value type for 'empty' parameter, expected int64_param, "
                                 "bool_param, or string_param.")


def test_failed_version_load_names_its_state(server):
    config = json.dumps({
        "name": "identity_fp32", "platform": "onnxruntime_onnx", "max_batch_size": 8,
        "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
        "output": [{"name": "NOPE", "data_type": "TYPE_FP32", "dims": [-1]}]})
    for name, c in clients(server):
        msg = message(lambda: c.load_model("identity_fp32", config=config))
        assert msg.startswith("load failed for model 'identity_fp32': version 1 is at UNAVAILABLE "
                              "state: Invalid argument: unable to load model 'identity_fp32', "), \
            (name, msg)
        assert msg.endswith(";"), (name, msg)
        assert c.is_model_ready("identity_fp32"), name  # the old version keeps serving
