"""`translator serve`: a run (PyTorch) or an exported --model (CTranslate2) behind HTTP."""

from __future__ import annotations

import sys
from pathlib import Path

from translator.errors import ConfigError, TranslatorError
from translator.serve.app import SERVE_EXTRA, build_app, ct2_engine, torch_engine


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
