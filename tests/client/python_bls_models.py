"""Python-backend models for tests/client/test_client_python_bls.py (issue 18 items 1, 3, 4 of
the BLS and request-feature work): config.pbtxt + 1/model.py each, written into a temporary
repository beside copies of the decoupled and sequence fixtures they call."""

import textwrap

from python_models import config, io

# Calls model MODEL (STRING) with IN (INT32 [1]) and returns what it saw as JSON in INFO.
# Request parameters choose the way: "mode": "iterate" (exec(decoupled=True)), "async"
# (await async_exec(decoupled=True), iterated with async for), "abandon" (takes one response,
# drops the iterator), "plain" (exec(), decoupled=False), "twice" (iterates the iterator again);
# "trace": true gives the call trace=request.trace() (Triton's BLS tracing idiom).
STREAM_CALLER = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


def describe(response):
    if response.has_error():
        return {"error": response.error().message(), "code": response.error().code()}
    out = pb_utils.get_output_tensor_by_name(response, "OUT")
    return {"out": None if out is None else out.as_numpy().tolist(),
            "outputs": len(response.output_tensors())}


class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            params = json.loads(request.parameters())
            model = pb_utils.get_input_tensor_by_name(request, "MODEL").as_numpy()[0].decode()
            n = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(1)
            call = pb_utils.InferenceRequest(
                model_name=model, requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", n.astype(np.int32))],
                trace=request.trace() if params.get("trace") else None)
            mode = params.get("mode", "iterate")
            seen = []
            if mode == "plain":
                seen.append(describe(call.exec()))
            elif mode == "async":
                async for r in await call.async_exec(decoupled=True):
                    seen.append(describe(r))
            elif mode == "abandon":
                for r in call.exec(decoupled=True):
                    seen.append(describe(r))
                    break
            elif mode == "twice":
                it = call.exec(decoupled=True)
                first = [describe(r) for r in it]
                seen = [describe(r) for r in it]
                seen.append({"same": first == seen})
            else:
                for r in call.exec(decoupled=True):
                    seen.append(describe(r))
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(
                "INFO", np.array([json.dumps(seen).encode()], dtype=np.object_))]))
        return responses
'''

# Decoupled: IN n -> responses OUT=0..n-1, then a flags-only FINAL; IN < 0: one error response.
REPEAT = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)[0])
            sender = request.get_response_sender()
            if n < 0:
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    "negative count", pb_utils.TritonError.INVALID_ARG)))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                continue
            for i in range(n):
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([i], dtype=np.int32))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''

# Calls model TARGET with the BLS request fields the client's parameters name ("bls": a dict of
# InferenceRequest keyword arguments); returns the called model's INFO, or the error text.
FIELDS_CALLER = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            kwargs = json.loads(json.loads(request.parameters())["bls"])
            target = kwargs.pop("model_name")
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            x = x.reshape(kwargs.pop("shape", [1]))
            if kwargs.pop("int_key", False):
                kwargs["parameters"] = {1: "x"}
            if kwargs.pop("cpu_memory", False):
                kwargs["preferred_memory"] = pb_utils.PreferredMemory(
                    pb_utils.TRITONSERVER_MEMORY_CPU, 0)
            if kwargs.pop("parent_trace", False):  # Triton's BLS tracing idiom
                kwargs["trace"] = request.trace()
                assert kwargs["trace"].get_context() is None  # no OpenTelemetry mode
            try:
                call = pb_utils.InferenceRequest(model_name=target, inputs=[
                    pb_utils.Tensor("INPUT", x.astype(np.int32))],
                    requested_output_names=kwargs.pop("outputs"), **kwargs)
                result = call.exec()
                if result.has_error():
                    text = "error: " + result.error().message()
                else:
                    out = result.output_tensors()[0].as_numpy()
                    text = out.reshape(-1)[0]
                    text = text.decode() if isinstance(text, bytes) else str(int(text))
            except Exception as e:  # noqa: BLE001
                text = f"{type(e).__name__}: {e}"
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(
                "INFO", np.array([text.encode()], dtype=np.object_))]))
        return responses
'''

# Echoes what its request carries: parameters, flags, correlation id, request id.
ECHO_FIELDS = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("INFO", np.array([json.dumps({
            "parameters": json.loads(r.parameters()), "flags": r.flags(),
            "correlation_id": r.correlation_id(), "request_id": r.request_id()}).encode()],
            dtype=np.object_))]) for r in requests]
