"""Nereid's own `triton_python_backend_utils` (pb_utils): the module a Triton `model.py` imports.

Written for Nereid from Triton's documented contract (REFERENCE-2 §10.2, python_backend's
README): the names, signatures, constants and error texts match Triton's so that models run
without edits. Tensors are numpy arrays; BYTES tensors are numpy object arrays of `bytes`.
The stub process (nereid_python_stub.py) fills in the private channel used by Logger and by
the response sender.
"""

import json
import re

import numpy as np

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

# Set by the stub: callables that talk to the server process.
_stub = None

_TRITON_TO_NUMPY = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
    "UINT64": np.uint64, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
    "INT64": np.int64, "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
    "BYTES": np.object_, "STRING": np.object_,
}
# TRITONSERVER_DataType numbers, as triton_to_numpy_type() takes them.
_TYPE_NUMBERS = {1: "BOOL", 2: "UINT8", 3: "UINT16", 4: "UINT32", 5: "UINT64", 6: "INT8",
                 7: "INT16", 8: "INT32", 9: "INT64", 10: "FP16", 11: "FP32", 12: "FP64",
                 13: "BYTES"}


def triton_string_to_numpy(triton_type_string):
    """'TYPE_FP32' -> numpy.float32 (None when unknown)."""
    name = triton_type_string[5:] if triton_type_string.startswith("TYPE_") else triton_type_string
    return _TRITON_TO_NUMPY.get(name)


def triton_to_numpy_type(data_type):
    name = _TYPE_NUMBERS.get(data_type)
    return None if name is None else _TRITON_TO_NUMPY[name]


# _wire_name's answers by what it was given (a dtype or a numpy type): one dict lookup per
# tensor instead of a dozen dtype comparisons (bench/README.md, Python section).
_WIRE_NAMES = {}


def _wire_name(np_type):
    try:
        return _WIRE_NAMES[np_type]
    except (KeyError, TypeError):
        pass
    name = _find_wire_name(np_type)
    if len(_WIRE_NAMES) < 256:  # bounded: 'S<n>' dtypes differ by n
        try:
            _WIRE_NAMES[np_type] = name
        except TypeError:  # unhashable: not cached
            pass
    return name


def _find_wire_name(np_type):
    t = np.dtype(np_type)
    if t == np.object_ or t.type == np.bytes_:
        return "BYTES"
    for name, candidate in _TRITON_TO_NUMPY.items():
        if candidate is not np.object_ and t == np.dtype(candidate):
            return name
    return None


def numpy_to_triton_type(data_type):
    """numpy.float32 -> 11 (TRITONSERVER_DataType), None when it has no Triton type."""
    name = _wire_name(data_type)
    if name is None:
        return None
    return {v: k for k, v in _TYPE_NUMBERS.items()}[name]


def serialize_byte_tensor(input_tensor):
    """An object/bytes array -> uint8 array of 4-byte little-endian length-prefixed items."""
    if input_tensor.size == 0:
        return np.empty([0], dtype=np.uint8)
    parts = []
    for obj in np.nditer(input_tensor, flags=["refs_ok"], order="C"):
        item = obj.item()
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray)):
            item = str(item).encode("utf-8")
        parts.append(len(item).to_bytes(4, "little"))
        parts.append(bytes(item))
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def deserialize_bytes_tensor(encoded_tensor):
    """Length-prefixed bytes -> 1-D numpy object array of bytes."""
    buf = memoryview(encoded_tensor).cast("B")
    items = []
    offset = 0
    while offset < len(buf):
        if offset + 4 > len(buf):
            raise ValueError("malformed BYTES tensor")
        n = int.from_bytes(buf[offset:offset + 4], "little")
        offset += 4
        if offset + n > len(buf):
            raise ValueError("malformed BYTES tensor")
        items.append(bytes(buf[offset:offset + n]))
        offset += n
    return np.array(items, dtype=np.object_)


class TritonError(Exception):
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=1):
        super().__init__(message)
        self._message = message
        self._code = code if code in range(0, 8) else TritonError.INTERNAL

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __str__(self):
        return self._message


class TritonModelException(Exception):
    pass


