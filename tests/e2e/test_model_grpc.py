"""The model repository RPCs (RepositoryIndex, RepositoryModelLoad, RepositoryModelUnload) and
classification over gRPC, with Triton's status codes."""

import grpc
import numpy as np
import pytest

from grpc_helpers import GrpcServer, infer_request, output_array, pbs  # noqa: F401
from helpers import repo
from mm_helpers import copy_model, file_bytes, simple_config_json, wait_until

SIMPLE_ONNX = ("fixtures", "single_good", "simple", "1", "model.onnx")


def rpc_error(fn, req):
    with pytest.raises(grpc.RpcError) as e:
        fn(req)
    return e.value


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("grpc_repo")
    copy_model(("fixtures", "single_good"), "simple", root)
    copy_model(("fixtures", "management"), "labelled", root)
    s = GrpcServer([str(root)],
                   flags=["--model-control-mode=explicit"], name="grpc-mm").start()
    s.root = root
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def index(server, ready=False):
    r = server.stub().RepositoryIndex(pbs_().pb.RepositoryIndexRequest(ready=ready))
    return [(m.name, m.version, m.state, m.reason) for m in r.models]


def pbs_():
    from grpc_helpers import stubs
    return stubs()


def load_req(name, params=None):
    req = pbs_().pb.RepositoryModelLoadRequest(model_name=name)
    for k, v in (params or {}).items():
        if isinstance(v, bytes):
            req.parameters[k].bytes_param = v
        elif isinstance(v, str):
            req.parameters[k].string_param = v
        elif isinstance(v, bool):
            req.parameters[k].bool_param = v
        else:
            req.parameters[k].int64_param = v
    return req


def simple_infer(server, name):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    return server.stub().ModelInfer(infer_request(name, [("INPUT0", "INT32", a),
                                                         ("INPUT1", "INT32", a)]))


def test_index_load_unload(server):
    stub = server.stub()
    assert ("simple", "", "", "") in index(server)
    stub.RepositoryModelLoad(load_req("simple"))
    assert ("simple", "1", "READY", "") in index(server)
    assert index(server, ready=True) == [("simple", "1", "READY", "")]
    np.testing.assert_array_equal(output_array(simple_infer(server, "simple")),
                                  2 * np.arange(16).reshape(1, 16))
    stub.RepositoryModelUnload(pbs_().pb.RepositoryModelUnloadRequest(model_name="simple"))
    # UNLOADING until the request just answered drops its reference (it does so after replying).
    wait_until(lambda: ("simple", "1", "UNAVAILABLE", "unloaded") in index(server), timeout=10,
               what="simple unloaded")
    err = rpc_error(stub.ModelInfer, infer_request("simple", [
        ("INPUT0", "INT32", np.zeros((1, 16), np.int32)),
        ("INPUT1", "INT32", np.zeros((1, 16), np.int32))]))
    assert "simple" in err.details()


def test_load_errors(server):
    stub = server.stub()
    err = rpc_error(stub.RepositoryModelLoad, load_req("nope"))
    assert err.code() == grpc.StatusCode.INTERNAL
    assert err.details() == "failed to load 'nope', failed to poll from model repository"
    for bad in ["", "  ", "../simple", "a/b", "x\ny"]:
        err = rpc_error(stub.RepositoryModelLoad, load_req(bad))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
        assert ("Model name cannot be empty. Please enter a valid name to deploy."
                if bad.strip() == "" else "invalid model name") in err.details()
        err = rpc_error(stub.RepositoryModelUnload,
                        pbs_().pb.RepositoryModelUnloadRequest(model_name=bad))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
        err = rpc_error(stub.ModelReady, pbs_().pb.ModelReadyRequest(name=bad))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
    err = rpc_error(stub.RepositoryModelLoad, load_req("simple", {"config": 5}))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Unrecognized load parameter 'config' with type 'INT'" in err.details()
    err = rpc_error(stub.RepositoryModelLoad, load_req("simple", {"config": "{oops"}))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("failed to load 'simple', Invalid config override")
    err = rpc_error(stub.RepositoryModelLoad,
                    load_req("up", {"file:1/model.onnx": file_bytes(*SIMPLE_ONNX)}))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == ("failed to load 'up', Load parameter 'config' must be specified for "
                             "model file override")
    req = load_req("simple")
    req.repository_name = "other"
    assert rpc_error(stub.RepositoryModelLoad, req).code() == grpc.StatusCode.UNIMPLEMENTED
    req = pbs_().pb.RepositoryIndexRequest(repository_name="other")
    assert rpc_error(stub.RepositoryIndex, req).code() == grpc.StatusCode.UNIMPLEMENTED


@pytest.mark.parametrize("key", ["../evil", "/tmp/evil_abs", "1/../../evil", ".."])
def test_file_override_traversal(server, key):
    params = {"config": simple_config_json("up_evil"),
              "file:1/model.onnx": file_bytes(*SIMPLE_ONNX), "file:" + key: b"pwned"}
    err = rpc_error(server.stub().RepositoryModelLoad, load_req("up_evil", params))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "must stay within the model directory" in err.details()


def test_file_override_loads(server):
    params = {"config": simple_config_json("uploaded"),
              "file:1/model.onnx": file_bytes(*SIMPLE_ONNX)}
    server.stub().RepositoryModelLoad(load_req("uploaded", params))
    np.testing.assert_array_equal(output_array(simple_infer(server, "uploaded")),
                                  2 * np.arange(16).reshape(1, 16))


def test_classification(server):
    stub = server.stub()
    stub.RepositoryModelLoad(load_req("labelled"))
    x = np.array([[0.1, 0.9, 0.3, 0.2, 0.5]], np.float32)
    req = infer_request("labelled", [("INPUT0", "FP32", x)])
    out = req.outputs.add(name="OUTPUT0")
    out.parameters["classification"].int64_param = 2
    r = stub.ModelInfer(req)
    assert r.outputs[0].datatype == "BYTES" and list(r.outputs[0].shape) == [1, 2]
    assert output_array(r) == [b"0.900000:1:dog", b"0.500000:4:frog"]


def test_not_allowed_outside_explicit_mode():
    with GrpcServer([repo("fixtures", "single_good")], name="grpc-none") as s:
        for rpc, req in (("RepositoryModelLoad", load_req("simple")),
                         ("RepositoryModelUnload",
                          pbs_().pb.RepositoryModelUnloadRequest(model_name="simple"))):
            err = rpc_error(getattr(s.stub(), rpc), req)
            assert err.code() == grpc.StatusCode.UNAVAILABLE
            assert err.details() == \
                "explicit model load / unload is not allowed if polling is enabled"
        assert [m.name for m in s.stub().RepositoryIndex(
            pbs_().pb.RepositoryIndexRequest()).models] == ["simple"]
    assert s.returncode == 0


def test_reload_under_grpc_load_drops_no_request(server):
    import threading
    stub = server.stub()
    stub.RepositoryModelLoad(load_req("simple"))
    stop, failures, ok = threading.Event(), [], [0]

    def client():
        while not stop.is_set():
            try:
                simple_infer(server, "simple")
                ok[0] += 1
            except grpc.RpcError as e:
                failures.append((e.code(), e.details()))

    threads = [threading.Thread(target=client) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(10):
            before = ok[0]
            stub.RepositoryModelLoad(load_req("simple"))
            from mm_helpers import wait_until
            wait_until(lambda: ok[0] > before, what="requests after a reload")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert failures == []
