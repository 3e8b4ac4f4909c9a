"""Python-backend models (backend: "python") that tests/client/test_client_python_backend.py
writes into a temporary repository: config.pbtxt + 1/model.py each."""

import os
import textwrap


def io(name, dtype, dims):
    return f'{{ name: "{name}" data_type: {dtype} dims: [ {", ".join(map(str, dims))} ] }}'


def config(name, inputs, outputs, max_batch_size=0, extra=""):
    return (f'name: "{name}"\nbackend: "python"\nmax_batch_size: {max_batch_size}\n'
            f'input [ {", ".join(inputs)} ]\noutput [ {", ".join(outputs)} ]\n{extra}\n')


ADD_SUB = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.config = json.loads(args["model_config"])
        out = pb_utils.get_output_config_by_name(self.config, "OUTPUT0")
        self.out_dtype = pb_utils.triton_string_to_numpy(out["data_type"])
        pb_utils.Logger.log_info("add_sub_py initialized")

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            out0 = pb_utils.Tensor("OUTPUT0", (a + b).astype(self.out_dtype))
            out1 = pb_utils.Tensor("OUTPUT1", (a - b).astype(self.out_dtype))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out0, out1]))
        return responses

    def finalize(self):
        pb_utils.Logger.log_info("add_sub_py finalized")
'''

# Echoes what initialize() and the request accessors saw, as a JSON BYTES output.
INTROSPECT = '''
import json
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.args = args

    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            if text.size == 1 and text[0] == b"slow":
                time.sleep(0.05)
            info = {"args": self.args, "pid": os.getpid(), "n": len(requests),
                    "request_id": request.request_id(),
                    "requested": request.requested_output_names(),
                    "input_types": [type(x).__name__ for x in text.reshape(-1)],
                    "is_cancelled": request.is_cancelled(), "flags": request.flags(),
                    "numpy_to_triton": pb_utils.numpy_to_triton_type(np.float32),
                    "triton_to_numpy": str(pb_utils.triton_string_to_numpy("TYPE_INT64"))}
            upper = np.array([x.upper() for x in text.reshape(-1)], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("UPPER", upper.reshape(text.shape)),
                pb_utils.Tensor("INFO", np.array([json.dumps(info).encode()], dtype=np.object_))]))
        return responses
