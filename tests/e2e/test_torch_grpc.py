"""The pytorch backend over gRPC: the same TorchScript fixtures and expectations as test_torch.py,
with gRPC status codes for the per-request errors and concurrent calls over parallel instances."""

import concurrent.futures

import grpc
import numpy as np
import pytest

from grpc_helpers import infer_request, output_array, pbs, serve_grpc  # noqa: F401
from helpers import repo

A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 3, dtype=np.int32)


@pytest.fixture(scope="module")
def torch_grpc(pbs):  # noqa: F811
    yield from serve_grpc([repo("fixtures", "torch")], "grpc-torch")


def rpc_error(fn, *args, **kw):
    with pytest.raises(grpc.RpcError) as e:
        fn(*args, **kw)
    return e.value


@pytest.mark.parametrize("typed", [False, True], ids=["raw", "typed"])
def test_add_sub(torch_grpc, typed):
    req = infer_request("add_sub_torch", [("INPUT__0", "INT32", A), ("INPUT__1", "INT32", B)],
                        typed=typed)
    r = torch_grpc.stub().ModelInfer(req)
    assert [o.name for o in r.outputs] == ["OUTPUT__0", "OUTPUT__1"]
    np.testing.assert_array_equal(output_array(r, 0), A + B)
    np.testing.assert_array_equal(output_array(r, 1), A - B)


def test_metadata_platform(torch_grpc, pbs):  # noqa: F811
    md = torch_grpc.stub().ModelMetadata(pbs.pb.ModelMetadataRequest(name="add_sub_torch"))
    assert md.platform == "pytorch_libtorch"
    assert [i.name for i in md.inputs] == ["INPUT__0", "INPUT__1"]


def test_every_datatype(torch_grpc):
    data = [("BOOL", np.array([True, False])), ("UINT8", np.array([1, 254], np.uint8)),
            ("INT8", np.array([-128, 5], np.int8)), ("INT16", np.array([-3, 5], np.int16)),
            ("INT32", np.array([-3, 5], np.int32)), ("INT64", np.array([-3, 2**40], np.int64)),
            ("FP16", np.array([0.5, -2], np.float16)), ("FP32", np.array([0.5, -2], np.float32)),
            ("FP64", np.array([0.5, -2], np.float64))]
    inputs = [(f"INPUT__{i}", t, d) for i, (t, d) in enumerate(data)]
    inputs.append(("INPUT__9", "BYTES", [b"x", b""]))
    r = torch_grpc.stub().ModelInfer(infer_request("all_types_torch", inputs))
    assert [o.datatype for o in r.outputs] == [t for t, _ in data] + ["BYTES"]
    np.testing.assert_array_equal(output_array(r, 0), [False, True])
    for i, (_, d) in enumerate(data[1:], start=1):
        np.testing.assert_array_equal(output_array(r, i), d + d.dtype.type(1))
    assert output_array(r, 9) == [b"x!", b"!"]


def test_strings_typed(torch_grpc):
    req = infer_request("strings_torch", [("INPUT__0", "BYTES", [b"ab", b"cde"])], typed=True)
    r = torch_grpc.stub().ModelInfer(req)
    assert output_array(r, 0) == [b"AB", b"CDE"]
    np.testing.assert_array_equal(output_array(r, 1), [2, 3])


def test_undeclared_output_type_is_invalid_argument(torch_grpc):
    req = infer_request("wrong_output_dtype_torch", [("INPUT__0", "INT32", A)])
    err = rpc_error(torch_grpc.stub().ModelInfer, req)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == ("configuration expects datatype TYPE_INT32 for output 'OUTPUT__0', "
                             "model provides TYPE_FP32")


def test_runtime_failure_is_internal_and_instance_keeps_serving(torch_grpc):
    bad = infer_request("matmul4_torch", [("INPUT__0", "FP32", np.ones((1, 5), np.float32))])
    err = rpc_error(torch_grpc.stub().ModelInfer, bad)
    assert err.code() == grpc.StatusCode.INTERNAL
    assert err.details().startswith("PyTorch execute failure: ")
    good = np.array([[1, 0, 2, 0]], np.float32)
    r = torch_grpc.stub().ModelInfer(infer_request("matmul4_torch", [("INPUT__0", "FP32", good)]))
    np.testing.assert_array_equal(output_array(r), good * 3)


@pytest.mark.parametrize("model", ["parallel_torch", "shared_torch"])
def test_parallel_instances(torch_grpc, model):
    stub = torch_grpc.stub()

    def one(k):
        a = np.full((1, 16), k, np.int32)
        r = stub.ModelInfer(infer_request(model, [("INPUT__0", "INT32", a),
                                                  ("INPUT__1", "INT32", B)]))
        return np.array_equal(output_array(r, 0), a + B) and \
            np.array_equal(output_array(r, 1), a - B)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert all(pool.map(one, range(64)))
