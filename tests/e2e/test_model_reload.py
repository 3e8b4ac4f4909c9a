"""Reload semantics (REFERENCE.md §5.2, §5.3): zero failed requests while a model is reloaded
under load, failed reloads keep the old version serving, requests in flight finish on an
unloaded version, a model directory deleted while loading, version policy re-evaluated on load,
warmup success and failure."""

import os
import shutil
import threading

import numpy as np
import pytest

from helpers import assert_error, build_infer_request, new_session, parse_response, tensor
from mm_helpers import (check_simple_ok, copy_model, index_entry, infer_simple, infer_versioned,
                        load, mode_server, ready, unload, wait_until)


@pytest.fixture()
def explicit(tmp_path):
    copy_model(("fixtures", "single_good"), "simple", tmp_path)
    s = mode_server([tmp_path], "explicit", ["--load-model=simple"], name="reload")
    s.root = tmp_path
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def test_reload_under_continuous_load_drops_no_request(explicit):
    """Two clients keep sending while the model is reloaded ten times: zero failed requests."""
    stop = threading.Event()
    results = {"ok": 0, "failed": []}
    lock = threading.Lock()

    def client():
        session = new_session()
        while not stop.is_set():
            r = infer_simple(explicit, "simple", session=session)
            with lock:
                if r.status_code == 200:
                    results["ok"] += 1
                else:
                    results["failed"].append((r.status_code, r.content[:200]))
        session.close()

    threads = [threading.Thread(target=client) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: results["ok"] >= 10, what="the clients to get going")
        for _ in range(10):
            r = load(explicit, "simple")
            assert r.status_code == 200, r.content
            before = results["ok"]
            wait_until(lambda: results["ok"] > before, what="requests served after a reload")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert results["failed"] == []
    assert explicit.stderr().count("successfully loaded 'simple' version 1") == 11
    check_simple_ok(infer_simple(explicit, "simple"))


def test_failed_reload_keeps_the_old_version_serving(explicit):
    cfg_path = os.path.join(explicit.root, "simple", "config.pbtxt")
    with open(cfg_path) as f:
        good = f.read()
    # A configuration the model file contradicts: the backend refuses to load it.
    with open(cfg_path, "w") as f:
        f.write(good.replace("TYPE_INT32", "TYPE_FP32"))
    assert_error(load(explicit, "simple"), 400, "load failed for model 'simple'")
    check_simple_ok(infer_simple(explicit, "simple"))
    assert index_entry(explicit, "simple") == [
        {"name": "simple", "version": "1", "state": "READY", "reason": ""}]
    # A configuration that does not even parse.
    with open(cfg_path, "w") as f:
        f.write("max_batch_size: [[[")
    assert_error(load(explicit, "simple"), 400, "load failed for model 'simple'")
    check_simple_ok(infer_simple(explicit, "simple"))
    with open(cfg_path, "w") as f:
        f.write(good)
    assert load(explicit, "simple").status_code == 200
    check_simple_ok(infer_simple(explicit, "simple"))


def slow_request(server, results):
    body, headers = build_infer_request([tensor("INPUT0", "FP32", np.array([7.5], np.float32))])
    r = new_session().post(server.url("/v2/models/slow_identity/infer"), data=body,
                           headers=headers, timeout=60)
    results.append(r)


def test_unload_with_requests_in_flight(tmp_path):
    copy_model(("fixtures", "features"), "slow_identity", tmp_path)
    with mode_server([tmp_path], "explicit",
                     ["--load-model=slow_identity", "--log-verbose=1"]) as s:
        results = []
        t = threading.Thread(target=slow_request, args=(s, results))
        t.start()
        # Dispatched (logged just before the handler looks the model up); the model then needs
        # ~300 ms, far longer than the unload round trip below.
        s.wait_for_log("HTTP request: POST /v2/models/slow_identity/infer")
        r = unload(s, "slow_identity")
        assert r.status_code == 200
        in_flight = t.is_alive()
        assert in_flight, "the slow request finished before the unload"
        # New requests fail at once with Triton's error while the old one finishes.
        body, headers = build_infer_request(
            [tensor("INPUT0", "FP32", np.array([1.0], np.float32))])
        assert_error(s.post("/v2/models/slow_identity/infer", data=body, headers=headers),
                     contains="slow_identity")
        if t.is_alive():
            assert [e["state"] for e in index_entry(s, "slow_identity")] == ["UNLOADING"]
        t.join(timeout=60)
        assert results and results[0].status_code == 200, results[0].content
        _, values, _ = parse_response(results[0])
        assert values["OUTPUT0"].tolist() == [7.5]
        wait_until(lambda: index_entry(s, "slow_identity") == [
            {"name": "slow_identity", "version": "1", "state": "UNAVAILABLE",
             "reason": "unloaded"}], what="the version to be released")
    assert s.returncode == 0


def start_slow_load(server):
    """Starts loading slow_warmup on a thread; returns once version 1 is warming up (about a
    second before that version is READY). Returns (thread, [response])."""
    results = []
    t = threading.Thread(target=lambda: results.append(load(server, "slow_warmup")))
    t.start()
    server.wait_for_log("model 'slow_warmup' version 1: warmup sample 'slow'")
    return t, results


