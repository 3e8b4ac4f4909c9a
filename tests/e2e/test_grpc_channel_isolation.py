"""The suites' gRPC channels do not share connections (grpc_isolation.py).

gRPC Python shares connections between channels to one target, process-wide. A test that calls a
server after it stopped leaves that target's connection in connect back-off, and a later server
given the same port was then refused at once (CI: test_statistics.py::test_grpc_matches_http,
5 s after a SIGTERM test's server freed its gRPC port). Checked here by what decides it: two
channels to one server hold a TCP connection each (one with the shared pool).
"""

import os

import grpc

from grpc_helpers import GrpcServer, repo, stubs


def _live(channel):
    pb = stubs().pb
    return stubs().pb_grpc.GRPCInferenceServiceStub(channel).ServerLive(
        pb.ServerLiveRequest(), timeout=10).live


def _my_connections_to(port):
    """Established TCP connections of this process to 127.0.0.1:`port` (from /proc)."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            mine.add(link[len("socket:["):-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):  # gRPC's sockets are dual-stack
        if not os.path.exists(table):  # a kernel without IPv6
            continue
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                remote, state, inode = fields[2], fields[3], fields[9]
                if state == "01" and remote.endswith(f":{port:04X}") and inode in mine:
                    count += 1
    return count


def test_two_channels_to_one_server_hold_a_connection_each():
    server = GrpcServer([repo("fixtures", "single_good")], name="channel-isolation").start()
    try:
        with grpc.insecure_channel(server.target()) as first, \
                grpc.insecure_channel(server.target()) as second:
            assert _live(first) and _live(second)
            assert _my_connections_to(server.grpc_port) == 2
    finally:
        assert server.stop() == 0
