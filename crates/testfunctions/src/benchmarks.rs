//! The 10 global-optimisation benchmarks of the AWSGLD chapter (thesis sec. 7.2.2, Example 3,
//! Table 7.1; settings in appendix F.2, Table F.1).
//!
//! The thesis takes the functions from Laguna & Marti (2005) \[LM05\] and states neither formulas nor
//! domains; we use the standard definitions of that test set (Hedar's collection, which LM05 use).
//! Each run of the paper starts somewhere in the domain and stops at the first iterate in the
//! optimal set `S = {x : U(x) <= U* + rho}` (at most 100,000 iterations, 10 runs per cell).
//!
//! | no | function | d | domain | `U*` | `x*` |
//! |----|----------|---|--------|------|------|
//! | 1 | Rastrigin `RT20` | 20 | `[-5.12, 5.12]` | 0 | 0 |
//! | 2 | Griewank `G20` | 20 | `[-600, 600]` | 0 | 0 |
//! | 3 | Sum Squares `SS20` | 20 | `[-10, 10]` | 0 | 0 |
//! | 4 | Rosenbrock `R20` | 20 | `[-5, 10]` | 0 | 1 |
//! | 5 | Zakharov `Z20` | 20 | `[-5, 10]` | 0 | 0 |
//! | 6 | Powell `PW24` | 24 | `[-4, 5]` | 0 | 0 |
//! | 7 | Dixon & Price `DP25` | 25 | `[-10, 10]` | 0 | `x_i = 2^{-(2^i - 2)/2^i}` |
//! | 8 | Levy `L30` | 30 | `[-10, 10]` | 0 | 1 |
//! | 9 | Sphere `SR30` | 30 | `[-5.12, 5.12]` | 0 | 0 |
//! | 10 | Ackley `AK30` | 30 | `[-15, 30]` | 0 | 0 |
//!
//! The potentials are defined on all of `R^d` (no walls); the domain is carried by
//! [`BenchmarkFunction::domain`] for initial points. [`Potential::support`] keeps its default `None`: these are
//! 20- to 30-dimensional, far beyond grid quadrature. Note that Ackley is bounded above
//! (`U < 20 + e`), so `exp(-U / tau)` is not normalisable on `R^d`.

use std::f64::consts::{E, PI, TAU};
use std::sync::Arc;

use crate::Potential;
use sgmcmc_samplers::error::TargetError;

fn invalid_dim(d: usize, reason: &'static str) -> TargetError {
    TargetError::InvalidParameter {
        name: "dim",
        value: d.to_string(),
        reason,
    }
}

fn at_least(d: usize, min: usize, reason: &'static str) -> Result<usize, TargetError> {
    if d >= min {
        Ok(d)
    } else {
        Err(invalid_dim(d, reason))
    }
}

/// Rastrigin: `U(x) = 10 d + sum_i (x_i^2 - 10 cos(2 pi x_i))`; `U* = 0` at `x = 0`
/// (Table 7.1 no. 1, `RT20`).
#[derive(Clone, Debug)]
pub struct Rastrigin {
    dim: usize,
}

impl Rastrigin {
    /// Rastrigin in `d >= 1` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 1, "must be at least 1")?,
        })
    }
}

impl Potential for Rastrigin {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        // Summed as non-negative terms x^2 + 10 (1 - cos): no cancellation against 10 d.
        x.iter()
            .map(|&xi| xi * xi + 10.0 * (1.0 - (TAU * xi).cos()))
            .sum()
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut u = 0.0;
        for (g, &xi) in grad.iter_mut().zip(x) {
            let (s, c) = (TAU * xi).sin_cos();
            u += xi * xi + 10.0 * (1.0 - c);
            *g = 2.0 * xi + 10.0 * TAU * s;
        }
        u
    }
}

/// Griewank: `U(x) = 1 + sum_i x_i^2 / 4000 - prod_i cos(x_i / sqrt(i))` (`i` from 1);
/// `U* = 0` at `x = 0` (Table 7.1 no. 2, `G20`).
#[derive(Clone, Debug)]
pub struct Griewank {
    dim: usize,
}

impl Griewank {
    /// Griewank in `d >= 1` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 1, "must be at least 1")?,
        })
    }
}

