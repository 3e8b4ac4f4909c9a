"""Issue 18: a thread waiting in a decoupled BLS stream's next() (exec(decoupled=True)) does not
hold up the stub's other threads (Triton's behaviour). The server answers a "bls_next" whose
stream has nothing yet later, when the called model sends, and goes on reading the stub meanwhile.

GATED (decoupled) sends OUT = [0] at once, then opens the FIFO named by its PATH input for reading
(blocks until a writer opens it) and sends OUT = [1] with FINAL: whoever opens the FIFO for
writing decides when the second response exists. No sleeps: every wait is on a FIFO or a
threading.Event.

WAITER (decoupled) runs thread T1, which iterates GATED on FIFO gate<mode> in its model directory,
and records events in order; IN chooses the mode:
  0: during execute: execute itself is T2: once T1 has its first response and waits in next(),
     it asks is_cancelled(), makes a (non-decoupled) BLS call to DOUBLE and logs a line, then
     opens the gate, joins T1 and answers the events.
  1: as 0, but execute returns at once and T2 is a second thread (the instance is idle; its
     request is still pending, so the watcher thread reads the stub).
  2: execute returns with FINAL once T1 waits for its second response: nothing of the instance is
     pending any more. The test opens the gate; T1 writes its events into FIFO done2.
  3: as 1 without T2 and without anybody opening the gate before the stream times out
     (stub-timeout-seconds): T1 gets the timeout error; the events are the response.
  4: answers ["ok"] at once.
  5: as 2 (gate5, done5), for a model unloaded while T1 waits: T1 gets the unload error.
"""

import json
import os
import queue
import threading

import numpy as np
import pytest

from client_support import GrpcServer, grpcclient
import python_models

GATED = '''
import os
import threading

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            path = pb_utils.get_input_tensor_by_name(r, "PATH").as_numpy()[0].decode()
            threading.Thread(target=self.run, args=(path, r.get_response_sender()),
                             daemon=True).start()
        return None

    def run(self, path, sender):
        sender.send(pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUT", np.array([0], dtype=np.int32))]))
        with open(path) as f:  # blocks until the writer comes
            f.read()
        sender.send(pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUT", np.array([1], dtype=np.int32))]), flags=FINAL)
'''

WAITER = '''
import json
import os
import threading

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def info(events):
    return pb_utils.InferenceResponse([pb_utils.Tensor(
        "INFO", np.array([json.dumps(events).encode()], dtype=np.object_))])


class TritonPythonModel:
    def initialize(self, args):
        self.dir = args["model_repository"]
        self.reports = []  # the threads writing done<mode>: finalize waits for them

    def finalize(self):
        for t in self.reports:
            t.join(60)

    def execute(self, requests):
        for r in requests:
            mode = int(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0])
            sender = r.get_response_sender()
            if mode == 4:
                sender.send(info(["ok"]), flags=FINAL)
                continue
            events = []
            lock = threading.Lock()
            waiting = threading.Event()  # T1 has its first response and asks for the next one

            def add(e, events=events, lock=lock):
                with lock:
                    events.append(e)

            t1 = threading.Thread(target=self.iterate, daemon=True,
                                  args=(os.path.join(self.dir, "gate%d" % mode), add, waiting))
            t1.start()
            if mode == 0:
                self.other(sender, add, waiting, mode)
                t1.join()
                sender.send(info(events), flags=FINAL)
            elif mode == 1:
                def t2(sender=sender, add=add, waiting=waiting, t1=t1, events=events):
                    self.other(sender, add, waiting, mode)
                    t1.join()
                    sender.send(info(events), flags=FINAL)
                threading.Thread(target=t2, daemon=True).start()
            elif mode in (2, 5):
                waiting.wait(60)
                sender.send(info([]), flags=FINAL)

                def report(t1=t1, events=events, mode=mode):
                    t1.join()
                    with open(os.path.join(self.dir, "done%d" % mode), "w") as f:
                        f.write(json.dumps(events))
                self.reports.append(threading.Thread(target=report, daemon=True))
                self.reports[-1].start()
            else:  # 3
                def t3(sender=sender, t1=t1, events=events):
                    t1.join()
                    sender.send(info(events), flags=FINAL)
                threading.Thread(target=t3, daemon=True).start()
        return None

    def iterate(self, gate, add, waiting):
        call = pb_utils.InferenceRequest(
            model_name="gated_py", requested_output_names=["OUT"],
            inputs=[pb_utils.Tensor("PATH", np.array([gate.encode()], dtype=np.object_))])
        for response in call.exec(decoupled=True):
            if response.has_error():
                add("T1 error: " + response.error().message())
                continue
            out = pb_utils.get_output_tensor_by_name(response, "OUT")
            if out is None:
                continue
            add("T1 got %d" % int(out.as_numpy()[0]))
            waiting.set()  # the loop asks for the next one now
        add("T1 end")

    def other(self, sender, add, waiting, mode):
        waiting.wait(60)
        add("T2 is_cancelled %s" % sender.is_cancelled())
        answer = pb_utils.InferenceRequest(
            model_name="double_py", requested_output_names=["OUT"],
            inputs=[pb_utils.Tensor("IN", np.array([21], dtype=np.int32))]).exec()
        if answer.has_error():
            add("T2 bls error: " + answer.error().message())
        else:
            add("T2 bls %d" % int(pb_utils.get_output_tensor_by_name(answer, "OUT").as_numpy()[0]))
        pb_utils.Logger.log_info("bls-next-test: T2 logs while T1 waits (mode %d)" % mode)
        add("T2 logged")
        add("T2 opens the gate")
        with open(os.path.join(self.dir, "gate%d" % mode), "w") as f:
            f.write("go")
'''

