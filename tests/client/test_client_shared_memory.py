"""The system shared memory extension through Triton's own client and its
tritonclient.utils.shared_memory helpers (pure Python: multiprocessing.shared_memory, no C library),
over HTTP and gRPC, sync and asyncio (issue 19, REFERENCE-2.md §11): register / status / unregister
with Triton's texts, inputs read from and outputs written into regions (FP32 and BYTES, mixed with
ordinary tensors, through the dynamic and sequence batchers), the CUDA API answered as Triton's
CPU-only build, and every bad input of the issue and of Triton's L0_shared_memory: disabled by
default, invalid and reserved keys, register twice, ranges past the object, 64-bit overflow,
negative values, an object truncated after registration, unknown regions, an output region too
small, unregister during inference.
"""

import asyncio
import json
import mmap
import os
import re
import threading
import time

import numpy as np
import pytest
import requests

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients, grpcclient,
                            httpclient, module_of)
from helpers import repo

import tritonclient.utils.shared_memory as shm  # noqa: E402  (client_support put it on the path)
from tritonclient.utils import deserialize_bytes_tensor, serialize_byte_tensor  # noqa: E402

LENIENT = ["--exit-on-error=false", "--strict-readiness=false"]
PAGE = mmap.PAGESIZE
DISABLED = ("Client shared memory is disabled. Start the server with '--allow-client-shm=true' "
            "to enable.")


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("examples"), repo("fixtures", "features"), repo("fixtures", "batching"),
                    repo("fixtures", "sequence")],
                   flags=LENIENT + ["--allow-client-shm=true"], name="client-shm").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


@pytest.fixture(scope="module")
def disabled():
    s = GrpcServer([repo("examples")], name="client-shm-disabled").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


_counter = [0]


class Region:
    """A client-side shm object (Triton's helper) that is unregistered and destroyed afterwards."""

    def __init__(self, byte_size, key=None):
        _counter[0] += 1
        self.name = f"r{os.getpid()}_{_counter[0]}"
        self.key = key or f"/nereid_client_shm_{os.getpid()}_{_counter[0]}"
        self.byte_size = byte_size
        self.handle = shm.create_shared_memory_region(self.name, self.key, byte_size)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shm.destroy_shared_memory_region(self.handle)


def unregister_all(server):
    for _, c in clients(server):
        c.unregister_system_shared_memory()


def own_client(name, server):
    """A client of its own, for a request sent from another thread."""
    return module_of(name).InferenceServerClient(
        f"127.0.0.1:{server.port}" if name == "http" else server.target())


def error_of(fn, *args, **kwargs):
    with pytest.raises(InferenceServerException) as e:
        fn(*args, **kwargs)
    return e.value


def status_names(name, c):
    st = c.get_system_shared_memory_status()
    if name == "http":
        return sorted(r["name"] for r in st)
    return sorted(st.regions.keys())


