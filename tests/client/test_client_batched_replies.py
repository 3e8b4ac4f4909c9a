"""Replies of requests the dynamic batcher ran together (issue 21 goal 3, branch batcher), through
Triton's own client (HTTP and gRPC, sync and asyncio): eight requests at once form one batch
(preferred size reached), at two priority levels so that the batch takes the whole queue of both;
each reply carries its own request's values whether its output travels as binary data (the reply
then views the response the batch was split into) or as JSON; a second round on the same queue
batches again. The statistics API shows one execution of eight inferences per round."""

import asyncio
import concurrent.futures

import numpy as np
import pytest

from client_support import clients, grpcclient_aio, httpclient_aio, module_of, serve_repository

MODEL = "identity_batched"
BATCH = 8
CONFIG = f"""name: "{MODEL}"
backend: "identity"
max_batch_size: {BATCH}
input [ {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }} ]
output [ {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
dynamic_batching {{
  preferred_batch_size: [ {BATCH} ]
  max_queue_delay_microseconds: 5000000
  priority_levels: 2
  default_priority_level: 2
}}
"""


def write_repo(root):
    (root / MODEL / "1").mkdir(parents=True)
    (root / MODEL / "config.pbtxt").write_text(CONFIG)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve_repository(tmp_path_factory, "batched-replies", write_repo, [],
                                "batched-replies")


def values(i, rnd):
    return (np.arange(4, dtype=np.float32) + 100 * rnd + 10 * i - 0.5).reshape(1, 4)


def request_args(protocol, i, rnd):
    """(inputs, outputs, priority) of request i: odd ones at priority 1, even ones JSON output."""
    module = module_of(protocol)
    inp = module.InferInput("INPUT0", [1, 4], "FP32")
    binary_out = i % 2 == 1
    if protocol == "http":
        inp.set_data_from_numpy(values(i, rnd), binary_data=i % 4 < 2)
        out = module.InferRequestedOutput("OUTPUT0", binary_data=binary_out)
    else:
        inp.set_data_from_numpy(values(i, rnd))
        out = module.InferRequestedOutput("OUTPUT0")
    return [inp], [out], 1 if i % 2 else 0


def counts(client, protocol):
    stats = client.get_inference_statistics(MODEL)
    if protocol == "grpc":
        stats = client.get_inference_statistics(MODEL, as_json=True)
    s = stats["model_stats"][0]
    return int(s.get("inference_count", 0)), int(s.get("execution_count", 0))


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_one_batch_per_round_each_reply_its_own_values(server, protocol):
    client = dict(clients(server))[protocol]

    def one(i, rnd):
        own = dict(clients(server))[protocol]
        inputs, outputs, priority = request_args(protocol, i, rnd)
        result = own.infer(MODEL, inputs, outputs=outputs, priority=priority,
                           request_id=f"r{rnd}-{i}")
        response = (result.get_response(as_json=True) if protocol == "grpc"
                    else result.get_response())
        return response, result.as_numpy("OUTPUT0")

    for rnd in range(2):
        before = counts(client, protocol)
        with concurrent.futures.ThreadPoolExecutor(BATCH) as pool:
            answers = list(pool.map(lambda i: one(i, rnd), range(BATCH)))
        after = counts(client, protocol)
        assert (after[0] - before[0], after[1] - before[1]) == (BATCH, 1)
        for i, (response, out) in enumerate(answers):
            np.testing.assert_array_equal(out, values(i, rnd))
            assert response["id"] == f"r{rnd}-{i}"
            if protocol == "http":
                listed = response["outputs"][0]
                assert ("parameters" in listed and "binary_data_size" in listed["parameters"]) \
                    == (i % 2 == 1), listed


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_one_batch_per_round_asyncio(server, protocol):
    async def run():
        clients_ = [httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")
                    if protocol == "http" else grpcclient_aio.InferenceServerClient(server.target())
                    for _ in range(BATCH)]
        try:
            for rnd in range(2):
                before = counts(dict(clients(server))[protocol], protocol)

                async def one(i):
                    inputs, outputs, priority = request_args(protocol, i, rnd)
                    result = await clients_[i].infer(MODEL, inputs, outputs=outputs,
                                                     priority=priority)
                    return result.as_numpy("OUTPUT0")

                outs = await asyncio.gather(*(one(i) for i in range(BATCH)))
                after = counts(dict(clients(server))[protocol], protocol)
                assert (after[0] - before[0], after[1] - before[1]) == (BATCH, 1)
                for i, out in enumerate(outs):
                    np.testing.assert_array_equal(out, values(i, rnd))
        finally:
            for c in clients_:
                await c.close()

    asyncio.run(run())

