//! Downloading and verifying MNIST and Fashion-MNIST.
//!
//! `fetch_images` downloads the four gzip IDX files ([`crate::mnist::FILES`] with `.gz`) from
//! `BASE/FILE.gz` into a temporary folder, checks the SHA-256 of each *decompressed* payload
//! and that the folder loads with [`ImageData::load`], and only then moves the folder into
//! `ROOT/NAME`: nothing half-written is left behind. The HTTP client and the atomic move are
//! those of [`crate::fetch`].

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::fetch::{commit_folder, download, hex, io_or_missing};
use crate::idx::read_payload;
use crate::mnist::{FILES, ImageData, locate};

/// The public upstream of the MNIST files.
pub const MNIST_UPSTREAM: &str = "https://ossci-datasets.s3.amazonaws.com/mnist";

/// The public upstream of the Fashion-MNIST files.
pub const FASHION_MNIST_UPSTREAM: &str =
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com";

/// An image benchmark to fetch: folder name, default upstream and the SHA-256 of its files.
#[derive(Clone, Debug)]
pub struct ImageKnown {
    /// Folder name (`mnist`, `fashion-mnist`).
    pub name: String,
    /// Default base URL (`BASE/FILE.gz`).
    pub upstream: String,
    /// Hex SHA-256 of the decompressed [`FILES`], in that order.
    pub sha256: [String; 4],
}

fn known(name: &str, upstream: &str, sha256: [&str; 4]) -> ImageKnown {
    ImageKnown {
        name: name.into(),
        upstream: upstream.into(),
        sha256: sha256.map(String::from),
    }
}

/// MNIST, with the checksums of the official (uncompressed) files.
pub fn mnist() -> ImageKnown {
    known(
        "mnist",
        MNIST_UPSTREAM,
        [
            "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
            "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
            "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
            "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
        ],
    )
}

/// Fashion-MNIST, with the checksums of the official (uncompressed) files.
pub fn fashion_mnist() -> ImageKnown {
    known(
        "fashion-mnist",
        FASHION_MNIST_UPSTREAM,
        [
            "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
            "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
            "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
            "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
        ],
    )
}

/// Both image benchmarks.
pub fn image_benchmarks() -> Vec<ImageKnown> {
    vec![mnist(), fashion_mnist()]
}

/// The image benchmark called `name` (`mnist` or `fashion-mnist`).
pub fn image_benchmark(name: &str) -> Option<ImageKnown> {
    image_benchmarks().into_iter().find(|k| k.name == name)
}

/// Checks one folder: the SHA-256 of each decompressed file, then [`ImageData::load`].
pub fn verify_images(dir: &Path, known: &ImageKnown) -> Result<(), DataError> {
    for (stem, expected) in FILES.iter().zip(&known.sha256) {
        let path = locate(dir, stem)?;
        let got = hex(&Sha256::digest(read_payload(&path)?));
        if &got != expected {
            return Err(DataError::Checksum {
                path,
                expected: expected.clone(),
                got,
            });
        }
    }
    ImageData::load(dir).map(|_| ())
}

/// Downloads `base/FILE.gz` for the four files into `root/NAME`, verifying them before moving
/// the folder into place (an existing verified folder is kept as it is). Returns the folder.
pub fn fetch_images(base: &str, root: &Path, known: &ImageKnown) -> Result<PathBuf, DataError> {
    fs::create_dir_all(root).map_err(|e| io_or_missing(root, e))?;
    let dir = root.join(&known.name);
    if verify_images(&dir, known).is_ok() {
        return Ok(dir);
    }
    let tmp = root.join(format!(".{}.partial-{}", known.name, std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| io_or_missing(&tmp, e))?;
    let result = FILES
        .iter()
        .try_for_each(|f| download(&format!("{base}/{f}.gz"), &tmp.join(format!("{f}.gz"))))
        .and_then(|()| verify_images(&tmp, known));
    if let Err(e) = result {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    commit_folder(&tmp, &dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::tests::{serve, tmp};
    use crate::fetch::verify_dir;
    use crate::mnist::write_synthetic;

    /// The synthetic upstream's checksums, computed independently of `verify_images`.
    fn synthetic_known(upstream: &Path) -> ImageKnown {
        let sha = FILES.map(|f| {
            let raw = fs::read(upstream.join(format!("{f}.gz"))).unwrap();
            let mut payload = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut payload)
                .unwrap();
            hex(&Sha256::digest(payload))
        });
        ImageKnown {
            name: "mnist".into(),
            upstream: String::new(),
            sha256: sha,
        }
    }

    #[test]
    fn fetch_images_downloads_verifies_keeps_and_refuses_a_wrong_checksum() {
        let upstream = tmp("img-upstream");
        write_synthetic(&upstream, 12, 4, 40, 8, 3).unwrap();
        let known = synthetic_known(&upstream);
        let base = serve(upstream.clone(), 2 * FILES.len());

        let to = tmp("img-to");
        let dir = fetch_images(&base, &to, &known).unwrap();
        assert_eq!(dir, to.join("mnist"));
        let data = ImageData::load(&dir).unwrap();
        assert_eq!(
            (data.train.len(), data.test.len(), data.train.rows),
            (40, 8, 12)
        );
        assert_eq!(fs::read_dir(&to).unwrap().count(), 1, "only the folder");
        // An existing verified folder is kept without downloading (this base has no server).
        assert_eq!(
            fetch_images("http://127.0.0.1:9", &to, &known).unwrap(),
            dir
        );

        // A wrong checksum of the last file: an error naming it, nothing left in the target.
        let mut bad = known.clone();
        bad.sha256[3] = "00".repeat(32);
        let to2 = tmp("img-to2");
        let err = fetch_images(&base, &to2, &bad).unwrap_err();
        assert!(
            matches!(&err, DataError::Checksum { path, .. }
                if path.ends_with("t10k-labels-idx1-ubyte.gz")),
            "{err}"
        );
        assert!(err.to_string().contains("SHA-256"), "{err}");
        assert_eq!(fs::read_dir(&to2).unwrap().count(), 0);

        // A folder with nothing known in it is an error, not an empty success.
        let e = verify_dir(&to2).unwrap_err();
        assert!(matches!(e, DataError::NoDatasets { .. }), "{e}");
        // The synthetic folder fails the real MNIST checksums.
        let e = verify_dir(&to).unwrap_err();
        assert!(matches!(e, DataError::Checksum { .. }), "{e}");
        for d in [upstream, to, to2] {
            let _ = fs::remove_dir_all(d);
        }
    }

    #[test]
    fn shared_copies_verify() {
        let root = crate::shared_datasets();
        if !root.join("mnist").is_dir() || !root.join("fashion-mnist").is_dir() {
            println!(
                "skipped shared_copies_verify: no mnist/fashion-mnist under {} (set SGMCMC_DATA_DIR)",
                root.display()
            );
            return;
        }
        for k in image_benchmarks() {
            verify_images(&root.join(&k.name), &k).unwrap();
        }
        let checked = verify_dir(&root).unwrap();
        assert!(checked.contains(&root.join("mnist")), "{checked:?}");
        assert!(checked.contains(&root.join("fashion-mnist")), "{checked:?}");
        assert_eq!(
            image_benchmark("fashion-mnist").unwrap().name,
            "fashion-mnist"
        );
        assert!(image_benchmark("cifar10").is_none());
    }
}
