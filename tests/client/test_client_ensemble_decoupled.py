"""Issue 17 item 7 / issue 15 remainder through Triton's own client: decoupled composing models in
ensembles (REFERENCE-2 §7.3). Every response of the decoupled `repeat` step feeds the steps after
it as a separate flow and each flow is one ensemble response on the gRPC stream, then a
flags-only FINAL; an ensemble with a decoupled step is decoupled itself (unary protocols refuse
it); `max_inflight_requests` bounds the downstream steps in flight (observed through timing);
a step's error ends the request with the ensemble's prefix and the stream stays open."""

import asyncio
import time

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, grpcclient, grpcclient_aio,
                            httpclient)
from ensemble_repo import step, tensor, write_model
from stream_support import ResultStream as Stream
from stream_support import final_flag

REPEAT = f'''name: "repeat_int32"
backend: "repeat"
max_batch_size: 0
model_transaction_policy {{ decoupled: true }}
input [ {tensor("IN", "TYPE_INT32", [-1])}, {tensor("DELAY", "TYPE_UINT32", [-1])},
        {tensor("WAIT", "TYPE_UINT32", [1])} ]
output [ {tensor("OUT", "TYPE_INT32", [1])}, {tensor("IDX", "TYPE_UINT32", [1])} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
'''

IDENTITY = f'''name: "identity_int32"
backend: "identity"
max_batch_size: 0
input [ {tensor("INPUT0", "TYPE_INT32", [1])} ]
output [ {tensor("OUTPUT0", "TYPE_INT32", [1])} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
'''


SLOW = f'''name: "identity_slow"
backend: "identity"
max_batch_size: 0
input [ {tensor("INPUT0", "TYPE_INT32", [1])} ]
output [ {tensor("OUTPUT0", "TYPE_INT32", [1])} ]
instance_group [ {{ count: 8 kind: KIND_CPU }} ]
parameters {{ key: "execute_delay_ms" value: {{ string_value: "60" }} }}
'''

ENSEMBLE_IO = f'''input [ {tensor("IN", "TYPE_INT32", [-1])}, {tensor("DELAY", "TYPE_UINT32", [-1])},
        {tensor("WAIT", "TYPE_UINT32", [1])} ]
output [ {tensor("FINAL_OUT", "TYPE_INT32", [1])}, {tensor("IDX", "TYPE_UINT32", [1])} ]
'''


def repeat_then(name, second, limit=None, second_inputs=None):
    """IN/DELAY/WAIT -> repeat_int32 -> (t_out, IDX); t_out -> `second` -> FINAL_OUT."""
    second_step = step(second, second_inputs or {"INPUT0": "t_out"}, {"OUTPUT0": "FINAL_OUT"})
    limit_text = f"max_inflight_requests: {limit}" if limit is not None else ""
    return f'''name: "{name}"
platform: "ensemble"
max_batch_size: 0
{ENSEMBLE_IO}
ensemble_scheduling {{
  step [ {step("repeat_int32", {"IN": "IN", "DELAY": "DELAY", "WAIT": "WAIT"},
               {"OUT": "t_out", "IDX": "IDX"})}, {second_step} ]
  {limit_text}
}}
'''


