//! UCI regression benchmark layout of Hernandez-Lobato & Adams (2015).
//!
//! A dataset folder holds
//! - `data.txt`: whitespace-separated numeric rows (lines that are entirely whitespace are skipped);
//! - `index_features.txt`, `index_target.txt`: 0-based column indices, one per line;
//! - `index_train_K.txt`, `index_test_K.txt`: 0-based row indices, one per line, for
//!   `K = 0, 1, ...` (splits are discovered by probing until a train file is missing);
//! - optionally `n_hidden.txt`, `n_epochs.txt`, `n_splits.txt`, ... (ignored here).
//!
//! Indices may be written as integers or as integral floats (`3.0`). Each split is standardized
//! with the mean and sample standard deviation of its *training* rows only.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::DataError;
use crate::splitmix::SplitMix64;

/// One train/test split: 0-based row indices into [`UciDataset::x`] / [`UciDataset::y`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Training rows.
    pub train: Vec<usize>,
    /// Test rows.
    pub test: Vec<usize>,
}

/// A UCI regression dataset with its standard splits, in raw (unstandardized) units.
#[derive(Debug, Clone, PartialEq)]
pub struct UciDataset {
    /// Name of the dataset folder, e.g. `energy`.
    pub name: String,
    /// Feature rows (columns of `index_features.txt`, in that order).
    pub x: Vec<Vec<f64>>,
    /// Target (the column of `index_target.txt`).
    pub y: Vec<f64>,
    /// The train/test splits, in file order `0, 1, ...`.
    pub splits: Vec<Split>,
}

impl UciDataset {
    /// Reads and validates the dataset folder `dir`; the name is the folder name.
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let data_path = dir.join("data.txt");
        let rows = read_matrix(&data_path)?;
        let n_rows = rows.len();
        let n_cols = rows[0].len();

        let features_path = dir.join("index_features.txt");
        let features = read_indices(&features_path, n_cols, "feature columns")?;
        let target_path = dir.join("index_target.txt");
        let target = read_indices(&target_path, n_cols, "target column")?;
        let &[(target_line, target_col)] = target.as_slice() else {
            return Err(DataError::Invalid(format!(
                "{}: expected exactly one target column, got {}",
                target_path.display(),
                target.len()
            )));
        };
        if features.iter().any(|&(_, c)| c == target_col) {
            return Err(DataError::Invalid(format!(
                "{}:{target_line}: target column {target_col} is also listed in {}",
                target_path.display(),
                features_path.display()
            )));
        }

        let x = rows
            .iter()
            .map(|r| features.iter().map(|&(_, c)| r[c]).collect())
            .collect();
        let y = rows.iter().map(|r| r[target_col]).collect();

