#!/usr/bin/env bash
# The CUDA checks and the GPU benchmarks, a few minutes on one GPU. From the repository root, in an
# environment where the project is installed with its test and bench extras:  bash benchmarks/gpu.sh
set -euo pipefail
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('GPU:', torch.cuda.get_device_name(0))"
python -m pytest -q tests/core/test_cuda.py tests/core/test_masking.py -k "cuda"
python benchmarks/bench_training.py --device cuda --precision bf16 --preset base --batch 32 --steps 10 --repeats 3
python benchmarks/bench_training.py --device cuda --precision fp32 --batch 32 --steps 10 --repeats 3
python benchmarks/bench_training.py --device cuda --precision bf16 --objective electra --batch 32 --steps 10 --repeats 3
