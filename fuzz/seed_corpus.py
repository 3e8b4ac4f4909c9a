#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora: OUT/<target>/<n>, one input per file.

The seeds are the request forms the unit and end-to-end tests send (every endpoint, JSON and
binary tensors, every datatype, parameters, chunked and compressed bodies, pipelining, repository
overrides, gRPC messages) plus every config.pbtxt the test-model generator writes (pass its
output folder as MODELS). The fuzzers start from these and mutate; their findings go under
docs/fuzzing.md.

    fuzz/seed_corpus.py OUT [MODELS]
"""

import base64
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def infer_bodies():
    """JSON inference request bodies: each datatype, shapes, parameters, outputs."""
    def inp(name, dt, shape, data, **extra):
        d = {"name": name, "datatype": dt, "shape": shape, "data": data}
        d.update(extra)
        return d
    bodies = [
        {"inputs": [inp("INPUT0", "INT32", [1, 16], list(range(16))),
                    inp("INPUT1", "INT32", [1, 16], [1] * 16)]},
        {"id": "r1", "inputs": [inp("INPUT0", "FP32", [1, 4], [1.5, -2, 3e-3, 4e10])],
         "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]},
        {"inputs": [inp("INPUT0", "BYTES", [2], ["abc", "\u00e9\u0000x"])],
         "parameters": {"binary_data_output": True}},
        {"inputs": [inp("INPUT0", "BOOL", [3], [True, False, True])]},
        {"inputs": [inp("INPUT0", "FP16", [1, 2, 2], [[1.0, 2.0], [65504.0, -0.0]])]},
        {"inputs": [inp("INPUT0", "UINT64", [2], [0, 18446744073709551615]),
                    inp("INPUT1", "INT8", [2], [-128, 127])]},
        {"inputs": [inp("INPUT0", "FP64", [2], [0.1, 1e-300])],
         "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 2}}]},
        {"inputs": [inp("INPUT0", "FP32", [1, 1], [1])],
         "parameters": {"sequence_id": 7, "sequence_start": True, "sequence_end": False,
                        "priority": 1, "timeout": 1000}},
        {"inputs": [inp("INPUT0", "FP32", [1, 1], [1])],
         "parameters": {"sequence_id": "corr-A", "sequence_end": True}},
        {"inputs": [inp("INPUT0", "UINT8", [4], [1, 2, 3, 4], parameters={"x": "y"})]},
    ]
    return [json.dumps(b).encode() for b in bodies]


def binary_requests():
    """(JSON header, binary tail) pairs of Triton's binary tensor data extension."""
    fp32 = struct.pack("<4f", 1, 2, 3, 4)
    header = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4],
                          "parameters": {"binary_data_size": len(fp32)}}],
              "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
    strings = struct.pack("<I", 3) + b"abc" + struct.pack("<I", 0)
    header2 = {"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [2],
                           "parameters": {"binary_data_size": len(strings)}}]}
    return [(json.dumps(header).encode(), fp32), (json.dumps(header2).encode(), strings)]


