// _nereid_stub_accel: the Python stub's per-request frame work in C (ADR 0022). The stub
// (resources/nereid_python_stub.py) imports it when it is there and built for its interpreter,
// and otherwise does the same work in Python (nereid_stub_frames.py); the frames and the objects
// model.py sees are the same either way (stub_accel_test.py checks both).
//
// Four functions, each for the common case only; anything else returns None and the caller takes
// its Python path, which also owns every error text:
//   make_requests(raw, payload, base, first, count, model_name): the InferenceRequests of an
//     execute header (stub_protocol.h) whose inputs are all fixed-size types, their arrays views
//     of `payload` (Stub.make_requests).
//   encode_responses(requests, result, pool): the binary result header and payload chunks of
//     `result` when every response is a plain InferenceResponse without error whose outputs are
//     small contiguous native arrays or tensors the server sent (Stub.encode_result's loop).
//   encode_bls(request, decoupled, tag, pool): a BLS call's binary "bls" frame (Stub.bls_frame)
//     when its inputs are as encode_responses' outputs.
//   make_response(raw, payload, base, count, message_size): the InferenceResponse of a BLS
//     answer without error whose outputs are fixed-size types (Stub.bls_response).
// setup(...) gives it pb_utils' classes, the constant attributes of a request and of a response,
// and the dtype tables, so the Python modules stay the one place that defines them.
//
// Built without sanitizers (the stub runs Debian's uninstrumented python3), for the interpreter
// and numpy it was compiled against: another one's import fails and the stub runs its Python path.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <cstdint>
#include <cstring>
#include <string>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the frames are little-endian");

namespace {

// Sizes of the binary layouts (nereid_stub_frames.py's structs; stub_frames_test.py compares).
constexpr Py_ssize_t kExecHead = 44;    // "<B7xQQQqI"
constexpr Py_ssize_t kReqHead = 28;     // "<IQIIIHH"
constexpr Py_ssize_t kInHead = 20;      // "<HBBQQ"
constexpr Py_ssize_t kResultHead = 8;   // "<B3xI"
constexpr Py_ssize_t kRespHead = 8;     // "<BBHI"
constexpr Py_ssize_t kPlaced = 21;      // "<HBBBQQ"
constexpr Py_ssize_t kBlsHead = 68;     // "<BB2xIqqQQqIIIIHH"
constexpr Py_ssize_t kAnswerHead = 44;  // "<BBBBIIqQQQ"
constexpr Py_ssize_t kOutHead = 12;     // "<HBBQ"
constexpr uint8_t kBlsKind = 4;         // _BLS
constexpr uint8_t kResultKind = 2;      // _RESULT
constexpr int kBytesCode = 13;          // DataType BYTES
constexpr long kReleaseReschedule = 2;  // TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
constexpr Py_ssize_t kSmallOutput =
    65536;  // from here encode_placed looks the array up in the pool

struct Tables {
  PyTypeObject* tensor = nullptr;
  PyTypeObject* request = nullptr;
  PyTypeObject* response = nullptr;
  PyObject* request_items = nullptr;   // tuple of (name, value): a request's constant attributes
  PyObject* response_items = nullptr;  // the same for a BLS answer's InferenceResponse
  PyObject* in_types = nullptr;        // tuple: DataType code -> numpy dtype or None
  PyObject* out_dtypes = nullptr;      // tuple of dtypes
  PyObject* out_codes = nullptr;       // tuple of their DataType codes
};
Tables g;

// Attribute names, interned once.
PyObject *s_name, *s_array, *s_shm, *s_id, *s_correlation_id, *s_inputs, *s_requested, *s_flags,
    *s_parameters, *s_index, *s_model_name, *s_model_version, *s_timeout, *s_trace, *s_request,
    *s_release_flags, *s_error, *s_outputs, *s_empty;

// A view of a bytes-like object, released on scope exit.
class Buffer {
 public:
  bool Get(PyObject* o, bool want_writable) {
    if (want_writable && PyObject_GetBuffer(o, &view_, PyBUF_WRITABLE) == 0) {
      writable_ = true;
    } else {
      PyErr_Clear();
      if (PyObject_GetBuffer(o, &view_, PyBUF_SIMPLE) != 0) return false;
    }
    held_ = true;
    return true;
  }
  ~Buffer() {
    if (held_) PyBuffer_Release(&view_);
  }
  const char* data() const { return static_cast<const char*>(view_.buf); }
  char* mutable_data() const { return static_cast<char*>(view_.buf); }
  Py_ssize_t size() const { return view_.len; }
  bool writable() const { return writable_; }

