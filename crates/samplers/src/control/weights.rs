//! Importance-weight resampling: unbiased stochastic rounding.
//!
//! Weights are normalised by their mean, `w~_k = w_k / mean(w)`, and sample `k` is kept
//! `floor(w~_k) + Bernoulli(frac(w~_k))` times, so `E[copies_k] = w~_k` exactly. (The authors'
//! original toy code dropped the fractional part, which biases the result towards heavy
//! samples; ALGORITHMS.md.)

use crate::rng::ChainRng;

/// Number of copies of each sample. Zero, negative or non-finite weights get no copies.
pub fn resample_counts(weights: &[f64], rng: &mut ChainRng) -> Vec<usize> {
    let valid = |w: &f64| w.is_finite() && *w > 0.0;
    let n = weights.len() as f64;
    let mean = weights.iter().filter(|w| valid(w)).sum::<f64>() / n;
    weights
        .iter()
        .map(|w| {
            if !valid(w) || mean.is_nan() || mean <= 0.0 {
                return 0;
            }
            let r = w / mean;
            let whole = r.floor();
            whole as usize + usize::from(rng.uniform() < r - whole)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_unbiased() {
        // w~ = (0.25, 0.75, 1.5, 1.5); over 40,000 repetitions the mean copies have standard
        // error <= 0.5 / 200 = 0.0025; allow 5 s.e.
        let w = [1.0, 3.0, 6.0, 6.0];
        let mut rng = ChainRng::new(1, 9);
        let reps = 40_000;
        let mut total = [0.0; 4];
        for _ in 0..reps {
            for (t, c) in total.iter_mut().zip(resample_counts(&w, &mut rng)) {
                *t += c as f64;
            }
        }
        for (i, expect) in [0.25, 0.75, 1.5, 1.5].iter().enumerate() {
            let got = total[i] / reps as f64;
            assert!((got - expect).abs() < 0.0125, "{i}: {got} vs {expect}");
        }
        assert_eq!(resample_counts(&[f64::NAN, 2.0], &mut rng)[0], 0);
    }
}
