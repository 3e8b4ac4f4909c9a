"""Triton's logging extension through Triton's own client (REFERENCE-2.md §12.1): GET and POST
/v2/logging and gRPC LogSettings, sync and asyncio; Triton's types and error texts; a failing
request changes nothing (beyond Triton, which applies the keys before the failing one); log_file
is never settable; the verbose level and format change what the server logs at run time."""

import asyncio
import re
import time

import pytest
import requests

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients)
from helpers import repo

DEFAULTS = {"log_file": "", "log_info": True, "log_warning": True, "log_error": True,
            "log_verbose_level": 0, "log_format": "default"}


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("examples")], name="client-logging").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


@pytest.fixture(autouse=True)
def reset(server):
    yield
    r = requests.post(server.url("/v2/logging"), json={k: v for k, v in DEFAULTS.items()
                                                       if k != "log_file"})
    assert r.status_code == 200, r.text


def settings(name, client, update=None):
    """The settings as a dict, whichever protocol answered."""
    if update is None:
        got = client.get_log_settings(as_json=True) if name == "grpc" \
            else client.get_log_settings()
    else:
        got = client.update_log_settings(update, as_json=True) if name == "grpc" \
            else client.update_log_settings(update)
    if name != "grpc":
        return got
    return {k: list(v.values())[0] for k, v in got["settings"].items()}


def test_get_returns_every_key_with_tritons_types(server):
    r = requests.get(server.url("/v2/logging"))
    assert r.status_code == 200
    assert r.text == ('{"log_file":"","log_info":true,"log_warning":true,"log_error":true,'
                      '"log_verbose_level":0,"log_format":"default"}')
    for name, c in clients(server):
        assert settings(name, c) == DEFAULTS, name
    meta = requests.get(server.url("/v2")).json()
    assert "logging" in meta["extensions"]


def test_update_each_key_sync(server):
    for name, c in clients(server):
        got = settings(name, c, {"log_info": False, "log_warning": False, "log_error": False,
                                 "log_verbose_level": 2, "log_format": "ISO8601"})
        assert got == {"log_file": "", "log_info": False, "log_warning": False,
                       "log_error": False, "log_verbose_level": 2, "log_format": "ISO8601"}, name
        # Only the keys sent change.
        got = settings(name, c, {"log_info": True})
        assert got["log_info"] is True and got["log_warning"] is False, name
        assert settings(name, c, {k: v for k, v in DEFAULTS.items() if k != "log_file"}) == \
            DEFAULTS


