"""Shared helpers for Nereid's end-to-end tests: error-body assertions and the KServe v2 binary
tensor data extension (request building, response parsing). Server process helpers live in
nereid_server.py and are re-exported here.
"""

import gzip
import json
import struct
import zlib

import numpy as np

from nereid_server import (BIN_ENV, COMMON_FLAGS, MODELS_ENV, STARTED_SERVERS, Server, free_port,
                           infer_path, log_dir, models_root, nereid_bin, new_session,
                           read_http_response, repo, run_to_exit)

REEXPORTED = [BIN_ENV, COMMON_FLAGS, MODELS_ENV, STARTED_SERVERS, Server, free_port, infer_path,
              log_dir, models_root, nereid_bin, new_session, read_http_response, repo, run_to_exit]

# ------------------------------------------------------------------------------------ errors

def assert_error(resp, status=None, contains=None):
    """The response is an error (4xx/5xx, or exactly `status` / one of `status`) with a JSON
    body {"error": "<non-empty message>"}. Returns the message."""
    code = resp.status_code
    if status is None:
        assert 400 <= code < 600, f"expected an error status, got {code}: {resp.content[:500]!r}"
    elif isinstance(status, (tuple, list, set)):
        assert code in status, f"expected status in {status}, got {code}: {resp.content[:500]!r}"
    else:
        assert code == status, f"expected status {status}, got {code}: {resp.content[:500]!r}"
    try:
        body = json.loads(resp.content)
    except ValueError:
        raise AssertionError(f"error body is not JSON: {resp.content[:500]!r}")
    assert isinstance(body, dict) and isinstance(body.get("error"), str), body
    assert body["error"], "error message is empty"
    if contains is not None:
        assert contains.lower() in body["error"].lower(), \
            f"{contains!r} not in error message {body['error']!r}"
    return body["error"]


def assert_4xx_error(resp, contains=None):
    assert 400 <= resp.status_code < 500, \
        f"expected a 4xx status, got {resp.status_code}: {resp.content[:500]!r}"
    return assert_error(resp, contains=contains)


def assert_not_ready(resp):
    """A /ready answer that says 'not ready': 400, and when there is a body it holds "error"."""
    assert resp.status_code == 400, f"expected 400, got {resp.status_code}: {resp.content!r}"
    if resp.content:
        assert "error" in json.loads(resp.content), resp.content


# ------------------------------------------------------------------------------------ tensors

NP_TYPES = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
    "UINT64": np.uint64, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
    "INT64": np.int64, "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
}


def np_dtype(datatype):
    return np.dtype(NP_TYPES[datatype]).newbyteorder("<")


def encode_bytes_elements(elements):
    """BYTES wire format: each element is a 4-byte little-endian length and then its bytes."""
    out = bytearray()
    for e in elements:
        if isinstance(e, str):
            e = e.encode("utf-8")
        out += struct.pack("<I", len(e)) + e
    return bytes(out)


def decode_bytes_elements(data):
    out, pos = [], 0
    while pos < len(data):
        assert pos + 4 <= len(data), f"truncated BYTES length prefix at {pos}"
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        assert pos + n <= len(data), f"BYTES element of {n} bytes runs past the end"
        out.append(bytes(data[pos:pos + n]))
        pos += n
    return out


def flatten(data):
    if isinstance(data, (list, tuple)):
        out = []
        for d in data:
            out.extend(flatten(d))
        return out
    return [data]


def encode_tensor(datatype, data):
    """Binary representation of a tensor (little-endian, row-major)."""
    if datatype == "BYTES":
        return encode_bytes_elements(flatten(data) if not isinstance(data, np.ndarray)
                                     else list(data.flatten()))
    return np.asarray(data, dtype=np_dtype(datatype)).tobytes()


def decode_tensor(datatype, shape, data):
    if datatype == "BYTES":
        elems = decode_bytes_elements(data)
        assert len(elems) == int(np.prod(shape)), (len(elems), shape)
        return elems
    arr = np.frombuffer(data, dtype=np_dtype(datatype))
    return arr.reshape(shape)


def tensor(name, datatype, data, shape=None, binary=False):
    """An input description for build_infer_request. data: numpy array, nested list, or (BYTES)
    a list of str/bytes; shape defaults to the shape of data."""
    if shape is None:
        shape = list(np.shape(data)) if not isinstance(data, np.ndarray) else list(data.shape)
    return {"name": name, "datatype": datatype, "shape": list(shape), "data": data,
            "binary": binary}