def wait_until_unlisted(name, c, region, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while region in status_names(name, c):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# --- control API ---------------------------------------------------------------------------------


def test_disabled_by_default_but_status_answers(disabled):
    with Region(64) as r:
        for name, c in clients(disabled):
            e = error_of(c.register_system_shared_memory, r.name, r.key, 64)
            assert e.message() == DISABLED, (name, e.message())
            assert e.status() == ("501" if name == "http" else "StatusCode.UNIMPLEMENTED")
            assert error_of(c.unregister_system_shared_memory).message() == DISABLED
            assert error_of(c.register_cuda_shared_memory, "c", b"x" * 64, 0, 64).message() == \
                DISABLED
            assert status_names(name, c) == []
            # A request naming a region finds none.
            inp = module_of(name).InferInput("INPUT0", [1, 4], "FP32")
            inp.set_shared_memory(r.name, 16)
            e = error_of(c.infer, "identity_fp32", [inp])
            assert e.message() == f"Unable to find shared memory region: '{r.name}'"


def test_extensions_are_listed(server):
    for name, c in clients(server):
        md = c.get_server_metadata()
        extensions = md["extensions"] if name == "http" else list(md.extensions)
        assert "system_shared_memory" in extensions and "cuda_shared_memory" in extensions


def test_register_status_unregister(server):
    with Region(2 * PAGE) as r:
        for name, c in clients(server):
            c.register_system_shared_memory(r.name, r.key, PAGE, offset=PAGE)
            st = c.get_system_shared_memory_status(r.name)
            if name == "http":
                assert st == [{"name": r.name, "key": r.key, "offset": PAGE, "byte_size": PAGE}]
            else:
                row = st.regions[r.name]
                assert (row.name, row.key, row.offset, row.byte_size) == \
                    (r.name, r.key, PAGE, PAGE)
            e = error_of(c.register_system_shared_memory, r.name, r.key, PAGE)
            assert e.message() == f"shared memory region '{r.name}' already in manager"
            if name == "grpc":
                assert e.status() == "StatusCode.ALREADY_EXISTS"
            c.register_system_shared_memory(r.name + "b", r.key, PAGE)
            assert status_names(name, c) == [r.name, r.name + "b"]
            c.unregister_system_shared_memory("no_such_region")  # unknown names succeed
            c.unregister_system_shared_memory(r.name)
            assert status_names(name, c) == [r.name + "b"]
            e = error_of(c.get_system_shared_memory_status, r.name)
            assert e.message() == f"Unable to find system shared memory region: '{r.name}'"
            assert e.status() == ("404" if name == "http" else "StatusCode.NOT_FOUND")
            c.unregister_system_shared_memory()  # all
            assert status_names(name, c) == []


def test_invalid_and_reserved_keys(server):
    for name, c in clients(server):
        for key in ["/", "///"]:
            e = error_of(c.register_system_shared_memory, "r", key, 8)
            assert e.message() == f"cannot register shared memory region 'r' - invalid shm key " \
                f"'{key}'", (name, e.message())
        key = "/triton_python_backend_shm_region_0123"
        e = error_of(c.register_system_shared_memory, "r", key, 8)
        assert e.message() == (
            f"cannot register shared memory region 'r' with key '{key}' as the key contains the "
            "reserved prefix 'triton_python_backend_shm_region_'")
        for key in ["/nereid_no_such_object", "/../../etc/passwd"]:
            e = error_of(c.register_system_shared_memory, "r", key, 8)
            assert e.message() == f"Unable to open shared memory region: '{key}'"
        assert status_names(name, c) == []


def test_register_out_of_bounds_overflow_and_alignment(server):
    with Region(2 * PAGE) as r:
        for name, c in clients(server):
            past = f"failed to register shared memory region '{r.name}': invalid args"
            assert error_of(c.register_system_shared_memory, r.name, r.key,
                            2 * PAGE + 1).message() == past
            assert error_of(c.register_system_shared_memory, r.name, r.key, PAGE,
                            offset=PAGE + 1).message() == past
            # offset + byte_size wraps around 2^64
            assert error_of(c.register_system_shared_memory, r.name, r.key, 16,
                            offset=2**64 - 8).message() == past
            e = error_of(c.register_system_shared_memory, r.name, r.key, 16, offset=8)
            assert e.message() == (f"failed to register shared memory region '{r.name}': unable "
                                   "to process address spaceInvalid argument")
            assert status_names(name, c) == []


def test_register_body_errors_over_http(server):
    base = f"http://127.0.0.1:{server.port}/v2/systemsharedmemory"
    cases = [({"byte_size": 8}, 400, "Shared memory register request has no 'key' field"),
             ({"key": "/k"}, 400, "Shared memory register request has no 'byte_size' field"),
             ({"key": "/k", "byte_size": -1}, 400,  # Triton: 500 (ADR 0002 item 6)
              "attempt to access JSON non-unsigned-integer as unsigned-integer")]
    for body, code, text in cases:
        r = requests.post(f"{base}/region/r/register", data=json.dumps(body))
        assert (r.status_code, r.json()) == (code, {"error": text})
    r = requests.post(f"{base}/register", data=json.dumps({"key": "/k", "byte_size": 8}))
    assert r.json() == {"error": "'region name' is necessary to register system shared memory "
                                 "region"}
    assert requests.get(f"{base}/region/r/register").status_code == 405
    assert requests.post(f"{base}/status").status_code == 405


def test_cuda_api_answers_as_a_cpu_build(server):
    with Region(64) as r:
        for name, c in clients(server):
            c.register_system_shared_memory(r.name, r.key, 64)
            st = c.get_cuda_shared_memory_status()
            assert (st == []) if name == "http" else (len(st.regions) == 0)
            e = error_of(c.get_cuda_shared_memory_status, "c")
            assert e.message() == "Unable to find cuda shared memory region: 'c'"
            e = error_of(c.get_cuda_shared_memory_status, r.name)
            assert e.message() == (f"The region named '{r.name}' is registered as system shared "
                                   "memory, not CUDA shared memory")
            e = error_of(c.register_cuda_shared_memory, "c", b"\0" * 64, 0, 64)
            assert e.message() == "failed to register CUDA shared memory region: 'c', GPUs not " \
                "supported"
            c.unregister_cuda_shared_memory()
            c.unregister_cuda_shared_memory(r.name)  # the system region is untouched
            assert status_names(name, c) == [r.name]
            c.unregister_system_shared_memory()


def test_restricted_category_applies(server):
    flags = LENIENT + ["--allow-client-shm=true", "--http-restricted-api=shared-memory:k=v",
                       "--grpc-restricted-protocol=shared-memory:k=v"]
    with GrpcServer([repo("examples")], flags=flags, name="client-shm-restricted") as s:
        for name, c in clients(s):
            e = error_of(c.get_system_shared_memory_status)
            assert e.message() == ("This API is restricted, expecting header 'k'" if name == "http"
                                   else "This protocol is restricted, expecting header "
                                   "'triton-grpc-protocol-k'")
            e = error_of(c.register_system_shared_memory, "r", "/k", 8)
            assert "is restricted" in e.message()
            st = c.get_system_shared_memory_status(headers={"k": "v"} if name == "http" else
                                                   {"triton-grpc-protocol-k": "v"})
            assert len(st if name == "http" else st.regions) == 0


# --- inference -----------------------------------------------------------------------------------


def identity_shm(module, r, n, in_offset=0, out_offset=None):
    inp = module.InferInput("INPUT0", [1, n], "FP32")
    inp.set_shared_memory(r.name, 4 * n, offset=in_offset)
    out = module.InferRequestedOutput("OUTPUT0")
    out.set_shared_memory(r.name, 4 * n, offset=(4 * n if out_offset is None else out_offset))
    return [inp], [out]


def test_identity_in_and_out_of_shared_memory(server):
    n = 1024
    with Region(8 * n) as r:
        data = np.random.default_rng(1).random((1, n), dtype=np.float32)
        shm.set_shared_memory_region(r.handle, [data])
        for name, c in clients(server):
            module = module_of(name)
            c.register_system_shared_memory(r.name, r.key, r.byte_size)
            shm.set_shared_memory_region(r.handle, [np.zeros((1, n), np.float32)], offset=4 * n)
            inputs, outputs = identity_shm(module, r, n)
            result = c.infer("identity_fp32", inputs, outputs=outputs)
            got = shm.get_contents_as_numpy(r.handle, np.float32, [1, n], offset=4 * n)
            np.testing.assert_array_equal(got, data)
            entry = result.get_output("OUTPUT0")
            if name == "http":
                assert entry == {"name": "OUTPUT0", "datatype": "FP32", "shape": [1, n]}
            else:
                assert (entry.name, entry.datatype, list(entry.shape)) == ("OUTPUT0", "FP32",
                                                                          [1, n])
                assert not entry.HasField("contents")
            c.unregister_system_shared_memory(r.name)


def test_ensemble_reads_and_writes_shared_memory(server):
    """mlp_pipeline (identity -> mlp_fp32 -> identity) with its input and output in one region: the
    ensemble's reply lands in the region, equal to mlp_fp32 called directly."""
    data = np.random.default_rng(7).random((2, 256), dtype=np.float32)
    in_bytes, out_bytes = data.nbytes, 2 * 16 * 4
    with Region(in_bytes + out_bytes) as r:
        shm.set_shared_memory_region(r.handle, [data])
        for name, c in clients(server):
            module = module_of(name)
            direct_in = module.InferInput("INPUT0", [2, 256], "FP32")
            direct_in.set_data_from_numpy(data)
            expected = c.infer("mlp_fp32", [direct_in]).as_numpy("OUTPUT0")
            c.register_system_shared_memory(r.name, r.key, r.byte_size)
            shm.set_shared_memory_region(r.handle, [np.zeros((2, 16), np.float32)],
                                         offset=in_bytes)
            inp = module.InferInput("INPUT", [2, 256], "FP32")
            inp.set_shared_memory(r.name, in_bytes)
            out = module.InferRequestedOutput("OUTPUT")
            out.set_shared_memory(r.name, out_bytes, offset=in_bytes)
            result = c.infer("mlp_pipeline", [inp], outputs=[out])
            got = shm.get_contents_as_numpy(r.handle, np.float32, [2, 16], offset=in_bytes)
            np.testing.assert_allclose(got, expected, rtol=1e-6)
            entry = result.get_output("OUTPUT")  # metadata only: the data is in the region
            if name == "http":
                assert entry == {"name": "OUTPUT", "datatype": "FP32", "shape": [2, 16]}
            else:
                assert (entry.name, list(entry.shape)) == ("OUTPUT", [2, 16])
                assert not entry.HasField("contents")
            c.unregister_system_shared_memory(r.name)


def test_identity_with_asyncio_clients(server):
    n = 256

    async def run():
        with Region(8 * n) as r:
            data = np.arange(n, dtype=np.float32).reshape(1, n)
            shm.set_shared_memory_region(r.handle, [data])
            for name, c in aio_clients(server):
                module = module_of(name)
                try:
                    await c.register_system_shared_memory(r.name, r.key, r.byte_size)
                    inputs, outputs = identity_shm(module, r, n)
                    await c.infer("identity_fp32", inputs, outputs=outputs)
                    got = shm.get_contents_as_numpy(r.handle, np.float32, [1, n], offset=4 * n)
                    np.testing.assert_array_equal(got, data)
                    await c.unregister_system_shared_memory(r.name)
                finally:
                    await c.close()
    asyncio.run(run())


def test_large_page_aligned_register_offset(server):
    # Triton's L0_shared_memory: a region 1023 pages into a 1024-page object.
    with Region(1024 * PAGE) as r:
        data = np.arange(PAGE // 8, dtype=np.float32).reshape(1, -1)
        n = data.shape[1]
        shm.set_shared_memory_region(r.handle, [data], offset=1023 * PAGE)
        for name, c in clients(server):
            c.register_system_shared_memory(r.name, r.key, PAGE, offset=1023 * PAGE)
            inputs, outputs = identity_shm(module_of(name), r, n)  # output at region offset 4n
            c.infer("identity_fp32", inputs, outputs=outputs)
            got = shm.get_contents_as_numpy(r.handle, np.float32, [1, n],
                                            offset=1023 * PAGE + 4 * n)
            np.testing.assert_array_equal(got, data)
            c.unregister_system_shared_memory(r.name)


def test_mixed_shared_memory_and_ordinary_tensors(server):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    with Region(128) as r:
        shm.set_shared_memory_region(r.handle, [a])
        for name, c in clients(server):
            module = module_of(name)
            c.register_system_shared_memory(r.name, r.key, 128)
            in0 = module.InferInput("INPUT0", [1, 16], "INT32")
            in0.set_shared_memory(r.name, 64)
            in1 = module.InferInput("INPUT1", [1, 16], "INT32")
            in1.set_data_from_numpy(b)
            out0 = module.InferRequestedOutput("OUTPUT0")
            out0.set_shared_memory(r.name, 64, offset=64)
            out1 = module.InferRequestedOutput("OUTPUT1")
            result = c.infer("simple", [in0, in1], outputs=[out0, out1])
            np.testing.assert_array_equal(
                shm.get_contents_as_numpy(r.handle, np.int32, [1, 16], offset=64), a + b)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
            c.unregister_system_shared_memory(r.name)


def test_bytes_tensors_in_shared_memory(server):
    a = np.array([str(i).encode() for i in range(16)], dtype=np.object_).reshape(1, 16)
    b = np.array([b"1"] * 16, dtype=np.object_).reshape(1, 16)
    sa, sb = serialize_byte_tensor(a), serialize_byte_tensor(b)
    size_a, size_b = len(sa.item()), len(sb.item())
    with Region(4096) as r:
        shm.set_shared_memory_region(r.handle, [sa, sb])
        for name, c in clients(server):
            module = module_of(name)
            c.register_system_shared_memory(r.name, r.key, 4096)
            in0 = module.InferInput("INPUT0", [1, 16], "BYTES")
            in0.set_shared_memory(r.name, size_a)
            in1 = module.InferInput("INPUT1", [1, 16], "BYTES")
            in1.set_shared_memory(r.name, size_b, offset=size_a)
            out0 = module.InferRequestedOutput("OUTPUT0")
            out0.set_shared_memory(r.name, 1024, offset=1024)  # over-allocated, as BYTES needs
            result = c.infer("simple_string", [in0, in1], outputs=[out0])
            got = shm.get_contents_as_numpy(r.handle, np.object_, [1, 16], offset=1024)
            assert [int(x) for x in got.flatten()] == [i + 1 for i in range(16)]
            assert result.get_output("OUTPUT0") is not None
            c.unregister_system_shared_memory(r.name)
    assert deserialize_bytes_tensor(sa.item()).shape == (16,)


def test_dynamic_batcher_gathers_inputs_from_the_mapping(server):
    n, count = 4, 4
    with Region(2 * count * 4 * n) as r:
        datas = [np.full((1, n), i + 1, dtype=np.float32) for i in range(count)]
        shm.set_shared_memory_region(r.handle, datas)
        for name, c in clients(server):
            module = module_of(name)
            c.register_system_shared_memory(r.name, r.key, r.byte_size)
            before = c.get_inference_statistics("db_delay")
            errors = []

            def one(i):
                try:
                    inp = module.InferInput("INPUT0", [1, n], "FP32")
                    inp.set_shared_memory(r.name, 4 * n, offset=i * 4 * n)
                    out = module.InferRequestedOutput("OUTPUT0")
                    out.set_shared_memory(r.name, 4 * n, offset=(count + i) * 4 * n)
                    own_client(name, server).infer("db_delay", [inp], outputs=[out])
                except Exception as e:  # noqa: BLE001
                    errors.append(e)
            threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, errors
            for i in range(count):
                got = shm.get_contents_as_numpy(r.handle, np.float32, [1, n],
                                                offset=(count + i) * 4 * n)
                np.testing.assert_array_equal(got, 2 * datas[i])  # db_delay doubles its input
            after = c.get_inference_statistics("db_delay")
            if name == "http":
                execs = after["model_stats"][0]["execution_count"] - \
                    before["model_stats"][0]["execution_count"]
            else:
                execs = after.model_stats[0].execution_count - \
                    before.model_stats[0].execution_count
            assert execs < count, f"{execs} executions for {count} requests: no batch was formed"
            c.unregister_system_shared_memory(r.name)


def test_sequence_batcher_reads_inputs_from_the_mapping(server):
    values = [3, 4, 5]
    with Region(64) as r:
        shm.set_shared_memory_region(r.handle, [np.array([[v]], dtype=np.int32) for v in values])
        for seq, (name, c) in enumerate(clients(server), start=100):
            module = module_of(name)
            c.register_system_shared_memory(r.name, r.key, 64)
            plain = []
            for i, v in enumerate(values):
                inp = module.InferInput("INPUT", [1, 1], "INT32")
                inp.set_data_from_numpy(np.array([[v]], dtype=np.int32))
                plain.append(int(c.infer("seq_accum", [inp], sequence_id=seq + 50,
                                         sequence_start=(i == 0),
                                         sequence_end=(i == len(values) - 1))
                             .as_numpy("OUTPUT")[0][0]))
            got = []
            for i in range(len(values)):
                inp = module.InferInput("INPUT", [1, 1], "INT32")
                inp.set_shared_memory(r.name, 4, offset=4 * i)
                out = module.InferRequestedOutput("OUTPUT")
                out.set_shared_memory(r.name, 4, offset=32 + 4 * i)
                c.infer("seq_accum", [inp], outputs=[out], sequence_id=seq,
                        sequence_start=(i == 0), sequence_end=(i == len(values) - 1))
                got.append(int(shm.get_contents_as_numpy(r.handle, np.int32, [1],
                                                         offset=32 + 4 * i)[0]))
            assert got == plain, (name, got, plain)
            assert len(set(plain)) == len(plain)  # the state really accumulated
            c.unregister_system_shared_memory(r.name)


# --- bad inference input -------------------------------------------------------------------------


def test_inference_range_errors(server):
    with Region(64) as r:
        for name, c in clients(server):
            module = module_of(name)
            c.register_system_shared_memory(r.name, r.key, 64)

            def infer_error(region, size, offset=0, model_n=4):
                inp = module.InferInput("INPUT0", [1, model_n], "FP32")
                inp.set_shared_memory(region, size, offset=offset)
                return error_of(c.infer, "identity_fp32", [inp]).message()

            assert infer_error("nope", 16) == "Unable to find shared memory region: 'nope'"
            assert infer_error(r.name, 16, offset=64) == \
                f"Invalid offset for shared memory region: '{r.name}'"
            assert infer_error(r.name, 16, offset=56) == \
                f"Invalid offset + byte size for shared memory region: '{r.name}'"
            assert infer_error(r.name, 2**63 - 1, offset=8) == \
                f"Invalid offset + byte size for shared memory region: '{r.name}'"
            if name == "http":  # not an unsigned JSON integer: Triton's HTTP parse error
                for key, size, offset in [("offset", 16, -1), ("byte_size", -1, 0)]:
                    assert infer_error(r.name, size, offset=offset) == (
                        f"Unable to parse 'shared_memory_{key}': attempt to access JSON "
                        "non-unsigned-integer as unsigned-integer")
            else:  # gRPC int64: the unsigned number it encodes, then refused
                assert infer_error(r.name, 16, offset=-1) == \
                    f"Invalid offset for shared memory region: '{r.name}'"
                assert infer_error(r.name, -1) == \
                    f"Invalid offset + byte size for shared memory region: '{r.name}'"
            assert "input byte size mismatch for input 'INPUT0' for model 'identity_fp32'. " \
                "Expected 16, got 32" in infer_error(r.name, 32)
            c.unregister_system_shared_memory(r.name)


def test_integer_overflow_over_http(server):
    # gRPC's int64 cannot carry 2^64 - 8; HTTP's unsigned JSON integers can.
    with Region(64) as r:
        c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
        c.register_system_shared_memory(r.name, r.key, 64)
        inp = httpclient.InferInput("INPUT0", [1, 4], "FP32")
        inp.set_shared_memory(r.name, 2**64 - 8, offset=16)
        e = error_of(c.infer, "identity_fp32", [inp])
        assert e.message() == (
            "Integer overflow detected: byte_size (18446744073709551608) + offset (16) exceeds "
            f"maximum value (18446744073709551615) for region '{r.name}'")
        c.unregister_system_shared_memory(r.name)


def test_output_region_too_small(server):
    with Region(64) as r:
        for name, c in clients(server):
            module = module_of(name)
            c.register_system_shared_memory(r.name, r.key, 64)
            inp = module.InferInput("INPUT0", [1, 8], "FP32")
            inp.set_shared_memory(r.name, 32)
            out = module.InferRequestedOutput("OUTPUT0")
            out.set_shared_memory(r.name, 16, offset=32)
            e = error_of(c.infer, "identity_fp32", [inp], outputs=[out])
            assert e.message() == ("shared memory size specified with the request for output "
                                   "'OUTPUT0' (16 bytes) should be at least 32 bytes to hold the "
                                   "results"), e.message()
            assert e.status() == ("500" if name == "http" else "StatusCode.INTERNAL")
            c.unregister_system_shared_memory(r.name)


def test_one_source_per_tensor_and_output_conflicts_over_http(server):
    url = f"http://127.0.0.1:{server.port}/v2/models/identity_fp32/infer"
    shm_params = {"shared_memory_region": "r", "shared_memory_byte_size": 16}
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4],
                        "data": [1, 2, 3, 4], "parameters": shm_params}]}
    r = requests.post(url, data=json.dumps(body))
    assert r.json()["error"] == (
        "Input must set only one of the following fields: 'data', 'binary_data_size' in "
        "'parameters', 'shared_memory_region' in 'parameters'. But set 'data' "
        "'shared_memory_region'")
    for extra, text in [({"classification": 1}, "'classification'"),
                        ({"binary_data": True}, "'binary_data'")]:
        body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4],
                            "data": [1, 2, 3, 4]}],
                "outputs": [{"name": "OUTPUT0", "parameters": {**shm_params, **extra}}]}
        r = requests.post(url, data=json.dumps(body))
        assert r.json()["error"] == f"Output can't set both 'shared_memory_region' and {text}"