 private:
  Py_buffer view_{};
  bool held_ = false;
  bool writable_ = false;
};

template <typename T>
bool ReadAt(const Buffer& b, Py_ssize_t pos, T* out) {
  if (pos < 0 || pos + static_cast<Py_ssize_t>(sizeof(T)) > b.size()) return false;
  std::memcpy(out, b.data() + pos, sizeof(T));
  return true;
}

PyObject* Utf8(const Buffer& b, Py_ssize_t pos, Py_ssize_t size) {
  if (pos < 0 || size < 0 || pos + size > b.size()) return nullptr;
  return PyUnicode_DecodeUTF8(b.data() + pos, size, nullptr);
}

PyObject* g_no_args = nullptr;  // ()

// A new instance of a pb_utils class without calling __init__ (object.__new__, which also sets up
// the instance's attribute storage).
PyObject* NewInstance(PyTypeObject* type) {
  return PyBaseObject_Type.tp_new(type, g_no_args, nullptr);
}

bool SetAttr(PyObject* o, PyObject* name, PyObject* value) {  // steals `value`
  if (value == nullptr) return false;
  const int rc = PyObject_SetAttr(o, name, value);
  Py_DECREF(value);
  return rc == 0;
}

// A tensor whose name starts at `name_at` of the header (its dimensions follow the name) and whose
// `nbytes` are at `offset` of the payload: server_tensor's, for an execute input or a BLS answer's
// output. nullptr (no error set) when the Python path must build it (BYTES, an unknown type,
// anything out of range); else `*end` is the header position after it.
PyObject* MakeTensorAt(const Buffer& raw, Py_ssize_t name_at, uint16_t name_size, uint8_t code,
                       uint8_t dims, uint64_t offset, PyObject* payload, const Buffer& pay,
                       PyObject* base, Py_ssize_t* end);

// One execute input at `*pos` of the header (see MakeTensorAt).
PyObject* MakeTensor(const Buffer& raw, Py_ssize_t* pos, PyObject* payload, const Buffer& pay,
                     PyObject* base) {
  uint16_t name_size;
  uint8_t code, dims;
  uint64_t offset, nbytes;
  if (!ReadAt(raw, *pos, &name_size) || !ReadAt(raw, *pos + 2, &code) ||
      !ReadAt(raw, *pos + 3, &dims) || !ReadAt(raw, *pos + 4, &offset) ||
      !ReadAt(raw, *pos + 12, &nbytes)) {
    return nullptr;
  }
  return MakeTensorAt(raw, *pos + kInHead, name_size, code, dims, offset, payload, pay, base, pos);
}

PyObject* MakeTensorAt(const Buffer& raw, Py_ssize_t name_at, uint16_t name_size, uint8_t code,
                       uint8_t dims, uint64_t offset, PyObject* payload, const Buffer& pay,
                       PyObject* base, Py_ssize_t* end) {
  const Py_ssize_t dims_at = name_at + name_size;
  if (code == kBytesCode || code >= PyTuple_GET_SIZE(g.in_types) || dims > NPY_MAXDIMS ||
      dims_at + 8 * static_cast<Py_ssize_t>(dims) > raw.size()) {
    return nullptr;
  }
  PyObject* dtype = PyTuple_GET_ITEM(g.in_types, code);
  if (dtype == Py_None || !PyArray_DescrCheck(dtype)) return nullptr;
  auto* descr = reinterpret_cast<PyArray_Descr*>(dtype);
  npy_intp shape[NPY_MAXDIMS];
  uint64_t elements = 1;
  for (int d = 0; d < dims; ++d) {
    int64_t v = 0;
    ReadAt(raw, dims_at + 8 * d, &v);
    if (v < 0 || (v != 0 && elements > UINT64_MAX / static_cast<uint64_t>(v))) return nullptr;
    shape[d] = static_cast<npy_intp>(v);
    elements *= static_cast<uint64_t>(v);
  }
  const uint64_t item = static_cast<uint64_t>(descr->elsize);
  if (item != 0 && elements > UINT64_MAX / item) return nullptr;
  const uint64_t need = elements * item;
  if (offset > static_cast<uint64_t>(pay.size()) ||
      need > static_cast<uint64_t>(pay.size()) - offset) {
    return nullptr;  // np.ndarray raises "buffer is too small": the Python path says so
  }
  PyObject* name = Utf8(raw, name_at, name_size);
  if (name == nullptr) return nullptr;
  Py_INCREF(descr);  // stolen by PyArray_NewFromDescr
  PyObject* array =
      PyArray_NewFromDescr(&PyArray_Type, descr, dims, shape, nullptr, pay.mutable_data() + offset,
                           pay.writable() ? NPY_ARRAY_CARRAY : NPY_ARRAY_CARRAY_RO, nullptr);
  if (array == nullptr) {
    Py_DECREF(name);
    return nullptr;
  }
  Py_INCREF(payload);  // as np.ndarray(shape, dtype, payload, offset): the array keeps it alive
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), payload) != 0) {
    Py_DECREF(array);
    Py_DECREF(name);
    return nullptr;
  }
  PyObject* t = NewInstance(g.tensor);
  if (t == nullptr) {
    Py_DECREF(name);
    Py_DECREF(array);
    return nullptr;
  }
  bool ok = SetAttr(t, s_name, name);  // each SetAttr takes its value, so both are called
  ok = SetAttr(t, s_array, array) & ok;
  if (ok && base != Py_None) {
    const long long place = PyLong_AsLongLong(base);
    ok = !PyErr_Occurred() &&
         SetAttr(t, s_shm, PyLong_FromLongLong(place + static_cast<long long>(offset)));
  }
  if (!ok) {
    Py_XDECREF(t);
    return nullptr;
  }
  *end = dims_at + 8 * static_cast<Py_ssize_t>(dims);
  return t;
}

