"""gRPC: every implemented RPC of GRPCInferenceService and grpc.health.v1.Health, the RPCs
answered UNIMPLEMENTED, and ModelInfer with every datatype in raw and typed form."""

import os
import shutil

import grpc
import numpy as np
import pytest

from grpc_helpers import (GrpcServer, infer_request, output_array, pbs, serve_grpc,  # noqa: F401
                          stubs)
from helpers import repo

A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 3, dtype=np.int32)


@pytest.fixture(scope="module")
def examples(pbs):  # noqa: F811
    yield from serve_grpc([repo("examples")], "grpc-examples")


@pytest.fixture(scope="module")
def types(pbs):  # noqa: F811
    yield from serve_grpc([repo("fixtures", "types")], "grpc-types")


def rpc_error(fn, *args, **kw):
    with pytest.raises(grpc.RpcError) as e:
        fn(*args, **kw)
    return e.value


# ------------------------------------------------------------------------------------ health

def test_server_live_and_ready(examples, pbs):  # noqa: F811
    st = examples.stub()
    assert st.ServerLive(pbs.pb.ServerLiveRequest()).live
    assert st.ServerReady(pbs.pb.ServerReadyRequest()).ready


def test_health_check_is_readiness(examples, pbs):  # noqa: F811
    r = examples.health_stub().Check(pbs.health.HealthCheckRequest())
    assert r.status == pbs.health.HealthCheckResponse.SERVING


def test_health_watch_is_unimplemented(examples, pbs):  # noqa: F811
    call = examples.health_stub().Watch(pbs.health.HealthCheckRequest())
    err = rpc_error(lambda: list(call))
    assert err.code() == grpc.StatusCode.UNIMPLEMENTED


def test_model_ready(examples, pbs):  # noqa: F811
    st = examples.stub()
    assert st.ModelReady(pbs.pb.ModelReadyRequest(name="simple")).ready
    assert st.ModelReady(pbs.pb.ModelReadyRequest(name="simple", version="1")).ready


def test_model_ready_unknown_model_and_version(examples, pbs):  # noqa: F811
    st = examples.stub()
    err = rpc_error(st.ModelReady, pbs.pb.ModelReadyRequest(name="nope"))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert "nope" in err.details()
    err = rpc_error(st.ModelReady, pbs.pb.ModelReadyRequest(name="simple", version="x"))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


# ------------------------------------------------------------------------------------ metadata

def test_server_metadata_matches_http(examples, pbs):  # noqa: F811
    r = examples.stub().ServerMetadata(pbs.pb.ServerMetadataRequest())
    http = examples.get("/v2").json()
    assert r.name == http["name"] == "triton"
    assert r.version == http["version"]
    assert list(r.extensions) == http["extensions"]


def test_model_metadata_matches_http(examples, pbs):  # noqa: F811
    for model in ("simple", "simple_string", "identity_fp32"):
        r = examples.stub().ModelMetadata(pbs.pb.ModelMetadataRequest(name=model))
        http = examples.get(f"/v2/models/{model}").json()
        assert r.name == http["name"] and list(r.versions) == http["versions"]
        assert r.platform == http["platform"]
        for got, want in ((r.inputs, http["inputs"]), (r.outputs, http["outputs"])):
            assert [(t.name, t.datatype, list(t.shape)) for t in got] == \
                [(t["name"], t["datatype"], t["shape"]) for t in want]


def test_model_metadata_unknown_model_same_text_as_http(examples, pbs):  # noqa: F811
    err = rpc_error(examples.stub().ModelMetadata, pbs.pb.ModelMetadataRequest(name="nope"))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert err.details() == examples.get("/v2/models/nope").json()["error"]
    err = rpc_error(examples.stub().ModelMetadata,
                    pbs.pb.ModelMetadataRequest(name="simple", version="9"))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_model_config(examples, pbs):  # noqa: F811
    r = examples.stub().ModelConfig(pbs.pb.ModelConfigRequest(name="simple"))
    http = examples.get("/v2/models/simple/config").json()
    assert r.config.name == "simple"
    assert r.config.max_batch_size == http["max_batch_size"]
    assert [i.name for i in r.config.input] == [i["name"] for i in http["input"]]
    assert r.config.input[0].data_type == pbs.config.TYPE_INT32
    assert list(r.config.input[0].dims) == [16]
    err = rpc_error(examples.stub().ModelConfig, pbs.pb.ModelConfigRequest(name="nope"))
    assert err.code() == grpc.StatusCode.NOT_FOUND