def test_grpc_contents_with_shared_memory_is_refused(server):
    c = grpcclient.InferenceServerClient(server.target())
    inp = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
    inp.set_data_from_numpy(np.ones((1, 4), np.float32))
    inp.set_shared_memory("r", 16)  # the client drops the raw data...
    inp._input.contents.fp32_contents.extend([1, 2, 3, 4])  # ...so put typed contents back
    e = error_of(c.infer, "identity_fp32", [inp])
    assert e.message() == ("unexpected 'content' provided when using shared memory for input "
                           "tensor 'INPUT0' for model 'identity_fp32'")


def test_truncated_object_does_not_crash_the_server(server):
    with Region(4 * PAGE) as r:
        for name, c in clients(server):
            module = module_of(name)
            c.register_system_shared_memory(r.name, r.key, 4 * PAGE)
            fd = os.open("/dev/shm" + r.key, os.O_RDWR)
            try:
                os.ftruncate(fd, PAGE)
                n = PAGE // 4
                inp = module.InferInput("INPUT0", [1, n], "FP32")
                inp.set_shared_memory(r.name, 4 * n, offset=2 * PAGE)
                e = error_of(c.infer, "identity_fp32", [inp])
                assert e.message() == (f"Invalid shared memory region: '{r.name}' is smaller "
                                       "than when it was registered")
                out = module.InferRequestedOutput("OUTPUT0")
                out.set_shared_memory(r.name, 4 * n, offset=3 * PAGE)
                ok_in = module.InferInput("INPUT0", [1, n], "FP32")
                ok_in.set_shared_memory(r.name, 4 * n)
                e = error_of(c.infer, "identity_fp32", [ok_in], outputs=[out])
                assert "is smaller than when it was registered" in e.message()
                # What is still backed keeps working.
                result = c.infer("identity_fp32", [ok_in])
                assert result.as_numpy("OUTPUT0").shape == (1, n)
            finally:
                os.ftruncate(fd, 4 * PAGE)
                os.close(fd)
            c.unregister_system_shared_memory(r.name)
            assert c.is_server_live()


