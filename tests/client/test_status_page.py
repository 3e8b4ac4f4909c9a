"""The built-in status page (GET / on the HTTP port; beyond Triton, docs/operations.md) against the
real binary: traffic and model loads go through Triton's own client (HTTP and gRPC, sync and
asyncio), and the page must show them. The page is parsed with html.parser (well-formed, no
script, no external asset, every model, state, count and chart, hostile names escaped), turned off
with --allow-status-page=false (then Triton's 404), refused by --http-restricted-api, and rendered
by a real headless browser (Debian's chromium) whose screenshot is kept in the test artifacts
directory (build/test_artifacts/status_page/, or $NEREID_ARTIFACTS_DIR/status_page/)."""

import asyncio
import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser

import numpy as np
import pytest
import requests

from client_support import (ROOT, GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient)
from helpers import repo

# A platform no backend serves: its load error (the page's reason) carries markup.
HOSTILE_PLATFORM = "<script>alert(1)</script>"
HOSTILE_DIR = "odd<b>name&\"'"  # a directory name is a model name: markup and quotes in it
VOID = {"meta", "br", "img", "input", "hr", "link", "col", "area", "base", "wbr", "source"}
SVG_LEAVES = {"rect", "text", "title"}  # may be self-closed inside an SVG


def write_repo(root):
    shutil.copytree(repo("examples", "simple"), root / "simple")
    shutil.copytree(repo("fixtures", "stats", "odd_fails"), root / "odd_fails")  # odd sizes fail
    shutil.copytree(repo("examples", "simple"), root / "spare")  # never loaded (explicit mode)
    config = (root / "spare" / "config.pbtxt").read_text()
    (root / "spare" / "config.pbtxt").write_text(config.replace('name: "simple"', 'name: "spare"'))
    (root / "evil" / "1").mkdir(parents=True)
    (root / "evil" / "config.pbtxt").write_text(
        f'name: "evil"\nplatform: "{HOSTILE_PLATFORM}"\nmax_batch_size: 0\n')
    (root / HOSTILE_DIR / "1").mkdir(parents=True)
    return root


class Page(HTMLParser):
    """The parsed page: checks nesting as it goes, keeps table rows as lists of cell texts."""

    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.tags = [], [], []
        self.rows = {}  # table id -> [[cell text, ...], ...]
        self.attrs_seen = []
        self.meta_refresh = None
        self._table = None
        self._row = None
        self._cell = None
        self.feed(html)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        self.attrs_seen.append((tag, a))
        if tag == "meta" and a.get("http-equiv") == "refresh":
            self.meta_refresh = a.get("content")
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "table":
            self._table = a.get("id")
            self.rows[self._table] = []
        elif tag == "tr" and self._table:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs_seen.append((tag, dict(attrs)))
        if tag not in VOID and tag not in SVG_LEAVES:
            self.errors.append(f"self-closed <{tag}/>")

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def models(self):
        """{(model, version): {column: text}} from the models table."""
        head, *body = self.rows["models"]
        return {(r[0], r[1]): dict(zip(head, r)) for r in body}


def get_page(server, headers=None):
    r = requests.get(server.url("/"), headers=headers, timeout=10)
    assert r.status_code == 200, (r.status_code, r.text)
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.headers["Cache-Control"] == "no-store"
    page = Page(r.text)
    assert page.errors == [], page.errors
    return page


