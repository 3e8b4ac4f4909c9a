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
// This file is the module: setup's tables, the interned names and PyInit. The functions are in
// stub_accel_decode.cc (make_requests, make_response) and stub_accel_encode.cc
// (encode_responses, encode_bls); stub_accel.h holds what they share.
//
// Built without sanitizers (the stub runs Debian's uninstrumented python3), for the interpreter
// and numpy it was compiled against: another one's import fails and the stub runs its Python path.
#define NEREID_STUB_ACCEL_IMPORTS_NUMPY
#include "stub_accel.h"

namespace nereid_stub_accel {

Tables g;
PyObject *s_name, *s_array, *s_shm, *s_id, *s_correlation_id, *s_inputs, *s_requested, *s_flags,
    *s_parameters, *s_index, *s_model_name, *s_model_version, *s_timeout, *s_trace, *s_request,
    *s_release_flags, *s_error, *s_outputs, *s_empty;
PyObject* g_no_args = nullptr;

namespace {

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
}  // namespace nereid_stub_accel

using namespace nereid_stub_accel;  // NOLINT: the module init below

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