GOOD = ["fan_identity", "fan_slow_unlimited", "fan_slow_limit1"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("ensemble-decoupled")
    write_model(root, "repeat_int32", REPEAT)
    write_model(root, "identity_int32", IDENTITY)
    write_model(root, "identity_slow", SLOW)
    write_model(root, "fan_identity", repeat_then("fan_identity", "identity_int32"))
    write_model(root, "fan_slow_unlimited", repeat_then("fan_slow_unlimited", "identity_slow"))
    write_model(root, "fan_slow_limit1", repeat_then("fan_slow_limit1", "identity_slow", limit=1))
    # Triton refuses a step whose inputs descend from a decoupled step and from elsewhere.
    write_model(root, "fan_mixed", repeat_then(
        "fan_mixed", "repeat_int32", second_inputs={"IN": "t_out", "DELAY": "DELAY",
                                                     "WAIT": "WAIT"}).replace(
        '"OUTPUT0"', '"OUT"'))
    s = GrpcServer([str(root)], ["--model-control-mode=explicit"] +
                   [f"--load-model={m}" for m in GOOD],
                   name="client-ensemble-decoupled").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def inputs(values, delays=None, client=grpcclient):
    arrays = [("IN", np.array(values, np.int32)),
              ("DELAY", np.array(delays or [0] * len(values), np.uint32)),
              ("WAIT", np.array([0], np.uint32))]
    out = []
    for name, a in arrays:
        t = client.InferInput(name, list(a.shape), "INT32" if a.dtype == np.int32 else "UINT32")
        t.set_data_from_numpy(a)
        out.append(t)
    return out


def test_each_response_of_the_decoupled_step_is_one_ensemble_response(server):
    s = Stream(server)
    try:
        s.client.async_stream_infer("fan_identity", inputs([4, 5, 6]), request_id="fan",
                                    enable_empty_final_response=True)
        got = s.take(4)
        s.nothing_more()
    finally:
        s.close()
    for i, (result, error) in enumerate(got[:3]):
        assert error is None
        assert result.as_numpy("FINAL_OUT").tolist() == [4 + i]
        assert result.as_numpy("IDX").tolist() == [i]
        assert result.get_response().id == "fan"
        assert result.get_response().model_name == "fan_identity"
        assert final_flag(result) is False
    last, error = got[3]
    assert error is None and final_flag(last) is True and list(last.get_response().outputs) == []


def test_no_response_from_the_decoupled_step_gives_only_the_final(server):
    s = Stream(server)
    try:
        s.client.async_stream_infer("fan_identity", inputs([]), request_id="none",
                                    enable_empty_final_response=True)
        (last, error), = s.take(1)
        assert error is None and final_flag(last) is True
        s.nothing_more()
    finally:
        s.close()


def test_ensemble_with_a_decoupled_step_is_decoupled(server):
    g = grpcclient.InferenceServerClient(server.target())
    try:
        config = g.get_model_config("fan_identity", as_json=True)["config"]
        assert config["model_transaction_policy"]["decoupled"] is True
        with pytest.raises(InferenceServerException) as e:
            g.infer("fan_identity", inputs([1]))
        assert "ModelInfer RPC doesn't support models with decoupled transaction policy" in \
            e.value.message()
    finally:
        g.close()
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    with pytest.raises(InferenceServerException) as e:
        h.infer("fan_identity", inputs([1], client=httpclient))
    assert "HTTP end point doesn't support models with decoupled transaction policy" in str(e.value)
    assert h.get_model_config("fan_slow_limit1")["ensemble_scheduling"][
        "max_inflight_requests"] == 1


def timed_fan(server, model, n):
    s = Stream(server)
    try:
        start = time.monotonic()
        s.client.async_stream_infer(model, inputs(list(range(n))), request_id=model)
        got = s.take(n)
        elapsed = time.monotonic() - start
        s.nothing_more(0.2)
    finally:
        s.close()
    assert all(e is None for r, e in got), got
    assert sorted(r.as_numpy("FINAL_OUT").tolist()[0] for r, e in got) == list(range(n))
    return elapsed


def test_max_inflight_requests_bounds_the_downstream_steps(server):
    # 8 responses, each feeding identity_slow (60 ms per execution, 8 instances). Unlimited, the 8
    # downstream steps overlap (~0.06 s); with max_inflight_requests 1 they run one at a time
    # (>= 0.48 s), and the client sees no error.
    unlimited = timed_fan(server, "fan_slow_unlimited", 8)
    limited = timed_fan(server, "fan_slow_limit1", 8)
    assert limited >= 0.45, (limited, unlimited)
    assert unlimited < limited / 2, (limited, unlimited)


def test_cancelling_a_stream_held_by_back_pressure_frees_the_ensemble(server):
    # 50 responses through max_inflight_requests 1 would take 3 s; the client cancels after the
    # first: the waiting dispatch stops waiting, the steps see the cancellation, and the next
    # request is served at once.
    def executions():
        g = grpcclient.InferenceServerClient(server.target())
        try:
            st = g.get_inference_statistics("identity_slow", as_json=True)["model_stats"][0]
            return int(st.get("execution_count", 0))
        finally:
            g.close()

    before = executions()
    s = Stream(server)
    s.client.async_stream_infer("fan_slow_limit1", inputs(list(range(50))), request_id="long")
    (result, error), = s.take(1)
    assert error is None
    s.client.stop_stream(cancel_requests=True)
    s.client.close()
    start = time.monotonic()
    elapsed = timed_fan(server, "fan_slow_limit1", 2)
    assert time.monotonic() - start < 2.0, elapsed
    time.sleep(0.5)
    # Far fewer than the 50 downstream executions the request would have run.
    assert executions() - before < 12


def test_step_inputs_from_a_decoupled_step_and_elsewhere_fail_the_load(server):
    g = grpcclient.InferenceServerClient(server.target())
    try:
        with pytest.raises(InferenceServerException) as e:
            g.load_model("fan_mixed")
        assert "in ensemble fan_mixed, step of model 'repeat_int32' receives inputs originated " \
            "from different decoupled models" in e.value.message()
    finally:
        g.close()


def test_error_from_a_step_ends_the_request_and_keeps_the_stream(server):
    s = Stream(server)
    try:
        # The decoupled step refuses IN [2] with DELAY [3]; the ensemble answers with its prefix.
        s.client.async_stream_infer("fan_identity", inputs([1, 2], delays=[0, 0, 0]),
                                    request_id="bad")
        (result, error), = s.take(1)
        assert isinstance(error, InferenceServerException)
        assert error.message() == ("in ensemble 'fan_identity', expected IN and DELAY shape to "
                                   "match, got [2] and [3]")
        s.nothing_more()
        s.client.async_stream_infer("fan_identity", inputs([9]), request_id="after")
        (result, error), = s.take(1)
        assert error is None and result.as_numpy("FINAL_OUT").tolist() == [9]
    finally:
        s.close()


def test_statistics_count_the_ensemble_once_and_each_step_per_flow(server):
    g = grpcclient.InferenceServerClient(server.target())

    def counts(model):
        st = g.get_inference_statistics(model, as_json=True)["model_stats"][0]
        return int(st["inference_stats"]["success"].get("count", 0))

    try:
        before = {m: counts(m) for m in ("fan_identity", "repeat_int32", "identity_int32")}
        s = Stream(server)
        try:
            s.client.async_stream_infer("fan_identity", inputs([1, 2, 3, 4, 5]), request_id="st")
            s.take(5)
        finally:
            s.close()
        time.sleep(0.2)
        after = {m: counts(m) for m in before}
    finally:
        g.close()
    assert after["fan_identity"] - before["fan_identity"] == 1
    assert after["repeat_int32"] - before["repeat_int32"] == 1
    assert after["identity_int32"] - before["identity_int32"] == 5


def test_aio_stream_through_a_decoupled_ensemble(server):
    async def run():
        client = grpcclient_aio.InferenceServerClient(server.target())

        async def requests():
            yield {"model_name": "fan_identity", "inputs": inputs([7, 8], client=grpcclient_aio),
                   "request_id": "aio"}

        got = []
        try:
            async for result, error in client.stream_infer(requests()):
                assert error is None
                got.append(result.as_numpy("FINAL_OUT").tolist())
                if len(got) == 2:
                    break
        finally:
            await client.close()
        return got

    assert asyncio.run(run()) == [[7], [8]]
