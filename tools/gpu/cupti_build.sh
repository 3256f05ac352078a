#!/usr/bin/env bash
# Build tools/gpu/cupti_trace.c (a CUPTI kernel tracer, CUDA_INJECTION64_PATH) here, against the
# CUPTI and CUDA headers of the PyPI wheels (downloaded once into .gpu/cupti-sdk), into
# .gpu/cupti/{cupti_trace.so, libcupti.so.13.gz}: carry .gpu/cupti; env.sh `cupti_decode CTX`
# runs the decode graph under it on the device.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
sdk=.gpu/cupti-sdk
if [ ! -f $sdk/nvidia/cu13/include/cupti.h ] || [ ! -f $sdk/nvidia/cu13/include/crt/host_defines.h ]; then
  mkdir -p $sdk
  pip download -q --no-deps 'nvidia-cuda-cupti==13.0.*' 'nvidia-cuda-runtime==13.0.*' 'nvidia-cuda-crt==13.0.*' -d $sdk
  for w in $sdk/*.whl; do (cd $sdk && unzip -q -o "$(basename "$w")"); done
fi
inc=$sdk/nvidia/cu13/include
lib=$sdk/nvidia/cu13/lib
mkdir -p .gpu/cupti
gcc -O2 -shared -fPIC -Wall -I$inc -o .gpu/cupti/cupti_trace.so tools/gpu/cupti_trace.c -L$lib -l:libcupti.so.13 -Wl,-rpath,'$ORIGIN'
gzip -c $lib/libcupti.so.13 > .gpu/cupti/libcupti.so.13.gz
du -sh .gpu/cupti