impl Potential for Griewank {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let mut sq = 0.0;
        let mut prod = 1.0;
        for (i, &xi) in x.iter().enumerate() {
            sq += xi * xi;
            prod *= (xi / ((i + 1) as f64).sqrt()).cos();
        }
        1.0 + sq / 4000.0 - prod
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        // d/dx_i prod_j cos(x_j / sqrt j) = -sin(x_i / sqrt i) / sqrt i * prod_{j != i} cos(..).
        // The product over j != i comes from prefix and suffix products (no division by cos).
        let n = x.len();
        let mut sq = 0.0;
        let mut prefix = 1.0;
        for (i, (g, &xi)) in grad.iter_mut().zip(x).enumerate() {
            sq += xi * xi;
            *g = prefix; // prod_{j < i} cos
            prefix *= (xi / ((i + 1) as f64).sqrt()).cos();
        }
        let mut suffix = 1.0;
        for i in (0..n).rev() {
            let r = ((i + 1) as f64).sqrt();
            let (s, c) = (x[i] / r).sin_cos();
            grad[i] = x[i] / 2000.0 + s / r * grad[i] * suffix;
            suffix *= c;
        }
        1.0 + sq / 4000.0 - prefix
    }
}

/// Sum Squares: `U(x) = sum_i i x_i^2` (`i` from 1); `U* = 0` at `x = 0` (Table 7.1 no. 3,
/// `SS20`).
#[derive(Clone, Debug)]
pub struct SumSquares {
    dim: usize,
}

impl SumSquares {
    /// Sum Squares in `d >= 1` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 1, "must be at least 1")?,
        })
    }
}

impl Potential for SumSquares {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        x.iter()
            .enumerate()
            .map(|(i, &xi)| (i + 1) as f64 * xi * xi)
            .sum()
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut u = 0.0;
        for (i, (g, &xi)) in grad.iter_mut().zip(x).enumerate() {
            let w = (i + 1) as f64;
            u += w * xi * xi;
            *g = 2.0 * w * xi;
        }
        u
    }
}

/// Rosenbrock: `U(x) = sum_{i=1}^{d-1} [100 (x_{i+1} - x_i^2)^2 + (x_i - 1)^2]`; `U* = 0` at
/// `x = (1, ..., 1)` (Table 7.1 no. 4, `R20`).
#[derive(Clone, Debug)]
pub struct Rosenbrock {
    dim: usize,
}

impl Rosenbrock {
    /// Rosenbrock in `d >= 2` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 2, "must be at least 2")?,
        })
    }
}

impl Potential for Rosenbrock {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        x.windows(2)
            .map(|w| {
                let a = w[1] - w[0] * w[0];
                let b = w[0] - 1.0;
                100.0 * a * a + b * b
            })
            .sum()
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        grad.fill(0.0);
        let mut u = 0.0;
        for i in 0..x.len() - 1 {
            let a = x[i + 1] - x[i] * x[i];
            let b = x[i] - 1.0;
            u += 100.0 * a * a + b * b;
            grad[i] += -400.0 * x[i] * a + 2.0 * b;
            grad[i + 1] += 200.0 * a;
        }
        u
    }
}

/// Zakharov: `U(x) = sum_i x_i^2 + s^2 + s^4` with `s = sum_i 0.5 i x_i` (`i` from 1);
/// `U* = 0` at `x = 0` (Table 7.1 no. 5, `Z20`).
#[derive(Clone, Debug)]
pub struct Zakharov {
    dim: usize,
}

impl Zakharov {
    /// Zakharov in `d >= 1` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 1, "must be at least 1")?,
        })
    }

    fn parts(x: &[f64]) -> (f64, f64) {
        let mut sq = 0.0;
        let mut s = 0.0;
        for (i, &xi) in x.iter().enumerate() {
            sq += xi * xi;
            s += 0.5 * (i + 1) as f64 * xi;
        }
        (sq, s)
    }
}

impl Potential for Zakharov {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let (sq, s) = Self::parts(x);
        let s2 = s * s;
        sq + s2 + s2 * s2
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let (sq, s) = Self::parts(x);
        let s2 = s * s;
        let ds = 2.0 * s + 4.0 * s2 * s;
        for (i, (g, &xi)) in grad.iter_mut().zip(x).enumerate() {
            *g = 2.0 * xi + ds * 0.5 * (i + 1) as f64;
        }
        sq + s2 + s2 * s2
    }
}

