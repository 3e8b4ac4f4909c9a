"""Model control modes and the repository API over HTTP (seed 002, REFERENCE.md §1.2 rows 12-14,
§5): modes NONE / EXPLICIT / POLL, index, load, unload, load overrides (`config`, `file:`), and
every bad input of the issue with Triton's error format."""

import glob
import json
import os
import tempfile
import uuid

import pytest

from helpers import Server, assert_error, repo, run_to_exit, free_port
from mm_helpers import (b64, check_simple_ok, copy_model, file_bytes, index, index_entry,
                        infer_simple, load, mode_server, ready, simple_config_json, unload)

NOT_ALLOWED = "explicit model load / unload is not allowed if polling is enabled"
SIMPLE_ONNX = ("fixtures", "single_good", "simple", "1", "model.onnx")


@pytest.fixture(scope="module")
def explicit(tmp_path_factory):
    """EXPLICIT mode over a private repository: simple, simple_b (copies), loaded on demand."""
    root = tmp_path_factory.mktemp("explicit_repo")
    copy_model(("fixtures", "single_good"), "simple", root)
    copy_model(("fixtures", "single_good"), "simple", root, "simple_b")
    s = mode_server([root], "explicit", name="explicit")
    s.root = root
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


# ------------------------------------------------------------------------------------ modes

@pytest.mark.parametrize("mode", ["none", "poll"])
def test_load_and_unload_rejected_outside_explicit_mode(mode):
    with mode_server([repo("fixtures", "single_good")], mode) as s:
        assert_error(load(s, "simple"), 503, NOT_ALLOWED)
        assert_error(unload(s, "simple"), 503, NOT_ALLOWED)
        assert ready(s, "simple")  # nothing was unloaded
        assert index(s) == [{"name": "simple", "version": "1", "state": "READY", "reason": ""}]
    assert s.returncode == 0


def test_none_mode_ignores_repository_changes(tmp_path):
    copy_model(("fixtures", "single_good"), "simple", tmp_path)
    with mode_server([tmp_path], "none") as s:
        copy_model(("fixtures", "single_good"), "simple", tmp_path, "late")
        assert [e["name"] for e in index(s)] == ["late", "simple"]  # listed, never loaded
        assert index_entry(s, "late") == [{"name": "late"}]
        assert not ready(s, "late")


def test_explicit_mode_without_load_model_loads_nothing(explicit):
    assert index_entry(explicit, "simple_b") in ([{"name": "simple_b"}],
                                                 [{"name": "simple_b", "version": "1",
                                                   "state": "UNAVAILABLE", "reason": "unloaded"}])
    r = infer_simple(explicit, "simple_b")
    assert_error(r, contains="simple_b")


def test_explicit_load_model_flag_and_wildcard(tmp_path):
    copy_model(("fixtures", "single_good"), "simple", tmp_path)
    copy_model(("fixtures", "single_good"), "simple", tmp_path, "other")
    with mode_server([tmp_path], "explicit", ["--load-model=simple"]) as s:
        assert ready(s, "simple") and not ready(s, "other")
    with mode_server([tmp_path], "explicit", ["--load-model=*"]) as s:
        assert ready(s, "simple") and ready(s, "other")


def test_explicit_load_model_unknown_fails_start_with_exit_on_error(tmp_path):
    copy_model(("fixtures", "single_good"), "simple", tmp_path)
    p = run_to_exit([f"--model-repository={tmp_path}", "--model-control-mode=explicit",
                     "--load-model=missing", f"--http-port={free_port()}", "--allow-grpc=false"])
    assert p.returncode != 0
    assert b"failed to load 'missing'" in p.stderr
    with mode_server([tmp_path], "explicit", ["--load-model=missing", "--load-model=simple",
                                              "--exit-on-error=false"]) as s:
        assert ready(s, "simple")


@pytest.mark.parametrize("args,message", [
    (["--load-model=simple"],
     "Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well."),
    (["--model-control-mode=explicit", "--load-model=*", "--load-model=simple"],
     "Wildcard model name '*' must be the ONLY startup model if specified at all."),
    (["--model-control-mode=sometimes"], "--model-control-mode"),
])
def test_model_control_flag_errors(args, message):
    p = run_to_exit([f"--model-repository={repo('fixtures', 'single_good')}",
                     f"--http-port={free_port()}"] + args)
    assert p.returncode != 0
    assert message.encode() in p.stderr, p.stderr