// One request at `*pos`; nullptr when the Python path must build the execution's requests.
PyObject* MakeRequest(const Buffer& raw, Py_ssize_t* pos, PyObject* payload, const Buffer& pay,
                      PyObject* base, long long index, PyObject* model_name) {
  uint32_t flags, corr_size, id_size, params_size;
  uint64_t correlation;
  uint16_t n_requested, n_inputs;
  Py_ssize_t p = *pos;
  if (!ReadAt(raw, p, &flags) || !ReadAt(raw, p + 4, &correlation) ||
      !ReadAt(raw, p + 12, &corr_size) || !ReadAt(raw, p + 16, &id_size) ||
      !ReadAt(raw, p + 20, &params_size) || !ReadAt(raw, p + 24, &n_requested) ||
      !ReadAt(raw, p + 26, &n_inputs)) {
    return nullptr;
  }
  p += kReqHead;
  PyObject* corr = nullptr;
  if (corr_size != 0) {
    corr = Utf8(raw, p, corr_size);
    p += corr_size;
  } else {
    corr = PyLong_FromUnsignedLongLong(correlation);
  }
  PyObject* id = nullptr;
  if (id_size != 0) {
    id = Utf8(raw, p, id_size);
  } else {
    id = Py_NewRef(s_empty);
  }
  p += id_size;
  PyObject* params = Utf8(raw, p, params_size);
  p += params_size;
  PyObject* requested = PyList_New(n_requested);
  PyObject* inputs = PyList_New(n_inputs);
  PyObject* r = nullptr;
  bool ok = corr != nullptr && id != nullptr && params != nullptr && requested != nullptr &&
            inputs != nullptr;
  for (uint16_t i = 0; ok && i < n_requested; ++i) {
    uint16_t size;
    PyObject* name = ReadAt(raw, p, &size) ? Utf8(raw, p + 2, size) : nullptr;
    ok = name != nullptr;
    if (ok) PyList_SET_ITEM(requested, i, name);
    p += 2 + static_cast<Py_ssize_t>(ok ? size : 0);
  }
  for (uint16_t i = 0; ok && i < n_inputs; ++i) {
    PyObject* t = MakeTensor(raw, &p, payload, pay, base);
    ok = t != nullptr;
    if (ok) PyList_SET_ITEM(inputs, i, t);
  }
  if (ok) {
    r = NewInstance(g.request);
    ok = r != nullptr;
  }
  for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(g.request_items); ++i) {
    PyObject* item = PyTuple_GET_ITEM(g.request_items, i);
    ok = PyObject_SetAttr(r, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1)) == 0;
  }
  if (ok) {  // InferenceRequest._from_server's arguments; each SetAttr takes its value
    ok = SetAttr(r, s_id, id) & SetAttr(r, s_correlation_id, corr) & SetAttr(r, s_inputs, inputs) &
         SetAttr(r, s_requested, requested) & SetAttr(r, s_flags, PyLong_FromUnsignedLong(flags)) &
         SetAttr(r, s_parameters, params) & SetAttr(r, s_index, PyLong_FromLongLong(index)) &
         SetAttr(r, s_model_name, Py_NewRef(model_name));
    id = corr = inputs = requested = params = nullptr;
  }
  Py_XDECREF(corr);
  Py_XDECREF(id);
  Py_XDECREF(params);
  Py_XDECREF(requested);
  Py_XDECREF(inputs);
  if (!ok) {
    Py_XDECREF(r);
    return nullptr;
  }
  *pos = p;
  return r;
}

PyObject* FallBack() {  // None: the caller's Python path does it (and raises what it raises)
  PyErr_Clear();
  Py_RETURN_NONE;
}

