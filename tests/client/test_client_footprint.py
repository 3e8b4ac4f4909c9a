"""Issue 21 goal 4 (footprint): threads named after their job and started only when needed, checked
from /proc while Triton's client (HTTP and gRPC, sync and asyncio) drives the server.

- ready: no executor, load-API, reaper or trace-writer thread; every thread has a known name; the
  metrics port and CPU metrics have no thread of their own (the port is served by the HTTP I/O
  threads, CPU gauges are read on scrape), so Nereid's threads are main, HTTP I/O and gRPC
  completion queues, at most 12 with libgrpc's own on two CPUs;
- ONNX Runtime is mapped only once an ONNX model loads (a repository without one never maps it),
  and its telemetry is off (ADR 0021): no thread of its own, nothing written under $HOME;
- requests run inline need no executor; a burst of concurrent requests (queued behind a busy
  instance) starts the executors, and every answer is still right;
- the load API's threads start with the first load, at most --model-load-thread-count of them;
- the reaper starts with the first unload, and the unloaded model is gone.
"""

import asyncio
import os
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest
import requests

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, grpcclient_aio, httpclient)
from five_models import (FIVE, aio_loads_fail, check_simple, make_five_repo, simple_inputs,
                         wait_for)
from helpers import free_port, nereid_bin, repo

# Names of the threads Nereid starts (common/thread_name.h) and of libgrpc's own.
NEREID_NAMES = {"nereid", "http-io", "grpc-cq", "executor", "load-api", "reaper", "trace-writer",
                "model-load", "onnxruntime"}
GRPC_NAMES = {"event_engine", "timer_manager", "default-executo", "resolver-execut",
              "grpc_global_tim"}
LAZY = {"executor", "load-api", "reaper", "trace-writer"}


def thread_names(server):
    return thread_names_of(server.proc.pid)


def maps_onnxruntime(server):
    with open(f"/proc/{server.proc.pid}/maps") as f:
        return "libonnxruntime" in f.read()


@pytest.fixture(scope="module")
def five_repo(tmp_path_factory):
    return make_five_repo(tmp_path_factory)


def settled_thread_names(server, timeout=10.0):
    """The thread names once every thread has its name. A thread is created with its creator's
    name ("nereid" for main). Nereid's own threads are named by their creator before it goes on
    (StartNamedThread), but gRPC's internal threads and the plugins' name themselves when they
    first run; under ASan on a busy machine one was still "nereid" when read (CI rehearsal, when
    the completion-queue threads still named themselves too)."""
    deadline = time.monotonic() + timeout
    names = thread_names(server)
    while names.count("nereid") > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
        names = thread_names(server)
    return names


def test_ready_server_has_only_named_always_needed_threads(five_repo):
    server = GrpcServer([five_repo], name="footprint-ready").start()
    try:
        names = settled_thread_names(server)
        unknown = set(names) - NEREID_NAMES - GRPC_NAMES
        assert not unknown, names
        assert not (set(names) & LAZY), names
        assert names.count("nereid") == 1, names
        # ONNX Runtime 1.30's telemetry thread (named "onnxruntime" by the plugin when a user
        # opts back in with ORT_DISABLE_TELEMETRY=0) is not started: telemetry is off.
        assert "onnxruntime" not in names, names
        # No thread for the metrics port or CPU metrics (there used to be "metrics-http" and
        # "cpu-metrics"): Nereid's own are main, HTTP I/O and gRPC completion queues.
        own = sorted({n for n in names if n not in GRPC_NAMES})
        assert own == ["grpc-cq", "http-io", "nereid"], names
        if len(os.sched_getaffinity(server.proc.pid)) <= 2:
            # 2 HTTP I/O + 2 completion queues (ADR 0009) + main + libgrpc's 6-7 (its
            # event-engine pool has 2 or 3): 15 before the metrics threads went, 13 before ONNX
            # Runtime's telemetry was turned off.
            assert len(names) <= 12, names
        metrics = requests.get(server.metrics_url(), timeout=10)
        assert metrics.status_code == 200
        assert "nv_cpu_utilization" in metrics.text and "nv_cpu_memory_used_bytes" in metrics.text
        assert sorted(thread_names(server)) == sorted(names)  # a scrape starts no thread
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


