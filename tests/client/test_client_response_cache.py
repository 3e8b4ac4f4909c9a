"""Response cache (issue 16, seed 004, REFERENCE-2 §8) through Triton's own client: hits and misses
with seed 004's statistics over HTTP and gRPC (sync and aio), a hit answered for the current
request (id, requested outputs, binary/JSON), dynamic batching, a top-level ensemble, the per-model
and cache-wide metrics, the load errors, the flags' bad inputs, and the Redis cache shared by two
processes, surviving Redis restarts and garbage values."""

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import numpy as np
import pytest
import requests

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient)
from ensemble_repo import ensemble, identity, io, step
from nereid_server import free_port, run_to_exit

CACHE = "response_cache { enable: true }"


def build_repo(root):
    identity(root, "cached", extra=CACHE)
    identity(root, "cached_dyn", extra=CACHE + " dynamic_batching { }")
    identity(root, "uncached")
    identity(root, "ens_step")
    ensemble(root, "cached_ens", [io("IN")], [io("OUT")],
             [step("ens_step", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})], extra=CACHE)
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = build_repo(tmp_path_factory.mktemp("cache_repo"))
    with GrpcServer([str(root)], flags=["--cache-config=local,size=1048576"],
                    name="nereid-cache") as s:
        yield s


def stats(client, model):
    if isinstance(client, httpclient.InferenceServerClient):
        s = client.get_inference_statistics(model)["model_stats"][0]
        inf = s["inference_stats"]
        return {"hit": inf["cache_hit"]["count"], "miss": inf["cache_miss"]["count"],
                "success": inf["success"]["count"], "queue": inf["queue"]["count"],
                "infer": inf["compute_infer"]["count"],
                "inference_count": s["inference_count"], "execution_count": s["execution_count"]}
    s = client.get_inference_statistics(model).model_stats[0]
    inf = s.inference_stats
    return {"hit": inf.cache_hit.count, "miss": inf.cache_miss.count,
            "success": inf.success.count, "queue": inf.queue.count,
            "infer": inf.compute_infer.count,
            "inference_count": s.inference_count, "execution_count": s.execution_count}


def infer(client, model, data, request_id="", binary=True, in_name="INPUT0", out_name="OUTPUT0"):
    mod = httpclient if isinstance(client, httpclient.InferenceServerClient) else grpcclient
    inp = mod.InferInput(in_name, list(data.shape), "INT32")
    if mod is httpclient:
        inp.set_data_from_numpy(data, binary_data=binary)
        out = mod.InferRequestedOutput(out_name, binary_data=binary)
    else:
        inp.set_data_from_numpy(data)
        out = mod.InferRequestedOutput(out_name)
    return client.infer(model, [inp], outputs=[out], request_id=request_id)


def delta(after, before):
    return {k: after[k] - before[k] for k in after}


@pytest.mark.parametrize("proto", ["http", "grpc"])
def test_second_identical_request_is_a_hit_with_seed_004_statistics(server, proto):
    client = dict(clients(server))[proto]
    data = np.full((1, 16), 100 + (proto == "grpc"), dtype=np.int32)
    before = stats(client, "cached")
    first = infer(client, "cached", data, request_id="first")
    second = infer(client, "cached", data, request_id="second")
    np.testing.assert_array_equal(first.as_numpy("OUTPUT0"), data)
    np.testing.assert_array_equal(second.as_numpy("OUTPUT0"), data)
    if proto == "http":
        assert second.get_response()["id"] == "second"
    else:
        assert second.get_response().id == "second"
    d = delta(stats(client, "cached"), before)
    assert d == {"hit": 1, "miss": 1, "success": 2, "queue": 2, "infer": 1,
                 "inference_count": 1, "execution_count": 1}


