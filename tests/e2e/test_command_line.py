"""Triton's repeatable flags (REFERENCE.md §3, server:src/command_line_parser.cc): each may be
given more than once, and a bad occurrence stops start-up with exit code 1 and Triton's own
message on stderr. Single-valued flags keep their last occurrence, as Triton's getopt loop does.
The restricted APIs' effect on clients is in tests/client/test_restricted_api.py, the metrics
configuration's in tests/client/test_metrics_config.py."""

import pytest
import requests

from grpc_helpers import GrpcServer, pbs  # noqa: F401
from helpers import Server, free_port, repo, run_to_exit


def start_error(args):
    p = run_to_exit([f"--model-repository={repo('fixtures', 'single_good')}",
                     f"--http-port={free_port()}", "--allow-grpc=false", "--allow-metrics=false"]
                    + args)
    return p.returncode, p.stderr.decode("utf-8", "replace").strip()


def bad(flag, message):
    return f'Bad option: "--{flag}". {message}'


FORMAT = "option format is"

ERRORS = [
    # --http-restricted-api / --grpc-restricted-protocol
    (["--http-restricted-api=health:k=v", "--http-restricted-api=metadata,health:k2=v"],
     bad("http-restricted-api",
         "restricted api 'health' can not be specified in multiple config groups")),
    (["--http-restricted-api=health,X:k=v"],
     bad("http-restricted-api", "unknown restricted api 'X'")),
    (["--http-restricted-api=health"],
     bad("http-restricted-api", "--http-restricted-api option format is "
                                "'<config name>:<setting>=<value>'. Got health")),
    (["--grpc-restricted-protocol=inference:k=v", "--grpc-restricted-protocol=inference:j=w"],
     bad("grpc-restricted-protocol",
         "restricted protocol 'inference' can not be specified in multiple config groups")),
    (["--grpc-restricted-protocol=nope:k=v"],
     bad("grpc-restricted-protocol", "unknown restricted protocol 'nope'")),
    # --cache-config (and the deprecated --response-cache-byte-size)
    (["--cache-config=local,size=1048576", "--cache-config=redis,host=localhost"],
     "found multiple cache configurations, but only a single cache is currently supported"),
    (["--response-cache-byte-size=1024", "--cache-config=local,size=1048576"],
     "Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. "
     "Please provide one or the other."),
    (["--cache-config=size=1048576"],
     bad("cache-config", "No cache specified. --cache-config option format is <cache name>,"
                         "<setting>=<value>. Got size=1048576")),
    (["--cache-config=local,size"],
     bad("cache-config", "--cache-config option format is '<cache name>,<setting>=<value>'. "
                         "Got local,size")),
    # --trace-config
    (["--trace-config=rate=10", "--trace-config=jaeger,url=x"],
     bad("trace-config", 'invalid value for trace mode option: jaeger. Available options are '
                         '"triton" and "opentelemetry"')),
    (["--trace-config=level=TIMESTAMPS", "--trace-config=level=loud"],
     bad("trace-config level", "invalid value for trace level option: loud")),
    (["--trace-config=rate=often"], bad("trace-config rate", "Invalid option value. Got often")),
    # --backend-config
    (["--backend-config=onnxruntime,a=1", "--backend-config=,a=1"],
     bad("backend-config", "No backend specified. --backend-config option format is <backend "
                           "name>,<setting>=<value> or <setting>=<value>. Got ,a=1")),
    (["--backend-config=onnxruntime,a"],
     bad("backend-config", "--backend-config option format is '<backend name>,<setting>="
                           "<value>'. Got onnxruntime,a")),
    # --metrics-config
    (["--metrics-config=summary_latencies=true", "--metrics-config=histogram_latencies"],
     bad("metrics-config", "--metrics-config option format is <setting>=<value>. "
                           "Got histogram_latencies")),
    (["--metrics-config=a,summary_latencies=true"],
     bad("metrics-config", "--metrics-config option format is <setting>=<value>. "
                           "Got a,summary_latencies=true")),
    # --load-model
    (["--load-model=simple", "--load-model=other"],
     "Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well."),
    (["--model-control-mode=explicit", "--load-model=*", "--load-model=simple"],
     "Wildcard model name '*' must be the ONLY startup model if specified at all."),
    # --host-policy, --rate-limit-resource, pair flags
    (["--host-policy=gpu_0,numa-node=0", "--host-policy=numa-node=1"],
     bad("host-policy", "--host-policy option format is '<policy name>,<setting>=<value>'. "
                        "Got numa-node=1")),
    (["--rate-limit-resource=R1:4", "--rate-limit-resource=R2"],
     bad("rate-limit-resource", "--rate-limit-resource option format is "
                                "'<resource_name>:<count>:<device>' or '<resource_name>:<count>'."
                                " Got R2")),
    (["--cuda-memory-pool-byte-size=0:1024", "--cuda-memory-pool-byte-size=1024"],
     bad("cuda-memory-pool-byte-size",
         "Cannot parse pair option due to incorrect number of inputs.--<pair option> argument "
         "requires format <first>:<second>. Found: 1024")),
    (["--cuda-virtual-address-size=0:x"],
     bad("cuda-virtual-address-size", "Invalid option value. Got x")),
    (["--model-load-gpu-limit=0:0.5", "--model-load-gpu-limit=1:half"],
     bad("model-load-gpu-limit", "Invalid option value. Got half")),
    # single-valued flags with Triton's checks
    (["--http-max-input-size=0"],
     bad("http-max-input-size", "Error: --http-max-input-size must be greater than 0.")),
    (["--grpc-max-response-pool-size=0"],
     bad("grpc-max-response-pool-size",
         "Error: --grpc-max-response-pool-size must be greater than 0.")),
    (["--model-control-mode=sometimes"],
     bad("model-control-mode", "invalid argument for --model-control-mode")),
    (["--rate-limit=sometimes"], bad("rate-limit", "invalid argument for --rate-limit")),
    (["--allow-http=yes"], bad("allow-http", "invalid value for bool option: yes")),
    (["--log-verbose=loud"], bad("log-verbose", "Invalid option value. Got loud")),
]


