//! Errors of the dataset readers.

use std::path::PathBuf;

use thiserror::Error;

/// What can go wrong while reading or preparing a dataset.
///
/// Every variant that comes from a file names that file and, where it applies, the 1-based line.
#[derive(Debug, Error)]
pub enum DataError {
    /// A required file does not exist.
    #[error("missing file {}", path.display())]
    Missing {
        /// The file that was expected.
        path: PathBuf,
    },
    /// A file exists but could not be read or written.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A cell is not a finite number (this includes `nan` and `inf`).
    #[error("{}:{line}: column {column}: `{cell}` is not a number", path.display())]
    Parse {
        /// The file holding the cell.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// 1-based column (whitespace-separated field) number.
        column: usize,
        /// The offending text.
        cell: String,
    },
    /// A row has a different number of columns than the first row.
    #[error("{}:{line}: expected {expected} columns, got {got}", path.display())]
    Ragged {
        /// The data file.
        path: PathBuf,
        /// 1-based line number of the ragged row.
        line: usize,
        /// Column count of the first row.
        expected: usize,
        /// Column count of this row.
        got: usize,
    },
    /// A row or column index points past the end of the data.
    #[error("{}:{line}: index {index} is out of range (length {len})", path.display())]
    IndexOutOfRange {
        /// The index file.
        path: PathBuf,
        /// 1-based line number of the index.
        line: usize,
        /// The 0-based index read.
        index: usize,
        /// Number of rows or columns it indexes into.
        len: usize,
    },
    /// A file or collection that must not be empty is empty.
    #[error("{}: no {what}", path.display())]
    Empty {
        /// The file (or dataset folder) concerned.
        path: PathBuf,
        /// What is missing, e.g. "data rows", "test rows", "feature columns".
        what: &'static str,
    },
    /// Anything else that makes the dataset unusable, with a message naming file and line.
    #[error("{0}")]
    Invalid(String),
}
