"""bench/nereid_perf (issue 21 goal 7, the perf_analyzer-like load tool) against the real binary:
each protocol mode runs for about a second, its report and CSV parse, and the requests it counts
are exactly the successes the statistics API reports, read through Triton's own client (HTTP and
gRPC, sync and asyncio). Bad input (unknown model, bad flags, nothing listening) is a clear error
and exit status 1."""

import asyncio
import csv
import os
import re
import subprocess
import sys

import pytest

from client_support import GrpcServer, aio_clients, clients
from helpers import repo

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import perf_report  # noqa: E402  (bench/perf_report.py: the report reader issue21.py uses)


def perf_bin():
    server_bin = os.environ.get("NEREID_BIN", "build/release/nereid")
    path = os.path.join(os.path.dirname(os.path.abspath(server_bin)), "bench", "nereid_perf")
    if not os.path.exists(path):
        pytest.skip(f"{path} not built (NEREID_BUILD_BENCH=OFF)")
    return path


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("examples")], name="nereid-perf").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def success_count(name, c, model):
    stats = c.get_inference_statistics(model)
    if name == "http":
        return sum(m["inference_stats"]["success"]["count"] for m in stats["model_stats"])
    return sum(m.inference_stats.success.count for m in stats.model_stats)


def run_perf(args, timeout=60):
    return subprocess.run([perf_bin()] + args, capture_output=True, text=True, timeout=timeout)


def parse_levels(out):
    """The report's levels, each block's server split line checked."""
    for m in re.finditer(r"Avg request latency: .*", out):
        assert SPLIT_RE.match(m.group(0)), m.group(0)
    levels = perf_report.parse_levels(out)
    assert levels, out
    for f in levels.values():
        f["throughput"] = f["rps"]
    return levels


SPLIT_RE = re.compile(r"Avg request latency: (\d+) usec \(overhead (\d+) usec \+ queue (\d+) usec "
                      r"\+ compute input (\d+) usec \+ compute infer (\d+) usec \+ compute output "
                      r"(\d+) usec\)")


MODES = {
    "http-json": ["-i", "http"],
    "http-binary": ["-i", "http", "--binary"],
    "grpc": ["-i", "grpc"],
    "grpc-stream": ["-i", "grpc", "--streaming"],
}


@pytest.mark.parametrize("mode", list(MODES))
def test_counts_match_the_statistics_api(server, mode, tmp_path):
    model = "simple"
    grpc_mode = "grpc" in mode
    url = server.target() if grpc_mode else f"127.0.0.1:{server.port}"
    before = {name: success_count(name, c, model) for name, c in clients(server)}
    assert before["http"] == before["grpc"]
    out_csv = tmp_path / "out.csv"
    r = run_perf(["-m", model, "-u", url, "--concurrency-range", "1:2", "-p", "250", "-r", "2",
                  "--input-data", "random", "-f", str(out_csv)] + MODES[mode])
    assert r.returncode == 0, r.stderr
    levels = parse_levels(r.stdout)
    assert sorted(levels) == [1, 2]
    levels = {int(c): f for c, f in levels.items()}
    for c, f in levels.items():
        assert f["count"] > 0 and f["throughput"] > 0 and f["errors"] == 0, (c, f)
        assert f["p50"] <= f["p90"] <= f["p95"] <= f["p99"], f
        # The server's diff over the windows counts the same requests, give or take those that
        # complete while a statistics request is on its way at a window's edges.
        assert abs(f["server_success"] - f["count"]) <= 0.05 * f["count"] + 4 * c, f
    totals = re.search(r"Run totals: client (\d+) successful, (\d+) errors; server (\d+) "
                       r"successful, (\d+) failed", r.stdout)
    assert totals, r.stdout
    client_ok, client_err, server_ok, server_fail = map(int, totals.groups())
    assert client_err == 0 and server_fail == 0
    after = {name: success_count(name, c, model) for name, c in clients(server)}
    # Every request the tool counted, and no other, reached the server: exact.
    assert after["http"] - before["http"] == client_ok == server_ok
    assert after["grpc"] - before["grpc"] == client_ok
    rows = list(csv.DictReader(open(out_csv)))
    assert [int(row["Concurrency"]) for row in rows] == [1, 2]
    for row in rows:
        assert float(row["Inferences/Second"]) > 0
        assert int(row["p50 latency"]) <= int(row["p99 latency"])
        assert int(row["Errors"]) == 0
        assert int(row["Server Compute Infer"]) >= 0


@pytest.mark.parametrize("proto", ["http", "grpc"])
def test_request_rate_mode_counts_match(server, proto, tmp_path):
    url = server.target() if proto == "grpc" else f"127.0.0.1:{server.port}"
    before = {name: success_count(name, c, "simple") for name, c in clients(server)}
    out_csv = tmp_path / "rate.csv"
    r = run_perf(["-m", "simple", "-u", url, "-i", proto, "--request-rate-range", "100:200:100",
                  "--max-outstanding", "8", "-p", "250", "-r", "2", "-f", str(out_csv)])
    assert r.returncode == 0, r.stderr
    assert "Paced requests, at most 8 outstanding" in r.stdout
    levels = parse_levels(r.stdout)
    assert sorted(levels) == [100, 200]
    for f in levels.values():
        assert f["count"] > 0 and f["errors"] == 0, f
    client_ok = int(re.search(r"Run totals: client (\d+) successful", r.stdout).group(1))
    after = {name: success_count(name, c, "simple") for name, c in clients(server)}
    assert after["http"] - before["http"] == client_ok
    assert after["grpc"] - before["grpc"] == client_ok
    rows = list(csv.DictReader(open(out_csv)))
    assert [float(row["Request Rate"]) for row in rows] == [100, 200]


