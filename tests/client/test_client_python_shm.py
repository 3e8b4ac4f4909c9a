"""The Python backend's shared-memory pool (issue 18 item 2, ADR 0014) through Triton's own
client: tensors larger than `shm-default-byte-size` grow the pool, inputs reach model.py as numpy
views of the pool, many concurrent big requests (batched) come back byte-exact, BYTES tensors,
a stub SIGKILLed while its execution's block is in use, and refused shm settings."""

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients, grpcclient,
                            httpclient, module_of)
import python_models
from cancel_support import wait_for

DEFAULT = 1 << 20  # shm-default-byte-size of the server below
GROWTH = 512 * 1024

# Echoes X (UINT8) and B (BYTES) and reports, per request, its stub's pid, the size of the pool as
# the stub maps it and whether X was a view of the pool. MODE 1 sleeps (a SIGKILL target).
ECHO = '''
import json
import mmap
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


def in_pool(array):
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # np.frombuffer of a slice; np.ndarray(buffer=) names the map
        base = base.obj
    return isinstance(base, mmap.mmap)


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            b = pb_utils.get_input_tensor_by_name(r, "B").as_numpy()
            mode = int(pb_utils.get_input_tensor_by_name(r, "MODE").as_numpy()[0][0])
            if mode == 1:
                time.sleep(3)
            info = {"pid": os.getpid(), "in_pool": in_pool(x), "rows": len(requests),
                    "pool": len(pb_utils._stub.channel.pool.view)}
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("Y", x), pb_utils.Tensor("BO", b),
                pb_utils.Tensor("INFO", np.array([[json.dumps(info).encode()]], dtype=np.object_))]))
        return out
'''