def test_onnx_runtime_is_mapped_only_with_the_first_onnx_model(five_repo, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(os.path.join(repo("fixtures"), "broken", "not_onnx"), broken / "not_onnx")
    server = GrpcServer([five_repo, str(broken)], name="footprint-lazy-ort",
                        flags=["--model-control-mode=explicit", "--load-model=identity_fp32"]).start()
    try:
        assert not maps_onnxruntime(server)
        assert "onnxruntime" not in thread_names(server)
        http, grpc = [c for _, c in clients(server)]
        x = np.arange(16, dtype=np.float32).reshape(1, 16)
        for name, c in clients(server):
            module = httpclient if name == "http" else grpcclient
            inp = module.InferInput("INPUT0", [1, 16], "FP32")
            inp.set_data_from_numpy(x)
            np.testing.assert_array_equal(c.infer("identity_fp32", [inp]).as_numpy("OUTPUT0"), x)
        assert not maps_onnxruntime(server)
        # The first ONNX model is not one: ONNX Runtime is mapped to read it, the load fails with
        # its error, and the next ONNX model loads and runs.
        with pytest.raises(InferenceServerException) as e:
            grpc.load_model("not_onnx")
        assert "not_onnx" in e.value.message()
        assert maps_onnxruntime(server)
        assert "onnxruntime" not in thread_names(server), thread_names(server)
        assert not http.is_model_ready("not_onnx")
        grpc.load_model("simple")
        check_simple(http, httpclient)
        check_simple(grpc, grpcclient)

        async def aio():
            for name, c in aio_clients(server):
                try:
                    await c.load_model("vardim_fp32")
                    assert await c.is_model_ready("vardim_fp32"), name
                    module = httpclient if name == "http" else grpcclient
                    a, b, inputs = simple_inputs(module)
                    r = await c.infer("simple", inputs)
                    np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
                finally:
                    await c.close()

        asyncio.run(aio())
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]


def test_onnx_runtime_telemetry_is_off_and_writes_nothing_under_home(five_repo, tmp_path,
                                                                    monkeypatch):
    # ONNX Runtime 1.30 would start its telemetry with the first Ort::Env: a thread and a SQLite
    # file under $HOME/.cache/Microsoft (then HTTPS uploads). Nereid sets ORT_DISABLE_TELEMETRY=1
    # unless the user exported a value (ADR 0021); the runner's own value must not hide that.
    monkeypatch.delenv("ORT_DISABLE_TELEMETRY", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / "xdg-cache")}
    server = GrpcServer([five_repo], name="footprint-telemetry", env=env).start()
    try:
        assert maps_onnxruntime(server)
        for name, c in clients(server):
            check_simple(c, httpclient if name == "http" else grpcclient)
            c.close()
        assert "onnxruntime" not in thread_names(server), thread_names(server)
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert written == [], written


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