def http(method, path, body=b"", headers=()):
    head = [f"{method} {path} HTTP/1.1", "Host: localhost"] + list(headers)
    if body or method == "POST":
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(body):
    mid = len(body) // 2
    parts = [body[:mid], body[mid:]]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def http_requests():
    out = []
    for path in ["/v2/health/live", "/v2/health/ready", "/v2", "/v2/models/identity_fp32",
                 "/v2/models/identity_fp32/versions/1/ready", "/v2/models/identity_fp32/config",
                 "/v2/models/stats", "/v2/models/batched/versions/1/stats", "/metrics",
                 "/v2/models/no%2Fsuch/ready", "/v2/systemsharedmemory/status",
                 "/", "/?x=%3Cscript%3E"]:  # the status page (status_page.h)
        out.append(http("GET", path))
    fp32 = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}
    body = json.dumps(fp32).encode()
    out.append(http("POST", "/v2/models/identity_fp32/infer", body,
                    ["Content-Type: application/json"]))
    out.append(http("POST", "/v2/models/identity_fp32/versions/1/infer", gzip.compress(body),
                    ["Content-Encoding: gzip", "Accept-Encoding: gzip, deflate;q=0.5"]))
    out.append(http("POST", "/v2/models/identity_fp32/infer", zlib.compress(body),
                    ["Content-Encoding: deflate"]))
    out.append(("POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\n"
                "Transfer-Encoding: chunked\r\n\r\n").encode() + chunked(body))
    # RFC 9112 §6.3: Content-Length beside chunked is dropped, the connection closes after.
    out.append(("POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                "Transfer-Encoding: chunked\r\n\r\n").encode() + chunked(body)
               + http("GET", "/v2/health/live"))
    for header, tail in binary_requests():
        model = "identity_fp32" if b"FP32" in header else "identity_bytes"
        out.append(http("POST", f"/v2/models/{model}/infer", header + tail,
                        [f"Inference-Header-Content-Length: {len(header)}"]))
    out.append(http("POST", "/v2/models/identity_fp32/infer", struct.pack("<2f", 1, 2),
                    ["Inference-Header-Content-Length: 0",
                     "Content-Type: application/octet-stream"]))
    # A Content-Length of 64 KiB or more is read past the parser (http_session_body.h): whole,
    # followed by a pipelined request, and cut short by the end of the input.
    big = struct.pack("<16400f", *range(16400))
    out.append(http("POST", "/v2/models/identity_fp32/infer", big,
                    ["Inference-Header-Content-Length: 0"]) + http("GET", "/v2/health/live"))
    out.append(http("POST", "/v2/models/identity_fp32/infer", big,
                    ["Inference-Header-Content-Length: 0"])[:2000])
    ints = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 3],
                        "data": [1, 2, 3]}]}
    out.append(http("POST", "/v2/models/batched/infer", json.dumps(ints).encode()) * 3)
    seq = {"inputs": fp32["inputs"], "parameters": {"sequence_id": 5, "sequence_start": True}}
    out.append(http("POST", "/v2/models/sequence/infer", json.dumps(seq).encode()))
    strings = {"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [2],
                           "data": ["a", "bc"]}]}
    out.append(http("POST", "/v2/models/identity_bytes/infer", json.dumps(strings).encode(),
                    ["Expect: 100-continue", "Connection: keep-alive"]))
    out.append(http("POST", "/v2/repository/index", b'{"ready": true}'))
    for body in load_bodies():
        out.append(http("POST", "/v2/repository/models/identity_fp32/load", body))
    out.append(http("POST", "/v2/repository/models/identity_fp32/unload",
                    b'{"parameters": {"unload_dependents": true}}'))
    out.append(http("GET", "/v2/health/ready") + http("GET", "/v2/models/stats")
               + b"GET /v2 HTTP/1.0\r\n\r\n")
    return out


def load_bodies():
    config = json.dumps({"backend": "identity", "max_batch_size": 4,
                         "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
                         "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32",
                                     "dims": [-1]}]})
    keep = base64.b64encode(b"").decode()
    onnx = base64.b64encode(b"\x08\x07\x12\x04test").decode()
    return [b"", b"{}", json.dumps({"parameters": {"config": config}}).encode(),
            json.dumps({"parameters": {"config": config, "file:1/.keep": keep,
                                       "file:2/model.onnx": onnx}}).encode(),
            json.dumps({"parameters": {"config": "{}", "file:../escape": keep}}).encode(),
            b'{"ready": false}', b'{"parameters": {"unload_dependents": false}}']


GRPC_TEXT = [
    'model_name: "simple" inputs { name: "INPUT0" datatype: "INT32" shape: [1, 16] '
    'contents { int_contents: [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15] } } '
    'inputs { name: "INPUT1" datatype: "INT32" shape: [1, 16] '
    'contents { int_contents: [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] } } outputs { name: "OUTPUT0" }',
    'model_name: "strings" model_version: "1" id: "x" inputs { name: "INPUT0" datatype: "BYTES" '
    'shape: [2] contents { bytes_contents: ["ab", ""] } }',
    'model_name: "reshaped" inputs { name: "INPUT0" datatype: "FP16" shape: [1, 2, 2] } '
    'raw_input_contents: "\\000<\\000<\\000<\\000<" '
    'parameters { key: "sequence_id" value { int64_param: 3 } } '
    'parameters { key: "sequence_start" value { bool_param: true } }',
    'model_name: "simple" inputs { name: "INPUT0" datatype: "FP32" shape: [1] '
    'parameters { key: "p" value { string_param: "v" } } } '
    'raw_input_contents: "\\000\\000\\200?" '
    'outputs { name: "OUTPUT0" parameters { key: "classification" value { int64_param: 1 } } } '
    'parameters { key: "priority" value { uint64_param: 2 } } '
    'parameters { key: "timeout" value { double_param: 1.5 } }',
]


