//! Toy throughput in chain-steps per second on the 2-D 25-mode target (SGLD, energy and gradient
//! noise): the host f64 path with 1, 16 and 1000 chains, and the flex tensor path (chains as rows
//! of one `[P, 2]` tensor). Criterion's "elements/s" is chain-steps/s.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sgmcmc::engine::DeviceChoice;
use sgmcmc::samplers::density::particles::Particles;
use sgmcmc::samplers::ensemble::{HostEnsemble, ModuleEnsemble};
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc::testfunctions::by_name;
use std::time::Duration;

const STEPS: u64 = 100;

fn throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("twenty_five_mode_sgld");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    let cfg = SgmcmcConfig::constant(Kernel::Sgld, 3e-3, 1.0);
    for chains in [1usize, 16, 1000] {
        let starts = vec![vec![0.5, -0.5]; chains];
        g.throughput(Throughput::Elements(STEPS * chains as u64));
        let t = by_name("twenty-five-mode").unwrap();
        let mut s = Sgmcmc::new(cfg.clone(), HostEnsemble::new(t, &starts, 1).unwrap()).unwrap();
        g.bench_function(format!("host/{chains}"), |b| {
            b.iter(|| {
                for _ in 0..STEPS {
                    s.step(&()).unwrap();
                }
            })
        });
        if let Ok(Some(device)) = DeviceChoice::Flex.device() {
            let t = by_name("twenty-five-mode").unwrap();
            let p = Particles::from_rows(&starts, &device).unwrap();
            let mut s =
                Sgmcmc::new(cfg.clone(), ModuleEnsemble::new(t, vec![p], 1).unwrap()).unwrap();
            g.bench_function(format!("flex/{chains}"), |b| {
                b.iter(|| {
                    for _ in 0..STEPS {
                        s.step(&()).unwrap();
                    }
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
