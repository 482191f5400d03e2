//! The IDX format of the MNIST distribution, for arrays of unsigned bytes.
//!
//! An IDX file is a 4-byte magic `00 00 TT NN` (`TT` the element type code, `0x08` for unsigned
//! bytes, the only one read here; `NN` the rank), then `NN` big-endian `u32` dimensions, then
//! `prod(dims)` bytes of payload in row-major order. Files may be gzip-compressed; compression
//! is recognised by the gzip magic `1f 8b`, not by the file name.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use crate::error::DataError;

/// The IDX element type code of unsigned bytes.
const TYPE_U8: u8 = 0x08;

/// Gzip streams start with these two bytes (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// An IDX array of unsigned bytes: dimensions and row-major payload (`data.len() == prod(dims)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxArray {
    /// Dimensions, outermost first (e.g. `[n, rows, cols]` for images).
    pub dims: Vec<usize>,
    /// Row-major payload.
    pub data: Vec<u8>,
}

/// Reads an IDX file of unsigned bytes (type code 0x08), plain or gzip (detected by the 1f 8b
/// magic, not the file name).
///
/// Errors: [`DataError::Missing`] / [`DataError::Io`] for the file, [`DataError::Gzip`] for a
/// corrupt stream, [`DataError::IdxHeader`] for a bad magic, type code or a truncated header,
/// [`DataError::IdxLength`] when the payload is not `prod(dims)` bytes.
pub fn read_idx(path: &Path) -> Result<IdxArray, DataError> {
    let bytes = read_payload(path)?;
    parse(path, bytes)
}

