"""gRPC helpers for the end-to-end tests: Python stubs generated at test time from the project's
own .proto files (protoc + grpc_python_plugin), a Server that also serves gRPC on a free port, and
ModelInferRequest builders.

The stubs are generated once per test process into a temporary folder (no generated file is
committed), so the tests check the wire compatibility of proto/*.proto as shipped.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import grpc
import numpy as np
import pytest

from helpers import Server, encode_tensor, np_dtype, repo  # noqa: F401

PROTO_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "proto")
_STUBS = None


class Stubs:
    """The generated modules: pb (grpc_service_pb2), pb_grpc, health (health_pb2), health_grpc,
    config (model_config_pb2)."""

    def __init__(self, folder):
        sys.path.insert(0, folder)
        import grpc_service_pb2
        import grpc_service_pb2_grpc
        import health_pb2
        import health_pb2_grpc
        import model_config_pb2
        self.pb, self.pb_grpc = grpc_service_pb2, grpc_service_pb2_grpc
        self.health, self.health_grpc = health_pb2, health_pb2_grpc
        self.config = model_config_pb2


def stubs():
    global _STUBS
    if _STUBS is None:
        plugin = shutil.which("grpc_python_plugin")
        protoc = shutil.which("protoc")
        assert plugin and protoc, "protoc and grpc_python_plugin are needed (protobuf-compiler-grpc)"
        out = tempfile.mkdtemp(prefix="nereid-grpc-stubs-")
        proto = os.path.abspath(PROTO_DIR)
        subprocess.run([protoc, f"-I{proto}", f"--python_out={out}", f"--grpc_python_out={out}",
                        f"--plugin=protoc-gen-grpc_python={plugin}"] +
                       sorted(glob.glob(os.path.join(proto, "*.proto"))), check=True)
        _STUBS = Stubs(out)
    return _STUBS


@pytest.fixture(scope="session")
def pbs():
    return stubs()


class GrpcServer(Server):
    """A nereid process serving HTTP and gRPC, both on free loopback ports. grpc_port is read from
    the "Started GRPCInferenceService at <addr>:<port>" log line (the server binds port 0)."""

    def __init__(self, repos, flags=(), name="nereid-grpc", grpc_flags=None, env=None):
        super().__init__(repos, flags, name, env)
        self.grpc_flags = ["--grpc-address=127.0.0.1", "--grpc-port=0"] if grpc_flags is None \
            else list(grpc_flags)
        self.grpc_port = None
        self._channel = None

    def args(self, port):
        base = super().args(port)
        return [a for a in base if a != "--allow-grpc=false"] + self.grpc_flags

    def start(self):
        super().start()
        self.wait_for_log("Started GRPCInferenceService at ")
        m = re.search(r"Started GRPCInferenceService at (\S+):(\d+)", self.stderr())
        self.grpc_port = int(m.group(2))
        return self

    def target(self):
        return f"127.0.0.1:{self.grpc_port}"

    def channel(self):
        if self._channel is None:
            self._channel = grpc.insecure_channel(self.target())
        return self._channel

    def stub(self):
        return stubs().pb_grpc.GRPCInferenceServiceStub(self.channel())

    def health_stub(self):
        return stubs().health_grpc.HealthStub(self.channel())

    def stop(self, *a, **kw):
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        return super().stop(*a, **kw)


def serve_grpc(repos, name, flags=(), env=None):
    """Generator for module fixtures: a GrpcServer that must exit 0 at teardown. `env` is added
    to the server's environment."""
    s = GrpcServer(repos, flags=flags, name=name, env=env).start()
    try:
        yield s
    finally:
        rc = s.stop()
    assert rc == 0, f"{name} server exited with {rc} at teardown:\n{s.stderr()[-4000:]}"


# ------------------------------------------------------------------------------------ requests

TYPED_FIELD = {
    "BOOL": "bool_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
    "UINT32": "uint_contents", "UINT64": "uint64_contents", "INT8": "int_contents",
    "INT16": "int_contents", "INT32": "int_contents", "INT64": "int64_contents",
    "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents",
}


def infer_request(model, inputs, outputs=None, version="", request_id="", typed=False,
                  parameters=None):
    """A ModelInferRequest. inputs: list of (name, datatype, numpy array or list of bytes for
    BYTES, optional shape). typed=True sends `contents`, otherwise raw_input_contents."""
    pb = stubs().pb
    req = pb.ModelInferRequest(model_name=model, model_version=version, id=request_id)
    for spec in inputs:
        name, datatype, data = spec[:3]
        shape = spec[3] if len(spec) > 3 else (list(np.shape(data)) if datatype != "BYTES"
                                               else [len(data)])
        t = req.inputs.add(name=name, datatype=datatype, shape=shape)
        if typed:
            values = list(data) if datatype == "BYTES" else np.asarray(data).flatten().tolist()
            getattr(t.contents, TYPED_FIELD[datatype]).extend(values)
        else:
            req.raw_input_contents.append(encode_tensor(datatype, data))
    for o in outputs or []:
        req.outputs.add(name=o)
    for k, v in (parameters or {}).items():
        set_param(req.parameters[k], v)
    return req


def set_param(p, v):
    if isinstance(v, bool):
        p.bool_param = v
    elif isinstance(v, int):
        p.int64_param = v
    elif isinstance(v, float):
        p.double_param = v
    else:
        p.string_param = v


def output_array(resp, index=0):
    """Output `index` of a ModelInferResponse as a numpy array (BYTES: list of bytes)."""
    from helpers import decode_tensor
    out = resp.outputs[index]
    return decode_tensor(out.datatype, list(out.shape), resp.raw_output_contents[index])