'''

# Fails on demand: MODE selects what execute() does wrong.
FAULTY = '''
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        mode = int(pb_utils.get_input_tensor_by_name(requests[0], "MODE").as_numpy()[0])
        out = pb_utils.Tensor("OUT", np.array([os.getpid()], dtype=np.int64))
        if mode == 1:
            raise ValueError("mode one is not allowed")
        if mode == 2:
            return None
        if mode == 3:
            return [pb_utils.InferenceResponse([out])] * 2
        if mode == 4:
            return ["not a response"]
        if mode == 40:  # not InferenceResponses, and == on them is elementwise
            return [np.array([1, 2])]
        if mode == 5:
            return [pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", np.array([1.5], dtype=np.float32))])]
        if mode == 6:
            return [pb_utils.InferenceResponse(
                [pb_utils.Tensor("NOPE", np.array([1], dtype=np.int64))])]
        if mode == 7:
            return [pb_utils.InferenceResponse(error=pb_utils.TritonError(
                "bad mode seven", pb_utils.TritonError.INVALID_ARG))]
        if mode == 8:
            os._exit(3)
        if mode == 9:
            while True:
                time.sleep(0.05)
        if mode == 10:
            big = np.zeros([64 * 1024 * 1024 // 8], dtype=np.int64)
            big[-1] = 7
            return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", big)])]
        if mode in BAD_FRAMES:  # a frame of the binary protocol, broken, before the real result
            pb_utils._stub.channel.write(BAD_FRAMES[mode])
        return [pb_utils.InferenceResponse([out])]


# Binary headers (backends/python/stub_protocol.h) the server must refuse.
BAD_FRAMES = {
    # a result announcing 5 responses and holding none
    11: bytes([2, 0, 0, 0, 5, 0, 0, 0]),
    # a decoupled send from a model that is not decoupled
    12: bytes([3, 0, 0, 0, 1, 0, 0, 0]) + bytes(8) + bytes(8),
    # one FP32 output of 16 bytes [4] in a frame without payload
    13: bytes([2, 0, 0, 0, 1, 0, 0, 0]) + bytes([0, 0, 1, 0, 0, 0, 0, 0]) +
        bytes([3, 0, 11, 1, 0]) + bytes(8) + (16).to_bytes(8, "little") + b"OUT" +
        (4).to_bytes(8, "little"),
    # a BLS call (backends/python/bls_frames.h) cut short after its flags
    14: bytes([4, 0, 0, 0, 3, 0, 0, 0]),
    # a BLS call whose FP32 input [4] lies in the shared-memory pool, 1 TiB in
    15: bytes([4, 0, 0, 0]) + bytes(4) + (1).to_bytes(8, "little") +
        (-1).to_bytes(8, "little", signed=True) + bytes(16) +
        (-1).to_bytes(8, "little", signed=True) + (1).to_bytes(4, "little") +
        bytes(8) + (2).to_bytes(4, "little") + bytes(2) + (1).to_bytes(2, "little") + b"m{}" +
        (1).to_bytes(2, "little") + bytes([11, 1, 1]) + (1 << 40).to_bytes(8, "little") +
        (16).to_bytes(8, "little") + b"X" + (4).to_bytes(8, "little"),
    # a BLS stream's "next" without its stream
    16: bytes([6]) + bytes(7) + (1).to_bytes(8, "little"),
}
'''

# Reports how execute() saw a dynamically batched execution: one row per request.
# OUT = 2 * IN (any shape and integer type): the BLS target of the idle-call tests.
DOUBLE_OUT = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() * 2)]) for r in requests]
'''

BATCH = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            rows = x.shape[0]
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("DOUBLE", x * 2),
                pb_utils.Tensor("COUNT", np.full((rows, 1), len(requests), dtype=np.int32)),
                pb_utils.Tensor("META", np.array(
                    [[(request.request_id() + "|" + request.parameters()).encode()]] * rows,
                    dtype=np.object_))]))
        return responses
"""

AUTOCOMPLETE = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.add_input({"name": "IN", "data_type": "TYPE_INT32",
                                              "dims": [4]})
        auto_complete_model_config.add_output({"name": "OUT", "data_type": "TYPE_INT32",
                                               "dims": [4]})
        auto_complete_model_config.set_max_batch_size(4)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() * 3)])
            for r in requests]
"""

AUTOCOMPLETE_NONE = """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        return None

    def execute(self, requests):
        return []
"""

AUTOCOMPLETE_CONFLICT = """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "X", "data_type": "TYPE_INT32", "dims": [1]})
        return config

    def execute(self, requests):
        return []
"""

AUTOCOMPLETE_DECOUPLED = """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.set_model_transaction_policy({"decoupled": True})
        return config

    def execute(self, requests):
        return None
"""

# BLS: calls add_sub_py (or MODEL) through the server; X[0] < 0 awaits async_exec in async
# execute; the request parameter "bls_timeout" becomes the call's timeout (microseconds).
BLS = """
import json
import threading
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            model = pb_utils.get_input_tensor_by_name(request, "MODEL").as_numpy()[0].decode()
            call = pb_utils.InferenceRequest(
                model_name=model, requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", x.reshape(1, 4)),
                        pb_utils.Tensor("INPUT1", np.ones((1, 4), dtype=np.float32))],
                timeout=json.loads(request.parameters()).get("bls_timeout", 0),
                trace=request.trace())  # Triton's BLS tracing idiom
            if json.loads(request.parameters()).get("bls_threads"):
                # Two threads call at once (answers matched by tag).
                got = []
                threads = [threading.Thread(target=lambda: got.append(call.exec()))
                           for _ in range(2)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                assert len(got) == 2 and not got[1].has_error()
                result = got[0]
            else:
                result = await call.async_exec() if x[0] < 0 else call.exec()
            if result.has_error():
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    "BLS failed: " + result.error().message(), result.error().code())))
                continue
            out = pb_utils.get_output_tensor_by_name(result, "OUTPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", out.reshape(4))]))
        return responses
"""

