"""gpu.json and gpu.md of the one-shot GPU check from the raw outputs of scripts/gpu-check.sh.

Standard library only (it runs beside PyTorch on the GPU machine and with a bare python3 here).
Every figure the check asks for is in gpu.json; one that could not be measured is an object
{"skipped": reason}, the reason taken from the part's own one-line error where there is one.
Ratios are step-time ratios ours : PyTorch (below 1: ours is faster), from the medians over the
interleaved rounds.
"""

import argparse
import json
import os
import statistics

TOLERANCE = 1e-3  # relative agreement of the seeded chains' energies across devices


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def load_json(path):
    text = read(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def last_line(path):
    lines = [l.strip() for l in (read(path) or "").splitlines() if l.strip()]
    return lines[-1] if lines else "no output"


def runs(work):
    out = {}
    for line in (read(os.path.join(work, "runs.tsv")) or "").splitlines():
        name, rc, ms = line.split("\t")
        out[name] = {"exit": int(rc), "seconds": int(ms) / 1000.0}
    return out


def why(work, name, status):
    st = status.get(name)
    if st is None:
        return "not run (time budget, or an earlier part failed)"
    if st["exit"] in (124, 137):
        return f"timed out after {st['seconds']:.0f} s"
    return last_line(os.path.join(work, name + ".out"))


def median_of(values):
    return statistics.median(values) if values else None


def ours(work, status, device, rounds):
    """Figures and memory of `sgmcmc bench --only gpu` on `device` over the rounds."""
    figures, memory = {}, {}
    for r in range(1, rounds + 1):
        s = load_json(os.path.join(work, f"ours-{device}-r{r}", "summary.json"))
        if not s:
            continue
        for f in s.get("figures", []):
            figures.setdefault(f["name"].split(" on ")[0], []).append(f["per_second"])
        for m in s.get("memory", []):
            memory.setdefault(m["name"].split(" on ")[0], []).append(m["value"])
    return figures, memory


def torch_runs(work, mode, batch, rounds):
    rates, peaks, warm, version = [], [], [], None
    for r in range(1, rounds + 1):
        for line in (read(os.path.join(work, f"torch-{mode}-b{batch}-r{r}.out")) or "").splitlines():
            if line.startswith("{"):
                j = json.loads(line)
                rates.append(j["steps_per_second"])
                warm.append(j["warmup_seconds"])
                version = j["torch"]
                if j.get("peak_memory_bytes") is not None:
                    peaks.append(j["peak_memory_bytes"])
    return rates, peaks, warm, version


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=["gpu", "dry-run"], required=True)
    ap.add_argument("--batches", required=True)
    ap.add_argument("--torch", type=int, default=0)
    ap.add_argument("--wall", type=float, default=0.0)
    a = ap.parse_args()
    work, dry = a.work, a.mode == "dry-run"
    status = runs(work)
    rounds = max(
        [int(n.rsplit("-r", 1)[1]) for n in status if n.startswith(("ours-", "torch-"))] or [1]
    )
    batches = [int(b) for b in a.batches.split(",")]
    first = batches[0]

    gpu = (read(os.path.join(work, "gpu.txt")) or "").strip()
    parts = [p.strip() for p in gpu.split(",")]
    if len(parts) == 3 and "MiB" in parts[1]:
        device = {"name": parts[0], "memory": parts[1], "driver": parts[2]}
    else:
        device = {"skipped": "no NVIDIA GPU: " + (gpu.splitlines()[0] if gpu else "nvidia-smi absent")}
    torch_txt = (read(os.path.join(work, "torch.txt")) or "").split()
    versions = {
        "build": load_json(os.path.join(work, "build.json")) or {},
        "torch": torch_txt[0] if len(torch_txt) == 3 else {"skipped": "PyTorch not importable"},
        "torch_cuda": torch_txt[1] if len(torch_txt) == 3 else None,
    }

    # Correctness: the seeded chain on each device.
    energies, skipped = {}, {}
    for d in ["flex", "wgpu", "cuda"]:
        s = load_json(os.path.join(work, f"seeded-{d}", "summary.json"))
        if s and s.get("energies"):
            energies[d] = s["energies"]
        else:
            skipped[d] = why(work, f"seeded-{d}", status)
    diffs = {}
    names = list(energies)
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            ex, ey = energies[x], energies[y]
            diffs[f"{y}_vs_{x}"] = max(abs(p - q) / max(abs(p), abs(q), 1e-30) for p, q in zip(ex, ey))
    correctness = {
        "steps": 20,
        "batch": min(max(first, 16), 32),
        "energies": {**energies, **{d: {"skipped": r} for d, r in skipped.items()}},
        "max_relative_difference": diffs,
        "tolerance": TOLERANCE,
        "pass": bool(diffs) and all(v < TOLERANCE for v in diffs.values()),
    }
    if not diffs:
        correctness["pass"] = {"skipped": "fewer than two devices ran the seeded chain"}

    # Throughput and memory.
    per_device = {d: ours(work, status, d, rounds) for d in ["wgpu", "cuda"]}

    def figure(device, name):
        if device in skipped:
            return {"skipped": skipped[device]}
        vals = per_device[device][0].get(name)
        if not vals:
            return {"skipped": why(work, f"ours-{device}-r1", status)}
        return {"rounds": vals, "median": median_of(vals)}

    steps = {}
    ratios = {}
    for b in batches:
        key = f"b{b}"
        row = {d: figure(d, f"resnet20_3x32x32_b{b}/sghmc steps") for d in ["wgpu", "cuda"]}
        for mode in ["eager", "compile"]:
            rates, peaks, warm, _ = torch_runs(work, mode, b, rounds)
            label = f"torch_{'cpu_' if dry else ''}{mode}"
            name = f"torch-{mode}-b{b}-r1"
            if rates:
                row[label] = {
                    "rounds": rates,
                    "median": median_of(rates),
                    "warmup_seconds": warm,
                    "peak_memory_bytes": max(peaks) if peaks else None,
                }
            elif not a.torch:
                row[label] = {"skipped": "PyTorch not installed here"}
            elif mode == "compile" and status.get(name, {}).get("exit") in (124, 137):
                row[label] = {"skipped": "torch.compile did not compile and run within the limit"}
            else:
                row[label] = {"skipped": why(work, name, status)}
            if dry:
                row[f"torch_{mode}"] = {"skipped": "dry run: no GPU, so no PyTorch CUDA"}
        steps[key] = row
        for d in ["wgpu", "cuda"]:
            for mode in ["eager", "compile"]:
                t = row.get(f"torch_{mode}", {})
                o = row[d]
                if "median" in t and "median" in o:
                    ratios[f"{d}_b{b}_time_over_torch_{mode}"] = t["median"] / o["median"]
                else:
                    ratios[f"{d}_b{b}_time_over_torch_{mode}"] = {
                        "skipped": o.get("skipped") or t.get("skipped")
                    }

    coupled = {}
    for label, name in [
        ("icsghmc_x4_chain_steps_per_second", f"resnet20_3x32x32_b{first}/icsghmc x4 chain-steps"),
        ("deo_sgd_x8_chain_steps_per_second", f"resnet20_3x32x32_b{first}/deo-sgd x8 chain-steps"),
        ("mlp_sgld_x16_chain_steps_per_second", "mlp13-50-1_b50/sgld x16 chain-steps"),
    ]:
        coupled[label] = {d: figure(d, name) for d in ["wgpu", "cuda"]}
    for d in ["wgpu", "cuda"]:
        one = per_device[d][0].get(f"resnet20_3x32x32_b{first}/sghmc steps")
        four = per_device[d][0].get(f"resnet20_3x32x32_b{first}/icsghmc x4 chain-steps")
        if one and four:
            coupled.setdefault("icsghmc_x4_over_one_chain", {})[d] = median_of(four) / median_of(one)

    # The input pipeline (`bench --only input`): its figures and ratios per device.
    feed = {}
    for d in ["wgpu", "cuda"]:
        if d in skipped:
            feed[d] = {"skipped": skipped[d]}
            continue
        s = load_json(os.path.join(work, f"input-{d}", "summary.json"))
        if not s:
            feed[d] = {"skipped": why(work, f"input-{d}", status)}
            continue
        entry = {}
        for f in s.get("figures", []) + s.get("ratios", []):
            if f["name"].startswith("input/"):
                key = f["name"].split(" on ")[0].split("/", 2)[2]
                entry[key] = f["per_second"]
        feed[d] = entry or {"skipped": "no input figures in the summary"}

    memory = {}
    for d in ["wgpu", "cuda"]:
        if d in skipped:
            memory[d] = {"skipped": skipped[d]}
            continue
        m = per_device[d][1]
        entry = {
            k.split("/", 1)[1].replace(" ", "_"): median_of(v) for k, v in m.items()
        } or {"skipped": "the allocator reported nothing"}
        smi = []
        for r in range(1, rounds + 1):
            for line in (read(os.path.join(work, f"smi-ours-{d}-r{r}.txt")) or "").splitlines():
                try:
                    smi.append(float(line))
                except ValueError:
                    pass
        entry["nvidia_smi_peak_mib"] = max(smi) if smi else {"skipped": "nvidia-smi not sampled" + (" (dry run)" if dry else "")}
        memory[d] = entry

    report = {
        "mode": a.mode,
        "wall_seconds": a.wall,
        "device": device,
        "versions": versions,
        "batches": batches,
        "rounds": rounds,
        "resnet20_3x32x32_sghmc_steps_per_second": steps,
        "ratios_ours_time_over_torch": ratios,
        **coupled,
        "correctness": correctness,
        "input_pipeline": feed,
        "memory": memory,
        "runs": status,
    }
    os.makedirs(a.out, exist_ok=True)
    tmp = os.path.join(a.out, "gpu.json.tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=2)
    os.replace(tmp, os.path.join(a.out, "gpu.json"))

    def show(v):
        if isinstance(v, dict):
            if "median" in v:
                return f"{v['median']:.2f}"
            if "skipped" in v:
                return "skipped"
        if isinstance(v, float):
            return f"{v:.3g}"
        return str(v)

    name = device.get("name", "no GPU (" + a.mode + ")")
    md = [
        f"# GPU check: {name}",
        "",
        f"Mode {a.mode}, {rounds} round(s), {a.wall:.0f} s; build {versions['build'].get('commit', '?')} "
        f"({versions['build'].get('profile', '?')}, {versions['build'].get('features', '?')}); "
        f"torch {show(versions['torch'])} (CUDA {versions['torch_cuda']}); "
        f"driver {device.get('driver', '-')}, memory {device.get('memory', '-')}.",
        "",
        "ResNet20 SGHMC steps/s at 3x32x32 (median over rounds):",
        "",
        "| batch | " + " | ".join(steps[f"b{batches[0]}"].keys()) + " |",
        "|---" * (1 + len(steps[f"b{batches[0]}"])) + "|",
    ]
    for key, row in steps.items():
        md.append(f"| {key[1:]} | " + " | ".join(show(v) for v in row.values()) + " |")
    md += ["", "Step time ours : PyTorch:", ""]
    md += [f"- {k}: {show(v)}" for k, v in ratios.items()]
    md += ["", "Coupled and many chains (chain-steps/s):", ""]
    for k, v in coupled.items():
        md.append(f"- {k}: " + ", ".join(f"{d} {show(x)}" for d, x in v.items()))
    md += ["", f"Correctness (20 seeded steps, tolerance {TOLERANCE}): pass = {show(correctness['pass'])}; "
           + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items())]
    md += ["", f"Input pipeline (batch {first}; share = step rate / batch rate):", ""]
    for d, e in feed.items():
        md.append(f"- {d}: " + (", ".join(f"{k} {show(v)}" for k, v in e.items()) if "skipped" not in e else "skipped"))
    md += ["", "Memory:", ""]
    for d, e in memory.items():
        md.append(f"- {d}: " + (", ".join(f"{k} {show(v)}" for k, v in e.items()) if "skipped" not in e else "skipped"))
    skips = {d: r for d, r in skipped.items()}
    if skips:
        md += ["", "Skipped:", ""] + [f"- {d}: {r}" for d, r in skips.items()]
    with open(os.path.join(a.out, "gpu.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
