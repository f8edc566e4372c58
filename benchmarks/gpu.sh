#!/usr/bin/env bash
# The CUDA checks and the GPU benchmarks, a few minutes on one GPU. From the repository root, in an
# environment where the project's dependencies are importable (PYTHON names the interpreter, python3 by default;
# on a machine without the package installed, PYTHONPATH=. will do):  bash benchmarks/gpu.sh
# Each step is said with the time before it starts and has a limit of its own (STEP_LIMIT seconds, 240 by
# default), so a step that hangs is named and the next ones still run.
set -uo pipefail
python="${PYTHON:-python3}"
limit="${STEP_LIMIT:-240}"
failed=0
step() {
    echo "== $(date +%T) $*"
    timeout "$limit" "$@" || { echo "== step failed or over ${limit}s (exit $?): $*"; failed=1; }
}
step "$python" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('GPU:', torch.cuda.get_device_name(0), torch.__version__)"
[ "$failed" = 0 ] || exit 1  # without a GPU the rest would measure nothing
step "$python" -m pytest -q -p no:cacheprovider tests/core/test_cuda.py tests/core/test_masking.py -k "cuda"
step "$python" benchmarks/bench_training.py --device cuda --precision bf16 --preset base --batch 32 --steps 10 --repeats 3
step "$python" benchmarks/bench_training.py --device cuda --precision fp32 --batch 32 --steps 10 --repeats 3
step "$python" benchmarks/bench_training.py --device cuda --precision bf16 --objective electra --batch 32 --steps 10 --repeats 3
exit "$failed"
