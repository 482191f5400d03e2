#!/usr/bin/env python3
"""Read the safetensors files of a saved posterior with numpy alone, no burn and no
`safetensors` package: what a Python user needs to use sgmcmc's samples.

Usage: scripts/read_safetensors.py SAMPLES_DIR

Reads `SAMPLES_DIR/index.csv` and every `.safetensors` file it lists: the header, the tensors
as numpy arrays by parameter name, and the step, chain and log weight in the metadata (checked
against the index). Prints one line per file; exits 1 on a file that is not what it says.
"""

import csv
import json
import sys
from pathlib import Path

import numpy as np


def load(path: Path):
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n :]
    tensors, end = {}, 0
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, stop = t["data_offsets"]
        if t["dtype"] != "F32" or begin != end:
            raise ValueError(f"{path}: {name} is {t['dtype']} at {begin} (expected F32 at {end})")
        tensors[name] = np.frombuffer(body[begin:stop], dtype="<f4").reshape(t["shape"])
        end = stop
    if end != len(body):
        raise ValueError(f"{path}: {len(body) - end} bytes after the last tensor")
    return tensors, meta


def main(folder: str) -> int:
    folder = Path(folder)
    with open(folder / "index.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["file"].endswith(".safetensors")]
    if not rows:
        print(f"error: {folder}/index.csv lists no safetensors file", file=sys.stderr)
        return 1
    for row in rows:
        tensors, meta = load(folder / row["file"])
        same = (meta["step"], meta["chain"]) == (row["step"], row["chain"])
        if not same or float(meta["log_weight"]) != float(row["log_weight"]):
            print(f"error: {row['file']}: metadata {meta} differs from the index", file=sys.stderr)
            return 1
        count = sum(t.size for t in tensors.values())
        norm = np.sqrt(sum(float((t.astype(np.float64) ** 2).sum()) for t in tensors.values()))
        print(f"{row['file']}: {len(tensors)} tensors, {count} values, |theta| {norm:.4f}, "
              f"log weight {meta['log_weight']}")
    print(f"{len(rows)} samples read with numpy {np.__version__}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
