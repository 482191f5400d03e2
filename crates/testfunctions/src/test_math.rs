//! Closed forms the toy tests compare against: `erf`, the normal CDF and the chi-square CDF in
//! 1-3 degrees of freedom.

/// erf by its Maclaurin series (absolute error below 1e-12 for |x| <= 4.5, enough for tests).
pub fn erf(x: f64) -> f64 {
    let mut sum = 0.0;
    let mut term = x;
    for n in 0..200 {
        sum += term / (2 * n + 1) as f64;
        term *= -x * x / (n + 1) as f64;
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

/// `Phi(z)`, the standard normal CDF (0 and 1 beyond |z| = 8, where it is within 1e-15).
pub fn normal_cdf(z: f64) -> f64 {
    if z > 8.0 {
        1.0
    } else if z < -8.0 {
        0.0
    } else {
        0.5 * (1.0 + erf(z / std::f64::consts::SQRT_2))
    }
}

/// `P(chi2_k <= x)` for `k` in 1..=3: `erf(sqrt(x/2))`, `1 - e^(-x/2)` and
/// `erf(sqrt(x/2)) - sqrt(2x/pi) e^(-x/2)`.
pub fn chi2_cdf(k: usize, x: f64) -> f64 {
    let x = x.max(0.0);
    match k {
        1 => erf((x / 2.0).sqrt()),
        2 => 1.0 - (-x / 2.0).exp(),
        3 => erf((x / 2.0).sqrt()) - (2.0 * x / std::f64::consts::PI).sqrt() * (-x / 2.0).exp(),
        _ => panic!("chi2_cdf: k = {k} not implemented"),
    }
}
