#!/usr/bin/env python3
"""Prints the ArviZ values that crates/samplers/tests/arviz_diagnostics.rs pins.

The draws come from a 64-bit LCG and Irwin-Hall normals (the sum of 12 uniforms minus 6), which
the Rust test repeats with the same integer and IEEE arithmetic, so both sides see the same
arrays without a data file. Run it with ArviZ installed (`pip install arviz`) and paste its
output into the test when ArviZ changes its estimators.
"""

import warnings

import numpy as np

warnings.simplefilter("ignore")
import arviz as az  # noqa: E402

A, C, M = 6364136223846793005, 1442695040888963407, 2**64


class Lcg:
    def __init__(self, seed):
        self.state = seed

    def uniform(self):
        self.state = (self.state * A + C) % M
        return (self.state >> 11) / 2.0**53

    def normal(self):
        s = 0.0
        for _ in range(12):
            s += self.uniform()
        return s - 6.0


def ar1(seed, chains, draws, rho, shift=0.0, decimals=None):
    """`chains` AR(1) chains, chain c shifted by `c * shift`, optionally rounded (ties)."""
    g = Lcg(seed)
    out = np.empty((chains, draws))
    for c in range(chains):
        x = 0.0
        for k in range(draws):
            x = rho * x + g.normal()
            out[c, k] = x + c * shift
    if decimals is not None:
        out = np.round(out, decimals)
    return out


CASES = {
    "mixed": dict(seed=1, chains=4, draws=200, rho=0.5),
    "sticky": dict(seed=2, chains=4, draws=300, rho=0.95),
    "shifted": dict(seed=3, chains=4, draws=200, rho=0.5, shift=0.4),
    "odd": dict(seed=4, chains=3, draws=201, rho=0.3),
    "ties": dict(seed=5, chains=2, draws=100, rho=0.2, decimals=0),
    "ties at 0.1": dict(seed=6, chains=4, draws=101, rho=0.5, decimals=1),
}

print(f"// ArviZ {az.__version__}, NumPy {np.__version__}")
for name, kw in CASES.items():
    x = ar1(**kw)
    if name == "sticky":
        x = np.exp(x / 2.0)  # heavy right tail
    vals = [
        az.rhat(x, method="rank"),
        az.ess(x, method="bulk"),
        az.ess(x, method="tail"),
        az.ess(x, method="mean"),
        az.mcse(x, method="mean"),
        az.mcse(x, method="sd"),
    ]
    print(f"// {name}: rhat, ess_bulk, ess_tail, ess_mean, mcse_mean, mcse_sd")
    print("[" + ", ".join(f"{float(v):.17e}" for v in vals) + "],")

for seed, scale, n, reff in [(11, 1.0, 1000, 1.0), (12, 2.0, 1000, 0.7), (13, 3.0, 400, 1.0)]:
    g = Lcg(seed)
    lw = np.array([scale * g.normal() for _ in range(n)])
    smoothed, k = az.psislw(lw, reff=reff)
    print(f"// psis seed {seed}, scale {scale}, n {n}, r_eff {reff}: k, max smoothed lw, lw[0]")
    print(f"[{float(k):.17e}, {float(np.max(smoothed)):.17e}, {float(smoothed[0]):.17e}],")