/// Powell: `U(x) = sum_{k=1}^{d/4} [(x_{4k-3} + 10 x_{4k-2})^2 + 5 (x_{4k-1} - x_{4k})^2
/// + (x_{4k-2} - 2 x_{4k-1})^4 + 10 (x_{4k-3} - x_{4k})^4]`; `U* = 0` at `x = 0`
/// (Table 7.1 no. 6, `PW24`). (Hedar's page gives `x* = (3, -1, 0, 1, ...)`, a known error:
/// `U` is 215 per block there.)
#[derive(Clone, Debug)]
pub struct Powell {
    dim: usize,
}

impl Powell {
    /// Powell in `d` dimensions, `d` a positive multiple of 4.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        if d == 0 || !d.is_multiple_of(4) {
            return Err(invalid_dim(d, "must be a positive multiple of 4"));
        }
        Ok(Self { dim: d })
    }
}

impl Potential for Powell {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        x.chunks_exact(4)
            .map(|b| {
                let p = b[0] + 10.0 * b[1];
                let q = b[2] - b[3];
                let r = b[1] - 2.0 * b[2];
                let t = b[0] - b[3];
                p * p + 5.0 * q * q + r.powi(4) + 10.0 * t.powi(4)
            })
            .sum()
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let mut u = 0.0;
        for (b, g) in x.chunks_exact(4).zip(grad.chunks_exact_mut(4)) {
            let p = b[0] + 10.0 * b[1];
            let q = b[2] - b[3];
            let r = b[1] - 2.0 * b[2];
            let t = b[0] - b[3];
            let (r3, t3) = (r * r * r, t * t * t);
            u += p * p + 5.0 * q * q + r3 * r + 10.0 * t3 * t;
            g[0] = 2.0 * p + 40.0 * t3;
            g[1] = 20.0 * p + 4.0 * r3;
            g[2] = 10.0 * q - 8.0 * r3;
            g[3] = -10.0 * q - 40.0 * t3;
        }
        u
    }
}

/// Dixon & Price: `U(x) = (x_1 - 1)^2 + sum_{i=2}^d i (2 x_i^2 - x_{i-1})^2`; `U* = 0` at
/// `x_i = 2^{-(2^i - 2) / 2^i}` (and at the sign flips of `x_2, ..., x_d` that keep
/// `2 x_i^2 = x_{i-1}`) (Table 7.1 no. 7, `DP25`).
#[derive(Clone, Debug)]
pub struct DixonPrice {
    dim: usize,
}

impl DixonPrice {
    /// Dixon & Price in `d >= 1` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 1, "must be at least 1")?,
        })
    }

    /// The positive global minimiser `x_i = 2^{-(1 - 2^{1-i})}`, `i = 1..d`.
    pub fn minimiser(d: usize) -> Vec<f64> {
        (1..=d as i32)
            .map(|i| 2f64.powf(-(1.0 - 2f64.powi(1 - i))))
            .collect()
    }
}

impl Potential for DixonPrice {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let head = (x[0] - 1.0) * (x[0] - 1.0);
        head + x
            .windows(2)
            .enumerate()
            .map(|(k, w)| {
                let t = 2.0 * w[1] * w[1] - w[0];
                (k + 2) as f64 * t * t
            })
            .sum::<f64>()
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        grad.fill(0.0);
        let mut u = (x[0] - 1.0) * (x[0] - 1.0);
        grad[0] = 2.0 * (x[0] - 1.0);
        for j in 1..x.len() {
            let w = (j + 1) as f64; // 1-based index i = j + 1
            let t = 2.0 * x[j] * x[j] - x[j - 1];
            u += w * t * t;
            grad[j] += 8.0 * w * t * x[j];
            grad[j - 1] -= 2.0 * w * t;
        }
        u
    }
}

/// Levy: with `w_i = 1 + (x_i - 1) / 4`,
/// `U(x) = sin^2(pi w_1) + sum_{i=1}^{d-1} (w_i - 1)^2 [1 + 10 sin^2(pi w_i + 1)]
/// + (w_d - 1)^2 [1 + sin^2(2 pi w_d)]`; `U* = 0` at `x = (1, ..., 1)` (Table 7.1 no. 8, `L30`).
#[derive(Clone, Debug)]
pub struct Levy {
    dim: usize,
}

impl Levy {
    /// Levy in `d >= 1` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 1, "must be at least 1")?,
        })
    }
}

