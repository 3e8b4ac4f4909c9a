"""Starting and stopping the real `nereid` binary for the end-to-end tests, plus raw HTTP helpers.

Nothing here is mocked: every helper talks to a real `nereid` process over real sockets. Tests
import these names through helpers.py.
"""

import http.client
import os
import signal
import socket
import subprocess
import tempfile
import time

import requests

# ------------------------------------------------------------------------------------ env

BIN_ENV = "NEREID_BIN"
MODELS_ENV = "NEREID_MODELS"

STARTUP_TIMEOUT = 20.0  # seconds until /v2/health/live must answer
STOP_TIMEOUT = 30.0  # seconds a stopped server may take to exit (hang guard, not an assertion)

_LOG_DIR = None


def nereid_bin():
    return os.environ[BIN_ENV]


def models_root():
    return os.environ[MODELS_ENV]


def repo(*parts):
    """Path of a generated repository, e.g. repo("examples") or repo("fixtures", "types")."""
    return os.path.join(models_root(), *parts)


def log_dir():
    global _LOG_DIR
    if _LOG_DIR is None:
        _LOG_DIR = tempfile.mkdtemp(prefix="nereid-e2e-")
    return _LOG_DIR


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Flags every test server gets: loopback only, and no listener on a fixed port that could collide
# between servers running at the same time (Triton's gRPC and metrics ports default to 8001/8002):
# no gRPC unless a test asks for it, metrics on an ephemeral port (see Server.metrics_port).
COMMON_FLAGS = ["--http-address=127.0.0.1", "--allow-grpc=false", "--metrics-port=0"]

# Servers started while the current test runs; conftest prints their stderr when a test fails.
STARTED_SERVERS = []


class ServerStartError(AssertionError):
    pass