@pytest.mark.parametrize("args,message", ERRORS, ids=[" ".join(a) for a, _ in ERRORS])
def test_bad_flag_stops_start_up_with_tritons_message(args, message):
    code, err = start_error(args)
    assert code == 1, err
    assert err == f"error: {message} (see --help)"


def test_http_and_grpc_on_one_address_and_port_collide():
    port = free_port()
    p = run_to_exit([f"--model-repository={repo('fixtures', 'single_good')}",
                     f"--http-port={port}", f"--grpc-port={port}", "--allow-metrics=false"])
    assert p.returncode == 1
    assert p.stderr.decode().strip() == (
        "error: The server cannot listen to HTTP requests and GRPC requests at the same address "
        f"and port 0.0.0.0:{port} (see --help)")


def test_repeated_model_repositories_are_all_served_and_duplicates_collapse(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "simple").symlink_to(repo("examples", "simple"))
    (b / "vardim_fp32").symlink_to(repo("examples", "vardim_fp32"))
    # The same repository twice is one repository (Triton keeps a set), not a name clash.
    with Server([str(a), str(b)], [f"--model-store={a}"], name="repeat-repos") as s:
        assert s.get("/v2/models/simple/ready").status_code == 200
        assert s.get("/v2/models/vardim_fp32/ready").status_code == 200
        names = sorted(m["name"] for m in s.post("/v2/repository/index", json={}).json())
        assert names == ["simple", "vardim_fp32"]


def test_repeated_load_model_loads_each_once():
    flags = ["--model-control-mode=explicit", "--load-model=simple", "--load-model=simple_string",
             "--load-model=simple"]
    with Server([repo("examples")], flags, name="repeat-load-model") as s:
        ready = {m["name"]: m.get("state") for m in s.post("/v2/repository/index",
                                                             json={"ready": True}).json()}
        assert set(ready) == {"simple", "simple_string"}


