"""The dynamic batcher end to end (REFERENCE.md §2.2, seed 003): batches under concurrent load,
delayed batching, priorities, queue size, REJECT and DELAY timeouts, preserve_ordering, mixed
shapes, the priority/timeout request parameters over HTTP and gRPC, and configuration errors.

Models are in the `batching` fixture repository (scripts/gen_test_models.py). `slow_rows` models
take time proportional to n, so one request can hold the only instance busy while others queue.
Tests that read `batch_stats` need the statistics extension; they are skipped on a server that
does not list it in GET /v2.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

from grpc_helpers import infer_request, output_array, pbs, serve_grpc  # noqa: F401
from helpers import assert_error, parse_response, repo, tensor

SLOW_N = 4096  # a slow_rows request of this size keeps its instance busy for ~100+ ms
MID_N = 1024  # ~40 ms: long enough that the order two of them ran in is visible to clients
JITTER = 0.025  # replies delivered back to back may reach client threads this far apart (a
#                busy 2-core machine was seen to take 10 ms)


@pytest.fixture(scope="module")
def server(pbs):  # noqa: F811
    # --log-verbose=1: the batcher logs each request it queues and each batch it starts, which
    # the queue-policy tests wait for instead of sleeping.
    yield from serve_grpc([repo("fixtures", "batching")], "batching",
                          flags=["--exit-on-error=false", "--strict-readiness=false",
                                 "--log-verbose=1"])


HOLD = 4  # TRITONSERVER_DELAY_SCHEDULER of the `held` server


@pytest.fixture(scope="module")
def held(pbs):  # noqa: F811
    """A server with Triton's test hook TRITONSERVER_DELAY_SCHEDULER=4: each batching model holds
    its first requests until 4 are queued, so what a batch holds no longer depends on timing."""
    yield from serve_grpc([repo("fixtures", "batching")], "batching-held",
                          flags=["--exit-on-error=false", "--strict-readiness=false"],
                          env={"TRITONSERVER_DELAY_SCHEDULER": str(HOLD)})


_ids = iter(range(1, 1 << 30))


def wait_log_count(server, needle, count, timeout=20.0):
    """Polls the server log until `needle` occurs at least `count` times."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.stderr().count(needle) >= count:
            return
        time.sleep(0.005)
    raise AssertionError(f"{needle!r} did not appear {count} times in the server log")


def executing(model):
    return f"model '{model}': executing "


def queued(server, model, inputs, parameters=None):
    """Sends a request and returns once the batcher has queued it (its log line is there)."""
    rid = f"q{next(_ids)}"
    call = Timed(server, model, inputs, parameters, request_id=rid)
    wait_log_count(server, f"model '{model}': request '{rid}' queued", 1)
    return call


@pytest.fixture
def statistics(server):
    """Skips the test on a server without the statistics extension (GET /v2)."""
    if "statistics" not in server.get("/v2").json().get("extensions", []):
        pytest.skip("server has no statistics extension in GET /v2 metadata")


def stats(server, model):
    r = server.get(f"/v2/models/{model}/stats")
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]


def vec(values):
    return tensor("INPUT0", "FP32", np.asarray(values, np.float32).reshape(1, -1))


def slow_input(n, value=1.0):
    return tensor("INPUT0", "FP32", np.full(n, value, np.float32))


def output(resp):
    assert resp.status_code == 200, resp.text
    _, values, _ = parse_response(resp)
    return values["OUTPUT0"]


class Timed:
    """Sends one HTTP inference on its own thread; records the response and when it arrived."""

    def __init__(self, server, model, inputs, parameters=None, request_id=None):
        self.resp = None
        self.done_at = None
        self.thread = threading.Thread(target=self._run,
                                       args=(server, model, inputs, parameters, request_id))
        self.thread.start()

    def _run(self, server, model, inputs, parameters, request_id):
        from nereid_server import new_session
        from helpers import build_infer_request
        body, headers = build_infer_request(inputs, parameters=parameters, request_id=request_id)
        self.resp = new_session().post(server.url(f"/v2/models/{model}/infer"), data=body,
                                       headers=headers, timeout=60)
        self.done_at = time.monotonic()

    def join(self):
        self.thread.join(60)
        assert not self.thread.is_alive()
        return self.resp


