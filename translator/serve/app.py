"""`translator serve`: a JSON API and a small web page in front of one model (FastAPI + uvicorn).

    POST /translate  {"text": ["..."], "beam": 4}  ->  {"translations": ["..."]}
    POST /attention  {"text": "...", "beam": 4, "layer": 2, "head": 1 or "mean"}
                     ->  image/png (PyTorch engine only)
    GET  /health     ->  {"status": "ok", "model": ..., "step": ..., "engine": ..., ...}
    GET  /           ->  the page

Requests to /translate that arrive close together are decoded together (serve/batching.py); a
bounded queue answers 503 when full or too slow. Every bad request gets a JSON error {"error":
"..."} with a 4xx status (serve/body.py); nothing a client sends makes it answer 500.
"""

# No `from __future__ import annotations` here: FastAPI reads the endpoints' annotations, and
# `Request` is imported inside `build_app` so that the module loads without FastAPI installed.
import asyncio
import io
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from translator.config import Config
from translator.errors import ConfigError
from translator.serve.batching import RETRY_AFTER, Batcher
from translator.serve.body import (
    RequestError,
    body_limit,
    check_keys,
    check_length_header,
    parse_request,
    parse_texts,
    read_body,
)
from translator.serve.page import PAGE

SERVE_EXTRA = 'pip install -e ".[serve]"'


@dataclass
class Engine:
    """One loaded model: `translate_fn(texts, beam)`, `attention_fn(text, beam, layer, head)`.

    The batcher sends one batch at a time. With PyTorch, decodes and attention maps (the other
    endpoint) take turns under `lock`; CTranslate2 has no attention maps and needs none.
    """

    name: str  # "ctranslate2" or "pytorch"
    model: str
    step: int
    config: Config
    translate_fn: Any
    attention_fn: Any = None
    layers: int = 0  # decoder layers and heads, for the page's choice of map
    heads: int = 0

    def __post_init__(self) -> None:
        self.lock = threading.Lock()

    def translate(self, texts: list[str], beam: int) -> list[str]:
        if self.attention_fn is None:
            return self.translate_fn(texts, beam)
        with self.lock:
            return self.translate_fn(texts, beam)

    def attention_png(self, text: str, beam: int, layer: int | None, head: Any) -> bytes:
        with self.lock:
            return self.attention_fn(text, beam, layer, head)


