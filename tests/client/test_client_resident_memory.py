"""Issue 21 goal 4 (resident memory): the code pages start-up and model loads ran once leave the
server's resident set (core/stats/library_pages.h), and everything still runs, checked from
/proc/<pid>/smaps while Triton's client (HTTP and gRPC, sync and asyncio) drives the server.

ONNX Runtime registers every CPU kernel and operator schema of its build when its environment and
first session are made: ~22 MiB of its code and read-only data were resident at ready before, of
which serving the four small ONNX models maps back ~5-6 MiB. The bounds below sit between the two.
"""

import asyncio
import os

import numpy as np
import pytest

from client_support import GrpcServer, InferenceServerException, aio_clients, clients, module_of
from five_models import aio_loads_fail, check_simple, copy_model, make_five_repo, wait_for

MIB = 1024 * 1024
# Resident size of libonnxruntime's mappings: ~22 MiB before the release (all of its kernel
# registration), ~0.6 MiB right after it (relocated data), ~5-6 MiB after serving the models.
ORT_AFTER_LOAD_BOUND = 8 * MIB
ORT_SERVING_BOUND = 14 * MIB
# Whole-process bound in a release build (~15 MiB at ready, ~32 MiB after 10 s of traffic on the
# five models; 52 MiB before). Sanitizer builds carry shadow memory: the bound says nothing there.
SANITIZED = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
VMRSS_BOUND = 40 * MIB


@pytest.fixture(scope="module")
def five_repo(tmp_path_factory):
    return make_five_repo(tmp_path_factory)


def resident_bytes(pid, library):
    """Resident bytes of the mappings of `library` in process `pid` (/proc/pid/smaps)."""
    total, counting = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                counting = len(head) > 5 and library in os.path.basename(head[5])
            elif counting and head[0] == "Rss:":
                total += int(head[1]) * 1024
    return total


def vmrss(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))


def check_models(client, module):
    """One inference per model of the five, each answer checked."""
    check_simple(client, module)
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    inp = module.InferInput("INPUT0", [1, 16], "FP32")
    inp.set_data_from_numpy(x)
    np.testing.assert_array_equal(client.infer("identity_fp32", [inp]).as_numpy("OUTPUT0"), x)
    s = np.array([[str(i).encode() for i in range(16)]], dtype=np.object_)
    t = np.array([[b"2"] * 16], dtype=np.object_)
    inputs = [module.InferInput("INPUT0", [1, 16], "BYTES"),
              module.InferInput("INPUT1", [1, 16], "BYTES")]
    inputs[0].set_data_from_numpy(s)
    inputs[1].set_data_from_numpy(t)
    r = client.infer("simple_string", inputs)
    assert [int(v) for v in r.as_numpy("OUTPUT0").ravel()] == [i + 2 for i in range(16)]
    v = np.arange(8, dtype=np.float32).reshape(1, 8)
    inp = module.InferInput("INPUT0", [1, 8], "FP32")
    inp.set_data_from_numpy(v)
    np.testing.assert_array_equal(client.infer("vardim_fp32", [inp]).as_numpy("OUTPUT0"), v * 2)


def test_start_up_code_pages_leave_the_resident_set_and_every_model_still_runs(five_repo):
    server = GrpcServer([five_repo], name="rss-ready").start()
    try:
        pid = server.proc.pid
        # The endpoints answer as soon as they listen; the release comes just after, before the
        # log's "server is ready" line (an ASan run once read smaps in between).
        server.wait_for_log("server is ready after")
        ort_ready = resident_bytes(pid, "libonnxruntime")
        assert 0 < ort_ready < ORT_AFTER_LOAD_BOUND, ort_ready
        if not SANITIZED:
            assert vmrss(pid) < VMRSS_BOUND, vmrss(pid)
        for name, c in clients(server):
            for _ in range(3):
                check_models(c, module_of(name))

        async def aio():
            for name, c in aio_clients(server):
                try:
                    x = np.arange(16, dtype=np.float32).reshape(1, 16)
                    inp = module_of(name).InferInput("INPUT0", [1, 16], "FP32")
                    inp.set_data_from_numpy(x)
                    r = await c.infer("identity_fp32", [inp])
                    np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), x)
                    assert await c.is_model_ready("reshape_model"), name
                finally:
                    await c.close()

        asyncio.run(aio())
        # Serving maps back the code it runs, not the registration it ran once.
        assert resident_bytes(pid, "libonnxruntime") < ORT_SERVING_BOUND
        if not SANITIZED:
            assert vmrss(pid) < VMRSS_BOUND, vmrss(pid)
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]