// Each function's start: `expected` arguments (else TypeError with `usage`), and setup() done.
bool Called(Py_ssize_t nargs, Py_ssize_t expected, const char* usage) {
  if (nargs != expected) {
    PyErr_SetString(PyExc_TypeError, usage);
    return false;
  }
  if (g.tensor != nullptr) return true;
  PyErr_SetString(PyExc_RuntimeError, "_nereid_stub_accel.setup was not called");
  return false;
}

PyObject* MakeRequests(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!Called(nargs, 6, "make_requests(raw, payload, base, first, count, model_name)"))
    return nullptr;
  PyObject* payload = args[1];
  PyObject* base = args[2];
  const long long first = PyLong_AsLongLong(args[3]);
  const long long count = PyLong_AsLongLong(args[4]);
  if (PyErr_Occurred() || count < 0 || (base != Py_None && !PyLong_Check(base)) ||
      !PyUnicode_Check(args[5])) {
    return FallBack();
  }
  Buffer raw, pay;
  if (!raw.Get(args[0], false) || !pay.Get(payload, true)) return FallBack();
  // The arrays keep a memoryview of a bytearray payload (its export stops a resize under them),
  // as np.ndarray(shape, dtype, memoryview(payload), offset) does; a pool block already is one.
  PyObject* keeper =
      PyByteArray_Check(payload) ? PyMemoryView_FromObject(payload) : Py_NewRef(payload);
  if (keeper == nullptr) return FallBack();
  PyObject* requests = PyList_New(count);
  if (requests == nullptr) {
    Py_DECREF(keeper);
    return FallBack();
  }
  Py_ssize_t pos = kExecHead;
  for (long long i = 0; i < count; ++i) {
    PyObject* r = MakeRequest(raw, &pos, keeper, pay, base, first + i, args[5]);
    if (r == nullptr) {
      Py_DECREF(requests);
      Py_DECREF(keeper);
      return FallBack();
    }
    PyList_SET_ITEM(requests, i, r);
  }
  Py_DECREF(keeper);
  return requests;
}

// The header bytes being built.
struct Head {
  std::string bytes;
  template <typename T>
  void Put(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
};

// The DataType code of a native array's dtype, or -1.
int OutCode(PyArrayObject* a) {
  PyObject* dtype = reinterpret_cast<PyObject*>(PyArray_DESCR(a));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(g.out_dtypes); ++i) {
    if (PyTuple_GET_ITEM(g.out_dtypes, i) == dtype) {
      return static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(g.out_codes, i)));
    }
  }
  return -1;
}

// Appends one output tensor (encode_placed); false: the Python path encodes the result.
bool EncodeTensor(PyObject* t, bool pool, Head* head, PyObject* chunks, uint64_t* offset) {
  if (Py_TYPE(t) != g.tensor) return false;
  PyObject* array = PyObject_GetAttr(t, s_array);
  PyObject* name = PyObject_GetAttr(t, s_name);
  PyObject* shm = PyObject_GetAttr(t, s_shm);
  bool ok = array != nullptr && name != nullptr && shm != nullptr && PyArray_CheckExact(array) &&
            PyUnicode_CheckExact(name);
  Py_ssize_t name_size = 0;
  const char* name_utf8 = ok ? PyUnicode_AsUTF8AndSize(name, &name_size) : nullptr;
  auto* a = reinterpret_cast<PyArrayObject*>(array);
  const int code = ok && name_utf8 != nullptr ? OutCode(a) : -1;
  ok = ok && name_utf8 != nullptr && code >= 0 && name_size <= UINT16_MAX;
  const Py_ssize_t nbytes = ok ? PyArray_NBYTES(a) : 0;
  const int ndim = ok ? PyArray_NDIM(a) : 0;
  if (ok && shm != Py_None && pool) {  // a tensor the server sent: passed on by its place
    const unsigned long long place = PyLong_AsUnsignedLongLong(shm);
    ok = !PyErr_Occurred();
    if (ok) {
      head->Put(static_cast<uint16_t>(name_size));
      head->Put(static_cast<uint8_t>(code));
      head->Put(static_cast<uint8_t>(ndim));
      head->Put(static_cast<uint8_t>(1));
      head->Put(static_cast<uint64_t>(place));
      head->Put(static_cast<uint64_t>(nbytes));
    }
  } else if (ok) {
    ok = nbytes < kSmallOutput && PyArray_IS_C_CONTIGUOUS(a);
    PyObject* data = ok ? PyBytes_FromStringAndSize(PyArray_BYTES(a), nbytes) : nullptr;
    ok = data != nullptr && PyList_Append(chunks, data) == 0;
    Py_XDECREF(data);
    if (ok) {
      head->Put(static_cast<uint16_t>(name_size));
      head->Put(static_cast<uint8_t>(code));
      head->Put(static_cast<uint8_t>(ndim));
      head->Put(static_cast<uint8_t>(0));
      head->Put(static_cast<uint64_t>(*offset));
      head->Put(static_cast<uint64_t>(nbytes));
      *offset += static_cast<uint64_t>(nbytes);
    }
  }
  if (ok) {
    head->bytes.append(name_utf8, static_cast<size_t>(name_size));
    const npy_intp* shape = PyArray_DIMS(a);
    for (int d = 0; d < ndim; ++d) head->Put(static_cast<int64_t>(shape[d]));
  }
  Py_XDECREF(array);
  Py_XDECREF(name);
  Py_XDECREF(shm);
  return ok;
}

