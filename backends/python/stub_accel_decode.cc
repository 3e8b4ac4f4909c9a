// _nereid_stub_accel's reading side (ADR 0022): the InferenceRequests of an execute frame
// (Stub.make_requests) and the InferenceResponse of a BLS answer without error
// (Stub.bls_response), their arrays numpy views of the frame's payload. Anything else: None.
#include "stub_accel.h"

namespace nereid_stub_accel {
namespace {

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

}  // namespace

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
  PyObject* keeper = Keeper(payload);
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
  PyObject* keeper = Keeper(payload);
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

}  // namespace nereid_stub_accel
