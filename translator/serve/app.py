"""`translator serve`: a JSON API and a small web page in front of one model (FastAPI + uvicorn).

    POST /translate  {"text": ["..."], "beam": 4}  ->  {"translations": ["..."]}
    POST /attention  {"text": "...", "beam": 4}    ->  image/png (PyTorch engine only)
    GET  /health     ->  {"status": "ok", "model": ..., "step": ..., "engine": ...}
    GET  /           ->  the page

Bad input gets a JSON error {"error": "..."} with a 4xx status. Decodes are serialised by one lock:
never two on one model at once.
"""

# No `from __future__ import annotations` here: FastAPI reads the endpoints' annotations, and
# `Request` is imported inside `build_app` so that the module loads without FastAPI installed.
import io
import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from translator.config import Config, ServeConfig
from translator.errors import ConfigError, TranslatorError
from translator.serve.page import PAGE

SERVE_EXTRA = 'pip install -e ".[serve]"'


class RequestError(Exception):
    """Bad input: answered with `status` and {"error": message}."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Engine:
    """One loaded model behind a lock: `translate_fn(texts, beam)`, `attention_fn(text, beam)`."""

    name: str  # "ctranslate2" or "pytorch"
    model: str
    step: int
    config: Config
    translate_fn: Any
    attention_fn: Any = None

    def __post_init__(self) -> None:
        self.lock = threading.Lock()

    def translate(self, texts: list[str], beam: int) -> list[str]:
        with self.lock:
            return self.translate_fn(texts, beam)

    def attention_png(self, text: str, beam: int) -> bytes:
        with self.lock:
            return self.attention_fn(text, beam)


def ct2_engine(model_dir: Path, overrides: list[str]) -> Engine:
    """The CTranslate2 engine for an exported model directory (no torch)."""
    from translator.export.engine import load_exported, override_decode, translate_exported

    model = load_exported(model_dir)
    model.config = override_decode(model.config, overrides, "serve")
    return Engine(
        "ctranslate2",
        f"{model.run} ({model_dir}, {model.quantization})",
        model.step,
        model.config,
        lambda texts, beam: translate_exported(model, texts, beam),
    )


def torch_engine(
    run: str | None, checkpoint: Path | None, overrides: list[str], weights_root: Path
) -> Engine:
    """The PyTorch engine for a run's checkpoint; it also draws attention maps."""
    import torch

    from translator.inference.predict import (
        load_model,
        override_config,
        save_attention,
        translate_sentences,
    )
    from translator.run.paths import find_checkpoint

    ckpt, run_dir = find_checkpoint(run, checkpoint, weights_root)
    loaded = load_model(ckpt, run_dir, torch.device("cpu"))
    loaded.config = override_config(loaded.config, None, overrides, "serve", ("decode", "serve"))

    def attention(text: str, beam: int) -> bytes:
        buffer = io.BytesIO()
        save_attention(loaded, text, buffer, beam)  # type: ignore[arg-type]  # PNG by default
        return buffer.getvalue()

    return Engine(
        "pytorch",
        f"{run_dir.name} ({ckpt})",
        loaded.step,
        loaded.config,
        lambda texts, beam: translate_sentences(loaded, texts, beam),
        attention,
    )