// Appends one response; false: the Python path encodes the result.
bool EncodeResponse(PyObject* request, PyObject* response, bool pool, Head* head, PyObject* chunks,
                    uint64_t* offset) {
  if (Py_TYPE(response) != g.response) return false;  // None, another type, a subclass
  PyObject* flags = PyObject_GetAttr(request, s_release_flags);
  const long f = flags != nullptr ? PyLong_AsLong(flags) : kReleaseReschedule;
  Py_XDECREF(flags);
  if (PyErr_Occurred() || (f & kReleaseReschedule) != 0) return false;
  PyObject* error = PyObject_GetAttr(response, s_error);
  PyObject* outputs = PyObject_GetAttr(response, s_outputs);
  bool ok = error == Py_None && outputs != nullptr && PyList_CheckExact(outputs) &&
            PyList_GET_SIZE(outputs) <= UINT16_MAX;
  if (ok) {
    const Py_ssize_t n = PyList_GET_SIZE(outputs);
    head->Put(static_cast<uint8_t>(0));
    head->Put(static_cast<uint8_t>(0));
    head->Put(static_cast<uint16_t>(n));
    head->Put(static_cast<uint32_t>(0));
    for (Py_ssize_t i = 0; ok && i < n; ++i) {
      ok = EncodeTensor(PyList_GET_ITEM(outputs, i), pool, head, chunks, offset);
    }
  }
  Py_XDECREF(error);
  Py_XDECREF(outputs);
  return ok;
}

PyObject* EncodeResponses(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!Called(nargs, 3, "encode_responses(requests, result, pool)")) return nullptr;
  PyObject* requests = args[0];
  PyObject* result = args[1];
  const bool pool = args[2] != Py_None;
  if (!PyList_CheckExact(requests) || !PyList_CheckExact(result) ||
      PyList_GET_SIZE(requests) != PyList_GET_SIZE(result)) {
    return FallBack();
  }
  const Py_ssize_t n = PyList_GET_SIZE(result);
  Head head;
  head.bytes.reserve(64 + 96 * static_cast<size_t>(n));
  head.Put(kResultKind);
  head.bytes.append(3, '\0');
  head.Put(static_cast<uint32_t>(n));
  PyObject* chunks = PyList_New(0);
  if (chunks == nullptr) return FallBack();
  uint64_t offset = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    // Items are borrowed: hold them, as getattr may run code that changes the lists.
    PyObject* request = Py_NewRef(PyList_GET_ITEM(requests, i));
    PyObject* response = Py_NewRef(PyList_GET_ITEM(result, i));
    const bool ok = EncodeResponse(request, response, pool, &head, chunks, &offset);
    Py_DECREF(request);
    Py_DECREF(response);
    if (!ok || PyList_GET_SIZE(result) != n || PyList_GET_SIZE(requests) != n) {
      Py_DECREF(chunks);
      return FallBack();
    }
  }
  PyObject* bytes =
      PyBytes_FromStringAndSize(head.bytes.data(), static_cast<Py_ssize_t>(head.bytes.size()));
  if (bytes == nullptr) {
    Py_DECREF(chunks);
    return FallBack();
  }
  PyObject* out = PyTuple_Pack(2, bytes, chunks);
  Py_DECREF(bytes);
  Py_DECREF(chunks);
  return out != nullptr ? out : FallBack();
}

// The bytes of a str attribute as UTF-8 (borrowed from the str's cache), or false.
bool Utf8Attr(PyObject* o, PyObject* name, PyObject** holder, const char** text, Py_ssize_t* size) {
  *holder = PyObject_GetAttr(o, name);
  if (*holder == nullptr || !PyUnicode_CheckExact(*holder)) return false;
  *text = PyUnicode_AsUTF8AndSize(*holder, size);
  return *text != nullptr;
}

