"""pytest wiring shared by Nereid's end-to-end suites (tests/e2e and tests/client import it from
their conftest.py).

Required environment (see tests/e2e/README.md):
  NEREID_BIN     path to the built `nereid` binary
  NEREID_MODELS  folder where `scripts/gen_test_models.py --examples $NEREID_MODELS/examples
                 --fixtures $NEREID_MODELS/fixtures` wrote the repositories
Missing or wrong values stop the run with an error instead of skipping tests.
"""

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import grpc_isolation  # noqa: E402
import helpers  # noqa: E402
import nereid_server  # noqa: E402
from helpers import Server, repo  # noqa: E402

grpc_isolation.install()

REQUIRED_REPOS = [
    ("examples",), ("fixtures", "types"), ("fixtures", "features"), ("fixtures", "broken"),
    ("fixtures", "single_good"), ("fixtures", "management"),
    ("fixtures", "torch"), ("fixtures", "torch_broken"), ("fixtures", "batching"),
    ("fixtures", "stats"), ("fixtures", "sequence"),
]


def pytest_configure(config):
    problems = []
    binary = os.environ.get(helpers.BIN_ENV)
    if not binary:
        problems.append(f"{helpers.BIN_ENV} is not set: point it at the built nereid binary, "
                        "e.g. NEREID_BIN=build/release/nereid")
    elif not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        problems.append(f"{helpers.BIN_ENV}={binary} is not an executable file "
                        "(build it with scripts/build)")
    models = os.environ.get(helpers.MODELS_ENV)
    if not models:
        problems.append(f"{helpers.MODELS_ENV} is not set: run scripts/gen_test_models.py "
                        "--examples $NEREID_MODELS/examples --fixtures $NEREID_MODELS/fixtures")
    else:
        for parts in REQUIRED_REPOS:
            path = os.path.join(models, *parts)
            if not os.path.isdir(path):
                problems.append(f"model repository {path} does not exist: run "
                                "scripts/gen_test_models.py --examples $NEREID_MODELS/examples "
                                "--fixtures $NEREID_MODELS/fixtures")
    if problems:
        raise pytest.UsageError("end-to-end tests cannot run:\n  " + "\n  ".join(problems))
    # Servers are started from other working directories' point of view too: make paths absolute.
    os.environ[helpers.BIN_ENV] = os.path.abspath(binary)
    os.environ[helpers.MODELS_ENV] = os.path.abspath(models)


# ------------------------------------------------------------------------------------ reports

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item._nereid_first_server = len(helpers.STARTED_SERVERS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    servers = list(helpers.STARTED_SERVERS[getattr(item, "_nereid_first_server", 0):])
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Server) and value not in servers:
            servers.append(value)
    for s in servers:
        text = s.stderr()
        if len(text) > 8000:
            text = "...\n" + text[-8000:]
        state = "running" if s.alive() else f"exited {s.proc.returncode if s.proc else None}"
        report.sections.append((f"nereid stderr: {s.name} port {s.port} ({state})", text))


# ------------------------------------------------------------------------------------ servers

def _serve(repos, name):
    s = Server(repos, name=name).start()
    try:
        yield s
    finally:
        rc = s.stop()
    # A clean SIGTERM exit also proves the server survived everything the module sent it.
    assert rc == 0, f"{name} server exited with {rc} at teardown:\n{s.stderr()[-4000:]}"


@pytest.fixture(scope="module")
def examples_server():
    yield from _serve([repo("examples")], "examples")


@pytest.fixture(scope="module")
def types_server():
    yield from _serve([repo("fixtures", "types")], "types")


@pytest.fixture(scope="module")
def features_server():
    yield from _serve([repo("fixtures", "features")], "features")


# ------------------------------------------------------------------------------------ sanitizers

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "WARNING: ThreadSanitizer")


def pytest_sessionfinish(session, exitstatus):
    """A sanitizer build (scripts/test --sanitize) reports into the servers' stderr, which a test
    may never look at (a leak shows only at exit): any report fails the run. Then every server
    still running is killed, and the logs are removed when the run passed."""
    found = []
    for s in helpers.STARTED_SERVERS:
        text = s.stderr()
        for marker in SANITIZER_MARKERS:
            at = text.find(marker)
            if at >= 0:
                found.append(f"--- {s.name} port {s.port}: {s.stderr_path}\n"
                             f"{text[max(0, at - 200):at + 3000]}")
                break
    if found:
        print("\nSanitizer reports in nereid's output:\n" + "\n".join(found), file=sys.stderr)
        session.exitstatus = 1
    for s in helpers.STARTED_SERVERS:
        s.kill()
    # Keep the server logs only when something failed.
    if session.exitstatus == 0 and nereid_server._LOG_DIR is not None:
        shutil.rmtree(nereid_server._LOG_DIR, ignore_errors=True)
