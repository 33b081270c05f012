#!/usr/bin/env python3
"""tensor_npy_numpy_roundtrip: .npy files cross between chanflow and NumPy in both directions.

1. chanflow writes (tensor_npy_writer write DIR); NumPy loads each file and checks dtype, shape,
   values and that the header is what np.save would accept.
2. NumPy writes (every dtype, Fortran order, big-endian, format 2.0, 0-d, empty); chanflow loads
   and saves it again (tensor_npy_writer copy); NumPy loads the copy and checks it is equal.
Usage: check_npy_roundtrip.py WRITER_EXE WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import numpy as np

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]


def main():
    writer, work = sys.argv[1], sys.argv[2]
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    failures = []

    subprocess.run([writer, "write", work], check=True)
    base = (np.arange(12) * 7 % 11 - 3).reshape(3, 4)
    for dt in DTYPES:
        want = base.astype(dt)
        for suffix, expect in [("", want), ("_T", want.T)]:
            got = np.load(os.path.join(work, f"w_{dt}{suffix}.npy"), allow_pickle=False)
            if got.dtype != np.dtype(dt) or got.shape != expect.shape or not np.array_equal(got, expect):
                failures.append(f"chanflow -> numpy: w_{dt}{suffix}: got {got!r}, want {expect!r}")
    s = np.load(os.path.join(work, "scalar.npy"))
    if s.shape != () or s.dtype != np.float64 or s != 2.5:
        failures.append(f"scalar.npy: {s!r}")
    e = np.load(os.path.join(work, "empty.npy"))
    if e.shape != (0, 5) or e.dtype != np.float32:
        failures.append(f"empty.npy: {e!r}")

    rng = np.random.default_rng(5)
    sources = {}
    for dt in DTYPES:
        a = (rng.uniform(-100, 100, (4, 3, 2))).astype(dt)
        sources[f"n_{dt}"] = (a, None)
        sources[f"n_{dt}_fortran"] = (np.asfortranarray(a), None)
        sources[f"n_{dt}_big"] = (a.astype(np.dtype(dt).newbyteorder(">")), None)
        sources[f"n_{dt}_v2"] = (a, (2, 0))
    sources["n_scalar"] = (np.float32(7.25).reshape(()), None)
    sources["n_empty"] = (np.zeros((3, 0), dtype=np.int16), None)
    for name, (a, version) in sources.items():
        src = os.path.join(work, name + ".npy")
        dst = os.path.join(work, name + ".copy.npy")
        with open(src, "wb") as f:
            if version:
                np.lib.format.write_array(f, a, version=version, allow_pickle=False)
            else:
                np.save(f, a, allow_pickle=False)
        subprocess.run([writer, "copy", src, dst], check=True)
        got = np.load(dst, allow_pickle=False)
        if got.dtype != a.dtype.newbyteorder("=") or got.shape != a.shape or not np.array_equal(got, a):
            failures.append(f"numpy -> chanflow -> numpy: {name}: got {got!r}, want {a!r}")
        if not got.flags.c_contiguous:
            failures.append(f"{name}: copy is not C order")

    for f in failures:
        print("FAIL", f)
    print(f"{len(DTYPES) * 2 + 2} chanflow-written files, {len(sources)} numpy-written files, "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
