"""`request.set_release_flags(...)`: TRITONSERVER_REQUEST_RELEASE_ALL is accepted (a no-op, what
every request gets); TRITONSERVER_REQUEST_RELEASE_RESCHEDULE with a response returned for that
request fails it with Triton's text (the request must get None; test_client_python_reschedule.py
covers rescheduling itself), and a flag that is no int raises in `execute`, which fails the
request with Triton's execute error prefix; the instance lives."""

import numpy as np
import pytest

from client_support import GrpcServer, InferenceServerException, clients, grpcclient, httpclient
import python_models

MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            flag = {0: pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL,
                    1: pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE}.get(int(x[0]), "x")
            r.set_release_flags(flag)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x)]))
        return out
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("release_flags")
    (root / "release_py" / "1").mkdir(parents=True)
    (root / "release_py" / "config.pbtxt").write_text(python_models.config(
        "release_py", [python_models.io("IN", "TYPE_INT32", [1])],
        [python_models.io("OUT", "TYPE_INT32", [1])]))
    (root / "release_py" / "1" / "model.py").write_text(MODEL)
    s = GrpcServer([str(root)], name="client-python-release-flags").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def infer(kind, client, value):
    mod = httpclient if kind == "http" else grpcclient
    t = mod.InferInput("IN", [1], "INT32")
    t.set_data_from_numpy(np.array([value], dtype=np.int32))
    return client.infer("release_py", [t]).as_numpy("OUT").tolist()


def test_release_all_is_accepted(server):
    for kind, c in clients(server):
        assert infer(kind, c, 0) == [0], kind
        c.close()


@pytest.mark.parametrize("value,text", [
    (1, "Expected a None object in the execute function return list for reschduled request, "
        "found type 'InferenceResponse'."),
    (2, "TypeError: set_release_flags takes an int, got 'x'"),
])
def test_unsupported_flags_fail_the_request_clearly(server, value, text):
    for kind, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            infer(kind, c, value)
        assert ("Failed to process the request(s) for model 'release_py_0', message: " + text
                in str(e.value)), (kind, str(e.value))
        assert infer(kind, c, 0) == [0], kind  # the instance lives
        c.close()