def test_hit_follows_the_current_requests_binary_choice(server):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    data = np.full((1, 16), 7, dtype=np.int32)
    infer(client, "cached", data, binary=True)
    json_hit = infer(client, "cached", data, binary=False)
    out = json_hit.get_response()["outputs"][0]
    assert "data" in out and out["data"] == [7] * 16  # JSON, not binary, for this request
    np.testing.assert_array_equal(json_hit.as_numpy("OUTPUT0"), data)


def test_different_inputs_never_share_an_answer(server):
    client = grpcclient.InferenceServerClient(server.target())
    for v in range(5):
        data = np.arange(16, dtype=np.int32).reshape(1, 16) + 1000 * v
        for _ in range(2):
            np.testing.assert_array_equal(infer(client, "cached", data).as_numpy("OUTPUT0"), data)
    # Same bytes, another shape: not the same request.
    flat = np.arange(16, dtype=np.int32).reshape(2, 8)
    with pytest.raises(InferenceServerException):
        infer(client, "cached", flat)  # the model takes [16]; refused before the cache


def test_dynamic_batching_model_is_cached(server):
    client = grpcclient.InferenceServerClient(server.target())
    data = np.full((1, 16), 55, dtype=np.int32)
    before = stats(client, "cached_dyn")
    for _ in range(3):
        np.testing.assert_array_equal(infer(client, "cached_dyn", data).as_numpy("OUTPUT0"), data)
    d = delta(stats(client, "cached_dyn"), before)
    assert (d["hit"], d["miss"], d["success"], d["execution_count"]) == (2, 1, 3, 1)


def test_uncached_model_counts_no_cache_statistics(server):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    data = np.full((1, 16), 9, dtype=np.int32)
    before = stats(client, "uncached")
    infer(client, "uncached", data)
    infer(client, "uncached", data)
    d = delta(stats(client, "uncached"), before)
    assert (d["hit"], d["miss"], d["execution_count"]) == (0, 0, 2)


def test_ensemble_hit_skips_every_composing_model(server):
    client = grpcclient.InferenceServerClient(server.target())
    data = np.full((1, 16), 31, dtype=np.int32)
    ens_before = stats(client, "cached_ens")
    step_before = stats(client, "ens_step")
    for _ in range(2):
        r = infer(client, "cached_ens", data, in_name="IN", out_name="OUT")
        np.testing.assert_array_equal(r.as_numpy("OUT"), data)
    assert delta(stats(client, "cached_ens"), ens_before)["hit"] == 1
    step_d = delta(stats(client, "ens_step"), step_before)
    assert (step_d["hit"], step_d["execution_count"]) == (0, 1)


def test_aio_clients_hit(server):
    async def run():
        for name, client in aio_clients(server):
            data = np.full((1, 16), 300 + (name == "grpc"), dtype=np.int32)
            mod = httpclient if name == "http" else grpcclient
            for rid in ("a", "b"):
                inp = mod.InferInput("INPUT0", [1, 16], "INT32")
                inp.set_data_from_numpy(data)
                r = await client.infer("cached", [inp], request_id=rid)
                np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), data)
            s = await client.get_inference_statistics("cached")
            await client.close()
            hits = (s["model_stats"][0]["inference_stats"]["cache_hit"]["count"] if name == "http"
                    else s.model_stats[0].inference_stats.cache_hit.count)
            assert hits >= 1
    asyncio.run(run())


def test_metrics_per_model_and_cache_wide(server):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    data = np.full((1, 16), 4242, dtype=np.int32)
    infer(client, "cached", data)
    infer(client, "cached", data)
    text = requests.get(server.metrics_url()).text
    for family in ("nv_cache_num_hits_per_model", "nv_cache_num_misses_per_model",
                   "nv_cache_hit_duration_per_model", "nv_cache_miss_duration_per_model"):
        assert f'{family}{{model="cached",version="1"}}' in text, family
        assert f'{family}{{model="uncached"' not in text
    for family in ("nv_cache_num_entries", "nv_cache_num_lookups", "nv_cache_num_hits",
                   "nv_cache_num_misses", "nv_cache_num_evictions", "nv_cache_lookup_duration",
                   "nv_cache_insertion_duration", "nv_cache_util"):
        assert f"# TYPE {family} gauge" in text, family


