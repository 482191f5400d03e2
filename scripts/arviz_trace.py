#!/usr/bin/env python3
"""Open a trace that sgmcmc wrote (`Trace::write_zarr`) with ArviZ and print `az.summary`.

Usage: scripts/arviz_trace.py TRACE.zarr

The store opens in one line, `az.InferenceData.from_datatree(xr.open_datatree(path,
engine="zarr"))` (ArviZ 0.23 with zarr 3 and a current xarray; `az.from_zarr(path)` where
ArviZ's own reader still finds `zarr<3` and an xarray that supports it). Exits 1 when the
trace is not the (chain, draw) layout with finite log densities.
"""

import sys

import arviz as az
import numpy as np
import xarray as xr


def main(path: str) -> int:
    idata = az.InferenceData.from_datatree(xr.open_datatree(path, engine="zarr"))
    print(idata)
    # A trace of energies alone (no functionals) has no posterior group.
    if "posterior" in idata.groups() and list(idata.posterior.data_vars):
        print(az.summary(idata, kind="all"))
    stats = az.summary(idata, group="sample_stats", var_names=["lp"], kind="diagnostics")
    print(stats)
    sizes = idata.sample_stats.sizes
    chains, draws = sizes["chain"], sizes["draw"]
    lp = idata.sample_stats["lp"].values
    if lp.shape != (chains, draws) or not np.isfinite(lp).all():
        print(f"error: lp has shape {lp.shape} or non-finite values", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