INIT_RAISES = '''
class TritonPythonModel:
    def initialize(self, args):
        lorem_ipsum
'''

SYNTAX_ERROR = '''
class TritonPythonModel:
    def initialize(self, args)
        pass
'''

NO_CLASS = '''
class SomethingElse:
    pass
'''

DECOUPLED = '''
import threading
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            sender = request.get_response_sender()
            if n < 0:
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError("negative")),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                continue

            def run(sender=sender, n=n):
                for i in range(n):
                    sender.send(pb_utils.InferenceResponse(
                        [pb_utils.Tensor("OUT", np.array([i], dtype=np.int32))]))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            threading.Thread(target=run).start()
        return None
'''

# Decoupled: one response, then polls is_cancelled() until the client cancels (or 2.5 s, below
# the fixture's 3 s stub timeout) and logs what it saw. IN 0 polls request.is_cancelled() inside
# execute; IN 1 polls sender.is_cancelled() from a thread after execute returned.
CANCELLABLE = '''
import threading
import time
import numpy as np
import triton_python_backend_utils as pb_utils


def wait_for_cancel(request, poll):
    sender = request.get_response_sender()
    sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([1], dtype=np.int32))]))
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline and not poll():
        time.sleep(0.01)
    seen = poll()
    pb_utils.Logger.log_info(f"cancel_py {request.request_id()} cancelled={seen}")
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            if mode == 0:
                wait_for_cancel(request, request.is_cancelled)
            else:
                sender = request.get_response_sender()
                threading.Thread(target=wait_for_cancel,
                                 args=(request, sender.is_cancelled)).start()
        return None
'''

# Decoupled: execute returns at once; a thread it started makes a BLS call to add_sub_py and
# sends its OUTPUT0 (BLS after execute returned, before the FINAL).
DECOUPLED_BLS = '''
import threading
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().astype(np.float32)
            sender = request.get_response_sender()

            def run(sender=sender, x=x):
                time.sleep(0.2)  # execute has returned by now
                call = pb_utils.InferenceRequest(
                    model_name="add_sub_py", requested_output_names=["OUTPUT0"],
                    inputs=[pb_utils.Tensor("INPUT0", np.full((1, 4), x[0], dtype=np.float32)),
                            pb_utils.Tensor("INPUT1", np.ones((1, 4), dtype=np.float32))])
                result = call.exec()
                if result.has_error():
                    sender.send(pb_utils.InferenceResponse(error=result.error()),
                                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    return
                out = pb_utils.get_output_tensor_by_name(result, "OUTPUT0").as_numpy()
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", out[0, :1].astype(np.int32))]),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            threading.Thread(target=run).start()
        return None
'''


# A non-decoupled model answering through its response sender, as Triton's Python backend allows
# (python_backend response_sender.cc): MODE 0 sends the reply then a flags-only FINAL, 1 sends it
# with FINAL, 2 sends two replies, 3 sends FINAL first, 4 sends a reply and returns one too.
SENDER_ONE = '''
import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def execute(self, requests):
        returned = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
            sender = request.get_response_sender()
            reply = pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", np.array([10 + mode], dtype=np.int32))])
            returned.append(None)
            if mode == 0:
                sender.send(reply)
                sender.send(flags=FINAL)
            elif mode == 1:
                sender.send(reply, flags=FINAL)
            elif mode == 2:
                sender.send(reply)
                sender.send(reply)
            elif mode == 3:
                sender.send(flags=FINAL)
            else:
                sender.send(reply)
                returned[-1] = reply
        return returned
'''

