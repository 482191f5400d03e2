//! The UCI mushroom set (`agaricus-lepiota.data`): 8124 rows of a class (`e` edible, `p`
//! poisonous) and 22 categorical attributes, comma-separated, no header; `?` marks a missing
//! value and is kept as a category of its own.
//!
//! Features are one-hot: column `c` with the sorted distinct values `v_1 < .. < v_k` seen in
//! the file contributes `k` indicator columns, so a row has exactly 22 ones among
//! `sum_c k_c` entries.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::DataError;

/// Attribute columns after the class.
pub const ATTRIBUTES: usize = 22;

/// The file in a `mushroom/` folder.
pub const FILE: &str = "agaricus-lepiota.data";

/// SHA-256 of the UCI file.
pub const SHA256: &str = "e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e";

/// Checks `dir/agaricus-lepiota.data` against [`SHA256`] and reads it (8124 rows).
pub fn verify_mushroom(dir: &Path) -> Result<(), DataError> {
    let path = dir.join(FILE);
    let got = crate::fetch::sha256_file(&path)?;
    if got != SHA256 {
        return Err(DataError::Checksum {
            path,
            expected: SHA256.into(),
            got,
        });
    }
    Mushrooms::load(&path).map(|_| ())
}

/// The mushrooms as one-hot features and poisonous flags.
#[derive(Clone, Debug, PartialEq)]
pub struct Mushrooms {
    /// Row-major `[len, width]` one-hot features.
    pub features: Vec<f32>,
    /// Whether each row is poisonous.
    pub poisonous: Vec<bool>,
    /// Columns of the one-hot encoding.
    pub width: usize,
}

