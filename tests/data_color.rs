//! `sgmcmc data fetch|verify` on the colour sets (CIFAR-10, CIFAR-100, SVHN) with synthetic
//! folders in the official layouts: a fetch through a loopback server, verification against
//! the official image counts, and truncated files named on one line with exit code 2.

mod common;

use common::cli::{fails_with, tmp};
use sgmcmc::data::loopback::serve;
use sgmcmc_data::color_synthetic::write_synthetic;
use sgmcmc_data::fetch_color::ColorSet;

/// A download that is not the published file is refused by its MD5 before it is read (the
/// counts and content checks behind it are the data crate's tests), and nothing is kept.
#[test]
fn data_fetch_svhn_refuses_files_that_are_not_the_published_ones() {
    let up = tmp("svhn-up");
    write_synthetic(&up, ColorSet::Svhn, 5, 2, 1).unwrap();
    let base = serve(up.clone(), 2);
    let to = tmp("svhn-to");
    let t = to.to_str().unwrap();
    fails_with(
        &["data", "fetch", "svhn", "--to", t, "--base-url", &base],
        2,
        "train_32x32.mat: MD5",
    );
    assert_eq!(std::fs::read_dir(&to).unwrap().count(), 0, "left behind");
    for d in [up, to] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn data_verify_checks_colour_folders_and_names_a_truncated_file() {
    for (set, name, file) in [
        (ColorSet::Cifar10, "cifar10", "data_batch_3.bin"),
        (ColorSet::Cifar100, "cifar100", "train.bin"),
        (ColorSet::Svhn, "svhn", "train_32x32.mat"),
    ] {
        let root = tmp(&format!("verify-{name}"));
        let r = root.to_str().unwrap();
        let dir = root.join(name);
        write_synthetic(&dir, set, 10, 2, 4).unwrap();
        fails_with(
            &["data", "verify", r],
            2,
            "10 training images, the official set has",
        );
        let raw = std::fs::read(dir.join(file)).unwrap();
        std::fs::write(dir.join(file), &raw[..raw.len() - 1]).unwrap();
        fails_with(&["data", "verify", r], 2, file);
        let _ = std::fs::remove_dir_all(root);
    }
}
