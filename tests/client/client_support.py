"""Triton's own Python client (../shared/tritonclient beside the checkout), imported for tests.

Importing this module skips the importing test module, with the reason, when the client or one of
the Debian packages it needs is missing. Never import it from tests/e2e (see conftest.py).
"""

import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIENT = os.path.normpath(os.path.join(ROOT, "..", "shared", "tritonclient"))

if not os.path.isdir(os.path.join(CLIENT, "tritonclient")):
    pytest.skip(f"Triton's Python client is not beside the checkout ({CLIENT} is absent)",
                allow_module_level=True)
sys.path.insert(0, CLIENT)

try:
    import tritonclient.grpc as grpcclient  # noqa: E402
    import tritonclient.grpc.aio as grpcclient_aio  # noqa: E402
    import tritonclient.http as httpclient  # noqa: E402
    import tritonclient.http.aio as httpclient_aio  # noqa: E402
    from tritonclient.utils import InferenceServerException, np_to_triton_dtype  # noqa: E402
except ImportError as e:  # a Debian package scripts/setup installs is missing
    pytest.skip(f"Triton's Python client cannot be imported ({e}); run scripts/setup",
                allow_module_level=True)

import grpc_helpers  # noqa: E402  (GrpcServer only; never its stubs, see conftest.py)

__all__ = ["grpcclient", "grpcclient_aio", "httpclient", "httpclient_aio",
           "InferenceServerException", "np_to_triton_dtype", "GrpcServer", "clients",
           "aio_clients", "module_of", "serve_repository", "identity_inputs",
           "repository_index"]

GrpcServer = grpc_helpers.GrpcServer


def clients(server):
    """(name, client) for HTTP and gRPC of a GrpcServer, for parametrised sync tests."""
    return [("http", httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")),
            ("grpc", grpcclient.InferenceServerClient(server.target()))]


def aio_clients(server):
    """(name, client) for HTTP and gRPC asyncio clients; close them with `await c.close()`."""
    return [("http", httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")),
            ("grpc", grpcclient_aio.InferenceServerClient(server.target()))]


def module_of(name):
    """The client module of a protocol name as clients() gives it ("http" or "grpc")."""
    return httpclient if name == "http" else grpcclient


def serve_repository(tmp_path_factory, directory, write, args, name):
    """The body of a module fixture: writes a repository with write(root) into a new temporary
    `directory`, starts a GrpcServer called `name` on it with `args` and yields it (its `root` set);
    stops it afterwards and checks that it exited cleanly. Use `yield from`."""
    root = tmp_path_factory.mktemp(directory)
    write(root)
    s = GrpcServer([str(root)], args, name=name).start()
    s.root = root
    yield s
    code = s.stop()
    assert code == 0, f"exit code {code}\n{s.stderr()[-4000:]}"


def identity_inputs(module, values, binary=False):
    """[InferInput "INPUT0"] of the FP32 numpy array `values` for `module` (HTTP: binary or JSON
    data as `binary` says; gRPC: always raw)."""
    inp = module.InferInput("INPUT0", list(values.shape), "FP32")
    if module is httpclient:
        inp.set_data_from_numpy(values, binary_data=binary)
    else:
        inp.set_data_from_numpy(values)
    return [inp]


def repository_index(name, client):
    """The repository index of a sync client of clients() as dicts with name, state and reason
    (HTTP answers them as they are; gRPC as messages)."""
    index = client.get_model_repository_index()
    if name == "http":
        return index
    return [{"name": m.name, "state": m.state, "reason": m.reason} for m in index.models]
