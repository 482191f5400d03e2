//! Downloading and verifying the colour image benchmarks: CIFAR-10, CIFAR-100 (binary
//! versions) and SVHN (cropped digits).
//!
//! `fetch_color` downloads into a temporary folder (the CIFAR tarball `BASE/cifar-10-binary.tar.gz`
//! or `BASE/cifar-100-binary.tar.gz`, whose `*.bin` files are unpacked flat into the folder and
//! the tarball then removed; SVHN's `BASE/train_32x32.mat` and `BASE/test_32x32.mat`), verifies
//! it, and only then moves it to `ROOT/NAME` (`cifar10`, `cifar100`, `svhn`): nothing
//! half-written is left behind.
//!
//! Every downloaded file is first checked against the MD5 its publisher lists
//! ([`ColorKnown::md5`]: the CIFAR page lists one per tarball, and torchvision's SVHN reader
//! pins the same for the two `.mat` files); a mismatch is [`DataError::Md5`] and nothing is
//! unpacked. Verification then loads the folder with its reader (which refuses truncated or
//! corrupt files) and checks the number of training and test images against the official
//! set's (CIFAR 50000 / 10000, SVHN 73257 / 26032). When [`ColorKnown::sha256`] is set, the
//! content hash ([`content_sha256`]) must match as well; no SHA-256 of the decoded sets could
//! be computed where this was written (no network), so it is printed by [`fetch_color`]'s
//! caller to be pinned after a first download.

use std::fs;
use std::path::{Path, PathBuf};

use md5::Md5;
use sha2::{Digest, Sha256};

use crate::cifar::{Cifar10, Cifar100};
use crate::error::DataError;
use crate::fetch::{commit_folder, download, file_digest, hex, io_or_missing};
use crate::images::Images;
use crate::svhn::{SVHN_FILES, Svhn};

/// The public upstream of the CIFAR tarballs.
pub const CIFAR_UPSTREAM: &str = "https://www.cs.toronto.edu/~kriz";
/// The public upstream of the SVHN files.
pub const SVHN_UPSTREAM: &str = "http://ufldl.stanford.edu/housenumbers";

/// Which reader a benchmark uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorSet {
    /// [`Cifar10`] from `cifar-10-binary.tar.gz`.
    Cifar10,
    /// [`Cifar100`] from `cifar-100-binary.tar.gz`.
    Cifar100,
    /// [`Svhn`] from the two `.mat` files.
    Svhn,
}

/// A colour image benchmark to fetch and verify.
#[derive(Clone, Debug)]
pub struct ColorKnown {
    /// The reader.
    pub set: ColorSet,
    /// Folder name (`cifar10`, `cifar100`, `svhn`).
    pub name: String,
    /// Default base URL.
    pub upstream: String,
    /// Training and test images of the official set.
    pub counts: [usize; 2],
    /// Hex [`content_sha256`] expected, when known.
    pub sha256: Option<String>,
    /// The hex MD5 of each file downloaded from the base URL, as its publisher lists it.
    pub md5: Vec<(String, String)>,
}

/// The MD5 of `cifar-10-binary.tar.gz` on the CIFAR page.
pub const CIFAR10_MD5: &str = "c32a1d4ab5d03f1284b67883e8d87530";
/// The MD5 of `cifar-100-binary.tar.gz` on the CIFAR page.
pub const CIFAR100_MD5: &str = "03b5dce01913d631647c71ecec9e9cb8";
/// The MD5s of SVHN's `train_32x32.mat` and `test_32x32.mat` (torchvision's pins).
pub const SVHN_MD5: [&str; 2] = [
    "e26dedcc434d2e4c54c9b2d4a06d8373",
    "eb5a983be6a315427106f1b164d9cef3",
];

fn known(
    set: ColorSet,
    name: &str,
    upstream: &str,
    counts: [usize; 2],
    md5: &[&str],
) -> ColorKnown {
    let files = upstream_files(set);
    ColorKnown {
        set,
        name: name.into(),
        upstream: upstream.into(),
        counts,
        sha256: None,
        md5: files
            .iter()
            .zip(md5)
            .map(|(f, h)| (f.to_string(), h.to_string()))
            .collect(),
    }
}

/// CIFAR-10 (binary version).
pub fn cifar10() -> ColorKnown {
    known(
        ColorSet::Cifar10,
        "cifar10",
        CIFAR_UPSTREAM,
        [50_000, 10_000],
        &[CIFAR10_MD5],
    )
}

/// CIFAR-100 (binary version).
pub fn cifar100() -> ColorKnown {
    known(
        ColorSet::Cifar100,
        "cifar100",
        CIFAR_UPSTREAM,
        [50_000, 10_000],
        &[CIFAR100_MD5],
    )
}

/// SVHN, cropped 32x32 digits (format 2), without the `extra` set.
pub fn svhn() -> ColorKnown {
    known(
        ColorSet::Svhn,
        "svhn",
        SVHN_UPSTREAM,
        [73_257, 26_032],
        &SVHN_MD5,
    )
}

/// The three colour benchmarks.
pub fn color_benchmarks() -> Vec<ColorKnown> {
    vec![cifar10(), cifar100(), svhn()]
}

/// The colour benchmark called `name`.
pub fn color_benchmark(name: &str) -> Option<ColorKnown> {
    color_benchmarks().into_iter().find(|k| k.name == name)
}

