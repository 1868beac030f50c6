# Setup's checks as small functions (sourced by scripts/setup and scripts/check, and tested by
# tests/tests/setup_checks.rs against directories that look like a fresh machine). Each one
# answers for the machine as it is: what it found (on stdout) and 0, or 1 when it must install.

# The libclang the xgb crate's bindgen loads (clang-sys searches for libclang.so,
# libclang-<ver>.so, libclang.so.<n> and libclang-<ver>.so.<n>). Debian's libclang-cpp14
# (libclang-cpp.so.14, the C++ interface, preinstalled with llvm) is not it.
# Usage: find_libclang DIR...  -> prints the first library found
find_libclang() {
  local dir f base
  for dir in "$@"; do
    [ -d "$dir" ] || continue
    for f in "$dir"/libclang.so "$dir"/libclang.so.* "$dir"/libclang-*.so "$dir"/libclang-*.so.*; do
      [ -e "$f" ] || continue
      base=${f##*/}
      case "$base" in
        libclang-cpp*) continue ;;                 # the C++ library, not libclang
        libclang-[0-9]*|libclang.so*) ;;          # libclang-14.so.1, libclang.so.14
        *) continue ;;
      esac
      echo "$f"
      return 0
    done
  done
  return 1
}

# clang's own headers (stddef.h and friends), which bindgen's parse needs next to the library:
# <llvm dir>/lib/clang/<version>/include. Usage: find_clang_headers LLVM_LIB_DIR...
find_clang_headers() {
  local dir h
  for dir in "$@"; do
    for h in "$dir"/clang/*/include/stddef.h; do
      if [ -f "$h" ]; then echo "${h%/stddef.h}"; return 0; fi
    done
  done
  return 1
}

# Where clang-sys looks on Linux: $LIBCLANG_PATH, then the LLVM installs and the system
# library directories, under ROOT (default /; the tests point it at a fake machine).
# Usage: libclang_search_dirs [ROOT]
libclang_search_dirs() {
  local root=${1:-} d
  if [ -n "${LIBCLANG_PATH:-}" ]; then echo "$LIBCLANG_PATH"; fi
  for d in "$root"/usr/lib/llvm-*/lib "$root"/usr/lib/x86_64-linux-gnu "$root"/usr/lib/aarch64-linux-gnu "$root"/usr/lib64 "$root"/usr/lib "$root"/usr/local/lib; do
    [ -d "$d" ] && echo "$d"
  done
  return 0
}

# The XGBoost library unpacked from the wheel, at the version setup pins.
# Usage: xgboost_ok DEST VERSION -> prints the library path
xgboost_ok() {
  local dest=$1 version=$2 lib
  lib=$dest/xgboost/lib/$(xgboost_library_name)
  [ -f "$lib" ] || return 1
  [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$version" ] || return 1
  echo "$lib"
}

# The XGBoost library's file name on this system: libxgboost.dylib on macOS (AETHER_SETUP_OS
# stands in for uname in the setup tests), libxgboost.so elsewhere.
xgboost_library_name() {
  case "${AETHER_SETUP_OS:-$(uname -s)}" in
    Darwin) echo libxgboost.dylib ;;
    *) echo libxgboost.so ;;
  esac
}

# A program of PYTHON's installation: beside it when PYTHON is a path (a virtualenv's
# bin/python), else on PATH. Usage: python_tool PYTHON NAME
python_tool() {
  case "$1" in
    */*) [ -x "${1%/*}/$2" ] ;;
    *) command -v "$2" >/dev/null 2>&1 ;;
  esac
}

# The project's virtualenv, where scripts/setup puts every Python tool (PEP 668: Debian's and
# Ubuntu's system Python refuses `pip install`): $AETHER_VENV, default .venv, as an absolute path
# (relative ones are to the current directory: the repo root). Usage: project_venv
project_venv() {
  local v=${AETHER_VENV:-.venv}
  case "$v" in /*) echo "$v" ;; *) echo "$PWD/$v" ;; esac
}

# A usable virtualenv at DIR: its python runs and has pip (setup downloads the XGBoost wheel and
# installs with it). Usage: venv_ok DIR -> prints "Python <version>, from <base interpreter>"
venv_ok() {
  [ -f "$1/pyvenv.cfg" ] || return 1
  "$1/bin/python" - <<'PY' 2>/dev/null
import os, sys
import pip  # noqa: F401
if sys.prefix == sys.base_prefix:
    sys.exit(1)
print(f"Python {sys.version.split()[0]}, from {os.path.realpath(sys.executable)}")
PY
}

# PYTHON can make a virtualenv with pip in it: the venv and ensurepip modules (Debian ships
# ensurepip in python3-venv, which a fresh Debian 12 lacks).
# Usage: python_venv_ok PYTHON -> prints "Python <version>"
python_venv_ok() {
  "$1" -c 'import sys, venv, ensurepip; print("Python", sys.version.split()[0])' 2>/dev/null
}

# moto's server at the pinned version, with boto3 (the tests seed buckets with it).
# Usage: moto_ok VERSION [PYTHON] -> prints the version found
moto_ok() {
  local version=$1 py=${2:-python3}
  python_tool "$py" moto_server || return 1
  "$py" - "$version" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
import boto3, flask, moto.server  # noqa: F401  (the server's own imports)
v = version("moto")
if v != sys.argv[1]:
    sys.exit(1)
print(v)
PY
}

# pyspark at the pinned minor version with its spark-submit (beside PYTHON, or on PATH: the
# local backend's Spark; Spark 3.5 is what EMR 7 runs).
# Usage: pyspark_ok 3.5 [PYTHON] -> prints the version found
pyspark_ok() {
  local minor=$1 py=${2:-python3} v
  python_tool "$py" spark-submit || return 1
  v=$("$py" -c 'import pyspark; print(pyspark.__version__)' 2>/dev/null) || return 1
  case "$v" in "$minor".*) echo "$v" ;; *) return 1 ;; esac
}

# headless Chromium and its chromedriver, of one major version (the UI's browser test drives
# one with the other). Usage: chromium_ok -> prints "chromium <version>, chromedriver <version>"
chromium_ok() {
  local c d
  c=$(chromium --version 2>/dev/null) || return 1
  d=$(chromedriver --version 2>/dev/null) || return 1
  c=$(grep -oE '[0-9]+(\.[0-9]+)+' <<<"$c" | head -1)
  d=$(grep -oE '[0-9]+(\.[0-9]+)+' <<<"$d" | head -1)
  [ -n "$c" ] && [ "${c%%.*}" = "${d%%.*}" ] || return 1
  echo "chromium $c, chromedriver $d"
}
