"""The stub's side of the binary BLS frames (resources/nereid_python_stub.py, bls_frames.h): what
a "bls" frame holds and where each input goes (its place in the shared-memory pool, or the
payload), and how an answer becomes an InferenceResponse. Run by ctest (python_stub_frames)."""

import os
import socket
import struct
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "resources"))

import numpy as np  # noqa: E402

import nereid_python_stub as stub_mod  # noqa: E402
import nereid_stub_frames as frames  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402

POOL = 1 << 20


def parse_bls(header):
    """The fields and inputs of a "bls" header, read as bls_frames.cc reads it."""
    fields = frames._BLS_HEAD.unpack_from(header)
    (kind, decoupled, flags, tag, version, timeout, correlation, parent, name_size, id_size,
     text_size, params_size, n_requested, n_inputs) = fields
    pos = frames._BLS_HEAD.size
    strings = []
    for size in (name_size, id_size, text_size, params_size):
        strings.append(header[pos:pos + size].decode())
        pos += size
    requested = []
    for _ in range(n_requested):
        (size,) = frames._U16.unpack_from(header, pos)
        requested.append(header[pos + 2:pos + 2 + size].decode())
        pos += 2 + size
    inputs = []
    for _ in range(n_inputs):
        size, code, dims, place, offset, nbytes = frames._PLACED.unpack_from(header, pos)
        pos += frames._PLACED.size
        name = header[pos:pos + size].decode()
        pos += size
        shape = list(frames._DIMS[dims].unpack_from(header, pos))
        pos += 8 * dims
        inputs.append({"name": name, "code": code, "place": place, "offset": offset,
                       "size": nbytes, "shape": shape})
    assert pos == len(header)
    return {"kind": kind, "decoupled": decoupled, "flags": flags, "tag": tag, "version": version,
            "timeout": timeout, "correlation": correlation, "parent": parent, "strings": strings,
            "requested": requested, "inputs": inputs}