/// Loads `dir` with the reader of `set`: training and test images (CIFAR-100 with fine labels,
/// its coarse labels in the third slot).
fn load(dir: &Path, set: ColorSet) -> Result<(Images, Images, Vec<u8>), DataError> {
    Ok(match set {
        ColorSet::Cifar10 => {
            let d = Cifar10::load(dir)?;
            (d.train, d.test, Vec::new())
        }
        ColorSet::Cifar100 => {
            let d = Cifar100::load(dir)?;
            let coarse = [d.train.coarse, d.test.coarse].concat();
            (d.train.fine, d.test.fine, coarse)
        }
        ColorSet::Svhn => {
            let d = Svhn::load(dir)?;
            (d.train, d.test, Vec::new())
        }
    })
}

/// SHA-256 over the decoded content: training pixels, training labels, test pixels, test
/// labels, then CIFAR-100's coarse labels (training then test), each in the readers' order.
pub fn content_sha256(train: &Images, test: &Images, coarse: &[u8]) -> String {
    let mut h = Sha256::new();
    for part in [&train.pixels, &train.labels, &test.pixels, &test.labels] {
        h.update(part);
    }
    h.update(coarse);
    hex(&h.finalize())
}

/// Checks the folder `dir`: it loads, holds the official numbers of images and, when
/// `known.sha256` is set, has that content hash. Returns the content hash.
pub fn verify_color(dir: &Path, known: &ColorKnown) -> Result<String, DataError> {
    let (train, test, coarse) = load(dir, known.set)?;
    for ((set, what), expected) in [(&train, "training"), (&test, "test")]
        .into_iter()
        .zip(known.counts)
    {
        if set.len() != expected {
            return Err(DataError::Count {
                path: dir.to_path_buf(),
                what,
                got: set.len(),
                expected,
            });
        }
    }
    let got = content_sha256(&train, &test, &coarse);
    match &known.sha256 {
        Some(expected) if *expected != got => Err(DataError::Checksum {
            path: dir.to_path_buf(),
            expected: expected.clone(),
            got,
        }),
        _ => Ok(got),
    }
}

/// Hex MD5 of a file.
pub fn md5_file(path: &Path) -> Result<String, DataError> {
    file_digest::<Md5>(path)
}

/// Checks the downloaded `path` (upstream file `file`) against the MD5 `known` lists for it.
fn check_md5(path: &Path, file: &str, known: &ColorKnown) -> Result<(), DataError> {
    let Some((_, expected)) = known.md5.iter().find(|(f, _)| f == file) else {
        return Ok(());
    };
    let got = md5_file(path)?;
    if got == *expected {
        Ok(())
    } else {
        Err(DataError::Md5 {
            path: path.to_path_buf(),
            expected: expected.clone(),
            got,
        })
    }
}

/// The files to download from the base URL.
fn upstream_files(set: ColorSet) -> Vec<&'static str> {
    match set {
        ColorSet::Cifar10 => vec!["cifar-10-binary.tar.gz"],
        ColorSet::Cifar100 => vec!["cifar-100-binary.tar.gz"],
        ColorSet::Svhn => SVHN_FILES.to_vec(),
    }
}

/// Unpacks the regular files named `*.bin` of the `.tar.gz` archive `tarball` into `into`
/// (flat: folders inside the archive are dropped), then removes the archive. Returns how
/// many files were unpacked.
pub fn unpack_bins(tarball: &Path, into: &Path) -> Result<usize, DataError> {
    let archive_err = |source| DataError::Archive {
        path: tarball.to_path_buf(),
        source,
    };
    let file = fs::File::open(tarball).map_err(|e| io_or_missing(tarball, e))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut n = 0;
    for entry in archive.entries().map_err(archive_err)? {
        let mut entry = entry.map_err(archive_err)?;
        let path = entry.path().map_err(archive_err)?.into_owned();
        let name = match path.file_name().and_then(|s| s.to_str()) {
            Some(s) if s.ends_with(".bin") && entry.header().entry_type().is_file() => s.to_owned(),
            _ => continue,
        };
        let out = into.join(name);
        let mut f = fs::File::create(&out).map_err(|e| io_or_missing(&out, e))?;
        std::io::copy(&mut entry, &mut f).map_err(archive_err)?;
        f.sync_all().map_err(|e| io_or_missing(&out, e))?;
        n += 1;
    }
    fs::remove_file(tarball).map_err(|e| io_or_missing(tarball, e))?;
    Ok(n)
}

/// Downloads `known` from `base` into `root/NAME`, verified before it is moved into place (an
/// existing verified folder is kept as it is). Returns the folder and its content hash.
pub fn fetch_color(
    base: &str,
    root: &Path,
    known: &ColorKnown,
) -> Result<(PathBuf, String), DataError> {
    fs::create_dir_all(root).map_err(|e| io_or_missing(root, e))?;
    let dir = root.join(&known.name);
    if let Ok(hash) = verify_color(&dir, known) {
        return Ok((dir, hash));
    }
    let tmp = root.join(format!(".{}.partial-{}", known.name, std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| io_or_missing(&tmp, e))?;
    let result = upstream_files(known.set)
        .into_iter()
        .try_for_each(|f| {
            let path = tmp.join(f);
            download(&format!("{base}/{f}"), &path)?;
            check_md5(&path, f, known)?;
            if f.ends_with(".tar.gz") {
                unpack_bins(&path, &tmp)?;
            }
            Ok(())
        })
        .and_then(|()| verify_color(&tmp, known));
    match result {
        Ok(hash) => {
            commit_folder(&tmp, &dir)?;
            Ok((dir, hash))
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
#[path = "fetch_color_tests.rs"]
mod tests;
