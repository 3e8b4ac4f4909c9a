"""One gRPC ModelStreamInfer stream through Triton's client whose callback results land in a
queue, for the decoupled-model tests (repeat, square)."""

import queue

import numpy as np
import pytest

from client_support import grpcclient


class ResultStream:
    def __init__(self, server, headers=None):
        self.client = grpcclient.InferenceServerClient(server.target())
        self.results = queue.Queue()
        self.client.start_stream(
            callback=lambda result, error: self.results.put((result, error)), headers=headers)

    def take(self, n, timeout=20):
        return [self.results.get(timeout=timeout) for _ in range(n)]

    def nothing_more(self, wait=0.5):
        with pytest.raises(queue.Empty):
            self.results.get(timeout=wait)

    def close(self):
        self.client.stop_stream()
        self.client.close()


def final_flag(result):
    return result.get_response().parameters["triton_final_response"].bool_param


def stream_counts(server, model, requests, n):
    """Sends one INT32 `IN` = count per (count, request_id) of `requests` to `model` on one stream
    (empty FINALs on) and returns the first `n` (result, error) pairs."""
    stream = ResultStream(server)
    try:
        for count, rid in requests:
            t = grpcclient.InferInput("IN", [1], "INT32")
            t.set_data_from_numpy(np.array([count], dtype=np.int32))
            stream.client.async_stream_infer(model, [t], request_id=rid,
                                             enable_empty_final_response=True)
        return stream.take(n)
    finally:
        stream.close()


def outs_of(got, rid):
    """The OUT values of the responses of request `rid` among `got`, in order."""
    return [int(r.as_numpy("OUT")[0]) for r, e in got
            if e is None and r.get_response().id == rid and r.as_numpy("OUT") is not None]