# ------------------------------------------------------------------------------------ batching


def test_schedule_policy_extension_is_reported(server):
    # Triton's order: ..., model_repository(unload_dependents), schedule_policy, model_configuration
    ext = server.get("/v2").json()["extensions"]
    assert "schedule_policy" in ext
    assert ext.index("schedule_policy") < ext.index("model_configuration")


def test_config_shows_dynamic_batching(server):
    db = server.get("/v2/models/db_delay/config").json()["dynamic_batching"]
    assert db["preferred_batch_size"] == [4]
    assert str(db["max_queue_delay_microseconds"]) == "300000"


def test_preferred_batch_goes_without_waiting_for_delay(server):
    # Four concurrent requests reach the preferred size 4: none waits the 300 ms delay.
    start = time.monotonic()
    calls = [Timed(server, "db_delay", [vec([i, i + 1])]) for i in range(4)]
    for i, c in enumerate(calls):
        np.testing.assert_array_equal(output(c.join()), [[2 * i, 2 * i + 2]])
    assert max(c.done_at for c in calls) - start < 0.25


def test_delayed_batching_waits_no_longer_than_the_delay(server):
    start = time.monotonic()
    np.testing.assert_array_equal(output(server.infer("db_delay", [vec([3, 4])])), [[6, 8]])
    waited = time.monotonic() - start
    assert waited >= 0.29, waited  # it waited for others to join...
    assert waited < 0.3 + 0.7, waited  # ...but not much longer than the delay


def test_delay_hook_makes_a_batch_of_exactly_n(held):
    # db_scale has no delay and no preferred size: without the hook the first request would run
    # alone. Held until 4 are queued, the 4 run as one batch.
    before = stats(held, "db_scale")
    calls = [Timed(held, "db_scale", [vec([i])]) for i in range(HOLD)]
    for i, c in enumerate(calls):
        np.testing.assert_array_equal(output(c.join()), [[2 * i]])
    after = stats(held, "db_scale")
    assert after["execution_count"] - before["execution_count"] == 1
    assert {b["batch_size"]: b["compute_infer"]["count"] for b in after["batch_stats"]} == {4: 1}
    # The hook holds once: the next request runs at once, alone.
    np.testing.assert_array_equal(output(held.infer("db_scale", [vec([7])])), [[14]])
    assert stats(held, "db_scale")["execution_count"] - after["execution_count"] == 1


def test_delay_hook_holds_fewer_than_n(held):
    # Three requests stay queued (the model is idle) until a fourth arrives.
    calls = [Timed(held, "db_delay", [vec([i])]) for i in range(HOLD - 1)]
    time.sleep(0.4)  # longer than db_delay's 300 ms queue delay: only the hook holds them
    assert all(c.resp is None for c in calls)
    last = Timed(held, "db_delay", [vec([9])])
    for i, c in enumerate(calls):
        np.testing.assert_array_equal(output(c.join()), [[2 * i]])
    np.testing.assert_array_equal(output(last.join()), [[18]])


def test_four_concurrent_requests_run_as_one_batch(server, statistics):
    before = stats(server, "db_delay")
    calls = [Timed(server, "db_delay", [vec([i])]) for i in range(4)]
    for c in calls:
        output(c.join())
    after = stats(server, "db_delay")
    assert after["inference_count"] - before["inference_count"] == 4
    assert after["execution_count"] - before["execution_count"] == 1
    fours = {b["batch_size"]: b["compute_infer"]["count"] for b in after["batch_stats"]}
    old = {b["batch_size"]: b["compute_infer"]["count"] for b in before["batch_stats"]}
    assert fours.get(4, 0) - old.get(4, 0) == 1