# ------------------------------------------------------------------------------------ API

def test_load_infer_unload_cycle(explicit):
    r = load(explicit, "simple")
    assert r.status_code == 200 and r.content == b"", r.content
    check_simple_ok(infer_simple(explicit, "simple"))
    assert index_entry(explicit, "simple") == [
        {"name": "simple", "version": "1", "state": "READY", "reason": ""}]
    assert index(explicit, ready=True) == [
        {"name": "simple", "version": "1", "state": "READY", "reason": ""}]
    r = unload(explicit, "simple")
    assert r.status_code == 200 and r.content == b""
    assert_error(infer_simple(explicit, "simple"), contains="simple")
    assert index_entry(explicit, "simple") == [
        {"name": "simple", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"}]
    assert index(explicit, ready=True) == []
    assert explicit.get("/v2/health/ready").status_code == 200  # unloaded is tolerated
    assert load(explicit, "simple").status_code == 200
    check_simple_ok(infer_simple(explicit, "simple"))


def test_unload_of_a_model_that_is_not_loaded_succeeds(explicit):
    assert unload(explicit, "simple_b").status_code == 200
    assert unload(explicit, "never_existed").status_code == 200


def test_unload_dependents_parameter(explicit):
    assert load(explicit, "simple_b").status_code == 200
    assert unload(explicit, "simple_b", {"unload_dependents": True}).status_code == 200
    assert not ready(explicit, "simple_b")
    assert_error(unload(explicit, "simple_b", {"unload_dependents": "yes"}), 400,
                 "unload_dependents")


def test_load_unknown_model(explicit):
    assert_error(load(explicit, "no_such_model"), 500,
                 "failed to load 'no_such_model', failed to poll from model repository")


def test_index_rejects_bad_bodies(explicit):
    assert_error(explicit.post("/v2/repository/index", data="{not json"), 400)
    assert_error(explicit.post("/v2/repository/index", data='{"ready": "yes"}'), 400, "ready")
    assert explicit.get("/v2/repository/index").status_code == 405


def test_named_repository_is_unsupported(explicit):
    assert_error(explicit.post("/v2/repository/myrepo/index"), 501, "repository_name")
    assert_error(explicit.post("/v2/repository/myrepo/models/simple/load"), 501,
                 "repository_name")


EMPTY_NAME = "Model name cannot be empty. Please enter a valid name to deploy."


@pytest.mark.parametrize("quoted", ["%20", "%20%20%09", "a%2Fb", "%2E%2E", "%2E", "..%2F..%2Fetc",
                                    "a%00b", "a%0Ab", "a%5Cb"])
def test_invalid_model_names_are_rejected(explicit, quoted):
    blank = quoted.replace("%20", "") == ""
    for action in ("load", "unload"):
        r = explicit.post(f"/v2/repository/models/{quoted}/{action}")
        assert_error(r, 400, EMPTY_NAME if blank else "invalid model name")


@pytest.mark.parametrize("name", ["...", "x..y", "..a", "a.."])
def test_dotted_model_names_are_ordinary_names(explicit, name):
    # Only "." and ".." path components, separators and NUL are hostile; "..." is a name.
    r = explicit.post(f"/v2/repository/models/{name}/load")
    assert_error(r, 500, f"failed to load '{name}', failed to poll from model repository")
    assert explicit.post(f"/v2/repository/models/{name}/unload").status_code == 200


def test_load_body_errors(explicit):
    path = "/v2/repository/models/simple/load"
    assert_error(explicit.post(path, data="{"), 400)
    assert_error(explicit.post(path, data='{"parameters": 5}'), 400, "parameters")
    assert_error(explicit.post(path, data='{"parameters": {"bogus": 1}}'), 400,
                 "Unrecognized load parameter 'bogus' with type 'INT'")
    assert_error(explicit.post(path, data='{"parameters": {"config": 5}}'), 400, "config")


# ------------------------------------------------------------------------------------ overrides

def test_config_override_must_be_json(explicit):
    assert_error(load(explicit, "simple", {"config": "{not json"}), 400,
                 "failed to load 'simple', Invalid config override")


def test_config_override_must_be_a_valid_configuration(explicit):
    bad = json.loads(simple_config_json("simple"))
    bad["max_batch_size"] = -1
    assert_error(load(explicit, "simple", {"config": json.dumps(bad)}), 400,
                 "load failed for model 'simple'")
    unknown_field = json.dumps({"name": "simple", "no_such_field": 1})
    assert_error(load(explicit, "simple", {"config": unknown_field}), 400,
                 "failed to load 'simple', Invalid config override")


def test_config_override_replaces_config_pbtxt(explicit):
    cfg = json.loads(simple_config_json("simple_b"))
    cfg["max_batch_size"] = 2
    assert load(explicit, "simple_b", {"config": json.dumps(cfg)}).status_code == 200
    assert explicit.get("/v2/models/simple_b/config").json()["max_batch_size"] == 2
    # A plain load goes back to config.pbtxt.
    assert load(explicit, "simple_b").status_code == 200
    assert explicit.get("/v2/models/simple_b/config").json()["max_batch_size"] == 8


def test_file_override_without_config(explicit):
    r = load(explicit, "uploaded", {"file:1/model.onnx": b64(file_bytes(*SIMPLE_ONNX))})
    assert_error(r, 400, "failed to load 'uploaded', Load parameter 'config' must be specified "
                 "for model file override")


def test_file_override_with_bad_base64(explicit):
    r = load(explicit, "uploaded", {"config": simple_config_json("uploaded"),
                                    "file:1/model.onnx": "not*base64!"})
    assert_error(r, 400, "base64")


def temp_dir_of(server, model):
    line = [l for l in server.stderr().splitlines() if f"loading model '{model}' from " in l][-1]
    return line.split(" from ", 1)[1].strip()


def test_file_override_loads_from_a_private_temporary_directory(explicit):
    params = {"config": simple_config_json("uploaded"),
              "file:1/model.onnx": b64(file_bytes(*SIMPLE_ONNX))}
    assert load(explicit, "uploaded", params).status_code == 200
    check_simple_ok(infer_simple(explicit, "uploaded"))
    tmp = temp_dir_of(explicit, "uploaded")
    assert os.path.isfile(os.path.join(tmp, "1", "model.onnx"))
    assert not tmp.startswith(str(explicit.root))
    assert (os.stat(tmp).st_mode & 0o777) == 0o700
    assert unload(explicit, "uploaded").status_code == 200
    from mm_helpers import wait_until
    wait_until(lambda: not os.path.exists(tmp), what="the temporary directory to be removed")


TRAVERSALS = ["../{n}", "1/../../{n}", "/tmp/{n}", "..", "1/..", "", "1/\x01{n}",
              "./../{n}", "1/./../../{n}", "1//../../{n}"]


@pytest.mark.parametrize("key", TRAVERSALS)
def test_file_override_traversal_is_rejected_and_writes_nothing(explicit, key):
    name = f"nereid_evil_{uuid.uuid4().hex}"
    params = {"config": simple_config_json("uploaded_evil"),
              "file:1/model.onnx": b64(file_bytes(*SIMPLE_ONNX)),
              "file:" + key.format(n=name): b64(b"pwned")}
    assert_error(load(explicit, "uploaded_evil", params), 400, "file:")
    # Every place an escape from <tmpdir>/nereid-model-XXXXXX could land, and the repository.
    tmp = tempfile.gettempdir()
    candidates = [os.path.join(tmp, name), os.path.join(os.path.dirname(tmp), name),
                  os.path.join("/", name), os.path.join("/tmp", name)]
    assert [c for c in candidates if os.path.lexists(c)] == []
    assert glob.glob(f"{explicit.root}/**/{name}", recursive=True) == []
    assert not ready(explicit, "uploaded_evil")


def test_duplicate_file_paths_are_rejected(explicit):
    params = {"config": simple_config_json("dup"), "file:1/model.onnx": b64(b"a"),
              "file:1//model.onnx": b64(b"b")}
    assert_error(load(explicit, "dup", params), 400, "more than once")


def test_server_survives_the_module(explicit):
    assert explicit.get("/v2/health/live").status_code == 200


@pytest.mark.parametrize("quoted", ["%20", "a%2Fb", "%2E%2E", "a%0Ab"])
@pytest.mark.parametrize("suffix", ["", "/ready", "/config", "/infer"])
def test_invalid_model_names_in_lookups(explicit, quoted, suffix):
    path = f"/v2/models/{quoted}{suffix}"
    r = explicit.post(path, data="{}") if suffix == "/infer" else explicit.get(path)
    assert_error(r, 400, EMPTY_NAME if quoted == "%20" else "invalid model name")
