"""EXECUTION_ENV_PATH (a model parameter): a directory environment with bin/activate. The stub
stays Debian's /usr/bin/python3 (issue 18's security rule) with the environment's site-packages
first on sys.path and VIRTUAL_ENV / PATH set as activate would; neither the environment's
activate script nor a `triton_python_backend_stub` in the model folder ever runs.

The environment is a venv the test makes (`/usr/bin/python3 -m venv --without-pip`) with a tiny
package, `nereid_env_probe`, dropped into its site-packages; the model imports it."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from client_support import GrpcServer, InferenceServerException, clients, grpcclient, httpclient
import python_models

PROBE = '''
import json
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils

import nereid_env_probe


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            seen = json.dumps({"virtual_env": os.environ.get("VIRTUAL_ENV"),
                               "path0": os.environ.get("PATH", "").split(":")[0],
                               "executable": sys.executable,
                               "probe": nereid_env_probe.__file__})
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", x + nereid_env_probe.VALUE),
                pb_utils.Tensor("SEEN", np.array([seen.encode()], dtype=np.object_))]))
        return out
'''

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def make_venv(path, marker):
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(path)], check=True)
    pkg = path / "lib" / PY / "site-packages" / "nereid_env_probe"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("VALUE = 42\n")
    # Sourcing activate would leave the marker: it must never run.
    with open(path / "bin" / "activate", "a") as f:
        f.write(f"\ntouch {marker}\n")


def write_model(root, name, env_value, code=PROBE):
    (root / name / "1").mkdir(parents=True)
    outputs = [python_models.io("OUT", "TYPE_INT64", [-1]),
               python_models.io("SEEN", "TYPE_STRING", [1])]
    extra = ""
    if env_value is not None:
        extra = ('parameters: { key: "EXECUTION_ENV_PATH" value: { string_value: "'
                 + env_value + '" } }')
    (root / name / "config.pbtxt").write_text(python_models.config(
        name, [python_models.io("IN", "TYPE_INT64", [-1])], outputs, extra=extra))
    (root / name / "1" / "model.py").write_text(code)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("execution_env")
    marker = root / "activate_ran"
    stub_marker = root / "stub_ran"
    write_model(root, "env_py", "$$TRITON_MODEL_DIRECTORY/env")
    make_venv(root / "env_py" / "env", marker)
    # A stub in the model folder is never executed (REFERENCE-2 §10.3).
    stub = root / "env_py" / "triton_python_backend_stub"
    stub.write_text(f"#!/bin/sh\ntouch {stub_marker}\n")
    stub.chmod(0o755)
    # An environment outside the model, by absolute path.
    make_venv(root / "shared_env", marker)
    write_model(root, "abs_env_py", str(root / "shared_env"))
    write_model(root, "escape_py", "$$TRITON_MODEL_DIRECTORY/../shared_env")
    write_model(root, "no_activate_py", "$$TRITON_MODEL_DIRECTORY/bare")
    (root / "no_activate_py" / "bare" / "lib").mkdir(parents=True)
    write_model(root, "tarball_py", "$$TRITON_MODEL_DIRECTORY/env.tar.gz")
    (root / "tarball_py" / "env.tar.gz").write_bytes(b"\x1f\x8b not really")
    write_model(root, "old_python_py", "$$TRITON_MODEL_DIRECTORY/old")
    old = root / "old_python_py" / "old"
    (old / "bin").mkdir(parents=True)
    (old / "bin" / "activate").write_text("# activate\n")
    (old / "pyvenv.cfg").write_text("home = /opt/python2/bin\nversion = 2.7.18\n")
    write_model(root, "no_env_py", None)  # imports the probe without an environment
    return root


@pytest.fixture(scope="module")
def server(repo):
    s = GrpcServer([str(repo)], ["--model-control-mode=explicit"],
                   name="client-python-execution-env").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def infer(kind, client, model):
    mod = httpclient if kind == "http" else grpcclient
    x = np.array([1, 2, 3], dtype=np.int64)
    t = mod.InferInput("IN", [3], "INT64")
    t.set_data_from_numpy(x)
    result = client.infer(model, [t])
    return result.as_numpy("OUT"), json.loads(result.as_numpy("SEEN")[0])


@pytest.mark.parametrize("model,env_dir", [("env_py", "env_py/env"), ("abs_env_py", "shared_env")])
def test_model_imports_from_the_environment(server, repo, model, env_dir):
    env = os.path.realpath(repo / env_dir)
    for kind, c in clients(server):
        c.load_model(model)
        out, seen = infer(kind, c, model)
        np.testing.assert_array_equal(out, [43, 44, 45])
        assert seen["virtual_env"] == env
        assert seen["path0"] == env + "/bin"
        assert seen["executable"] == "/usr/bin/python3"  # never the environment's python
        assert seen["probe"].startswith(env + "/lib/"), seen
        c.close()
    assert not (repo / "activate_ran").exists()
    assert not (repo / "stub_ran").exists()


def load_error(server, model):
    """The load error of `model` through both clients (the same text)."""
    texts = []
    for _, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            c.load_model(model)
        texts.append(str(e.value))
        c.close()
    assert len({re.sub(r"^\[[^]]*\] ", "", t) for t in texts}) == 1, texts
    return texts[0]


def test_missing_activate_has_tritons_text(server, repo):
    text = load_error(server, "no_activate_py")
    assert (f"Path {repo}/no_activate_py/bare/bin/activate does not exist. The Python "
            "environment should contain an 'activate' script.") in text, text


def test_model_directory_path_may_not_escape(server):
    text = load_error(server, "escape_py")
    assert "EXECUTION_ENV_PATH '" in text and "resolves outside the model directory" in text, text


def test_tarball_is_refused_clearly(server):
    text = load_error(server, "tarball_py")
    assert "only directory environments (with bin/activate) are supported" in text, text


def test_other_python_version_is_refused(server, repo):
    text = load_error(server, "old_python_py")
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert (f"is an environment of Python 2.7, but the Python backend stub runs Python {ours} "
            "(Debian's python3)") in text, text
    assert not (repo / "activate_ran").exists()


def test_without_the_environment_the_package_is_missing(server):
    text = load_error(server, "no_env_py")
    assert "ModuleNotFoundError: No module named 'nereid_env_probe'" in text, text