class Tensor:
    # The place of the array's bytes in the stub's shared-memory pool, for a tensor the server
    # sent there (a fixed-size type): a BLS call passes it on without copying.
    _shm = None

    def __init__(self, name, data, *args):
        if not isinstance(name, str) or name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if not isinstance(data, np.ndarray):
            raise TritonModelException("Tensor data must be a numpy array.")
        if data.dtype.kind == "U":
            raise TritonModelException("NumPy dtype is not supported.")
        if _wire_name(data.dtype) is None and data.dtype.kind != "S":
            raise TritonModelException("NumPy dtype is not supported.")
        if not data.flags["C_CONTIGUOUS"]:
            data = np.ascontiguousarray(data)
        self._name = name
        self._array = data

    @classmethod
    def _trusted(cls, name, array):
        """A tensor the server sent (a valid name, a supported contiguous array): no checks."""
        t = cls.__new__(cls)
        t._name = name
        t._array = array
        return t

    def name(self):
        return self._name

    def as_numpy(self):
        return self._array

    def shape(self):
        return list(self._array.shape)

    def triton_dtype(self):
        return numpy_to_triton_type(self._array.dtype)

    def is_cpu(self):
        return True

    def to_dlpack(self):
        return self._array.__dlpack__()

    @staticmethod
    def from_dlpack(name, capsule):
        return Tensor(name, np.from_dlpack(capsule))


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None, parameters=None):
        if output_tensors is None:
            output_tensors = []
        for t in output_tensors:
            if not isinstance(t, Tensor):
                raise TritonModelException(
                    "Expected a list of 'Tensor' objects in the InferenceResponse, found type '"
                    + type(t).__name__ + "'.")
        if error is not None and not isinstance(error, TritonError):
            error = TritonError(str(error))
        self._outputs = list(output_tensors)
        self._error = error
        if parameters is None or (type(parameters) is dict and not parameters):  # the common case
            self._parameters = "{}"
        else:
            self._parameters = parameters if isinstance(parameters, str) else \
                json.dumps(parameters)

    @classmethod
    def _from_server(cls, outputs, error=None):
        """A BLS call's response (the server checked it): __init__'s attributes without its
        checks."""
        r = cls.__new__(cls)
        r._outputs = outputs
        r._error = error
        r._parameters = "{}"
        return r

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return self._parameters


class InferenceResponseSender:
    def __init__(self, index):
        self._index = index
        self._closed = False
        self._final_sent = False
        self._sent = 0  # responses and flags-only FINALs sent so far
        self._cancelled = False

    def send(self, response=None, flags=0):
        decoupled = _stub is None or _stub.decoupled
        if not decoupled:  # Triton's checks (python_backend response_sender.cc) come first
            if response is not None and self._sent > 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send more than one "
                    "response.")
            if response is None and flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL and \
                    self._sent == 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send complete final "
                    "before sending a response.")
            if response is None and flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL and \
                    not self._final_sent:  # after the reply: carries nothing, also once it is
                self._final_sent = self._closed = True  # formed (a thread's reply, then FINAL)
                self._sent += 1
                return
        if self._closed:
            raise TritonModelException("Unable to send response. Response sender has been closed.")
        if response is not None and not isinstance(response, InferenceResponse):
            raise TritonModelException("Expected an 'InferenceResponse' object, found type '"
                                       + type(response).__name__ + "'.")
        if response is None and not flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to "
                "zero.")
        if flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            self._final_sent = self._closed = True
        self._sent += 1
        if decoupled:
            _stub.send_response(self._index, response, flags)
        else:  # becomes the request's one reply when its execution's reply is formed
            try:
                _stub.collect_response(self._index, response)
            except TritonModelException:  # that reply was formed already: this one is refused
                self._closed = True
                raise

    def is_cancelled(self):
        """True once the client gave up on this request (decoupled models: a cancelled gRPC
        stream or call, a closed HTTP connection)."""
        # After FINAL the server may have stopped listening for this execution: the last state
        # seen is kept.
        if _stub is None or self._closed:
            return self._cancelled
        self._cancelled = self._cancelled or _stub.is_cancelled(self._index)
        return self._cancelled


