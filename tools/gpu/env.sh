# Sourced by the device scripts: find libcuda/libnvrtc on the lent GPU machine.
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9]* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so.1[0-9]* 2>/dev/null | grep -v alt | grep -v builtins | head -1)
if [ -z "$nv" ]; then
  nv=$(python3 -c 'import nvidia, os, glob; print((glob.glob(os.path.join(list(nvidia.__path__)[0], "*/lib/libnvrtc.so.1*")) or [""])[0])' 2>/dev/null)
fi
export DS4_NVRTC_LIB="$nv"
export LD_LIBRARY_PATH="$(dirname "${nv:-/x}"):/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DS4_KERNEL_CACHE=/tmp/ds4-kcache
BIN=${BIN:-.gpu/ds4-bench}
GGUF_BIN=${GGUF_BIN:-.gpu/ds4-gguf}
OUT=${OUT:-/tmp/ds4-out}
mkdir -p "$OUT"
echo "libnvrtc: ${nv:-NOT FOUND}"