impl Potential for Levy {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let mut g = vec![0.0; x.len()];
        self.energy_grad(x, &mut g)
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let n = x.len();
        let w = |xi: f64| 1.0 + (xi - 1.0) / 4.0;
        // Derivatives are taken in w and scaled by dw/dx = 1/4 at the end.
        let w1 = w(x[0]);
        let s1 = (PI * w1).sin();
        let mut u = s1 * s1;
        grad[0] = PI * (TAU * w1).sin();
        grad[1..].fill(0.0);
        for i in 0..n - 1 {
            let wi = w(x[i]);
            let a = wi - 1.0;
            let arg = PI * wi + 1.0;
            let s = arg.sin();
            let f = 1.0 + 10.0 * s * s;
            u += a * a * f;
            // d/dw 10 sin^2(pi w + 1) = 10 pi sin(2 (pi w + 1)).
            grad[i] += 2.0 * a * f + a * a * 10.0 * PI * (2.0 * arg).sin();
        }
        let wd = w(x[n - 1]);
        let a = wd - 1.0;
        let s = (TAU * wd).sin();
        u += a * a * (1.0 + s * s);
        grad[n - 1] += 2.0 * a * (1.0 + s * s) + a * a * TAU * (2.0 * TAU * wd).sin();
        for g in grad.iter_mut() {
            *g *= 0.25;
        }
        u
    }
}

/// Sphere: `U(x) = sum_i x_i^2`; `U* = 0` at `x = 0` (Table 7.1 no. 9, `SR30`).
#[derive(Clone, Debug)]
pub struct Sphere {
    dim: usize,
}

impl Sphere {
    /// Sphere in `d >= 1` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 1, "must be at least 1")?,
        })
    }
}

impl Potential for Sphere {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        x.iter().map(|xi| xi * xi).sum()
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        for (g, &xi) in grad.iter_mut().zip(x) {
            *g = 2.0 * xi;
        }
        self.energy(x)
    }
}

/// Ackley: `U(x) = 20 + e - 20 exp(-0.2 sqrt(sum_i x_i^2 / d)) - exp(sum_i cos(2 pi x_i) / d)`;
/// `U* = 0` at `x = 0` (Table 7.1 no. 10, `AK30`). `U` has a cone at 0 (not differentiable);
/// the gradient of the first exponential is taken as 0 there.
#[derive(Clone, Debug)]
pub struct Ackley {
    dim: usize,
}

impl Ackley {
    /// Ackley in `d >= 1` dimensions.
    pub fn new(d: usize) -> Result<Self, TargetError> {
        Ok(Self {
            dim: at_least(d, 1, "must be at least 1")?,
        })
    }
}

impl Potential for Ackley {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let mut g = vec![0.0; x.len()];
        self.energy_grad(x, &mut g)
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let n = x.len() as f64;
        let (mut sq, mut cs) = (0.0, 0.0);
        for &xi in x {
            sq += xi * xi;
            cs += (TAU * xi).cos();
        }
        let r = (sq / n).sqrt();
        let e1 = (-0.2 * r).exp();
        let e2 = (cs / n).exp();
        // d/dx_i [-20 e^{-0.2 r}] = 4 e^{-0.2 r} x_i / (d r); d/dx_i [-e^{C/d}] = e^{C/d} 2 pi sin / d.
        let a = if r > 0.0 { 4.0 * e1 / (n * r) } else { 0.0 };
        for (g, &xi) in grad.iter_mut().zip(x) {
            *g = a * xi + e2 * TAU * (TAU * xi).sin() / n;
        }
        // (20 - 20 e1) + (e - e2): each bracket is exactly 0 at x = 0.
        20.0 * (1.0 - e1) + (E - e2)
    }
}

/// AWSGLD hyper-parameters of one row of Table F.1 (thesis appendix F.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaperSettings {
    /// Learning rate `epsilon` (SGLD and AWSGLD).
    pub lr: f64,
    /// Temperature `tau`: AWSGLD's and the *high* SGLD temperature. The thesis does not give the
    /// low SGLD temperature.
    pub temperature: f64,
    /// Energy bandwidth `Delta u` for AW-10 and AW-100 (`m = 10, 100`; `m Delta u` is the same
    /// for both).
    pub bandwidth: [f64; 2],
    /// `zeta` for AW-10 and AW-100.
    pub zeta: [f64; 2],
    /// Accuracy `rho`: a run hits when `U(x) <= U* + rho`.
    pub rho: f64,
    /// `c` in the SA step size `omega_k = c / (k^0.75 + 1000)` (200 for Rastrigin, else 100).
    pub omega_scale: f64,
}

