"""One gRPC ModelStreamInfer stream through Triton's client whose callback results land in a
queue, for the decoupled-model tests (repeat, square)."""

import queue

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
