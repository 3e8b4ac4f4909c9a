"""pytest wiring for tests/client: the end-to-end suite through Triton's own Python client.

It runs in a pytest process of its own (scripts/test starts it after tests/e2e): tritonclient's
generated gRPC modules register grpc_service.proto and model_config.proto in protobuf's default
descriptor pool, and so do the stubs tests/e2e generates from the project's own protos; one process
cannot hold both.
"""

import os
import sys

E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, E2E)

from suite_hooks import *  # noqa: E402,F401,F403
