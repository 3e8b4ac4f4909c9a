"""Triton's generate extension (issue 17 item 4; REFERENCE.md rows 8-9, REFERENCE-2 §9.1):
POST /v2/models/{m}[/versions/{v}]/generate and /generate_stream over raw HTTP (tritonclient has
no generate API), for non-decoupled ONNX models (examples/simple, simple_string) and the decoupled
`square` and `repeat` test backends: Triton's JSON-to-tensor mapping, server-sent events written
as the responses come, errors before and during the stream, and the restricted API category
`inference` covering both endpoints."""

import http.client
import json
import socket
import time

import pytest

from nereid_server import Server, repo

SQUARE = """name: "{name}"
backend: "square"
max_batch_size: 0
model_transaction_policy {{ decoupled: true }}
input [{{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }}]
output [{{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
{extra}
"""

SSE = "text/event-stream; charset=utf-8"


def write_model(root, name, config):
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(config)


@pytest.fixture(scope="module")
def fail_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("generate")
    # Index 0 succeeds, then CUSTOM_FAIL_COUNT responses fail ("simulated failure").
    write_model(root, "square_fail", SQUARE.format(
        name="square_fail",
        extra='parameters [{ key: "CUSTOM_FAIL_COUNT" value: { string_value: "1" } }]'))
    return root


@pytest.fixture(scope="module")
def server(fail_repo):
    # square_int32 and repeat_int32 as Triton's qa configures them (fixtures/decoupled).
    with Server([repo("examples"), repo("fixtures", "decoupled"), str(fail_repo)],
                name="generate") as s:
        yield s


def post(server, model, route, body, headers=None, version=None):
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + f"/{route}"
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return server.raw("POST", path, body=data, headers=headers)


def events(body):
    """The JSON payloads of a server-sent-event body, checking its framing."""
    text = body.decode()
    assert text == "" or text.endswith("\n\n"), text
    out = []
    for block in text.split("\n\n")[:-1]:
        assert block.startswith("data: "), block
        out.append(json.loads(block[len("data: "):]))
    return out


def error_of(body):
    return json.loads(body)["error"]


# ---------------------------------------------------------------- /generate


def test_generate_non_decoupled_model(server):
    status, headers, body = post(server, "simple", "generate",
                                 {"INPUT0": list(range(16)), "INPUT1": [1] * 16})
    assert status == 200, body
    assert headers["content-type"] == "application/json"
    # Keys in byte order (Triton builds the object from a std::map), model_version a string.
    assert body.decode().startswith('{"OUTPUT0":[1,2,'), body
    got = json.loads(body)
    assert list(got) == ["OUTPUT0", "OUTPUT1", "model_name", "model_version"]
    assert got["OUTPUT0"] == [i + 1 for i in range(16)]
    assert got["OUTPUT1"] == [i - 1 for i in range(16)]
    assert (got["model_name"], got["model_version"]) == ("simple", "1")


def test_generate_fits_the_batch_dimension_and_versions(server):
    # 32 elements into [-1, 16]: the fixed 16 divides, the batch dimension takes 2.
    status, _, body = post(server, "simple", "generate",
                           {"INPUT0": [1] * 32, "INPUT1": [2] * 32}, version=1)
    assert status == 200, body
    assert json.loads(body)["OUTPUT0"] == [3] * 32


def test_generate_strings_and_parameters(server):
    status, _, body = post(server, "simple_string", "generate", {
        "INPUT0": [str(i) for i in range(16)], "INPUT1": ["1"] * 16,
        "parameters": {"temperature": 0.5}, "stream": False, "note": "kept as a parameter"})
    assert status == 200, body
    got = json.loads(body)
    assert got["OUTPUT0"] == [str(i + 1) for i in range(16)]


def test_generate_decoupled_model_with_one_response(server):
    status, headers, body = post(server, "square_int32", "generate", {"IN": 1})
    assert status == 200, body
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"OUT": 1, "model_name": "square_int32", "model_version": "1"}


@pytest.mark.parametrize("count", [0, 2, 5])
def test_generate_needs_exactly_one_response(server, count):
    status, _, body = post(server, "square_int32", "generate", {"IN": count})
    assert status == 400, body
    assert error_of(body) == (
        "generate expects model to produce exactly 1 response, use generate stream for model "
        "that generates various number of responses")


