"""Nereid's Python backend stub: runs one model instance's model.py in its own process.

Started by libnereid_python.so as
`/usr/bin/python3 -s nereid_python_stub.py <fd> <model.py> <shm fd or -1> <idle bell fd>` with the
resources folder (this file's) on sys.path. It talks to the server over the socket `fd` in frames
(nereid_stub_frames.py: their layouts, the socket's readers and writers, the tensor codec). The
server puts the payloads it sends in its shared-memory pool (the memfd `shm fd`): input arrays
are numpy views of it (no copy in this process). What this process sends goes over the socket
from the arrays' own memory, except a BLS input that still is such a view: the BLS frame names
its place in the pool (no copy at all). This file is what the frames mean: requests to
`execute`, responses and decoupled sends, BLS calls and streams, the model's life.
"""

import json
import os
import sys
import threading
import traceback

import nereid_stub_frames as frames
import triton_python_backend_utils as pb_utils
from nereid_stub_frames import (_BLS, _BLS_HEAD, _BLS_NEXT, _BLS_NEXT_HEAD, _ANSWER_HEAD,
                                _EXEC_HEAD, _IN_HEAD, _OUT_HEAD, _REQ_HEAD, _RESP_HEAD, _RESULT,
                                _RESULT_HEAD, _SEND, _SEND_HEAD, _U16, _BLS_ANSWER, Channel,
                                encode_binary_response, encode_placed, server_tensor)

# Frames of this file and of the frame codec are left out of the tracebacks model.py sees.
_OWN_FILES = (__file__, frames.__file__)
_APART = 2  # the offset of a "bls" frame's "apart" byte (bls_frames.h; 0 as encoded)


def error_text(exc):
    """'<Type>: <message>' followed by the last frames, as Triton's stub reports Python errors."""
    text = f"{type(exc).__name__}: {exc}"
    shown = [f for f in traceback.extract_tb(exc.__traceback__)
             if f.filename not in _OWN_FILES and not f.filename.startswith("<frozen")][-3:]
    if shown:
        text += "\n\nAt:\n" + "".join(f"  {f.filename}({f.lineno}): {f.name}\n" for f in shown)
    return text