class Server:
    """One real nereid process on a free port. Use as a context manager or call start()/stop().

    repos: list of repository paths (each becomes one --model-repository flag).
    flags: extra command-line flags.
    """

    def __init__(self, repos, flags=(), name="nereid", env=None):
        self.repos = list(repos)
        self.flags = list(flags)
        self.env = dict(env or {})  # added to the environment (e.g. Triton's test hooks)
        self.name = name
        self.proc = None
        self.port = None
        self.stderr_path = None
        self._session = None
        self.returncode = None

    # ---- process control

    def args(self, port):
        return ([nereid_bin()] + [f"--model-repository={r}" for r in self.repos] +
                [f"--http-port={port}"] + COMMON_FLAGS + self.flags)

    def start(self):
        if self.alive():  # a second process would replace (and leak) the first
            raise AssertionError(f"server {self.name} is already running (pid {self.proc.pid})")
        last_error = None
        for attempt in range(3):  # retry only when the free port got taken in between
            self.port = free_port()
            self.stderr_path = os.path.join(log_dir(), f"{self.name}-{self.port}.stderr")
            with open(self.stderr_path, "wb") as err:
                self.proc = subprocess.Popen(self.args(self.port), stdin=subprocess.DEVNULL,
                                             stdout=err, stderr=subprocess.STDOUT,
                                             env={**os.environ, **self.env})
            STARTED_SERVERS.append(self)
            try:
                self._wait_live()
                return self
            except ServerStartError as e:
                last_error = e
                text = self.stderr().lower()
                if "in use" not in text:
                    raise
        raise last_error

    def _wait_live(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT
        url = self.url("/v2/health/live")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(
                    f"nereid exited with code {self.proc.returncode} during start-up\n"
                    f"command: {' '.join(self.args(self.port))}\n--- stderr ---\n{self.stderr()}")
            try:
                r = requests.get(url, timeout=1.0)
                if r.status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        self.kill()
        raise ServerStartError(f"nereid did not answer {url} within {STARTUP_TIMEOUT} s\n"
                               f"--- stderr ---\n{self.stderr()}")

    @property
    def metrics_port(self):
        """The port of the metrics endpoint, from the "Started Metrics Service at <a>:<port>" log
        line (the default flags bind port 0)."""
        import re
        self.wait_for_log("Started Metrics Service at ")
        m = re.search(r"Started Metrics Service at (\S+):(\d+)", self.stderr())
        return int(m.group(2))

    def metrics_url(self, path="/metrics"):
        return f"http://127.0.0.1:{self.metrics_port}{path}"

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def sanitized(self):
        """True when this server is a sanitizer build (scripts/test --sanitize): its heap is the
        sanitizer's, so resident-memory figures say nothing about glibc's allocator."""
        try:
            with open(f"/proc/{self.proc.pid}/maps") as f:
                return any(lib in f.read() for lib in ("libasan", "libtsan"))
        except OSError:
            return False

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=STOP_TIMEOUT):
        """Waits for exit; kills and raises if the process hangs."""
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"nereid did not exit within {timeout} s\n"
                                 f"--- stderr ---\n{self.stderr()}")
        return self.returncode

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Sends sig and returns the exit code."""
        if self._session is not None:
            self._session.close()
            self._session = None
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait(timeout)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr(self):
        if not self.stderr_path or not os.path.exists(self.stderr_path):
            return ""
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_for_log(self, needle, timeout=20.0):
        """Polls the server's log until `needle` appears (or fails)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.stderr():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        raise AssertionError(f"{needle!r} did not appear in the server log\n{self.stderr()}")

    def __enter__(self):
        # `with Server(...).start() as s:` (or a helper that returns a started server) must not
        # start a second process and leak the first.
        if self.proc is not None and self.proc.poll() is None:
            return self
        return self.start()

    def __exit__(self, *exc):
        if self.alive():
            self.stop()
        return False

    # ---- HTTP

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def session(self):
        """A keep-alive session for sequential use from the test thread (not thread-safe)."""
        if self._session is None:
            self._session = new_session()
        return self._session

    def get(self, path, **kw):
        kw.setdefault("timeout", 30)
        return self.session.get(self.url(path), **kw)

    def post(self, path, **kw):
        kw.setdefault("timeout", 30)
        return self.session.post(self.url(path), **kw)

    def request(self, method, path, **kw):
        kw.setdefault("timeout", 30)
        return self.session.request(method, self.url(path), **kw)

    def raw(self, method, path, body=None, headers=None, timeout=30):
        """One request over http.client with exactly these headers; returns
        (status, headers-dict-lowercase, body-bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            conn.close()

    def infer(self, model, inputs, outputs=None, parameters=None, request_id=None, version=None,
              headers=None, nested=False):
        from helpers import build_infer_request  # helpers imports this module

        body, hdrs = build_infer_request(inputs, outputs, parameters, request_id, nested=nested)
        if headers:
            hdrs.update(headers)
        return self.post(infer_path(model, version), data=body, headers=hdrs)


def new_session():
    s = requests.Session()
    # Compression is tested on purpose in its own tests; everywhere else ask for plain bodies.
    s.headers["Accept-Encoding"] = "identity"
    return s


def read_http_response(f):
    """Reads one HTTP/1.1 response from a buffered binary file (sock.makefile("rb")); returns
    (status, {lower-case header: value}, body). Handles Content-Length and chunked bodies; reuse
    the same file object for pipelined responses."""
    status_line = f.readline()
    assert status_line.startswith(b"HTTP/1."), f"bad status line {status_line!r}"
    status = int(status_line.split()[1])
    headers = {}
    while True:
        line = f.readline()
        assert line, "connection closed inside the response headers"
        if line in (b"\r\n", b"\n"):
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int(f.readline().split(b";")[0], 16)
            chunk = f.read(size + 2)[:size]
            if size == 0:
                break
            body += chunk
    else:
        body = f.read(int(headers.get("content-length", "0")))
    return status, headers, body


def run_to_exit(args, timeout=60):
    """Runs nereid with args (binary prepended) and returns CompletedProcess; a hang fails."""
    try:
        return subprocess.run([nereid_bin()] + list(args), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"nereid {' '.join(args)} did not exit within {timeout} s; "
                             f"stderr: {e.stderr!r}")


def infer_path(model, version=None):
    if version is None:
        return f"/v2/models/{model}/infer"
    return f"/v2/models/{model}/versions/{version}/infer"