def wait_for_queued(server, model, count, longest):
    """Until `count` requests of `model` wait in its queue (nv_inference_pending_request_count),
    or for `longest` seconds: a request run on the connection's I/O thread is never queued, and
    it may keep the requests of other connections of that thread unread meanwhile, so the count
    is a hint, not a promise (a fixed 0.15 s once came before the last request did, under ASan)."""
    deadline = time.monotonic() + longest
    pattern = re.compile(rf'^nv_inference_pending_request_count{{model="{model}",version="1"}} '
                         r'(\S+)$', re.M)
    while time.monotonic() < deadline:
        m = pattern.search(requests.get(server.metrics_url(), timeout=10).text)
        if m and float(m.group(1)) >= count:
            return
        time.sleep(0.01)


def test_unregister_during_inference(server):
    with Region(64) as r:
        for name, c in clients(server):
            module = module_of(name)
            values = [1.5, 2.5, 3.5]
            shm.set_shared_memory_region(r.handle, [np.array(values, dtype=np.float32)])
            c.register_system_shared_memory(r.name, r.key, 64)
            errors = []
            done = []
            # Each thread connects (its client is its own: the HTTP one is bound to its thread)
            # before any sends, so that the requests reach the server together.
            connected = threading.Barrier(len(values) + 1)

            def one(i):
                try:
                    sender = own_client(name, server)
                    assert sender.is_server_live()
                    connected.wait(30)
                    inp = module.InferInput("INPUT0", [1], "FP32")
                    inp.set_shared_memory(r.name, 4, offset=4 * i)
                    out = module.InferRequestedOutput("OUTPUT0")
                    out.set_shared_memory(r.name, 4, offset=32 + 4 * i)
                    sender.infer("slow_identity", [inp], outputs=[out])
                    sender.close()
                    done.append(i)
                except Exception as e:  # noqa: BLE001
                    errors.append((i, str(e)))
            threads = [threading.Thread(target=one, args=(i,)) for i in range(len(values))]
            for t in threads:
                t.start()
            connected.wait(30)
            # Three ~0.3 s executions on one instance: unregister once all are in the server (one
            # runs, two wait) while they are still in flight.
            wait_for_queued(server, "slow_identity", len(values) - 1, 0.45)
            c.unregister_system_shared_memory(r.name)
            listed_while_running = status_names(name, c)
            for t in threads:
                t.join()
            # A request still unread when the region went (its connection's I/O thread may be
            # running another one inline) gets the clean "not found"; the others their output.
            late = [i for i, e in errors if "Unable to find shared memory region" in e]
            assert len(late) == len(errors), errors
            assert done, errors
            assert r.name in listed_while_running, listed_while_running
            out = shm.get_contents_as_numpy(r.handle, np.float32, [3], offset=32)
            for i in done:
                assert out[i] == values[i], (i, out)
            # Released by the last request: the server drops a request's reference after it has
            # sent the reply, so the reply can reach the client a moment before the release.
            assert wait_until_unlisted(name, c, r.name), status_names(name, c)
            # Its name is free again.
            c.register_system_shared_memory(r.name, r.key, 64)
            c.unregister_system_shared_memory(r.name)