        let mut splits = Vec::new();
        loop {
            let k = splits.len();
            let train_path = dir.join(format!("index_train_{k}.txt"));
            if !train_path.is_file() {
                break;
            }
            let test_path = dir.join(format!("index_test_{k}.txt"));
            let train = read_indices(&train_path, n_rows, "train rows")?;
            let test = read_indices(&test_path, n_rows, "test rows")?;
            splits.push(Split {
                train: train.into_iter().map(|(_, i)| i).collect(),
                test: test.into_iter().map(|(_, i)| i).collect(),
            });
        }
        if splits.is_empty() {
            return Err(DataError::Empty {
                path: dir.join("index_train_0.txt"),
                what: "splits (index_train_0.txt not found)",
            });
        }
        // A gap in the numbering (or fewer splits than `n_splits.txt` announces) is a missing
        // file, not a shorter list: runs would otherwise reuse other splits silently.
        let announced = std::fs::read_to_string(dir.join("n_splits.txt"))
            .ok()
            .and_then(|t| t.trim().parse::<usize>().ok());
        let later = std::fs::read_dir(dir)
            .map_err(|source| DataError::Io {
                path: dir.to_path_buf(),
                source,
            })?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_prefix("index_train_")?
                    .strip_suffix(".txt")?
                    .parse::<usize>()
                    .ok()
            })
            .any(|k| k > splits.len());
        if later || announced.is_some_and(|n| n > splits.len()) {
            return Err(DataError::Missing {
                path: dir.join(format!("index_train_{}.txt", splits.len())),
            });
        }

        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(Self { name, x, y, splits })
    }

    /// Number of feature columns.
    pub fn n_features(&self) -> usize {
        self.x.first().map_or(0, Vec::len)
    }

    /// Split `k`, standardized with the statistics of its training rows.
    ///
    /// Fails with [`DataError::Invalid`] if `k` is out of range, a split is empty or points past
    /// the data, or the training target is constant (it could not be standardized).
    pub fn split(&self, k: usize) -> Result<SplitData, DataError> {
        let split = self.splits.get(k).ok_or_else(|| {
            DataError::Invalid(format!(
                "dataset `{}`: split {k} out of range ({} splits)",
                self.name,
                self.splits.len()
            ))
        })?;
        for (part, rows) in [("train", &split.train), ("test", &split.test)] {
            if rows.is_empty() {
                return Err(DataError::Invalid(format!(
                    "dataset `{}`: split {k} has no {part} rows",
                    self.name
                )));
            }
            if let Some(&i) = rows
                .iter()
                .find(|&&i| i >= self.y.len() || i >= self.x.len())
            {
                return Err(DataError::Invalid(format!(
                    "dataset `{}`: split {k} {part} row {i} out of range ({} rows)",
                    self.name,
                    self.y.len()
                )));
            }
        }

        // A row twice in one part weighs it double; a test row in training scores the model on
        // what it learned from. Either is a broken split file.
        let mut part_of = vec![None; self.y.len()];
        for (part, rows) in [("train", &split.train), ("test", &split.test)] {
            for &i in rows.iter() {
                if let Some(first) = part_of[i].replace(part) {
                    return Err(DataError::Invalid(format!(
                        "dataset `{}`: split {k}: row {i} is listed in {first} and again in {part}",
                        self.name
                    )));
                }
            }
        }

        let x_train: Vec<Vec<f64>> = split.train.iter().map(|&i| self.x[i].clone()).collect();
        let y_train: Vec<f64> = split.train.iter().map(|&i| self.y[i]).collect();
        if y_train.iter().all(|&v| v == y_train[0]) {
            return Err(DataError::Invalid(format!(
                "dataset `{}`: split {k}: training target has zero variance",
                self.name
            )));
        }
        let standardizer = Standardizer::fit(&x_train, &y_train);

        let flatten = |rows: &[usize]| -> Vec<f32> {
            rows.iter()
                .flat_map(|&i| standardizer.x(&self.x[i]))
                .map(|v| v as f32)
                .collect()
        };
        let targets = |rows: &[usize]| -> Vec<f32> {
            rows.iter()
                .map(|&i| standardizer.y(self.y[i]) as f32)
                .collect()
        };
        Ok(SplitData {
            n_features: self.n_features(),
            x_train: flatten(&split.train),
            y_train: targets(&split.train),
            x_test: flatten(&split.test),
            y_test: targets(&split.test),
            y_test_raw: split.test.iter().map(|&i| self.y[i]).collect(),
            standardizer,
        })
    }
}

/// Feature-wise and target mean/sd fitted on the training rows only (sd of a constant column = 1).
///
/// The sd is the sample standard deviation with divisor `n - 1`; with fewer than two rows, or a
/// constant column, it is taken as 1 so that standardizing only centres the column.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Standardizer {
    /// Mean of each feature column.
    pub x_mean: Vec<f64>,
    /// Sample sd of each feature column.
    pub x_sd: Vec<f64>,
    /// Mean of the target.
    pub y_mean: f64,
    /// Sample sd of the target.
    pub y_sd: f64,
}

impl Standardizer {
    /// Fits the statistics of the rows `x` (all of equal length) and targets `y`.
    pub fn fit(x: &[Vec<f64>], y: &[f64]) -> Self {
        let d = x.first().map_or(0, Vec::len);
        let (x_mean, x_sd) = (0..d).map(|j| mean_sd(x.iter().map(|r| r[j]))).unzip();
        let (y_mean, y_sd) = mean_sd(y.iter().copied());
        Self {
            x_mean,
            x_sd,
            y_mean,
            y_sd,
        }
    }

    /// Standardizes a feature row: `(x_j - mean_j) / sd_j`.
    pub fn x(&self, row: &[f64]) -> Vec<f64> {
        row.iter()
            .zip(self.x_mean.iter().zip(&self.x_sd))
            .map(|(v, (m, s))| (v - m) / s)
            .collect()
    }

    /// Standardizes a target value: `(v - y_mean) / y_sd`.
    pub fn y(&self, v: f64) -> f64 {
        (v - self.y_mean) / self.y_sd
    }

    /// Maps a standardized target back to raw units: `v * y_sd + y_mean`.
    pub fn y_back(&self, v: f64) -> f64 {
        v * self.y_sd + self.y_mean
    }
}