'''

# Model control from execute: the client's parameters say what ("op": ready / load / unload,
# "name", "version", "config", "files" {path: text}, "dependents"); INFO is the answer or the
# exception text.
CONTROL = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            p = json.loads(request.parameters())
            try:
                if p["op"] == "ready":
                    args = [p["name"]] + ([p["version"]] if "version" in p else [])
                    text = str(pb_utils.is_model_ready(*args))
                elif p["op"] == "load":
                    files = p.get("files")
                    if isinstance(files, str):
                        files = json.loads(files)
                        if isinstance(files, dict):
                            files = {k: v.encode() for k, v in files.items()}
                    pb_utils.load_model(p["name"], config=p.get("config", ""), files=files)
                    text = "loaded"
                else:
                    pb_utils.unload_model(p["name"],
                                          unload_dependents=bool(p.get("dependents", False)))
                    text = "unloaded"
            except Exception as e:  # noqa: BLE001
                text = f"{type(e).__name__}: {e}"
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(
                "INFO", np.array([text.encode()], dtype=np.object_))]))
        return responses
'''

# Not decoupled: loops while not request.is_cancelled() (at most 2 s), logs what it saw and
# answers OUT = the seconds it waited (x1000).
CANCEL_LOOP = '''
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        start = time.monotonic()
        request = requests[0]
        tag = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
        while not request.is_cancelled() and time.monotonic() - start < 2:
            time.sleep(0.02)
        waited = time.monotonic() - start
        pb_utils.Logger.log_info(
            f"cancel_loop_py {tag} cancelled={request.is_cancelled()} after {waited:.1f}s")
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", np.array([int(waited * 1000)], dtype=np.int32))]) for _ in requests]
'''

# Decoupled: relays each response of a decoupled BLS call to repeat_py (IN n) through its own
# sender, OUT = 10 * the called model's OUT, then its FINAL (Triton's decoupled-BLS pattern).
RELAY = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            n = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            call = pb_utils.InferenceRequest(model_name="repeat_py", requested_output_names=["OUT"],
                                             inputs=[pb_utils.Tensor("IN", n)])
            for r in call.exec(decoupled=True):
                if r.has_error():
                    sender.send(pb_utils.InferenceResponse(error=r.error()))
                    continue
                out = pb_utils.get_output_tensor_by_name(r, "OUT")
                if out is not None:
                    sender.send(pb_utils.InferenceResponse(
                        [pb_utils.Tensor("OUT", out.as_numpy() * 10)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''

# Decoupled, called by stream_control_py: IN n -> up to n responses OUT=i, `delay` seconds apart,
# stopping once its sender is cancelled; with a "gate" path, response i >= 1 waits (at most 5 s)
# for that file. Writes {"sent", "cancelled", "gate"} to the "report" path, then its FINAL.
COUNTER = '''
import json
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            p = json.loads(request.parameters())
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)[0])
            sender = request.get_response_sender()
            sent, gate = 0, "none"
            for i in range(n):
                if sender.is_cancelled():
                    break
                if i >= 1 and p.get("gate"):
                    deadline = time.monotonic() + 5
                    while not os.path.exists(p["gate"]) and time.monotonic() < deadline:
                        time.sleep(0.01)
                    gate = "open" if os.path.exists(p["gate"]) else "timeout"
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([i], dtype=np.int32))]))
                sent += 1
                time.sleep(float(p.get("delay", 0)))
            report = {"sent": sent, "cancelled": sender.is_cancelled(), "gate": gate}
            with open(p["report"] + ".tmp", "w") as f:
                json.dump(report, f)
            os.rename(p["report"] + ".tmp", p["report"])
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''

# Not decoupled: creates the file named by PATH; INFO "touched".
TOUCH = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            path = pb_utils.get_input_tensor_by_name(request, "PATH").as_numpy().reshape(-1)[0]
            open(path.decode(), "w").close()
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "INFO", np.array([b"touched"], dtype=np.object_))]) for _ in requests]
'''

# Streams counter_py (IN n; the client's "delay", "report" and "gate" parameters passed on) and
# returns what it saw as JSON in INFO. "mode": "cancel" (iterator.cancel() after 2 responses,
# then iterates to the end), "drop" (drops the iterator after 2 responses), "interleave" (after
# the first response: a non-decoupled exec() of touch_py that opens the gate, is_cancelled() and
# a log, then iterates to the end).
STREAM_CONTROL = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


def describe(response):
    if response.has_error():
        return {"error": response.error().message(), "code": response.error().code()}
    out = pb_utils.get_output_tensor_by_name(response, "OUT")
    return {"out": None if out is None else out.as_numpy().tolist()}


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            p = json.loads(request.parameters())
            n = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(1)
            call = pb_utils.InferenceRequest(
                model_name="counter_py", requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", n.astype(np.int32))],
                parameters={k: p[k] for k in ("delay", "report", "gate") if k in p})
            mode = p["mode"]
            seen, extra = [], {}
            it = call.exec(decoupled=True)
            for r in it:
                seen.append(describe(r))
                if mode == "cancel" and len(seen) == 2:
                    it.cancel()
                if mode == "drop" and len(seen) == 2:
                    break
                if mode == "interleave" and len(seen) == 1:
                    touch = pb_utils.InferenceRequest(
                        model_name="touch_py", requested_output_names=["INFO"],
                        inputs=[pb_utils.Tensor("PATH", np.array([p["gate"].encode()],
                                                                 dtype=np.object_))]).exec()
                    extra["touch"] = (touch.error().message() if touch.has_error() else
                                      touch.output_tensors()[0].as_numpy()[0].decode())
                    extra["is_cancelled"] = request.is_cancelled()
                    pb_utils.Logger.log_info("stream_control_py logs while streaming")
            del it
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(
                "INFO", np.array([json.dumps({"seen": seen, **extra}).encode()],
                                 dtype=np.object_))]))
        return responses
