//! Downloading and verifying the handwritten-digits set (UCI optdigits test set).
//!
//! `fetch_digits` downloads `BASE/optdigits.tes` into a temporary folder, stores it there as
//! `digits.csv`, checks that it parses ([`Digits::load`]) and that its values hash to
//! [`DIGITS_CONTENT_SHA256`], and only then moves the folder into `ROOT/digits`: nothing
//! half-written is left behind. The HTTP client is that of [`crate::fetch`].
//!
//! The checksum is [`Digits::content_sha256`], a SHA-256 over the *parsed values* (per image its
//! 64 pixel counts then its label, one byte each), not over the file's bytes, so line ends and
//! compression do not matter. The constant was computed from scikit-learn's `digits.csv.gz`,
//! which scikit-learn documents as a copy of UCI's optdigits test set; that UCI's own
//! `optdigits.tes` hashes the same was not checked (no network where this was written): if it
//! does not, the fetch fails with a checksum error and leaves nothing behind.

use std::fs;
use std::path::{Path, PathBuf};

use crate::digits::{DIGITS_CONTENT_SHA256, Digits, locate};
use crate::error::DataError;
use crate::fetch::{commit_folder, download, io_or_missing};
use crate::idx::read_payload;

/// The public upstream of the digits file (`BASE/optdigits.tes`).
pub const DIGITS_UPSTREAM: &str =
    "https://archive.ics.uci.edu/ml/machine-learning-databases/optdigits";

/// The upstream file name under the base URL.
pub const DIGITS_UPSTREAM_FILE: &str = "optdigits.tes";

/// Checks the digits folder `dir` against the real set's [`DIGITS_CONTENT_SHA256`].
pub fn verify_digits(dir: &Path) -> Result<(), DataError> {
    verify_digits_with(dir, DIGITS_CONTENT_SHA256)
}

/// Checks that the digits file of `dir` ([`locate`]) parses and that its
/// [`Digits::content_sha256`] is `expected` ([`DataError::Checksum`] naming the file otherwise).
pub fn verify_digits_with(dir: &Path, expected: &str) -> Result<(), DataError> {
    let path = locate(dir)?;
    let got = Digits::parse(&path, &read_payload(&path)?)?.content_sha256();
    if got != expected {
        return Err(DataError::Checksum {
            path,
            expected: expected.to_string(),
            got,
        });
    }
    Ok(())
}

/// Downloads `base/optdigits.tes` into `root/digits/digits.csv`, verified against
/// [`DIGITS_CONTENT_SHA256`]; an existing verified `root/digits` is kept as it is. Returns the
/// folder.
pub fn fetch_digits(base: &str, root: &Path) -> Result<PathBuf, DataError> {
    fetch_digits_with(base, root, DIGITS_CONTENT_SHA256)
}

/// [`fetch_digits`] with the expected content hash given. The download goes to
/// `root/.digits.partial-PID/digits.csv`, is verified there, and the folder is then renamed to
/// `root/digits`; on any error the temporary folder is removed and the error returned.
pub fn fetch_digits_with(base: &str, root: &Path, expected: &str) -> Result<PathBuf, DataError> {
    fs::create_dir_all(root).map_err(|e| io_or_missing(root, e))?;
    let dir = root.join("digits");
    if verify_digits_with(&dir, expected).is_ok() {
        return Ok(dir);
    }
    let tmp = root.join(format!(".digits.partial-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| io_or_missing(&tmp, e))?;
    let file = tmp.join("digits.csv");
    let result = download(&format!("{base}/{DIGITS_UPSTREAM_FILE}"), &file)
        .and_then(|()| verify_digits_with(&tmp, expected));
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
    use crate::digits::write_synthetic;
    use crate::fetch::tests::{serve, tmp};
    use crate::fetch::verify_dir;

    #[test]
    fn fetch_digits_downloads_verifies_keeps_and_refuses_a_wrong_checksum() {
        let upstream = tmp("digits-upstream");
        let written = write_synthetic(&upstream, 40, 9).unwrap();
        fs::rename(&written, upstream.join(DIGITS_UPSTREAM_FILE)).unwrap();
        let expected = Digits::load(&upstream).unwrap().content_sha256();
        let base = serve(upstream.clone(), 2);

        let to = tmp("digits-to");
        let dir = fetch_digits_with(&base, &to, &expected).unwrap();
        assert_eq!(dir, to.join("digits"));
        assert_eq!(Digits::load(&dir).unwrap().len(), 40);
        assert!(dir.join("digits.csv").is_file());
        assert_eq!(fs::read_dir(&to).unwrap().count(), 1, "only the folder");
        // An existing verified folder is kept without downloading (this base has no server).
        assert_eq!(
            fetch_digits_with("http://127.0.0.1:9", &to, &expected).unwrap(),
            dir
        );
        // The synthetic folder fails the real set's hash, also through `verify_dir`.
        let e = verify_digits(&dir).unwrap_err();
        assert!(matches!(e, DataError::Checksum { .. }), "{e}");
        let e = verify_dir(&to).unwrap_err();
        assert!(
            matches!(&e, DataError::Checksum { path, .. } if *path == dir.join("digits.csv")),
            "{e}"
        );

        // A wrong expected hash: a Checksum error, neither `digits` nor a partial folder left.
        let to2 = tmp("digits-to2");
        let e = fetch_digits_with(&base, &to2, &"00".repeat(32)).unwrap_err();
        assert!(matches!(e, DataError::Checksum { .. }), "{e}");
        assert_eq!(fs::read_dir(&to2).unwrap().count(), 0);
        // A failed download (nothing listens on port 9) leaves nothing either.
        let e = fetch_digits_with("http://127.0.0.1:9", &to2, &expected).unwrap_err();
        assert!(matches!(e, DataError::Invalid(_)), "{e}");
        assert_eq!(fs::read_dir(&to2).unwrap().count(), 0);
        for d in [upstream, to, to2] {
            let _ = fs::remove_dir_all(d);
        }
    }
}
