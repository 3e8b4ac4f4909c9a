"""Triton's classification extension over HTTP (REFERENCE.md §1.3): the output parameter
`classification: N` returns the top N of each batch item as BYTES "value:index[:label]"."""

import numpy as np
import pytest

from helpers import assert_error, build_infer_request, parse_response, repo, tensor
from mm_helpers import mode_server

PROBS = np.array([[0.1, 0.9, 0.3, 0.2, 0.5], [5, 4, 3, 2, 1]], np.float32)


@pytest.fixture(scope="module")
def server():
    s = mode_server([repo("fixtures", "management"), repo("examples")], "explicit",
                    ["--load-model=labelled", "--load-model=simple",
                     "--load-model=simple_string"], name="classification")
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def infer(server, model, inputs, outputs):
    body, headers = build_infer_request(inputs, outputs=outputs)
    return server.post(f"/v2/models/{model}/infer", data=body, headers=headers)


def cls(name, n, binary=None):
    params = {"classification": n}
    if binary is not None:
        params["binary_data"] = binary
    return {"name": name, "parameters": params}


@pytest.mark.parametrize("binary", [None, True])
def test_top_n_with_labels_per_batch_item(server, binary):
    r = infer(server, "labelled", [tensor("INPUT0", "FP32", PROBS)], [cls("OUTPUT0", 2, binary)])
    header, values, _ = parse_response(r)
    out = header["outputs"][0]
    assert out["datatype"] == "BYTES" and out["shape"] == [2, 2]
    got = [v.decode() if isinstance(v, bytes) else v for v in values["OUTPUT0"]]
    assert got == ["0.900000:1:dog", "0.500000:4:frog", "5.000000:0:cat", "4.000000:1:dog"]


def test_n_larger_than_the_output_is_clamped(server):
    r = infer(server, "labelled", [tensor("INPUT0", "FP32", PROBS[:1])], [cls("OUTPUT0", 99)])
    header, values, _ = parse_response(r)
    assert header["outputs"][0]["shape"] == [1, 5]
    assert [v.split(":")[2] for v in values["OUTPUT0"]] == ["dog", "frog", "bird", "fish", "cat"]


def test_without_labels_values_and_indices_only(server):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    r = infer(server, "simple", [tensor("INPUT0", "INT32", a), tensor("INPUT1", "INT32", a)],
              [cls("OUTPUT0", 3), "OUTPUT1"])
    header, values, _ = parse_response(r)
    assert values["OUTPUT0"] == ["30:15", "28:14", "26:13"]
    np.testing.assert_array_equal(values["OUTPUT1"], np.zeros((1, 16), np.int32))


def test_classification_zero_returns_the_tensor(server):
    r = infer(server, "labelled", [tensor("INPUT0", "FP32", PROBS)], [cls("OUTPUT0", 0)])
    _, values, _ = parse_response(r)
    np.testing.assert_array_equal(values["OUTPUT0"], PROBS)


def test_unsupported_output_type(server):
    s = np.array([[str(i) for i in range(16)]], dtype=object)
    r = infer(server, "simple_string", [tensor("INPUT0", "BYTES", s), tensor("INPUT1", "BYTES", s)],
              [cls("OUTPUT0", 1)])
    assert_error(r, 400, "class result not available for output due to unsupported type 'BYTES'")


@pytest.mark.parametrize("value", [-1, "two", 1.5, True])
def test_bad_classification_values(server, value):
    r = infer(server, "labelled", [tensor("INPUT0", "FP32", PROBS)],
              [{"name": "OUTPUT0", "parameters": {"classification": value}}])
    assert_error(r, 400, "classification")