def parse_request(body: bytes, content_type: str, limits: ServeConfig, default_beam: int) -> Any:
    """The request's texts and beam, or a RequestError saying what is wrong with it."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise RequestError(
            415, f"send JSON with Content-Type: application/json, not {content_type!r}"
        )
    if len(body) > 4 * limits.max_texts * limits.max_chars + 4096:
        raise RequestError(413, "request body too large")
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RequestError(422, 'the body must be a JSON object: {"text": ["..."], "beam": 4}')
    unknown = set(data) - {"text", "beam"}
    if unknown:
        raise RequestError(422, f"unknown key {sorted(unknown)[0]!r}; the keys are text and beam")
    beam = data.get("beam", default_beam)
    if not isinstance(beam, int) or isinstance(beam, bool) or not 1 <= beam <= limits.max_beam:
        raise RequestError(422, f"beam must be an integer from 1 to {limits.max_beam}")
    return data.get("text"), beam


def parse_texts(texts: Any, limits: ServeConfig) -> list[str]:
    """`text`: a non-empty list of strings within the configured limits."""
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise RequestError(422, '"text" must be a list of strings')
    if not texts:
        raise RequestError(422, '"text" is empty; send at least one sentence')
    if len(texts) > limits.max_texts:
        raise RequestError(
            413, f'"text" has {len(texts)} sentences; at most {limits.max_texts} per request'
        )
    for n, text in enumerate(texts):
        if len(text) > limits.max_chars:
            raise RequestError(
                413, f"sentence {n} has {len(text)} characters; at most {limits.max_chars}"
            )
    return texts


def build_app(engine: Engine) -> Any:
    """The FastAPI application serving `engine`."""
    from fastapi import FastAPI, Request
    from fastapi.concurrency import run_in_threadpool
    from fastapi.responses import HTMLResponse, JSONResponse, Response

    limits, default_beam = engine.config.serve, engine.config.decode.beam
    if default_beam > limits.max_beam:
        raise ConfigError(
            f"decode.beam {default_beam} is above serve.max_beam {limits.max_beam}: requests "
            f"without a beam would be refused; --set serve.max_beam={default_beam} "
            "(or a smaller decode.beam)"
        )
    app = FastAPI(title="translator", docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(RequestError)
    async def _bad_request(request: Request, exc: RequestError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    async def _parse(request: Request) -> tuple[Any, int]:
        body = await request.body()
        return parse_request(body, request.headers.get("content-type", ""), limits, default_beam)

    @app.post("/translate")
    async def translate(request: Request) -> JSONResponse:
        texts, beam = await _parse(request)
        texts = parse_texts(texts, limits)
        translations = await run_in_threadpool(engine.translate, texts, beam)
        return JSONResponse({"translations": translations})

    @app.post("/attention")
    async def attention(request: Request) -> Response:
        if engine.attention_fn is None:
            raise RequestError(404, "attention maps need the PyTorch engine: serve --run NAME")
        text, beam = await _parse(request)
        if not isinstance(text, str) or not text.strip():
            raise RequestError(422, '"text" must be one non-empty string')
        parse_texts([text], limits)
        png = await run_in_threadpool(engine.attention_png, text, beam)
        return Response(png, media_type="image/png")

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": engine.model, "step": engine.step, "engine": engine.name}

    @app.get("/")
    async def page() -> HTMLResponse:
        return HTMLResponse(PAGE.replace("__ENGINE__", engine.name))

    return app


def serve_command(
    run: str | None,
    checkpoint: Path | None,
    model_dir: Path | None,
    host: str,
    port: int,
    overrides: list[str],
    weights_root: Path = Path("weights"),
) -> None:
    """`translator serve`: load the model, then answer HTTP until interrupted."""
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError:
        raise TranslatorError(
            f"FastAPI and uvicorn are not installed; install them with: {SERVE_EXTRA}"
        ) from None
    if model_dir is not None and (run is not None or checkpoint is not None):
        raise ConfigError("--model and --run/--checkpoint exclude each other; give one of them")
    if model_dir is not None:
        engine = ct2_engine(model_dir, overrides)
    else:
        engine = torch_engine(run, checkpoint, overrides, weights_root)
    app = build_app(engine)
    where = (
        "loopback only; --host 0.0.0.0 to accept other machines"
        if host in ("127.0.0.1", "localhost", "::1")
        else "reachable from other machines"
    )
    print(
        f"serving {engine.model}, step {engine.step:,}, with {engine.name} "
        f"on http://{host}:{port}/ ({where})",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning")
