"""Reads bench/nereid_perf's text report (perf_analyzer's format) for bench/issue21.py and
tests/client/test_nereid_perf.py."""

import re

LATENCY_RE = re.compile(r"(p\d\d) latency: (\d+) usec")


def parse_levels(out):
    """{concurrency or request rate: {rps, count, errors, p50..p99, server_success}}."""
    levels = {}
    for block in re.split(r"^Request (?:concurrency|Rate): ", out, flags=re.M)[1:]:
        first = block.split("\n", 1)[0].split(" ", 1)[0]
        if first.endswith(","):
            continue  # the summary's "Request Rate: N, throughput: ..." line
        f = {k: int(v) for k, v in LATENCY_RE.findall(block)}
        f["count"] = int(re.search(r"Request count: (\d+)", block).group(1))
        f["rps"] = float(re.search(r"Throughput: ([\d.]+) infer/sec", block).group(1))
        f["errors"] = int(re.search(r"Errors: (\d+)", block).group(1))
        f["server_success"] = int(re.search(r"Successful request count: (\d+)", block).group(1))
        levels[float(first)] = f
    return levels


def parse_totals(out):
    """The `Run totals:` line as a dict, or {} when it is missing."""
    t = re.search(r"Run totals: client (\d+) successful, (\d+) errors; server (\d+) successful, "
                  r"(\d+) failed", out)
    if not t:
        return {}
    return dict(zip(("client_ok", "client_errors", "server_ok", "server_failed"),
                    map(int, t.groups())))
