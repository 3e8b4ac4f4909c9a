"""The pytorch backend over HTTP: TorchScript models from fixtures/torch (scripts/torch_models.py)
with the same expectations as their ONNX twins, Triton's naming conventions, every datatype,
variable shapes, reshape, parallel instances, Triton's parameters, per-request errors that leave
the instance serving, and the load errors of fixtures/torch_broken."""

import concurrent.futures
import os
import time

import numpy as np
import pytest
import requests

from helpers import (Server, assert_error, assert_not_ready, build_infer_request, parse_response,
                     repo, tensor)

A = np.arange(32, dtype=np.int32).reshape(2, 16)
B = np.full((2, 16), 3, dtype=np.int32)


@pytest.fixture(scope="module")
def torch_server():
    # The examples repository rides along so the ONNX twins answer from the same process.
    s = Server([repo("fixtures", "torch"), repo("examples")], name="torch").start()
    try:
        yield s
    finally:
        rc = s.stop()
    assert rc == 0, f"torch server exited with {rc}:\n{s.stderr()[-4000:]}"


def add_sub_inputs(a, b, binary=False):
    return [tensor("INPUT__0", "INT32", a, binary=binary),
            tensor("INPUT__1", "INT32", b, binary=binary)]


def test_torch_server_ready_and_runtime_loaded_once(torch_server):
    assert torch_server.get("/v2/health/ready").status_code == 200
    assert torch_server.stderr().count("loaded LibTorch runtime") == 1


def test_servers_without_torchscript_models_never_load_libtorch(examples_server):
    assert examples_server.get("/v2/health/ready").status_code == 200
    assert "loaded backend 'pytorch'" in examples_server.stderr()
    assert "loaded LibTorch runtime" not in examples_server.stderr()


def test_metadata_and_config(torch_server):
    md = torch_server.get("/v2/models/add_sub_torch").json()
    assert md["platform"] == "pytorch_libtorch"
    assert [i["name"] for i in md["inputs"]] == ["INPUT__0", "INPUT__1"]
    assert md["inputs"][0] == {"name": "INPUT__0", "datatype": "INT32", "shape": [-1, 16]}
    cfg = torch_server.get("/v2/models/add_sub_torch/config").json()
    assert cfg["backend"] == "pytorch"
    assert cfg["platform"] == "pytorch_libtorch"
    assert cfg["default_model_filename"] == "model.pt"
    assert cfg["instance_group"][0]["count"] == 1  # Triton's default for non-ORT CPU models
    # backend: "pytorch" alone gets Triton's platform name.
    vcfg = torch_server.get("/v2/models/vardim_torch/config").json()
    assert (vcfg["backend"], vcfg["platform"]) == ("pytorch", "pytorch_libtorch")


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_add_sub_twin_of_simple(torch_server, binary):
    header, values, _ = parse_response(
        torch_server.infer("add_sub_torch", add_sub_inputs(A, B, binary)))
    assert (header["model_name"], header["model_version"]) == ("add_sub_torch", "1")
    np.testing.assert_array_equal(values["OUTPUT__0"], A + B)
    np.testing.assert_array_equal(values["OUTPUT__1"], A - B)
    # The ONNX `simple` in the same server answers the same.
    _, onnx, _ = parse_response(torch_server.infer("simple", [
        tensor("INPUT0", "INT32", A), tensor("INPUT1", "INT32", B)]))
    np.testing.assert_array_equal(onnx["OUTPUT0"], values["OUTPUT__0"])
    np.testing.assert_array_equal(onnx["OUTPUT1"], values["OUTPUT__1"])


def test_requested_output_subset(torch_server):
    header, values, _ = parse_response(
        torch_server.infer("add_sub_torch", add_sub_inputs(A, B), outputs=["OUTPUT__1"]))
    assert [o["name"] for o in header["outputs"]] == ["OUTPUT__1"]
    np.testing.assert_array_equal(values["OUTPUT__1"], A - B)