// An int attribute in [lo, hi], or false.
bool IntAttr(PyObject* o, PyObject* name, long long lo, unsigned long long hi, uint64_t* out) {
  PyObject* v = PyObject_GetAttr(o, name);
  bool ok = v != nullptr && PyLong_CheckExact(v);
  if (ok) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow > 0 && lo >= 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(v);
      ok = !PyErr_Occurred() && u <= hi;
      *out = u;
    } else {
      ok = overflow == 0 && !PyErr_Occurred() && x >= lo &&
           (x < 0 || static_cast<unsigned long long>(x) <= hi);
      *out = static_cast<uint64_t>(x);
    }
  }
  Py_XDECREF(v);
  return ok;
}

// Stub.bls_frame: the binary "bls" frame of `request` (bls_frames.h), header and payload chunks,
// when its fields and inputs are the common case; else None.
PyObject* EncodeBls(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!Called(nargs, 4, "encode_bls(request, decoupled, tag, pool)")) return nullptr;
  PyObject* request = args[0];
  const int decoupled = PyObject_IsTrue(args[1]);
  const long long tag = PyLong_AsLongLong(args[2]);
  const bool pool = args[3] != Py_None;
  if (decoupled < 0 || PyErr_Occurred() || Py_TYPE(request) != g.request) return FallBack();
  PyObject *name_h = nullptr, *id_h = nullptr, *params_h = nullptr, *corr = nullptr,
           *requested = nullptr, *inputs = nullptr, *trace = nullptr, *chunks = nullptr;
  const char *name, *id, *params, *text = "";
  Py_ssize_t name_size = 0, id_size = 0, params_size = 0, text_size = 0;
  uint64_t flags = 0, version = 0, timeout = 0, correlation = 0;
  int64_t parent = -1;
  bool ok = Utf8Attr(request, s_model_name, &name_h, &name, &name_size) &&
            Utf8Attr(request, s_id, &id_h, &id, &id_size) &&
            Utf8Attr(request, s_parameters, &params_h, &params, &params_size) &&
            IntAttr(request, s_flags, 0, UINT32_MAX, &flags) &&
            IntAttr(request, s_model_version, INT64_MIN, INT64_MAX, &version) &&
            IntAttr(request, s_timeout, 0, UINT64_MAX, &timeout);
  if (ok) {
    corr = PyObject_GetAttr(request, s_correlation_id);
    if (corr != nullptr && PyUnicode_CheckExact(corr)) {
      text = PyUnicode_AsUTF8AndSize(corr, &text_size);
      ok = text != nullptr;
    } else if (corr != nullptr && PyLong_CheckExact(corr)) {
      correlation = PyLong_AsUnsignedLongLong(corr);
      ok = !PyErr_Occurred();
    } else {
      ok = false;
    }
  }
  if (ok) {  // the traced request: its server id, when a plausible one (bls_frame's rule)
    trace = PyObject_GetAttr(request, s_trace);
    if (trace == nullptr) {
      PyErr_Clear();
    } else if (trace != Py_None) {
      PyObject* r = PyObject_GetAttr(trace, s_request);
      ok = r != nullptr;
      if (ok && PyLong_CheckExact(r)) {
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(r, &overflow);
        if (overflow == 0 && v >= 0) parent = v;
      }
      PyErr_Clear();
      Py_XDECREF(r);
    }
  }
  if (ok) {
    requested = PyObject_GetAttr(request, s_requested);
    inputs = PyObject_GetAttr(request, s_inputs);
    ok = requested != nullptr && inputs != nullptr && PyList_CheckExact(requested) &&
         PyList_CheckExact(inputs) && PyList_GET_SIZE(requested) <= UINT16_MAX &&
         PyList_GET_SIZE(inputs) <= UINT16_MAX && name_size <= UINT32_MAX &&
         id_size <= UINT32_MAX && params_size <= UINT32_MAX && text_size <= UINT32_MAX;
  }
  Head head;
  if (ok) {
    head.bytes.reserve(128 + static_cast<size_t>(name_size + id_size + params_size + text_size));
    head.Put(static_cast<uint8_t>(kBlsKind));
    head.Put(static_cast<uint8_t>(decoupled));
    head.bytes.append(2, '\0');
    head.Put(static_cast<uint32_t>(flags));
    head.Put(static_cast<int64_t>(tag));
    head.Put(static_cast<int64_t>(version));
    head.Put(static_cast<uint64_t>(timeout));
    head.Put(static_cast<uint64_t>(correlation));
    head.Put(parent);
    head.Put(static_cast<uint32_t>(name_size));
    head.Put(static_cast<uint32_t>(id_size));
    head.Put(static_cast<uint32_t>(text_size));
    head.Put(static_cast<uint32_t>(params_size));
    head.Put(static_cast<uint16_t>(PyList_GET_SIZE(requested)));
    head.Put(static_cast<uint16_t>(PyList_GET_SIZE(inputs)));
    head.bytes.append(name, static_cast<size_t>(name_size));
    head.bytes.append(id, static_cast<size_t>(id_size));
    head.bytes.append(text, static_cast<size_t>(text_size));
    head.bytes.append(params, static_cast<size_t>(params_size));
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(requested); ++i) {
      PyObject* r = PyList_GET_ITEM(requested, i);
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_CheckExact(r) ? PyUnicode_AsUTF8AndSize(r, &size) : nullptr;
      ok = utf8 != nullptr && size <= UINT16_MAX;
      if (ok) {
        head.Put(static_cast<uint16_t>(size));
        head.bytes.append(utf8, static_cast<size_t>(size));
      }
    }
  }
  if (ok) {
    chunks = PyList_New(0);
    ok = chunks != nullptr;
  }
  uint64_t offset = 0;
  for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(inputs); ++i) {
    PyObject* t = Py_NewRef(PyList_GET_ITEM(inputs, i));
    ok = EncodeTensor(t, pool, &head, chunks, &offset) &&
         PyList_GET_SIZE(inputs) > i;  // getattr ran no code that shrank the list under us
    Py_DECREF(t);
  }
  PyObject* out = nullptr;
  if (ok) {
    PyObject* bytes =
        PyBytes_FromStringAndSize(head.bytes.data(), static_cast<Py_ssize_t>(head.bytes.size()));
    if (bytes != nullptr) {
      out = PyTuple_Pack(2, bytes, chunks);
      Py_DECREF(bytes);
    }
  }
  Py_XDECREF(name_h);
  Py_XDECREF(id_h);
  Py_XDECREF(params_h);
  Py_XDECREF(corr);
  Py_XDECREF(requested);
  Py_XDECREF(inputs);
  Py_XDECREF(trace);
  Py_XDECREF(chunks);
  return out != nullptr ? out : FallBack();
}

