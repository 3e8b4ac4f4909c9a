"""The Python backend's doorbell (ADR 0020), through Triton's own client: with
NEREID_PYTHON_SPIN_US set and the server free to run on several CPUs, the server and its stubs poll
the socket for each other's next frame before they block. Requests from many threads and asyncio
tasks at once, over HTTP and gRPC, are answered with their own data; a stub killed in the middle of
a request (while the server spins for its answer) fails that request and is restarted; a bad value
of the variable fails the model's load with its text."""

import asyncio
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from cancel_support import wait_for
from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            module_of, repository_index)
from python_models import config

SPIN_US = 200

# O = 2 * F + the request's own offset N; PID and SPIN (the stub's spin in ns) tell which stub
# answered and whether it polls. SLEEP_MS > 0: writes the stub's pid to `sleeping` and sleeps.
ECHO = '''
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            f = pb_utils.get_input_tensor_by_name(r, "F").as_numpy()
            n = pb_utils.get_input_tensor_by_name(r, "N").as_numpy()
            sleep_ms = int(pb_utils.get_input_tensor_by_name(r, "SLEEP_MS").as_numpy()[0])
            if sleep_ms:
                with open(os.path.join(os.path.dirname(__file__), "..", "sleeping"), "w") as s:
                    s.write(str(os.getpid()))
                time.sleep(sleep_ms / 1000)
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("O", (2 * f + n).astype(np.float32)),
                pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64)),
                pb_utils.Tensor("SPIN", np.array([pb_utils._stub.channel.spin_ns],
                                                 dtype=np.int64))]))
        return out
'''


def write(root):
    cfg = config("echo_py", ['{ name: "F" data_type: TYPE_FP32 dims: [ -1 ] }',
                             '{ name: "N" data_type: TYPE_FP32 dims: [ 1 ] }',
                             '{ name: "SLEEP_MS" data_type: TYPE_INT32 dims: [ 1 ] }'],
                 ['{ name: "O" data_type: TYPE_FP32 dims: [ -1 ] }',
                  '{ name: "PID" data_type: TYPE_INT64 dims: [ 1 ] }',
                  '{ name: "SPIN" data_type: TYPE_INT64 dims: [ 1 ] }'],
                 extra="instance_group [ { count: 2 kind: KIND_CPU } ]")
    (root / "echo_py" / "1").mkdir(parents=True)
    (root / "echo_py" / "config.pbtxt").write_text(cfg)
    (root / "echo_py" / "1" / "model.py").write_text(ECHO)


def start(tmp_path_factory, spin, name):
    root = tmp_path_factory.mktemp(name)
    write(root)
    s = GrpcServer([str(root)], ["--backend-config=python,stub-timeout-seconds=20",
                                 "--exit-on-error=false"], name=name,
                   env={"NEREID_PYTHON_SPIN_US": spin}).start()
    s.root = root
    return s


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = start(tmp_path_factory, str(SPIN_US), "client-python-doorbell")
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def several_cpus(server):
    return len(os.sched_getaffinity(server.proc.pid)) > 1


def request(module, k, size=16, sleep_ms=0):
    f = (np.arange(size, dtype=np.float32) + k) % 97
    inputs = []
    for name, data, dtype in (("F", f, "FP32"), ("N", np.array([k], dtype=np.float32), "FP32"),
                              ("SLEEP_MS", np.array([sleep_ms], dtype=np.int32), "INT32")):
        t = module.InferInput(name, list(data.shape), dtype)
        t.set_data_from_numpy(data)
        inputs.append(t)
    return 2 * f + k, inputs


def test_the_stubs_poll_when_they_may_run_on_another_cpu(server):
    if not several_cpus(server):
        pytest.skip("the server may run on one CPU only: nothing spins there")
    for name, c in clients(server):
        want, inputs = request(module_of(name), 1)
        result = c.infer("echo_py", inputs)
        np.testing.assert_array_equal(result.as_numpy("O"), want)
        assert result.as_numpy("SPIN")[0] == SPIN_US * 1000


def test_requests_from_many_threads_get_their_own_answers(server):
    def one(args):
        name, c, k = args
        want, inputs = request(module_of(name), k, size=1 + k % 300)
        got = c.infer("echo_py", inputs)
        np.testing.assert_array_equal(got.as_numpy("O"), want)
        return int(got.as_numpy("PID")[0])

    for name, _ in clients(server):
        # One client per thread (a client is not shared between threads).
        local = threading.local()

        def client_of_thread():
            if not hasattr(local, "c"):
                local.c = dict(clients(server))[name]
            return local.c

        with ThreadPoolExecutor(16) as pool:
            pids = set(pool.map(lambda k: one((name, client_of_thread(), k)), range(400)))
        assert len(pids) == 2  # both instances served


def test_asyncio_clients_get_their_own_answers(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                async def one(k):
                    want, inputs = request(module_of(name), k, size=1 + k % 50)
                    got = await c.infer("echo_py", inputs)
                    np.testing.assert_array_equal(got.as_numpy("O"), want)
                await asyncio.gather(*(one(k) for k in range(200)))
            finally:
                await c.close()
    asyncio.run(run())


def test_a_stub_killed_during_a_request_fails_it_and_is_restarted(server):
    sleeping = server.root / "echo_py" / "sleeping"
    for name, c in clients(server):
        if sleeping.exists():
            sleeping.unlink()
        errors = []

        def call():  # a client of its own (the HTTP client is not shared between threads)
            try:
                dict(clients(server))[name].infer("echo_py", request(module_of(name), 3, sleep_ms=10_000)[1])
            except InferenceServerException as e:
                errors.append(e.message())

        restarts = server.stderr().count("restarted (pid")
        t = threading.Thread(target=call)
        t.start()
        wait_for(lambda: sleeping.exists() and sleeping.read_text() != "", "the sleeping stub")
        pid = int(sleeping.read_text())
        os.kill(pid, signal.SIGKILL)
        t.join(30)
        assert not t.is_alive()
        assert len(errors) == 1 and errors[0].endswith("Stub process is not healthy."), errors
        wait_for(lambda: server.stderr().count("restarted (pid") > restarts, "the restarted stub",
                 timeout=30)
        pids = set()
        for k in range(20):  # both instances answer again, the killed stub in neither
            want, inputs = request(module_of(name), k)
            got = c.infer("echo_py", inputs)
            np.testing.assert_array_equal(got.as_numpy("O"), want)
            pids.add(int(got.as_numpy("PID")[0]))
        assert pid not in pids


@pytest.mark.parametrize("value", ["abc", "1001", "-5"])
def test_a_bad_spin_value_fails_the_load_with_its_text(tmp_path_factory, value):
    s = start(tmp_path_factory, value, "client-python-doorbell-bad")
    try:
        for name, c in clients(s):
            assert not c.is_model_ready("echo_py")
            row = {r["name"]: r for r in repository_index(name, c)}["echo_py"]
            assert row["state"] == "UNAVAILABLE"
            assert ("NEREID_PYTHON_SPIN_US must be a whole number of microseconds from 0 to "
                    f"1000, got '{value}'") in row["reason"], row
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]