def test_forward_argument_names_map_by_name(torch_server):
    # The config lists subtrahend first; the module's forward is (minuend, subtrahend).
    m = np.array([10, 20, 30], np.float32)
    s = np.array([1, 2, 3], np.float32)
    _, values, _ = parse_response(torch_server.infer(
        "named_args_torch", [tensor("subtrahend", "FP32", s), tensor("minuend", "FP32", m)]))
    np.testing.assert_array_equal(values["OUTPUT__0"], m - s)
    np.testing.assert_array_equal(values["OUTPUT__1"], m * s)


ALL_TYPES = [("BOOL", np.array([True, False, True])), ("UINT8", np.array([0, 7, 254], np.uint8)),
             ("INT8", np.array([-128, 0, 126], np.int8)),
             ("INT16", np.array([-32768, 5, 32766], np.int16)),
             ("INT32", np.array([-2**31, 5, 2**31 - 2], np.int32)),
             ("INT64", np.array([-2**63, 5, 2**63 - 2], np.int64)),
             ("FP16", np.array([-1.5, 0, 2048], np.float16)),
             ("FP32", np.array([-1.5, 0, 1e30], np.float32)),
             ("FP64", np.array([-1.5, 0, 1e300], np.float64))]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_every_datatype(torch_server, binary):
    strings = ["a", "", "\u00e9t\u00e9"]
    inputs = [tensor(f"INPUT__{i}", t, data, binary=binary or t == "FP16")
              for i, (t, data) in enumerate(ALL_TYPES)]
    inputs.append(tensor("INPUT__9", "BYTES", strings, shape=[3], binary=binary))
    header, values, _ = parse_response(torch_server.infer("all_types_torch", inputs))
    assert [o["datatype"] for o in header["outputs"]] == [t for t, _ in ALL_TYPES] + ["BYTES"]
    np.testing.assert_array_equal(values["OUTPUT__0"], np.logical_not(ALL_TYPES[0][1]))
    for i, (_, data) in enumerate(ALL_TYPES[1:], start=1):
        np.testing.assert_array_equal(values[f"OUTPUT__{i}"], data + data.dtype.type(1))
    out = [v.decode() if isinstance(v, bytes) else v for v in values["OUTPUT__9"]]
    assert out == [s + "!" for s in strings]


def test_variable_shapes(torch_server):
    for shape in ([1, 1, 1], [2, 3, 5], [8, 1, 7]):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        header, values, _ = parse_response(
            torch_server.infer("vardim_torch", [tensor("INPUT__0", "FP32", x)]))
        assert header["outputs"][0]["shape"] == shape
        np.testing.assert_array_equal(values["OUTPUT__0"], x * 2)


def test_reshape_twin_of_reshape_model(torch_server):
    x = np.array([[1.5], [2.5], [-1]], np.float32)
    header, values, _ = parse_response(
        torch_server.infer("reshape_torch", [tensor("INPUT__0", "FP32", x)]))
    assert header["outputs"][0]["shape"] == [3, 1]
    np.testing.assert_array_equal(values["OUTPUT__0"], x + 1)


def test_dict_input(torch_server):
    x, y = np.array([10, 20, 30], np.int64), np.array([1, 2, 3], np.int64)
    _, values, _ = parse_response(torch_server.infer(
        "dict_torch", [tensor("y", "INT64", y), tensor("x", "INT64", x)]))
    np.testing.assert_array_equal(values["OUTPUT__0"], x - y)


def test_strings_as_list_of_str(torch_server):
    words = ["abc", "", "Hello"]
    _, values, _ = parse_response(torch_server.infer(
        "strings_torch", [tensor("INPUT__0", "BYTES", words, shape=[3])]))
    out = [v.decode() if isinstance(v, bytes) else v for v in values["OUTPUT__0"]]
    assert out == ["ABC", "", "HELLO"]
    np.testing.assert_array_equal(values["OUTPUT__1"], [3, 0, 5])


