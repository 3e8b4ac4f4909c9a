"""Model repositories: versions and policies, config features, auto-complete, broken models,
several repositories, start-up failures."""

import numpy as np
import pytest

from helpers import (Server, assert_error, assert_not_ready, check_simple, free_port,
                     output_by_name, parse_response, repo, run_to_exit, simple_inputs, tensor)

X4 = np.array([1, 2, 3, 4], dtype=np.int32)
BROKEN = ["bad_syntax", "name_mismatch", "negative_batch", "no_model_file", "not_onnx",
          "dup_input", "bad_dims", "bad_reshape", "unknown_platform", "bad_datatype_for_model",
          "gpu_kind", "no_versions"]


def infer_add(server, model, version=None):
    """Versioned models compute INPUT0 + version on int32 [4]."""
    return server.infer(model, [tensor("INPUT0", "INT32", X4)], version=version)


def added(resp):
    _, values, _ = parse_response(resp)
    diff = values["OUTPUT0"] - X4
    assert len(set(diff.tolist())) == 1, diff
    return int(diff[0])


# ------------------------------------------------------------------------------------ versions


def test_features_server_is_ready(features_server):
    assert features_server.get("/v2/health/ready").status_code == 200


def test_versioned_policy_all_lists_three_versions(features_server):
    m = features_server.get("/v2/models/versioned").json()
    assert sorted(m["versions"]) == ["1", "2", "3"]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_versioned_policy_all_serves_each_version(features_server, version):
    r = infer_add(features_server, "versioned", version)
    assert added(r) == version
    assert r.json()["model_version"] == str(version)


def test_versioned_without_version_uses_highest(features_server):
    r = infer_add(features_server, "versioned")
    assert added(r) == 3
    assert r.json()["model_version"] == "3"


@pytest.mark.parametrize("version", [7, 100])
def test_versioned_stray_dirs_are_not_versions(features_server, version):
    # versioned/007 (+7) and versioned/abc (+100) must be skipped.
    assert_not_ready(features_server.get(f"/v2/models/versioned/versions/{version}/ready"))
    assert_error(infer_add(features_server, "versioned", version))


def test_versioned_zero_prefixed_path_does_not_reach_stray_dir(features_server):
    r = features_server.infer("versioned", [tensor("INPUT0", "INT32", X4)], version="007")
    assert r.status_code != 200 or added(r) != 7


def test_versioned_latest_serves_only_3(features_server):
    m = features_server.get("/v2/models/versioned_latest").json()
    assert m["versions"] == ["3"]
    assert added(infer_add(features_server, "versioned_latest")) == 3
    assert features_server.get("/v2/models/versioned_latest/versions/3/ready").status_code == 200


@pytest.mark.parametrize("version", [1, 2])
def test_versioned_latest_older_versions_not_ready(features_server, version):
    assert_not_ready(features_server.get(f"/v2/models/versioned_latest/versions/{version}/ready"))
    assert_error(infer_add(features_server, "versioned_latest", version))


def test_versioned_specific_serves_1_and_3(features_server):
    m = features_server.get("/v2/models/versioned_specific").json()
    assert sorted(m["versions"]) == ["1", "3"]
    assert added(infer_add(features_server, "versioned_specific", 1)) == 1
    assert added(infer_add(features_server, "versioned_specific", 3)) == 3
    assert added(infer_add(features_server, "versioned_specific")) == 3


def test_versioned_specific_2_not_ready(features_server):
    assert_not_ready(features_server.get("/v2/models/versioned_specific/versions/2/ready"))
    assert_error(infer_add(features_server, "versioned_specific", 2))


def test_versioned_specific_config_versions_are_numbers(features_server):
    c = features_server.get("/v2/models/versioned_specific/config").json()
    assert c["version_policy"]["specific"]["versions"] == [1, 3]


def test_metadata_for_one_version_lists_only_it(features_server):
    m = features_server.get("/v2/models/versioned/versions/2").json()
    assert m["versions"] == ["2"]


# ------------------------------------------------------------------------------------ features


def test_custom_filename_model_works(features_server):
    _, values, _ = parse_response(features_server.infer(
        "custom_filename", [tensor("INPUT0", "INT32", X4)]))
    np.testing.assert_array_equal(values["OUTPUT0"], X4)


def test_reshape_model_adds_one(features_server):
    x = np.array([[1.5], [-2.0], [10.0]], dtype=np.float32)
    header, values, _ = parse_response(features_server.infer(
        "reshape_model", [tensor("INPUT0", "FP32", x)]))
    assert output_by_name(header, "OUTPUT0")["shape"] == [3, 1]
    np.testing.assert_array_equal(values["OUTPUT0"], x + 1)


