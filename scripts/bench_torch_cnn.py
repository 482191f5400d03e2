"""PyTorch reference for the papers' MNIST CNN: steps/s of one SGLD step.

A step is what `sgmcmc`'s sampler does on the same network (crates/models/src/cnn.rs):
forward, the stochastic energy U = (N / n) * sum_i NLL_i + prior_precision / 2 * |theta|^2
(categorical NLL, N = 30000, prior precision N * 1e-3), backward, and the SGLD update
theta <- theta - lr * grad U + sqrt(2 lr) * xi with xi ~ N(0, I) (lr = 1e-6).
Random 28x28 inputs and labels i % 5 (5 classes), as in `sgmcmc::apps::bench::cnn_workload`.

Usage: python bench_torch_cnn.py [--threads 2] [--seconds 5] [--batches 256 2500]
Prints one line per batch size: `torch batch B: R SGLD steps/s` (wall clock), the wall ms/step
and the process CPU ms/step (all threads; with --threads 1 the work per step, which a loaded
machine disturbs less than the wall clock).
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Cnn(nn.Module):
    def __init__(self, classes: int = 5):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.fc1 = nn.Linear(64 * 4 * 4, 50)
        self.fc2 = nn.Linear(50, classes)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc2(F.relu(self.fc1(h.flatten(1))))


def sgld_step(model, x, y, n_data, precision, lr):
    model.zero_grad(set_to_none=True)
    out = model(x)
    nll = F.cross_entropy(out, y, reduction="sum") * (n_data / x.shape[0])
    sq = sum((p * p).sum() for p in model.parameters())
    energy = nll + 0.5 * precision * sq
    energy.backward()
    noise = (2.0 * lr) ** 0.5
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-lr).add_(torch.randn_like(p), alpha=noise)
    return energy.item()


def rate(batch, seconds, classes=5):
    torch.manual_seed(0)
    model = Cnn(classes)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.arange(batch) % classes
    n_data, precision, lr = 30000, 30000 * 1e-3, 1e-6
    sgld_step(model, x, y, n_data, precision, lr)  # warm-up
    start, cpu, n = time.perf_counter(), time.process_time(), 0
    while time.perf_counter() - start < seconds or n < 3:
        sgld_step(model, x, y, n_data, precision, lr)
        n += 1
    return n / (time.perf_counter() - start), (time.process_time() - cpu) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--batches", type=int, nargs="+", default=[256, 2500])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for b in a.batches:
        r, cpu = rate(b, a.seconds)
        print(
            f"torch batch {b}: {r:.3f} SGLD steps/s ({1e3 / r:.1f} ms/step, "
            f"{1e3 * cpu:.1f} CPU ms/step)",
            flush=True,
        )


if __name__ == "__main__":
    main()