class Stub:
    def __init__(self, channel, model_file):
        self.channel = channel
        self.model_file = model_file
        self.model = None
        self.instance = ""  # model_instance_name (is_ready texts)
        self.decoupled = False
        self.collected = {}  # request index -> response a non-decoupled model sent
        # Non-decoupled: the server ids [first, end) whose senders may still reply (the execution
        # under way, until its reply is formed); collect_response wakes execute's wait.
        self.collecting = range(0)
        self.replied = threading.Condition(threading.Lock())
        self.rescheduled = []  # (request index, release flags) of the execution that returned
        self.first_request = 0  # the server's id of the current execution's first request
        self.execute_thread = None  # the thread inside execute() (None between executions)
        # "initialize" or "finalize" while that function runs: model control is answered in
        # initialize (as in Triton), BLS in neither (Triton's text).
        self.phase = None
        # Decoupled: ids of the requests still without FINAL, of this execution and earlier ones
        # (the server reads their sends and questions also while the instance is idle).
        self.pending = set()
        self.finals_lock = threading.Lock()
        self.loop = None  # the instance's asyncio event loop (its own thread), made when first used
        self.loop_thread = None  # the loop's thread id
        self.awaited_loop = None  # loop_thread while execute's coroutine runs on it
        self.background = set()  # futures of decoupled coroutines still running (Triton's)
        self.model_name = ""  # initialize() learns them from its args
        self.instance_name = ""
        channel.idle = self.idle

    # Called by pb_utils.
    def log(self, level, message):
        self.channel.write({"op": "log", "level": level, "message": message})

    def bls_frame(self, request, decoupled, tag):
        """The binary "bls" frame of `request` (bls_frames.h): header and payload chunks."""
        accel = frames.accel
        if accel is not None:  # the C part (ADR 0022); None: the code below encodes it
            encoded = accel.encode_bls(request, decoupled, tag, self.channel.pool)
            if encoded is not None:
                return encoded
        correlation = request._correlation_id
        text_id = b""
        if isinstance(correlation, str):
            text_id, correlation = correlation.encode("utf-8"), 0
        name = request._model_name.encode("utf-8")
        request_id = request._id.encode("utf-8")
        parameters = request._parameters.encode("utf-8")
        requested = request._requested
        inputs = request._inputs
        # The traced request, for the server to trace this call as its child; a request from
        # execute() has no _trace, and an id the server does not know simply gives no parent.
        trace = getattr(request, "_trace", None)
        parent = -1 if trace is None else trace._request
        if parent != -1 and (type(parent) is not int or not 0 <= parent < 1 << 63):
            parent = -1
        parts = [_BLS_HEAD.pack(_BLS, decoupled, request._flags, tag, request._model_version,
                                request._timeout, correlation, parent, len(name), len(request_id),
                                len(text_id), len(parameters), len(requested), len(inputs)),
                 name, request_id, text_id, parameters]
        for r in requested:
            r = r.encode("utf-8")
            parts.append(_U16.pack(len(r)))
            parts.append(r)
        chunks = []
        encode_placed(inputs, self.channel.pool, parts, chunks, 0)
        return b"".join(parts), chunks

    def bls(self, request):
        """Runs InferenceRequest.exec(): the server runs the inference; answers a response.
        Any thread may call it outside initialize and finalize (between executions the idle
        bell has the server read it); answers are matched by tag. The server waits for the calls
        of the execution's own thread one at a time and runs those of other threads alongside
        (apart())."""
        tag = next(self.channel.tags)
        header, chunks = self.bls_frame(request, False, tag)
        if self.apart():
            header = header[:_APART] + b"\x01" + header[_APART + 1:]
        self.channel.write(header, chunks)
        return self.bls_response(*self.channel.read(tag))[0]

    def apart(self):
        """Whether a BLS call of this thread asks for its outputs in its own memory (on the
        socket, bls_frames.h' "apart" byte) rather than as views of the pool, which the next
        execution frees: every thread but the execution's (execute's own, and the event loop's
        while it runs execute's coroutine), since nothing tells it when that comes."""
        me = threading.get_ident()
        return me != self.execute_thread and me != self.awaited_loop

    def bls_stream(self, request):
        """exec(decoupled=True): the server starts the call and queues the called model's
        responses; the stream is named by the tag of the "bls" message (nothing answers it)."""
        tag = next(self.channel.tags)
        self.channel.write(*self.bls_frame(request, True, tag))
        return pb_utils.ResponseIterator(tag)

    def bls_next(self, stream):
        """The next response of `stream` and whether it is the last. The server answers when the
        called model sent it, and answers other questions (of this thread between two of them, of
        other threads meanwhile) in between: Channel files the answers by tag."""
        tag = next(self.channel.tags)
        self.channel.write(_BLS_NEXT_HEAD.pack(_BLS_NEXT, tag, stream))
        return self.bls_response(*self.channel.read(tag))

    def bls_cancel(self, stream, drop):
        """ResponseIterator.cancel(): the server cancels the called request (its responses still
        come, as in Triton). `drop` (an iterator dropped before its end): the server discards
        the rest, and nothing is answered, so a garbage-collected iterator never waits."""
        if drop:
            self.channel.note({"op": "bls_cancel", "request": stream, "flags": 1})
        else:
            self.channel.call({"op": "bls_cancel", "request": stream})

    def control(self, header, prefix, chunks=()):
        """is_model_ready / load_model / unload_model: the server's answer (ready), or raises
        TritonModelException with `prefix` and the server's error."""
        msg, _ = self.channel.call(header, chunks)
        if msg.get("error") is not None:
            raise pb_utils.TritonModelException(prefix + msg["error"])
        return bool(msg.get("ready"))

    def bls_response(self, msg, payload):
        """The InferenceResponse of a binary BLS answer (bls_frames.h) and whether it is the
        call's last. Outputs are numpy views of the payload (BYTES excepted); those in the pool
        remember their place there, so that passing them on to another BLS call copies nothing."""
        raw = msg.get("raw")
        if raw is None or raw[0] != _BLS_ANSWER:
            raise pb_utils.TritonModelException("unexpected answer to a BLS request")
        _, final, has_error, code, count, message_size, _, _, _, _ = msg["head"]
        pos = _ANSWER_HEAD.size
        if has_error:
            message = raw[pos:pos + message_size].decode("utf-8", "replace")
            return pb_utils.InferenceResponse._from_server(
                [], pb_utils.TritonError(message, code)), bool(final)
        base = msg["base"]
        accel = frames.accel
        if accel is not None:  # the C part (ADR 0022); None: the code below builds it
            response = accel.make_response(raw, payload, base, count, message_size)
            if response is not None:
                return response, bool(final)
        pos += message_size
        view = memoryview(payload)
        outputs = []
        offset = 0
        for _ in range(count):
            size, code, dims, nbytes = _OUT_HEAD.unpack_from(raw, pos)
            t, pos = server_tensor(raw, pos + _OUT_HEAD.size, size, code, dims, view, offset,
                                   nbytes, base)
            outputs.append(t)
            offset += nbytes
        return pb_utils.InferenceResponse._from_server(outputs), bool(final)

    def is_cancelled(self, index):
        """request.is_cancelled(): asks the server whether the client gave up on the request
        with id `index`."""
        answer, _ = self.channel.call({"op": "is_cancelled", "request": index})
        return bool(answer.get("cancelled"))

    def listening(self):
        """True while the server reads this instance's messages (BLS may be answered): always
        outside initialize and finalize when the stub has its idle bell (the server reads what a
        thread writes while no execution is under way once it rings), else during an execution
        and, for decoupled models, while a request has not sent its FINAL."""
        if self.channel.bell >= 0 and self.phase is None:
            return True
        with self.finals_lock:
            return self.execute_thread is not None or bool(self.pending)

    def idle(self):
        """No execution is under way (Channel.ring)."""
        return self.execute_thread is None

    def send_response(self, index, response, flags):
        if flags & pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            with self.finals_lock:
                self.pending.discard(index)
        chunks = []
        parts = [_SEND_HEAD.pack(_SEND, flags, index)]
        if response is not None:
            encode_binary_response(response, self.channel.pool, parts, chunks, 0)
        else:
            parts.append(_RESP_HEAD.pack(0, 0, 0, 0))
        self.channel.write(b"".join(parts), chunks)

    def load_module(self):
        env = os.environ.get("NEREID_EXECUTION_ENV")
        if env:
            use_execution_env(env)
        sys.path.insert(0, os.path.dirname(self.model_file))
        import importlib.util
        spec = importlib.util.spec_from_file_location("model", self.model_file)
        module = importlib.util.module_from_spec(spec)
        sys.modules["model"] = module
        spec.loader.exec_module(module)
        if not hasattr(module, "TritonPythonModel"):
            raise AttributeError("module 'model' has no attribute 'TritonPythonModel'")
        return module

    def auto_complete(self, msg):
        """Runs TritonPythonModel.auto_complete_config; answers the completed config as JSON."""
        module = self.load_module()
        config = pb_utils.ModelConfig(msg["config"])
        if hasattr(module.TritonPythonModel, "auto_complete_config"):
            config = module.TritonPythonModel.auto_complete_config(config)
        if not isinstance(config, pb_utils.ModelConfig):
            raise pb_utils.TritonModelException(
                f"auto_complete_config function in model '{msg.get('model_name', '')}' must "
                "return a valid pb.ModelConfig object.")
        return json.dumps(config.as_dict())

    def initialize(self, msg):
        args = msg["args"]
        self.model_name = args.get("model_name", "")
        self.instance_name = args.get("model_instance_name", "")
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(
            json.loads(args["model_config"]))
        module = self.load_module()
        self.model = module.TritonPythonModel()
        self.instance = args.get("model_instance_name", "")
        if hasattr(self.model, "initialize"):
            self.model.initialize(args)

    def make_requests(self, msg, payload):
        """The InferenceRequests of a binary execute header (stub_protocol.h), their inputs
        numpy views of `payload`."""
        raw = msg["raw"]
        first = self.first_request = msg["first_request"]
        accel = frames.accel
        if accel is not None:  # the C part (ADR 0022); None: this code builds them
            requests = accel.make_requests(raw, payload, msg["base"], first, msg["count"],
                                           self.model_name)
            if requests is not None:
                return requests
        view = memoryview(payload)
        base = msg["base"]  # the payload's place in the pool (None: not there)
        model_name = self.model_name
        requests = []
        pos = _EXEC_HEAD.size
        for i in range(msg["count"]):
            flags, correlation, corr_size, id_size, params_size, n_requested, n_inputs = \
                _REQ_HEAD.unpack_from(raw, pos)
            pos += _REQ_HEAD.size
            if corr_size:
                correlation = raw[pos:pos + corr_size].decode("utf-8")
                pos += corr_size
            request_id = raw[pos:pos + id_size].decode("utf-8") if id_size else ""
            pos += id_size
            parameters = raw[pos:pos + params_size].decode("utf-8")
            pos += params_size
            requested = []
            for _ in range(n_requested):
                (size,) = _U16.unpack_from(raw, pos)
                requested.append(raw[pos + 2:pos + 2 + size].decode("utf-8"))
                pos += 2 + size
            inputs = []
            for _ in range(n_inputs):
                size, code, dims, offset, nbytes = _IN_HEAD.unpack_from(raw, pos)
                t, pos = server_tensor(raw, pos + _IN_HEAD.size, size, code, dims, view, offset,
                                       nbytes, base)
                inputs.append(t)
            requests.append(pb_utils.InferenceRequest._from_server(
                request_id, correlation, inputs, requested, flags, model_name, parameters,
                first + i))
        return requests

    def collect_response(self, index, response):
        """A non-decoupled model's response sent through its sender (one per request): taken
        while its execution's reply is not yet formed, also from a thread after execute returned
        (Triton's); a sender of an execution whose reply was formed is closed."""
        with self.replied:
            if index not in self.collecting:
                raise pb_utils.TritonModelException(
                    "Unable to send response. Response sender has been closed.")
            self.collected[index - self.collecting.start] = response
            self.replied.notify_all()

    def await_replies(self, requests, result):
        """Execute returned None for requests whose senders the model holds and that have not
        replied yet: waits until each sends its reply (a thread of the model may send after
        execute returned, as Triton's test_non_decoupled_one_response_post_return does). The
        server reads the stub meanwhile (BLS, logs, is_cancelled) and bounds the wait with
        stub-timeout-seconds, as any execute."""
        owed = [i for i, r in enumerate(requests)
                if r._sender is not None and not r._sender._closed and
                not r._release_flags & pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE and
                (result is None or (isinstance(result, list) and i < len(result) and
                                    result[i] is None))]
        if owed:
            with self.replied:
                self.replied.wait_for(lambda: all(i in self.collected for i in owed))

    def check_ready(self):
        """The model's is_ready() (sync or async): "" when it answers True, else why not."""
        try:
            result = self.model.is_ready()
            if hasattr(result, "__await__"):
                result = self.run_coroutine(result)
        except BaseException as e:  # noqa: BLE001 (the version is not ready, with the text)
            return error_text(e)
        if not isinstance(result, bool):
            return "is_ready() must return a boolean value"
        return "" if result else (f"Model '{self.instance}' is not ready (user-defined check "
                                  "failed).")

    def event_loop(self):
        """The instance's event loop, running on its own thread from the first coroutine on (as
        Triton's stub: every coroutine of the instance runs on this one loop)."""
        if self.loop is None:
            import asyncio
            self.loop = asyncio.new_event_loop()
            thread = threading.Thread(target=self.loop.run_forever, name="event-loop", daemon=True)
            thread.start()
            self.loop_thread = thread.ident
        return self.loop

    def run_coroutine(self, awaitable):
        """Runs `awaitable` on the instance's loop and waits for its result."""
        import asyncio
        loop = self.event_loop()
        self.awaited_loop = self.loop_thread  # its BLS calls are the execution's (apart())
        try:
            return asyncio.run_coroutine_threadsafe(_await(awaitable), loop).result()
        finally:
            self.awaited_loop = None

    def run_in_background(self, awaitable, requests, inst):
        """A decoupled model's `async def execute`: runs on the instance's loop while the instance
        takes the next execution (Triton >= 24.04). If it raises, the error is logged and the
        requests without their FINAL get it as an error response (FINAL)."""
        import asyncio
        future = asyncio.run_coroutine_threadsafe(_await(awaitable), self.event_loop())
        with self.finals_lock:
            self.background.add(future)
        future.add_done_callback(lambda f: self.background_done(f, requests, inst))

    def background_done(self, future, requests, inst):
        with self.finals_lock:
            self.background.discard(future)
        if future.cancelled() or future.exception() is None:
            return
        text = background_error(inst, future.exception())
        try:
            self.log(pb_utils.Logger.ERROR, text)
            with self.finals_lock:
                owed = [r._index for r in requests if r._index in self.pending]
            for index in owed:
                self.send_response(index, pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(text)),
                    pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except OSError:  # the server went away
            pass

    def execute(self, msg, payload):
        requests = self.make_requests(msg, payload)
        self.rescheduled = []
        if self.decoupled:
            with self.finals_lock:
                self.pending.update(r._index for r in requests)
        else:  # in this order: a stale sender sees a range without its id either way
            self.collected = {}
            self.collecting = range(self.first_request, self.first_request + len(requests))
        try:
            result = self.model.execute(requests)
            if hasattr(result, "__await__"):
                if self.decoupled:
                    self.run_in_background(result, requests, self.instance_name)
                    return {"op": "done"}, []
                result = self.run_coroutine(result)
            if not self.decoupled and (result is None or (type(result) is list and
                                                          _holds_none(result))):
                self.await_replies(requests, result)
        finally:
            if not self.decoupled:  # the reply is formed below: later sends are refused
                with self.replied:
                    self.collecting = range(0)
                for r in requests:
                    if r._sender is not None:
                        r._sender._closed = True
        header, chunks = self.encode_result(msg, requests, result)
        if not (isinstance(header, dict) and header.get("op") == "error"):
            self.take_rescheduled(requests)
        return header, chunks

    def take_rescheduled(self, requests):
        """The requests execute released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE: the server
        runs them again in a later execution with new request objects, so a decoupled one's sender
        here is closed and the request is no longer owed a FINAL by this execution."""
        for r in requests:
            if r._release_flags & pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                self.rescheduled.append((r._index, r._release_flags))
                if self.decoupled:
                    with self.finals_lock:
                        self.pending.discard(r._index)
                    if r._sender is not None:
                        r._sender._closed = True

    def encode_result(self, msg, requests, result):
        """The frame answering execute's `result` for `requests`: header and payload chunks."""
        inst = self.instance_name
        if self.decoupled:
            if result is not None:
                return {"op": "error", "message": f"Python model '{inst}' is using the decoupled "
                        "mode and the execute function must return None."}, []
            return {"op": "done"}, []
        if result is None and self.collected:  # every reply went through the senders
            result = [None] * len(requests)
        if isinstance(result, list) and self.collected:
            result = list(result)
            for i, response in self.collected.items():
                if i < len(result) and result[i] is not None:
                    return {"op": "error", "message": "Unable to send response. Non-decoupled "
                            "model cannot send more than one response."}, []
                if i < len(result):
                    result[i] = response
        if not isinstance(result, list):
            return {"op": "error", "message": "Expected a list in the execute return, found type "
                    f"'{type(result).__name__}'."}, []
        if len(result) != len(requests):
            return {"op": "error", "message": "Number of InferenceResponse objects do not match "
                    "the number of InferenceRequest objects. InferenceRequest(s) size is:"
                    f"{len(requests)}, and InferenceResponse(s) size is:{len(result)}\n"}, []
        pool = self.channel.pool
        accel = frames.accel
        if accel is not None:  # the C part (ADR 0022); None: the loop below encodes it
            encoded = accel.encode_responses(requests, result, pool)
            if encoded is not None:
                return encoded
        parts = [_RESULT_HEAD.pack(_RESULT, len(result))]
        chunks = []
        offset = 0
        for request, response in zip(requests, result):
            if request._release_flags & pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                if response is not None:  # Triton's text (and typo)
                    return {"op": "error", "message": "Expected a None object in the execute "
                            "function return list for reschduled request, found type "
                            f"'{type(response).__name__}'."}, []
                parts.append(_RESP_HEAD.pack(0, 0, 0, 0))  # no outputs: the server skips it
                continue
            if not isinstance(response, pb_utils.InferenceResponse):
                return {"op": "error", "message": "Expected an 'InferenceResponse' object in the "
                        "execute function return list, found type "
                        f"'{type(response).__name__}'."}, []
            offset = encode_binary_response(response, pool, parts, chunks, offset)
        return b"".join(parts), chunks

    def serve(self):
        while True:
            try:
                msg, payload = self.channel.read()
            except EOFError:
                return
            op = msg.get("op")
            if op == "init":
                try:
                    self.phase = "initialize"
                    self.initialize(msg)
                    self.phase = None
                    self.channel.write({"op": "ok", "is_ready": hasattr(self.model, "is_ready")})
                except BaseException as e:  # noqa: BLE001 (the load fails with the text)
                    self.phase = None
                    self.channel.write({"op": "error", "message": load_error_text(e)})
            elif op == "auto_complete":
                try:
                    self.channel.write({"op": "config", "config": self.auto_complete(msg)})
                except BaseException as e:  # noqa: BLE001 (the load fails with the text)
                    self.channel.write({"op": "error", "message": load_error_text(e)})
                return
            elif op == "execute":
                try:
                    self.execute_thread = threading.get_ident()
                    header, chunks = self.execute(msg, payload)
                except BaseException as e:  # noqa: BLE001 (the batch fails with the text)
                    header, chunks = {"op": "error", "message": error_text(e),
                                      "exception": True}, []
                if isinstance(header, dict) and header.get("op") == "error" and \
                        self.decoupled:  # the server fails them
                    first, n = msg["first_request"], msg["count"]
                    with self.finals_lock:
                        self.pending.difference_update(range(first, first + n))
                self.execute_thread = None
                if not (isinstance(header, dict) and header.get("op") == "error"):
                    for index, flags in self.rescheduled:  # before the answer that ends execute
                        self.channel.write({"op": "release", "request": index, "flags": flags})
                self.rescheduled = []
                self.channel.write(header, chunks)
            elif op == "is_ready":
                self.channel.write({"op": "ready", "message": self.check_ready()})
            elif op == "finalize":
                try:
                    self.phase = "finalize"
                    if self.model is not None and hasattr(self.model, "finalize"):
                        self.model.finalize()
                finally:
                    if self.loop is not None:
                        self.loop.call_soon_threadsafe(self.loop.stop)
                    self.channel.write({"op": "ok"})
                return