def ct2_engine(model_dir: Path, overrides: list[str]) -> Engine:
    """The CTranslate2 engine for an exported model directory (no torch)."""
    from translator.export.engine import load_exported, override_decode, translate_exported

    model = load_exported(model_dir)
    model.config = override_decode(model.config, overrides, "serve")
    return Engine(
        "ctranslate2",
        f"{model.run} ({model_dir}, {model.arithmetic})",
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

    def attention(text: str, beam: int, layer: int | None, head: Any) -> bytes:
        buffer = io.BytesIO()
        save_attention(loaded, text, buffer, beam, layer, head=head)  # type: ignore[arg-type]
        return buffer.getvalue()

    return Engine(
        "pytorch",
        f"{run_dir.name} ({ckpt})",
        loaded.step,
        loaded.config,
        lambda texts, beam: translate_sentences(loaded, texts, beam),
        attention,
        layers=loaded.config.model.decoder_layers,
        heads=loaded.config.model.n_heads,
    )


def parse_map_choice(data: dict[str, Any], engine: Engine) -> tuple[int | None, Any]:
    """The `layer` (1-based, default the last) and `head` (1-based, "mean", or null: every head)
    of an /attention request."""
    layer, head = data.get("layer"), data.get("head")
    if layer is not None and (
        not isinstance(layer, int) or isinstance(layer, bool) or not 1 <= layer <= engine.layers
    ):
        raise RequestError(422, f"layer must be an integer from 1 to {engine.layers}")
    if (
        head is not None
        and head != "mean"
        and (not isinstance(head, int) or isinstance(head, bool) or not 1 <= head <= engine.heads)
    ):
        raise RequestError(422, f'head must be an integer from 1 to {engine.heads}, or "mean"')
    return layer, head


class Bounded:
    """ASGI middleware: at most `capacity` POST requests under way (reading, queued, decoding);
    past it a 503 before the body is read, so memory stays bounded whatever the clients do.

    Each request in the queue holds at least one of serve.max_queue sentences, so `capacity`
    (the queue plus what the decoders hold) is never the limit for well-behaved clients.
    """

    def __init__(self, app: Any, capacity: int) -> None:
        self.app, self.capacity, self.active = app, capacity, 0

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        if self.active >= self.capacity:
            from fastapi.responses import JSONResponse

            message = f"the server is busy: {self.active} requests under way; try again later"
            reply = JSONResponse({"error": message}, status_code=503, headers=RETRY_AFTER)
            return await reply(scope, receive, send)
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


def build_app(engine: Engine) -> Any:
    """The FastAPI application serving `engine`."""
    from fastapi import FastAPI, Request
    from fastapi.concurrency import run_in_threadpool
    from fastapi.responses import HTMLResponse, JSONResponse, Response
    from starlette.exceptions import HTTPException

    limits, default_beam = engine.config.serve, engine.config.decode.beam
    if default_beam > limits.max_beam:
        raise ConfigError(
            f"decode.beam {default_beam} is above serve.max_beam {limits.max_beam}: requests "
            f"without a beam would be refused; --set serve.max_beam={default_beam} "
            "(or a smaller decode.beam)"
        )
    batcher = Batcher(engine.translate, limits)
    max_body = body_limit(limits)

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        await batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(
        title="translator", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )

    @app.exception_handler(RequestError)
    async def _bad_request(request: Request, exc: RequestError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, exc.status_code, exc.headers)

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        message = f"internal error ({type(exc).__name__}: {first}); the server goes on"
        return JSONResponse({"error": message}, status_code=500)

    app.add_middleware(Bounded, capacity=limits.max_queue + limits.max_batch_sentences)

    async def _parse(request: Request) -> tuple[dict[str, Any], int]:
        content_type = request.headers.get("content-type", "")
        check_length_header(request.headers.get("content-length"), max_body)
        try:
            body = await asyncio.wait_for(read_body(request.stream(), max_body), limits.timeout_s)
        except TimeoutError:
            raise RequestError(
                408, f"the body took over serve.timeout_s ({limits.timeout_s:g} s) to arrive"
            ) from None
        return parse_request(body, content_type, default_beam, limits.max_beam)

    @app.post("/translate")
    async def translate(request: Request) -> JSONResponse:
        data, beam = await _parse(request)
        check_keys(data, ("text", "beam"))
        texts = parse_texts(data.get("text"), limits)
        return JSONResponse({"translations": await batcher.translate(texts, beam)})

    @app.post("/attention")
    async def attention(request: Request) -> Response:
        if engine.attention_fn is None:
            raise RequestError(404, "attention maps need the PyTorch engine: serve --run NAME")
        data, beam = await _parse(request)
        check_keys(data, ("text", "beam", "layer", "head"))
        text = data.get("text")
        if not isinstance(text, str) or not text.strip():
            raise RequestError(422, '"text" must be one non-empty string')
        parse_texts([text], limits)
        layer, head = parse_map_choice(data, engine)
        png = await run_in_threadpool(engine.attention_png, text, beam, layer, head)
        return Response(png, media_type="image/png")

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "model": engine.model,
            "step": engine.step,
            "engine": engine.name,
            "beam": default_beam,
            "max_beam": limits.max_beam,
            "layers": engine.layers,
            "heads": engine.heads,
            "queued_sentences": batcher.waiting,
            "batches": batcher.batches,
            "decoded_sentences": batcher.decoded,
        }

    @app.get("/")
    async def page() -> HTMLResponse:
        return HTMLResponse(PAGE.replace("__ENGINE__", engine.name))

    return app
