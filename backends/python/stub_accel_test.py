"""The stub's C part (stub_accel.cc, ADR 0022) against the stub's Python code: the requests built
from an execute frame and the result frame encoded from execute's return are the same either way,
the C part takes the common case, and returns None (the Python code runs) for everything else.
Run by ctest (python_stub_accel) with NEREID_STUB_ACCEL_DIR set to the build's python/ directory,
where the module was built."""

import os
import socket
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "resources"), HERE]
ACCEL_DIR = os.environ.get("NEREID_STUB_ACCEL_DIR")
if ACCEL_DIR:
    sys.path.insert(1, ACCEL_DIR)  # the module; the stub's code is the source tree's

import numpy as np  # noqa: E402

import nereid_python_stub as stub_mod  # noqa: E402
import nereid_stub_frames as frames  # noqa: E402
import stub_frames_test  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402

POOL = 1 << 20
CODES = {np.dtype(np.bool_): 1, np.dtype(np.uint8): 2, np.dtype(np.int32): 8,
         np.dtype(np.int64): 9, np.dtype(np.float16): 10, np.dtype(np.float32): 11}


def execute_header(requests, first=0, count=None):
    """A binary execute header as stub_protocol.cc's EncodeExecute writes it. `requests`: dicts
    of flags, correlation (int or str), id, parameters, requested, inputs [(name, code, shape,
    offset, nbytes)]."""
    head = frames._EXEC_HEAD.pack(frames._EXECUTE, 0, 0, 0, first,
                                  len(requests) if count is None else count)
    out = bytearray(head)
    for r in requests:
        corr = r.get("correlation", 0)
        corr_text = corr.encode() if isinstance(corr, str) else b""
        rid = r.get("id", "").encode()
        params = r.get("parameters", "{}").encode()
        requested = r.get("requested", [])
        inputs = r.get("inputs", [])
        out += frames._REQ_HEAD.pack(r.get("flags", 0), corr if isinstance(corr, int) else 0,
                                     len(corr_text), len(rid), len(params), len(requested),
                                     len(inputs))
        out += corr_text + rid + params
        for name in requested:
            out += frames._U16.pack(len(name.encode())) + name.encode()
        for name, code, shape, offset, nbytes in inputs:
            raw_name = name if isinstance(name, bytes) else name.encode()
            out += frames._IN_HEAD.pack(len(raw_name), code, len(shape), offset, nbytes)
            out += raw_name + b"".join(int(d).to_bytes(8, "little", signed=True) for d in shape)
    return out


def describe(requests):
    """Everything model.py can see of `requests`, comparable with ==."""
    out = []
    for r in requests:
        fields = {k: v for k, v in vars(r).items() if k != "_inputs"}
        tensors = []
        for t in r._inputs:
            a = t._array
            tensors.append((type(t), sorted(vars(t)), t._name, t._shm, a.dtype, a.shape,
                            a.tolist() if a.dtype == object else a.tobytes(),
                            a.__array_interface__["data"][0], a.flags.c_contiguous,
                            a.flags.writeable, a.flags.aligned, a.flags.owndata))
        out.append((type(r), fields, tensors))
    return out


class _Holder:
    """describe()'s view of a response's outputs: a request-like holder of tensors."""

    def __init__(self, tensors):
        self._inputs = tensors


@unittest.skipUnless(ACCEL_DIR, "NEREID_STUB_ACCEL_DIR is not set (ctest sets it)")
class BlsFramesWithTheCPart(stub_frames_test.BlsFrames):
    """stub_frames_test's BLS frame tests, run with the C part loaded (it takes their common
    cases and leaves them the rest)."""

    def setUp(self):
        super().setUp()
        self.assertIsNotNone(frames.accel, "_nereid_stub_accel did not load from " + ACCEL_DIR)


