"""Load on `translator serve`, on loopback only: throughput, latency, and right answers, against
the same sentences decoded offline in the same run.

    python scripts/bench_serve.py --model exports/cpu-int8 [--requests 2000 --threads 8]
    python scripts/bench_serve.py --run cpu            # the PyTorch engine

Starts the server on a free 127.0.0.1 port, sends `--requests` POST /translate requests of 1 to 8
sentences from `--threads` threads (each keeps its connection alive, as load tools and HTTP client
libraries do; `--new-connections` opens one per request), and checks that every reply is its own
request's: the one its batch gets when sent alone, or offline, or, where int8 numerics moved with
the batch, a sentence nearer those than any other sentence's translation. Then stops the server
and decodes all the sentences the requests carried in one offline call of the same engine
(translate_exported or translate_sentences, all cores, the same beam), and again in batches of the
size the server formed, one after another (how fast such batches decode without HTTP: what the
server could reach with these clients). Prints throughput, p50/p95/p99 latency, the offline
sentences/s and the ratios, the CPU cores the server and the clients used during the load (the
clients share the machine's cores with the server; offline decoding does not), then one JSON line
with the figures.
"""

from __future__ import annotations

import argparse
import difflib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_common import DEFAULT_DATA, print_figures, request_plan

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_client = threading.local()  # one kept-alive connection per client thread


def post(port: int, texts: list[str], beam: int, keep_alive: bool) -> tuple[list[str], float]:
    """The translations of one request, and its latency in seconds."""
    body = json.dumps({"text": texts, "beam": beam}).encode()
    start = time.perf_counter()
    conn = getattr(_client, "conn", None) if keep_alive else None
    if conn is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        _client.conn = conn
    conn.request("POST", "/translate", body, {"Content-Type": "application/json"})
    reply = conn.getresponse()
    data = reply.read()
    if not keep_alive:
        conn.close()
    if reply.status != 200:
        raise SystemExit(f"POST /translate answered {reply.status}: {data[:200]!r}")
    return json.loads(data)["translations"], time.perf_counter() - start


def similar(a: str, b: str) -> float:
    """How alike two translations are, 0 to 1 (difflib's ratio of matching characters)."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def nearest(text: str, candidates: set[str]) -> float:
    """The highest similarity of `text` to any candidate other than itself."""
    return max((similar(text, c) for c in candidates if c != text), default=0.0)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(engine_args: list[str], port: int) -> subprocess.Popen:
    """`translator serve` on 127.0.0.1:PORT, once it answers /health."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "translator", "serve", *engine_args, "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server stopped: {proc.communicate()[1]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).read()
            return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the server did not answer /health within 120 s")


