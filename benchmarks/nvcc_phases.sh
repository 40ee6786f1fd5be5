#!/usr/bin/env bash
# Where a CUDA load_inline build's time goes: nvcc's phases for one trivial kernel that includes
# torch/extension.h (harness/examples/cuda/relu.py), compiled with the flags torch uses for sm_90.
# Needs nvcc and torch's headers only (no GPU).
#
#   bash benchmarks/nvcc_phases.sh OUT.csv
set -euo pipefail
OUT=${1:?output csv}
W=$(mktemp -d)
python3 - "$W/relu.cu" <<'PY'
import re, sys
src = open("harness/examples/cuda/relu.py").read()
open(sys.argv[1], "w").write(re.search(r'_CUDA = r"""(.*?)"""', src, re.S).group(1))
PY
T=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'include'))")
PY_INC=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
nvcc -DTORCH_EXTENSION_NAME=x -DTORCH_API_INCLUDE_EXTENSION_H -isystem "$T" -isystem "$T/torch/csrc/api/include" \
    -isystem "$PY_INC" -D_GLIBCXX_USE_CXX11_ABI=1 -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ \
    -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr \
    -gencode=arch=compute_90,code=sm_90 --compiler-options '-fPIC' -O3 -std=c++17 \
    -c "$W/relu.cu" -o "$W/relu.o" --keep --keep-dir "$W" -time "$OUT"
rm -rf "$W"
awk -F' , ' 'NR > 1 { printf "%-24s %8.1f s\n", $2, $7 / 1000 }' "$OUT"