def _holds_none(items):
    """Whether a list has a None (by identity: `None in items` would compare a model's wrong
    return values, numpy arrays among them, with ==)."""
    for item in items:
        if item is None:
            return True
    return False


async def _await(coro):
    return await coro


class ExecutionEnvError(Exception):
    """An EXECUTION_ENV_PATH this stub cannot use; its text is the load error as it is."""


def load_error_text(exc):
    return str(exc) if isinstance(exc, ExecutionEnvError) else error_text(exc)


def env_python_version(env):
    """"3.Y" of the environment: pyvenv.cfg's version (a venv), else its lib/python3.Y folder
    (a conda env); None when neither says."""
    try:
        with open(os.path.join(env, "pyvenv.cfg")) as f:
            for line in f:
                key, _, value = line.partition("=")
                if key.strip() in ("version", "version_info"):
                    return ".".join(value.strip().split(".")[:2])
    except OSError:
        pass
    import glob
    found = sorted(os.path.basename(d)[len("python"):]
                   for d in glob.glob(os.path.join(env, "lib", "python3.*")))
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    return ours if ours in found else (found[0] if found else None)


def use_execution_env(env):
    """EXECUTION_ENV_PATH: this process stays Debian's python3 (the environment's own python and
    its activate script never run); the environment's site-packages (and its .pth files) go first
    on sys.path, after the stub's own folder. Its Python version must be this one's."""
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    version = env_python_version(env)
    if version is not None and version != ours:
        raise ExecutionEnvError(
            f"EXECUTION_ENV_PATH '{env}' is an environment of Python {version}, but the Python "
            f"backend stub runs Python {ours} (Debian's python3): the environment must be made "
            "with the same Python version")
    site_dir = os.path.join(env, "lib", f"python{ours}", "site-packages")
    if not os.path.isdir(site_dir):
        raise ExecutionEnvError(f"EXECUTION_ENV_PATH '{env}' has no lib/python{ours}/site-packages")
    import site
    before = list(sys.path)
    site.addsitedir(site_dir)
    added = [p for p in sys.path if p not in before]
    sys.path[:] = before[:1] + added + before[1:]


def background_error(inst, exc):
    """The text of an exception a decoupled model's background coroutine raised: as an exception in
    `execute` (the stub renders it the same way; Triton logs the traceback)."""
    return f"Failed to process the request(s) for model '{inst}', message: {error_text(exc)}"


def main():
    fd = int(sys.argv[1])
    channel = Channel(fd, int(sys.argv[3]) if len(sys.argv) > 3 else -1,
                      int(sys.argv[4]) if len(sys.argv) > 4 else -1)
    stub = Stub(channel, sys.argv[2])
    pb_utils._stub = stub
    stub.serve()


if __name__ == "__main__":
    main()