def test_mlp_agrees_with_onnx_twin(torch_server):
    x = np.random.default_rng(7).standard_normal((4, 256)).astype(np.float32)
    _, t, _ = parse_response(torch_server.infer("mlp_torch", [tensor("INPUT__0", "FP32", x,
                                                                     binary=True)]))
    _, o, _ = parse_response(torch_server.infer("mlp_fp32", [tensor("INPUT0", "FP32", x,
                                                                    binary=True)]))
    assert t["OUTPUT__0"].shape == (4, 16)
    np.testing.assert_allclose(t["OUTPUT__0"], o["OUTPUT0"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("model", ["parallel_torch", "shared_torch"])
def test_parallel_instances(torch_server, model):
    """Many concurrent requests over the instances (own modules / shared weights with every
    Triton parameter set): each gets its own answer."""
    def one(k):
        a = np.full((1, 16), k, np.int32)
        b = np.arange(16, dtype=np.int32).reshape(1, 16)
        body, hdrs = build_infer_request(add_sub_inputs(a, b))
        # requests.post: one connection per call, safe from worker threads.
        r = requests.post(torch_server.url(f"/v2/models/{model}/infer"), data=body, headers=hdrs,
                          timeout=30)
        _, values, _ = parse_response(r)
        return np.array_equal(values["OUTPUT__0"], a + b) and \
            np.array_equal(values["OUTPUT__1"], a - b)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(64)))
    assert all(results)
    cfg = torch_server.get(f"/v2/models/{model}/config").json()
    assert cfg["instance_group"][0]["count"] == (2 if model == "parallel_torch" else 3)


def test_parameters_are_reported_in_the_log(torch_server):
    torch_server.wait_for_log("model 'shared_torch': 2 intra-op thread(s) per instance, optimized "
                              "execution off, inference mode off (no-grad), weight sharing on")
    torch_server.wait_for_log("model 'add_sub_torch': 1 intra-op thread(s) per instance, "
                              "optimized execution on, inference mode on, weight sharing off")


def thread_count(server):
    """The server's thread count once it stops changing (start-up threads may still be exiting)."""
    deadline = time.monotonic() + 10
    last = len(os.listdir(f"/proc/{server.proc.pid}/task"))
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = len(os.listdir(f"/proc/{server.proc.pid}/task"))
        if now == last:
            return now
        last = now
    return last


def test_intra_op_threads_are_per_instance():
    """INTRA_OP_THREAD_COUNT sizes the OpenMP team of the thread running that instance's forward:
    a large elementwise op on the default (1) model starts no thread, on the 2-thread model one."""
    big = np.ones(1 << 20, np.float32)  # far above ATen's parallel grain size
    with Server([repo("fixtures", "torch")], name="torch-threads") as s:
        for model in ("threads1_torch", "threads2_torch"):  # warm up with tiny (serial) requests
            parse_response(s.infer(model, [tensor("INPUT__0", "FP32", big[:4], binary=True)]))
        before = thread_count(s)
        for _ in range(3):
            _, v, _ = parse_response(s.infer("threads1_torch",
                                             [tensor("INPUT__0", "FP32", big, binary=True)]))
        assert v["OUTPUT__0"][0] == 2
        after_one = thread_count(s)
        assert after_one <= before
        _, v, _ = parse_response(s.infer("threads2_torch",
                                         [tensor("INPUT__0", "FP32", big, binary=True)]))
        assert v["OUTPUT__0"][-1] == 2
        assert thread_count(s) > after_one


# ------------------------------------------------------------------------------------ errors

def test_undeclared_output_type_fails_that_request(torch_server):
    x = np.array([[1, 2, 3]], np.int32)
    r = torch_server.infer("wrong_output_dtype_torch", [tensor("INPUT__0", "INT32", x)])
    assert_error(r, 400, "configuration expects datatype TYPE_INT32 for output 'OUTPUT__0', "
                         "model provides TYPE_FP32")
    assert torch_server.get("/v2/models/wrong_output_dtype_torch/ready").status_code == 200


