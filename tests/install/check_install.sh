#!/usr/bin/env bash
# Proves the install works: installs the build tree into a scratch prefix, then builds and runs a
# consumer project against it twice — with find_package(chanflow CONFIG) and with pkg-config.
# With a Python interpreter given, also imports the installed Python package from the prefix with
# the PYTHONPATH docs/python.md states (<prefix>/lib/python3/dist-packages; none is needed with
# prefix /usr) and runs a program with it.
# Usage: check_install.sh <chanflow build dir> <consumer source dir> <c++ compiler> [<python>]
set -euo pipefail
build_dir=$1
consumer_src=$2
cxx=$3
python=${4:-}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null

echo "== find_package(chanflow CONFIG)"
cmake -S "$consumer_src" -B "$scratch/cmake-build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/cmake-build" >/dev/null
"$scratch/cmake-build/consumer"

echo "== pkg-config chanflow"
export PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
"$cxx" -o "$scratch/pc-consumer" "$consumer_src/main.cc" $(pkg-config --cflags --libs chanflow)
"$scratch/pc-consumer"

if [[ -n $python ]]; then
  echo "== python: import chanflow"
  # From elsewhere than the source or build tree, so nothing but the prefix can provide it.
  (cd "$scratch" && PYTHONPATH="$scratch/prefix/lib/python3/dist-packages" "$python" - <<'PY'
import numpy as np
import chanflow as cf
assert cf.__file__.startswith(__import__("os").getcwd()), cf.__file__
p = cf.Program.from_blocks([{"vars": [{"name": "x", "data_type": 5}, {"name": "y", "data_type": 5}],
                             "ops": [{"type": "assign", "inputs": [("X", ["x"])],
                                      "outputs": [("Out", ["y"])]}]}])
(y,) = cf.Executor().run(p, feed={"x": np.float32([1.5, 2.5])}, fetch=["y"])
assert y.numpy().tolist() == [1.5, 2.5]
print("python ok")
PY
  )
fi