def simple_inputs(module, batch):
    a = np.arange(16 * batch, dtype=np.int32).reshape(batch, 16)
    inputs = [module.InferInput("INPUT0", [batch, 16], "INT32"),
              module.InferInput("INPUT1", [batch, 16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(a)
    return inputs


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = write_repo(tmp_path_factory.mktemp("status-repo"))
    s = GrpcServer([str(root)], ["--model-control-mode=explicit", "--load-model=simple",
                                 "--load-model=odd_fails", "--load-model=evil", "--exit-on-error=false"],
                   name="client-status-page").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def test_page_is_one_well_formed_self_refreshing_document(server):
    page = get_page(server)
    assert page.tags.count("html") == 1 and page.tags.count("body") == 1
    assert "script" not in page.tags
    assert page.meta_refresh == "5"
    for tag, attrs in page.attrs_seen:  # nothing fetched from anywhere
        assert not {"src", "href"} & attrs.keys(), (tag, attrs)
    meta = requests.get(server.url("/"), timeout=10).text
    assert "url(" not in meta and "@import" not in meta


def test_every_model_with_its_state_and_reason(server):
    models = get_page(server).models()
    assert models[("simple", "1")]["State"] == "READY"
    assert models[("simple", "1")]["Instances"] == "1"
    assert models[("spare", "\u2014")]["State"] == "NOT LOADED"
    evil = models[("evil", "\u2014")]
    assert evil["State"] == "UNAVAILABLE"
    # Escaped in the HTML, so the parsed text is the reason itself, markup included.
    assert f"unknown platform '{HOSTILE_PLATFORM}'" in evil["Reason"]
    assert models[(HOSTILE_DIR, "\u2014")]["State"] == "NOT LOADED"


def test_hostile_texts_never_become_markup(server):
    raw = requests.get(server.url("/"), timeout=10).text
    assert "<script" not in raw and "<b>" not in raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in raw
    assert "odd&lt;b&gt;name&amp;&quot;&#39;" in raw


def test_counts_and_charts_follow_client_traffic(server):
    before = get_page(server).models()[("simple", "1")]
    for name, client in clients(server):
        module = httpclient if name == "http" else grpcclient
        for batch in (1, 1, 3):
            client.infer("simple", simple_inputs(module, batch))
        for n in (2, 3):  # the model fails on an odd size: one success, one failure
            odd = [module.InferInput("INPUT0", [n], "FP32")]
            odd[0].set_data_from_numpy(np.ones(n, np.float32))
            if n % 2:
                with pytest.raises(InferenceServerException):
                    client.infer("odd_fails", odd)
            else:
                client.infer("odd_fails", odd)

    async def aio():
        for name, client in aio_clients(server):
            module = httpclient if name == "http" else grpcclient
            await client.infer("simple", simple_inputs(module, 2))
            await client.close()

    asyncio.run(aio())
    page = get_page(server)
    row = page.models()[("simple", "1")]
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    stats = http.get_inference_statistics("simple", "1")["model_stats"][0]
    success = int(stats["inference_stats"]["success"]["count"])
    assert success == int(before["Success"]) + 8
    assert row["Success"] == str(success)
    assert row["Failure"] == "0"
    assert row["Infer / exec"] == f"{stats['inference_count']} / {stats['execution_count']}"
    assert row["Queued"] == "0"
    odd = page.models()[("odd_fails", "1")]
    odd_stats = http.get_inference_statistics("odd_fails", "1")["model_stats"][0]
    assert (odd["Success"], odd["Failure"]) == ("2", "2")
    assert odd_stats["inference_stats"]["fail"]["count"] == 2
    # The batch-size chart: one bar per executed size, its title the execution count.
    titles = page_titles(server)
    for b in stats["batch_stats"]:
        count = b["compute_infer"]["count"]
        assert f"batch {b['batch_size']}: {count} executions" in titles, titles
    assert any(t == f"queue time percentiles of {success} requests" for t in titles), titles


def page_titles(server):
    """The <title> texts inside the SVG charts."""
    titles = []

    class Titles(HTMLParser):
        inside = False

        def handle_starttag(self, tag, attrs):
            self.inside = tag == "title"

        def handle_data(self, data):
            if self.inside:
                titles.append(data)

        def handle_endtag(self, tag):
            self.inside = False

    Titles().feed(requests.get(server.url("/"), timeout=10).text)
    return titles


def test_client_load_failures_are_listed_newest_first(server):
    messages = []
    for _, client in clients(server):
        with pytest.raises(InferenceServerException) as e:
            client.load_model("evil")
        messages.append(e.value.message())

    async def aio():
        for _, client in aio_clients(server):
            with pytest.raises(InferenceServerException) as e:
                await client.load_model(HOSTILE_DIR)
            messages.append(e.value.message())
            await client.close()

    asyncio.run(aio())
    head, *rows = get_page(server).rows["load-errors"]
    assert head == ["Time (UTC)", "Model", "Reason"]
    newest = [(r[1], r[2]) for r in rows[:4]]
    assert newest == [(HOSTILE_DIR, messages[3]), (HOSTILE_DIR, messages[2]),
                      ("evil", messages[1]), ("evil", messages[0])]
    assert all(f"unknown platform '{HOSTILE_PLATFORM}'" in m for m in messages[:2])
    assert all(r[0].endswith("Z") and r[0][4] == "-" for r in rows)
    # The ring is bounded: many more failures keep only the newest ones.
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    for _ in range(30):
        with pytest.raises(InferenceServerException):
            client.load_model("evil")
    assert len(get_page(server).rows["load-errors"]) - 1 == 20


def test_other_methods_and_paths_keep_tritons_answers(server):
    r = requests.post(server.url("/"), timeout=10)
    assert (r.status_code, r.json()) == (405, {"error": "Method Not Allowed"})
    for path in ("/index.html", "//", "/v2/status"):
        r = requests.get(server.url(path), timeout=10)
        assert (r.status_code, r.json()) == (404, {"error": "Not Found"}), path


def test_flag_turns_the_page_off(tmp_path):
    s = GrpcServer([repo("examples")], ["--model-control-mode=explicit", "--load-model=simple",
                                        "--allow-status-page=false"],
                   name="client-status-off").start()
    try:
        r = requests.get(s.url("/"), timeout=10)
        assert (r.status_code, r.json()) == (404, {"error": "Not Found"})
        for _, client in clients(s):  # the rest of the server is unchanged
            assert client.is_server_live()
            assert client.is_model_ready("simple")
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_restricted_server_does_not_leak_the_page(tmp_path):
    flags = ["--model-control-mode=explicit", "--load-model=simple",
             "--http-restricted-api=statistics:stats-key=s",
             "--http-restricted-api=model-repository:repo-key=r",
             "--http-restricted-api=metadata:meta-key=m",
             "--http-restricted-api=inference:infer-key=i"]
    s = GrpcServer([repo("examples")], flags, name="client-status-restricted").start()
    try:
        allowed = {"stats-key": "s", "repo-key": "r", "meta-key": "m"}
        # Each restriction of what the page shows is checked, in this order.
        for missing in ("stats-key", "repo-key", "meta-key"):
            headers = {k: v for k, v in allowed.items() if k != missing}
            r = requests.get(s.url("/"), headers=headers, timeout=10)
            assert (r.status_code, r.json()) == \
                (403, {"error": f"This API is restricted, expecting header '{missing}'"})
        r = requests.get(s.url("/"), headers={**allowed, "meta-key": "M"}, timeout=10)
        assert r.status_code == 403  # the value is compared exactly
        page = get_page(s, headers={k.upper(): v for k, v in allowed.items()})  # names: any case
        assert page.models()[("simple", "1")]["State"] == "READY"
        # Triton's client sees the same restrictions on the endpoints the page draws from.
        client = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        with pytest.raises(InferenceServerException) as e:
            client.get_inference_statistics("simple")
        assert e.value.message() == "This API is restricted, expecting header 'stats-key'"
        assert client.get_inference_statistics("simple", headers={"stats-key": "s"})
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_restricting_other_categories_leaves_the_page_open(tmp_path):
    s = GrpcServer([repo("examples")], ["--model-control-mode=explicit", "--load-model=simple",
                                        "--http-restricted-api=inference,logging:k=v"],
                   name="client-status-open").start()
    try:
        assert get_page(s).models()[("simple", "1")]["State"] == "READY"
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


# ------------------------------------------------------------------- a real browser

def artifacts_dir():
    base = os.environ.get("NEREID_ARTIFACTS_DIR") or os.path.join(ROOT, "build", "test_artifacts")
    path = os.path.join(base, "status_page")
    os.makedirs(path, exist_ok=True)
    return path


def png_pixels(data):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def chromium(args, tmp_path, timeout=120):
    return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                           f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, timeout=timeout, env={**os.environ,
                                                                     "HOME": str(tmp_path)})


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="Debian's chromium is not installed (scripts/setup installs it)")
def test_a_real_browser_renders_the_page(server, tmp_path):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    for batch in (1, 2, 4):
        client.infer("simple", simple_inputs(httpclient, batch))
    url = f"http://127.0.0.1:{server.port}/"
    shot = os.path.join(artifacts_dir(), "status_page.png")
    if os.path.exists(shot):
        os.remove(shot)
    run = chromium([f"--screenshot={shot}", "--window-size=1200,900", url], tmp_path)
    assert os.path.exists(shot), run.stderr.decode(errors="replace")[-3000:]
    with open(shot, "rb") as f:
        data = f.read()
    assert len(data) > 5000, len(data)  # a blank page compresses to a few hundred bytes
    width, height, bpp, rows = png_pixels(data)
    assert (width, height) == (1200, 900)
    colours, inked = set(), 0
    background = rows[0][:3]
    for row in rows[::3]:
        for x in range(0, width * bpp, bpp * 3):
            px = row[x:x + 3]
            colours.add(px)
            inked += px != background
    assert len(colours) >= 8, colours  # text, state colours, table borders, chart bars
    assert inked > 0.01 * (width // 3) * (height // 3), inked

    dom = chromium(["--dump-dom", url], tmp_path).stdout.decode()
    with open(os.path.join(artifacts_dir(), "status_page.dom.html"), "w") as f:
        f.write(dom)
    rendered = Page(dom)
    assert "script" not in rendered.tags
    models = rendered.models()
    assert models[("simple", "1")]["State"] == "READY"
    assert f"unknown platform '{HOSTILE_PLATFORM}'" in models[("evil", "\u2014")]["Reason"]
    assert rendered.tags.count("svg") >= 2 and "rect" in rendered.tags