def test_loads_through_the_api_release_their_pages_and_later_loads_still_work(five_repo):
    server = GrpcServer([five_repo], name="rss-load-api",
                        flags=["--model-control-mode=explicit",
                               "--load-model=identity_fp32"]).start()
    try:
        pid = server.proc.pid
        assert resident_bytes(pid, "libonnxruntime") == 0  # not mapped yet
        http, grpc = [c for _, c in clients(server)]
        # The first ONNX model maps ONNX Runtime and runs its registration; the reply comes after
        # the release.
        http.load_model("simple")
        assert 0 < resident_bytes(pid, "libonnxruntime") < ORT_AFTER_LOAD_BOUND
        grpc.load_model("simple_string")
        grpc.load_model("vardim_fp32")

        async def aio_load():
            for name, c in aio_clients(server):
                try:
                    await c.load_model("reshape_model")
                    assert await c.is_model_ready("reshape_model"), name
                finally:
                    await c.close()

        asyncio.run(aio_load())
        assert resident_bytes(pid, "libonnxruntime") < ORT_AFTER_LOAD_BOUND
        for name, c in clients(server):
            check_models(c, module_of(name))
        # Unload and load again after the release: the registration is not run again, the model
        # answers as before.
        grpc.unload_model("simple")
        http.load_model("simple")
        assert http.is_model_ready("simple") and grpc.is_model_ready("simple")
        for name, c in clients(server):
            check_models(c, module_of(name))
        assert resident_bytes(pid, "libonnxruntime") < ORT_SERVING_BOUND
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]


def test_a_model_the_poller_loads_releases_its_pages(tmp_path):
    five = str(tmp_path)
    copy_model(five, "identity_fp32")
    server = GrpcServer([five], name="rss-poll",
                        flags=["--model-control-mode=poll", "--repository-poll-secs=1"]).start()
    try:
        pid = server.proc.pid
        assert resident_bytes(pid, "libonnxruntime") == 0
        copy_model(five, "simple")
        http, grpc = [c for _, c in clients(server)]
        assert wait_for(lambda: http.is_model_ready("simple"), timeout=30)
        assert grpc.is_model_ready("simple")
        # The poller releases after the scan's loads are done, just after the model turned ready.
        assert wait_for(lambda: 0 < resident_bytes(pid, "libonnxruntime") < ORT_AFTER_LOAD_BOUND)
        for name, c in clients(server):
            check_simple(c, module_of(name))
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]


def add_parameters(model_dir, params):
    with open(os.path.join(model_dir, "config.pbtxt"), "a") as f:
        for key, value in params.items():
            f.write(f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}\n')


def test_onnx_memory_arena_and_pattern_parameters(tmp_path):
    """Triton's onnxruntime parameters enable_mem_arena / enable_mem_pattern reach the session
    options; a value that is not a boolean fails the load, naming the parameter."""
    root = str(tmp_path)
    copy_model(root, "simple")
    add_parameters(os.path.join(root, "simple"),
                   {"enable_mem_arena": "0", "enable_mem_pattern": "false"})
    copy_model(root, "vardim_fp32")
    add_parameters(os.path.join(root, "vardim_fp32"), {"enable_mem_arena": "sometimes"})
    server = GrpcServer([root], name="rss-ort-params",
                        flags=["--model-control-mode=explicit"]).start()
    try:
        http, grpc = [c for _, c in clients(server)]
        http.load_model("simple")
        for name, c in clients(server):
            for _ in range(3):
                check_simple(c, module_of(name))
        for name, c in clients(server):
            with pytest.raises(InferenceServerException) as e:
                c.load_model("vardim_fp32")
            assert "parameter 'enable_mem_arena' must be a boolean, got 'sometimes'" in \
                e.value.message(), (name, e.value.message())
            assert not http.is_model_ready("vardim_fp32")

        asyncio.run(aio_loads_fail(server, "vardim_fp32", "enable_mem_arena"))
        assert grpc.is_model_ready("simple")
        check_simple(grpc, module_of("grpc"))
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]