def test_counts_match_through_the_asyncio_clients(server):
    r = run_perf(["-m", "identity_fp32", "-u", f"127.0.0.1:{server.port}", "-p", "200", "-r",
                  "2", "--binary"])
    assert r.returncode == 0, r.stderr
    client_ok = int(re.search(r"Run totals: client (\d+) successful", r.stdout).group(1))

    async def counts():
        out = {}
        for name, c in aio_clients(server):
            stats = await c.get_inference_statistics("identity_fp32")
            out[name] = (sum(m["inference_stats"]["success"]["count"] for m in stats["model_stats"])
                         if name == "http" else
                         sum(m.inference_stats.success.count for m in stats.model_stats))
            await c.close()
        return out

    got = asyncio.run(counts())
    # Only this test drives identity_fp32 on this server.
    assert got == {"http": client_ok, "grpc": client_ok}


def test_variable_shape_from_the_shape_flag(server):
    r = run_perf(["-m", "vardim_fp32", "-u", f"127.0.0.1:{server.port}", "-p", "200", "-r", "1"])
    shape_given = run_perf(["-m", "vardim_fp32", "-u", f"127.0.0.1:{server.port}", "-p", "200",
                            "-r", "1", "--shape", "INPUT0:1,8"])
    for res in (r, shape_given):
        assert res.returncode == 0, res.stderr
        assert parse_levels(res.stdout)[1]["errors"] == 0


def test_bad_input_is_a_clear_error(server, tmp_path):
    r = run_perf(["-m", "no_such_model", "-u", f"127.0.0.1:{server.port}"])
    assert r.returncode == 1
    assert "error: model metadata: HTTP 404" in r.stderr
    assert "Request for unknown model: 'no_such_model' is not found" in r.stderr
    r = run_perf(["-m", "no_such_model", "-i", "grpc", "-u", server.target()])
    assert r.returncode == 1 and "ModelMetadata failed" in r.stderr, r.stderr
    r = run_perf(["-m", "simple", "--concurrency-range", "4:1"])
    assert r.returncode == 1 and "end is below start" in r.stderr
    r = run_perf(["-m", "simple", "--frobnicate"])
    assert r.returncode == 1 and "unknown option '--frobnicate'" in r.stderr
    r = run_perf(["-m", "simple", "-u", "127.0.0.1:1"])
    assert r.returncode == 1 and "cannot connect to 127.0.0.1:1" in r.stderr
    bad = tmp_path / "data.json"
    bad.write_text('{"data": [{"INPUT0": [%s]}]}' % ",".join(["1"] * 16))
    r = run_perf(["-m", "simple", "-u", f"127.0.0.1:{server.port}", "--input-data", str(bad)])
    assert r.returncode == 1 and "no values for input 'INPUT1'" in r.stderr, r.stderr
    bad.write_text('{"data": [{"INPUT0": [1, 2], "INPUT1": [1, 2]}]}')
    r = run_perf(["-m", "simple", "-u", f"127.0.0.1:{server.port}", "--input-data", str(bad)])
    assert r.returncode == 1 and "the data file gives 2 elements, the shape needs 16" in r.stderr
    bad.write_text("{not json")
    r = run_perf(["-m", "simple", "-u", f"127.0.0.1:{server.port}", "--input-data", str(bad)])
    assert r.returncode == 1 and "invalid input data JSON" in r.stderr, r.stderr
    r = run_perf(["-m", "simple", "--input-data", str(tmp_path / "missing.json"),
                  "-u", f"127.0.0.1:{server.port}"])
    assert r.returncode == 1 and "cannot read --input-data file" in r.stderr


def test_input_data_file_values_reach_the_model(server, tmp_path):
    data = tmp_path / "data.json"
    data.write_text('{"data": [{"INPUT0": {"content": [%s], "shape": [1, 16]}, '
                    '"INPUT1": [%s]}]}' % (",".join(["3"] * 16), ",".join(["1"] * 16)))
    r = run_perf(["-m", "simple", "-u", f"127.0.0.1:{server.port}", "-p", "200", "-r", "1",
                  "--input-data", str(data)])
    assert r.returncode == 0, r.stderr
    assert parse_levels(r.stdout)[1]["errors"] == 0


def test_the_grpc_echo_floor_answers_the_tool(tmp_path):
    """bench/grpc_echo_server, issue21.py's gRPC overload floor, answers the metadata and
    statistics calls nereid_perf makes: every request succeeds, and the server counts none (it
    keeps no statistics)."""
    echo = os.path.join(os.path.dirname(perf_bin()), "grpc_echo_server")
    if not os.path.exists(echo):
        pytest.skip(f"{echo} not built (NEREID_BUILD_BENCH=OFF)")
    proc = subprocess.Popen([echo, "0", "1"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[-1])  # "listening on <port>"
        r = run_perf(["-m", "identity_fp32", "-i", "grpc", "-u", f"127.0.0.1:{port}", "-p", "300",
                      "-r", "1", "--concurrency-range", "2", "--shape", "INPUT0:1,4"])
        assert r.returncode == 0, r.stderr
        (level,) = parse_levels(r.stdout).values()
        totals = perf_report.parse_totals(r.stdout)
        assert level["errors"] == 0 and level["count"] > 0
        assert totals["client_ok"] > 0 and totals["client_errors"] == 0
        assert totals["server_ok"] == 0, "the echo keeps no statistics"
    finally:
        proc.kill()
        proc.wait()
