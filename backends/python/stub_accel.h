// The parts of _nereid_stub_accel (stub_accel.cc, ADR 0022) its files share: the frame layouts,
// the tables setup() keeps, interned attribute names, a buffer view and the helpers every function
// uses. Included only by the module's own files (a CPython extension built apart from the server;
// backends/python/CMakeLists.txt).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
// One numpy C API table for the module's files; stub_accel.cc fills it (import_array).
#define PY_ARRAY_UNIQUE_SYMBOL nereid_stub_accel_numpy_api
#ifndef NEREID_STUB_ACCEL_IMPORTS_NUMPY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <cstdint>
#include <cstring>
#include <string>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the frames are little-endian");

namespace nereid_stub_accel {

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
extern Tables g;

// Attribute names, interned once (PyInit).
extern PyObject *s_name, *s_array, *s_shm, *s_id, *s_correlation_id, *s_inputs, *s_requested,
    *s_flags, *s_parameters, *s_index, *s_model_name, *s_model_version, *s_timeout, *s_trace,
    *s_request, *s_release_flags, *s_error, *s_outputs, *s_empty;
extern PyObject* g_no_args;  // ()

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
inline bool ReadAt(const Buffer& b, Py_ssize_t pos, T* out) {
  if (pos < 0 || pos + static_cast<Py_ssize_t>(sizeof(T)) > b.size()) return false;
  std::memcpy(out, b.data() + pos, sizeof(T));
  return true;
}

inline PyObject* Utf8(const Buffer& b, Py_ssize_t pos, Py_ssize_t size) {
  if (pos < 0 || size < 0 || pos + size > b.size()) return nullptr;
  return PyUnicode_DecodeUTF8(b.data() + pos, size, nullptr);
}

// A new instance of a pb_utils class without calling __init__ (object.__new__, which also sets up
// the instance's attribute storage).
inline PyObject* NewInstance(PyTypeObject* type) {
  return PyBaseObject_Type.tp_new(type, g_no_args, nullptr);
}

inline bool SetAttr(PyObject* o, PyObject* name, PyObject* value) {  // steals `value`
  if (value == nullptr) return false;
  const int rc = PyObject_SetAttr(o, name, value);
  Py_DECREF(value);
  return rc == 0;
}

inline PyObject* FallBack() {  // None: the caller's Python path does it (and raises what it raises)
  PyErr_Clear();
  Py_RETURN_NONE;
}

// Each function's start: `expected` arguments (else TypeError with `usage`), and setup() done.
inline bool Called(Py_ssize_t nargs, Py_ssize_t expected, const char* usage) {
  if (nargs != expected) {
    PyErr_SetString(PyExc_TypeError, usage);
    return false;
  }
  if (g.tensor != nullptr) return true;
  PyErr_SetString(PyExc_RuntimeError, "_nereid_stub_accel.setup was not called");
  return false;
}

// What the arrays of a frame keep alive: a memoryview of a bytearray payload (its export stops a
// resize under them), as np.ndarray(shape, dtype, memoryview(payload), offset) does; a pool
// block already is one. A new reference, or nullptr.
inline PyObject* Keeper(PyObject* payload) {
  return PyByteArray_Check(payload) ? PyMemoryView_FromObject(payload) : Py_NewRef(payload);
}

// The module's functions (METH_FASTCALL): stub_accel_decode.cc and stub_accel_encode.cc.
PyObject* MakeRequests(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* MakeResponse(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* EncodeResponses(PyObject*, PyObject* const* args, Py_ssize_t nargs);
PyObject* EncodeBls(PyObject*, PyObject* const* args, Py_ssize_t nargs);

}  // namespace nereid_stub_accel