def write_repo(root):
    d = root / "shm_echo_py"
    (d / "1").mkdir(parents=True)
    (d / "1" / "model.py").write_text(ECHO)
    (d / "config.pbtxt").write_text(python_models.config(
        "shm_echo_py",
        [python_models.io("X", "TYPE_UINT8", [-1]), python_models.io("B", "TYPE_STRING", [-1]),
         python_models.io("MODE", "TYPE_INT32", [1])],
        [python_models.io("Y", "TYPE_UINT8", [-1]), python_models.io("BO", "TYPE_STRING", [-1]),
         python_models.io("INFO", "TYPE_STRING", [1])],
        max_batch_size=8,
        extra="dynamic_batching { max_queue_delay_microseconds: 20000 }\n"
              "instance_group [ { count: 1 kind: KIND_CPU } ]"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("python_shm")
    write_repo(root)
    s = GrpcServer([str(root)], ["--backend-config=python,stub-timeout-seconds=10",
                                 f"--backend-config=python,shm-default-byte-size={DEFAULT}",
                                 f"--backend-config=python,shm-growth-byte-size={GROWTH}"],
                   name="client-python-shm").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def echo(c, module, x, b=None, mode=0):
    b = np.array([[b"s"]], dtype=np.object_) if b is None else b
    r = c.infer("shm_echo_py", echo_inputs(module, x, b, mode))
    return r, json.loads(r.as_numpy("INFO")[0][0])


def random_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, size=(1, n), dtype=np.uint8)


def memfds(pid):
    """The server's open memfds of stub pools."""
    fd_dir = f"/proc/{pid}/fd"
    links = []
    for fd in os.listdir(fd_dir):
        try:
            links.append(os.readlink(os.path.join(fd_dir, fd)))
        except OSError:
            pass
    return [link for link in links if "nereid_python_shm" in link]


def test_inputs_are_views_of_the_pool(server):
    for name, c in clients(server):
        x = random_bytes(1000, 1)
        r, info = echo(c, module_of(name), x)
        np.testing.assert_array_equal(r.as_numpy("Y"), x)
        assert info["in_pool"] is True, info


def test_a_tensor_larger_than_the_default_size_grows_the_pool(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    _, before = echo(c, httpclient, random_bytes(100, 2))
    big = random_bytes(3 * DEFAULT + 12345, 3)
    r, info = echo(c, httpclient, big)
    np.testing.assert_array_equal(r.as_numpy("Y"), big)
    assert info["in_pool"] is True
    assert info["pool"] > DEFAULT and info["pool"] >= big.size
    assert (info["pool"] - DEFAULT) % GROWTH == 0, info  # grown in steps of the growth size
    assert info["pid"] == before["pid"]  # the same stub remapped the grown pool
    # Smaller tensors afterwards still come through the (grown) pool.
    small = random_bytes(10, 4)
    for _ in range(2 * 64):  # two trim windows (ShmPool::kTrimWindow) without big tensors
        r, info = echo(c, httpclient, small)
    np.testing.assert_array_equal(r.as_numpy("Y"), small)
    assert info["pool"] >= big.size
    # The big block's memory went back to the system (the size stays).
    fd_dir = f"/proc/{server.proc.pid}/fd"
    pools = [os.stat(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)
             if "nereid_python_shm" in os.readlink(os.path.join(fd_dir, fd))]
    assert len(pools) == 1
    assert pools[0].st_size == info["pool"]
    assert pools[0].st_blocks * 512 <= DEFAULT, pools[0]


def echo_inputs(module, x, b, mode=0):
    inputs = [module.InferInput("X", list(x.shape), "UINT8"),
              module.InferInput("B", list(b.shape), "BYTES"),
              module.InferInput("MODE", [1, 1], "INT32")]
    inputs[0].set_data_from_numpy(x)
    inputs[1].set_data_from_numpy(b)
    inputs[2].set_data_from_numpy(np.array([[mode]], dtype=np.int32))
    return inputs


def test_many_concurrent_big_requests_come_back_exact(server):
    n = 24  # even: HTTP (async_infer), odd: gRPC (one client per thread)
    xs = [random_bytes(400_000, 100 + i) for i in range(n)]  # one shape: batched together
    bs = [np.array([[bytes([i]) * (1000 + i), b"", b"tail-%d" % i]], dtype=np.object_)
          for i in range(n)]
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", concurrency=n)
    pending = {i: http.async_infer("shm_echo_py", echo_inputs(httpclient, xs[i], bs[i]))
               for i in range(0, n, 2)}

    def grpc_one(i):
        c = grpcclient.InferenceServerClient(server.target())
        return c.infer("shm_echo_py", echo_inputs(grpcclient, xs[i], bs[i]))

    with ThreadPoolExecutor(n // 2) as pool:
        results = dict(zip(range(1, n, 2), pool.map(grpc_one, range(1, n, 2))))
    results.update({i: p.get_result() for i, p in pending.items()})
    rows = []
    for i in range(n):
        r = results[i]
        np.testing.assert_array_equal(r.as_numpy("Y"), xs[i])
        assert r.as_numpy("BO").tolist() == bs[i].tolist()
        rows.append(json.loads(r.as_numpy("INFO")[0][0])["rows"])
    assert max(rows) > 1, rows  # batches of several big requests shared the pool at once


def test_bytes_tensors_larger_than_the_pool(server):
    strings = np.array([[os.urandom(700_000), b"", b"x" * 900_000]], dtype=np.object_)
    for name, c in clients(server):
        r, info = echo(c, module_of(name), random_bytes(8, 5), strings)
        assert r.as_numpy("BO").tolist() == strings.tolist()
        assert info["in_pool"] is True


def test_aio_clients(server):
    import asyncio
    x = random_bytes(2 * DEFAULT, 6)

    async def run():
        for name, c in aio_clients(server):
            try:
                inputs = echo_inputs(module_of(name), x, np.array([[b"a"]], dtype=np.object_))
                r = await c.infer("shm_echo_py", inputs)
                np.testing.assert_array_equal(r.as_numpy("Y"), x)
            finally:
                await c.close()
    asyncio.run(run())


def test_stub_killed_mid_request_with_the_pool_in_use(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    _, info = echo(c, httpclient, random_bytes(10, 7))
    pid = info["pid"]
    fds_before = memfds(server.proc.pid)
    big = random_bytes(2 * DEFAULT, 8)
    errors = []

    def slow():
        try:
            echo(httpclient.InferenceServerClient(f"127.0.0.1:{server.port}"), httpclient, big,
                 mode=1)
        except InferenceServerException as e:
            errors.append(e.message())

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(1.0)  # inside execute(), its inputs in the pool
    os.kill(pid, signal.SIGKILL)
    t.join(20)
    assert errors == ["Failed to process the request(s) for model instance 'shm_echo_py_0_0', "
                      "message: Stub process is not healthy."], errors
    # The instance restarts its stub in the background (ADR 0015); requests meanwhile fail with
    # the same text, so wait until a new stub answers.
    def new_stub_answers():
        try:
            return echo(c, httpclient, random_bytes(10, 3))[1]["pid"] != pid
        except InferenceServerException:
            return False
    wait_for(new_stub_answers, "a new stub", timeout=20)
    for name, client in clients(server):
        x = random_bytes(DEFAULT + 1, 9)
        r, after = echo(client, module_of(name), x)
        np.testing.assert_array_equal(r.as_numpy("Y"), x)
        assert after["pid"] != pid and after["in_pool"] is True
    # The dead stub's pool went with it: no memfd left behind, nothing in /dev/shm.
    assert len(memfds(server.proc.pid)) == len(fds_before) == 1
    assert not [f for f in os.listdir("/dev/shm") if "nereid" in f]


@pytest.mark.parametrize("setting,text", [
    ("shm-default-byte-size=abc", "stol"),
    ("shm-growth-byte-size=1MB", "stol"),
    ("shm-default-byte-size=0", "shm-default-byte-size can't be smaller than 4 MiBs"),
    ("shm-default-byte-size=-4194304", "shm-default-byte-size can't be smaller than 4 MiBs"),
    ("shm-growth-byte-size=0", "shm-growth-byte-size can't be smaller than or equal to zero."),
    ("shm-growth-byte-size=-1", "shm-growth-byte-size can't be smaller than or equal to zero."),
])
def test_bad_shm_settings_are_refused_at_load(tmp_path, setting, text):
    write_repo(tmp_path)
    s = GrpcServer([str(tmp_path)], ["--exit-on-error=false", "--strict-readiness=false",
                                     f"--backend-config=python,{setting}"],
                   name="client-python-shm-bad").start()
    try:
        for name, c in clients(s):
            assert not c.is_model_ready("shm_echo_py")
        assert f"backend 'python' failed to initialize: {text}" in s.stderr()
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]
