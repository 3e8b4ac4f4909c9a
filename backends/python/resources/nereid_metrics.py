"""pb_utils.MetricFamily and pb_utils.Metric: Triton's custom metrics API for model.py
(python_backend's metric_family.cc / metric.cc). The families live in the server (the python
backend's CustomMetrics, shown on /metrics); every call asks the server over the stub channel and
waits for its answer, so it works whenever the server reads this stub: in initialize(),
execute() (and threads it started, while it runs) and finalize()."""

import math
import weakref


def _pb():
    import triton_python_backend_utils as pb_utils
    return pb_utils


# Handles whose Python objects were collected: released with the next call. __del__ must not
# write to the channel itself (the collector may run inside a write that holds its lock).
_released = []


def _call(header, prefix):
    pb = _pb()
    if pb._stub is None:
        raise pb.TritonModelException(prefix + "the Python stub is not running")
    while _released:
        pb._stub.channel.write({"op": "metric", "action": "release", "id": _released.pop()})
    answer, _ = pb._stub.channel.call(dict(header, op="metric"))
    if "error" in answer:
        raise pb.TritonModelException(prefix + answer["error"])
    return answer["value"]


def _release(handle):
    _released.append(handle)  # the server drops what is left when the stub exits


class _Kind(int):
    _names = {0: "COUNTER", 1: "GAUGE", 2: "HISTOGRAM"}

    def __repr__(self):
        return "<MetricKind.%s: %d>" % (self._names[int(self)], int(self))

    @property
    def name(self):
        return self._names[int(self)]


class Metric:
    """One labelled metric of a MetricFamily (create it with MetricFamily.Metric)."""

    def __init__(self, family, handle):
        self._family = weakref.ref(family)
        self._handle = handle

    def _apply(self, what, value, prefix):
        if self._family() is None:
            raise _pb().TritonModelException(
                prefix + "Invalid metric operation as the corresponding 'MetricFamily' has been "
                "deleted.")
        return _call({"action": "apply", "metric": self._handle, "what": what,
                      "value": float(value)}, prefix)

    def increment(self, value):
        self._apply("increment", value, "Failed to increment metric value: ")

    def set(self, value):
        self._apply("set", value, "Failed to set metric value: ")

    def observe(self, value):
        self._apply("observe", value, "Failed to observe metric value: ")

    def value(self):
        return self._apply("value", 0, "Failed to get metric value: ")

    def __del__(self):
        _release(self._handle)


class MetricFamily:
    """MetricFamily(name, description, kind): kind is MetricFamily.COUNTER, GAUGE or HISTOGRAM."""

    COUNTER = _Kind(0)
    GAUGE = _Kind(1)
    HISTOGRAM = _Kind(2)

    def __init__(self, name, description, kind):
        pb = _pb()
        if name is None or description is None or kind is None:
            raise TypeError("__init__(): incompatible constructor arguments")
        if not isinstance(name, str) or not isinstance(description, str) or \
                int(kind) not in (0, 1, 2):
            raise TypeError("__init__(): incompatible constructor arguments")
        self._kind = _Kind(int(kind))
        self._handle = None
        self._handle = int(_call({"action": "family", "name": name, "description": description,
                                  "kind": self._kind.name}, "Error when creating MetricFamily: "))

    def Metric(self, labels=None, buckets=None):  # noqa: N802 (Triton's name)
        pb = _pb()
        if labels is not None and not isinstance(labels, dict):
            raise pb.TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None:
            if not isinstance(buckets, list):
                raise pb.TritonModelException("Failed to create metric. Buckets must be a list.")
            if self._kind != MetricFamily.HISTOGRAM:
                raise pb.TritonModelException(
                    "Failed to create metric. Unexpected buckets found.")
            buckets = [float(b) for b in buckets]
            if any(math.isnan(b) for b in buckets):
                raise pb.TritonModelException("Error when creating Metric: Bucket Boundaries "
                                              "must be strictly sorted")
        elif self._kind == MetricFamily.HISTOGRAM:
            raise pb.TritonModelException("Failed to create metric. Missing required buckets.")
        header = {"action": "metric", "family": self._handle,
                  "labels": {str(k): v for k, v in (labels or {}).items()}}
        for v in header["labels"].values():
            if not isinstance(v, str):
                raise pb.TritonModelException(
                    "Error when creating Metric: label values must be strings")
        if buckets is not None:
            header["buckets"] = buckets
        return Metric(self, int(_call(header, "Error when creating Metric: ")))

    def __del__(self):
        if self._handle is not None:
            _release(self._handle)
