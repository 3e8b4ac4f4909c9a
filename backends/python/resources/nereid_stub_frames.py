"""The frames between Nereid's server and a Python stub, the stub's side (nereid_python_stub.py).

Each frame is a 12-byte little-endian prefix (u32 header size, u64 payload size), a header, then
the payload (tensor bytes, concatenated; each tensor names its offset and size in the header).
The header is JSON, except for the frames of every request: execute, result and a decoupled send
have the binary headers backends/python/stub_protocol.h lays out, and so do a BLS call, its
answers and a BLS stream's "next" (backends/python/bls_frames.h). This module holds their
layouts, the shared-memory pool the server's payloads arrive in (Pool), the socket with its
readers and writers (Channel) and the tensor codec (server_tensor, encode_placed). The Stub class
(what the frames mean) stays in nereid_python_stub.py.
"""

import itertools
import json
import mmap
import os
import socket
import struct
import threading
import time

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
# kind, decoupled, flags, tag, model version, timeout, correlation id, parent request (the
# server's id of the request whose trace= it got, -1: none), the sizes of the model name, request
# id, string correlation id and parameters, requested output and input counts
_BLS_HEAD = struct.Struct("<BB2xIqqQQqIIIIHH")
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
    def __init__(self, fd, shm_fd=-1, bell_fd=-1):
        self.pool = Pool(shm_fd) if shm_fd >= 0 else None
        self.sock = socket.socket(fileno=fd)
        self.write_lock = threading.Lock()
        # The idle bell (StubProcess::idle_bell, an eventfd; -1: none): a frame written by a
        # thread other than the serve loop's while no execution is under way (`idle()`, which
        # the Stub sets) rings it, so that the server reads the frame at once. Checked under the
        # write lock: the serve loop marks the execution over before it writes its result.
        self.bell = bell_fd
        self.serve_thread = threading.get_ident()
        self.idle = _never
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
                self.ring()
            else:
                self.sock.sendall(_HEADER.pack(len(body), size) + body)
                self.ring()  # before the payload, which the socket's buffer may not hold
                for c in chunks:
                    if len(c):
                        self.sock.sendall(c)
        self.flush_notes()

    def ring(self):
        """Rings the idle bell after a write (under the write lock) when the server would not
        read the frame otherwise."""
        if threading.get_ident() != self.serve_thread and self.bell >= 0 and self.idle():
            os.eventfd_write(self.bell, 1)

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
                    self.ring()
            finally:
                self.write_lock.release()




def _never():
    return False


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


# InferenceRequest._from_server's arguments: the attributes the C part sets per request; the
# others it copies from a request _from_server built (their values are the same for every one),
# as it copies a BLS answer's InferenceResponse's from one InferenceResponse._from_server built.
_REQUEST_ARGS = {"_id", "_correlation_id", "_inputs", "_requested", "_flags", "_model_name",
                 "_parameters", "_index"}
# The numpy dtypes whose outputs the C part encodes (with dtype_code's DataType codes); an array
# of any other dtype goes through encode_placed.
_NATIVE_DTYPES = (np.bool_, np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16,
                  np.int32, np.int64, np.float16, np.float32, np.float64, np.intc, np.uintc,
                  np.longlong, np.ulonglong)


def load_accel():
    """The stub's C part (_nereid_stub_accel, backends/python/stub_accel.cc, ADR 0022), set up
    with this module's tables; None when it is not built for this interpreter and numpy (the
    import fails) or NEREID_PYTHON_STUB_ACCEL is 0. Its functions return None for anything but
    the common case, and the stub then runs its Python code (make_requests, encode_placed)."""
    if os.environ.get("NEREID_PYTHON_STUB_ACCEL") == "0":
        return None
    try:
        import _nereid_stub_accel as module
    except ImportError:  # not built, or for another interpreter or numpy
        return None
    template = pb_utils.InferenceRequest._from_server("", 0, [], [], 0, "", "", 0)
    constant = tuple((k, v) for k, v in vars(template).items() if k not in _REQUEST_ARGS)
    dtypes, codes = [], []
    for t in _NATIVE_DTYPES:
        dtype = np.dtype(t)
        code, is_bytes = dtype_code(dtype)
        if code is not None and not is_bytes and all(d is not dtype for d in dtypes):
            dtypes.append(dtype)
            codes.append(code)
    response = tuple((k, v) for k, v in vars(pb_utils.InferenceResponse._from_server([])).items()
                     if k != "_outputs")
    module.setup(pb_utils.Tensor, pb_utils.InferenceRequest, pb_utils.InferenceResponse, constant,
                 response, tuple(_NUMPY_TYPES), tuple(dtypes), tuple(codes))
    return module


accel = load_accel()