def test_reshape_model_metadata_uses_config_dims(features_server):
    m = features_server.get("/v2/models/reshape_model").json()
    assert m["inputs"][0]["shape"] == [-1, 1]
    c = features_server.get("/v2/models/reshape_model/config").json()
    assert c["input"][0]["reshape"]["shape"] == []


def test_two_instances_config(features_server):
    c = features_server.get("/v2/models/two_instances/config").json()
    assert sum(g["count"] for g in c["instance_group"]) == 2


def test_identity_multi_int32_and_string(features_server):
    ints = np.array([5, -6, 7], dtype=np.int32)
    strs = ["x", "\u00fcber", ""]
    inputs = [tensor("INPUT0", "INT32", ints), tensor("INPUT1", "BYTES", strs, shape=[3])]
    _, values, _ = parse_response(features_server.infer("identity_multi", inputs))
    np.testing.assert_array_equal(values["OUTPUT0"], ints)
    assert values["OUTPUT1"] == strs


# ------------------------------------------------------------------------------------ auto-complete


def test_autocomplete_full_config(features_server):
    c = features_server.get("/v2/models/autocomplete_full/config").json()
    assert c["max_batch_size"] == 4
    assert c["platform"] == "onnxruntime_onnx" or c.get("backend") == "onnxruntime"
    assert [(i["name"], i["data_type"], i["dims"]) for i in c["input"]] == [
        ("INPUT0", "TYPE_FP32", [4])]
    assert [(o["name"], o["data_type"], o["dims"]) for o in c["output"]] == [
        ("OUTPUT0", "TYPE_FP32", [4])]


def test_autocomplete_full_adds_dynamic_batching(features_server):
    # REFERENCE §5.7: auto-complete adds dynamic_batching when max_batch_size > 1; normalisation
    # then fills preferred_batch_size with max_batch_size, as Triton's does.
    db = features_server.get("/v2/models/autocomplete_full/config").json()["dynamic_batching"]
    assert db["preferred_batch_size"] == [4]
    assert db["max_queue_delay_microseconds"] == "0" or db["max_queue_delay_microseconds"] == 0


def test_autocomplete_full_default_instance_group_is_two_cpu_instances(features_server):
    # REFERENCE §2.1: for KIND_CPU the default instance count is 2 on ONNX Runtime.
    groups = features_server.get("/v2/models/autocomplete_full/config").json()["instance_group"]
    assert [(g["kind"], g["count"]) for g in groups] == [("KIND_CPU", 2)]


def test_default_instance_group_is_named_after_model(features_server):
    # Triton: a missing instance_group becomes one group named like the model (explicit unnamed
    # groups get "<model>_<index>", see test_config_instance_group_is_filled).
    groups = features_server.get("/v2/models/autocomplete_full/config").json()["instance_group"]
    assert [g["name"] for g in groups] == ["autocomplete_full"]


def test_autocomplete_full_inference(features_server):
    x = np.array([[-1, 2, -3, 4], [5, -6, 7, -8]], dtype=np.float32)
    _, values, _ = parse_response(features_server.infer(
        "autocomplete_full", [tensor("INPUT0", "FP32", x)]))
    np.testing.assert_array_equal(values["OUTPUT0"], np.maximum(x, 0))


def test_autocomplete_partial_keeps_max_batch_size_2(features_server):
    c = features_server.get("/v2/models/autocomplete_partial/config").json()
    assert c["max_batch_size"] == 2
    assert [(i["name"], i["dims"]) for i in c["input"]] == [("INPUT0", [4])]


def test_autocomplete_partial_batch_3_rejected(features_server):
    x = np.zeros((3, 4), dtype=np.float32)
    assert_error(features_server.infer("autocomplete_partial", [tensor("INPUT0", "FP32", x)]),
                 status=400)
    ok = np.ones((2, 4), dtype=np.float32)
    parse_response(features_server.infer("autocomplete_partial", [tensor("INPUT0", "FP32", ok)]))


def test_autocomplete_nobatch_config(features_server):
    c = features_server.get("/v2/models/autocomplete_nobatch/config").json()
    assert c["max_batch_size"] == 0
    assert [(i["name"], i["data_type"], i["dims"]) for i in c["input"]] == [
        ("X", "TYPE_INT64", [3, 2])]
    assert [(o["name"], o["dims"]) for o in c["output"]] == [("Y", [3, 2])]


def test_autocomplete_nobatch_inference(features_server):
    x = np.array([[1, -2], [3, 2**40], [5, 6]], dtype=np.int64)
    _, values, _ = parse_response(features_server.infer(
        "autocomplete_nobatch", [tensor("X", "INT64", x)]))
    np.testing.assert_array_equal(values["Y"], x)