/// Iterations to hit, in thousands, as printed in Table 7.1: `(mean, sd)` over 10 runs, `None` for
/// the table's `inf` (more than 100,000 iterations).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReportedHits {
    /// SGLD at the (unstated) low temperature.
    pub sgld_low: Option<(f64, f64)>,
    /// SGLD at [`PaperSettings::temperature`].
    pub sgld_high: Option<(f64, f64)>,
    /// AWSGLD with 10 subregions.
    pub aw10: Option<(f64, f64)>,
    /// AWSGLD with 100 subregions.
    pub aw100: Option<(f64, f64)>,
}

/// Number of subregions of AW-10 and AW-100.
pub const PARTITIONS: [usize; 2] = [10, 100];
/// Iteration budget of one run (Table 7.1: `inf` means more than 100,000 iterations).
pub const ITERATION_BUDGET: u64 = 100_000;
/// Independent runs per cell of Table 7.1.
pub const RUNS: usize = 10;

/// One benchmark of Table 7.1 with its Table F.1 settings.
#[derive(Clone, Copy, Debug)]
pub struct BenchmarkFunction {
    /// Row number in Tables 7.1 and F.1.
    pub no: usize,
    /// Lower-case name (`"rastrigin"`, `"dixon-price"`, ...).
    pub name: &'static str,
    /// The paper's symbol (`"RT20"`, `"DP25"`, ...).
    pub symbol: &'static str,
    /// Dimension `d` of the paper's experiment.
    pub dim: usize,
    /// Global minimum value `U*` (`u_min` in the thesis).
    pub min_value: f64,
    /// The usual search box `[lo, hi]^d` of the function (not stated in the thesis).
    pub domain: (f64, f64),
    /// Builds the function in any valid dimension.
    pub build: fn(usize) -> Result<Arc<dyn Potential>, TargetError>,
    /// A global minimiser in any dimension.
    pub minimiser: fn(usize) -> Vec<f64>,
    /// Table F.1.
    pub settings: PaperSettings,
    /// Table 7.1.
    pub reported: ReportedHits,
}

impl BenchmarkFunction {
    /// The function in the paper's dimension.
    pub fn potential(&self) -> Result<Arc<dyn Potential>, TargetError> {
        (self.build)(self.dim)
    }

    /// Whether energy `u` is in the optimal set `U(x) <= U* + rho`.
    pub fn hits(&self, u: f64) -> bool {
        u <= self.min_value + self.settings.rho
    }
}

/// The benchmark with this name or symbol (case-insensitive).
pub fn benchmark(name: &str) -> Result<&'static BenchmarkFunction, TargetError> {
    BENCHMARKS
        .iter()
        .find(|b| b.name.eq_ignore_ascii_case(name) || b.symbol.eq_ignore_ascii_case(name))
        .ok_or_else(|| TargetError::Unknown {
            what: "benchmark",
            name: name.to_string(),
            known: BENCHMARKS.map(|b| b.name).join(", "),
        })
}

fn boxed<P: Potential + 'static>(
    p: Result<P, TargetError>,
) -> Result<Arc<dyn Potential>, TargetError> {
    Ok(Arc::new(p?))
}

fn zeros(d: usize) -> Vec<f64> {
    vec![0.0; d]
}

fn ones(d: usize) -> Vec<f64> {
    vec![1.0; d]
}

const fn settings(
    lr: f64,
    temperature: f64,
    bandwidth: [f64; 2],
    zeta: [f64; 2],
    rho: f64,
    omega_scale: f64,
) -> PaperSettings {
    PaperSettings {
        lr,
        temperature,
        bandwidth,
        zeta,
        rho,
        omega_scale,
    }
}

const fn hits(
    sgld_low: Option<(f64, f64)>,
    sgld_high: Option<(f64, f64)>,
    aw10: Option<(f64, f64)>,
    aw100: Option<(f64, f64)>,
) -> ReportedHits {
    ReportedHits {
        sgld_low,
        sgld_high,
        aw10,
        aw100,
    }
}