def test_huge_response_larger_than_the_cache_is_answered_and_not_cached(tmp_path):
    identity(tmp_path, "big", dims=(65536,), extra=CACHE)
    with GrpcServer([str(tmp_path)], flags=["--cache-config=local,size=4096"],
                    name="nereid-cache-small") as s:
        client = grpcclient.InferenceServerClient(s.target())
        data = np.arange(65536, dtype=np.int32).reshape(1, 65536)
        for _ in range(2):
            np.testing.assert_array_equal(infer(client, "big", data).as_numpy("OUTPUT0"), data)
        st = stats(client, "big")
        assert (st["hit"], st["miss"], st["execution_count"]) == (0, 2, 2)


def test_deprecated_byte_size_flag_enables_the_local_cache(tmp_path):
    identity(tmp_path, "cached", extra=CACHE)
    with GrpcServer([str(tmp_path)], flags=["--response-cache-byte-size=1048576"],
                    name="nereid-cache-old") as s:
        client = grpcclient.InferenceServerClient(s.target())
        data = np.full((1, 16), 1, dtype=np.int32)
        infer(client, "cached", data)
        infer(client, "cached", data)
        assert stats(client, "cached")["hit"] == 1
        assert "'--response-cache-byte-size' has been deprecated" in s.stderr()


def test_decoupled_model_with_cache_fails_to_load(tmp_path):
    identity(tmp_path, "dec", extra=CACHE + " model_transaction_policy { decoupled: true }")
    identity(tmp_path, "ok", extra=CACHE)
    with GrpcServer([str(tmp_path)], flags=["--cache-config=local,size=1048576",
                                            "--exit-on-error=false"], name="nereid-cache-dec") as s:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        assert not client.is_model_ready("dec")
        assert client.is_model_ready("ok")
        index = {m["name"]: m for m in client.get_model_repository_index()}
        assert "'response_cache' is not supported with a 'decoupled'" in index["dec"]["reason"]


@pytest.mark.parametrize("flags,text", [
    (["--cache-config=local"],
     "No cache specified. --cache-config option format is <cache name>,<setting>=<value>. "
     "Got local"),
    (["--cache-config=local,size"],
     "--cache-config option format is '<cache name>,<setting>=<value>'. Got local,size"),
    (["--cache-config=local,size=0"],
     "Failed to initialize LocalCache: config didn't contain a valid 'size' field."),
    (["--cache-config=local,size=-5"],
     "Failed to initialize LocalCache: config didn't contain a valid 'size' field."),
    (["--cache-config=local,size=abc"],
     "Failed to initialize LocalCache: config didn't contain a valid 'size' field."),
    (["--cache-config=local,bytes=10"],
     "Failed to initialize LocalCache: config didn't contain a valid 'size' field."),
    (["--cache-config=memcached,size=10"],
     "unknown cache 'memcached': this build has the 'local' and 'redis' caches"),
    (["--cache-config=local,size=10", "--cache-config=redis,host=x"],
     "found multiple cache configurations, but only a single cache is currently supported"),
    (["--cache-config=local,size=10", "--response-cache-byte-size=10"],
     "Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. "
     "Please provide one or the other."),
    (["--cache-config=redis,host=127.0.0.1"],
     "Failed to initialize RedisCache, didn't specify address."),
    (["--cache-config=redis,host=127.0.0.1", "--cache-config=redis,port=abc"],
     "Failed to initialize RedisCache: 'port' must be a non-negative integer, got 'abc'"),
    (["--cache-config=redis,host=127.0.0.1", "--cache-config=redis,port=1",
      "--cache-config=redis,tls_enabled=true"],
     "Failed to initialize RedisCache: tls_enabled is not supported by this build"),
])
def test_bad_cache_flags_refuse_to_start(tmp_path, flags, text):
    p = run_to_exit([f"--model-repository={tmp_path}", "--allow-grpc=false",
                     "--allow-http=false", "--allow-metrics=false"] + flags)
    assert p.returncode != 0
    assert text in p.stderr.decode(), p.stderr.decode()