@pytest.fixture(scope="module")
def strict_config_server():
    s = Server([repo("fixtures", "features")],
               ["--disable-auto-complete-config", "--exit-on-error=false"],
               name="no-autocomplete").start()
    yield s
    assert s.stop() == 0


@pytest.mark.parametrize("model", ["autocomplete_full", "autocomplete_partial",
                                   "autocomplete_nobatch"])
def test_disable_auto_complete_models_not_ready(strict_config_server, model):
    assert strict_config_server.get(f"/v2/models/{model}/ready").status_code != 200


def test_disable_auto_complete_other_models_ready(strict_config_server):
    for model in ["versioned", "custom_filename", "reshape_model", "identity_multi"]:
        assert strict_config_server.get(f"/v2/models/{model}/ready").status_code == 200, model
    assert added(infer_add(strict_config_server, "versioned", 2)) == 2
    assert strict_config_server.get("/v2/health/ready").status_code == 400


# ------------------------------------------------------------------------------------ broken


@pytest.fixture(scope="module")
def broken_server():
    s = Server([repo("fixtures", "broken")], ["--exit-on-error=false"], name="broken").start()
    yield s
    assert s.stop() == 0


def test_broken_repo_good_model_serves(broken_server):
    assert broken_server.get("/v2/health/live").status_code == 200
    assert broken_server.get("/v2/models/good/ready").status_code == 200
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    check_simple(broken_server.infer("good", simple_inputs(a, a)), a, a)


@pytest.mark.parametrize("model", BROKEN)
def test_broken_model_not_ready(broken_server, model):
    r = broken_server.get(f"/v2/models/{model}/ready")
    assert r.status_code != 200
    a = np.zeros((1, 16), dtype=np.int32)
    assert_error(broken_server.infer(model, simple_inputs(a, a)))


def test_name_mismatch_not_served_under_config_name(broken_server):
    assert broken_server.get("/v2/models/other_name/ready").status_code != 200


def test_broken_repo_server_not_ready_with_strict_readiness(broken_server):
    assert broken_server.get("/v2/health/ready").status_code == 400


def test_broken_repo_ready_without_strict_readiness():
    with Server([repo("fixtures", "broken")],
                ["--exit-on-error=false", "--strict-readiness=false"], name="broken-lax") as s:
        assert s.get("/v2/health/ready").status_code == 200
        assert s.get("/v2/models/good/ready").status_code == 200
        assert s.get("/v2/models/bad_syntax/ready").status_code != 200


def test_broken_repo_with_exit_on_error_fails_start():
    p = run_to_exit([f"--model-repository={repo('fixtures', 'broken')}",
                     f"--http-port={free_port()}", "--http-address=127.0.0.1",
                     "--allow-grpc=false", "--allow-metrics=false"])
    err = p.stderr.decode("utf-8", "replace") + p.stdout.decode("utf-8", "replace")
    assert p.returncode != 0, err
    assert any(name in err for name in BROKEN), err


# ------------------------------------------------------------------------------------ repositories


def test_two_repositories_duplicate_model_not_ready():
    # examples and fixtures/single_good both hold `simple`.
    with Server([repo("examples"), repo("fixtures", "single_good")], ["--exit-on-error=false"],
                name="two-repos") as s:
        assert s.get("/v2/models/simple/ready").status_code != 200
        a = np.zeros((1, 16), dtype=np.int32)
        assert_error(s.infer("simple", simple_inputs(a, a)))
        assert s.get("/v2/models/simple_string/ready").status_code == 200


def test_two_repositories_without_duplicates_serve_both():
    with Server([repo("fixtures", "single_good"), repo("fixtures", "types")],
                name="two-repos-ok") as s:
        assert s.get("/v2/health/ready").status_code == 200
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        check_simple(s.infer("simple", simple_inputs(a, a)), a, a)
        x = np.array([[1, 2]], dtype=np.int8)
        _, values, _ = parse_response(s.infer("identity_int8", [tensor("INPUT0", "INT8", x)]))
        np.testing.assert_array_equal(values["OUTPUT0"], x)


def test_model_store_alias_flag():
    s = Server([], [f"--model-store={repo('fixtures', 'single_good')}"], name="model-store")
    with s:
        assert s.get("/v2/models/simple/ready").status_code == 200


def test_nonexistent_repository_fails_start(tmp_path):
    missing = tmp_path / "does-not-exist"
    p = run_to_exit([f"--model-repository={missing}", f"--http-port={free_port()}",
                     "--http-address=127.0.0.1", "--allow-grpc=false", "--allow-metrics=false"])
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, err
    assert str(missing) in err, err