def test_model_directory_deleted_while_loading(tmp_path):
    copy_model(("fixtures", "management"), "slow_warmup", tmp_path)
    with mode_server([tmp_path], "explicit") as s:
        t, results = start_slow_load(s)
        shutil.rmtree(os.path.join(tmp_path, "slow_warmup"))
        t.join(timeout=120)
        assert_error(results[0], 400, "load failed for model 'slow_warmup'")
        assert "version 2" in results[0].json()["error"]
        assert s.get("/v2/health/live").status_code == 200
        # The directory is gone: a new load cannot find it.
        assert_error(load(s, "slow_warmup"), 500, "failed to poll from model repository")
    assert s.returncode == 0


def test_load_reevaluates_the_version_policy(tmp_path):
    src = copy_model(("fixtures", "features"), "versioned_latest", tmp_path)
    shutil.rmtree(os.path.join(src, "3"))
    shutil.rmtree(os.path.join(src, "2"))
    with mode_server([tmp_path], "explicit", ["--load-model=versioned_latest"]) as s:
        assert infer_versioned(s, "versioned_latest") == 1
        shutil.copytree(os.path.join(tmp_path, "versioned_latest", "1"),
                        os.path.join(tmp_path, "versioned_latest", "9"))
        assert load(s, "versioned_latest").status_code == 200
        assert infer_versioned(s, "versioned_latest") == 1  # version 9 holds the +1 model
        assert ready(s, "versioned_latest", 9)
        wait_until(lambda: not ready(s, "versioned_latest", 1), what="version 1 to unload")
        assert_error(s.get("/v2/models/versioned_latest/versions/1/ready"), 400)


# ------------------------------------------------------------------------------------ warmup

@pytest.fixture(scope="module")
def management():
    from helpers import repo
    s = mode_server([repo("fixtures", "management")], "explicit", name="management")
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def test_warmup_runs_before_ready(management):
    assert load(management, "warmup_ok").status_code == 200
    log = management.stderr()
    zeros = log.index("model 'warmup_ok' version 1: warmup sample 'zeros' (2 run(s) on 1 instance(s))")
    from_file = log.index("model 'warmup_ok' version 1: warmup sample 'from_file' (1 run(s)")
    done = log.index("successfully loaded 'warmup_ok' version 1")
    assert zeros < from_file < done
    check_simple_ok(infer_simple(management, "warmup_ok"))


@pytest.mark.parametrize("model,needle", [
    ("warmup_bad_size", "warmup sample 'from_file' input 'INPUT0': warmup setting expects 64 "
                        "bytes, but the data provided from 'input0.bin' has 60 bytes"),
    ("warmup_bad_input", "warmup sample 'wrong_dims' failed on instance 0"),
    ("warmup_escape", "warmup sample 'from_file' input 'INPUT0': input_data_file 'input0.bin' "
                      "must stay inside its directory"),
    ("labels_escape", "label_filename 'labels.txt' must stay inside its directory"),
])
def test_warmup_and_label_failures_fail_the_load(management, model, needle):
    msg = assert_error(load(management, model), 400, f"load failed for model '{model}'")
    assert needle in msg
    assert not ready(management, model)
    [entry] = index_entry(management, model)
    assert entry["state"] == "UNAVAILABLE" and needle in entry["reason"]


# ------------------------------------------------------------------------------------ parallel

def test_a_slow_load_blocks_neither_inference_nor_other_loads(tmp_path):
    copy_model(("fixtures", "management"), "slow_warmup", tmp_path)
    copy_model(("fixtures", "single_good"), "simple", tmp_path)
    with mode_server([tmp_path], "explicit", ["--load-model=simple"]) as s:
        t, results = start_slow_load(s)
        # While slow_warmup warms up (~1 s per version), simple serves and reloads.
        check_simple_ok(infer_simple(s, "simple"))
        assert load(s, "simple").status_code == 200
        check_simple_ok(infer_simple(s, "simple"))
        assert t.is_alive(), "slow_warmup finished loading too early for this test to mean much"
        assert {e.get("state") for e in index_entry(s, "slow_warmup")} <= {"LOADING", "READY"}
        t.join(timeout=120)
        assert results[0].status_code == 200, results[0].content
        assert ready(s, "slow_warmup", 1) and ready(s, "slow_warmup", 2)
    assert s.returncode == 0


def test_unload_while_loading_cancels_the_load(tmp_path):
    copy_model(("fixtures", "management"), "slow_warmup", tmp_path)
    with mode_server([tmp_path], "explicit") as s:
        t, results = start_slow_load(s)
        assert unload(s, "slow_warmup").status_code == 200
        t.join(timeout=120)
        assert_error(results[0], 503, "load of model 'slow_warmup' was cancelled by an unload")
        assert not ready(s, "slow_warmup")
        assert {e.get("state") for e in index_entry(s, "slow_warmup")} == {"UNAVAILABLE"}
        assert load(s, "slow_warmup").status_code == 200  # a later load works
    assert s.returncode == 0


def test_concurrent_loads_of_one_model_serialize(explicit):
    results = []
    threads = [threading.Thread(target=lambda: results.append(load(explicit, "simple")))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert [r.status_code for r in results] == [200] * 4
    assert index_entry(explicit, "simple") == [
        {"name": "simple", "version": "1", "state": "READY", "reason": ""}]
    check_simple_ok(infer_simple(explicit, "simple"))