class PreferredMemory:
    """Where a BLS call's outputs should be placed (accepted; Nereid's are always CPU)."""

    def __init__(self, preferred_memory_type, preferred_device_id=0):
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


TRITONSERVER_MEMORY_GPU = 1
TRITONSERVER_MEMORY_CPU = 0


_U32_END = 1 << 32
_U64_END = 1 << 64
_I64_MIN = -(1 << 63)
_I64_END = 1 << 63


def _check_int(name, value, low, high):
    if type(value) is int and low <= value < high:  # the common case: no isinstance calls
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < high:
        raise TypeError(f"InferenceRequest {name} must be an integer in [{low}, {high}), "
                        f"got {value!r}")


def _parameters_to_json(parameters):
    """Triton's PyParametersToJSON: a dict of str keys and bool/int/str values (None: {})."""
    if parameters is None:
        return "{}"
    if not isinstance(parameters, dict):
        raise TritonModelException(f"Expect N8pybind114dictE, got {type(parameters)}")
    for key, value in parameters.items():
        if not isinstance(key, str):
            raise TritonModelException(
                f"Expect parameters keys to have type str, found type {type(key)}")
        if not isinstance(value, (bool, int, str)):
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(value)}")
    return json.dumps(parameters)


class InferenceTrace:
    """Triton's trace of a request (`request.trace()`), given to a BLS InferenceRequest as
    `trace=` (Triton's BLS tracing). get_context() is the request's OpenTelemetry context: None,
    as in Triton's "triton" trace mode, the only one Nereid has."""

    __slots__ = ("_request",)

    def __init__(self, request=-1):
        self._request = request  # the server's id of the traced request (-1: none)

    def get_context(self):
        return None


