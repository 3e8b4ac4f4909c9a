"""POLL mode (seed 002): added / removed models, added / removed version directories, config and
label file edits, the two-scan stability rule (a model copied in slowly is never loaded
half-written), retry after a failed load, duplicates, SIGHUP."""

import json
import os
import shutil
import signal
import time

import numpy as np
import pytest

from helpers import build_infer_request, parse_response, repo, tensor
from mm_helpers import (check_simple_ok, copy_model, index_entry, infer_simple, infer_versioned,
                        mode_server, ready, wait_until)

POLL_TIMEOUT = 20.0  # a change needs two 1 s scans; generous for a loaded 2-core machine


@pytest.fixture(scope="module")
def poll(tmp_path_factory):
    root = tmp_path_factory.mktemp("poll_repo")
    copy_model(("fixtures", "single_good"), "simple", root)
    s = mode_server([root], "poll", ["--repository-poll-secs=1", "--log-verbose=1"], name="poll")
    s.root = root
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def test_startup_loads_everything(poll):
    check_simple_ok(infer_simple(poll, "simple"))


def test_added_model_is_loaded_and_removed_model_unloaded(poll):
    copy_model(("fixtures", "single_good"), "simple", poll.root, "added")
    wait_until(lambda: ready(poll, "added"), POLL_TIMEOUT, what="'added' to load")
    check_simple_ok(infer_simple(poll, "added"))
    shutil.rmtree(os.path.join(poll.root, "added"))
    wait_until(lambda: infer_simple(poll, "added").status_code == 404, POLL_TIMEOUT,
               what="'added' to be removed")
    wait_until(lambda: index_entry(poll, "added") == [], POLL_TIMEOUT, what="the index to drop it")
    check_simple_ok(infer_simple(poll, "simple"))


@pytest.fixture()
def poll2(tmp_path):
    """A poll server with a 2 s interval: the slow copy below writes every 0.25 s, so only a
    stall of the test process longer than ~2 s could make a half-written model look settled."""
    s = mode_server([tmp_path], "poll", ["--repository-poll-secs=2"], name="poll2")
    s.root = tmp_path
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def test_model_copied_in_slowly_is_loaded_only_when_complete(poll2):
    poll = poll2
    src = os.path.join(repo("fixtures", "single_good"), "simple")
    dst = os.path.join(poll.root, "slowcopy")
    os.makedirs(os.path.join(dst, "1"))
    with open(os.path.join(src, "config.pbtxt")) as f:
        cfg = f.read().replace('name: "simple"', 'name: "slowcopy"')
    with open(os.path.join(src, "1", "model.onnx"), "rb") as f:
        onnx = f.read()
    with open(os.path.join(dst, "config.pbtxt"), "w") as f:
        f.write(cfg)
    # The model file grows in parts over ~2.5 poll intervals, a write every 0.25 s.
    parts = 20
    step = (len(onnx) + parts - 1) // parts
    with open(os.path.join(dst, "1", "model.onnx"), "wb") as f:
        for i in range(parts):
            f.write(onnx[i * step:(i + 1) * step])
            f.flush()
            time.sleep(0.25)
            assert "loading model 'slowcopy'" not in poll.stderr(), "loaded half-written"
            assert index_entry(poll, "slowcopy") == [{"name": "slowcopy"}]
    complete_at = len(poll.stderr())
    wait_until(lambda: ready(poll, "slowcopy"), POLL_TIMEOUT, what="'slowcopy' to load")
    log = poll.stderr()
    assert "loading model 'slowcopy'" not in log[:complete_at]
    assert log.count("loading model 'slowcopy'") == 1
    assert "failed to load 'slowcopy'" not in log
    check_simple_ok(infer_simple(poll, "slowcopy"))


def test_version_directories_added_and_removed(poll):
    src = copy_model(("fixtures", "features"), "versioned_latest", poll.root, "pv")
    shutil.rmtree(os.path.join(src, "2"))
    shutil.rmtree(os.path.join(src, "3"))
    wait_until(lambda: infer_versioned(poll, "pv") == 1, POLL_TIMEOUT, what="version 1")
    shutil.copytree(os.path.join(repo("fixtures", "features"), "versioned_latest", "2"),
                    os.path.join(src, "2"))
    wait_until(lambda: infer_versioned(poll, "pv") == 2, POLL_TIMEOUT, what="version 2 to serve")
    wait_until(lambda: not ready(poll, "pv", 1), POLL_TIMEOUT, what="version 1 to unload")
    shutil.rmtree(os.path.join(src, "2"))
    wait_until(lambda: infer_versioned(poll, "pv") == 1, POLL_TIMEOUT,
               what="version 1 to serve again")
    assert not ready(poll, "pv", 2)
    # A config.pbtxt edit is picked up: policy `all` brings version 3 back beside 1.
    shutil.copytree(os.path.join(repo("fixtures", "features"), "versioned_latest", "3"),
                    os.path.join(src, "3"))
    with open(os.path.join(src, "config.pbtxt"), "a") as f:
        f.write("version_policy: { all { } }\n")
    wait_until(lambda: ready(poll, "pv", 1) and ready(poll, "pv", 3), POLL_TIMEOUT,
               what="versions 1 and 3")
    assert infer_versioned(poll, "pv", 1) == 1 and infer_versioned(poll, "pv", 3) == 3