def concurrent_load(server, model, threads=16, per_thread=20, n=64):
    """Each thread sends per_thread requests of [1, n]; returns (inputs, outputs) pairs."""
    from nereid_server import new_session
    from helpers import build_infer_request, parse_infer_response

    def worker(t):
        session = new_session()
        rng = np.random.default_rng(t)
        pairs = []
        for _ in range(per_thread):
            x = rng.standard_normal((1, n)).astype(np.float32)
            body, headers = build_infer_request([tensor("INPUT0", "FP32", x, binary=True)])
            r = session.post(server.url(f"/v2/models/{model}/infer"), data=body, headers=headers,
                             timeout=60)
            assert r.status_code == 200, r.text
            _, values, _ = parse_infer_response(r.headers, r.content)
            pairs.append((x, values["OUTPUT0"]))
        return pairs

    with ThreadPoolExecutor(threads) as pool:
        return [p for f in [pool.submit(worker, t) for t in range(threads)] for p in f.result()]


def test_batched_results_identical_to_unbatched(server):
    batched = concurrent_load(server, "db_scale", threads=8, per_thread=15)
    for x, y in batched:
        np.testing.assert_array_equal(y, x * 2)
        ref = output(server.infer("db_scale_nobatch", [tensor("INPUT0", "FP32", x)]))
        np.testing.assert_array_equal(y, ref)


def test_concurrent_clients_produce_batches_above_one(server, statistics):
    before = stats(server, "db_scale")
    pairs = concurrent_load(server, "db_scale", threads=16, per_thread=20, n=4096)
    assert len(pairs) == 320
    after = stats(server, "db_scale")
    executed = {b["batch_size"]: b["compute_infer"]["count"] for b in after["batch_stats"]}
    assert max(executed) > 1, executed
    assert all(size <= 8 for size in executed)
    # Every inference is in exactly one execution of its batch's size.
    assert sum(size * count for size, count in executed.items()) == after["inference_count"]
    assert after["inference_count"] - before["inference_count"] == 320
    assert after["execution_count"] < after["inference_count"]


def test_mixed_shapes_are_not_batched_together_and_all_succeed(server, statistics):
    before = stats(server, "db_delay")
    calls = [Timed(server, "db_delay", [vec(np.arange(k, dtype=np.float32))])
             for k in (4, 8, 4, 8)]
    for c, k in zip(calls, (4, 8, 4, 8)):
        np.testing.assert_array_equal(output(c.join()), [np.arange(k) * 2])
    after = stats(server, "db_delay")
    assert after["inference_count"] - before["inference_count"] == 4
    new = {b["batch_size"]: b["compute_infer"]["count"] for b in after["batch_stats"]}
    old = {b["batch_size"]: b["compute_infer"]["count"] for b in before["batch_stats"]}
    grown = {size for size in new if new[size] != old.get(size, 0)}
    assert grown and max(grown) <= 2, (old, new)  # two of each shape at most share a batch


def test_mixed_shapes_succeed(server):
    calls = [Timed(server, "db_delay", [vec(np.full(k, k, np.float32))]) for k in (1, 2, 3, 2, 1)]
    for c, k in zip(calls, (1, 2, 3, 2, 1)):
        np.testing.assert_array_equal(output(c.join()), [np.full(k, 2 * k)])


# ------------------------------------------------------------------------------------ queue policy


def occupy(server, model, n=SLOW_N):
    """Starts a slow request and returns once the instance is running it."""
    started = server.stderr().count(executing(model))
    call = Timed(server, model, [slow_input(n, 5.0)])
    wait_log_count(server, executing(model), started + 1)
    return call


def test_higher_priority_overtakes_lower(held):
    # The hook queues all four before any runs (no instance is occupied, no log line waited
    # for); db_prio runs one at a time (max_batch_size 0), ~40 ms each, highest level first.
    low = [Timed(held, "db_prio", [slow_input(MID_N, 1.0)]) for _ in range(HOLD - 1)]
    high = Timed(held, "db_prio", [slow_input(MID_N, 2.0)], parameters={"priority": 1})
    assert output(high.join())[0] == 2.0
    for c in low:
        assert output(c.join())[0] == 1.0
    assert high.done_at < min(c.done_at for c in low)