# A non-decoupled model whose reply a thread sends after execute returned None (Triton's QA
# test_non_decoupled_one_response_post_return). MODE 0: the reply, then a flags-only FINAL;
# 1: the reply with FINAL; 2: a BLS call to add_sub_py first, then the reply (20 + the sum of
# OUTPUT0); 3: an ordinary returned reply, the request kept; 4: a send through the kept request's
# sender (its reply was formed in an earlier execution) must raise "closed": OUT 14 when it does;
# 5: execute is a coroutine whose asyncio task sends the reply (15) after it returned (Triton's
# response_sender_async QA model).
SENDER_LATER = '''
import asyncio
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def reply(value):
    return pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([value], dtype=np.int32))])


class TritonPythonModel:
    def initialize(self, args):
        self.kept = None

    def later(self, sender, mode, returned):
        returned.wait()
        time.sleep(0.05)  # most often after execute's return (either way the reply must come)
        if mode == 0:
            sender.send(reply(10))
            sender.send(flags=FINAL)
        elif mode == 1:
            sender.send(reply(11), flags=FINAL)
        else:
            ones = np.ones((1, 4), dtype=np.float32)  # add_sub_py batches: [1, 4]
            answer = pb_utils.InferenceRequest(
                model_name="add_sub_py", requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", ones), pb_utils.Tensor("INPUT1", ones)]).exec()
            if answer.has_error():
                sender.send(pb_utils.InferenceResponse(error=answer.error()), flags=FINAL)
                return
            total = pb_utils.get_output_tensor_by_name(answer, "OUTPUT0").as_numpy().sum()
            sender.send(reply(20 + int(total)), flags=FINAL)

    async def execute_async(self, requests):
        async def later(sender):
            await asyncio.sleep(0.05)
            sender.send(reply(15), flags=FINAL)
        self.tasks = [asyncio.create_task(later(r.get_response_sender())) for r in requests]
        return None

    def execute(self, requests):
        if int(pb_utils.get_input_tensor_by_name(requests[0], "MODE").as_numpy()[0]) == 5:
            return self.execute_async(requests)
        returned = threading.Event()
        answers = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
            if mode == 3:
                self.kept = request
                answers.append(reply(13))
            elif mode == 4:
                try:
                    self.kept.get_response_sender().send(reply(99), flags=FINAL)
                    answers.append(reply(0))
                except pb_utils.TritonModelException as e:
                    closed = "Response sender has been closed" in str(e)
                    answers.append(reply(14 if closed else 0))
            else:
                threading.Thread(target=self.later, daemon=True,
                                 args=(request.get_response_sender(), mode, returned)).start()
                answers.append(None)
        returned.set()
        return None if all(a is None for a in answers) else answers
'''

# A decoupled model that keeps its senders and never sends FINAL (issue 17, "Bad input").
NEVER_FINAL = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.kept = []

    def execute(self, requests):
        for r in requests:  # one response OUT = IN, then the sender is kept: FINAL never comes
            data = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy().copy()
            sender = r.get_response_sender()
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", data)]))
            self.kept.append(sender)
        return None