/// The 10 benchmarks of Table 7.1, in the table's order, with Table F.1's settings.
pub const BENCHMARKS: [BenchmarkFunction; 10] = [
    BenchmarkFunction {
        no: 1,
        name: "rastrigin",
        symbol: "RT20",
        dim: 20,
        min_value: 0.0,
        domain: (-5.12, 5.12),
        build: |d| boxed(Rastrigin::new(d)),
        minimiser: zeros,
        settings: settings(5e-4, 5.0, [30.0, 3.0], [0.02, 0.02], 75.0, 200.0),
        reported: hits(Some((4.3, 0.3)), None, Some((5.1, 0.5)), Some((3.6, 0.2))),
    },
    BenchmarkFunction {
        no: 2,
        name: "griewank",
        symbol: "G20",
        dim: 20,
        min_value: 0.0,
        domain: (-600.0, 600.0),
        build: |d| boxed(Griewank::new(d)),
        minimiser: zeros,
        settings: settings(0.1, 10.0, [50.0, 5.0], [10.0, 10.0], 25.0, 100.0),
        reported: hits(
            Some((32.6, 0.9)),
            None,
            Some((1.8, 0.05)),
            Some((1.7, 0.02)),
        ),
    },
    BenchmarkFunction {
        no: 3,
        name: "sum-squares",
        symbol: "SS20",
        dim: 20,
        min_value: 0.0,
        domain: (-10.0, 10.0),
        build: |d| boxed(SumSquares::new(d)),
        minimiser: zeros,
        settings: settings(0.01, 0.01, [10.0, 1.0], [1.0, 1.0], 1.5, 100.0),
        reported: hits(
            Some((0.07, 0.01)),
            Some((0.07, 0.01)),
            Some((0.07, 0.01)),
            Some((0.06, 0.01)),
        ),
    },
    BenchmarkFunction {
        no: 4,
        name: "rosenbrock",
        symbol: "R20",
        dim: 20,
        min_value: 0.0,
        domain: (-5.0, 10.0),
        build: |d| boxed(Rosenbrock::new(d)),
        minimiser: ones,
        settings: settings(1e-5, 10.0, [30.0, 3.0], [100.0, 10.0], 20.0, 100.0),
        reported: hits(
            Some((29.2, 5.7)),
            Some((93.2, 10.6)),
            Some((0.15, 0.01)),
            Some((0.7, 0.1)),
        ),
    },
    BenchmarkFunction {
        no: 5,
        name: "zakharov",
        symbol: "Z20",
        dim: 20,
        min_value: 0.0,
        domain: (-5.0, 10.0),
        build: |d| boxed(Zakharov::new(d)),
        minimiser: zeros,
        settings: settings(1e-9, 1e4, [500.0, 50.0], [1.0, 0.5], 500.0, 100.0),
        reported: hits(
            Some((20.3, 6.2)),
            Some((6.9, 1.9)),
            Some((1.4, 0.7)),
            Some((0.9, 0.1)),
        ),
    },
    BenchmarkFunction {
        no: 6,
        name: "powell",
        symbol: "PW24",
        dim: 24,
        min_value: 0.0,
        domain: (-4.0, 5.0),
        build: |d| boxed(Powell::new(d)),
        minimiser: zeros,
        settings: settings(1e-4, 1.0, [20.0, 2.0], [500.0, 200.0], 1.0, 100.0),
        reported: hits(
            Some((10.0, 0.6)),
            None,
            Some((0.3, 0.01)),
            Some((0.2, 0.01)),
        ),
    },
    BenchmarkFunction {
        no: 7,
        name: "dixon-price",
        symbol: "DP25",
        dim: 25,
        min_value: 0.0,
        domain: (-10.0, 10.0),
        build: |d| boxed(DixonPrice::new(d)),
        minimiser: DixonPrice::minimiser,
        settings: settings(1e-5, 10.0, [20.0, 2.0], [100.0, 20.0], 10.0, 100.0),
        reported: hits(
            Some((47.9, 3.6)),
            Some((87.5, 6.9)),
            Some((0.2, 0.02)),
            Some((0.3, 0.01)),
        ),
    },
    BenchmarkFunction {
        no: 8,
        name: "levy",
        symbol: "L30",
        dim: 30,
        min_value: 0.0,
        domain: (-10.0, 10.0),
        build: |d| boxed(Levy::new(d)),
        minimiser: ones,
        settings: settings(1e-4, 100.0, [600.0, 60.0], [100.0, 10.0], 400.0, 100.0),
        reported: hits(
            None,
            Some((22.5, 3.9)),
            Some((0.1, 0.05)),
            Some((0.3, 0.01)),
        ),
    },
    BenchmarkFunction {
        no: 9,
        name: "sphere",
        symbol: "SR30",
        dim: 30,
        min_value: 0.0,
        domain: (-5.12, 5.12),
        build: |d| boxed(Sphere::new(d)),
        minimiser: zeros,
        settings: settings(0.01, 1e-4, [20.0, 2.0], [1.0, 1.0], 0.001, 100.0),
        reported: hits(
            Some((0.3, 0.01)),
            Some((0.4, 0.01)),
            Some((0.4, 0.03)),
            Some((0.4, 0.03)),
        ),
    },
    BenchmarkFunction {
        no: 10,
        name: "ackley",
        symbol: "AK30",
        dim: 30,
        min_value: 0.0,
        domain: (-15.0, 30.0),
        build: |d| boxed(Ackley::new(d)),
        minimiser: zeros,
        settings: settings(0.01, 0.05, [0.4, 0.04], [0.2, 0.2], 0.4, 100.0),
        reported: hits(Some((66.2, 12.1)), None, Some((2.7, 0.3)), Some((4.3, 0.2))),
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use sgmcmc_samplers::rng::ChainRng;

    /// Test points: 3 uniform in the domain box and 3 within 0.5 of the minimiser per coordinate
    /// (near `x*` the landscape is not dominated by one huge term, e.g. Zakharov's `s^4`).
    fn points(b: &BenchmarkFunction, rng: &mut ChainRng) -> Vec<Vec<f64>> {
        let (lo, hi) = b.domain;
        let star = (b.minimiser)(b.dim);
        let mut pts: Vec<Vec<f64>> = (0..3)
            .map(|_| (0..b.dim).map(|_| lo + (hi - lo) * rng.uniform()).collect())
            .collect();
        pts.extend((0..3).map(|_| star.iter().map(|s| s + rng.uniform() - 0.5).collect()));
        pts
    }

    #[test]
    fn gradients_match_central_differences() {
        // Central difference D(h) = (U(x + h e_i) - U(x - h e_i)) / 2h has error
        //   c h^2 (c = U'''/6, truncation) + |dU| / h (rounding of U, |dU| <~ d eps S with S the
        //   sum of the magnitudes of U's terms, at most |U| + 30 here: Ackley's 20 + e).
        // The truncation is estimated by Richardson: D(2h) - D(h) = 3 c h^2 (+ rounding), so the
        // tolerance 2 |D(2h) - D(h)| covers it with a factor-6 margin; the rounding bound gets a
        // factor 64; a 1e-9 relative floor covers the rounding of the analytic gradient itself.
        let mut rng = ChainRng::new(7, 0);
        for b in &BENCHMARKS {
            let p = b.potential().unwrap();
            let d = p.dim();
            for x in points(b, &mut rng) {
                let mut g = vec![0.0; d];
                let u = p.energy_grad(&x, &mut g);
                let fd = |i: usize, h: f64| {
                    let (mut xp, mut xm) = (x.clone(), x.clone());
                    xp[i] += h;
                    xm[i] -= h;
                    (p.energy(&xp) - p.energy(&xm)) / (2.0 * h)
                };
                for i in 0..d {
                    let h = 1e-5 * (1.0 + x[i].abs());
                    let (d1, d2) = (fd(i, h), fd(i, 2.0 * h));
                    let rounding = 64.0 * d as f64 * f64::EPSILON * (u.abs() + 30.0) / h;
                    let tol = 2.0 * (d2 - d1).abs() + rounding + 1e-9 * (1.0 + g[i].abs());
                    assert!(
                        (g[i] - d1).abs() <= tol,
                        "{} x[{i}] = {}: grad {} vs fd {d1} (tol {tol})",
                        b.name,
                        x[i],
                        g[i]
                    );
                }
            }
        }
    }

    #[test]
    fn energy_grad_returns_the_energy() {
        let mut rng = ChainRng::new(11, 0);
        for b in &BENCHMARKS {
            let p = b.potential().unwrap();
            for x in points(b, &mut rng) {
                let mut g = vec![0.0; p.dim()];
                let (u1, u2) = (p.energy(&x), p.energy_grad(&x, &mut g));
                assert!((u1 - u2).abs() <= 1e-12 * (1.0 + u1.abs()), "{}", b.name);
            }
        }
    }

    #[test]
    fn energy_at_the_minimiser_is_the_minimum_and_stationary() {
        let mut rng = ChainRng::new(13, 0);
        for b in &BENCHMARKS {
            let p = b.potential().unwrap();
            let star = (b.minimiser)(b.dim);
            assert_eq!(star.len(), p.dim(), "{}", b.name);
            let mut g = vec![1.0; p.dim()];
            let u = p.energy_grad(&star, &mut g);
            assert!((u - b.min_value).abs() <= 1e-12, "{}: U(x*) = {u}", b.name);
            assert!(b.hits(u), "{}", b.name);
            let gmax = g.iter().fold(0.0f64, |m, gi| m.max(gi.abs()));
            assert!(gmax <= 1e-9, "{}: |grad U(x*)| = {gmax}", b.name);
            // Small random moves never go below U*.
            for _ in 0..50 {
                let y: Vec<f64> = star
                    .iter()
                    .map(|s| s + 1e-3 * (rng.uniform() - 0.5))
                    .collect();
                assert!(p.energy(&y) >= b.min_value, "{}", b.name);
            }
        }
    }

    #[test]
    fn known_values_pin_the_formulas() {
        // Values that finite differences cannot check (constants and offsets).
        let cases: Vec<(Arc<dyn Potential>, Vec<f64>, f64)> = vec![
            // 20 (0.25 + 10 (1 - cos pi)) = 20 * 20.25
            (boxed(Rastrigin::new(20)).unwrap(), vec![0.5; 20], 405.0),
            // 1 + 1/4000 - cos 1
            (
                boxed(Griewank::new(1)).unwrap(),
                vec![1.0],
                1.00025 - 1f64.cos(),
            ),
            (boxed(SumSquares::new(20)).unwrap(), vec![1.0; 20], 210.0),
            (boxed(Rosenbrock::new(20)).unwrap(), vec![0.0; 20], 19.0),
            // 2 + 1.5^2 + 1.5^4
            (boxed(Zakharov::new(2)).unwrap(), vec![1.0, 1.0], 9.3125),
            // 49 + 5 + 1 + 160
            (
                boxed(Powell::new(4)).unwrap(),
                vec![3.0, -1.0, 0.0, 1.0],
                215.0,
            ),
            // 1 + 2 (2 - 0)^2 + 3 (0 - 1)^2
            (
                boxed(DixonPrice::new(3)).unwrap(),
                vec![0.0, 1.0, 0.0],
                12.0,
            ),
            // w = (0.75, 0.75): sin^2(0.75 pi) + 1/16 (1 + 10 sin^2(0.75 pi + 1)) + 1/16 (1 + 1)
            (
                boxed(Levy::new(2)).unwrap(),
                vec![0.0, 0.0],
                0.5 + (1.0 + 10.0 * (0.75 * PI + 1.0).sin().powi(2)) / 16.0 + 2.0 / 16.0,
            ),
            (boxed(Sphere::new(30)).unwrap(), vec![2.0; 30], 120.0),
            // r = 1, all cosines 1: 20 + e - 20 e^{-0.2} - e
            (
                boxed(Ackley::new(30)).unwrap(),
                vec![1.0; 30],
                20.0 - 20.0 * (-0.2f64).exp(),
            ),
        ];
        for (p, x, want) in cases {
            let u = p.energy(&x);
            assert!(
                (u - want).abs() <= 1e-12 * (1.0 + want.abs()),
                "{p:?}: {u} vs {want}"
            );
        }
    }

    #[test]
    fn listing_matches_table_7_1_and_checks_dimensions() {
        let dims: Vec<usize> = BENCHMARKS.iter().map(|b| b.dim).collect();
        assert_eq!(dims, [20, 20, 20, 20, 20, 24, 25, 30, 30, 30]);
        for (k, b) in BENCHMARKS.iter().enumerate() {
            assert_eq!(b.no, k + 1);
            assert_eq!(b.potential().unwrap().dim(), b.dim);
            assert!(b.symbol.ends_with(&b.dim.to_string()), "{}", b.symbol);
            assert_eq!(benchmark(b.symbol).unwrap().name, b.name);
            // m du is the same energy window for both partitions.
            let s = b.settings;
            let window = [0, 1].map(|j| PARTITIONS[j] as f64 * s.bandwidth[j]);
            assert!(
                (window[0] - window[1]).abs() < 1e-9 * window[0],
                "{}",
                b.name
            );
        }
        assert!(benchmark("nope").is_err());
        assert!(Powell::new(22).is_err() && Powell::new(0).is_err());
        assert!(Rosenbrock::new(1).is_err() && Sphere::new(0).is_err());
    }
}
