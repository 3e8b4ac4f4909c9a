"""Issue 18 item 2, "the model's readiness and metrics show it": a Python model's stub killed
from outside (SIGKILL) is restarted by its instance's watcher; while no instance can serve, the
model is not ready (is_model_ready, the repository index's UNAVAILABLE with the reason), its
requests fail with Triton's "Stub process is not healthy" text, the metrics count the restart
and show no healthy instance; once the new stub initialized the model is READY again
(docs/adr/0015-instance-health.md). The restart is held open by the model's initialize(), which
waits while a file the test controls exists."""

import asyncio
import os
import re
import signal

import numpy as np
import pytest
import requests

from cancel_support import wait_for
from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient)
import python_models

MODEL = "held_restart_py"
NOT_HEALTHY = (f"Failed to process the request(s) for model instance '{MODEL}_0_0', message: "
               "Stub process is not healthy.")
REASON = f"stub process of instance '{MODEL}_0_0' is restarting"


def write_model(root, count=1):
    cfg = python_models.config(MODEL, [python_models.io("IN", "TYPE_INT32", [1])],
                               [python_models.io("OUT", "TYPE_INT32", [1])],
                               extra=f"instance_group [ {{ count: {count} kind: KIND_CPU }} ]")
    (root / MODEL / "1").mkdir(parents=True)
    (root / MODEL / "config.pbtxt").write_text(cfg)
    (root / MODEL / "1" / "model.py").write_text(python_models.HELD_RESTART)


def stub_pids(server):
    return python_models.stub_pids(server, MODEL)


def wait_until(predicate, what):
    wait_for(predicate, what, timeout=30)


def metric(server, name):
    text = requests.get(server.metrics_url(), timeout=10).text
    m = re.search(rf'^{name}{{model="{MODEL}",version="1"}} (\S+)$', text, re.M)
    return float(m.group(1)) if m else None


def infer(module, client):
    t = module.InferInput("IN", [1], "INT32")
    t.set_data_from_numpy(np.array([7], dtype=np.int32))
    return client.infer(MODEL, [t])


def index_entry(name, client):
    index = client.get_model_repository_index()
    if name == "http":
        return next((m["state"], m.get("reason", "")) for m in index if m["name"] == MODEL)
    return next((m.state, m.reason) for m in index.models if m.name == MODEL)


@pytest.fixture
def server(tmp_path):
    write_model(tmp_path)
    s = GrpcServer([str(tmp_path)], name="client-python-health").start()
    s.hold = tmp_path / MODEL / "hold"
    yield s
    if s.hold.exists():
        s.hold.unlink()
    assert s.stop() == 0, s.stderr()[-4000:]


def test_killed_stub_readiness_metrics_and_recovery(server):
    cs = clients(server)
    for name, c in cs:
        module = httpclient if name == "http" else grpcclient
        assert c.is_model_ready(MODEL)
        assert infer(module, c).as_numpy("OUT")[0] == 7
    assert metric(server, "nereid_model_instance_restarts") == 0
    assert metric(server, "nereid_model_healthy_instances") == 1
    [pid] = stub_pids(server)

    server.hold.write_text("")  # the restart's initialize() waits while this exists
    os.kill(pid, signal.SIGKILL)
    for name, c in cs:
        wait_until(lambda: not c.is_model_ready(MODEL), f"{name} readiness false")
    # The restart is held: everything shows it until the hold is lifted.
    for name, c in cs:
        module = httpclient if name == "http" else grpcclient
        assert not c.is_model_ready(MODEL)
        assert not c.is_model_ready(MODEL, "1")
        assert index_entry(name, c) == ("UNAVAILABLE", REASON)
        with pytest.raises(InferenceServerException) as e:
            infer(module, c)
        assert e.value.message() == NOT_HEALTHY
    assert metric(server, "nereid_model_instance_restarts") == 1
    assert metric(server, "nereid_model_healthy_instances") == 0

    async def aio_ready():
        out = []
        for _, c in aio_clients(server):
            try:
                out.append(await c.is_model_ready(MODEL))
            finally:
                await c.close()
        return out
    assert asyncio.run(aio_ready()) == [False, False]

    server.hold.unlink()
    for name, c in cs:
        wait_until(lambda: c.is_model_ready(MODEL), f"{name} readiness back")
    assert asyncio.run(aio_ready()) == [True, True]
    for name, c in cs:
        module = httpclient if name == "http" else grpcclient
        assert index_entry(name, c) == ("READY", "")
        assert infer(module, c).as_numpy("OUT")[0] == 7
    assert metric(server, "nereid_model_instance_restarts") == 1
    assert metric(server, "nereid_model_healthy_instances") == 1
    [new_pid] = stub_pids(server)
    assert new_pid != pid
    server.wait_for_log(f"stub of '{MODEL}_0_0' restarted")


def test_one_dead_stub_of_two_keeps_the_model_ready(tmp_path):
    write_model(tmp_path, count=2)
    s = GrpcServer([str(tmp_path)], name="client-python-health-two").start()
    hold = tmp_path / MODEL / "hold"
    try:
        pids = stub_pids(s)
        assert len(pids) == 2
        hold.write_text("")
        os.kill(pids[0], signal.SIGKILL)
        wait_until(lambda: metric(s, "nereid_model_healthy_instances") == 1, "one unhealthy")
        assert metric(s, "nereid_model_instance_restarts") == 1
        for name, c in clients(s):
            assert c.is_model_ready(MODEL)  # the other instance still serves
            assert index_entry(name, c) == ("READY", "")
        hold.unlink()
        wait_until(lambda: metric(s, "nereid_model_healthy_instances") == 2, "both healthy")
        assert len(stub_pids(s)) == 2
    finally:
        if hold.exists():
            hold.unlink()
        assert s.stop() == 0, s.stderr()[-4000:]


def test_unload_during_a_held_restart(tmp_path):
    """Unloading while a restart waits in initialize() kills that stub; the model unloads and
    loads again."""
    write_model(tmp_path)
    s = GrpcServer([str(tmp_path)], ["--model-control-mode=explicit", f"--load-model={MODEL}"],
                   name="client-python-health-unload").start()
    hold = tmp_path / MODEL / "hold"
    try:
        h = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        [pid] = stub_pids(s)
        hold.write_text("")
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not h.is_model_ready(MODEL), "readiness false")
        h.unload_model(MODEL)
        wait_until(lambda: not stub_pids(s), "stubs gone")
        hold.unlink()
        h.load_model(MODEL)
        assert h.is_model_ready(MODEL)
        assert metric(s, "nereid_model_instance_restarts") == 0  # a new version's counter
    finally:
        if hold.exists():
            hold.unlink()
        assert s.stop() == 0, s.stderr()[-4000:]