def grpc_messages():
    protoc = shutil.which("protoc")
    if protoc is None:
        return []
    out = []
    for text in GRPC_TEXT:
        r = subprocess.run([protoc, f"-I{ROOT}/proto", "--encode=inference.ModelInferRequest",
                            "grpc_service.proto"], input=text.encode(), capture_output=True,
                           check=True)
        out.append(r.stdout)
    return out


def settings():
    metrics = [b"counter_latencies=false\nhistogram_latencies=true",
               b"summary_latencies=true\nsummary_quantiles=0.5:0.05,0.9:0.01"]
    argv = [["--model-repository=/m", "--http-port=8000", "--backend-config=default-max-batch-size=8",
             "--backend-config=onnxruntime,x=1", "--metrics-config=summary_latencies=true",
             "--model-control-mode=explicit", "--load-model=a", "--exit-timeout-secs=5"],
            ["--model-store", "/m", "--grpc-port=0", "--grpc-keepalive-time=100",
             "--grpc-infer-response-compression-level=high", "--log-verbose=1",
             "--http-max-input-size=1024", "--model-control-mode=poll",
             "--repository-poll-secs=1", "--strict-readiness=false"],
            ["--model-repository=/m", "--http-restricted-api=health,metadata:k=v",
             "--http-restricted-api=inference:i=j", "--grpc-restricted-protocol=statistics:s=t",
             "--cache-config=local,size=1024", "--trace-config=level=TIMESTAMPS",
             "--trace-config=triton,log-frequency=5", "--host-policy=cpu,numa-node=0",
             "--rate-limit-resource=R:1:0", "--cuda-memory-pool-byte-size=0:1024",
             "--model-load-gpu-limit=0:0.5", "--metrics-config=summary_quantiles= 0.5:0.05x"]]
    return metrics + [b"\0".join(a.encode() for a in args) for args in argv]


def model_configs(models):
    out = []
    if models and os.path.isdir(models):
        for dirpath, _, files in os.walk(models):
            if "config.pbtxt" in files:
                with open(os.path.join(dirpath, "config.pbtxt"), "rb") as f:
                    out.append(f.read())
    out.append(b'name: "model" backend: "identity" max_batch_size: 8 input [{ name: "INPUT0" '
               b'data_type: TYPE_FP32 dims: [-1] }] output [{ name: "OUTPUT0" data_type: '
               b'TYPE_FP32 dims: [-1] }] dynamic_batching { preferred_batch_size: [2, 4] }')
    out.append(json.loads(load_bodies()[2])["parameters"]["config"].encode())
    return out


def shm_bodies():
    ranges = [(0, 4096), (4095, 1), (4096, 0), (8, 2**64 - 8), (2**63, 2**63), (16, 4081)]
    out = [struct.pack("<QQ", o, n) for o, n in ranges]
    for o, n in ranges:
        out.append(json.dumps({"key": "/nereid_region", "offset": o, "byte_size": n}).encode())
    out += [b'{"key": "/", "byte_size": 8}',
            b'{"key": "//triton_python_backend_shm_region_1", "byte_size": 8}',
            b'{"key": "/k"}', b'{"byte_size": 1}', b'{"key": 1, "byte_size": -1}', b""]
    return out


def log_settings_bodies():
    return [b'{"log_info":false,"log_warning":true,"log_error":false,"log_verbose_level":3,'
            b'"log_format":"ISO8601"}',
            b'{"log_file":"/tmp/x"}', b'{"log_file":null,"log_info":null}',
            b'{"log_verbose_level":-1}', b'{"log_verbose_level":18446744073709551615}',
            b'{"log_verbose_level":"1"}', b'{"log_format":"json"}', b'{"log_info":1}',
            b'[]', b'{', b""]


def generate_bodies():
    """Generate extension bodies (fuzz_json_generate's input specs: TEXT, COUNT, FLAG, X, U)."""
    return [b'{"TEXT":"hello","COUNT":3,"FLAG":true,"X":[1,2,3,4],"U":[1,2,3]}',
            b'{"TEXT":["a","b"],"parameters":{"COUNT":1,"top_k":5,"t":0.5,"s":"x"}}',
            b'{"COUNT":1,"COUNT":2}', b'{"X":[1,2,3]}', b'{"COUNT":[[1,2]]}',
            b'{"parameters":1}', b'{"parameters":{"nested":{"a":1}}}', b'{"p":[1]}',
            b'{"U":[-1]}', b'{"X":[NaN,Infinity]}', b'[]', b'{', b""]


