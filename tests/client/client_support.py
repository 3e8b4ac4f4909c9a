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
           "aio_clients"]

GrpcServer = grpc_helpers.GrpcServer


def clients(server):
    """(name, client) for HTTP and gRPC of a GrpcServer, for parametrised sync tests."""
    return [("http", httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")),
            ("grpc", grpcclient.InferenceServerClient(server.target()))]


def aio_clients(server):
    """(name, client) for HTTP and gRPC asyncio clients; close them with `await c.close()`."""
    return [("http", httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")),
            ("grpc", grpcclient_aio.InferenceServerClient(server.target()))]