/// The bytes of `path`, decompressed when they start with the gzip magic.
pub(crate) fn read_payload(path: &Path) -> Result<Vec<u8>, DataError> {
    let raw = fs::read(path).map_err(|e| io_error(path, e))?;
    if !raw.starts_with(&GZIP_MAGIC) {
        return Ok(raw);
    }
    // The gzip trailer's ISIZE (size mod 2^32 of the last member) is a good capacity hint.
    let hint = raw.len().checked_sub(4).map_or(0, |k| {
        u32::from_le_bytes([raw[k], raw[k + 1], raw[k + 2], raw[k + 3]]) as usize
    });
    let mut out = Vec::with_capacity(hint.min(1 << 30));
    MultiGzDecoder::new(raw.as_slice())
        .read_to_end(&mut out)
        .map_err(|source| DataError::Gzip {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(out)
}

/// Parses a decompressed IDX byte string.
fn parse(path: &Path, mut bytes: Vec<u8>) -> Result<IdxArray, DataError> {
    let header = |why: String| DataError::IdxHeader {
        path: path.to_path_buf(),
        why,
    };
    let &[z0, z1, code, rank, ..] = bytes.as_slice() else {
        return Err(header(format!(
            "file has {} bytes, shorter than the 4-byte magic",
            bytes.len()
        )));
    };
    if [z0, z1] != [0, 0] {
        return Err(header(format!(
            "magic starts 0x{z0:02x}{z1:02x}, not 0x0000 (not an IDX file)"
        )));
    }
    if code != TYPE_U8 {
        return Err(header(format!(
            "type code 0x{code:02x} is not 0x08 (unsigned bytes)"
        )));
    }
    let start = 4 + 4 * usize::from(rank);
    if bytes.len() < start {
        return Err(header(format!(
            "truncated: {rank} dimensions need a {start}-byte header, file has {} bytes",
            bytes.len()
        )));
    }
    let dims: Vec<usize> = bytes[4..start]
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let got = bytes.len() - start;
    let expected = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if expected != Some(got) {
        return Err(DataError::IdxLength {
            path: path.to_path_buf(),
            dims,
            expected: expected.unwrap_or(usize::MAX),
            got,
        });
    }
    bytes.drain(..start);
    Ok(IdxArray { dims, data: bytes })
}

/// Writes an IDX file of unsigned bytes, gzip-compressed when `gzip`; atomically (temp file,
/// then rename).
///
/// Fails with [`DataError::Invalid`] unless `prod(dims) == data.len()`, the rank is below 256
/// and every dimension fits in a `u32`.
pub fn write_idx(path: &Path, dims: &[usize], data: &[u8], gzip: bool) -> Result<(), DataError> {
    let expected = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let rank = u8::try_from(dims.len()).ok();
    let big = dims.iter().find(|&&d| u32::try_from(d).is_err());
    if expected != Some(data.len()) || rank.is_none() || big.is_some() {
        return Err(DataError::Invalid(format!(
            "{}: cannot write IDX dims {dims:?} with {} bytes (need prod(dims) == bytes, \
             rank < 256, dims < 2^32)",
            path.display(),
            data.len()
        )));
    }
    let mut bytes = Vec::with_capacity(4 + 4 * dims.len() + data.len());
    bytes.extend_from_slice(&[0, 0, TYPE_U8, rank.unwrap_or(0)]);
    for &d in dims {
        bytes.extend_from_slice(&(d as u32).to_be_bytes());
    }
    bytes.extend_from_slice(data);
    if gzip {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(&bytes).map_err(|e| io_error(path, e))?;
        bytes = enc.finish().map_err(|e| io_error(path, e))?;
    }
    write_atomic(path, &bytes)
}

/// Writes `bytes` to `path` through a sibling temp file and a rename, so readers never see a
/// half-written file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DataError> {
    let name = path
        .file_name()
        .map_or_else(|| "data".into(), |n| n.to_string_lossy().into_owned());
    // Unique per process and call, so concurrent writers never share a temp file.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.tmp-{}-{call}", std::process::id()));
    fs::write(&tmp, bytes).map_err(|e| io_error(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io_error(path, e)
    })
}

/// [`DataError::Missing`] for a file that is not there, [`DataError::Io`] otherwise.
pub(crate) fn io_error(path: &Path, e: std::io::Error) -> DataError {
    if e.kind() == std::io::ErrorKind::NotFound {
        DataError::Missing {
            path: PathBuf::from(path),
        }
    } else {
        DataError::Io {
            path: PathBuf::from(path),
            source: e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_dir::fresh as tmp;

    #[test]
    fn idx_round_trips_plain_and_gzip_detected_by_magic() {
        let d = tmp("roundtrip");
        let data: Vec<u8> = (0..2 * 3 * 4).map(|i| (i * 11) as u8).collect();
        // The gzip file is deliberately named without `.gz`: detection is by content.
        for (name, gz) in [("plain.gz", false), ("packed", true)] {
            let p = d.join(name);
            write_idx(&p, &[2, 3, 4], &data, gz).unwrap();
            let raw = fs::read(&p).unwrap();
            assert_eq!(raw.starts_with(&GZIP_MAGIC), gz);
            if !gz {
                // Exact layout: magic 00 00 08 03, big-endian dims, payload.
                assert_eq!(
                    &raw[..16],
                    &[0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4]
                );
                assert_eq!(raw.len(), 16 + 24);
            }
            let a = read_idx(&p).unwrap();
            assert_eq!(a.dims, vec![2, 3, 4]);
            assert_eq!(a.data, data);
        }
        // No temp file is left next to the results.
        assert_eq!(fs::read_dir(&d).unwrap().count(), 2);
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn idx_malformed_files_are_typed_errors_naming_the_file() {
        let d = tmp("bad");
        let write = |name: &str, bytes: &[u8]| {
            let p = d.join(name);
            fs::write(&p, bytes).unwrap();
            p
        };
        let good_header = [0u8, 0, 8, 1, 0, 0, 0, 5];

        let p = write("magic", &[1, 0, 8, 1, 0, 0, 0, 1, 7]);
        let e = read_idx(&p).unwrap_err();
        assert!(matches!(e, DataError::IdxHeader { .. }), "{e}");
        assert!(e.to_string().contains("not 0x0000"), "{e}");
        assert!(e.to_string().starts_with(&p.display().to_string()), "{e}");

        let p = write("type", &[0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0]);
        let e = read_idx(&p).unwrap_err().to_string();
        assert!(e.contains("type code 0x0d"), "{e}");

        let p = write("short-header", &[0, 0, 8, 3, 0, 0, 0, 2, 0, 0]);
        let e = read_idx(&p).unwrap_err();
        assert!(matches!(e, DataError::IdxHeader { .. }), "{e}");
        assert!(e.to_string().contains("truncated"), "{e}");

        let p = write("tiny", &[0, 0]);
        assert!(matches!(
            read_idx(&p).unwrap_err(),
            DataError::IdxHeader { .. }
        ));

        let mut truncated = good_header.to_vec();
        truncated.extend_from_slice(&[1, 2, 3]);
        let p = write("truncated", &truncated);
        let e = read_idx(&p).unwrap_err();
        assert!(
            matches!(
                e,
                DataError::IdxLength {
                    expected: 5,
                    got: 3,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("need 5 payload bytes, got 3"), "{e}");

        let mut long = good_header.to_vec();
        long.extend_from_slice(&[0; 6]);
        let p = write("trailing", &long);
        assert!(matches!(
            read_idx(&p).unwrap_err(),
            DataError::IdxLength {
                expected: 5,
                got: 6,
                ..
            }
        ));

        // A gzip file cut in the middle of its stream.
        let p = d.join("cut.gz");
        write_idx(&p, &[1000], &[7; 1000], true).unwrap();
        let raw = fs::read(&p).unwrap();
        fs::write(&p, &raw[..raw.len() / 2]).unwrap();
        let e = read_idx(&p).unwrap_err();
        assert!(matches!(e, DataError::Gzip { .. }), "{e}");
        assert!(e.to_string().contains("cut.gz"), "{e}");

        let e = read_idx(&d.join("absent")).unwrap_err();
        assert!(matches!(e, DataError::Missing { .. }), "{e}");

        assert!(matches!(
            write_idx(&d.join("w"), &[2, 2], &[0; 3], false),
            Err(DataError::Invalid(_))
        ));
        let _ = fs::remove_dir_all(d);
    }
}
