//! `sgmcmc toy` on a user's own target, a Gaussian mixture given as a `[target]` table: SGLD's
//! mode masses agree with the exact ones computed for it, bad tables exit 2 with one line, and
//! the example configs run.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{fails_with, succeeds, tmp};
use sgmcmc::testfunctions::exact_masses::{ExactMethod, mode_masses};
use sgmcmc::testfunctions::{Covariance, GaussianMixture};

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    serde_json::from_value(v.clone()).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const MEANS: &str = "[[-1.5, 0, 0], [1.5, 0.5, -0.5]]";
const COVS: [[[f64; 3]; 3]; 2] = [
    [[1.0, 0.3, 0.0], [0.3, 0.5, 0.1], [0.0, 0.1, 2.0]],
    [[0.7, -0.2, 0.1], [-0.2, 1.0, 0.0], [0.1, 0.0, 0.4]],
];

#[test]
fn sgld_on_a_user_mixture_matches_its_exact_mode_masses() {
    // A 3-D mixture with full covariances at temperature 1.5: the exact masses come from
    // importance-weighted Monte Carlo. 32 chains, so the sampled masses' standard errors come
    // from the spread of the per-chain means (valid whatever the mixing). lr 0.01 inflates the
    // narrowest variance (0.3) by lr / (2 * 0.3) ~ 1.7%, which moves the masses by ~1e-3, a
    // tenth of their standard error (~0.01).
    let dir = tmp("user-mixture");
    let cov: Vec<String> = COVS.iter().map(|c| format!("{c:?}")).collect();
    let config = write(
        &dir,
        "my.toml",
        &format!(
            "chains = 32\niters = 50000\nburn_in = 5000\nseed = 7\n\n[sampler]\nname = \"sgld\"\n\
             lr = 0.01\ntemperature = 1.5\n\n[target]\nkind = \"mixture\"\nname = \"mine\"\n\
             weights = [1, 4]\nmeans = {MEANS}\ncov = [{}]\nexact_draws = 400000\n",
            cov.join(", ")
        ),
    );
    let out = dir.join("run");
    succeeds(&[
        "toy",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let s = summary(&out);
    assert_eq!(s["target"], "mine");
    assert_eq!(s["exact_method"]["method"], "monte_carlo");
    assert_eq!(s["exact_method"]["draws"], 400_000);
    let (m, se) = (floats(&s["mode_masses"]), floats(&s["mode_mass_se"]));
    let (e, e_se) = (
        floats(&s["exact_mode_masses"]),
        floats(&s["exact_mode_mass_se"]),
    );
    // Wrong answer: the exact masses at temperature 1 (a summary that ignored the run's
    // temperature, or Monte Carlo without its importance weights).
    let covariances: Vec<Covariance> = COVS
        .iter()
        .map(|c| Covariance::Full(c.iter().map(|r| r.to_vec()).collect()))
        .collect();
    let mixture = GaussianMixture::new(
        &[1.0, 4.0],
        &[vec![-1.5, 0.0, 0.0], vec![1.5, 0.5, -0.5]],
        &covariances,
    )
    .unwrap();
    let at_1 = mode_masses(&mixture, 1.0, ExactMethod::MonteCarlo { draws: 400_000 }).unwrap();
    for k in 0..2 {
        let tol = 4.0 * (se[k].powi(2) + e_se[k].powi(2)).sqrt();
        assert!(se[k] < 0.02, "mode {k}: se {} too large to test", se[k]);
        assert!(
            (m[k] - e[k]).abs() < tol,
            "mode {k}: sampled {} vs exact {} (tol {tol})",
            m[k],
            e[k]
        );
        assert!(
            (at_1.masses[k] - e[k]).abs() > tol,
            "mode {k}: the temperature-1 mass {} would pass",
            at_1.masses[k]
        );
    }
    // The written config.toml holds the table and runs again.
    let again = dir.join("again");
    succeeds(&[
        "toy",
        "--config",
        out.join("config.toml").to_str().unwrap(),
        "--iters",
        "2000",
        "--burn-in",
        "200",
        "--out",
        again.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(summary(&again)["exact_mode_masses"], s["exact_mode_masses"]);
}

#[test]
fn bad_mixture_tables_exit_2_with_one_line() {
    let dir = tmp("bad-mixture");
    let out = dir.join("run");
    let head = "[target]\nkind = \"mixture\"\n";
    let two = "weights = [0.5, 0.5]\nmeans = [[0, 0], [1, 1]]\n";
    let cases = [
        (
            format!("{head}{two}cov = [[[1, 2], [2, 1]], [[1, 0], [0, 1]]]\n"),
            "component 1: covariance is not positive definite",
        ),
        (
            format!("{head}{two}cov = [[[1, 0.5], [0.4, 1]], [[1, 0], [0, 1]]]\n"),
            "component 1: covariance is not symmetric",
        ),
        (
            format!("{head}weights = [0.5, 0.5]\nmeans = [[0, 0], [1, 1, 1]]\nsd = [1, 1]\n"),
            "component 2: mean has 3 entries, expected 2",
        ),
        (
            format!("{head}{two}sd = [1, [1, 2, 3]]\n"),
            "component 2: sd has 3 entries, expected 2",
        ),
        (
            format!("{head}{two}cov = [[[1, 0], [0, 1]], [[1, 0, 0], [0, 1, 0], [0, 0, 1]]]\n"),
            "component 2: cov has 3 entries, expected 2",
        ),
        (
            format!("{head}weights = [0.5, -0.5]\nmeans = [[0, 0], [1, 1]]\nsd = [1, 1]\n"),
            "component 2: weight -0.5 must be finite and > 0",
        ),
        (
            format!("{head}weights = [1]\nmeans = [[0, 0], [1, 1]]\nsd = [1, 1]\n"),
            "weights has 1 entries for 2 components",
        ),
        (
            format!("{head}{two}sd = [1, 0]\n"),
            "standard deviation 0.0 must be > 0",
        ),
        (
            format!("{head}{two}sd = [1]\n"),
            "sd has 1 entries for 2 components",
        ),
        (
            format!("{head}{two}sd = [1, 1]\ncov = [[[1]], [[1]]]\n"),
            "give `sd` or `cov`, not both",
        ),
        (
            format!("{head}{two}"),
            "give each component's `sd` or `cov`",
        ),
        (format!("{head}{two}sd = [1, \"x\"]\n"), "expected an sd"),
        (format!("{head}{two}sds = [1, 1]\n"), "unknown field `sds`"),
        (
            format!("[target]\nkind = \"banana\"\n{two}"),
            "unknown variant `banana`",
        ),
        (
            format!("[target]\n{two}sd = [1, 1]\n"),
            "missing field `kind`",
        ),
        (
            format!("{head}{two}sd = [1, 1]\nexact_draws = 5\n"),
            "exact_draws = 5",
        ),
        (
            format!("{head}name = \"../up\"\n{two}sd = [1, 1]\n"),
            "[target] name `../up`",
        ),
        (
            format!("[init]\npoint = [0, 0, 0]\n\n{head}{two}sd = [1, 1]\n"),
            "init point has 3 coordinates, target `mixture` has 2",
        ),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let config = write(&dir, &format!("bad{i}.toml"), text);
        fails_with(
            &[
                "toy",
                "--config",
                config.to_str().unwrap(),
                "--iters",
                "100",
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ],
            2,
            needle,
        );
    }
}

#[test]
fn the_example_mixture_configs_run() {
    let dir = tmp("example-mixtures");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    // A short run of an example config with `sampler`; its summary.
    let run = |file: &str, sampler: &str| {
        let out = dir.join(format!("{file}-{sampler}"));
        let config = root.join(file);
        succeeds(&[
            "toy",
            "--config",
            config.to_str().unwrap(),
            "--sampler",
            sampler,
            "--iters",
            "2000",
            "--chains",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        summary(&out)
    };
    for (file, method) in [
        ("toy-mixture-2d.toml", "quadrature"),
        ("toy-mixture-3d.toml", "monte_carlo"),
    ] {
        let s = run(file, "sgld");
        assert_eq!(s["exact_method"]["method"], method, "{file}");
        let exact = floats(&s["exact_mode_masses"]);
        assert_eq!(exact.len(), 3, "{file}");
        assert!(
            (exact.iter().sum::<f64>() - 1.0).abs() < 1e-9,
            "{file}: {exact:?}"
        );
    }
    // A contour sampler on the 3-D example: theta's exact energy-bin masses come with
    // standard errors.
    let s = run("toy-mixture-3d.toml", "csgld");
    let (exact, se) = (floats(&s["theta_exact"]), floats(&s["theta_exact_se"]));
    assert_eq!(exact.len(), se.len());
    assert!((exact.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{exact:?}");
    assert!(
        se.iter().any(|v| *v > 0.0) && se.iter().all(|v| *v < 1e-3),
        "{se:?}"
    );
}