/// Mean and sample sd (divisor `n - 1`) of `values`; sd is 1 when it would be 0 or undefined.
fn mean_sd(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = values.clone().count();
    if n == 0 {
        return (0.0, 1.0);
    }
    let mean = values.clone().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 1.0);
    }
    let var = values.map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let sd = var.sqrt();
    (mean, if sd > 0.0 && sd.is_finite() { sd } else { 1.0 })
}

/// One split, standardized with the training statistics; rows are flattened row-major f32 for tensors.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitData {
    /// Number of features per row.
    pub n_features: usize,
    /// Standardized training features, `n_train * n_features`, row-major.
    pub x_train: Vec<f32>,
    /// Standardized training targets.
    pub y_train: Vec<f32>,
    /// Test features standardized with the training statistics, row-major.
    pub x_test: Vec<f32>,
    /// Test targets standardized with the training statistics.
    pub y_test: Vec<f32>,
    /// Test targets in raw units (for RMSE / log-likelihood in the original scale).
    pub y_test_raw: Vec<f64>,
    /// The training statistics.
    pub standardizer: Standardizer,
}

impl SplitData {
    /// Number of training rows.
    pub fn n_train(&self) -> usize {
        self.y_train.len()
    }

    /// Number of test rows.
    pub fn n_test(&self) -> usize {
        self.y_test.len()
    }
}

/// Reads a file to a string; a nonexistent file is [`DataError::Missing`].
fn read_text(path: &Path) -> Result<String, DataError> {
    fs::read_to_string(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => DataError::Missing {
            path: path.to_path_buf(),
        },
        _ => DataError::Io {
            path: path.to_path_buf(),
            source,
        },
    })
}

/// Non-blank lines of `text` with their 1-based line numbers.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// Reads a rectangular matrix of finite numbers with at least one row.
fn read_matrix(path: &Path) -> Result<Vec<Vec<f64>>, DataError> {
    let text = read_text(path)?;
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for (line, content) in content_lines(&text) {
        let row = content
            .split_whitespace()
            .enumerate()
            .map(|(c, cell)| parse_number(path, line, c + 1, cell))
            .collect::<Result<Vec<f64>, _>>()?;
        if let Some(first) = rows.first()
            && first.len() != row.len()
        {
            return Err(DataError::Ragged {
                path: path.to_path_buf(),
                line,
                expected: first.len(),
                got: row.len(),
            });
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(DataError::Empty {
            path: path.to_path_buf(),
            what: "data rows",
        });
    }
    Ok(rows)
}

/// Parses one finite number.
fn parse_number(path: &Path, line: usize, column: usize, cell: &str) -> Result<f64, DataError> {
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(DataError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            cell: cell.to_owned(),
        }),
    }
}

/// Reads a non-empty list of 0-based indices below `len`, one per line, as `(line, index)`.
///
/// Non-numbers are [`DataError::Parse`]; numbers that are not non-negative integers (e.g. `2.5`,
/// `-1`) are [`DataError::Invalid`].
fn read_indices(
    path: &Path,
    len: usize,
    what: &'static str,
) -> Result<Vec<(usize, usize)>, DataError> {
    let text = read_text(path)?;
    let mut out = Vec::new();
    for (line, content) in content_lines(&text) {
        let mut cells = content.split_whitespace();
        let cell = cells.next().unwrap_or_default();
        if cells.next().is_some() {
            return Err(DataError::Invalid(format!(
                "{}:{line}: expected one index per line, got `{}`",
                path.display(),
                content.trim()
            )));
        }
        let index = parse_index(path, line, cell)?;
        if index >= len {
            return Err(DataError::IndexOutOfRange {
                path: path.to_path_buf(),
                line,
                index,
                len,
            });
        }
        out.push((line, index));
    }
    if out.is_empty() {
        return Err(DataError::Empty {
            path: path.to_path_buf(),
            what,
        });
    }
    Ok(out)
}

/// Parses an index written as an integer (`3`) or an integral float (`3.0`).
fn parse_index(path: &Path, line: usize, cell: &str) -> Result<usize, DataError> {
    if let Ok(i) = cell.parse::<usize>() {
        return Ok(i);
    }
    let v = parse_number(path, line, 1, cell)?;
    // 2^53: every integer below is exactly representable, so the cast is exact.
    if v >= 0.0 && v.fract() == 0.0 && v < 9_007_199_254_740_992.0 {
        Ok(v as usize)
    } else {
        Err(DataError::Invalid(format!(
            "{}:{line}: `{cell}` is not a non-negative integer index",
            path.display()
        )))
    }
}