def test_unreachable_redis_refuses_to_start(tmp_path):
    port = free_port()  # nothing listens there
    p = run_to_exit([f"--model-repository={tmp_path}", "--allow-grpc=false",
                     "--allow-http=false", "--allow-metrics=false",
                     "--cache-config=redis,host=127.0.0.1", f"--cache-config=redis,port={port}"])
    assert p.returncode != 0
    assert (f"Failed to initialize RedisCache: failed to connect to Redis (127.0.0.1:{port}): "
            "Connection refused") in p.stderr.decode()


# ---- Redis: a real redis-server on a free loopback port, started and stopped by the tests.

REDIS = shutil.which("redis-server") or ("/usr/bin/redis-server"
                                         if os.path.exists("/usr/bin/redis-server") else None)
needs_redis = pytest.mark.skipif(REDIS is None,
                                 reason="redis-server is not installed (scripts/setup installs it)")


class Redis:
    def __init__(self, port=None):
        self.port = port or free_port()
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([REDIS, "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--save", "", "--appendonly", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def command(self, *args):
        """One command in RESP; returns the raw reply."""
        body = f"*{len(args)}\r\n".encode()
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            body += f"${len(a)}\r\n".encode() + a + b"\r\n"
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
            s.sendall(body)
            time.sleep(0.05)
            return s.recv(1 << 20)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None


@pytest.fixture
def redis():
    r = Redis().start()
    yield r
    r.stop()


def redis_server(root, redis, name, extra=()):
    return GrpcServer([str(root)], name=name, flags=[
        "--cache-config=redis,host=127.0.0.1", f"--cache-config=redis,port={redis.port}",
        "--cache-config=redis,socket_timeout=2000", "--cache-config=redis,connect_timeout=500",
        *extra])


@needs_redis
def test_two_processes_share_hits_through_redis(tmp_path, redis):
    identity(tmp_path, "cached", extra=CACHE)
    with redis_server(tmp_path, redis, "nereid-redis-a") as a, \
            redis_server(tmp_path, redis, "nereid-redis-b") as b:
        ca = grpcclient.InferenceServerClient(a.target())
        cb = httpclient.InferenceServerClient(f"127.0.0.1:{b.port}")
        data = np.full((1, 16), 77, dtype=np.int32)
        np.testing.assert_array_equal(infer(ca, "cached", data).as_numpy("OUTPUT0"), data)
        r = infer(cb, "cached", data, request_id="from-b")
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), data)
        assert r.get_response()["id"] == "from-b"
        sa, sb = stats(ca, "cached"), stats(cb, "cached")
        assert (sa["miss"], sa["hit"]) == (1, 0)
        assert (sb["hit"], sb["miss"], sb["execution_count"]) == (1, 0, 0)


@needs_redis
def test_redis_killed_and_restarted_mid_run(tmp_path, redis):
    identity(tmp_path, "cached", extra=CACHE)
    with redis_server(tmp_path, redis, "nereid-redis-restart") as s:
        c = grpcclient.InferenceServerClient(s.target())
        data = np.full((1, 16), 5, dtype=np.int32)
        infer(c, "cached", data)
        redis.stop()
        for i in range(5):  # every request answered, as misses
            other = np.full((1, 16), 600 + i, dtype=np.int32)
            np.testing.assert_array_equal(infer(c, "cached", other).as_numpy("OUTPUT0"), other)
        log = s.stderr()
        assert log.count("Redis response cache unreachable") == 1  # one warning per outage
        redis.start()  # the same port
        time.sleep(1.2)  # reconnection is attempted at most once a second
        again = np.full((1, 16), 900, dtype=np.int32)
        infer(c, "cached", again)
        infer(c, "cached", again)
        deadline = time.time() + 5
        while stats(c, "cached")["hit"] < 1 and time.time() < deadline:
            infer(c, "cached", again)
            time.sleep(0.2)
        assert stats(c, "cached")["hit"] >= 1
        assert "Redis response cache reachable again" in s.stderr()