def test_repeated_backend_and_compat_config_flags_start_and_are_named():
    flags = ["--backend-config=onnxruntime,enable-global-threadpool=0",
             "--backend-config=default-max-batch-size=8",
             "--cache-config=local,size=1048576", "--cache-config=local,other=1",
             "--trace-config=rate=100", "--trace-config=triton,file=/tmp/nereid-trace.json",
             "--host-policy=gpu_0,numa-node=0", "--host-policy=cpu,cpu-cores=0-1",
             "--rate-limit-resource=R1:4", "--rate-limit-resource=R2:2:0",
             "--cuda-memory-pool-byte-size=0:1024", "--cuda-memory-pool-byte-size=1:1024",
             "--model-load-gpu-limit=0:0.5", "--model-load-gpu-limit=1:0.5"]
    with Server([repo("fixtures", "single_good")], flags, name="repeat-compat") as s:
        assert s.get("/v2/health/ready").status_code == 200
        log = s.stderr()
    # --cache-config has an effect now (issue 16): merged per name, the local cache created.
    assert "Response cache 'local' enabled" in log
    # --trace-config has an effect now (the trace extension): not named as ignored.
    assert "option --trace-config" not in log
    for value in ["--host-policy=cpu,cpu-cores=0-1", "--rate-limit-resource=R2:2:0",
                  "--cuda-memory-pool-byte-size=1:1024", "--model-load-gpu-limit=1:0.5"]:
        assert (f"option {value} is accepted for Triton compatibility but has no effect in this "
                "build") in log, value


def test_single_valued_flags_keep_their_last_occurrence():
    flags = ["--id=first", "--id=second", "--model-load-thread-count=1",
             "--model-load-thread-count=4", "--strict-readiness=false", "--strict-readiness=ON",
             "--log-verbose=false", "--log-verbose=true"]
    with Server([repo("fixtures", "single_good")], flags, name="repeat-single") as s:
        assert s.get("/v2").json()["name"] == "second"
        assert s.get("/v2/health/ready").status_code == 200
        assert "HTTP: at most" in s.stderr()  # a verbose (level 1) line: --log-verbose=true


def test_restricted_groups_from_repeated_flags_are_enforced():
    flags = ["--http-restricted-api=metadata:meta-key=m",
             "--http-restricted-api=model-config,statistics:admin-key=a"]
    with Server([repo("examples")], flags, name="repeat-restricted") as s:
        r = s.get("/v2/models/simple")
        assert r.status_code == 403
        assert r.json() == {"error": "This API is restricted, expecting header 'meta-key'"}
        assert s.get("/v2/models/simple", headers={"meta-key": "m"}).status_code == 200
        r = s.get("/v2/models/simple/config", headers={"meta-key": "m"})
        assert r.status_code == 403
        assert r.json() == {"error": "This API is restricted, expecting header 'admin-key'"}
        assert s.get("/v2/models/simple/config", headers={"admin-key": "a"}).status_code == 200
        assert s.get("/v2/models/simple/stats", headers={"admin-key": "a"}).status_code == 200
        assert requests.get(s.url("/v2/health/ready"), timeout=10).status_code == 200


def test_grpc_health_service_is_in_the_health_group(pbs):  # noqa: F811
    import grpc

    with GrpcServer([repo("fixtures", "single_good")],
                    ["--grpc-restricted-protocol=health:hkey=hval"], name="restricted-health") as s:
        request = pbs.health.HealthCheckRequest()
        with pytest.raises(grpc.RpcError) as e:
            s.health_stub().Check(request, timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert e.value.details() == "Missing or mismatched restricted header"
        reply = s.health_stub().Check(request, timeout=10,
                                      metadata=[("triton-grpc-protocol-hkey", "hval")])
        assert reply.status == pbs.health.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as e:
            s.stub().ServerLive(pbs.pb.ServerLiveRequest(), timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert e.value.details() == \
            "This protocol is restricted, expecting header 'triton-grpc-protocol-hkey'"