// Stub.bls_response without an error: the InferenceResponse of a binary BLS answer `raw` whose
// `count` outputs follow its head and `message_size` bytes, their arrays views of `payload` (at
// `base` in the pool, or None); None for anything else (BYTES outputs among them).
PyObject* MakeResponse(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!Called(nargs, 5, "make_response(raw, payload, base, count, message_size)")) return nullptr;
  PyObject* payload = args[1];
  PyObject* base = args[2];
  const long long count = PyLong_AsLongLong(args[3]);
  const long long message_size = PyLong_AsLongLong(args[4]);
  if (PyErr_Occurred() || count < 0 || message_size < 0 ||
      (base != Py_None && !PyLong_Check(base))) {
    return FallBack();
  }
  Buffer raw, pay;
  if (!raw.Get(args[0], false) || !pay.Get(payload, true)) return FallBack();
  PyObject* keeper =
      PyByteArray_Check(payload) ? PyMemoryView_FromObject(payload) : Py_NewRef(payload);
  PyObject* outputs = keeper != nullptr ? PyList_New(count) : nullptr;
  bool ok = outputs != nullptr;
  Py_ssize_t pos = kAnswerHead + static_cast<Py_ssize_t>(message_size);
  uint64_t offset = 0;
  for (long long i = 0; ok && i < count; ++i) {
    uint16_t name_size = 0;
    uint8_t code = 0, dims = 0;
    uint64_t nbytes = 0;
    ok = ReadAt(raw, pos, &name_size) && ReadAt(raw, pos + 2, &code) &&
         ReadAt(raw, pos + 3, &dims) && ReadAt(raw, pos + 4, &nbytes);
    PyObject* t = ok ? MakeTensorAt(raw, pos + kOutHead, name_size, code, dims, offset, keeper, pay,
                                    base, &pos)
                     : nullptr;
    ok = t != nullptr;
    if (ok) PyList_SET_ITEM(outputs, i, t);
    offset += nbytes;
  }
  PyObject* r = ok ? NewInstance(g.response) : nullptr;
  ok = r != nullptr;
  for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(g.response_items); ++i) {
    PyObject* item = PyTuple_GET_ITEM(g.response_items, i);
    ok = PyObject_SetAttr(r, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1)) == 0;
  }
  if (ok) {
    ok = SetAttr(r, s_outputs, outputs);
    outputs = nullptr;
  }
  Py_XDECREF(outputs);
  Py_XDECREF(keeper);
  if (!ok) {
    Py_XDECREF(r);
    return FallBack();
  }
  return r;
}

bool Pairs(PyObject* items) {  // a tuple of (str, value)
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items); ++i) {
    PyObject* item = PyTuple_GET_ITEM(items, i);
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(item, 0))) {
      PyErr_SetString(PyExc_ValueError, "attribute items are (name, value) pairs");
      return false;
    }
  }
  return true;
}