'''


def write_all(root):
    models = {
        "add_sub_py": (config("add_sub_py", [io("INPUT0", "TYPE_FP32", [4]),
                                             io("INPUT1", "TYPE_FP32", [4])],
                              [io("OUTPUT0", "TYPE_FP32", [4]), io("OUTPUT1", "TYPE_FP32", [4])],
                              max_batch_size=8,
                              extra="dynamic_batching { max_queue_delay_microseconds: 20000 }"),
                       ADD_SUB),
        # add_sub_py behind a long batching delay and a queue policy that honours a request's
        # timeout (BLS timeouts).
        "queued_add_sub_py": (
            config("queued_add_sub_py", [io("INPUT0", "TYPE_FP32", [4]),
                                         io("INPUT1", "TYPE_FP32", [4])],
                   [io("OUTPUT0", "TYPE_FP32", [4]), io("OUTPUT1", "TYPE_FP32", [4])],
                   max_batch_size=8,
                   extra="dynamic_batching { max_queue_delay_microseconds: 300000 "
                         "default_queue_policy { timeout_action: REJECT "
                         "default_timeout_microseconds: 10000000 allow_timeout_override: true } }"),
            ADD_SUB),
        "batch_py": (config("batch_py", [io("X", "TYPE_INT32", [1])],
                            [io("DOUBLE", "TYPE_INT32", [1]), io("COUNT", "TYPE_INT32", [1]),
                             io("META", "TYPE_STRING", [1])], max_batch_size=8,
                            extra="dynamic_batching { max_queue_delay_microseconds: 50000 }"),
                     BATCH),
        "introspect_py": (config("introspect_py", [io("TEXT", "TYPE_STRING", [-1])],
                                 [io("UPPER", "TYPE_STRING", [-1]), io("INFO", "TYPE_STRING", [1])],
                                 extra="instance_group [ { count: 2 kind: KIND_CPU } ]"),
                          INTROSPECT),
        "faulty_py": (config("faulty_py", [io("MODE", "TYPE_INT32", [1])],
                             [io("OUT", "TYPE_INT64", [-1])]), FAULTY),
        "init_raises_py": (config("init_raises_py", [io("X", "TYPE_INT32", [1])],
                                  [io("Y", "TYPE_INT32", [1])]), INIT_RAISES),
        "syntax_error_py": (config("syntax_error_py", [io("X", "TYPE_INT32", [1])],
                                   [io("Y", "TYPE_INT32", [1])]), SYNTAX_ERROR),
        "no_class_py": (config("no_class_py", [io("X", "TYPE_INT32", [1])],
                               [io("Y", "TYPE_INT32", [1])]), NO_CLASS),
        "decoupled_py": (config("decoupled_py", [io("IN", "TYPE_INT32", [1])],
                                [io("OUT", "TYPE_INT32", [1])],
                                extra="model_transaction_policy { decoupled: true }"), DECOUPLED),
        "sender_one_py": (config("sender_one_py", [io("MODE", "TYPE_INT32", [1])],
                                 [io("OUT", "TYPE_INT32", [1])]), SENDER_ONE),
        "sender_later_py": (config("sender_later_py", [io("MODE", "TYPE_INT32", [1])],
                                   [io("OUT", "TYPE_INT32", [1])]), SENDER_LATER),
        "decoupled_bls_py": (config("decoupled_bls_py", [io("IN", "TYPE_INT32", [1])],
                                    [io("OUT", "TYPE_INT32", [1])],
                                    extra="model_transaction_policy { decoupled: true }"),
                             DECOUPLED_BLS),
        "cancel_py": (config("cancel_py", [io("IN", "TYPE_INT32", [1])],
                             [io("OUT", "TYPE_INT32", [1])],
                             extra="model_transaction_policy { decoupled: true }"), CANCELLABLE),
    }
    bare = 'backend: "python"\n'
    models["autocomplete_py"] = (bare, AUTOCOMPLETE)
    models["autocomplete_none_py"] = (bare, AUTOCOMPLETE_NONE)
    models["autocomplete_conflict_py"] = (
        config("autocomplete_conflict_py", [io("X", "TYPE_FP32", [1])],
               [io("Y", "TYPE_FP32", [1])]), AUTOCOMPLETE_CONFLICT)
    models["autocomplete_decoupled_py"] = (
        config("autocomplete_decoupled_py", [io("IN", "TYPE_INT32", [1])],
               [io("OUT", "TYPE_INT32", [1])]), AUTOCOMPLETE_DECOUPLED)
    models["bls_py"] = (config("bls_py", [io("X", "TYPE_FP32", [4]), io("MODEL", "TYPE_STRING", [1])],
                               [io("Y", "TYPE_FP32", [4])]), BLS)
    for name, (cfg, code) in models.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(cfg)
        (root / name / "1" / "model.py").write_text(textwrap.dedent(code))
    # A stub binary in a model folder must never run (REFERENCE-2 §10.3).
    stub = root / "add_sub_py" / "triton_python_backend_stub"
    stub.write_text("#!/bin/sh\ntouch \"$(dirname \"$0\")/stub_ran\"\n")
    stub.chmod(0o755)

# Identity on IN -> OUT whose initialize() waits while "<model folder>/hold" exists, so a test
# can keep a stub restart going for as long as it looks (test_client_python_health.py).
HELD_RESTART = '''
import os
import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        hold = os.path.join(args["model_repository"], "hold")
        while os.path.exists(hold):
            time.sleep(0.02)

    def execute(self, requests):
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())])
            for r in requests]