def test_update_asyncio(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                if name == "grpc":
                    got = await c.update_log_settings({"log_verbose_level": 3}, as_json=True)
                    assert got["settings"]["log_verbose_level"]["uint32_param"] == 3
                    got = await c.get_log_settings(as_json=True)
                    assert got["settings"]["log_verbose_level"]["uint32_param"] == 3
                else:
                    got = await c.update_log_settings({"log_verbose_level": 4})
                    assert got["log_verbose_level"] == 4
                    assert (await c.get_log_settings())["log_verbose_level"] == 4
            finally:
                await c.close()
    asyncio.run(run())


def expect_error(call, text):
    with pytest.raises(InferenceServerException) as e:
        call()
    assert text in e.value.message(), e.value.message()
    return e.value


def test_log_file_is_never_settable(server):
    for name, c in clients(server):
        expect_error(lambda: c.update_log_settings({"log_file": "/tmp/pwned.log",
                                                   "log_info": False}),
                     "log file location can not be updated through network protocol")
        assert settings(name, c) == DEFAULTS, name  # log_info unchanged
    r = requests.post(server.url("/v2/logging"), json={"log_file": "x"})
    assert r.status_code == 501
    assert r.json() == {"error": "log file location can not be updated through network protocol"}
    # HTTP skips null, as Triton does.
    r = requests.post(server.url("/v2/logging"), json={"log_file": None, "log_verbose_level": 1})
    assert r.status_code == 200 and r.json()["log_verbose_level"] == 1


@pytest.mark.parametrize("body,status,text", [
    ({"log_info": 1}, 500, "attempt to access JSON non-boolean as boolean"),
    ({"log_warning": "false"}, 500, "attempt to access JSON non-boolean as boolean"),
    ({"log_verbose_level": -1}, 500,
     "attempt to access JSON non-unsigned-integer as unsigned-integer"),
    ({"log_verbose_level": "1"}, 500,
     "attempt to access JSON non-unsigned-integer as unsigned-integer"),
    ({"log_format": "json"}, 503, "invalid argument for --log_format, got: json"),
    ({"log_format": 1}, 500, "attempt to access JSON non-string as string"),
])
def test_http_bad_values_change_nothing(server, body, status, text):
    # A good key before the bad one is not applied either (Triton would apply it).
    r = requests.post(server.url("/v2/logging"), json={"log_error": False, **body})
    assert r.status_code == status, r.text
    assert r.json() == {"error": text}
    assert requests.get(server.url("/v2/logging")).json() == DEFAULTS


def test_http_bad_bodies(server):
    r = requests.post(server.url("/v2/logging"), data="{")
    assert r.status_code == 400 and "failed to parse the request JSON buffer" in r.json()["error"]
    r = requests.post(server.url("/v2/logging"), data="[true]")
    assert r.status_code == 400
    # Unknown keys are ignored; an empty body changes nothing.
    r = requests.post(server.url("/v2/logging"), json={"log_infos": False})
    assert r.status_code == 200 and r.json() == DEFAULTS
    assert requests.post(server.url("/v2/logging"), data="").json() == DEFAULTS
    r = requests.post(server.url("/v2/logging"), json={"log_verbose_level": 2 ** 64 - 1})
    assert r.status_code == 200 and r.json()["log_verbose_level"] == 2147483647


def test_grpc_type_errors_change_nothing(server):
    c = dict(clients(server))["grpc"]
    # The client sends a key with no value for None: not the type the key needs.
    expect_error(lambda: c.update_log_settings({"log_error": False, "log_info": None}),
                 "expect boolean for 'log_info'")
    expect_error(lambda: c.update_log_settings({"log_error": False, "log_verbose_level": None}),
                 "expect int32 for 'log_verbose_level'")
    expect_error(lambda: c.update_log_settings({"log_error": False, "log_format": None}),
                 "expect string for 'log_format'")
    e = expect_error(lambda: c.update_log_settings({"log_error": False, "log_format": "xml"}),
                     "invalid argument for log_format, got: xml")
    assert e.status() == "StatusCode.INVALID_ARGUMENT"
    e = expect_error(lambda: c.update_log_settings({"log_file": None}),
                     "log file location can not be updated through network protocol")
    assert e.status() == "StatusCode.UNIMPLEMENTED"
    assert settings("grpc", c) == DEFAULTS


def test_verbose_level_and_format_change_what_is_logged(server):
    requests.get(server.url("/v2/models/simple/versions/1/ready"))
    time.sleep(0.2)
    assert "HTTP request: GET /v2/models/simple/versions/1/ready" not in server.stderr()
    for (name, c), model in zip(clients(server), ["simple_string", "identity_fp32"]):
        c.update_log_settings({"log_verbose_level": 1})
        requests.get(server.url(f"/v2/models/{model}/ready"))
        server.wait_for_log(f"HTTP request: GET /v2/models/{model}/ready")
        c.update_log_settings({"log_verbose_level": 0})
    c = dict(clients(server))["http"]
    c.update_log_settings({"log_verbose_level": 1, "log_format": "ISO8601"})
    requests.get(server.url("/v2/models/mlp_fp32/ready"))
    server.wait_for_log("HTTP request: GET /v2/models/mlp_fp32/ready")
    line = [x for x in server.stderr().splitlines() if x.endswith("mlp_fp32/ready")][0]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ V \d+ \S+:\d+\] ", line), line
    c.update_log_settings({"log_verbose_level": 0, "log_format": "default"})
    requests.get(server.url("/v2/models/vardim_fp32/ready"))
    time.sleep(0.2)
    assert "vardim_fp32/ready" not in server.stderr()


def test_log_file_flag_is_reported(tmp_path):
    log = tmp_path / "nereid.log"
    s = GrpcServer([repo("examples")], [f"--log-file={log}"], name="client-logging-file")
    # The start-up lines go to the file, so wait on the file rather than stderr.
    s.wait_for_log = lambda needle, timeout=20.0: _wait_file(log, needle, timeout)
    s.stderr_orig = s.stderr
    s.stderr = lambda: log.read_text() if log.exists() else ""
    s.start()
    try:
        for name, c in clients(s):
            assert settings(name, c)["log_file"] == str(log), name
        expect_error(lambda: clients(s)[0][1].update_log_settings({"log_file": str(log)}),
                     "log file location can not be updated through network protocol")
    finally:
        assert s.stop() == 0


def _wait_file(path, needle, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and needle in path.read_text():
            return
        time.sleep(0.02)
    raise AssertionError(f"{needle!r} not in {path}")


def test_unwritable_log_file_stops_start_up(tmp_path):
    import subprocess
    from nereid_server import nereid_bin
    # A parent that is a regular file: unwritable even for root (spdlog creates missing folders).
    (tmp_path / "a-file").write_text("")
    bad = tmp_path / "a-file" / "nereid.log"
    p = subprocess.run([nereid_bin(), f"--model-repository={repo('examples')}",
                        f"--log-file={bad}"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1
    assert f"error: cannot open log file '{bad}'" in p.stderr, p.stderr


def test_command_line_flags_are_the_starting_settings():
    flags = ["--log-format=ISO8601", "--log-verbose=2", "--log-warning=false"]
    with GrpcServer([repo("examples")], flags, name="client-logging-flags") as s:
        for name, c in clients(s):
            assert settings(name, c) == {**DEFAULTS, "log_format": "ISO8601",
                                         "log_verbose_level": 2, "log_warning": False}, name
        first = s.stderr().splitlines()[0]
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ I \d+ ", first), first