void Keep(PyObject** slot, PyObject* value) {
  Py_INCREF(value);
  Py_XSETREF(*slot, value);
}

PyObject* Setup(PyObject*, PyObject* args) {
  PyObject *tensor, *request, *response, *request_items, *response_items, *in_types, *out_dtypes,
      *out_codes;
  if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!", &PyType_Type, &tensor, &PyType_Type, &request,
                        &PyType_Type, &response, &PyTuple_Type, &request_items, &PyTuple_Type,
                        &response_items, &PyTuple_Type, &in_types, &PyTuple_Type, &out_dtypes,
                        &PyTuple_Type, &out_codes)) {
    return nullptr;
  }
  if (PyTuple_GET_SIZE(out_dtypes) != PyTuple_GET_SIZE(out_codes)) {
    PyErr_SetString(PyExc_ValueError, "one code per output dtype");
    return nullptr;
  }
  if (!Pairs(request_items) || !Pairs(response_items)) return nullptr;
  Keep(reinterpret_cast<PyObject**>(&g.tensor), tensor);
  Keep(reinterpret_cast<PyObject**>(&g.request), request);
  Keep(reinterpret_cast<PyObject**>(&g.response), response);
  Keep(&g.request_items, request_items);
  Keep(&g.response_items, response_items);
  Keep(&g.in_types, in_types);
  Keep(&g.out_dtypes, out_dtypes);
  Keep(&g.out_codes, out_codes);
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"setup", Setup, METH_VARARGS,
     "setup(Tensor, InferenceRequest, InferenceResponse, request_items, response_items, in_types, "
     "out_dtypes, out_codes)"},
    {"make_requests", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(MakeRequests)),
     METH_FASTCALL, "The requests of a binary execute header, or None."},
    {"encode_responses",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(EncodeResponses)), METH_FASTCALL,
     "(result header, payload chunks) of execute's result, or None."},
    {"encode_bls", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(EncodeBls)),
     METH_FASTCALL, "(header, payload chunks) of a BLS call's frame, or None."},
    {"make_response", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(MakeResponse)),
     METH_FASTCALL, "The InferenceResponse of a BLS answer without error, or None."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_nereid_stub_accel",
                       "The Python stub's per-request frame work in C.", -1, kMethods};

}  // namespace

PyMODINIT_FUNC PyInit__nereid_stub_accel() {
  // Another numpy than the one built against (an EXECUTION_ENV_PATH's) raises RuntimeError or
  // ImportError here, and prints nothing: the stub sees an ImportError and runs its Python code.
  if (_import_array() < 0) {
    PyErr_Clear();
    PyErr_SetString(PyExc_ImportError,
                    "_nereid_stub_accel: numpy is not the version it was built against");
    return nullptr;
  }
  g_no_args = PyTuple_New(0);
  if (g_no_args == nullptr) return nullptr;
  struct {
    PyObject** slot;
    const char* text;
  } names[] = {{&s_name, "_name"},
               {&s_array, "_array"},
               {&s_shm, "_shm"},
               {&s_id, "_id"},
               {&s_correlation_id, "_correlation_id"},
               {&s_inputs, "_inputs"},
               {&s_requested, "_requested"},
               {&s_flags, "_flags"},
               {&s_parameters, "_parameters"},
               {&s_index, "_index"},
               {&s_model_name, "_model_name"},
               {&s_model_version, "_model_version"},
               {&s_timeout, "_timeout"},
               {&s_trace, "_trace"},
               {&s_request, "_request"},
               {&s_release_flags, "_release_flags"},
               {&s_error, "_error"},
               {&s_outputs, "_outputs"},
               {&s_empty, ""}};
  for (auto& n : names) {
    *n.slot = PyUnicode_InternFromString(n.text);
    if (*n.slot == nullptr) return nullptr;
  }
  PyObject* m = PyModule_Create(&kModule);
  if (m == nullptr) return nullptr;
  PyModule_AddIntConstant(m, "EXEC_HEAD", kExecHead);
  PyModule_AddIntConstant(m, "REQ_HEAD", kReqHead);
  PyModule_AddIntConstant(m, "IN_HEAD", kInHead);
  PyModule_AddIntConstant(m, "RESULT_HEAD", kResultHead);
  PyModule_AddIntConstant(m, "RESP_HEAD", kRespHead);
  PyModule_AddIntConstant(m, "PLACED", kPlaced);
  PyModule_AddIntConstant(m, "BLS_HEAD", kBlsHead);
  PyModule_AddIntConstant(m, "ANSWER_HEAD", kAnswerHead);
  PyModule_AddIntConstant(m, "OUT_HEAD", kOutHead);
  return m;
}