# ---------------------------------------------------------------- /generate_stream


def test_generate_stream_one_event_per_response(server):
    status, headers, body = post(server, "square_int32", "generate_stream", {"IN": 3})
    assert status == 200, body
    assert headers["content-type"] == SSE
    assert headers.get("transfer-encoding") == "chunked"
    assert events(body) == [{"OUT": 3, "model_name": "square_int32", "model_version": "1"}] * 3


def test_generate_stream_zero_responses_is_an_empty_stream(server):
    status, headers, body = post(server, "square_int32", "generate_stream", {"IN": 0})
    assert status == 200
    assert headers["content-type"] == SSE
    assert body == b""


def test_generate_stream_non_decoupled_model(server):
    status, _, body = post(server, "simple", "generate_stream",
                           {"INPUT0": [5] * 16, "INPUT1": [2] * 16})
    assert status == 200, body
    (event,) = events(body)
    assert event["OUTPUT0"] == [7] * 16 and event["OUTPUT1"] == [3] * 16


def test_generate_stream_sends_responses_as_they_come(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        start = time.monotonic()
        conn.request("POST", "/v2/models/repeat_int32/generate_stream",
                     body=json.dumps({"IN": [1, 2], "DELAY": [0, 3000], "WAIT": 0}))
        r = conn.getresponse()
        assert r.status == 200
        first = r.readline()
        first_at = time.monotonic() - start
        assert first.startswith(b"data: ") and json.loads(first[6:])["OUT"] == 1
        rest = r.read()
        total = time.monotonic() - start
        # The first event is written at once, not held until the request ends 3 s later.
        assert first_at < 2.0, (first_at, total)
        assert total >= 2.9, total
        assert [e["OUT"] for e in events(rest[1:])] == [2]  # rest[0] ends the first event
    finally:
        conn.close()


def test_generate_stream_error_after_the_first_response(server):
    # N = 2 with one failure: index 0 succeeds, index 1 is "simulated failure" under 200.
    status, headers, body = post(server, "square_fail", "generate_stream", {"IN": 2})
    assert status == 200
    assert headers["content-type"] == SSE
    got = events(body)
    assert got[0]["OUT"] == 2
    assert got[1] == {"error": "simulated failure"}


def test_generate_stream_error_as_the_first_response_sets_400(server):
    status, headers, body = post(server, "square_fail", "generate_stream", {"IN": 1})
    assert status == 400
    assert headers["content-type"] == SSE
    assert events(body) == [{"error": "simulated failure"}]


def test_generate_stream_backend_refusal(server):
    # repeat refuses IN and DELAY of different shapes: the error is the only "response".
    status, _, body = post(server, "repeat_int32", "generate_stream",
                           {"IN": [1, 2], "DELAY": [0], "WAIT": 0})
    assert status == 400
    assert events(body) == [{"error": "expected IN and DELAY shape to match, got [2] and [1]"}]


def test_client_disconnect_mid_stream_cancels_the_request(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    body = json.dumps({"IN": list(range(60)), "DELAY": [50] * 60, "WAIT": 0}).encode()
    s.sendall(b"POST /v2/models/repeat_int32/generate_stream HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    assert b"data: " in s.recv(4096)
    s.close()
    # The next writes fail, the stream is abandoned and the request cancelled: repeat ends it with
    # CANCELLED (response_stats `cancel`) long before its 60 responses (3 s) would be done.
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:
        stats = server.get("/v2/models/repeat_int32/stats").json()["model_stats"][0]
        if any(int(v.get("cancel", {}).get("count", 0)) for v in
               stats.get("response_stats", {}).values()):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the request was not cancelled: {stats}")
    assert server.get("/v2/health/live").status_code == 200


# ---------------------------------------------------------------- bad input

BAD_BODIES = [
    ("{not json", "failed to parse the request JSON buffer: "),
    ("[1, 2]", "attempt to access JSON non-object as object"),
    ({"IN": "three"}, "attempt to access JSON non-signed-integer as signed-integer"),
    ({"IN": 1.5}, "attempt to access JSON non-signed-integer as signed-integer"),
    ({"IN": 3000000000}, "input 'IN': "),
    ('{"IN": 1, "IN": 2}', "input 'IN' already exists in request"),
    ({"IN": 1, "parameters": 1}, "Expected JSON object for keyword: 'parameters'"),
    ({"IN": 1, "parameters": {"nested": {"twice": 1}}},
     "Converting keyword: 'parameters': parameter 'nested' has invalid type. It should be either "
     "'int', 'bool', or 'string'."),
    ({"IN": 1, "PARAMS": {"a": 0}}, "parameter 'PARAMS' has invalid type"),
    ({"IN": 1, "list": [1, 2]}, "parameter 'list' has invalid type"),
    ({"IN": [1, 2]}, "The schema can not convert input 'IN' to tensor with proper shape"),
    ({"IN": []}, "The schema can not convert input 'IN' to tensor with proper shape"),
    ({"IN": [[1, 2]]}, "Shape does not match true shape of 'data' field"),
    ({"IN": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
     "arrays nested more than 32 deep are not supported"),
    ('{"IN": ' + "[" * 100000 + "]" * 100000 + "}", "arrays nested more than 32 deep"),
]


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
@pytest.mark.parametrize("body,message", BAD_BODIES)
def test_bad_bodies(server, route, body, message):
    status, headers, data = post(server, "square_int32", route, body)
    assert status == 400, data
    assert headers["content-type"] == "application/json"
    assert message in error_of(data)


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
def test_missing_and_unknown_inputs(server, route):
    # Keys that name no input are parameters, so the model misses its inputs (the core's text).
    for body in ({}, {"abc": 123}, {"INPUT0": [1] * 16, "input1": 5}):
        status, _, data = post(server, "simple", route, body)
        assert status == 400, data
        assert "expected 2 inputs but got" in error_of(data), data
    status, _, data = post(server, "simple_string", route,
                           {"INPUT0": [1] * 16, "INPUT1": ["1"] * 16})
    assert status == 400
    assert error_of(data) == "attempt to access JSON non-string as string"


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
def test_unknown_model_and_version(server, route):
    for model, version in (("no_such_model", None), ("simple", 7)):
        status, _, data = post(server, model, route, {"INPUT0": 1}, version=version)
        infer_status, _, infer_data = server.raw(
            "POST", f"/v2/models/{model}" + (f"/versions/{version}" if version else "") +
            "/infer", body=json.dumps({"inputs": []}))
        # The same lookup and the same answer as /infer.
        assert (status, error_of(data)) == (infer_status, error_of(infer_data))


def test_content_encoding_and_method(server):
    status, _, data = post(server, "square_int32", "generate", {"IN": 1},
                           headers={"Content-Encoding": "gzip"})
    assert status == 400
    assert error_of(data) == "Unsupported content-encoding, only 'identity' is supported."
    status, _, _ = server.raw("GET", "/v2/models/square_int32/generate_stream")
    assert status == 405


def test_restricted_inference_covers_generate():
    flags = ["--http-restricted-api=inference:infer-key=secret"]
    with Server([repo("fixtures", "decoupled")], flags=flags, name="generate-restricted") as s:
        for route in ("generate", "generate_stream"):
            status, _, data = post(s, "square_int32", route, {"IN": 1})
            assert status == 403
            assert error_of(data) == "This API is restricted, expecting header 'infer-key'"
            status, _, data = post(s, "square_int32", route, {"IN": 1},
                                   headers={"infer-key": "wrong"})
            assert status == 403
            status, _, data = post(s, "square_int32", route, {"IN": 1},
                                   headers={"infer-key": "secret"})
            assert status == 200, data


def test_concurrent_generate_and_streams(server):
    # Triton's test_race_condition: replies built on executor threads while the connections'
    # threads write them; every request must get its whole answer.
    import concurrent.futures

    def one(k):
        route, n = ("generate", 1) if k % 2 else ("generate_stream", 1 + k % 4)
        status, _, body = post(server, "square_int32", route, {"IN": n, "param": "x"})
        assert status == 200, body
        got = [json.loads(body)] if route == "generate" else events(body)
        assert [e["OUT"] for e in got] == [n] * n
        return k

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        assert sorted(pool.map(one, range(100))) == list(range(100))