def test_priority_outside_levels_uses_default_level(server):
    # Triton: a priority of 0 or above priority_levels means the default level; not an error.
    for p in (0, 3, 99):
        assert output(server.infer("db_prio", [slow_input(2, 4.0)],
                                   parameters={"priority": p})).tolist() == [4.0, 4.0]


def test_a_billion_priority_levels_load_and_serve(server):
    for p in (1, 999999999, 1000000000):
        assert output(server.infer("db_many_levels", [slow_input(1, 3.0)],
                                   parameters={"priority": p})).tolist() == [3.0]


def test_max_queue_size_rejects_with_503(server):
    first = occupy(server, "db_queue")
    waiting = queued(server, "db_queue", [slow_input(1, 1.0)])
    r = server.infer("db_queue", [slow_input(1, 2.0)])
    rejected_at = time.monotonic()
    assert_error(r, 503, "Exceeds maximum queue size")
    assert r.json() == {"error": "Exceeds maximum queue size"}
    assert output(first.join())[0] == 5.0
    assert rejected_at < first.done_at  # at once, not when the instance frees up
    assert output(waiting.join())[0] == 1.0


def test_max_queue_size_rejects_over_grpc(server, pbs):  # noqa: F811
    first = occupy(server, "db_queue")
    waiting = queued(server, "db_queue", [slow_input(1, 1.0)])
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(infer_request(
            "db_queue", [("INPUT0", "FP32", np.ones(1, np.float32))]))
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert e.value.details() == "Exceeds maximum queue size"
    first.join()
    waiting.join()


def test_reject_timeout_answers_503(server):
    first = occupy(server, "db_reject", 4 * SLOW_N)  # ~0.5 s
    expiring = queued(server, "db_reject", [slow_input(1, 1.0)], parameters={"timeout": 1000})
    patient = queued(server, "db_reject", [slow_input(1, 2.0)])  # 10 s default
    r = expiring.join()
    assert_error(r, 503, "Request timeout expired")
    assert r.json() == {"error": "Request timeout expired"}
    assert output(first.join())[0] == 5.0
    # On time: answered while the only instance was still busy, not when it freed up.
    assert expiring.done_at < first.done_at
    assert output(patient.join())[0] == 2.0


def test_reject_timeout_over_grpc(server, pbs):  # noqa: F811
    first = occupy(server, "db_reject")
    req = infer_request("db_reject", [("INPUT0", "FP32", np.ones(1, np.float32))])
    req.parameters["timeout"].int64_param = 1000
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(req)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert e.value.details() == "Request timeout expired"
    first.join()


def test_delay_timeout_moves_request_behind_others(server):
    # `expiring` times out 1 ms after it is queued, long before the ~150 ms request ahead ends.
    first = occupy(server, "db_delay_action")
    expiring = queued(server, "db_delay_action", [slow_input(MID_N, 1.0)],
                      parameters={"timeout": 1000})
    fresh = queued(server, "db_delay_action", [slow_input(MID_N, 2.0)])
    assert output(first.join())[0] == 5.0
    assert output(expiring.join())[0] == 1.0  # DELAY: late, but it still runs
    assert output(fresh.join())[0] == 2.0
    assert fresh.done_at < expiring.done_at


def test_without_timeout_requests_keep_arrival_order(server):
    # The reference for the DELAY test: same timing, no timeout, so arrival order holds.
    first = occupy(server, "db_delay_action")
    a = queued(server, "db_delay_action", [slow_input(MID_N, 1.0)])
    b = queued(server, "db_delay_action", [slow_input(MID_N, 2.0)])
    for c in (first, a, b):
        c.join()
    assert a.done_at < b.done_at


def ordering_run(server, model):
    slow = occupy(server, model)  # on one instance
    fast = queued(server, model, [slow_input(1, 4.0)])  # the second instance is idle
    assert output(slow.join())[0] == 5.0
    assert output(fast.join())[0] == 4.0
    return slow, fast


def test_preserve_ordering_holds_later_response(server):
    slow, fast = ordering_run(server, "db_ordered")
    assert fast.done_at > slow.done_at - JITTER  # held until the earlier one was answered


def test_without_preserve_ordering_fast_response_overtakes(server):
    slow, fast = ordering_run(server, "db_unordered")
    assert fast.done_at < slow.done_at - 0.03


