"""Nereid's Python backend stub: runs one model instance's model.py in its own process.

Started by libnereid_python.so as
`/usr/bin/python3 -s nereid_python_stub.py <fd> <model.py> <shm fd or -1>` with the resources
folder (this file's) on sys.path. It talks to the server over the socket `fd` in frames: a 12-byte
little-endian header (u32 header size, u64 payload size), a header, then the payload (tensor
bytes, concatenated; each tensor names its offset and size in the header). The header is JSON,
except for the frames of every request: execute, result and a decoupled send have the binary
headers backends/python/stub_protocol.h lays out (no JSON per request), and so do a BLS call,
its answers and a BLS stream's "next" (backends/python/bls_frames.h). The server puts the payloads
it sends in its shared-memory pool (the memfd `shm fd`) instead: the binary header's slot is
[offset, size, pool size] of the block and input arrays are numpy views of it (no copy in this
process). What this process sends goes over the socket from the arrays' own memory, except a BLS
input that still is such a view: the BLS frame names its place in the pool (no copy at all).
"""

import itertools
import json
import mmap
import os
import socket
import struct
import sys
import threading
import time
import traceback

import numpy as np

import triton_python_backend_utils as pb_utils

_HEADER = struct.Struct("<IQ")
# Binary headers (stub_protocol.h).
_EXECUTE = 1
_RESULT = 2
_SEND = 3
_EXEC_HEAD = struct.Struct("<B7xQQQqI")  # kind, shm offset, size, pool size, first id, count
_REQ_HEAD = struct.Struct("<IQIIIHH")  # flags, correlation id, sizes, output and input counts
_IN_HEAD = struct.Struct("<HBBQQ")  # name size, DataType, dims, offset, size
_U16 = struct.Struct("<H")
_RESULT_HEAD = struct.Struct("<B3xI")  # kind, response count
_SEND_HEAD = struct.Struct("<B3xIq")  # kind, flags, request id
_RESP_HEAD = struct.Struct("<BBHI")  # has error, code, output count, message size
_OUT_HEAD = struct.Struct("<HBBQ")  # a BLS answer's output: name size, DataType, dims, size
_BLS = 4
_BLS_ANSWER = 5
_BLS_NEXT = 6
# kind, decoupled, flags, tag, model version, timeout, correlation id, the sizes of the model
# name, request id, string correlation id and parameters, requested output and input counts
_BLS_HEAD = struct.Struct("<BB2xIqqQQIIIIHH")
# A placed tensor (BLS inputs, outputs): name size, DataType, dims, place (1: pool), offset, size
_PLACED = struct.Struct("<HBBBQQ")
_BLS_NEXT_HEAD = struct.Struct("<B7xqq")  # kind, tag, stream
# kind, final, has error, code, output count, message size, tag, shm offset, size, pool size
_ANSWER_HEAD = struct.Struct("<BBBBIIqQQQ")
# The doorbell (backends/python/spin_wait.h, ADR 0020): with NEREID_PYTHON_SPIN_US set (the
# server checked it: 0 to 1000), a wait for the server's next frame first polls the socket without
# sleeping for that long, when this process may run on several CPUs (the server, on another one,
# is then seen without a sleep and a cross-CPU wake-up). After a spin that saw nothing, 1, 2, 4 ...
# up to 64 waits block at once.
_MAX_BACKOFF = 64


def spin_ns():
    """The doorbell's spin in ns (0: off)."""
    us = os.environ.get("NEREID_PYTHON_SPIN_US", "0")
    if not us.isdigit() or len(os.sched_getaffinity(0)) < 2:
        return 0
    return min(int(us), 1000) * 1000
_DIMS = [struct.Struct(f"<{n}q") for n in range(65)]  # numpy arrays have at most 64 dims
# DataType numbers (include/nereid/data_type.h, Triton's) and wire names to numpy dtypes.
_TYPE_NAMES = [None, "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32",
               "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"]