def metrics_count(port, model):
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith("nv_inference_count{") and f'model="{model}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_port_without_http_runs_its_own_thread(five_repo):
    """--allow-http=false: no HTTP event loop to share, so the metrics port gets a server (and a
    thread) of its own; scrapes follow what gRPC clients (sync and asyncio) run."""
    grpc_port, metrics_port = free_port(), free_port()
    proc = subprocess.Popen([nereid_bin(), f"--model-repository={five_repo}", "--allow-http=false",
                             "--grpc-address=127.0.0.1", f"--grpc-port={grpc_port}",
                             "--metrics-address=127.0.0.1", f"--metrics-port={metrics_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        assert wait_for(lambda: _ready(c), timeout=60)
        names = thread_names_of(proc.pid)
        assert names.count("metrics-http") == 1 and "http-io" not in names, names
        assert metrics_count(metrics_port, "simple") == 0
        check_simple(c, grpcclient)

        async def aio():
            ac = grpcclient_aio.InferenceServerClient(f"127.0.0.1:{grpc_port}")
            try:
                a, b, inputs = simple_inputs(grpcclient)
                r = await ac.infer("simple", inputs)
                np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
            finally:
                await ac.close()

        asyncio.run(aio())
        assert metrics_count(metrics_port, "simple") == 2
        r = requests.post(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10)
        assert r.status_code == 405 and r.json() == {"error": "Method Not Allowed"}
        c.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_metrics_on_the_http_event_loop_follow_both_protocols(five_repo):
    """The metrics port served by the HTTP I/O threads: scrapes, a bad method and a bad path
    interleaved with HTTP and gRPC inferences (sync and asyncio) on the same loop."""
    server = GrpcServer([five_repo], name="footprint-metrics-loop").start()
    try:
        port = server.metrics_port
        before = metrics_count(port, "simple")
        for name, c in clients(server):
            check_simple(c, httpclient if name == "http" else grpcclient)
            assert requests.get(server.metrics_url("/nope"), timeout=10).status_code == 400

        async def aio():
            for name, c in aio_clients(server):
                module = httpclient if name == "http" else grpcclient
                try:
                    a, b, inputs = simple_inputs(module)
                    r = await c.infer("simple", inputs)
                    np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
                finally:
                    await c.close()

        asyncio.run(aio())
        assert metrics_count(port, "simple") == before + 4
        assert "metrics-http" not in thread_names(server)
        assert requests.delete(server.metrics_url(), timeout=10).status_code == 405
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]


def _ready(client):
    try:
        return client.is_server_ready()
    except InferenceServerException:
        return False


def thread_names_of(pid):
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # a thread that just ended
    return names


def test_a_missing_onnx_runtime_fails_only_onnx_loads_with_tritons_text(five_repo, tmp_path):
    """The plugin maps libonnxruntime.so.1 through its RUNPATH only when an ONNX model loads: a copy
    whose RUNPATH points nowhere starts the server, serves non-ONNX models, and answers ONNX loads
    with Triton's "unable to load backend library" (HTTP and gRPC, sync and asyncio)."""
    backends = tmp_path / "backends"
    backends.mkdir()
    built = os.path.join(os.path.dirname(nereid_bin()), "backends")
    for name in ("libnereid_identity.so", "libnereid_onnxruntime.so"):
        shutil.copy(os.path.join(built, name), backends / name)
    plugin = backends / "libnereid_onnxruntime.so"
    data = bytearray(plugin.read_bytes())
    at = data.find(b"/onnxruntime/lib")  # inside the DT_RUNPATH string (.deps/onnxruntime/lib)
    assert at > 0
    start, end = data.rfind(b"\0", 0, at) + 1, data.find(b"\0", at)
    data[start:end] = b"/nonexistent".ljust(end - start, b"\0")
    plugin.write_bytes(bytes(data))
    server = GrpcServer([five_repo], name="footprint-no-ort",
                        flags=["--model-control-mode=explicit", "--load-model=identity_fp32",
                               f"--backend-directory={backends}"]).start()
    try:
        assert not maps_onnxruntime(server)
        for name, c in clients(server):
            assert c.is_model_ready("identity_fp32"), name
            with pytest.raises(InferenceServerException) as e:
                c.load_model("simple")
            assert "unable to load backend library: libonnxruntime.so.1" in e.value.message(), \
                (name, e.value.message())
            assert not c.is_model_ready("simple"), name

        asyncio.run(aio_loads_fail(server, "vardim_fp32", "unable to load backend library"))
        assert not maps_onnxruntime(server)
        x = np.arange(16, dtype=np.float32).reshape(1, 16)
        inp = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
        inp.set_data_from_numpy(x)
        c = grpcclient.InferenceServerClient(server.target())
        np.testing.assert_array_equal(c.infer("identity_fp32", [inp]).as_numpy("OUTPUT0"), x)
    finally:
        assert server.stop() == 0, server.stderr()[-4000:]