'''

# Model control from initialize() (Triton allows it there): checks, loads init_target_py,
# unloads init_victim_py and tries a load that fails and a BLS call (refused with Triton's text);
# execute() answers what initialize saw, as JSON. Not in write_all: the test loads it.
INIT_CONTROL = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        seen = {"ready_before": pb_utils.is_model_ready("init_target_py")}
        pb_utils.load_model("init_target_py")
        seen["ready_after"] = pb_utils.is_model_ready("init_target_py")
        seen["ready_v1"] = pb_utils.is_model_ready("init_target_py", "1")
        pb_utils.unload_model("init_victim_py")
        try:
            pb_utils.load_model("no_such_model")
            seen["bad_load"] = "loaded"
        except pb_utils.TritonModelException as e:
            seen["bad_load"] = str(e)
        call = pb_utils.InferenceRequest(
            model_name="init_target_py", requested_output_names=["INFO"],
            inputs=[pb_utils.Tensor("INPUT", np.array([1], dtype=np.int32))])
        try:
            call.exec()
            seen["bls"] = "ran"
        except pb_utils.TritonModelException as e:
            seen["bls"] = str(e)
        self.seen = json.dumps(seen)

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "INFO", np.array([self.seen.encode()], dtype=np.object_))]) for _ in requests]
'''

# BLS in initialize, not caught: the load fails with Triton's text.
BLS_INIT_ERROR = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        pb_utils.InferenceRequest(
            model_name="echo_fields_py", requested_output_names=["INFO"],
            inputs=[pb_utils.Tensor("INPUT", np.array([1], dtype=np.int32))]).exec()

    def execute(self, requests):
        return []
'''

INFO = io("INFO", "TYPE_STRING", [1])


def write_model(root, name, cfg, code):
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(cfg)
    (root / name / "1" / "model.py").write_text(textwrap.dedent(code))


def write_all(root):
    models = {
        "stream_caller_py": (config("stream_caller_py", [io("MODEL", "TYPE_STRING", [1]),
                                                         io("IN", "TYPE_INT32", [1])], [INFO]),
                             STREAM_CALLER),
        "repeat_py": (config("repeat_py", [io("IN", "TYPE_INT32", [1])],
                             [io("OUT", "TYPE_INT32", [1])],
                             extra="model_transaction_policy { decoupled: true }"), REPEAT),
        "fields_caller_py": (config("fields_caller_py", [io("X", "TYPE_INT32", [1])], [INFO]),
                             FIELDS_CALLER),
        "echo_fields_py": (config("echo_fields_py", [io("INPUT", "TYPE_INT32", [1])],
                                  [INFO]), ECHO_FIELDS),
        "control_py": (config("control_py", [io("X", "TYPE_INT32", [1])], [INFO]), CONTROL),
        "relay_py": (config("relay_py", [io("IN", "TYPE_INT32", [1])],
                            [io("OUT", "TYPE_INT32", [1])],
                            extra="model_transaction_policy { decoupled: true }"), RELAY),
        "cancel_loop_py": (config("cancel_loop_py", [io("IN", "TYPE_INT32", [1])],
                                  [io("OUT", "TYPE_INT32", [1])]), CANCEL_LOOP),
        "counter_py": (config("counter_py", [io("IN", "TYPE_INT32", [1])],
                              [io("OUT", "TYPE_INT32", [1])],
                              extra="model_transaction_policy { decoupled: true }"), COUNTER),
        "touch_py": (config("touch_py", [io("PATH", "TYPE_STRING", [1])], [INFO]), TOUCH),
        "stream_control_py": (config("stream_control_py", [io("IN", "TYPE_INT32", [1])], [INFO]),
                              STREAM_CONTROL),
    }
    for name, (cfg, code) in models.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(cfg)
        (root / name / "1" / "model.py").write_text(textwrap.dedent(code))