_TYPE_CODES = {name: code for code, name in enumerate(_TYPE_NAMES) if name}
_NUMPY_TYPES = [None if name in (None, "BYTES") else
                np.dtype(pb_utils.triton_string_to_numpy(name)) for name in _TYPE_NAMES]


class Pool:
    """The server's shared-memory pool (a memfd), mapped again when the server grew it. An older
    mapping stays alive while arrays still view it."""

    def __init__(self, fd):
        self.fd = fd
        self.view = memoryview(b"")
        self.base = 0  # the address of the current mapping

    def block(self, offset, size, pool_size):
        if len(self.view) < pool_size:
            mapping = mmap.mmap(self.fd, pool_size)
            self.view = memoryview(mapping)
            self.base = np.frombuffer(mapping, dtype=np.uint8).ctypes.data
        return self.view[offset:offset + size]

    def place(self, array):
        """The pool offset of the (contiguous) `array`'s bytes when they lie in the current
        mapping (a view model.py made of a tensor the server sent), else None."""
        offset = array.__array_interface__["data"][0] - self.base
        if self.base and 0 <= offset and offset + array.nbytes <= len(self.view):
            return offset
        return None


class Channel:
    def __init__(self, fd, shm_fd=-1):
        self.pool = Pool(shm_fd) if shm_fd >= 0 else None
        self.sock = socket.socket(fileno=fd)
        self.write_lock = threading.Lock()
        self.buf = bytearray(1 << 16)
        self.start = self.end = 0
        # One reader at a time (read()); `with self.read_lock` is C code, unlike a Condition's.
        self.read_lock = threading.Lock()
        self.read_cond = threading.Condition(self.read_lock)
        self.reading = False  # a thread is reading the socket (read())
        self.waiting = 0  # threads waiting in read() for the reader (under read_cond)
        self.untagged = []    # frames read for the thread that waits for untagged ones
        self.answers = {}     # tag -> frame
        self.tags = itertools.count(1)  # next() is atomic under the GIL
        self.notes = []  # frames of finalizers waiting for the write lock (note())
        self.spin_ns = spin_ns()
        self.skip = 0  # waits left without a spin
        self.backoff = 0  # the length of the last back-off

    def fill(self):
        """Reads what the socket has (at least one byte) into the buffer."""
        if self.start == self.end:
            self.start = self.end = 0
        elif len(self.buf) - self.end < 4096:
            self.buf[:self.end - self.start] = self.buf[self.start:self.end]
            self.end -= self.start
            self.start = 0
        view = memoryview(self.buf)[self.end:]
        k = self.spin_recv(view) if self.spin_ns else None
        if k is None:
            k = self.sock.recv_into(view)
        if k == 0:
            raise EOFError
        self.end += k

    def spin_recv(self, view):
        """recv_into(view) without sleeping for up to _SPIN_NS (the doorbell): what it read
        (0: end of file), or None when nothing came (the caller blocks)."""
        if self.skip:
            self.skip -= 1
            return None
        recv_into = self.sock.recv_into
        clock = time.perf_counter_ns
        until = clock() + self.spin_ns
        while True:
            try:
                k = recv_into(view, 0, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                if clock() >= until:
                    self.backoff = min(_MAX_BACKOFF, 2 * self.backoff or 1)
                    self.skip = self.backoff
                    return None
                continue
            self.backoff = 0
            return k

    def read_exact(self, n):
        """n bytes as a new bytearray: buffered bytes first, then straight from the socket."""
        if n <= self.end - self.start:  # all buffered (a small frame): one slice
            out = self.buf[self.start:self.start + n]
            self.start += n
            return out
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
        raw = self.read_exact(json_size)
        payload = self.read_exact(payload_size) if payload_size else bytearray()
        kind = raw[0] if raw else 0
        if kind == _BLS_ANSWER:  # binary: Stub.bls_response reads the rest
            head = _ANSWER_HEAD.unpack_from(raw)
            base = None  # where the payload is in the pool
            if head[9]:
                base = head[7]
                payload = self.pool.block(base, head[8], head[9])
            return {"tag": head[6], "head": head, "raw": raw, "base": base}, payload
        if kind == _EXECUTE:  # binary: Stub.make_requests reads the rest
            _, offset, size, pool_size, first, count = _EXEC_HEAD.unpack_from(raw)
            base = None
            if pool_size:
                base = offset
                payload = self.pool.block(offset, size, pool_size)
            return {"op": "execute", "raw": raw, "first_request": first, "count": count,
                    "base": base}, payload
        return json.loads(raw), payload

    def read(self, tag=None):
        """The next frame without a "tag" (tag None), or the answer carrying `tag`.

        Several threads may wait at once (the serve loop, execute, threads model.py started): one
        of them reads the socket at a time and files answers meant for others by their tag."""
        while True:
            with self.read_lock:
                while True:
                    if tag is None and self.untagged:
                        return self.untagged.pop(0)
                    if tag is not None and tag in self.answers:
                        return self.answers.pop(tag)
                    if not self.reading:
                        break
                    self.waiting += 1
                    try:
                        self.read_cond.wait()
                    finally:
                        self.waiting -= 1
                self.reading = True
            frame = None
            mine = False
            try:
                frame = self.read_frame()
            finally:
                with self.read_lock:
                    self.reading = False
                    if frame is not None:
                        mine = self.file(frame, tag)
                    if self.waiting:  # notify_all is Python code: not for nobody
                        self.read_cond.notify_all()
            if mine:
                return frame

    def file(self, frame, tag):
        """True when `frame` is the one the reader waits for (`tag`); else files it for the
        thread that waits for it (under read_cond). Nothing is filed for that reader while it
        reads, so the frame it read is its next one."""
        got = frame[0].get("tag")
        if got == tag:
            return True
        if got is not None:
            self.answers[got] = frame  # one answer per tag (a stream's come one per "bls_next")
        else:
            self.untagged.append(frame)
        return False

    def call(self, header, chunks=()):
        """Writes `header` (and `chunks`) with a new tag; returns the answer with that tag."""
        return self.read(self.ask(header, chunks))

    def ask(self, header, chunks=()):
        """Writes `header` (and `chunks`) with a new tag; returns the tag (read(tag) answers)."""
        tag = next(self.tags)
        self.write(dict(header, tag=tag), chunks)
        return tag

    def write(self, header, chunks=()):
        """`header`: a dict (sent as JSON) or an encoded binary header."""
        body = header if isinstance(header, bytes) else json.dumps(header).encode("utf-8")
        size = sum(map(len, chunks)) if chunks else 0
        with self.write_lock:
            if size < 65536:  # one write for small frames
                self.sock.sendall(b"".join([_HEADER.pack(len(body), size), body, *chunks]))
            else:
                self.sock.sendall(_HEADER.pack(len(body), size) + body)
                for c in chunks:
                    if len(c):
                        self.sock.sendall(c)
        self.flush_notes()

    def note(self, header):
        """Writes a frame without payload from a finalizer (__del__), which may run inside
        write() on this very thread: it never waits for the write lock; a frame that cannot be
        written now is written by the thread holding the lock once it is done."""
        self.notes.append(header)
        self.flush_notes()

    def flush_notes(self):
        while self.notes and self.write_lock.acquire(blocking=False):
            try:
                while self.notes:
                    body = json.dumps(self.notes.pop(0)).encode("utf-8")
                    self.sock.sendall(_HEADER.pack(len(body), 0) + body)
            finally:
                self.write_lock.release()


def error_text(exc):
    """'<Type>: <message>' followed by the last frames, as Triton's stub reports Python errors."""
    text = f"{type(exc).__name__}: {exc}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename != __file__ and not f.filename.startswith("<frozen")][-3:]
    if frames:
        text += "\n\nAt:\n" + "".join(f"  {f.filename}({f.lineno}): {f.name}\n" for f in frames)
    return text


def array_at(code, shape, view, offset, size):
    """The numpy array of DataType `code` and `shape` whose `size` bytes are at `offset` of
    `view` (a view, BYTES excepted; np.ndarray over the buffer costs a quarter of np.frombuffer
    of a slice and a reshape). The server checked that the bytes are there and fit the shape."""
    if code == 13:  # BYTES
        return pb_utils.deserialize_bytes_tensor(view[offset:offset + size]).reshape(shape)
    return np.ndarray(shape, _NUMPY_TYPES[code], view, offset)


def server_tensor(raw, pos, name_size, code, dims, view, offset, size, base):
    """A tensor the server described in a binary header (its name and dimensions at `pos` of
    `raw`, its bytes at `offset` of `view`) and the position after it. `base`: the place of
    `view` in the pool (None: not there), which the tensor remembers (BYTES excepted)."""
    end = pos + name_size
    shape = _DIMS[dims].unpack_from(raw, end)
    t = _new_object(pb_utils.Tensor)  # Tensor._trusted without the classmethod call
    t._name = raw[pos:end].decode("utf-8")
    if code == 13:
        t._array = array_at(code, shape, view, offset, size)
    else:  # array_at's view, inline (one call less per tensor)
        t._array = _ndarray(shape, _NUMPY_TYPES[code], view, offset)
        if base is not None:
            t._shm = base + offset
    return t, end + 8 * dims


_new_object = object.__new__
_ndarray = np.ndarray


def encode_binary_response(response, pool, parts, chunks, offset):
    """Appends `response` (outputs or error) to a binary header's `parts`, its tensors as
    encode_placed does; returns the payload offset after them."""
    if response.has_error():
        error = response.error()
        message = str(error.message()).encode("utf-8")
        parts.append(_RESP_HEAD.pack(1, error.code(), 0, len(message)))
        parts.append(message)
        return offset
    outputs = response.output_tensors()
    parts.append(_RESP_HEAD.pack(0, 0, len(outputs), 0))
    return encode_placed(outputs, pool, parts, chunks, offset)


# dtype -> (DataType code or None when unsupported, whether it is BYTES), filled as dtypes are
# met: one dict lookup per output instead of dtype comparisons (numpy compares a dtype with
# np.object_ by converting it first).
_DTYPE_CODES = {}


def dtype_code(dtype):
    try:
        return _DTYPE_CODES[dtype]
    except KeyError:
        pass
    name = pb_utils._wire_name(dtype)
    info = (_TYPE_CODES.get(name) if name is not None else None, name == "BYTES")
    if len(_DTYPE_CODES) < 256:  # bounded: 'S<n>' dtypes differ by n
        _DTYPE_CODES[dtype] = info
    return info


def tensor_bytes(array, code, is_bytes):
    """The bytes of `array` (DataType `code`): from 64 KiB, a view of its own memory when it is
    contiguous (the socket write is then the only copy in this process); below, `tobytes()`,
    which costs less than building the view."""
    if is_bytes:
        return pb_utils.serialize_byte_tensor(array).tobytes()
    if code is None:
        raise pb_utils.TritonModelException("NumPy dtype is not supported.")
    if array.nbytes < 65536:
        return array.tobytes()
    return memoryview(np.ascontiguousarray(array).reshape(-1)).cast("B")


def encode_placed(tensors, pool, parts, chunks, offset):
    """Appends `tensors` (BLS inputs, outputs) to a binary header's `parts` as placed tensors
    (stub_protocol.h): a view of the shared-memory pool by its place there (no copy; a BYTES
    array may have been changed, so it is encoded), any other array's bytes to `chunks` (the
    payload, from `offset`). A tensor the server sent knows its place; a large array of another
    tensor is looked for in the pool by its address (which costs more than copying a small one).
    Returns the payload offset after them."""
    for t in tensors:
        array = t._array
        name = t._name.encode("utf-8")
        code, is_bytes = dtype_code(array.dtype)
        place = t._shm
        if place is None and pool is not None and not is_bytes and array.nbytes >= 65536:
            place = pool.place(array)
        if place is not None and pool is not None:
            parts.append(_PLACED.pack(len(name), code, array.ndim, 1, place, array.nbytes))
        else:
            data = tensor_bytes(array, code, is_bytes)
            parts.append(_PLACED.pack(len(name), code, array.ndim, 0, offset, len(data)))
            chunks.append(data)
            offset += len(data)
        parts.append(name)
        parts.append(_DIMS[array.ndim].pack(*array.shape))
    return offset


class Stub:
    def __init__(self, channel, model_file):
        self.channel = channel
        self.model_file = model_file
        self.model = None
        self.instance = ""  # model_instance_name (is_ready texts)
        self.decoupled = False
        self.collected = {}  # request index -> response a non-decoupled model sent
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
        self.background = set()  # futures of decoupled coroutines still running (Triton's)
        self.model_name = ""  # initialize() learns them from its args
        self.instance_name = ""

    # Called by pb_utils.
    def log(self, level, message):
        self.channel.write({"op": "log", "level": level, "message": message})

    def bls_frame(self, request, decoupled, tag):
        """The binary "bls" frame of `request` (bls_frames.h): header and payload chunks."""
        correlation = request._correlation_id
        text_id = b""
        if isinstance(correlation, str):
            text_id, correlation = correlation.encode("utf-8"), 0
        name = request._model_name.encode("utf-8")
        request_id = request._id.encode("utf-8")
        parameters = request._parameters.encode("utf-8")
        requested = request._requested
        inputs = request._inputs
        parts = [_BLS_HEAD.pack(_BLS, decoupled, request._flags, tag, request._model_version,
                                request._timeout, correlation, len(name), len(request_id),
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
        Any thread may call it while the server listens to this instance (during execute, and
        for decoupled models while a request has not sent its FINAL); calls are answered one at
        a time, matched by tag."""
        tag = next(self.channel.tags)
        self.channel.write(*self.bls_frame(request, False, tag))
        return self.bls_response(*self.channel.read(tag))[0]

    def bls_stream(self, request):
        """exec(decoupled=True): the server starts the call and queues the called model's
        responses; the stream is named by the tag of the "bls" message (nothing answers it)."""
        tag = next(self.channel.tags)
        self.channel.write(*self.bls_frame(request, True, tag))
        return pb_utils.ResponseIterator(tag)

    def bls_next(self, stream):
        """The next response of `stream` (asked of the server, which answers other questions
        between two of them) and whether it is the last."""
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
        pos += message_size
        base = msg["base"]
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
        """True while the server reads this instance's messages (BLS may be answered)."""
        with self.finals_lock:
            return self.execute_thread is not None or bool(self.pending)

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
        """A non-decoupled model's response sent through its sender (one per request)."""
        self.collected[index - self.first_request] = response

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
            threading.Thread(target=self.loop.run_forever, name="event-loop", daemon=True).start()
        return self.loop

    def run_coroutine(self, awaitable):
        """Runs `awaitable` on the instance's loop and waits for its result."""
        import asyncio
        return asyncio.run_coroutine_threadsafe(_await(awaitable), self.event_loop()).result()

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
        self.collected = {}
        self.rescheduled = []
        if self.decoupled:
            with self.finals_lock:
                self.pending.update(r._index for r in requests)
        try:
            result = self.model.execute(requests)
            if hasattr(result, "__await__"):
                if self.decoupled:
                    self.run_in_background(result, requests, self.instance_name)
                    return {"op": "done"}, []
                result = self.run_coroutine(result)
        finally:
            if not self.decoupled:  # the reply is formed below: later sends are refused
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
        parts = [_RESULT_HEAD.pack(_RESULT, len(result))]
        chunks = []
        offset = 0
        pool = self.channel.pool
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
    channel = Channel(fd, int(sys.argv[3]) if len(sys.argv) > 3 else -1)
    stub = Stub(channel, sys.argv[2])
    pb_utils._stub = stub
    stub.serve()


if __name__ == "__main__":
    main()