# LogSettings and TraceSetting are served (tests/client/test_logging_extension.py,
# tests/client/test_trace_extension.py); here only that TraceSetting answers its default.
def test_trace_setting_rpc_answers(examples, pbs):
    r = examples.stub().TraceSetting(pbs.pb.TraceSettingRequest())
    assert list(r.settings["trace_level"].value) == ["OFF"]
    assert list(r.settings["trace_rate"].value) == ["1000"]
    assert list(r.settings["trace_mode"].value) == ["triton"]


def test_shared_memory_rpcs_answer(examples, pbs):
    # tests/client/test_client_shared_memory.py covers them through Triton's client; here only
    # that they are served: status answers, register is refused while --allow-client-shm is false.
    r = examples.stub().SystemSharedMemoryStatus(pbs.pb.SystemSharedMemoryStatusRequest())
    assert len(r.regions) == 0
    r = examples.stub().CudaSharedMemoryStatus(pbs.pb.CudaSharedMemoryStatusRequest())
    assert len(r.regions) == 0
    err = rpc_error(examples.stub().SystemSharedMemoryRegister,
                    pbs.pb.SystemSharedMemoryRegisterRequest(name="r", key="/k", byte_size=8))
    assert err.code() == grpc.StatusCode.UNIMPLEMENTED
    assert err.details() == ("Client shared memory is disabled. Start the server with "
                             "'--allow-client-shm=true' to enable.")


# ------------------------------------------------------------------------------------ infer

@pytest.mark.parametrize("typed", [False, True], ids=["raw", "typed"])
def test_simple_add_sub(examples, typed):
    req = infer_request("simple", [("INPUT0", "INT32", A), ("INPUT1", "INT32", B)],
                        request_id="r-1", typed=typed)
    r = examples.stub().ModelInfer(req)
    assert (r.model_name, r.model_version, r.id) == ("simple", "1", "r-1")
    assert [o.name for o in r.outputs] == ["OUTPUT0", "OUTPUT1"]
    assert len(r.raw_output_contents) == 2
    assert all(o.datatype == "INT32" and list(o.shape) == [1, 16] for o in r.outputs)
    np.testing.assert_array_equal(output_array(r, 0), A + B)
    np.testing.assert_array_equal(output_array(r, 1), A - B)


def test_requested_outputs_subset_and_order(examples):
    req = infer_request("simple", [("INPUT0", "INT32", A), ("INPUT1", "INT32", B)],
                        outputs=["OUTPUT1"], version="1")
    r = examples.stub().ModelInfer(req)
    assert [o.name for o in r.outputs] == ["OUTPUT1"]
    np.testing.assert_array_equal(output_array(r, 0), A - B)
    req = infer_request("simple", [("INPUT0", "INT32", A), ("INPUT1", "INT32", B)],
                        outputs=["OUTPUT1", "OUTPUT0"])
    assert [o.name for o in examples.stub().ModelInfer(req).outputs] == ["OUTPUT1", "OUTPUT0"]


def test_request_and_tensor_parameters_are_accepted(examples):
    req = infer_request("simple", [("INPUT0", "INT32", A), ("INPUT1", "INT32", B)],
                        parameters={"my_flag": True, "my_int": 3, "my_str": "x", "my_f": 0.5})
    req.inputs[0].parameters["tensor_param"].int64_param = 1
    req.outputs.add(name="OUTPUT0").parameters["out_param"].bool_param = True
    r = examples.stub().ModelInfer(req)
    np.testing.assert_array_equal(output_array(r, 0), A + B)


