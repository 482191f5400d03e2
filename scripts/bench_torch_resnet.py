"""PyTorch reference for ResNet20: steps/s of one SGHMC step, the workload of `sgmcmc bench
--only resnet` (crates/apps/src/bench.rs, `resnet_rate`).

The network is crates/models/src/resnet.rs: He et al.'s CIFAR ResNet20 (3x3 convs without bias,
batch norm in training mode with momentum 0.1, option-A shortcuts: stride-2 subsampling and zero
channels, global average pooling, linear layer), He-normal conv initialisation. A step is the
sampler's: forward, the energy U = (N / n) * sum_i NLL_i + precision / 2 * |theta|^2 (categorical
NLL, weight decay 5e-4 on the mean loss, i.e. precision N * 5e-4), backward, and the SGHMC update
v <- mu v - lr g + sqrt(2 lr (1 - mu)) xi, theta <- theta + v (mu = 0.9, lr = 1e-7) on every
parameter. Random N(0, 1) images and labels i % 10.

On CUDA (`--device cuda`) the update runs as torch.optim does there by default: one
`torch._foreach_*` kernel per operation over all parameters (the noise still one draw per
parameter); `--compile` compiles the forward and the loss with `torch.compile` (backward through
AOTAutograd), the update staying eager. Each step reads the energy back (`.item()`), a
synchronisation per step, as the sampler's one read of the chains' energies per step is.

Usage: python bench_torch_resnet.py [--threads 2] [--seconds 10] [--batch 128]
       [--channels 3] [--side 28] [--n-data 60000] [--device cpu|cuda] [--compile] [--json]
Prints `torch resnet20 CxSxS batch B: R SGHMC steps/s (W ms/step, C CPU ms/step)`: wall clock and
the process CPU time per step (all threads); with `--json` also one JSON line with the figures
(steps/s, warm-up seconds, peak CUDA memory).
"""

import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv3x3(cin, cout, stride):
    conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
    nn.init.kaiming_normal_(conv.weight, mode="fan_in", nonlinearity="relu")
    return conv


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(cin, cout, stride), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = conv3x3(cout, cout, 1), nn.BatchNorm2d(cout)
        self.stride, extra = stride, cout - cin
        self.pad = (extra // 2, extra - extra // 2)

    def shortcut(self, x):
        if self.stride > 1:
            x = x[:, :, :: self.stride, :: self.stride]
        if sum(self.pad):
            x = F.pad(x, (0, 0, 0, 0, self.pad[0], self.pad[1]))
        return x

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + self.shortcut(x))


class ResNet20(nn.Module):
    def __init__(self, channels=3, classes=10, n=3):
        super().__init__()
        self.conv, self.bn = conv3x3(channels, 16, 1), nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for stage, cout in enumerate([16, 32, 64]):
            for i in range(n):
                blocks.append(Block(cin, cout, 2 if stage > 0 and i == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        h = self.blocks(F.relu(self.bn(self.conv(x))))
        return self.fc(h.mean(dim=(2, 3)))


def energy_of(model, x, y, n_data, precision):
    nll = F.cross_entropy(model(x), y, reduction="sum") * (n_data / x.shape[0])
    sq = sum((p * p).sum() for p in model.parameters())
    return nll + 0.5 * precision * sq


def sghmc_step(model, momenta, x, y, n_data, precision, lr, mu=0.9, energy_fn=energy_of):
    model.zero_grad(set_to_none=True)
    energy = energy_fn(model, x, y, n_data, precision)
    energy.backward()
    noise = (2.0 * lr * (1.0 - mu)) ** 0.5
    with torch.no_grad():
        params = list(model.parameters())
        if params[0].is_cuda:
            grads = [p.grad for p in params]
            torch._foreach_mul_(momenta, mu)
            torch._foreach_add_(momenta, grads, alpha=-lr)
            torch._foreach_add_(momenta, [torch.randn_like(p) for p in params], alpha=noise)
            torch._foreach_add_(params, momenta)
        else:
            for p, v in zip(params, momenta):
                v.mul_(mu).add_(p.grad, alpha=-lr).add_(torch.randn_like(p), alpha=noise)
                p.add_(v)
    return energy.item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--side", type=int, default=28)
    ap.add_argument("--n-data", type=int, default=60000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up steps before timing")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    model = ResNet20(a.channels).train().to(dev)
    momenta = [torch.zeros_like(p) for p in model.parameters()]
    x = torch.randn(a.batch, a.channels, a.side, a.side, device=dev)
    y = torch.arange(a.batch, device=dev) % 10
    energy_fn = torch.compile(energy_of) if a.compile else energy_of
    args = (model, momenta, x, y, a.n_data, a.n_data * 5e-4, 1e-7)
    t0 = time.perf_counter()
    for _ in range(max(a.warmup, 1)):
        sghmc_step(*args, energy_fn=energy_fn)
    warm = time.perf_counter() - t0
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    start, cpu, n = time.perf_counter(), time.process_time(), 0
    while time.perf_counter() - start < a.seconds or n < 3:
        sghmc_step(*args, energy_fn=energy_fn)
        n += 1
    r = n / (time.perf_counter() - start)
    cpu = (time.process_time() - cpu) / n
    mode = "compiled" if a.compile else "eager"
    print(
        f"torch {torch.__version__} resnet20 {a.channels}x{a.side}x{a.side} batch {a.batch} "
        f"on {a.device} ({mode}), {torch.get_num_threads()} threads: {r:.3f} SGHMC steps/s "
        f"({1e3 / r:.1f} ms/step, {1e3 * cpu:.1f} CPU ms/step)",
        flush=True,
    )
    if a.json:
        peak = torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else None
        print(
            json.dumps(
                {
                    "torch": torch.__version__,
                    "device": a.device,
                    "mode": mode,
                    "batch": a.batch,
                    "shape": [a.channels, a.side, a.side],
                    "steps_per_second": r,
                    "cpu_ms_per_step": 1e3 * cpu,
                    "warmup_seconds": warm,
                    "peak_memory_bytes": peak,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