def trace_settings_bodies():
    return [b'{"trace_level":["TIMESTAMPS","TENSORS"],"trace_rate":"1","trace_count":"5",'
            b'"log_frequency":"2"}',
            b'{"trace_level":["OFF"]}', b'{"trace_level":null,"trace_rate":null}',
            b'{"trace_file":"/tmp/x"}', b'{"trace_rate":5}', b'{"trace_count":"-2"}',
            b'{"trace_rate":"99999999999"}', b'{"trace_level":"TIMESTAMPS"}',
            b'{"trace_level":["OFF","TENSORS"]}', b'[]', b'{', b""]


def cache_values():
    """Values in core/cache/cache_value.h's format: one FP32 output, one BYTES output, none."""
    def value(key, outputs):
        b = struct.pack("<BQ", 1, len(key)) + key + struct.pack("<I", len(outputs))
        for name, dtype, shape, data in outputs:
            b += struct.pack("<I", len(name)) + name + struct.pack("<BI", dtype, len(shape))
            b += b"".join(struct.pack("<q", d) for d in shape) + struct.pack("<Q", len(data)) + data
        return b
    fp32 = value(b"key", [(b"OUTPUT0", 11, [1, 2], struct.pack("<2f", 1, 2))])
    return [fp32, value(b"", []), value(b"k" * 40, [(b"S", 13, [1], b"\x02\x00\x00\x00hi")]),
            fp32[:-1], b"\x02" + fp32[1:], b""]


def perf_replies():
    """What bench/nereid_perf reads from a server; the first byte picks the reader."""
    return [b"\x00HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
            b"\x00HTTP/1.1 400 Bad Request\r\ncontent-length: 5\r\n\r\nab",
            b"\x00HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b'\x01{"name":"m","inputs":[{"name":"I","datatype":"FP32","shape":[-1,16]}],'
            b'"outputs":[{"name":"O","datatype":"FP32","shape":[-1,16]}]}',
            b'\x02{"model_stats":[{"name":"m","version":"1","inference_count":3,'
            b'"execution_count":2,"inference_stats":{"success":{"count":3,"ns":300},'
            b'"queue":{"count":3,"ns":30}}}]}',
            b'\x03{"data":[{"A":[1,2],"B":{"content":["x"],"shape":[1]}}]}']


def python_stub_messages():
    """Frames a Python backend stub sends (backends/python/stub_protocol.h): header + JSON."""
    def frame(obj, payload_size):
        body = json.dumps(obj).encode()
        return struct.pack("<IQ", len(body), payload_size) + body
    out = {"name": "OUT", "datatype": "FP32", "shape": [2], "offset": 0, "size": 8}
    return [frame({"op": "result", "responses": [{"outputs": [out]}]}, 8),
            frame({"op": "result", "responses": [{"error": {"message": "m", "code": 3}}]}, 0),
            frame({"op": "send", "request": 0, "flags": 1, "outputs": [out]}, 8),
            frame({"op": "log", "level": 2, "message": "x"}, 0),
            frame({"op": "error", "message": "ValueError: v", "exception": True}, 0),
            frame({"op": "ok"}, 0), frame({"op": "done"}, 0),
            frame({"op": "load_model", "tag": 2, "model_name": "m", "config": "{}",
                   "files": [{"path": "1/model.py", "offset": 0, "size": 8}]}, 8),
            frame({"op": "unload_model", "tag": 3, "model_name": "m",
                   "unload_dependents": True}, 0),
            frame({"op": "model_ready", "tag": 4, "model_name": "m", "model_version": 1}, 0),
            *python_stub_binary_frames()]