/// Writes a synthetic dataset in the benchmark layout (y = sum_j w_j x_j + sin(x_0) + noise_sd * N(0,1), x ~ N(0,1)) with `splits` random 90/10 splits; used by tests and the end-to-end test of `sgmcmc uci`.
///
/// The weights `w_j` are drawn from N(0, 1); the target is the last column. Each split puts
/// `round(rows / 10)` (at least 1) random rows in the test set and the rest in the training set.
/// Needs `rows >= 3`, `features >= 1` and `splits >= 1`. The same seed gives the same files.
pub fn write_synthetic(
    dir: &Path,
    rows: usize,
    features: usize,
    splits: usize,
    noise_sd: f64,
    seed: u64,
) -> Result<(), DataError> {
    if rows < 3 || features == 0 || splits == 0 || !noise_sd.is_finite() || noise_sd < 0.0 {
        return Err(DataError::Invalid(format!(
            "write_synthetic needs rows >= 3, features >= 1, splits >= 1 and a finite noise_sd >= 0 \
             (got rows {rows}, features {features}, splits {splits}, noise_sd {noise_sd})"
        )));
    }
    fs::create_dir_all(dir).map_err(|source| DataError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut rng = SplitMix64(seed);
    let w: Vec<f64> = (0..features).map(|_| rng.normal()).collect();

    let mut data = String::new();
    for _ in 0..rows {
        let x: Vec<f64> = (0..features).map(|_| rng.normal()).collect();
        let y = w.iter().zip(&x).map(|(w, x)| w * x).sum::<f64>()
            + x[0].sin()
            + noise_sd * rng.normal();
        for v in &x {
            let _ = write!(data, "{v} ");
        }
        let _ = writeln!(data, "{y}");
    }
    write_file(&dir.join("data.txt"), &data)?;
    write_file(&dir.join("index_features.txt"), &lines(0..features))?;
    write_file(&dir.join("index_target.txt"), &format!("{features}\n"))?;
    write_file(&dir.join("n_splits.txt"), &format!("{splits}\n"))?;

    let n_test = ((rows as f64 * 0.1).round() as usize).max(1);
    for k in 0..splits {
        let mut perm: Vec<usize> = (0..rows).collect();
        for i in (1..rows).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        let (test, train) = perm.split_at(n_test);
        write_file(
            &dir.join(format!("index_train_{k}.txt")),
            &lines(train.iter().copied()),
        )?;
        write_file(
            &dir.join(format!("index_test_{k}.txt")),
            &lines(test.iter().copied()),
        )?;
    }
    Ok(())
}

/// One value per line.
fn lines(values: impl Iterator<Item = usize>) -> String {
    values.map(|v| format!("{v}\n")).collect()
}

fn write_file(path: &Path, text: &str) -> Result<(), DataError> {
    fs::write(path, text).map_err(|source| DataError::Io {
        path: PathBuf::from(path),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    /// 6 rows, 3 columns (features 0 and 2, target 1), two splits.
    fn good(tag: &str) -> TempDir {
        let d = TempDir::new(&format!("uci-{tag}"));
        d.write(
            "data.txt",
            "1 10 0.5\n2 20 0.25\n\n   \n3 35 0.125\n4 41 1\n5 50 2\n6 66 3\n",
        );
        d.write("index_features.txt", "0\n2\n");
        d.write("index_target.txt", "1\n");
        d.write("index_train_0.txt", "0\n1\n2\n3\n");
        d.write("index_test_0.txt", "4\n5\n");
        d.write("index_train_1.txt", "2.0\n3\n4\n5\n");
        d.write("index_test_1.txt", "0\n1.0\n");
        d.write("n_hidden.txt", "50\n");
        d
    }

    #[test]
    fn uci_good_dataset_loads() {
        let d = good("good");
        let ds = UciDataset::load(&d.0).expect("load");
        assert!(ds.name.starts_with("sgmcmc-uci-good"));
        assert_eq!(ds.x.len(), 6);
        assert_eq!(ds.n_features(), 2);
        assert_eq!(ds.x[2], vec![3.0, 0.125]);
        assert_eq!(ds.y, vec![10.0, 20.0, 35.0, 41.0, 50.0, 66.0]);
        assert_eq!(ds.splits.len(), 2);
        assert_eq!(ds.splits[1].train, vec![2, 3, 4, 5]);
        assert_eq!(ds.splits[1].test, vec![0, 1]);
        let s = ds.split(0).expect("split 0");
        assert_eq!((s.n_train(), s.n_test(), s.n_features), (4, 2, 2));
        assert_eq!((s.x_train.len(), s.x_test.len()), (8, 4));
        assert_eq!(s.y_test_raw, vec![50.0, 66.0]);
        assert!(matches!(ds.split(2), Err(DataError::Invalid(_))));
    }

    #[test]
    fn a_missing_split_file_is_an_error_not_a_shorter_list() {
        // Split 1 of 3 removed: loading must name it instead of serving splits 0 and... 0.
        let d = good("gap");
        d.write("index_train_2.txt", "0\n1\n2\n3\n");
        d.write("index_test_2.txt", "4\n5\n");
        assert_eq!(UciDataset::load(&d.0).unwrap().splits.len(), 3);
        std::fs::remove_file(d.0.join("index_train_1.txt")).unwrap();
        let err = UciDataset::load(&d.0).unwrap_err().to_string();
        assert!(err.contains("index_train_1.txt"), "{err}");
        // n_splits.txt announcing more splits than the files hold is the same error.
        let d = good("announced");
        d.write("n_splits.txt", "20\n");
        let err = UciDataset::load(&d.0).unwrap_err().to_string();
        assert!(err.contains("index_train_2.txt"), "{err}");
    }

    #[test]
    fn a_split_with_a_row_twice_or_a_test_row_in_training_is_refused() {
        let d = good("dup");
        d.write("index_train_1.txt", "2\n3\n4\n4\n");
        let ds = UciDataset::load(&d.0).unwrap();
        assert!(ds.split(0).is_ok());
        let err = ds.split(1).unwrap_err().to_string();
        assert!(
            err.contains("row 4 is listed in train and again in train"),
            "{err}"
        );
        d.write("index_train_1.txt", "0\n3\n4\n5\n");
        let err = UciDataset::load(&d.0)
            .unwrap()
            .split(1)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("row 0 is listed in train and again in test"),
            "{err}"
        );
    }

    #[test]
    fn uci_standardizes_with_train_rows_only() {
        let mut ds = UciDataset {
            name: "toy".into(),
            x: vec![vec![1.0], vec![2.0], vec![3.0], vec![4.0], vec![100.0]],
            y: vec![1.0, 2.0, 3.0, 4.0, 100.0],
            splits: vec![Split {
                train: vec![0, 1, 2, 3],
                test: vec![4],
            }],
        };
        let s = ds.split(0).expect("split");
        let st = &s.standardizer;
        assert!((st.y_mean - 2.5).abs() < 1e-12);
        // Sample sd with divisor n - 1: var = 5 / 3.
        assert!((st.y_sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        let mean: f32 = s.y_train.iter().sum::<f32>() / s.n_train() as f32;
        assert!(mean.abs() < 1e-6);
        assert!((f64::from(s.y_test[0]) - st.y(100.0)).abs() < 1e-4);
        assert!((st.y_back(st.y(7.0)) - 7.0).abs() < 1e-12);

        // Changing the test row leaves the statistics untouched.
        ds.x[4] = vec![-1e6];
        ds.y[4] = 1e6;
        let s2 = ds.split(0).expect("split");
        assert_eq!(s2.standardizer, s.standardizer);
        assert_eq!(s2.y_train, s.y_train);

        // Constant columns get sd 1; a constant training target is rejected.
        let c = Standardizer::fit(&[vec![2.0], vec![2.0]], &[1.0, 3.0]);
        assert_eq!((c.x_mean[0], c.x_sd[0]), (2.0, 1.0));
        ds.y = vec![5.0; 5];
        assert!(matches!(ds.split(0), Err(DataError::Invalid(_))));
    }

    /// Loads `good` with one file replaced (or removed when `text` is `None`).
    fn load_with(tag: &str, file: &str, text: Option<&str>) -> DataError {
        let d = good(tag);
        match text {
            Some(t) => d.write(file, t),
            None => fs::remove_file(d.0.join(file)).expect("remove"),
        }
        let err = UciDataset::load(&d.0).expect_err("should fail");
        let msg = err.to_string();
        if !matches!(err, DataError::Empty { .. } | DataError::Missing { .. }) {
            assert!(msg.contains(file), "message `{msg}` should name {file}");
        }
        err
    }

    #[test]
    fn uci_malformed_inputs_are_typed_errors() {
        let e = load_with("ragged", "data.txt", Some("1 2 3\n\n4 5\n"));
        assert!(
            matches!(
                e,
                DataError::Ragged {
                    line: 3,
                    expected: 3,
                    got: 2,
                    ..
                }
            ),
            "{e}"
        );

        let e = load_with("nonnum", "data.txt", Some("1 2 3\n4 x 6\n"));
        assert!(matches!(e, DataError::Parse { line: 2, column: 2, ref cell, .. } if cell == "x"));
        assert!(
            e.to_string()
                .ends_with("data.txt:2: column 2: `x` is not a number"),
            "{e}"
        );

        for bad in ["nan", "NaN", "inf", "-infinity"] {
            let e = load_with("nan", "data.txt", Some(&format!("1 2 {bad}\n")));
            assert!(
                matches!(e, DataError::Parse { column: 3, .. }),
                "{bad}: {e}"
            );
        }

        let e = load_with("featoor", "index_features.txt", Some("0\n3\n"));
        assert!(matches!(
            e,
            DataError::IndexOutOfRange {
                line: 2,
                index: 3,
                len: 3,
                ..
            }
        ));

        let e = load_with("rowoor", "index_test_1.txt", Some("0\n6\n"));
        assert!(matches!(
            e,
            DataError::IndexOutOfRange {
                line: 2,
                index: 6,
                len: 6,
                ..
            }
        ));

        let e = load_with("emptytest", "index_test_0.txt", Some("\n  \n"));
        assert!(matches!(
            e,
            DataError::Empty {
                what: "test rows",
                ..
            }
        ));

        let e = load_with("emptydata", "data.txt", Some(" \n"));
        assert!(matches!(
            e,
            DataError::Empty {
                what: "data rows",
                ..
            }
        ));

        let e = load_with("missing", "data.txt", None);
        assert!(matches!(e, DataError::Missing { ref path } if path.ends_with("data.txt")));
        assert!(e.to_string().starts_with("missing file"));

        let e = load_with("missingtest", "index_test_1.txt", None);
        assert!(matches!(e, DataError::Missing { .. }));

        let e = load_with("nosplits", "index_train_0.txt", None);
        assert!(matches!(e, DataError::Empty { .. }));

        let e = load_with("nonint", "index_train_0.txt", Some("0\n1.5\n"));
        assert!(
            matches!(e, DataError::Invalid(ref m) if m.contains(":2:")),
            "{e}"
        );

        let e = load_with("negative", "index_train_0.txt", Some("-1\n"));
        assert!(matches!(e, DataError::Invalid(_)), "{e}");

        let e = load_with("targetfeat", "index_target.txt", Some("2\n"));
        assert!(matches!(e, DataError::Invalid(_)), "{e}");
    }

    #[test]
    fn uci_synthetic_round_trips() {
        let d = TempDir::new("synth");
        let dir = d.0.join("synthetic");
        write_synthetic(&dir, 50, 3, 4, 0.1, 7).expect("write");
        let ds = UciDataset::load(&dir).expect("load");
        assert_eq!(ds.name, "synthetic");
        assert_eq!((ds.x.len(), ds.n_features(), ds.splits.len()), (50, 3, 4));
        for k in 0..4 {
            let s = ds.split(k).expect("split");
            assert_eq!((s.n_train(), s.n_test()), (45, 5));
            let mut all: Vec<usize> = ds.splits[k].train.clone();
            all.extend(&ds.splits[k].test);
            all.sort_unstable();
            assert_eq!(all, (0..50).collect::<Vec<_>>());
        }
        // Same seed, same data; values survive the text round trip exactly.
        let again = d.0.join("again");
        write_synthetic(&again, 50, 3, 4, 0.1, 7).expect("write");
        assert_eq!(UciDataset::load(&again).expect("load").x, ds.x);
        assert!(matches!(
            write_synthetic(&dir, 2, 3, 1, 0.1, 7),
            Err(DataError::Invalid(_))
        ));
    }

    #[test]
    fn uci_energy_if_present() {
        let dir = Path::new("/work/shared/datasets/uci/energy");
        if !dir.join("data.txt").is_file() {
            println!(
                "skipping uci_energy_if_present: {} not found",
                dir.display()
            );
            return;
        }
        let ds = UciDataset::load(dir).expect("load energy");
        assert_eq!((ds.x.len(), ds.n_features(), ds.splits.len()), (768, 8, 20));
        let s = ds.split(0).expect("split 0");
        assert_eq!((s.n_train(), s.n_test()), (691, 77));
        assert_eq!(s.x_train.len(), 691 * 8);
    }
}
