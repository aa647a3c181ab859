#!/usr/bin/env bash
# The CUDA path, measured (issue 21): tests and figures of this checkout on one GPU, in under
# 8 minutes, from the source tree on that machine's own PyTorch (PYTHONPATH=., nothing installed).
#
#   scripts/gpu_check.sh OUT_DIR [--data DIR] [--budget SECONDS] [--short-minutes M]
#   scripts/gpu_check.sh OUT_DIR --cpu [--data DIR]     # toy sizes on the CPU, under a minute
#
# Writes OUT_DIR/gpu_check.json (rewritten after every part) and OUT_DIR/gpu_check.log; exits 1
# when a part failed or timed out (the others still ran). The parts: scripts/gpu_check.py.
#
# Data: DIR holds opensubs.jsonl and tatoeba-dev.jsonl (12 MB); default ../shared/data/en-it,
# else .gpudata/ in the repository. A device machine gets only the repository, so copy them first:
#   mkdir -p .gpudata && cp ../shared/data/en-it/{opensubs,tatoeba-dev}.jsonl .gpudata/
# and name .gpudata (and .whl) in the device tool's `carry`.
#
# Packages the GPU machine may lack, brought along as wheels in .whl/ and installed from there
# into a temporary directory (nothing else needs installing: the tests and the other parts use
# torch, tokenizers, sacrebleu, tensorboard, typer, pyyaml, tqdm, matplotlib and pytest):
WANTED_WHEELS="ctranslate2"
# Fetch them on a machine with a network (Python 3.12, x86-64 Linux, as on the GPU machine):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --platform manylinux2014_x86_64 -d .whl $WANTED_WHEELS
set -u
cd "$(dirname "$0")/.." || exit 2
PYTHON=${PYTHON:-python3}
if compgen -G ".whl/*.whl" >/dev/null; then
    site=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_site.XXXXXX")
    if "$PYTHON" -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl; then
        export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    else
        echo "gpu_check: could not install .whl/*.whl (wanted: $WANTED_WHEELS); going on" >&2
    fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" scripts/gpu_check.py "$@"