class BlsFrames(unittest.TestCase):
    def setUp(self):
        self.server, stub_end = socket.socketpair()
        self.shm = os.memfd_create("stub-frames-test")
        os.ftruncate(self.shm, POOL)
        self.channel = frames.Channel(stub_end.detach(), self.shm)
        self.stub = stub_mod.Stub(self.channel, "")
        self.pool = self.channel.pool.block(0, POOL, POOL)  # mapped, as by a first frame
        pb_utils._stub = self.stub

    def tearDown(self):
        pb_utils._stub = None
        self.channel.sock.close()
        self.server.close()
        os.close(self.shm)

    def test_inputs_in_the_pool_go_by_their_place_others_by_their_bytes(self):
        sent = pb_utils.Tensor._trusted("SENT", np.frombuffer(self.pool[64:128], np.float32))
        sent._shm = 64  # as make_requests and bls_response mark what the server sent
        big = np.frombuffer(self.pool[4096:4096 + 4 * 70000], np.float32)
        tensors = [sent,
                   pb_utils.Tensor("RENAMED", big),  # a large view: found by its address
                   pb_utils.Tensor("SMALL", big[:16]),  # small: copying costs less
                   pb_utils.Tensor("DERIVED", big * 2),
                   pb_utils.Tensor("S", np.array([b"ab", b""], dtype=np.object_))]
        request = pb_utils.InferenceRequest(
            model_name="m", inputs=tensors, requested_output_names=["O1", "O2"],
            correlation_id="seq", parameters={"k": 1}, timeout=5, flags=2, request_id="r")
        header, chunks = self.stub.bls_frame(request, True, 9)
        frame = parse_bls(header)
        self.assertEqual((frame["kind"], frame["decoupled"], frame["flags"], frame["tag"],
                          frame["version"], frame["timeout"], frame["correlation"]),
                         (frames._BLS, 1, 2, 9, -1, 5, 0))
        self.assertEqual(frame["strings"], ["m", "r", "seq", '{"k": 1}'])
        self.assertEqual(frame["requested"], ["O1", "O2"])
        places = [(i["name"], i["place"], i["offset"], i["size"]) for i in frame["inputs"]]
        self.assertEqual(places, [("SENT", 1, 64, 64), ("RENAMED", 1, 4096, 280000),
                                  ("SMALL", 0, 0, 64), ("DERIVED", 0, 64, 280000),
                                  ("S", 0, 280064, 10)])
        self.assertEqual(frame["inputs"][4]["code"], 13)
        payload = b"".join(bytes(c) for c in chunks)
        self.assertEqual(payload[:64], big[:16].tobytes())
        self.assertEqual(payload[64:280064], (big * 2).tobytes())
        self.assertEqual(payload[280064:], b"\x02\x00\x00\x00ab\x00\x00\x00\x00")

    def test_an_integer_correlation_id_and_no_pool(self):
        self.channel.pool = None  # a stub without a pool sends every input's bytes
        t = pb_utils.Tensor("A", np.arange(20000, dtype=np.int64))
        header, chunks = self.stub.bls_frame(
            pb_utils.InferenceRequest(model_name="m", inputs=[t], correlation_id=7), False, 1)
        frame = parse_bls(header)
        self.assertEqual(frame["correlation"], 7)
        self.assertEqual(frame["parent"], -1)  # no trace=
        self.assertEqual(frame["strings"], ["m", "", "", "{}"])
        self.assertEqual(frame["inputs"][0]["place"], 0)
        self.assertEqual(b"".join(bytes(c) for c in chunks), t.as_numpy().tobytes())

    def test_the_parent_request_is_the_trace_given(self):
        """trace=request.trace() names the request given to execute() (its index), so the server
        traces the call as that request's child; without a traced request, -1."""
        traced = pb_utils.InferenceRequest._from_server("r", 0, [], [], 0, "caller", "{}", 5)
        cases = [(traced.trace(), 5), (None, -1), (pb_utils.InferenceTrace(), -1),
                 (pb_utils.InferenceRequest(model_name="x").trace(), -1),
                 (pb_utils.InferenceTrace(1 << 70), -1), (pb_utils.InferenceTrace("5"), -1)]
        for trace, parent in cases:
            request = pb_utils.InferenceRequest(model_name="m", trace=trace)
            header, _ = self.stub.bls_frame(request, False, 1)
            self.assertEqual(parse_bls(header)["parent"], parent, trace)
        # A request given to execute() has no trace= of its own: sent as it is, no parent.
        header, _ = self.stub.bls_frame(traced, False, 1)
        self.assertEqual(parse_bls(header)["parent"], -1)

    def test_outputs_in_the_pool_go_by_their_place(self):
        sent = pb_utils.Tensor._trusted("IN", np.frombuffer(self.pool[128:192], np.float32))
        sent._shm = 128
        big = np.frombuffer(self.pool[8192:8192 + 4 * 70000], np.float32)
        response = pb_utils.InferenceResponse(
            [pb_utils.Tensor("A", np.arange(4, dtype=np.int32)), sent,
             pb_utils.Tensor("BIG", big)])
        parts, chunks = [], []
        end = stub_mod.encode_binary_response(response, self.channel.pool, parts, chunks, 100)
        header = b"".join(parts)
        has_error, _, count, _ = frames._RESP_HEAD.unpack_from(header)
        self.assertEqual((has_error, count), (0, 3))
        pos = frames._RESP_HEAD.size
        places = []
        for _ in range(count):
            size, _, dims, place, offset, nbytes = frames._PLACED.unpack_from(header, pos)
            pos += frames._PLACED.size
            places.append((header[pos:pos + size].decode(), place, offset, nbytes))
            pos += size + 8 * dims
        self.assertEqual(places, [("A", 0, 100, 16), ("IN", 1, 128, 64),
                                  ("BIG", 1, 8192, 280000)])
        self.assertEqual(end, 116)  # only A's bytes are in the payload
        self.assertEqual(b"".join(bytes(c) for c in chunks),
                         np.arange(4, dtype=np.int32).tobytes())

    def answer(self, tag, outputs=(), error=None, final=1, in_pool=True):
        """An answer as stub_questions.cc writes it; outputs' bytes at pool offset 512."""
        message = error[1].encode() if error else b""
        body = b""
        data = b""
        for name, code, shape, raw in outputs:
            body += frames._OUT_HEAD.pack(len(name), code, len(shape), len(raw)) + \
                name.encode() + frames._DIMS[len(shape)].pack(*shape)
            data += raw
        head = frames._ANSWER_HEAD.pack(frames._BLS_ANSWER, final, error is not None,
                                          error[0] if error else 0, len(outputs), len(message),
                                          tag, 512 if in_pool else 0, len(data) if in_pool else 0,
                                          POOL if in_pool else 0)
        header = head + message + body
        if in_pool:
            self.pool[512:512 + len(data)] = data
            data = b""
        self.server.sendall(frames._HEADER.pack(len(header), len(data)) + header + data)

    def test_an_answer_becomes_a_response_whose_tensors_know_their_place(self):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        strings = pb_utils.serialize_byte_tensor(np.array([b"hi", b""], dtype=np.object_))
        self.answer(3, [("X", 11, [2, 3], x.tobytes()), ("S", 13, [2], strings.tobytes())])
        response, final = self.stub.bls_response(*self.channel.read(3))
        self.assertTrue(final)
        self.assertFalse(response.has_error())
        out_x, out_s = response.output_tensors()
        np.testing.assert_array_equal(out_x.as_numpy(), x)
        self.assertEqual(out_x._shm, 512)
        self.assertEqual(list(out_s.as_numpy()), [b"hi", b""])
        self.assertIsNone(out_s._shm)  # BYTES: encoded again when passed on
        self.answer(4, [("X", 11, [2, 3], x.tobytes())], final=0, in_pool=False)
        response, final = self.stub.bls_response(*self.channel.read(4))
        self.assertFalse(final)
        np.testing.assert_array_equal(response.output_tensors()[0].as_numpy(), x)
        self.assertIsNone(response.output_tensors()[0]._shm)  # on the socket: not in the pool

    def test_an_error_answer(self):
        self.answer(5, error=(2, "Request for unknown model: 'nope' is not found"))
        response, final = self.stub.bls_response(*self.channel.read(5))
        self.assertTrue(final)
        self.assertTrue(response.has_error())
        self.assertEqual(response.error().code(), pb_utils.TritonError.NOT_FOUND)
        self.assertEqual(response.error().message(),
                         "Request for unknown model: 'nope' is not found")
        self.assertEqual(response.output_tensors(), [])

    def test_answers_are_filed_by_tag(self):
        self.answer(8, [("X", 8, [1], struct.pack("<i", 8))], in_pool=False)
        self.answer(7, [("X", 8, [1], struct.pack("<i", 7))], in_pool=False)
        for tag in (7, 8):
            response, _ = self.stub.bls_response(*self.channel.read(tag))
            self.assertEqual(int(response.output_tensors()[0].as_numpy()[0]), tag)


if __name__ == "__main__":
    unittest.main()
