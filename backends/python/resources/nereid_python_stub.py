"""Nereid's Python backend stub: runs one model instance's model.py in its own process.

Started by libnereid_python.so as
`/usr/bin/python3 -s nereid_python_stub.py <fd> <model.py> <shm fd or -1>` with the resources
folder (this file's) on sys.path. It talks to the server over the socket `fd` in frames: a 12-byte
little-endian header (u32 JSON size, u64 payload size), a JSON header, then the payload (tensor
bytes, concatenated; each tensor names its offset and size in the JSON). The server puts the
payloads it sends in its shared-memory pool (the memfd `shm fd`) instead: the JSON's "shm" is
[offset, size, pool size] of the block and input arrays are numpy views of it (no copy in this
process). What this process sends goes over the socket from the arrays' own memory.
"""

import json
import mmap
import os
import socket
import struct
import sys
import threading
import traceback

import numpy as np

import triton_python_backend_utils as pb_utils

_HEADER = struct.Struct("<IQ")


class Pool:
    """The server's shared-memory pool (a memfd), mapped again when the server grew it. An older
    mapping stays alive while arrays still view it."""

    def __init__(self, fd):
        self.fd = fd
        self.view = memoryview(b"")

    def block(self, offset, size, pool_size):
        if len(self.view) < pool_size:
            self.view = memoryview(mmap.mmap(self.fd, pool_size))
        return self.view[offset:offset + size]


class Channel:
    def __init__(self, fd, shm_fd=-1):
        self.pool = Pool(shm_fd) if shm_fd >= 0 else None
        self.sock = socket.socket(fileno=fd)
        self.write_lock = threading.Lock()
        self.buf = bytearray(1 << 16)
        self.start = self.end = 0
        self.read_cond = threading.Condition()
        self.reading = False  # a thread is reading the socket (read())
        self.untagged = []    # frames read for the thread that waits for untagged ones
        self.answers = {}     # tag -> frames (a decoupled BLS call gets several)
        self.dropped = set()  # tags of BLS streams abandoned before their final frame
        self.next_tag = 0

    def fill(self):
        """Reads what the socket has (at least one byte) into the buffer."""
        if self.start == self.end:
            self.start = self.end = 0
        elif len(self.buf) - self.end < 4096:
            self.buf[:self.end - self.start] = self.buf[self.start:self.end]
            self.end -= self.start
            self.start = 0
        k = self.sock.recv_into(memoryview(self.buf)[self.end:])
        if k == 0:
            raise EOFError
        self.end += k

    def read_exact(self, n):
        """n bytes as a new bytearray: buffered bytes first, then straight from the socket."""
        out = bytearray(n)
        have = min(n, self.end - self.start)
        out[:have] = self.buf[self.start:self.start + have]
        self.start += have
        view = memoryview(out)
        while have < n:
            if n - have < len(self.buf) // 2:
                self.fill()
                k = min(n - have, self.end - self.start)
                view[have:have + k] = self.buf[self.start:self.start + k]
                self.start += k
                have += k
                continue
            k = self.sock.recv_into(view[have:], n - have)
            if k == 0:
                raise EOFError
            have += k
        return out

    def read_frame(self):
        while self.end - self.start < _HEADER.size:
            self.fill()
        json_size, payload_size = _HEADER.unpack_from(self.buf, self.start)
        self.start += _HEADER.size
        header = json.loads(self.read_exact(json_size))
        payload = self.read_exact(payload_size) if payload_size else bytearray()
        shm = header.get("shm")
        if shm is not None:
            payload = self.pool.block(*shm)
        return header, payload

    def read(self, tag=None):
        """The next frame without a "tag" (tag None), or the answer carrying `tag`.

        Several threads may wait at once (the serve loop, execute, threads model.py started): one
        of them reads the socket at a time and files answers meant for others by their tag."""
        while True:
            with self.read_cond:
                while True:
                    if tag is None and self.untagged:
                        return self.untagged.pop(0)
                    if tag is not None and self.answers.get(tag):
                        frames = self.answers[tag]
                        if len(frames) == 1:
                            del self.answers[tag]
                        return frames.pop(0)
                    if not self.reading:
                        break
                    self.read_cond.wait()
                self.reading = True
            frame = None
            try:
                frame = self.read_frame()
            finally:
                with self.read_cond:
                    self.reading = False
                    if frame is not None:
                        got = frame[0].get("tag")
                        if got in self.dropped:  # a response of an abandoned BLS stream
                            if frame[0].get("final", True):
                                self.dropped.discard(got)
                        elif got is not None:
                            self.answers.setdefault(got, []).append(frame)
                        else:
                            self.untagged.append(frame)
                    self.read_cond.notify_all()

    def call(self, header, chunks=()):
        """Writes `header` (and `chunks`) with a new tag; returns the answer with that tag."""
        return self.read(self.ask(header, chunks))

    def ask(self, header, chunks=()):
        """Writes `header` (and `chunks`) with a new tag; returns the tag (read(tag) answers)."""
        with self.read_cond:
            self.next_tag += 1
            tag = self.next_tag
        self.write(dict(header, tag=tag), chunks)
        return tag

    def drop(self, tag):
        """Discards the frames of stream `tag`, those filed and those still to come."""
        with self.read_cond:
            frames = self.answers.pop(tag, [])
            if not any(f[0].get("final", True) for f in frames):
                self.dropped.add(tag)

    def write(self, header, chunks=()):
        body = json.dumps(header).encode("utf-8")
        size = sum(len(c) for c in chunks)
        first = _HEADER.pack(len(body), size) + body
        with self.write_lock:
            if size < 65536:  # one write for small frames
                self.sock.sendall(b"".join([first, *chunks]))
                return
            self.sock.sendall(first)
            for c in chunks:
                if len(c):
                    self.sock.sendall(c)


