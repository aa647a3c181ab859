"""`translator serve` as a user runs it: a real server on a free loopback port, real HTTP."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import export, make_pairs, train_tiny


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python -m translator serve ARGS` on a free port, stopped at the end."""

    def __init__(self, root: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HOME": str(root / "home")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "translator", "serve", *args, "--port", str(self.port)],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300  # seconds alone; minutes on a busy machine
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.proc.communicate()[1]
            try:
                self.health = self.get("/health")
                return
            except OSError:
                time.sleep(0.2)
        self.proc.kill()
        raise AssertionError("server did not answer /health within 300 s")

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=30) as reply:
            return json.loads(reply.read())

    def post(
        self, path: str, body: bytes | dict, content_type: str = "application/json"
    ) -> tuple[int, dict | bytes]:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        request = urllib.request.Request(
            self.url + path, data=data, headers={"Content-Type": content_type}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                raw, status, kind = reply.read(), reply.status, reply.headers["Content-Type"]
        except urllib.error.HTTPError as err:
            raw, status, kind = err.read(), err.code, err.headers["Content-Type"]
        return status, (json.loads(raw) if kind == "application/json" else raw)

    def stop(self) -> str:
        self.proc.terminate()
        return self.proc.communicate(timeout=30)[1]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("serve")
    train_tiny(root, 150)
    export(root, "int8")
    return root


LIMITS = ["--set", "serve.max_texts=4", "--set", "serve.max_chars=60"]


@pytest.fixture(scope="module")
def ct2_server(root: Path) -> Iterator[Server]:
    server = Server(root, "--model", "ct2-int8", *LIMITS)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def torch_server(root: Path) -> Iterator[Server]:
    server = Server(root, "--run", "tiny", *LIMITS)
    yield server
    server.stop()


def test_health_names_model_step_and_engine(ct2_server: Server, torch_server: Server) -> None:
    assert ct2_server.health["engine"] == "ctranslate2" and ct2_server.health["step"] == 150
    assert torch_server.health["engine"] == "pytorch" and torch_server.health["step"] == 150
    assert "tiny" in ct2_server.health["model"] and "tiny" in torch_server.health["model"]


@pytest.mark.parametrize("engine", ["ct2_server", "torch_server"])
def test_translate_answers_in_order_like_the_cli(
    engine: str, request: pytest.FixtureRequest, root: Path
) -> None:
    server: Server = request.getfixturevalue(engine)
    texts = ["one cat and two dogs .", "", "the red house is big ."]
    status, reply = server.post("/translate", {"text": texts, "beam": 1})
    assert status == 200
    args = ["--model", "ct2-int8"] if engine == "ct2_server" else ["--run", "tiny"]
    cli = subprocess.run(
        [sys.executable, "-m", "translator", "translate", *args, "--beam", "1", *texts],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reply == {"translations": cli.stdout.splitlines()}
    status, beam4 = server.post("/translate", {"text": texts})  # the config's beam
    assert status == 200 and len(beam4["translations"]) == 3 and beam4["translations"][1] == ""


@pytest.mark.parametrize("engine", ["ct2_server", "torch_server"])
def test_a_pasted_paragraph_comes_back_sentence_by_sentence_with_its_line_breaks(
    engine: str, request: pytest.FixtureRequest
) -> None:
    server: Server = request.getfixturevalue(engine)
    sentences = ["one cat .", "the red house .", "five .", "the dog ."]  # within max_chars 60
    status, alone = server.post("/translate", {"text": sentences, "beam": 1})
    assert status == 200
    a, b, c, d = alone["translations"]
    pasted = f"{sentences[0]}  {sentences[1]}\n\n  - {sentences[2]}\r\n{sentences[3]}"
    status, reply = server.post("/translate", {"text": [pasted], "beam": 1})
    assert status == 200 and reply == {"translations": [f"{a}  {b}\n\n  - {c}\r\n{d}"]}


BAD = [
    (b'{"text": ["one cat ."', "application/json", 400, "malformed JSON"),
    (b'{"text": ["one cat ."]}', "text/plain", 415, "Content-Type"),
    (b'{"text": ["one cat ."]}', "application/x-www-form-urlencoded", 415, "Content-Type"),
    (b'["one cat ."]', "application/json", 422, "JSON object"),
    (b'{"text": "one cat ."}', "application/json", 422, "list of strings"),
    (b'{"text": [1, 2]}', "application/json", 422, "list of strings"),
    (b'{"text": []}', "application/json", 422, "empty"),
    (b'{"sentences": ["one"]}', "application/json", 422, "unknown key"),
    (b'{"text": ["one"], "beam": "4"}', "application/json", 422, "beam"),
    (b'{"text": ["one"], "beam": 0}', "application/json", 422, "beam"),
    (b'{"text": ["one"], "beam": 99}', "application/json", 422, "beam"),
    (json.dumps({"text": ["one ."] * 5}).encode(), "application/json", 413, "at most 4"),
    (json.dumps({"text": ["one " * 20]}).encode(), "application/json", 413, "at most 60"),
    (b"\xff\xfe", "application/json", 400, "malformed JSON"),
    # what the JSON parser itself cannot take: depth, a number too long, bad UTF-8, constants
    (b'{"text": ' + b"[" * 2500 + b"]" * 2500 + b"}", "application/json", 400, "deeply"),
    (b'{"text": ["one"], "beam": 1' + b"0" * 5000 + b"}", "application/json", 400, "digits"),
    (b'{"text": ["one \xc3("]}', "application/json", 400, "not UTF-8"),
    (b'{"text": ["one"], "beam": NaN}', "application/json", 400, "NaN"),
    (b'{"text": ["one \\ud800 ."]}', "application/json", 422, "surrogate"),
    (b'{"text": ["' + b"a" * 6000 + b'"]}', "application/json", 413, "too large"),
]


@pytest.mark.parametrize(("body", "kind", "status", "message"), BAD)
def test_bad_input_gets_a_json_4xx_and_the_server_keeps_serving(
    ct2_server: Server, body: bytes, kind: str, status: int, message: str
) -> None:
    got, reply = ct2_server.post("/translate", body, kind)
    assert got == status
    assert isinstance(reply, dict) and message in reply["error"]
    assert ct2_server.post("/translate", {"text": ["one ."]})[0] == 200


def raw_request(server: Server, head: bytes, *parts: bytes) -> tuple[int, dict]:
    """Send `head` (the request line and headers) and `parts` over a plain socket; the answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(head + b"\r\n")
        for part in parts:
            sock.sendall(part)
        raw = b""
        while b"\r\n\r\n" not in raw or len(raw.split(b"\r\n\r\n", 1)[1]) < 20:
            chunk = sock.recv(65536)  # a timeout here: the server waited for the body
            if not chunk:
                break
            raw += chunk
    status_line, _, rest = raw.partition(b"\r\n")
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in headers.lower(), raw[:300]
    return int(status_line.split()[1]), json.loads(body[: body.rindex(b"}") + 1])


POST = b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def test_a_declared_length_above_the_limit_is_refused_before_the_body_is_read(
    ct2_server: Server,
) -> None:
    # No body follows: a server that read before checking would wait, and the socket time out.
    status, reply = raw_request(ct2_server, POST + b"Content-Length: 1000000000\r\n")
    assert status == 413 and "too large" in reply["error"]
    assert ct2_server.post("/translate", {"text": ["one ."]})[0] == 200


def test_a_chunked_body_is_cut_off_at_the_limit(ct2_server: Server) -> None:
    chunk = b"[" * 4000
    parts = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 3  # 12,000 bytes > 5,056; never ends
    status, reply = raw_request(ct2_server, POST + b"Transfer-Encoding: chunked\r\n", *parts)
    assert status == 413 and "cut off at 5,056 bytes" in reply["error"]
    assert ct2_server.post("/translate", {"text": ["one ."]})[0] == 200


def test_concurrent_requests_each_get_their_own_answer(ct2_server: Server) -> None:
    sentences = [en for en, _ in make_pairs(40, seed=3)]
    requests = [(sentences[i : i + 1 + i % 4], 1 + i % 3) for i in range(0, 36)]

    def post(request: tuple[list[str], int]) -> dict:
        return ct2_server.post("/translate", {"text": request[0], "beam": request[1]})[1]

    expected = [post(r) for r in requests]  # each alone, in turn
    before = ct2_server.get("/health")["batches"]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(post, requests))
    assert got == expected
    assert ct2_server.get("/health")["batches"] - before < len(requests)  # some went together


@pytest.fixture(scope="module")
def slow_server(root: Path) -> Iterator[Server]:
    """A server whose first request waits 3 s for company: room for 4 sentences, 1 s to wait."""
    sets = ["serve.max_queue=4", "serve.timeout_s=1", "serve.batch_window_ms=3000"]
    server = Server(root, "--model", "ct2-int8", *LIMITS, *[a for s in sets for a in ("--set", s)])
    yield server
    server.stop()


def test_a_full_queue_and_a_timeout_answer_503_json(slow_server: Server) -> None:
    with ThreadPoolExecutor(2) as pool:
        waiting = pool.submit(slow_server.post, "/translate", {"text": ["one ."]})
        time.sleep(0.3)  # "one ." waits in the queue for 3 s
        request = urllib.request.Request(
            slow_server.url + "/translate",
            data=json.dumps({"text": ["two ."] * 4}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as full:
            urllib.request.urlopen(request, timeout=30)
        status, reply = waiting.result()
    assert full.value.code == 503 and full.value.headers["Retry-After"] == "1"
    assert "serve.max_queue" in json.loads(full.value.read())["error"]
    assert status == 503 and "serve.timeout_s" in reply["error"]
    assert slow_server.get("/health")["queued_sentences"] == 0


def test_attention_map_only_with_pytorch(ct2_server: Server, torch_server: Server) -> None:
    status, png = torch_server.post("/attention", {"text": "one cat ."})
    assert status == 200 and isinstance(png, bytes) and png.startswith(b"\x89PNG")
    for choice in ({"layer": 1, "head": 2}, {"head": "mean"}):
        status, png = torch_server.post("/attention", {"text": "one cat .", **choice})
        assert status == 200 and isinstance(png, bytes) and png.startswith(b"\x89PNG")
    for choice, key in (({"head": 3}, "head"), ({"layer": 2}, "layer"), ({"head": "max"}, "head")):
        status, reply = torch_server.post("/attention", {"text": "one cat .", **choice})
        assert status == 422 and reply["error"].startswith(key), reply
    status, reply = ct2_server.post("/attention", {"text": "one cat ."})
    assert status == 404 and "PyTorch engine" in reply["error"]


def test_page_and_loopback_default(root: Path, ct2_server: Server) -> None:
    with urllib.request.urlopen(ct2_server.url + "/", timeout=30) as reply:
        page = reply.read().decode()
    assert '<textarea id="text"' in page and 'const engine = "ctranslate2"' in page
    server = Server(root, "--model", "ct2-int8")
    stderr = server.stop()
    assert f"http://127.0.0.1:{server.port}/ (loopback only" in stderr


def test_a_default_beam_above_the_request_limit_is_refused_at_start(root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "translator", "serve", "--model", "ct2-int8",
         "--set", "decode.beam=12", "--set", "serve.max_beam=8"],
        cwd=root, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "serve.max_beam=12" in done.stderr and len(done.stderr.splitlines()) == 1


def test_missing_fastapi_names_the_pip_command(root: Path) -> None:
    code = (
        "import sys; sys.modules['fastapi'] = None; sys.argv = ['translator', *sys.argv[1:]]; "
        "from translator.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "serve", "--model", "ct2-int8"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert 'pip install -e ".[serve]"' in done.stderr and len(done.stderr.splitlines()) == 1


# --------------------------------------------------------------------------- a real browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.mark.slow
def test_the_page_translates_in_headless_chromium(torch_server: Server, tmp_path: Path) -> None:
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip(
            "chromium and chromium-driver are not installed (apt-get install chromium "
            "chromium-driver)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-quic",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "--window-size=900,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
    try:
        driver.get(torch_server.url + "/")
        wait = WebDriverWait(driver, 60)
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#head option")) == 3)
        box = driver.find_element(By.ID, "text")
        box.send_keys("one cat and two dogs .")
        box.send_keys(Keys.CONTROL, Keys.ENTER)  # Ctrl+Enter translates
        wait.until(lambda d: d.find_element(By.ID, "result").get_attribute("data-done") == "1")
        shown = driver.find_element(By.ID, "result").text
        beam = torch_server.health["beam"]  # the page starts at the config's beam
        assert re.fullmatch(rf"beam {beam} · \d+ ms", driver.find_element(By.ID, "meta").text)
        wait.until(lambda d: d.find_element(By.ID, "attention").is_displayed())
        status, reply = torch_server.post(
            "/translate", {"text": ["one cat and two dogs ."], "beam": beam}
        )
        assert shown == reply["translations"][0] and shown
        image = driver.find_element(By.ID, "attention")
        first = image.get_attribute("src")
        Select(driver.find_element(By.ID, "head")).select_by_value("2")  # one head, redrawn
        wait.until(lambda d: d.find_element(By.ID, "attention").get_attribute("src") != first)
        assert driver.execute_script("return arguments[0].naturalWidth", image) > 300
        box.clear()  # a pasted paragraph: Enter is a line break in the box, kept in the answer
        box.send_keys("one cat and two dogs . the red house is big .", Keys.ENTER, Keys.ENTER)
        box.send_keys("five .")
        box.send_keys(Keys.CONTROL, Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "result").get_attribute("data-done") == "1")
        wait.until(lambda d: "\n" in d.find_element(By.ID, "result").text)
        status, reply = torch_server.post(
            "/translate",
            {"text": ["one cat and two dogs .", "the red house is big .", "five ."], "beam": beam},
        )
        a, b, c = reply["translations"]
        assert driver.find_element(By.ID, "result").text == f"{a} {b}\n\n{c}"
        shot = Path(os.environ.get("TRANSLATOR_SCREENSHOT", tmp_path / "page.png"))
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 1000
        box.clear()
        box.send_keys("x" * 61)  # over serve.max_chars: the server's words, as text
        driver.find_element(By.ID, "go").click()
        wait.until(lambda d: d.find_element(By.ID, "error").text)
        assert "at most 60" in driver.find_element(By.ID, "error").text
    finally:
        driver.quit()