class InferenceRequest:
    """A request handed to execute(), or one model.py makes to another model (BLS: exec())."""

    def __init__(self, request_id="", correlation_id=0, inputs=None, requested_output_names=None,
                 model_name="", model_version=-1, flags=0, timeout=0, preferred_memory=None,
                 trace=None, parameters=None):
        if not isinstance(request_id, str):
            raise TypeError(f"InferenceRequest request_id must be a str, got {request_id!r}")
        if not isinstance(model_name, str):
            raise TypeError(f"InferenceRequest model_name must be a str, got {model_name!r}")
        if type(correlation_id) is int and 0 <= correlation_id < _U64_END:
            pass  # the common case, checked at once
        elif isinstance(correlation_id, bool) or not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        elif isinstance(correlation_id, int):
            _check_int("correlation_id", correlation_id, 0, _U64_END)
        if not (type(model_version) is int and _I64_MIN <= model_version < _I64_END):
            _check_int("model_version", model_version, _I64_MIN, _I64_END)
        if not (type(flags) is int and 0 <= flags < _U32_END):
            _check_int("flags", flags, 0, _U32_END)
        if preferred_memory is not None and not isinstance(preferred_memory, PreferredMemory):
            raise TypeError("InferenceRequest preferred_memory must be a PreferredMemory, got "
                            f"{preferred_memory!r}")
        if trace is not None and not isinstance(trace, InferenceTrace):
            raise TypeError("InferenceRequest trace must be an InferenceTrace (request.trace()), "
                            f"got {trace!r}")
        self._trace = trace
        self._id = request_id
        self._correlation_id = correlation_id
        self._inputs = list(inputs or [])
        self._requested = list(requested_output_names or [])
        self._model_name = model_name
        self._model_version = model_version
        self._flags = flags
        if not (type(timeout) is int and 0 <= timeout < _I64_END) and (
                isinstance(timeout, bool) or not isinstance(timeout, int) or
                not 0 <= timeout < _I64_END):
            raise TypeError("InferenceRequest timeout must be an integer number of microseconds "
                            f">= 0, got {timeout!r}")
        self._timeout = timeout
        self._parameters = _parameters_to_json(parameters)
        self._sender = None
        self._index = -1
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._cancelled = False

    @classmethod
    def _from_server(cls, request_id, correlation_id, inputs, requested, flags, model_name,
                     parameters, index):
        """A request given to execute() (the server checked every field): __init__'s attributes
        without its checks and copies."""
        r = cls.__new__(cls)
        r._id = request_id
        r._correlation_id = correlation_id
        r._inputs = inputs
        r._requested = requested
        r._model_name = model_name
        r._model_version = -1
        r._flags = flags
        r._timeout = 0
        r._parameters = parameters
        r._sender = None
        r._index = index
        r._cancelled = False
        r._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        return r

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._id

    def correlation_id(self):
        return self._correlation_id

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        _check_int("flags", flags, 0, 1 << 32)
        self._flags = flags

    def timeout(self):
        return self._timeout

    def trace(self):
        """The request's InferenceTrace (Triton's), to pass to a BLS request's `trace=`."""
        if self._index >= 0:  # a request given to execute()
            return InferenceTrace(self._index)
        return self._trace or InferenceTrace()  # a request model.py built

    def parameters(self):
        return self._parameters

    def requested_output_names(self):
        return self._requested

    def set_release_flags(self, flags):
        """Triton's release flags of a request handed to execute(): TRITONSERVER_REQUEST_RELEASE_ALL
        (what every request gets) or TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, which has the server
        execute the same request again in a later execution (models with sequence_batching {
        iterative_sequence: true }; elsewhere the request fails with Triton's text). A
        non-decoupled model returns None for a rescheduled request; a decoupled one sets it
        before execute returns. Read when execute returns."""
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise TypeError(f"set_release_flags takes an int, got {flags!r}")
        _check_int("flags", flags, 0, 1 << 32)
        self._release_flags = flags

    def model_name(self):
        return self._model_name

    def is_cancelled(self):
        """True once the client gave up on this request (a cancelled gRPC call or stream, a
        closed HTTP connection); always False for a BLS request. Decoupled models ask their
        response sender; other models ask the server while execute runs (after that the last
        state seen is kept)."""
        if self._index < 0 or _stub is None:
            return False
        if _stub.decoupled:
            return self.get_response_sender().is_cancelled()
        if not self._cancelled and _stub.listening():
            self._cancelled = _stub.is_cancelled(self._index)
        return self._cancelled

    def get_response_sender(self):
        if self._index < 0 or _stub is None:
            raise TritonModelException(
                "Unable to get the response sender: the request was not given to execute().")
        if self._sender is None:
            self._sender = InferenceResponseSender(self._index)
        return self._sender

    def exec(self, decoupled=False):
        """BLS: runs this request on model `model_name` through the server; returns its
        InferenceResponse (check has_error()), or with decoupled=True an iterator of the called
        model's responses (the last one may be empty: the FINAL flag alone)."""
        if not isinstance(decoupled, bool):
            raise TypeError(f"exec(): decoupled must be a bool, got {decoupled!r}")
        if _stub is not None and _stub.phase is not None:
            raise TritonModelException("BLS is only supported during the 'execute' function.")
        _check_listening("BLS requests")
        if decoupled:
            return _stub.bls_stream(self)
        return _stub.bls(self)

    async def async_exec(self, decoupled=False):
        return self.exec(decoupled)


class ResponseIterator:
    """The responses of exec(decoupled=True), in order, as the called model sends them (each asked
    of the server when needed). Iterating again after the end replays them (as Triton's).
    cancel() cancels the called request (Triton's): the responses it still sends come as before.
    An iterator dropped before its end cancels the called request and discards the rest of its
    responses (Triton's waits for them)."""

    def __init__(self, stream):
        self._stream = stream
        self._finished = False
        self._dropped = False
        self._responses = []
        self._index = 0

    def __iter__(self):
        if self._finished and self._index >= len(self._responses):
            self._index = 0
        return self

    def __next__(self):
        if self._finished or self._dropped:
            if self._index < len(self._responses):
                self._index += 1
                return self._responses[self._index - 1]
            raise StopIteration("Iteration is done for the responses.")
        response, final = _stub.bls_next(self._stream)
        self._responses.append(response)
        if final:
            self._finished = True
            self._index = len(self._responses)
        return response

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            return self.__next__()
        except StopIteration:
            raise StopAsyncIteration from None

    def cancel(self):
        """Cancels the called request (the called model's is_cancelled() turns True; a request
        still queued ends with a CANCELLED error response). Iteration goes on until its FINAL."""
        if not self._finished and not self._dropped:
            _stub.bls_cancel(self._stream, drop=False)

    def __del__(self):
        try:
            if not self._finished and not self._dropped and _stub is not None:
                self._dropped = True
                _stub.bls_cancel(self._stream, drop=True)
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