def error_text(exc):
    """'<Type>: <message>' followed by the last frames, as Triton's stub reports Python errors."""
    text = f"{type(exc).__name__}: {exc}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename != __file__ and not f.filename.startswith("<frozen")][-3:]
    if frames:
        text += "\n\nAt:\n" + "".join(f"  {f.filename}({f.lineno}): {f.name}\n" for f in frames)
    return text


def to_array(desc, payload):
    data = memoryview(payload)[desc["offset"]:desc["offset"] + desc["size"]]
    dtype = desc["datatype"]
    shape = desc["shape"]
    if dtype == "BYTES":
        return pb_utils.deserialize_bytes_tensor(data).reshape(shape)
    np_type = pb_utils.triton_string_to_numpy(dtype)
    return np.frombuffer(data, dtype=np_type).reshape(shape)


def tensor_bytes(array):
    """The wire datatype and the bytes of `array`: from 64 KiB, a view of its own memory when it
    is contiguous (the socket write is then the only copy in this process); below, `tobytes()`,
    which costs less than building the view."""
    if array.dtype == np.object_ or array.dtype.kind == "S":
        return "BYTES", pb_utils.serialize_byte_tensor(array).tobytes()
    name = pb_utils._wire_name(array.dtype)
    if name is None:
        raise pb_utils.TritonModelException("NumPy dtype is not supported.")
    if array.nbytes < 65536:
        return name, array.tobytes()
    return name, memoryview(np.ascontiguousarray(array).reshape(-1)).cast("B")


def encode_tensors(tensors, chunks, offset):
    """Descriptors of `tensors` for a frame; their bytes are appended to `chunks`."""
    descs = []
    for t in tensors:
        dtype, data = tensor_bytes(t.as_numpy())
        descs.append({"name": t.name(), "datatype": dtype, "shape": list(t.as_numpy().shape),
                      "offset": offset, "size": len(data)})
        chunks.append(data)
        offset += len(data)
    return descs, offset