def test_failed_model_is_retried_when_its_files_change(poll):
    dst = copy_model(("fixtures", "single_good"), "simple", poll.root, "fixme")
    cfg = os.path.join(dst, "config.pbtxt")
    with open(cfg) as f:
        good = f.read()
    with open(cfg, "w") as f:
        f.write(good.replace("max_batch_size: 8", "max_batch_size: -3"))
    wait_until(lambda: any(e.get("state") == "UNAVAILABLE" for e in index_entry(poll, "fixme")),
               POLL_TIMEOUT, what="the failed load")
    attempts = poll.stderr().count("loading model 'fixme'")
    scans = poll.stderr().count("repository scan:")
    # Two more complete scans (each logs its line when it starts, so wait for a third to start).
    wait_until(lambda: poll.stderr().count("repository scan:") >= scans + 3, POLL_TIMEOUT,
               what="three more scans")
    assert poll.stderr().count("loading model 'fixme'") == attempts  # not retried unchanged
    with open(cfg, "w") as f:
        f.write(good.replace('name: "simple"', 'name: "fixme"'))
    wait_until(lambda: ready(poll, "fixme"), POLL_TIMEOUT, what="the fixed model")
    check_simple_ok(infer_simple(poll, "fixme"))


def classify(server, model):
    body, headers = build_infer_request(
        [tensor("INPUT0", "FP32", np.array([[0.1, 0.9, 0.3, 0.2, 0.5]], np.float32))],
        outputs=[{"name": "OUTPUT0", "parameters": {"classification": 1}}])
    r = server.post(f"/v2/models/{model}/infer", data=body, headers=headers)
    if r.status_code != 200:
        return None
    return parse_response(r)[1]["OUTPUT0"][0]


def test_label_file_edit_reloads_the_model(poll):
    dst = copy_model(("fixtures", "management"), "labelled", poll.root, "plabels")
    wait_until(lambda: classify(poll, "plabels") == "0.900000:1:dog", POLL_TIMEOUT,
               what="the labelled model")
    with open(os.path.join(dst, "labels.txt"), "w") as f:
        f.write("cat\nwolf\nbird\nfish\nfrog\n")
    wait_until(lambda: classify(poll, "plabels") == "0.900000:1:wolf", POLL_TIMEOUT,
               what="the new labels")


@pytest.mark.parametrize("secs", [3600, 0], ids=["timer", "no-thread"])
def test_sighup_triggers_an_immediate_scan(tmp_path, secs):
    copy_model(("fixtures", "single_good"), "simple", tmp_path)
    with mode_server([tmp_path], "poll", [f"--repository-poll-secs={secs}"]) as s:
        copy_model(("fixtures", "single_good"), "simple", tmp_path, "hup")
        for scans in (1, 2):  # the stability rule needs two scans that agree
            s.send_signal(signal.SIGHUP)
            wait_until(lambda: s.stderr().count("rescanning the model repository (SIGHUP)")
                       >= scans, what=f"scan {scans}")
        wait_until(lambda: ready(s, "hup"), what="'hup' to load")
        check_simple_ok(infer_simple(s, "hup"))
    assert s.returncode == 0


def test_sighup_outside_poll_mode_is_ignored(tmp_path):
    copy_model(("fixtures", "single_good"), "simple", tmp_path)
    with mode_server([tmp_path], "none") as s:
        s.send_signal(signal.SIGHUP)
        s.wait_for_log("SIGHUP ignored")
        assert s.alive()
        check_simple_ok(infer_simple(s, "simple"))
    assert s.returncode == 0


def test_duplicate_model_in_two_repositories(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    copy_model(("fixtures", "single_good"), "simple", a)
    with mode_server([a, b], "poll", ["--repository-poll-secs=1"]) as s:
        check_simple_ok(infer_simple(s, "simple"))
        copy_model(("fixtures", "single_good"), "simple", b)
        wait_until(lambda: {"name": "simple", "state": "UNAVAILABLE",
                            "reason": "model appears in two or more repositories"}
                   in index_entry(s, "simple"), POLL_TIMEOUT, what="the duplicate")
        wait_until(lambda: not ready(s, "simple"), POLL_TIMEOUT, what="the duplicate to unload")
    assert s.returncode == 0