@unittest.skipUnless(ACCEL_DIR, "NEREID_STUB_ACCEL_DIR is not set (ctest sets it)")
class StubAccel(unittest.TestCase):
    def setUp(self):
        self.assertIsNotNone(frames.accel, "_nereid_stub_accel did not load from " + ACCEL_DIR)
        self.accel = frames.accel
        self.server, stub_end = socket.socketpair()
        self.shm = os.memfd_create("stub-accel-test")
        os.ftruncate(self.shm, POOL)
        self.channel = frames.Channel(stub_end.detach(), self.shm)
        self.stub = stub_mod.Stub(self.channel, "")
        self.stub.model_name = "m"
        self.pool = self.channel.pool.block(0, POOL, POOL)

    def tearDown(self):
        frames.accel = self.accel
        self.channel.sock.close()
        self.server.close()
        os.close(self.shm)

    def both(self, fn):
        """fn() with the C part, then with the Python code."""
        frames.accel = self.accel
        c = fn()
        frames.accel = None
        try:
            return c, fn()
        finally:
            frames.accel = self.accel

    def build(self, raw, payload, base):
        msg = {"raw": raw, "base": base, "first_request": frames._EXEC_HEAD.unpack_from(raw)[4],
               "count": frames._EXEC_HEAD.unpack_from(raw)[5]}
        return self.stub.make_requests(msg, payload)

    # make_requests

    def test_requests_in_the_pool_are_built_as_the_python_code_builds_them(self):
        x = np.arange(8, dtype=np.float32).reshape(2, 4)
        y = np.array([[1, -2, 3]], dtype=np.int64)
        self.pool[4096:4096 + 32] = x.tobytes()
        self.pool[4096 + 64:4096 + 88] = y.tobytes()
        raw = execute_header([
            {"flags": 3, "correlation": "seq-é", "id": "req-1", "parameters": '{"k":1}',
             "requested": ["OUT0", "OUT1"],
             "inputs": [("INPUT0", 11, [2, 4], 0, 32), ("Ї", 9, [1, 3], 64, 24)]},
            {"correlation": 2 ** 64 - 1, "inputs": [("INPUT0", 11, [0, 4], 32, 0)]},
        ], first=40)
        payload = self.channel.pool.block(4096, 128, POOL)
        c, py = self.both(lambda: self.build(raw, payload, 4096))
        self.assertEqual(describe(c), describe(py))
        self.assertEqual(c[0]._index, 40)
        self.assertEqual(c[1]._index, 41)
        self.assertEqual(c[0]._model_name, "m")
        self.assertEqual(c[0]._inputs[1]._shm, 4096 + 64)
        np.testing.assert_array_equal(c[0]._inputs[0].as_numpy(), x)
        np.testing.assert_array_equal(c[0]._inputs[1].as_numpy(), y)
        self.assertEqual(c[0].trace()._request, 40)
        # Each path made its own objects.
        self.assertIsNot(c[0], py[0])

    def test_the_c_part_builds_the_common_case_itself(self):
        raw = execute_header([{"inputs": [("INPUT0", 11, [1, 16], 0, 64)]}])
        made = self.accel.make_requests(raw, self.channel.pool.block(0, 64, POOL), 0, 0, 1, "m")
        self.assertIsInstance(made, list)
        self.assertIsInstance(made[0], pb_utils.InferenceRequest)
        self.assertIsInstance(made[0]._inputs[0], pb_utils.Tensor)

    def test_a_payload_outside_the_pool_is_viewed_and_kept_from_resizing(self):
        data = bytearray(np.array([1, 0, 1], dtype=np.bool_).tobytes() + bytes(5) +
                         np.array([7, 8], dtype=np.int32).tobytes())
        raw = execute_header([{"inputs": [("B", 1, [3], 0, 3), ("I", 8, [2], 8, 8)]}])
        c, py = self.both(lambda: self.build(raw, data, None))
        self.assertEqual(describe(c), describe(py))
        self.assertIsNone(c[0]._inputs[0]._shm)
        with self.assertRaises(BufferError):  # as with the Python code's memoryview
            data.extend(b"x")
        self.assertEqual(c[0]._inputs[1].as_numpy().tolist(), [7, 8])

    def test_what_the_c_part_leaves_to_the_python_code(self):
        bytes_input = execute_header([{"inputs": [("S", 13, [1], 0, 7)]}])
        beyond = execute_header([{"inputs": [("X", 11, [1, 16], 0, 64)]}])  # 8 bytes there
        many_dims = execute_header([{"inputs": [("X", 11, [1] * 33, 0, 4)]}])
        bad_name = execute_header([{"inputs": [(b"\xff\xfe", 11, [1], 0, 4)]}])
        short = execute_header([{"inputs": [("X", 11, [1], 0, 4)]}])[:-3]
        payload = bytearray(bytes(4) + b"abc")
        for raw in (bytes_input, beyond, many_dims, bad_name, short):
            self.assertIsNone(self.accel.make_requests(raw, payload, None, 0, 1, "m"), raw)
        # The Python code then builds the BYTES input, or raises numpy's or struct's error.
        frames.accel = self.accel
        (s,) = self.build(bytes_input, bytearray(b"\x03\0\0\0abc"), None)
        self.assertEqual(s._inputs[0].as_numpy().tolist(), [b"abc"])
        for raw in (beyond, many_dims, bad_name, short):
            with self.assertRaises(Exception):
                self.build(raw, bytearray(8), None)

    # encode_responses

    def encode(self, requests, result):
        self.stub.collected = {}
        return self.stub.encode_result({}, requests, result)

    def requests(self, n, first=0):
        raw = execute_header([{"inputs": [("IN", 11, [1, 4], 16 * i, 16)]} for i in range(n)],
                             first=first)
        self.pool[0:16 * n] = np.arange(4 * n, dtype=np.float32).tobytes()
        frames.accel = None
        try:
            return self.build(raw, self.channel.pool.block(0, 16 * n, POOL), 0)
        finally:
            frames.accel = self.accel

    def test_results_are_encoded_as_the_python_code_encodes_them(self):
        requests = self.requests(3)
        result = [
            pb_utils.InferenceResponse([
                pb_utils.Tensor("F", np.arange(6, dtype=np.float32).reshape(2, 3)),
                pb_utils.Tensor("I", np.array([[5]], dtype=np.int64)),
                pb_utils.Tensor("B", np.array([True, False])),
                pb_utils.Tensor("H", np.ones((1, 2, 2), dtype=np.float16)),
                pb_utils.Tensor("E", np.zeros((0, 3), dtype=np.uint8)),
                pb_utils.Tensor("S", np.array(4, dtype=np.int32)),
            ]),
            pb_utils.InferenceResponse([requests[1]._inputs[0]]),  # the input itself: by place
            pb_utils.InferenceResponse([]),
        ]
        c, py = self.both(lambda: self.encode(requests, result))
        self.assertEqual(c[0], py[0])
        self.assertEqual([bytes(x) for x in c[1]], [bytes(x) for x in py[1]])
        self.assertIsNotNone(self.accel.encode_responses(requests, result, self.channel.pool))
        # The input passed back is named by its place in the pool, not copied.
        self.assertEqual(len(c[1]), 6)

    def test_without_a_pool_a_tensor_the_server_sent_goes_by_its_bytes(self):
        requests = self.requests(1)
        result = [pb_utils.InferenceResponse([requests[0]._inputs[0]])]
        encoded = self.accel.encode_responses(requests, result, None)
        frames.accel = None
        parts, chunks = [], []
        stub_mod.encode_binary_response(result[0], None, parts, chunks, 0)
        self.assertEqual(encoded[0], frames._RESULT_HEAD.pack(frames._RESULT, 1) + b"".join(parts))
        self.assertEqual([bytes(x) for x in encoded[1]], [bytes(x) for x in chunks])

    def test_what_the_encoder_leaves_to_the_python_code(self):
        requests = self.requests(1)
        t = pb_utils.Tensor._trusted  # no checks: arrays Tensor() would refuse or copy

        class Sub(pb_utils.InferenceResponse):
            pass

        rescheduled = self.requests(1)
        rescheduled[0].set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
        cases = [
            (requests, [pb_utils.InferenceResponse(error=pb_utils.TritonError("no"))]),
            (requests, [pb_utils.InferenceResponse([pb_utils.Tensor(
                "S", np.array([b"ab"], dtype=np.object_))])]),
            (requests, [pb_utils.InferenceResponse([t("T", np.arange(6.0).reshape(2, 3).T)])]),
            (requests, [pb_utils.InferenceResponse([t("BE", np.arange(3, dtype=">i4"))])]),
            (requests, [pb_utils.InferenceResponse([t("C", np.ones(2, np.complex64))])]),
            (requests, [pb_utils.InferenceResponse([pb_utils.Tensor(
                "BIG", np.zeros(20000, np.float32))])]),
            (requests, [Sub([pb_utils.Tensor("X", np.ones(1, np.float32))])]),
            (requests, [None]),
            (requests, [np.ones(1)]),
            (rescheduled, [None]),
        ]
        for reqs, result in cases:
            self.assertIsNone(self.accel.encode_responses(reqs, result, self.channel.pool),
                              result)
            c, py = self.both(lambda: self.outcome(reqs, result))
            if c[0] == "raised" or isinstance(c[0], dict):  # an error: the same text
                self.assertEqual(c, py)
            else:
                self.assertEqual(c[0], py[0])
                self.assertEqual([bytes(x) for x in c[1]], [bytes(x) for x in py[1]])

    def outcome(self, requests, result):
        try:
            return self.encode(requests, result)
        except Exception as e:  # noqa: BLE001 (compared between the two paths)
            return "raised", type(e), str(e)

    def test_a_bad_output_has_the_python_codes_error(self):
        requests = self.requests(1)
        bad = pb_utils.InferenceResponse([])
        bad._outputs = [np.ones(1)]  # not a Tensor
        with self.assertRaises(AttributeError):
            self.encode(requests, [bad])

    # encode_bls and make_response (a BLS call)

    answer = stub_frames_test.BlsFrames.answer  # an answer as stub_questions.cc writes it

    def test_bls_frames_are_encoded_as_the_python_code_encodes_them(self):
        (caller,) = self.requests(1, first=7)
        sent = caller._inputs[0]  # in the pool: by its place
        cases = [
            (pb_utils.InferenceRequest(model_name="m", inputs=[sent], requested_output_names=[
                "O1", "Ö2"], correlation_id="seq-1", request_id="r", timeout=5, flags=3,
                parameters={"k": 1}, model_version=2, trace=caller.trace()), False),
            (pb_utils.InferenceRequest(model_name="m", inputs=[
                sent, pb_utils.Tensor("SMALL", np.arange(6, dtype=np.int16).reshape(2, 3)),
                pb_utils.Tensor("B", np.array([True]))], correlation_id=2 ** 64 - 1), True),
            (pb_utils.InferenceRequest(model_name="m", trace=pb_utils.InferenceTrace(1 << 70)),
             False),
            (pb_utils.InferenceRequest(model_name="m", trace=pb_utils.InferenceTrace("5")), False),
            (caller, False),  # a request given to execute(): no _trace, no parent
        ]
        for request, decoupled in cases:
            c = self.accel.encode_bls(request, decoupled, 9, self.channel.pool)
            self.assertIsNotNone(c, vars(request))
            frames.accel = None
            py = self.stub.bls_frame(request, decoupled, 9)
            frames.accel = self.accel
            self.assertEqual(c[0], py[0])
            self.assertEqual([bytes(x) for x in c[1]], [bytes(x) for x in py[1]])
        frame = stub_frames_test.parse_bls(self.accel.encode_bls(cases[0][0], False, 9,
                                                                 self.channel.pool)[0])
        self.assertEqual((frame["parent"], frame["correlation"], frame["version"]), (7, 0, 2))

    def test_what_the_bls_encoder_leaves_to_the_python_code(self):
        class Sub(pb_utils.InferenceRequest):
            pass

        big = pb_utils.InferenceRequest(model_name="m", inputs=[
            pb_utils.Tensor("BIG", np.zeros(20000, np.float32))])
        strings = pb_utils.InferenceRequest(model_name="m", inputs=[
            pb_utils.Tensor("S", np.array([b"x"], dtype=np.object_))])
        bad_flags = pb_utils.InferenceRequest(model_name="m")
        bad_flags._flags = 1 << 40
        bad_name = pb_utils.InferenceRequest(model_name="m", requested_output_names=["O"])
        bad_name._requested = [b"O"]
        for request in (big, strings, bad_flags, bad_name, Sub(model_name="m")):
            self.assertIsNone(self.accel.encode_bls(request, False, 1, self.channel.pool))
            c, py = self.both(lambda: self.bls_outcome(request))
            self.assertEqual(c, py)

    def bls_outcome(self, request):
        try:
            header, chunks = self.stub.bls_frame(request, False, 1)
            return header, [bytes(x) for x in chunks]
        except Exception as e:  # noqa: BLE001 (compared between the two paths)
            return "raised", type(e), str(e)

    def test_bls_answers_become_the_responses_the_python_code_makes(self):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        y = np.array([[7]], dtype=np.uint8)
        strings = pb_utils.serialize_byte_tensor(np.array([b"hi"], dtype=np.object_)).tobytes()
        answers = [
            ([("X", 11, [2, 3], x.tobytes()), ("Y", 2, [1, 1], y.tobytes())], True, True),
            ([("X", 11, [2, 3], x.tobytes())], False, True),  # on the socket
            ([], True, True),
            ([("S", 13, [1], strings)], True, False),  # BYTES: the Python code
        ]
        for tag, (outputs, in_pool, fast) in enumerate(answers, start=1):
            results = []
            for accel in (self.accel, None):
                frames.accel = accel
                self.answer(tag, outputs, final=tag % 2, in_pool=in_pool)
                msg, payload = self.channel.read(tag)
                if accel is not None:
                    head = msg["head"]
                    made = accel.make_response(msg["raw"], payload, msg["base"], head[4],
                                               head[5])
                    self.assertEqual(made is not None, fast, outputs)
                response, final = self.stub.bls_response(msg, payload)
                results.append((type(response), final, response._error, response._parameters,
                                sorted(vars(response)),
                                describe([_Holder(response.output_tensors())])))
            frames.accel = self.accel
            self.assertEqual(results[0][:5], results[1][:5])
            c_tensors, py_tensors = results[0][5][0][2], results[1][5][0][2]
            for a, b in zip(c_tensors, py_tensors, strict=True):
                # The same but for the address: each answer was written to the pool again.
                self.assertEqual(a[:7] + a[8:], b[:7] + b[8:])
        np.testing.assert_array_equal(
            self.stub.bls_response(*self.read_answer(9, [("X", 11, [2, 3], x.tobytes())]))[0]
            .output_tensors()[0].as_numpy(), x)

    def read_answer(self, tag, outputs):
        self.answer(tag, outputs)
        return self.channel.read(tag)

    def test_an_error_answer_is_left_to_the_python_code(self):
        self.answer(5, error=(2, "Request for unknown model: 'nope' is not found"))
        msg, payload = self.channel.read(5)
        head = msg["head"]
        self.assertIsNone(self.accel.make_response(msg["raw"], payload, msg["base"], head[4],
                                                   head[5]) if not head[2] else None)
        response, _ = self.stub.bls_response(msg, payload)
        self.assertEqual(response.error().message(),
                         "Request for unknown model: 'nope' is not found")

    def test_mutated_frames_are_declined_or_viewed_inside_their_payload(self):
        """Frames with random bytes changed or cut short (seeded): the C part never reads a
        header or makes an array outside what it was given; it builds requests or declines."""
        import random
        rng = random.Random(18)
        payload = bytearray(256)
        lo = np.frombuffer(payload, np.uint8).__array_interface__["data"][0]
        execute = execute_header([
            {"correlation": "c", "id": "r", "requested": ["O"],
             "inputs": [("A", 11, [2, 4], 0, 32), ("B", 9, [3], 32, 24)]},
            {"inputs": [("C", 2, [1, 7], 100, 7)]}])
        answer = (frames._ANSWER_HEAD.pack(frames._BLS_ANSWER, 1, 0, 0, 2, 0, 1, 0, 0, 0) +
                  frames._OUT_HEAD.pack(1, 11, 2, 32) + b"X" + frames._DIMS[2].pack(2, 4) +
                  frames._OUT_HEAD.pack(1, 9, 1, 24) + b"Y" + frames._DIMS[1].pack(3))

        def inside(tensors):
            for t in tensors:
                a = t._array
                at = a.__array_interface__["data"][0]
                self.assertTrue(lo <= at and at + a.nbytes <= lo + len(payload), t._name)

        made = 0
        for _ in range(20000):
            for frame in (execute, answer):
                mutated = bytearray(frame)
                for _ in range(rng.randint(1, 4)):
                    mutated[rng.randrange(len(mutated))] = rng.randrange(256)
                if rng.random() < 0.2:
                    mutated = mutated[:rng.randrange(len(mutated))]
                if frame is execute:
                    out = self.accel.make_requests(mutated, payload, None, 0, 2, "m")
                    for r in out or []:
                        inside(r._inputs)
                else:
                    out = self.accel.make_response(mutated, payload, None, 2, 0)
                    if out is not None:
                        inside(out._outputs)
                made += out is not None
        self.assertGreater(made, 0)  # some mutations keep a frame valid

    def test_the_layouts_agree_with_the_python_structs(self):
        self.assertEqual(
            (self.accel.EXEC_HEAD, self.accel.REQ_HEAD, self.accel.IN_HEAD,
             self.accel.RESULT_HEAD, self.accel.RESP_HEAD, self.accel.PLACED),
            (frames._EXEC_HEAD.size, frames._REQ_HEAD.size, frames._IN_HEAD.size,
             frames._RESULT_HEAD.size, frames._RESP_HEAD.size, frames._PLACED.size))
        self.assertEqual(
            (self.accel.BLS_HEAD, self.accel.ANSWER_HEAD, self.accel.OUT_HEAD),
            (frames._BLS_HEAD.size, frames._ANSWER_HEAD.size, frames._OUT_HEAD.size))

    def test_it_can_be_turned_off(self):
        env = dict(os.environ, NEREID_PYTHON_STUB_ACCEL="0")
        import subprocess
        code = ("import sys; sys.path[:0] = [%r, %r]; import nereid_stub_frames as f; "
                "print(f.accel is None)" % (ACCEL_DIR, os.path.join(HERE, "resources")))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        self.assertEqual(out.strip(), "True")


if __name__ == "__main__":
    unittest.main()