'''

# pb_utils.MetricFamily (Triton's custom metrics): families made in initialize(), updated per
# request; the request's TEXT input names a check to run and answers what it raised.
CUSTOM_METRICS = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        # A Metric works while its MetricFamily object lives (Triton's rule).
        self.requests_family = pb_utils.MetricFamily(
            name="custom_requests", description="Requests seen by the model",
            kind=pb_utils.MetricFamily.COUNTER)
        self.requests = self.requests_family.Metric(labels={"model": args["model_name"]})
        self.gauge_family = pb_utils.MetricFamily(
            name="custom_last_value", description="The last value seen",
            kind=pb_utils.MetricFamily.GAUGE)
        self.gauge = self.gauge_family.Metric(labels={"kind": "last"})
        self.histogram_family = pb_utils.MetricFamily(
            name="custom_sizes", description="Sizes seen", kind=pb_utils.MetricFamily.HISTOGRAM)
        self.histogram = self.histogram_family.Metric(labels={"unit": "rows"},
                                                      buckets=[0.1, 1.0, 2.5, 5.0, 10.0])

    def check(self, what):
        try:
            if what == "bad_name":
                pb_utils.MetricFamily(name="bad name", description="d",
                                      kind=pb_utils.MetricFamily.COUNTER)
            elif what == "other_kind":
                pb_utils.MetricFamily(name="custom_requests", description="d",
                                      kind=pb_utils.MetricFamily.GAUGE)
            elif what == "negative":
                self.requests.increment(-1)
            elif what == "counter_set":
                self.requests.set(3)
            elif what == "histogram_value":
                self.histogram.value()
            elif what == "missing_buckets":
                self.histogram_family.Metric(labels={})
            elif what == "unsorted_buckets":
                self.histogram_family.Metric(labels={}, buckets=[2.5, 0.1])
            elif what == "unexpected_buckets":
                self.gauge_family.Metric(labels={}, buckets=[1.0])
            elif what == "labels_not_dict":
                self.gauge_family.Metric(labels=["a"])
            elif what == "bad_label":
                self.gauge_family.Metric(labels={"bad-label": "x"})
            elif what == "same_family_again":
                again = pb_utils.MetricFamily(name="custom_requests", description="other",
                                              kind=pb_utils.MetricFamily.COUNTER)
                return "value %g" % again.Metric(labels={"model": "custom_metrics_py"}).value()
            else:
                return "no check"
            return "no error"
        except pb_utils.TritonModelException as e:
            return "TritonModelException: " + str(e)

    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()[0].decode()
            self.requests.increment(1)
            if text.startswith("value="):
                v = float(text[6:])
                self.gauge.set(v)
                self.histogram.observe(v)
                answer = "counter %g gauge %g" % (self.requests.value(), self.gauge.value())
            else:
                answer = self.check(text)
            out = np.array([answer.encode()], dtype=object)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("ANSWER", out)]))
        return responses
'''


def stub_pids(server, model):
    """The pids of the server's stub processes of `model` (children running the stub script)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if ppid == server.proc.pid and b"nereid_python_stub.py" in cmd and model.encode() in cmd:
            out.append(int(entry))
    return sorted(out)
