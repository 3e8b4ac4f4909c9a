"""Issue 21 goal 4 (footprint): threads named after their job and started only when needed, checked
from /proc while Triton's client (HTTP and gRPC, sync and asyncio) drives the server.

- ready: no executor, load-API, reaper or trace-writer thread; every thread has a known name;
- requests run inline need no executor; a burst of concurrent requests (queued behind a busy
  instance) starts the executors, and every answer is still right;
- the load API's threads start with the first load, at most --model-load-thread-count of them;
- the reaper starts with the first unload, and the unloaded model is gone.
"""

import asyncio
import os
import shutil
import threading
import time

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient)
from helpers import repo

# (source under the generated test models, name): bench/footprint.py's five models
FIVE = [("examples", "simple"), ("examples", "simple_string"), ("examples", "vardim_fp32"),
        ("fixtures/features", "reshape_model"), ("examples", "identity_fp32")]

# Names of the threads Nereid starts (common/thread_name.h) and of libgrpc's own.
NEREID_NAMES = {"nereid", "http-io", "grpc-cq", "metrics-http", "executor", "load-api", "reaper",
                "trace-writer", "model-load", "cpu-metrics"}
GRPC_NAMES = {"event_engine", "timer_manager", "default-executo", "resolver-execut",
              "grpc_global_tim"}
LAZY = {"executor", "load-api", "reaper", "trace-writer"}


def thread_names(server):
    names = []
    task = f"/proc/{server.proc.pid}/task"
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # a thread that just ended
    return names


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


@pytest.fixture(scope="module")
def five_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("five")
    for src, name in FIVE:
        shutil.copytree(os.path.join(repo(src.split("/")[0]), *src.split("/")[1:], name),
                        root / name)
    return str(root)


def simple_inputs(module):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
              module.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return a, b, inputs


def check_simple(client, module):
    a, b, inputs = simple_inputs(module)
    result = client.infer("simple", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_ready_server_has_only_named_always_needed_threads(five_repo):
    server = GrpcServer([five_repo], name="footprint-ready").start()
    try:
        names = thread_names(server)
        unknown = set(names) - NEREID_NAMES - GRPC_NAMES
        assert not unknown, names
        assert not (set(names) & LAZY), names
        # main, and ONNX Runtime's one internal thread (started with its Ort::Env, unnamed):
        # every thread Nereid starts is named
        assert names.count("nereid") <= 2, names
        assert names.count("metrics-http") == 1, names
        for name, c in clients(server):
            assert c.is_server_ready(), name
            for _, model in FIVE:
                assert c.is_model_ready(model), (name, model)
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]


def test_inline_requests_need_no_executor_and_a_burst_starts_them(five_repo):
    server = GrpcServer([five_repo], name="footprint-burst").start()
    try:
        for name, c in clients(server):
            module = httpclient if name == "http" else grpcclient
            check_simple(c, module)
        assert "executor" not in thread_names(server)

        async def aio():
            for name, c in aio_clients(server):
                module = httpclient if name == "http" else grpcclient
                a, b, inputs = simple_inputs(module)
                try:
                    results = await asyncio.gather(*[c.infer("simple", inputs)
                                                     for _ in range(32)])
                finally:
                    await c.close()
                for r in results:
                    np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
                    np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)

        asyncio.run(aio())
        errors = []

        def worker(kind):
            try:
                c = (httpclient.InferenceServerClient(f"127.0.0.1:{server.port}") if kind == "http"
                     else grpcclient.InferenceServerClient(server.target()))
                for _ in range(50):
                    check_simple(c, httpclient if kind == "http" else grpcclient)
                c.close()
            except Exception as e:  # noqa: BLE001  (reported below)
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in ["http", "grpc"] * 4]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        # 8 clients against one instance: requests queued, so the executors started (one per
        # instance of the models that had to queue), never more than the five instances.
        execs = thread_names(server).count("executor")
        assert 1 <= execs <= len(FIVE), thread_names(server)
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]


def test_load_api_threads_start_on_demand_and_reaper_on_unload(five_repo):
    server = GrpcServer([five_repo], name="footprint-load",
                        flags=["--model-control-mode=explicit", "--load-model=simple",
                               "--model-load-thread-count=2"]).start()
    try:
        names = thread_names(server)
        assert "load-api" not in names and "reaper" not in names, names
        http, grpc = [c for _, c in clients(server)]
        http.load_model("identity_fp32")
        assert http.is_model_ready("identity_fp32")
        assert 1 <= thread_names(server).count("load-api") <= 2, thread_names(server)

        async def aio_loads():
            for name, c in aio_clients(server):
                try:
                    await asyncio.gather(c.load_model("vardim_fp32"),
                                         c.load_model("reshape_model"),
                                         c.load_model("simple_string"))
                    assert await c.is_model_ready("simple_string"), name
                finally:
                    await c.close()

        asyncio.run(aio_loads())
        assert 1 <= thread_names(server).count("load-api") <= 2, thread_names(server)
        with pytest.raises(InferenceServerException) as e:
            grpc.load_model("no_such_model")
        assert "no_such_model" in e.value.message()

        grpc.unload_model("identity_fp32")
        assert wait_for(lambda: "reaper" in thread_names(server)), thread_names(server)
        assert wait_for(lambda: not http.is_model_ready("identity_fp32"))
        assert not grpc.is_model_ready("identity_fp32")
        check_simple(grpc, grpcclient)
        check_simple(http, httpclient)
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]
