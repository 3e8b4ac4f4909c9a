"""Shared by the one-CPU client tests (test_grpc_one_cpu.py, test_http_one_cpu.py): a server
started with a one-CPU affinity mask, as under `taskset -c N`, and `simple`'s inputs."""

import os

import numpy as np

from client_support import GrpcServer
from helpers import repo


def start_on_one_cpu(name, flags):
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})  # the server inherits the mask, as under taskset
    try:
        return GrpcServer([repo("examples")], flags=flags, name=name).start()
    finally:
        os.sched_setaffinity(0, cpus)


def simple_inputs(module, k):
    """(INPUT0, INPUT1, the client's InferInputs) for `simple`: k everywhere, and 0..15."""
    a = np.full((1, 16), k, dtype=np.int32)
    b = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
              module.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return a, b, inputs
