#!/usr/bin/env python3
"""The reference side of `sgmcmc digits`: BlackJAX's jitted SGLD on the same task.

64-100-10 tanh MLP on the 1,797 8x8 digits (pixels / 16; a seeded 1437/360 split of the same
sizes as ours, drawn with numpy), batch 100 from a fresh permutation each epoch, posterior
log p = sum log-softmax * N / n - prior_precision / 2 |theta|^2, SGLD at a constant step size
(BlackJAX's step: theta + lr * grad log p + sqrt(2 lr) xi, the same as ours), and after
`burn_in` steps the softmax on the test set every `bma_every` steps added to an equally
weighted model average. Prints one JSON line: accuracy, NLL, ECE (10 bins) of the average and
steps/s of the whole loop (stepping and averaging, after a warm-up call for compilation).

Needs jax and blackjax (`pip install jax blackjax`); reads DIR/digits/digits.csv[.gz] as
written by `sgmcmc data fetch digits --to DIR`. `scripts/bench-blackjax.sh` runs it
interleaved with `sgmcmc digits` and prints the ratio.
"""

import argparse
import gzip
import json
import os
import time

import numpy as np


def load(data_dir):
    for name in ("digits.csv", "digits.csv.gz", "optdigits.tes"):
        path = os.path.join(data_dir, "digits", name)
        if os.path.exists(path):
            raw = open(path, "rb").read()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            rows = np.array(
                [[int(v) for v in line.split(",")] for line in raw.decode().split()],
                dtype=np.int64,
            )
            return rows[:, :64].astype(np.float32) / 16.0, rows[:, 64]
    raise SystemExit(f"error: no digits in {data_dir}/digits (sgmcmc data fetch digits)")


def metrics(p, y, bins=10):
    acc = float(np.mean(p.argmax(1) == y))
    nll = float(-np.mean(np.log(np.maximum(p[np.arange(len(y)), y], 1e-300))))
    conf, pred = p.max(1), p.argmax(1)
    b = np.minimum((conf * bins).astype(int), bins - 1)
    ece = sum(
        np.mean(b == k) * abs(np.mean(pred[b == k] == y[b == k]) - np.mean(conf[b == k]))
        for k in range(bins)
        if np.any(b == k)
    )
    return acc, nll, float(ece)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--prior-precision", type=float, default=1.0)
    ap.add_argument("--burn-in", type=int, default=2000)
    ap.add_argument("--bma-every", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    import jax
    import jax.numpy as jnp
    import blackjax

    x, y = load(a.data_dir)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(y))
    n_test = int(np.ceil(0.2 * len(y)))
    te, tr = perm[:n_test], perm[n_test:]
    xtr, ytr, xte, yte = x[tr], y[tr], jnp.asarray(x[te]), y[te]
    n, b = len(tr), 100

    def init(key):
        k1, k2 = jax.random.split(key)
        return {
            "w1": jax.random.normal(k1, (64, 100)) * np.sqrt(1 / 64),
            "b1": jnp.zeros(100),
            "w2": jax.random.normal(k2, (100, 10)) * np.sqrt(1 / 100),
            "b2": jnp.zeros(10),
        }

    def logits(p, xb):
        return jnp.tanh(xb @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    def loglik(p, datum):
        # One data point: BlackJAX's gradient estimator maps it over the minibatch.
        xi, yi = datum
        return jax.nn.log_softmax(logits(p, xi))[yi]

    def logprior(p):
        return -0.5 * a.prior_precision * sum(jnp.sum(v**2) for v in jax.tree.leaves(p))

    grad = blackjax.sgmcmc.gradients.grad_estimator(logprior, loglik, n)
    sgld = blackjax.sgld(grad)
    step = jax.jit(sgld.step)
    predict = jax.jit(lambda p: jax.nn.softmax(logits(p, xte)))

    key = jax.random.PRNGKey(a.seed)
    key, k0 = jax.random.split(key)
    pos = sgld.init(init(k0))
    xs, ys = jnp.asarray(xtr), jnp.asarray(ytr)

    # The steps between two model-average updates run as one jitted `lax.scan` (one dispatch
    # per `bma_every` steps), so Python's per-call overhead does not count against BlackJAX.
    @jax.jit
    def chunk(key, pos, idx):
        def body(p, inp):
            k, i = inp
            return step(k, p, (xs[i], ys[i]), a.lr), None

        keys = jax.random.split(key, idx.shape[0])
        return jax.lax.scan(body, pos, (keys, idx))[0]

    # Minibatch windows: each epoch a fresh permutation cut into windows of b (rest dropped).
    def windows():
        epoch = 0
        while True:
            order = np.random.default_rng([a.seed, epoch]).permutation(n)
            for w in range(n // b):
                yield order[w * b : (w + 1) * b]
            epoch += 1

    batches = windows()
    every = a.bma_every
    if a.burn_in % every or a.steps % every:
        raise SystemExit("error: burn-in and steps must be multiples of bma-every")
    plan = [np.stack([next(batches) for _ in range(every)]) for _ in range(a.steps // every)]
    # Warm-up: compile the chunk and the prediction (then start again from the same state).
    jax.block_until_ready(chunk(key, pos, jnp.asarray(plan[0])))
    jax.block_until_ready(predict(pos))

    bma, models = np.zeros((n_test, 10)), 0
    start = time.perf_counter()
    for c, idx in enumerate(plan):
        key, kc = jax.random.split(key)
        pos = chunk(kc, pos, jnp.asarray(idx))
        if (c + 1) * every > a.burn_in:
            bma += np.asarray(predict(pos), dtype=np.float64)
            models += 1
    jax.block_until_ready(pos)
    wall = time.perf_counter() - start
    acc, nll, ece = metrics(bma / models, yte)
    print(
        json.dumps(
            {
                "impl": "blackjax",
                "models": models,
                "accuracy": acc,
                "nll": nll,
                "ece": ece,
                "steps_per_second": a.steps / wall,
                "wall_seconds": wall,
            }
        )
    )


if __name__ == "__main__":
    main()
