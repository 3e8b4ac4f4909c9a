"""Implicit state options and iterative_sequence through Triton's own client (issue 13 item 8):
`use_same_buffer_for_input_output` carries the state as without it (CPU semantics: one buffer
for the state input and output gives the same values), `use_growable_memory` is refused at load
with Triton's words (Triton allows it only on KIND_GPU instances, and only with a single buffer),
and `iterative_sequence` gives a request without a correlation ID a sequence of its own, as
Triton's IterativeSequencer does with a backend that never reschedules.

The models are copies of the `seq_accum` fixture (OUTPUT = OUTPUT_STATE = INPUT on START, else
INPUT + INPUT_STATE) with the option set, in a repository served in explicit mode.
"""

import asyncio
import os
import shutil

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients, module_of)
from helpers import repo

STATE = ('state { input_name: "INPUT_STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32 '
         'dims: [ 1 ]')
MODELS = {
    "state_same_buffer": (STATE + " use_same_buffer_for_input_output: true }", ""),
    "state_growable": (STATE + " use_same_buffer_for_input_output: true "
                       "use_growable_memory: true }", ""),
    "state_growable_alone": (STATE + " use_growable_memory: true }", ""),
    "state_iterative": (STATE + " }", "iterative_sequence: true"),
}
GROWABLE_GPU = ("'use_growable_memory' can only work with KIND_GPU model instances right now. "
                "Please either change the instance type to KIND_GPU or set "
                "'use_growable_memory' to false for state input 'INPUT_STATE'.")
GROWABLE_SINGLE = ("In order to 'use_growable_memory', you must also enable 'use_single_buffer' "
                   "for state input name 'INPUT_STATE'.")
START_ERR = "must specify the START flag on the first request of the sequence"


def write_models(root):
    source = repo("fixtures", "sequence", "seq_accum")
    with open(os.path.join(source, "config.pbtxt")) as f:
        base = f.read()
    for name, (state, extra) in MODELS.items():
        dst = os.path.join(root, name)
        shutil.copytree(os.path.join(source, "1"), os.path.join(dst, "1"))
        cfg = base.replace('name: "seq_accum"', f'name: "{name}"')
        old_state = next(line for line in cfg.splitlines() if line.strip().startswith("state "))
        cfg = cfg.replace(old_state, "  " + state + ("\n  " + extra if extra else ""))
        with open(os.path.join(dst, "config.pbtxt"), "w") as f:
            f.write(cfg)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("state_options"))
    write_models(root)
    s = GrpcServer([root], flags=["--model-control-mode=explicit"],
                   name="client-state-options").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def value_input(module, value):
    i = module.InferInput("INPUT", [1, 1], "INT32")
    i.set_data_from_numpy(np.array([[value]], np.int32))
    return [i]


@pytest.mark.parametrize("name", ["http", "grpc"])
def test_same_buffer_for_input_output_carries_the_state(server, name):
    c = dict(clients(server))[name]
    c.load_model("state_same_buffer")
    module = module_of(name)
    sid = 100 if name == "http" else 200
    got = []
    for k, v in enumerate([3, 4, 5]):
        r = c.infer("state_same_buffer", value_input(module, v), sequence_id=sid,
                    sequence_start=k == 0, sequence_end=k == 2)
        got.append(int(r.as_numpy("OUTPUT")[0][0]))
    assert got == [3, 7, 12]


@pytest.mark.parametrize("model,message", [("state_growable", GROWABLE_GPU),
                                           ("state_growable_alone", GROWABLE_SINGLE)])
@pytest.mark.parametrize("name", ["http", "grpc"])
def test_growable_memory_is_a_load_error_with_tritons_words(server, name, model, message):
    c = dict(clients(server))[name]
    with pytest.raises(InferenceServerException) as e:
        c.load_model(model)
    assert message in e.value.message(), e.value.message()
    assert not c.is_model_ready(model)


@pytest.mark.parametrize("name", ["http", "grpc"])
def test_iterative_sequence_without_an_id_is_a_sequence_of_its_own(server, name):
    c = dict(clients(server))[name]
    c.load_model("state_iterative")
    module = module_of(name)
    for v in (5, 6):  # each starts afresh (START), so the state never adds up
        r = c.infer("state_iterative", value_input(module, v))
        assert int(r.as_numpy("OUTPUT")[0][0]) == v
    sid = 300 if name == "http" else 400
    r = c.infer("state_iterative", value_input(module, 2), sequence_id=sid, sequence_start=True)
    assert int(r.as_numpy("OUTPUT")[0][0]) == 2
    with pytest.raises(InferenceServerException) as e:  # that request ended its sequence
        c.infer("state_iterative", value_input(module, 1), sequence_id=sid)
    assert START_ERR in e.value.message()


def test_iterative_sequence_with_asyncio_clients(server):
    dict(clients(server))["http"].load_model("state_iterative")

    async def run():
        for name, c in aio_clients(server):
            try:
                r = await c.infer("state_iterative", value_input(module_of(name), 9))
                assert int(r.as_numpy("OUTPUT")[0][0]) == 9, name
            finally:
                await c.close()
    asyncio.run(run())