def _check_control(what):
    """Model control: also allowed in initialize(), as in Triton."""
    if _stub is not None and _stub.phase == "initialize":
        return
    _check_listening(what)


def _check_listening(what):
    if _stub is None or not _stub.listening():
        raise TritonModelException(f"{what} can only be made inside execute() (or, for "
                                   "decoupled models, until every request's FINAL was sent).")


def _version_from_string(version):
    """Triton's GetModelVersionFromString: "" is -1 (any), else an integer >= 0."""
    if not isinstance(version, str):
        raise TypeError(f"model_version must be a str, got {version!r}")
    if version == "":
        return -1
    match = re.match(r"\s*[+-]?\d+", version)  # std::stol: leading digits, the rest ignored
    if match is None:
        raise TritonModelException(
            f"failed to get model version from specified version string '{version}' (details: "
            "stol), version should be an integral value > 0")
    value = int(match.group(0))
    if value < 0:
        raise TritonModelException(
            f"failed to get model version from specified version string '{version}', version "
            "should be an integral value > 0")
    return value


def is_model_ready(model_name, model_version=""):
    """True when version `model_version` ("" any) of `model_name` is ready on the server."""
    if not isinstance(model_name, str):
        raise TypeError(f"is_model_ready(): model_name must be a str, got {model_name!r}")
    _check_control("Model readiness requests")
    try:
        version = _version_from_string(model_version)
    except TritonModelException as e:
        raise TritonModelException(f"Failed to check model readiness: {e}") from None
    return _stub.control({"op": "model_ready", "model_name": model_name,
                          "model_version": version}, "Failed to check model readiness: ")


def load_model(model_name, config="", files=None):
    """Loads (or reloads) `model_name` (explicit model control only); `config` is a JSON model
    configuration, `files` maps "file:<path>" to the bytes of a file of the model."""
    if not isinstance(model_name, str) or not isinstance(config, str):
        raise TypeError("load_model(): model_name and config must be str")
    chunks = []
    descs = []
    if files is not None:
        if not isinstance(files, dict):
            raise TritonModelException(
                f"failed to load model '{model_name}', files should be a dictionary of file "
                "paths and file contents")
        offset = 0
        for path, content in files.items():
            if not isinstance(path, str) or not isinstance(content, (bytes, bytearray)):
                raise TypeError("load_model(): files must map str paths to bytes")
            if not path.startswith("file:"):
                raise TritonModelException(
                    f"Failed to load model: Unrecognized load parameter '{path}' with type "
                    "'bytes'")
            descs.append({"path": path[5:], "offset": offset, "size": len(content)})
            chunks.append(bytes(content))
            offset += len(content)
    _check_control("Model load requests")
    _stub.control({"op": "load_model", "model_name": model_name, "config": config,
                   "files": descs}, "Failed to load model: ", chunks)


def unload_model(model_name, unload_dependents=False):
    """Unloads `model_name` (explicit model control only)."""
    if not isinstance(model_name, str) or not isinstance(unload_dependents, bool):
        raise TypeError("unload_model(): model_name must be a str, unload_dependents a bool")
    _check_control("Model unload requests")
    _stub.control({"op": "unload_model", "model_name": model_name,
                   "unload_dependents": unload_dependents}, "Failed to unload model: ")


def get_input_tensor_by_name(inference_request, name):
    for t in inference_request.inputs():
        if t.name() == name:
            return t
    return None


def get_output_tensor_by_name(inference_response, name):
    for t in inference_response.output_tensors():
        if t.name() == name:
            return t
    return None


def get_input_config_by_name(model_config, name):
    for cfg in model_config.get("input", []):
        if cfg.get("name") == name:
            return cfg
    return None


def get_output_config_by_name(model_config, name):
    for cfg in model_config.get("output", []):
        if cfg.get("name") == name:
            return cfg
    return None