def encode_outputs(response, chunks, offset):
    return encode_tensors(response.output_tensors(), chunks, offset)


def encode_error(error):
    return {"message": error.message(), "code": error.code()}


class Stub:
    def __init__(self, channel, model_file):
        self.channel = channel
        self.model_file = model_file
        self.model = None
        self.decoupled = False
        self.collected = {}  # request index -> response a non-decoupled model sent
        self.first_request = 0  # the server's id of the current execution's first request
        self.execute_thread = None  # the thread inside execute() (None between executions)
        # Decoupled: ids of the requests still without FINAL, of this execution and earlier ones
        # (the server reads their sends and questions also while the instance is idle).
        self.pending = set()
        self.finals_lock = threading.Lock()

    # Called by pb_utils.
    def log(self, level, message):
        self.channel.write({"op": "log", "level": level, "message": message})

    def bls_header(self, request, decoupled):
        chunks = []
        inputs, _ = encode_tensors(request.inputs(), chunks, 0)
        header = {"op": "bls", "model_name": request._model_name,
                  "model_version": request._model_version, "request_id": request.request_id(),
                  "timeout": request.timeout(), "correlation_id": request.correlation_id(),
                  "flags": request.flags(), "parameters": json.loads(request.parameters()),
                  "decoupled": decoupled,
                  "requested": list(request.requested_output_names()), "inputs": inputs}
        return header, chunks

    def bls(self, request):
        """Runs InferenceRequest.exec(): the server runs the inference; answers a response.
        Any thread may call it while the server listens to this instance (during execute, and
        for decoupled models while a request has not sent its FINAL); calls are answered one at
        a time, matched by tag."""
        msg, payload = self.channel.call(*self.bls_header(request, False))
        return self.bls_response(msg, payload)

    def bls_stream(self, request):
        """exec(decoupled=True): the server streams the called model's responses, tagged."""
        return pb_utils.ResponseIterator(self.channel.ask(*self.bls_header(request, True)))

    def bls_next(self, tag):
        """The next response of stream `tag` and whether it is the last."""
        msg, payload = self.channel.read(tag)
        return self.bls_response(msg, payload), bool(msg.get("final", True))

    def bls_drop(self, tag):
        self.channel.drop(tag)

    def control(self, header, prefix, chunks=()):
        """is_model_ready / load_model / unload_model: the server's answer (ready), or raises
        TritonModelException with `prefix` and the server's error."""
        msg, _ = self.channel.call(header, chunks)
        if msg.get("error") is not None:
            raise pb_utils.TritonModelException(prefix + msg["error"])
        return bool(msg.get("ready"))

    def bls_response(self, msg, payload):
        if msg.get("op") != "bls_result":
            raise pb_utils.TritonModelException("unexpected answer to a BLS request")
        if msg.get("error"):
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(
                msg["error"]["message"], msg["error"].get("code", 1)))
        return pb_utils.InferenceResponse([pb_utils.Tensor(d["name"], to_array(d, payload))
                                           for d in msg.get("outputs", [])])

    def is_cancelled(self, index):
        """request.is_cancelled(): asks the server whether the client gave up on the request
        with id `index`."""
        answer, _ = self.channel.call({"op": "is_cancelled", "request": index})
        return bool(answer.get("cancelled"))

    def listening(self):
        """True while the server reads this instance's messages (BLS may be answered)."""
        with self.finals_lock:
            return self.execute_thread is not None or bool(self.pending)

    def send_response(self, index, response, flags):
        if flags & pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            with self.finals_lock:
                self.pending.discard(index)
        chunks = []
        header = {"op": "send", "request": index, "flags": flags}
        if response is not None:
            if response.has_error():
                header["error"] = encode_error(response.error())
            else:
                header["outputs"], _ = encode_outputs(response, chunks, 0)
        self.channel.write(header, chunks)

    def load_module(self):
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
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(
            json.loads(args["model_config"]))
        module = self.load_module()
        self.model = module.TritonPythonModel()
        if hasattr(self.model, "initialize"):
            self.model.initialize(args)

    def make_requests(self, msg, payload):
        requests = []
        self.first_request = msg.get("first_request", 0)
        for i, r in enumerate(msg["requests"]):
            inputs = [pb_utils.Tensor(d["name"], to_array(d, payload)) for d in r["inputs"]]
            req = pb_utils.InferenceRequest(
                request_id=r.get("id", ""), correlation_id=r.get("correlation_id", 0),
                inputs=inputs, requested_output_names=r.get("requested", []),
                flags=r.get("flags", 0), model_name=msg.get("model_name", ""))
            req._parameters = r.get("parameters", "{}")
            req._index = self.first_request + i  # the server's id of the request
            requests.append(req)
        return requests

    def collect_response(self, index, response):
        """A non-decoupled model's response sent through its sender (one per request)."""
        self.collected[index - self.first_request] = response

    def execute(self, msg, payload):
        requests = self.make_requests(msg, payload)
        self.collected = {}
        if self.decoupled:
            with self.finals_lock:
                self.pending.update(r._index for r in requests)
        try:
            result = self.model.execute(requests)
            if hasattr(result, "__await__"):
                import asyncio
                result = asyncio.run(_await(result))
        finally:
            if not self.decoupled:  # the reply is formed below: later sends are refused
                for r in requests:
                    if r._sender is not None:
                        r._sender._closed = True
        inst = msg.get("instance", "")
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
        responses = []
        chunks = []
        offset = 0
        for response in result:
            if not isinstance(response, pb_utils.InferenceResponse):
                return {"op": "error", "message": "Expected an 'InferenceResponse' object in the "
                        "execute function return list, found type "
                        f"'{type(response).__name__}'."}, []
            if response.has_error():
                responses.append({"error": encode_error(response.error())})
                continue
            outputs, offset = encode_outputs(response, chunks, offset)
            responses.append({"outputs": outputs})
        return {"op": "result", "responses": responses}, chunks

    def serve(self):
        while True:
            try:
                msg, payload = self.channel.read()
            except EOFError:
                return
            op = msg.get("op")
            if op == "init":
                try:
                    self.initialize(msg)
                    self.channel.write({"op": "ok"})
                except BaseException as e:  # noqa: BLE001 (the load fails with the text)
                    self.channel.write({"op": "error", "message": error_text(e)})
            elif op == "auto_complete":
                try:
                    self.channel.write({"op": "config", "config": self.auto_complete(msg)})
                except BaseException as e:  # noqa: BLE001 (the load fails with the text)
                    self.channel.write({"op": "error", "message": error_text(e)})
                return
            elif op == "execute":
                try:
                    self.execute_thread = threading.get_ident()
                    header, chunks = self.execute(msg, payload)
                except BaseException as e:  # noqa: BLE001 (the batch fails with the text)
                    header, chunks = {"op": "error", "message": error_text(e),
                                      "exception": True}, []
                if header.get("op") == "error" and self.decoupled:  # the server fails them
                    first, n = msg.get("first_request", 0), len(msg.get("requests", []))
                    with self.finals_lock:
                        self.pending.difference_update(range(first, first + n))
                self.execute_thread = None
                self.channel.write(header, chunks)
            elif op == "finalize":
                try:
                    if self.model is not None and hasattr(self.model, "finalize"):
                        self.model.finalize()
                finally:
                    self.channel.write({"op": "ok"})
                return


async def _await(coro):
    return await coro


def main():
    fd = int(sys.argv[1])
    channel = Channel(fd, int(sys.argv[3]) if len(sys.argv) > 3 else -1)
    stub = Stub(channel, sys.argv[2])
    pb_utils._stub = stub
    stub.serve()


if __name__ == "__main__":
    main()