impl Mushrooms {
    /// Reads `path` (the `agaricus-lepiota.data` layout).
    pub fn load(path: &Path) -> Result<Self, DataError> {
        let text = std::fs::read_to_string(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => DataError::Missing {
                path: path.to_path_buf(),
            },
            _ => DataError::Io {
                path: path.to_path_buf(),
                source,
            },
        })?;
        Self::parse(&text, path)
    }

    /// Parses the text of a file (`path` names it in errors). Blank lines are skipped.
    pub fn parse(text: &str, path: &Path) -> Result<Self, DataError> {
        let file = || PathBuf::from(path);
        let mut rows: Vec<(bool, Vec<&str>)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            if cells.len() != ATTRIBUTES + 1 {
                return Err(DataError::Ragged {
                    path: file(),
                    line: line_no,
                    expected: ATTRIBUTES + 1,
                    got: cells.len(),
                });
            }
            let poisonous = match cells[0] {
                "e" => false,
                "p" => true,
                other => {
                    return Err(DataError::Category {
                        path: file(),
                        line: line_no,
                        column: 1,
                        cell: other.into(),
                        why: "the class is `e` or `p`",
                    });
                }
            };
            if let Some((c, cell)) = cells
                .iter()
                .enumerate()
                .skip(1)
                .find(|(_, c)| c.chars().count() != 1)
            {
                return Err(DataError::Category {
                    path: file(),
                    line: line_no,
                    column: c + 1,
                    cell: (*cell).into(),
                    why: "an attribute is one character, `?` when missing",
                });
            }
            rows.push((poisonous, cells[1..].to_vec()));
        }
        if rows.is_empty() {
            return Err(DataError::Empty {
                path: file(),
                what: "data rows",
            });
        }
        let categories: Vec<Vec<&str>> = (0..ATTRIBUTES)
            .map(|c| {
                let seen: BTreeSet<&str> = rows.iter().map(|r| r.1[c]).collect();
                seen.into_iter().collect()
            })
            .collect();
        let offsets: Vec<usize> = categories
            .iter()
            .scan(0, |at, cats| {
                let start = *at;
                *at += cats.len();
                Some(start)
            })
            .collect();
        let width: usize = categories.iter().map(Vec::len).sum();
        let mut features = vec![0.0f32; rows.len() * width];
        for (r, (_, cells)) in rows.iter().enumerate() {
            for (c, cell) in cells.iter().enumerate() {
                let k = categories[c]
                    .binary_search(cell)
                    .expect("every cell is among its column's categories");
                features[r * width + offsets[c] + k] = 1.0;
            }
        }
        Ok(Self {
            features,
            poisonous: rows.iter().map(|r| r.0).collect(),
            width,
        })
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.poisonous.len()
    }

    /// Whether there are no rows (never, for a parsed file).
    pub fn is_empty(&self) -> bool {
        self.poisonous.is_empty()
    }

    /// The one-hot features of row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.features[i * self.width..(i + 1) * self.width]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    #[test]
    fn verify_checks_the_digest_and_names_the_file() {
        let dir = TempDir::new("mushroom-verify");
        dir.write(FILE, &(row("e", "x", false) + "\n"));
        let err = verify_mushroom(&dir.0).unwrap_err().to_string();
        assert!(err.contains(FILE), "{err}");
        // The real file, where the shared datasets are.
        let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/mushroom");
        if real.join(FILE).exists() {
            verify_mushroom(&real).unwrap();
        } else {
            println!("skipped the real file: {} is absent", real.display());
        }
    }

    fn row(class: &str, first: &str, missing: bool) -> String {
        let mut cells = vec![class.to_string(), first.to_string()];
        cells.extend((1..ATTRIBUTES).map(|c| {
            if missing && c == 10 {
                "?".to_string()
            } else {
                "a".to_string()
            }
        }));
        cells.join(",")
    }

    /// `text` written to `name` in `dir`; its path.
    fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
        dir.write(name, text);
        dir.0.join(name)
    }

    #[test]
    fn one_hot_with_missing_as_a_category() {
        // Column 1 takes x, b, x; column 11 takes a, ?, a; the other 20 columns one value each.
        let text = [
            row("p", "x", false),
            row("e", "b", true),
            row("e", "x", false),
        ]
        .join("\n");
        let dir = TempDir::new("mushroom-ok");
        let path = write(&dir, "ok.data", &format!("{text}\n\n"));
        let m = Mushrooms::load(&path).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m.poisonous, vec![true, false, false]);
        assert_eq!(m.width, 2 + 2 + 20);
        // Sorted categories: column 1 is (b, x); column 11 is (?, a).
        assert_eq!(&m.row(0)[..2], &[0.0, 1.0]);
        assert_eq!(&m.row(1)[..2], &[1.0, 0.0]);
        let c11 = 2 + 9;
        assert_eq!(&m.row(1)[c11..c11 + 2], &[1.0, 0.0]);
        assert_eq!(&m.row(0)[c11..c11 + 2], &[0.0, 1.0]);
        for i in 0..3 {
            assert_eq!(m.row(i).iter().sum::<f32>(), ATTRIBUTES as f32);
        }
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let good = row("e", "x", false);
        let cases = [
            (format!("{good}\n{}", row("q", "x", false)), "2: column 1"),
            (
                format!("{good}\n{good},z"),
                "2: expected 23 columns, got 24",
            ),
            (format!("{}\n{good}", row("e", "xy", false)), "1: column 2"),
            (String::new(), "no data rows"),
        ];
        let dir = TempDir::new("mushroom-bad");
        for (i, (text, want)) in cases.iter().enumerate() {
            let path = write(&dir, &format!("bad{i}.data"), text);
            let e = Mushrooms::load(&path).unwrap_err().to_string();
            assert!(e.contains(&format!("bad{i}.data")), "{e}");
            assert!(e.contains(want), "{e} lacks {want}");
        }
        let missing = Mushrooms::load(Path::new("/nonexistent/m.data")).unwrap_err();
        assert!(matches!(missing, DataError::Missing { .. }));
    }

    #[test]
    fn the_shared_file_reads() {
        let path = crate::shared_datasets().join("mushroom/agaricus-lepiota.data");
        if !path.exists() {
            return;
        }
        let m = Mushrooms::load(&path).unwrap();
        // UCI: 8124 instances, 4208 edible and 3916 poisonous.
        assert_eq!(m.len(), 8124);
        assert_eq!(m.poisonous.iter().filter(|p| **p).count(), 3916);
    }
}
