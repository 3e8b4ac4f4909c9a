// _nereid_stub_accel's writing side (ADR 0022): the binary result of execute's return
// (Stub.encode_result's loop) and a BLS call's frame (Stub.bls_frame), for the common case.
// Anything else: None.
#include "stub_accel.h"

namespace nereid_stub_accel {
namespace {

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

}  // namespace

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

}  // namespace nereid_stub_accel