def test_strings_raw_and_typed(examples):
    data = [b"1", b"22", b"-3", b"4", b"5", b"6", b"7", b"8", b"9", b"10", b"11", b"12", b"13",
            b"14", b"15", b"16"]
    for typed in (False, True):
        req = infer_request("simple_string", [("INPUT0", "BYTES", data, [1, 16]),
                                              ("INPUT1", "BYTES", [b"1"] * 16, [1, 16])],
                            typed=typed)
        r = examples.stub().ModelInfer(req)
        out0 = output_array(r, 0)
        assert [int(x) for x in out0] == [int(x) + 1 for x in data]


NUMERIC = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64",
           "FP16", "FP32", "FP64"]


def sample(datatype):
    if datatype == "BOOL":
        return np.array([[True, False, True]])
    info = np.finfo if datatype.startswith("FP") else np.iinfo
    floats = {"FP16": np.float16, "FP32": np.float32, "FP64": np.float64}
    dt = floats[datatype] if datatype in floats else getattr(np, datatype.lower())
    lim = info(dt)
    return np.array([[lim.min, 0, lim.max]], dtype=dt)


@pytest.mark.parametrize("datatype", NUMERIC)
@pytest.mark.parametrize("typed", [False, True], ids=["raw", "typed"])
def test_every_datatype_round_trips(types, datatype, typed):
    model = f"identity_{datatype.lower()}"
    data = sample(datatype)
    if typed and datatype == "FP16":  # no typed field exists for FP16: raw only, as in Triton
        req = infer_request(model, [("INPUT0", datatype, data)])
        del req.raw_input_contents[:]
        req.inputs[0].contents.fp32_contents.extend(data.flatten().tolist())
        err = rpc_error(types.stub().ModelInfer, req)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "raw_input_contents" in err.details()
        return
    req = infer_request(model, [("INPUT0", datatype, data)], typed=typed)
    r = types.stub().ModelInfer(req)
    assert r.outputs[0].datatype == datatype and list(r.outputs[0].shape) == [1, 3]
    np.testing.assert_array_equal(output_array(r), data)


@pytest.mark.parametrize("typed", [False, True], ids=["raw", "typed"])
def test_bytes_datatype_round_trips(types, typed):
    data = [b"", b"a", "\u00e9t\u00e9".encode(), bytes(range(256))]
    req = infer_request("identity_string", [("INPUT0", "BYTES", data, [1, 4])], typed=typed)
    r = types.stub().ModelInfer(req)
    assert r.outputs[0].datatype == "BYTES"
    assert output_array(r) == data


def test_large_tensor_over_grpc_default_4mb_limit(examples, pbs):  # noqa: F811
    data = np.arange(3 * 1024 * 1024, dtype=np.float32).reshape(1, -1)  # 12 MiB each way
    opts = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
    with grpc.insecure_channel(examples.target(), options=opts) as channel:
        stub = pbs.pb_grpc.GRPCInferenceServiceStub(channel)
        r = stub.ModelInfer(infer_request("identity_fp32", [("INPUT0", "FP32", data)]))
    np.testing.assert_array_equal(output_array(r), data)


def test_decoupled_model_is_rejected_by_model_infer(tmp_path, pbs):  # noqa: F811
    src = repo("examples", "identity_fp32")
    dst = tmp_path / "decoupled_identity"
    shutil.copytree(src, dst)
    cfg = (dst / "config.pbtxt").read_text().replace('name: "identity_fp32"',
                                                     'name: "decoupled_identity"')
    (dst / "config.pbtxt").write_text(cfg + "\nmodel_transaction_policy { decoupled: true }\n")
    with GrpcServer([str(tmp_path)], name="grpc-decoupled") as s:
        req = infer_request("decoupled_identity", [("INPUT0", "FP32", np.ones((1, 2), np.float32))])
        err = rpc_error(s.stub().ModelInfer, req)
        assert err.code() == grpc.StatusCode.UNIMPLEMENTED
        assert err.details() == \
            "ModelInfer RPC doesn't support models with decoupled transaction policy"
    assert s.returncode == 0