def decode_offline(
    args: argparse.Namespace, sentences: list[str], served_batch: int
) -> tuple[list[str], float, float]:
    """The same engine in this process: the translations and seconds of all `sentences` in one
    call, and the seconds of the same sentences in calls of `served_batch` (the size of the
    server's batches), one after another, with no HTTP: how fast batches of that size decode."""
    sys.path.insert(0, str(ROOT))
    if args.model:
        from translator.export.engine import load_exported, translate_exported

        model = load_exported(args.model)

        def translate(texts: list[str]) -> list[str]:
            return translate_exported(model, texts, args.beam)
    else:
        import torch

        from translator.inference.predict import load_model, translate_sentences
        from translator.run.paths import find_checkpoint

        ckpt, run_dir = find_checkpoint(args.run, None, Path("weights"))
        loaded = load_model(ckpt, run_dir, torch.device("cpu"))

        def translate(texts: list[str]) -> list[str]:
            return translate_sentences(loaded, texts, args.beam)

    start = time.perf_counter()
    offline = translate(sentences)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    for first in range(0, len(sentences), served_batch):
        translate(sentences[first : first + served_batch])
    return offline, seconds, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    engine = parser.add_mutually_exclusive_group(required=True)
    engine.add_argument("--model", type=Path, help="an exported model directory (CTranslate2)")
    engine.add_argument("--run", help="a run name (PyTorch)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--distinct", type=int, default=200, help="distinct request batches")
    parser.add_argument("--beam", type=int, default=1)
    parser.add_argument(
        "--set",
        dest="set_",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the server, e.g. serve.batch_window_ms=2 (repeatable)",
    )
    parser.add_argument(
        "--new-connections",
        action="store_true",
        help="open a connection per request (default: each client thread keeps one alive)",
    )
    args = parser.parse_args()

    batches, plan = request_plan(args.data, args.requests, args.distinct)

    port = free_port()
    health_url = f"http://127.0.0.1:{port}/health"
    engine = ["--model", str(args.model)] if args.model else ["--run", args.run]
    proc = start_server([*engine, *(f"--set={item}" for item in args.set_)], port)
    keep = not args.new_connections
    try:
        expected = [post(port, batch, args.beam, False)[0] for batch in batches]  # alone, in turn
        before = json.loads(urllib.request.urlopen(health_url).read())
        server_cpu, client_cpu = cpu_seconds(proc.pid), time.process_time()
        start = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            replies = list(pool.map(lambda i: post(port, batches[i], args.beam, keep), plan))
        seconds = time.perf_counter() - start
        server_cpu = cpu_seconds(proc.pid) - server_cpu
        client_cpu = time.process_time() - client_cpu
        health = json.loads(urllib.request.urlopen(health_url).read())
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    latencies = sorted(latency for _, latency in replies)
    cuts = statistics.quantiles(latencies, n=100)
    carried = [sentence for i in plan for sentence in batches[i]]
    n_sentences = len(carried)
    per_batch = (health["decoded_sentences"] - before["decoded_sentences"]) / max(
        1, health["batches"] - before["batches"]
    )
    offline, offline_seconds, batched_seconds = decode_offline(
        args, carried, max(1, round(per_batch))
    )
    served = [translation for got, _ in replies for translation in got]
    same = sum(a == b for a, b in zip(served, offline, strict=False)) / n_sentences
    # An answer is wrong if it is not its own request's: another length, or a sentence nearer
    # another sentence's translation than its own. int8 results move with the batch a sentence
    # is decoded in (int8 products on CPUs with VNNI), so a sentence that is neither what the
    # request got alone nor what the offline decode made of it is counted apart, and wrong only
    # if some other sentence's lone translation is more like it than its own two are.
    others = {t for reply in expected for t in reply}
    wrong = differ = unlike_both = start = 0
    for i, (got, _) in zip(plan, replies, strict=True):
        own = offline[start : start + len(batches[i])]
        start += len(batches[i])
        differ += sum(a != b for a, b in zip(got, expected[i], strict=False))
        strays = [
            (a, b, c) for a, b, c in zip(got, expected[i], own, strict=False) if a not in (b, c)
        ]
        unlike_both += len(strays)
        misplaced = [
            (a, b) for a, b, c in strays if nearest(a, others) > max(similar(a, b), similar(a, c))
        ]
        wrong += len(got) != len(expected[i]) or bool(misplaced)
        for a, b in misplaced[:1]:
            print(
                f"request {i}: {a!r} is nearer another sentence's than its own {b!r}",
                file=sys.stderr,
            )
    print_figures(
        {
            "engine": "ctranslate2" if args.model else "pytorch",
            "model": str(args.model or args.run),
            "beam": args.beam,
            "requests": args.requests,
            "threads": args.threads,
            "sentences": n_sentences,
            "seconds": seconds,
            "requests_per_s": args.requests / seconds,
            "sentences_per_s": n_sentences / seconds,
            "sentences_per_batch": per_batch,
            "connections": "one per request" if args.new_connections else "kept alive",
            "settings": " ".join(args.set_) or "the model's own",
            "server_cpu_cores": server_cpu / seconds,
            "client_cpu_cores": client_cpu / seconds,
            "latency_p50_ms": 1000 * cuts[49],
            "latency_p95_ms": 1000 * cuts[94],
            "latency_p99_ms": 1000 * cuts[98],
            "offline_seconds": offline_seconds,
            "offline_sentences_per_s": n_sentences / offline_seconds,
            "serve_vs_offline": offline_seconds / seconds,
            "offline_in_served_batches_sentences_per_s": n_sentences / batched_seconds,
            "serve_vs_offline_in_served_batches": batched_seconds / seconds,
            "same_as_offline": same,
            "sentences_unlike_alone": differ,
            "sentences_unlike_alone_and_offline": unlike_both,
            "wrong_answers": wrong,
        }
    )
    if wrong:
        raise SystemExit(f"{wrong} requests got an answer that was not theirs")


if __name__ == "__main__":
    main()