def python_stub_binary_frames():
    """The binary frames (stub_protocol.h, bls_frames.h), as nereid_python_stub.py packs them."""
    def output(name, code, shape, size, offset, place=0):
        return struct.pack("<HBBBQQ", len(name), code, len(shape), place, offset, size) + name + \
            struct.pack(f"<{len(shape)}q", *shape)
    ok = struct.pack("<BBHI", 0, 0, 3, 0) + output(b"OUT", 11, [1, 2], 8, 0) + \
        output(b"P", 11, [1, 2], 8, 4096, 1) + output(b"S", 13, [1], 5, 8)
    error = struct.pack("<BBHI", 1, 3, 0, 3) + b"bad"
    result = struct.pack("<B3xI", 2, 2) + ok + error
    send = struct.pack("<B3xIq", 3, 1, 7) + ok
    empty_final = struct.pack("<B3xIq", 3, 1, 8) + struct.pack("<BBHI", 0, 0, 0, 0)
    return [struct.pack("<IQ", len(h), n) + h
            for h, n in ((result, 13), (send, 13), (empty_final, 0), *python_stub_bls_frames())]


def python_stub_bls_frames():
    """BLS calls and a BLS stream's "next" (bls_frames.h), as nereid_python_stub.py packs them:
    (header, payload size)."""
    def call(tag, decoupled, text_id, parameters, inputs, parent=-1):
        name, request_id, requested = b"add_sub", b"r1", [b"OUTPUT0"]
        out = struct.pack("<BB2xIqqQQqIIIIHH", 4, decoupled, 3, tag, -1, 1500, 7, parent,
                          len(name), len(request_id), len(text_id), len(parameters),
                          len(requested), len(inputs))
        out += name + request_id + text_id + parameters
        for r in requested:
            out += struct.pack("<H", len(r)) + r
        for n, code, shape, place, offset, size in inputs:
            out += struct.pack("<HBBBQQ", len(n), code, len(shape), place, offset, size) + n + \
                struct.pack(f"<{len(shape)}q", *shape)
        return out
    in_payload = (b"INPUT0", 11, [1, 4], 0, 0, 16)
    in_pool = (b"INPUT1", 11, [1, 4], 1, 4096, 16)
    strings = (b"S", 13, [1], 0, 16, 7)
    return [(call(1, 0, b"", b"{}", [in_payload, in_pool]), 16),
            (call(2, 1, b"seq", b'{"s":"x","n":-1,"b":true}', [in_payload, strings]), 23),
            (call(3, 0, b"", b"{}", [], parent=2), 0),
            (struct.pack("<B7xqq", 6, 4, 2), 0)]


def python_metric_messages():
    """pb_utils.MetricFamily / Metric messages (backends/python/metric_message.h): JSON only."""
    return [json.dumps(m).encode() for m in (
        {"op": "metric", "action": "family", "tag": 1, "name": "n", "description": "d",
         "kind": "HISTOGRAM"},
        {"op": "metric", "action": "metric", "tag": 2, "family": 1, "labels": {"a": "b"},
         "buckets": [0.1, 1.0]},
        {"op": "metric", "action": "apply", "tag": 3, "metric": 2, "what": "observe",
         "value": 0.5},
        {"op": "metric", "action": "release", "id": 2})]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out, models = sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None
    corpora = {
        "fuzz_http_request": http_requests(),
        "fuzz_json_infer": infer_bodies(),
        "fuzz_binary_tensor": [b"%d\n%s%s" % (len(h), h, t) for h, t in binary_requests()]
        + [b"0\n" + struct.pack("<3f", 1, 2, 3), b"0\n\x03\x00\x00\x00abc"]
        + [b"%d\n%s" % (len(b), b) for b in infer_bodies()],
        "fuzz_model_config": model_configs(models),
        "fuzz_load_override": load_bodies(),
        "fuzz_grpc_infer": grpc_messages(),
        "fuzz_settings": settings(),
        "fuzz_shm": shm_bodies(),
        "fuzz_log_settings": log_settings_bodies(),
        "fuzz_trace_settings": trace_settings_bodies(),
        "fuzz_cache_value": cache_values(),
        "fuzz_json_generate": generate_bodies(),
        "fuzz_python_stub": python_stub_messages(),
        "fuzz_perf_replies": perf_replies(),
        "fuzz_python_metric": python_metric_messages(),
        "fuzz_http_framing": [r for r in http_requests() if b"Transfer-Encoding" in r]
        + [b"Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
           b"\r\n\r\nGET / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\ncontent-length: 1\r\n\r\n"],
    }
    for target, seeds in corpora.items():
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for i, seed in enumerate(seeds):
            with open(os.path.join(d, f"seed-{i:03d}"), "wb") as f:
                f.write(seed)
        print(f"{target}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
