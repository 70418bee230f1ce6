# Source this file: makes NVRTC (libnvrtc.so.13) loadable without a CUDA toolkit by installing
# NVIDIA's PyPI wheel into target/nvrtc once and putting its lib folder on LD_LIBRARY_PATH.
# A machine with a CUDA toolkit (/usr/local/cuda) uses that instead.
nmtune_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -e /usr/local/cuda/lib64/libnvrtc.so.13 ]; then
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  nvrtc_site="$nmtune_root/target/nvrtc"
  if ! ls "$nvrtc_site"/nvidia/cu13/lib/libnvrtc.so.13 >/dev/null 2>&1; then
    echo "nmtune: installing NVRTC from PyPI (nvidia-cuda-nvrtc) into $nvrtc_site" >&2
    python3 -m pip install --quiet --disable-pip-version-check --no-deps \
      --target "$nvrtc_site" 'nvidia-cuda-nvrtc>=13,<14' >&2
  fi
  export LD_LIBRARY_PATH="$nvrtc_site/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