DOUBLE = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() * 2)]) for r in requests]
'''

TIMEOUT = "BLS request to model 'gated_py' timed out (stub-timeout-seconds)"
UNLOADING = ("Failed to process the request(s) for model instance 'waiter_py_0_0', message: the "
             "model is unloading and the request had not sent its final response.")


def write_repository(root):
    io = python_models.io
    decoupled = "model_transaction_policy { decoupled: true }"
    single = "instance_group [{ count: 1, kind: KIND_CPU }]"
    models = {
        "gated_py": ([io("PATH", "TYPE_STRING", [1])], [io("OUT", "TYPE_INT32", [1])],
                     decoupled, GATED),
        "waiter_py": ([io("IN", "TYPE_INT32", [1])], [io("INFO", "TYPE_STRING", [1])],
                      decoupled + "\n" + single, WAITER),
        "double_py": ([io("IN", "TYPE_INT32", [1])], [io("OUT", "TYPE_INT32", [1])], "", DOUBLE),
    }
    for name, (inputs, outputs, extra, code) in models.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(
            python_models.config(name, inputs, outputs, extra=extra))
        (root / name / "1" / "model.py").write_text(code)
    for name in ("gate0", "gate1", "gate2", "gate3", "gate5", "done2", "done5"):
        os.mkfifo(root / "waiter_py" / name)


def start(tmp_path, name, stub_timeout_s, flags=()):
    write_repository(tmp_path)
    flag = f"--backend-config=python,stub-timeout-seconds={stub_timeout_s}"
    s = GrpcServer([str(tmp_path)], [flag, *flags], name=name).start()
    s.root = tmp_path
    return s


@pytest.fixture
def server(tmp_path):
    # Long enough never to end a stream in these tests on a loaded machine; a server that answered
    # "bls_next" in the reader would answer T1 with the timeout error after it.
    s = start(tmp_path, "client-python-bls-next", 20)
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def infer(server, mode):
    """The one response of waiter_py for IN = mode (over a gRPC stream): its events."""
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        t = grpcclient.InferInput("IN", [1], "INT32")
        t.set_data_from_numpy(np.array([mode], dtype=np.int32))
        c.async_stream_infer("waiter_py", [t], request_id=f"mode{mode}")
        result, error = results.get(timeout=90)
    finally:
        c.stop_stream()
        c.close()
    assert error is None, error
    return json.loads(result.as_numpy("INFO")[0])


def in_thread(target):
    """Runs `target` in a daemon thread; returns a queue that gets its result (or exception)."""
    out = queue.Queue()

    def run():
        try:
            out.put(target())
        except Exception as e:  # noqa: BLE001 - handed to the test
            out.put(e)
    threading.Thread(target=run, daemon=True).start()
    return out


EXPECTED = ["T1 got 0", "T2 is_cancelled False", "T2 bls 42", "T2 logged", "T2 opens the gate",
            "T1 got 1", "T1 end"]


@pytest.mark.parametrize("mode", [0, 1], ids=["during-execute", "after-execute-returned"])
def test_other_threads_are_answered_while_one_waits_in_next(server, mode):
    # T2's three calls all completed while T1 still waited (its second response exists only once
    # T2 opened the gate), and then T1 got that response and its stream ended.
    assert infer(server, mode) == EXPECTED
    server.wait_for_log(f"bls-next-test: T2 logs while T1 waits (mode {mode})")
    assert infer(server, 4) == ["ok"]


def test_next_waiting_when_nothing_of_the_instance_is_pending_is_answered(server):
    # The request ended (FINAL) while T1 still waits in next(); the instance is idle with nothing
    # pending: the response that comes later still reaches T1.
    assert infer(server, 2) == []
    done = in_thread(lambda: (server.root / "waiter_py" / "done2").read_text())
    gate = in_thread(lambda: (server.root / "waiter_py" / "gate2").write_text("go"))
    assert gate.get(timeout=60) is not None  # written (the called model read it)
    assert json.loads(done.get(timeout=60)) == ["T1 got 0", "T1 got 1", "T1 end"]
    assert infer(server, 4) == ["ok"]


def test_next_that_times_out_is_answered_with_the_timeout_and_the_instance_serves_on(tmp_path):
    s = start(tmp_path, "client-python-bls-next-timeout", 2)
    try:
        assert infer(s, 3) == ["T1 got 0", "T1 error: " + TIMEOUT, "T1 end"]
        assert infer(s, 4) == ["ok"]
        # The called model still waits at its gate: let it go (its response goes nowhere).
        gate = in_thread(lambda: (s.root / "waiter_py" / "gate3").write_text("go"))
        assert gate.get(timeout=60) is not None
        assert infer(s, 4) == ["ok"]
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_next_waiting_at_the_unload_gets_the_unload_error(tmp_path):
    # Nothing of the instance is pending (the request sent FINAL); T1 waits in next() when the
    # model unloads: it gets the unload error rather than waiting (the stub then finalizes).
    s = start(tmp_path, "client-python-bls-next-unload", 60,
              ["--model-control-mode=explicit", "--load-model=*"])
    try:
        assert infer(s, 5) == []
        done = in_thread(lambda: (s.root / "waiter_py" / "done5").read_text())
        c = grpcclient.InferenceServerClient(s.target())
        try:
            c.unload_model("waiter_py")
        finally:
            c.close()
        assert json.loads(done.get(timeout=60)) == [
            "T1 got 0", "T1 error: " + UNLOADING, "T1 end"]
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]
