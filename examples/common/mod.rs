//! What the posterior examples share: a 1-50-50-1 tanh network written as an ordinary burn
//! module (burn's `Linear` as `sgmcmc::nn` wraps it, and the library's `tanh`), a 1-D
//! regression data set made here, and its Gaussian likelihood as a closure.
#![allow(dead_code)]

use sgmcmc::burn::data::dataloader::batcher::Batcher;
use sgmcmc::burn::data::dataset::InMemDataset;
use sgmcmc::burn::module::Module;
use sgmcmc::burn::nn::LinearConfig;
use sgmcmc::burn::tensor::{Device, Tensor, TensorData};
use sgmcmc::models::nll::NllFn;
use sgmcmc::models::{ModelPosterior, nll_fn};
use sgmcmc::nn::{Linear, tanh};

/// The network.
#[derive(Module, Debug)]
pub struct Net {
    l1: Linear,
    l2: Linear,
    l3: Linear,
}

impl Net {
    pub fn new(device: &Device) -> Self {
        let l = |i, o| LinearConfig::new(i, o).init(device).into();
        Self {
            l1: l(1, 50),
            l2: l(50, 50),
            l3: l(50, 1),
        }
    }

    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.l3
            .forward(tanh(self.l2.forward(tanh(self.l1.forward(x)))))
    }
}

/// A batch: inputs `[n, 1]`, targets `[n, 1]`.
#[derive(Clone)]
pub struct Xy(pub Tensor<2>, pub Tensor<2>);

pub struct XyBatcher;

impl Batcher<(f32, f32), Xy> for XyBatcher {
    fn batch(&self, items: Vec<(f32, f32)>, device: &Device) -> Xy {
        let n = items.len();
        let (x, y): (Vec<f32>, Vec<f32>) = items.into_iter().unzip();
        let t = |v| Tensor::from_data(TensorData::new(v, [n, 1]), device);
        Xy(t(x), t(y))
    }
}

/// Noise standard deviation of the data.
pub const NOISE: f64 = 0.1;

/// `y = sin(3x) + x + 0.1 noise` at `n` points of `[-1.5, 1.5]` (a fixed pseudo-random draw).
pub fn data(n: usize, seed: u64) -> InMemDataset<(f32, f32)> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut u = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64) / (1u64 << 53) as f64
    };
    let items = (0..n)
        .map(|_| {
            let x = 3.0 * u() - 1.5;
            let z = (-2.0 * u().max(1e-300).ln()).sqrt() * (std::f64::consts::TAU * u()).cos();
            (x as f32, ((3.0 * x).sin() + x + NOISE * z) as f32)
        })
        .collect();
    InMemDataset::new(items)
}

/// The per-example negative log-likelihood `(y - f(x))^2 / (2 sigma^2)` (constants dropped).
pub type Likelihood = NllFn<fn(&Net, &Xy) -> Tensor<1>, Xy>;

fn gaussian(net: &Net, b: &Xy) -> Tensor<1> {
    let r = net.forward(b.0.clone()) - b.1.clone();
    r.powi_scalar(2)
        .mul_scalar(0.5 / (NOISE * NOISE))
        .squeeze_dim(1)
}

/// The posterior over `n` training points with a unit Gaussian prior on every weight.
pub fn posterior(n: usize) -> ModelPosterior<Likelihood> {
    ModelPosterior::new(nll_fn(gaussian as fn(&Net, &Xy) -> Tensor<1>), n)
}

/// Predictions of `net` at the inputs of `b`.
pub fn predict(net: &Net, b: &Xy) -> Result<Vec<f64>, String> {
    let out = net.valid().forward(b.0.clone().inner()).into_data();
    let v = out.try_into_vec::<f32>().map_err(|e| format!("{e:?}"))?;
    Ok(v.into_iter().map(f64::from).collect())
}

/// Root mean squared error of `pred` against the targets of `b`.
pub fn rmse(pred: &[f64], b: &Xy) -> f64 {
    let y =
        b.1.clone()
            .into_data()
            .try_into_vec::<f32>()
            .unwrap_or_default();
    let se: f64 = pred
        .iter()
        .zip(&y)
        .map(|(p, t)| (p - f64::from(*t)).powi(2))
        .sum();
    (se / y.len().max(1) as f64).sqrt()
}