def using_decoupled_model_transaction_policy(model_config):
    return bool(model_config.get("model_transaction_policy", {}).get("decoupled", False))


class Logger:
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3

    @staticmethod
    def log(message, level=0):
        if _stub is not None:
            _stub.log(level, str(message))

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)


class ModelConfig:
    """The configuration handed to TritonPythonModel.auto_complete_config: only max_batch_size,
    the scheduler, inputs, outputs and the transaction policy may change. Errors are ValueError
    with Triton's texts."""

    def __init__(self, model_config):
        self._model_config = json.loads(model_config) if isinstance(model_config, str) \
            else model_config
        self._model_config.setdefault("input", [])
        self._model_config.setdefault("output", [])
        self._model_config.setdefault("max_batch_size", 0)

    def _name(self):
        return self._model_config.get("name", "")

    def as_dict(self):
        return self._model_config

    def set_max_batch_size(self, max_batch_size):
        configured = self._model_config["max_batch_size"]
        if configured > max_batch_size:
            raise ValueError(f"configuration specified max_batch_size {configured}, but in "
                             f"auto-complete-config function for model '{self._name()}' "
                             f"specified max_batch_size {max_batch_size}")
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._model_config:
                raise ValueError(f"Configuration specified scheduling_choice as '{scheduler}', "
                                 f"but auto-complete-config function for model '{self._name()}' "
                                 "tries to set scheduling_choice as 'dynamic_batching'")
        self._model_config.setdefault("dynamic_batching", {})

    def _add_tensor(self, kind, tensor, valid):
        where = f"in auto-complete-config function for model '{self._name()}'"
        for key in tensor:
            if key not in valid:
                allowed = ", ".join(f"'{v}'" for v in valid[:-1]) + f" and '{valid[-1]}'"
                raise ValueError(f"{kind} '{tensor.get('name', '')}' {where} contains property "
                                 f"other than {allowed}.")
        if "name" not in tensor:
            raise ValueError(f"{kind} {where} is missing 'name' property.")
        for key in ("data_type", "dims"):
            if key not in tensor:
                raise ValueError(f"{kind} '{tensor['name']}' {where} is missing '{key}' property.")
        for current in self._model_config[kind]:
            if current.get("name") != tensor["name"]:
                continue
            current_type = current.get("data_type", "TYPE_INVALID")
            if current_type != "TYPE_INVALID" and current_type != tensor["data_type"]:
                raise ValueError(f"unable to load model '{self._name()}', configuration expects "
                                 f"datatype {current_type} for {kind} '{tensor['name']}', model "
                                 f"provides {tensor['data_type']}")
            if current.get("dims") and list(map(int, current["dims"])) != list(tensor["dims"]):
                raise ValueError(f"model '{self._name()}', tensor '{tensor['name']}': the model "
                                 f"expects dims {tensor['dims']} but the model configuration "
                                 f"specifies dims {current['dims']}")
            if "optional" in current and "optional" in tensor and \
                    current["optional"] != tensor["optional"]:
                raise ValueError(f"model '{self._name()}', tensor '{tensor['name']}': the model "
                                 f"expects optional {tensor['optional']} but the model "
                                 f"configuration specifies optional {current['optional']}")
            current.update(tensor)
            return
        self._model_config[kind].append(dict(tensor))

    def add_input(self, input):
        self._add_tensor("input", input, ["name", "data_type", "dims", "optional"])

    def add_output(self, output):
        self._add_tensor("output", output, ["name", "data_type", "dims"])

    def set_model_transaction_policy(self, transaction_policy_dict):
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError("model transaction property in auto-complete-config function "
                                 f"for model '{self._name()}' contains property other than "
                                 "'decoupled'.")
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            new = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != new:
                raise ValueError("trying to change decoupled property in auto-complete-config "
                                 f"for model '{self._name()}', which is already set to "
                                 f"'{policy['decoupled']}'.")
            policy["decoupled"] = new


# Custom metrics (Triton's pb_utils.MetricFamily / Metric): resources/nereid_metrics.py.
from nereid_metrics import Metric, MetricFamily  # noqa: E402,F401