def test_preserve_ordering_under_concurrent_load(server):
    # Alternating slow and fast requests, each from its own client, each sent once the previous
    # one is queued (so this is their queue order): replies come in that order.
    sizes = [MID_N if i % 2 == 0 else 1 for i in range(12)]
    calls = [queued(server, "db_ordered", [slow_input(n, float(i))])
             for i, n in enumerate(sizes)]
    for i, c in enumerate(calls):
        assert output(c.join())[0] == float(i)
    done = [c.done_at for c in calls]
    assert all(later > earlier - JITTER for earlier, later in zip(done, done[1:])), done


# ------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("params", [{"priority": -1}, {"priority": "1"}, {"priority": 1.5}])
def test_bad_priority_is_400(server, params):
    r = server.infer("db_prio", [slow_input(1)], parameters=params)
    assert_error(r, 400)
    assert r.json() == {"error": "Unable to parse 'priority': attempt to access JSON "
                                 "non-unsigned-integer as unsigned-integer"}


@pytest.mark.parametrize("value", [-5, "10", 2.5, True])
def test_bad_timeout_is_400(server, value):
    r = server.infer("db_reject", [slow_input(1)], parameters={"timeout": value})
    assert_error(r, 400)
    assert r.json() == {"error": "Unable to parse 'timeout': attempt to access JSON "
                                 "non-unsigned-integer as unsigned-integer"}


def test_bad_schedule_parameters_over_grpc(server, pbs):  # noqa: F811
    cases = [
        ("priority", lambda p: setattr(p, "int64_param", -1),
         "invalid value for 'priority', expected value >= 0."),
        ("priority", lambda p: setattr(p, "string_param", "1"),
         "invalid value type for 'priority' parameter, expected int64_param or uint64_param."),
        ("timeout", lambda p: setattr(p, "string_param", "5"),
         "invalid value type for 'timeout' parameter, expected int64_param."),
        ("timeout", lambda p: setattr(p, "int64_param", -5),
         "invalid value for 'timeout', expected value >= 0."),
    ]
    for key, setter, message in cases:
        req = infer_request("db_prio", [("INPUT0", "FP32", np.ones(1, np.float32))])
        setter(req.parameters[key])
        with pytest.raises(grpc.RpcError) as e:
            server.stub().ModelInfer(req)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, key
        assert e.value.details() == message


def test_grpc_stream_through_the_batcher(server, pbs):  # noqa: F811
    reqs = []
    for i in range(50):
        x = np.full((1, 3), float(i), np.float32)
        reqs.append(infer_request("db_scale", [("INPUT0", "FP32", x)], request_id=str(i)))
    got = list(server.stub().ModelStreamInfer(iter(reqs)))
    assert [r.infer_response.id for r in got] == [str(i) for i in range(50)]
    for i, r in enumerate(got):
        assert r.error_message == ""
        np.testing.assert_array_equal(output_array(r.infer_response), [[2.0 * i] * 3])


def test_grpc_priority_is_honoured(server, pbs):  # noqa: F811
    req = infer_request("db_prio", [("INPUT0", "FP32", np.full(2, 6.0, np.float32))])
    req.parameters["priority"].uint64_param = 1
    np.testing.assert_array_equal(output_array(server.stub().ModelInfer(req)), [6.0, 6.0])


@pytest.mark.parametrize("model,message", [
    ("db_bad_preferred", "dynamic_batching: 'preferred_batch_size' 2 must be <= max_batch_size 0"),
    ("db_bad_ordering", "dynamic_batching: Only one priority level is allowed when "
                        "'preserve_ordering' is true"),
    ("db_bad_priority", "dynamic_batching: 'default_priority_level' 3 must be in range [1, 2]"),
])
def test_invalid_dynamic_batching_config_fails_load(server, model, message):
    r = server.get(f"/v2/models/{model}/ready")
    assert r.status_code == 400
    assert f"failed to load model '{model}': model '{model}': {message}" in server.stderr()
    assert_error(server.infer(model, [slow_input(1)]))