def _json_data(datatype, data, nested):
    if datatype == "BYTES":
        vals = flatten(data) if not isinstance(data, np.ndarray) else list(data.flatten())
        vals = [v.decode("utf-8") if isinstance(v, bytes) else v for v in vals]
        return vals
    if isinstance(data, np.ndarray):
        return data.tolist() if nested else data.flatten().tolist()
    return data if nested else flatten(data)


def build_infer_request(inputs, outputs=None, parameters=None, request_id=None, nested=False):
    """Returns (body bytes, headers dict). Binary inputs go after the JSON header in input order
    with Inference-Header-Content-Length set. outputs: list of names or of (name, binary) pairs
    (binary None = no binary_data parameter) or of ready dicts."""
    header = {}
    if request_id is not None:
        header["id"] = request_id
    if parameters is not None:
        header["parameters"] = parameters
    header["inputs"] = []
    blobs = []
    for t in inputs:
        entry = {"name": t["name"], "shape": t["shape"], "datatype": t["datatype"]}
        if t.get("binary"):
            blob = encode_tensor(t["datatype"], t["data"])
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = _json_data(t["datatype"], t["data"], nested)
        header["inputs"].append(entry)
    if outputs is not None:
        header["outputs"] = []
        for o in outputs:
            if isinstance(o, dict):
                header["outputs"].append(o)
            elif isinstance(o, str):
                header["outputs"].append({"name": o})
            else:
                name, binary = o
                entry = {"name": name}
                if binary is not None:
                    entry["parameters"] = {"binary_data": binary}
                header["outputs"].append(entry)
    js = json.dumps(header).encode("utf-8")
    if not blobs:
        return js, {"Content-Type": "application/json"}
    return js + b"".join(blobs), {"Content-Type": "application/octet-stream",
                                  "Inference-Header-Content-Length": str(len(js))}


def parse_infer_response(headers, content):
    """Splits a (possibly binary) inference response. headers: any case-insensitive mapping or a
    lower-case dict. Returns (json header, {output name: numpy array or list of bytes/str},
    {output name: True when it came as binary})."""
    hl = None
    for k, v in headers.items():
        if k.lower() == "inference-header-content-length":
            hl = int(v)
    if hl is None:
        hl = len(content)
    assert 0 <= hl <= len(content), (hl, len(content))
    header = json.loads(content[:hl])
    rest = content[hl:]
    pos = 0
    values, binary = {}, {}
    for out in header.get("outputs", []):
        params = out.get("parameters") or {}
        shape = out["shape"]
        if "binary_data_size" in params:
            n = params["binary_data_size"]
            assert "data" not in out, f"binary output {out['name']} also carries JSON data"
            assert pos + n <= len(rest), f"binary data of {out['name']} runs past the body end"
            values[out["name"]] = decode_tensor(out["datatype"], shape, rest[pos:pos + n])
            binary[out["name"]] = True
            pos += n
        else:
            data = out["data"]
            if out["datatype"] == "BYTES":
                values[out["name"]] = flatten(data)
            else:
                values[out["name"]] = np.array(flatten(data), dtype=NP_TYPES[out["datatype"]]
                                               ).reshape(shape)
            binary[out["name"]] = False
    assert pos == len(rest), f"{len(rest) - pos} unexplained bytes after the binary outputs"
    return header, values, binary


def parse_response(resp):
    """parse_infer_response for a requests.Response, asserting 200 first."""
    assert resp.status_code == 200, f"status {resp.status_code}: {resp.content[:1000]!r}"
    return parse_infer_response(resp.headers, resp.content)


def output_by_name(header, name):
    for o in header["outputs"]:
        if o["name"] == name:
            return o
    raise AssertionError(f"output {name} not in response {header}")


# ------------------------------------------------------------------------------------ simple

def simple_inputs(a, b, binary=False):
    """The two inputs of the `simple` add/sub model from int32 arrays of shape [batch, 16]."""
    return [tensor("INPUT0", "INT32", np.asarray(a, np.int32), binary=binary),
            tensor("INPUT1", "INT32", np.asarray(b, np.int32), binary=binary)]


def check_simple(resp, a, b):
    header, values, _ = parse_response(resp)
    a, b = np.asarray(a, np.int32), np.asarray(b, np.int32)
    np.testing.assert_array_equal(values["OUTPUT0"], a + b)
    np.testing.assert_array_equal(values["OUTPUT1"], a - b)
    return header


def gzip_bytes(data):
    return gzip.compress(data)


def deflate_bytes(data):
    return zlib.compress(data)  # HTTP "deflate" is the zlib format