def test_runtime_shape_mismatch_fails_that_request_and_instance_keeps_serving(torch_server):
    bad = np.array([[1, 2, 3]], np.float32)
    r = torch_server.infer("matmul4_torch", [tensor("INPUT__0", "FP32", bad)])
    msg = assert_error(r, 500, "PyTorch execute failure: ")
    assert "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x4)" in msg
    assert "frame #" not in msg  # no C++ backtrace in the answer
    good = np.array([[1, 2, 3, 4], [0, 0, 0, 1]], np.float32)
    _, values, _ = parse_response(
        torch_server.infer("matmul4_torch", [tensor("INPUT__0", "FP32", good)]))
    np.testing.assert_array_equal(values["OUTPUT__0"], good * 3)


def test_output_shape_the_config_does_not_declare(torch_server):
    x = np.ones((2, 4), np.float32)
    r = torch_server.infer("bad_output_shape_torch", [tensor("INPUT__0", "FP32", x)])
    assert_error(r, 400, "output 'OUTPUT__0' has shape [2,2], the model configuration expects "
                         "[-1,4]")


def test_request_checked_against_config_before_torch(torch_server):
    r = torch_server.infer("add_sub_torch", [tensor("INPUT__0", "FP32", A.astype(np.float32)),
                                             tensor("INPUT__1", "INT32", B)])
    assert_error(r, 400)
    r = torch_server.infer("add_sub_torch", [tensor("INPUT__0", "INT32", A)])
    assert_error(r, 400, "INPUT__1")
    np.testing.assert_array_equal(
        parse_response(torch_server.infer("add_sub_torch", add_sub_inputs(A, B)))[1]["OUTPUT__0"],
        A + B)


# ------------------------------------------------------------------------------------ broken

BROKEN = {
    "not_torchscript": "failed to load model 'not_torchscript': PytorchStreamReader failed",
    "wrong_arg_count": "unable to load model 'wrong_arg_count', configuration expects 3 inputs, "
                       "model provides 2",
    "returns_dict": "the model's forward returns Dict(str, Tensor); outputs must be Tensor, "
                    "List[str] or a Tuple of them",
    "no_config": "model configuration must contain at least one input, none were specified.",
    "index_out_of_range": "input 'INPUT__5' refers to forward argument 5, but the model's "
                          "forward takes 2 arguments",
    "unsupported_type": "unsupported datatype TYPE_UINT16 for input 'INPUT__0' for model "
                        "'unsupported_type'",
    "bad_parameter": "parameter 'INTRA_OP_THREAD_COUNT' must be an integer",
    "string_on_tensor": "TYPE_STRING inputs need List[str]",
    "no_model_file": "unable to find '",
    "unnamed_inputs_count": "unable to load model 'unnamed_inputs_count', configuration expects "
                            "3 inputs, model provides 2",
    "unnamed_outputs_count": "output 'product' refers to output index 2, but the model's forward "
                             "returns 2 value(s)",
}


@pytest.fixture(scope="module")
def torch_broken_server():
    s = Server([repo("fixtures", "torch_broken")], ["--exit-on-error=false"],
               name="torch-broken").start()
    try:
        yield s
    finally:
        rc = s.stop()
    assert rc == 0, f"torch-broken server exited with {rc}:\n{s.stderr()[-4000:]}"


def test_broken_repo_good_model_serves(torch_broken_server):
    assert torch_broken_server.get("/v2/models/good_torch/ready").status_code == 200
    _, values, _ = parse_response(torch_broken_server.infer("good_torch", add_sub_inputs(A, B)))
    np.testing.assert_array_equal(values["OUTPUT__0"], A + B)


@pytest.mark.parametrize("model", sorted(BROKEN))
def test_broken_model_fails_to_load_with_a_clear_error(torch_broken_server, model):
    assert_not_ready(torch_broken_server.get(f"/v2/models/{model}/ready"))
    assert_error(torch_broken_server.infer(model, add_sub_inputs(A, B)))
    torch_broken_server.wait_for_log(BROKEN[model])


def test_missing_config_gets_tritons_auto_complete_warning(torch_broken_server):
    torch_broken_server.wait_for_log("skipping model configuration auto-complete for 'no_config': "
                                     "not supported for pytorch backend")