@needs_redis
def test_garbage_value_in_redis_is_a_miss_and_a_warning(tmp_path, redis):
    identity(tmp_path, "cached", extra=CACHE)
    with redis_server(tmp_path, redis, "nereid-redis-garbage") as s:
        c = grpcclient.InferenceServerClient(s.target())
        data = np.full((1, 16), 11, dtype=np.int32)
        infer(c, "cached", data)
        keys = redis.command("KEYS", "*")
        key = [k for k in keys.split(b"\r\n") if k.isdigit() and len(k) > 5][0]
        for garbage in (b"\x01garbage", b"\x07", b"", b"\x01" + b"\xff" * 40):
            assert redis.command("SET", key, garbage).startswith(b"+OK")
            np.testing.assert_array_equal(infer(c, "cached", data).as_numpy("OUTPUT0"), data)
        assert stats(c, "cached")["hit"] == 0
        assert "ignoring the value of key" in s.stderr()


@needs_redis
def test_concurrent_identical_misses_all_answered(tmp_path, redis):
    identity(tmp_path, "cached", extra=CACHE)
    with redis_server(tmp_path, redis, "nereid-redis-conc", ["--cache-config=redis,pool_size=4"]) as s:
        data = np.full((1, 16), 123, dtype=np.int32)
        errors = []

        def worker():
            try:
                c = grpcclient.InferenceServerClient(s.target())
                for _ in range(10):
                    np.testing.assert_array_equal(infer(c, "cached", data).as_numpy("OUTPUT0"),
                                                  data)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        st = stats(grpcclient.InferenceServerClient(s.target()), "cached")
        assert st["success"] == 80
        # An insert that finds an identical request's entry is neither a hit nor a miss (#5384).
        assert 1 <= st["miss"] and st["hit"] + st["miss"] <= 80
        assert st["hit"] >= 60


@pytest.mark.parametrize("proto", ["http", "grpc"])
def test_hit_writes_into_the_current_requests_shared_memory_output(tmp_path, proto):
    import tritonclient.utils.shared_memory as shm
    identity(tmp_path, "cached", extra=CACHE)
    with GrpcServer([str(tmp_path)], name="nereid-cache-shm",
                    flags=["--cache-config=local,size=1048576", "--allow-client-shm=true"]) as s:
        client = dict(clients(s))[proto]
        mod = httpclient if proto == "http" else grpcclient
        data = np.full((1, 16), 2024, dtype=np.int32)
        handles = []
        try:
            for i in range(2):  # the first request misses, the second hits: each its own region
                key = f"/nereid_cache_shm_{os.getpid()}_{proto}_{i}"
                h = shm.create_shared_memory_region(f"out{i}", key, 64)
                handles.append(h)
                client.register_system_shared_memory(f"out{i}", key, 64)
                inp = mod.InferInput("INPUT0", [1, 16], "INT32")
                inp.set_data_from_numpy(data)
                out = mod.InferRequestedOutput("OUTPUT0")
                out.set_shared_memory(f"out{i}", 64)
                client.infer("cached", [inp], outputs=[out])
                got = shm.get_contents_as_numpy(h, np.int32, [1, 16])
                np.testing.assert_array_equal(got, data)
            assert stats(client, "cached")["hit"] == 1
        finally:
            client.unregister_system_shared_memory()
            for h in handles:
                shm.destroy_shared_memory_region(h)
