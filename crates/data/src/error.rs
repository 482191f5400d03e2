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
    /// A categorical cell is not a category (e.g. a class other than `e` / `p`, an empty cell).
    #[error("{}:{line}: column {column}: `{cell}` is not a category ({why})", path.display())]
    Category {
        /// The data file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// 1-based column number.
        column: usize,
        /// The offending text.
        cell: String,
        /// What a cell of that column must be.
        why: &'static str,
    },
    /// A file or collection that must not be empty is empty.
    #[error("{}: no {what}", path.display())]
    Empty {
        /// The file (or dataset folder) concerned.
        path: PathBuf,
        /// What is missing, e.g. "data rows", "test rows", "feature columns".
        what: &'static str,
    },
    /// An IDX header is unusable: bad magic, a type code other than unsigned bytes (0x08), a
    /// header shorter than its dimension list, or a rank the reader did not expect.
    #[error("{}: bad IDX header: {why}", path.display())]
    IdxHeader {
        /// The IDX file.
        path: PathBuf,
        /// What is wrong, e.g. "magic 0x1234 is not 0x0000", "type code 0x0d is not 0x08".
        why: String,
    },
    /// The payload of an IDX file does not have `prod(dims)` bytes (truncated or trailing data).
    #[error(
        "{}: IDX dims {dims:?} need {expected} payload bytes, got {got} (truncated or corrupt file)",
        path.display()
    )]
    IdxLength {
        /// The IDX file.
        path: PathBuf,
        /// The dimensions from the header.
        dims: Vec<usize>,
        /// `prod(dims)`.
        expected: usize,
        /// Payload bytes present after the header.
        got: usize,
    },
    /// A gzip stream could not be decompressed.
    #[error("{}: corrupt gzip stream: {source}", path.display())]
    Gzip {
        /// The compressed file.
        path: PathBuf,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },
    /// A class label is not below the number of classes.
    #[error("{}: label {label} of item {index} is out of range (must be < {classes})", path.display())]
    LabelOutOfRange {
        /// The label file.
        path: PathBuf,
        /// 0-based item index.
        index: usize,
        /// The label read.
        label: u8,
        /// Number of classes.
        classes: u8,
    },
    /// An image file and its label file hold different numbers of items.
    #[error("{} has {n_images} images but {} has {n_labels} labels", images.display(), labels.display())]
    CountMismatch {
        /// The image file.
        images: PathBuf,
        /// Number of images in it.
        n_images: usize,
        /// The label file.
        labels: PathBuf,
        /// Number of labels in it.
        n_labels: usize,
    },
    /// Filtering an image set by class kept nothing.
    #[error("no image has a label in {classes:?}")]
    EmptyFilter {
        /// The classes asked for.
        classes: Vec<u8>,
    },
    /// A file's SHA-256 differs from the expected one.
    #[error("{}: SHA-256 {got} differs from the expected {expected}", path.display())]
    Checksum {
        /// The file (for compressed files: its decompressed payload).
        path: PathBuf,
        /// Hex SHA-256 expected.
        expected: String,
        /// Hex SHA-256 found.
        got: String,
    },
    /// A downloaded file's MD5 differs from the one its publisher lists.
    #[error(
        "{}: MD5 {got} differs from the published {expected} (a corrupt or different download)",
        path.display()
    )]
    Md5 {
        /// The downloaded file.
        path: PathBuf,
        /// Hex MD5 the publisher lists.
        expected: String,
        /// Hex MD5 found.
        got: String,
    },
    /// A directory holds none of the known dataset folders.
    #[error("{}: no dataset to verify (looked for {looked_for})", path.display())]
    NoDatasets {
        /// The directory searched.
        path: PathBuf,
        /// The folder names looked for, comma-separated.
        looked_for: String,
    },
    /// A file of fixed-size records (CIFAR binary) is empty or not a whole number of records.
    #[error(
        "{}: {len} bytes is not a positive multiple of the {record}-byte record (truncated or corrupt file)",
        path.display()
    )]
    RecordLength {
        /// The record file.
        path: PathBuf,
        /// Bytes per record.
        record: usize,
        /// Bytes in the file.
        len: usize,
    },
    /// A MATLAB file is unreadable or lacks what the reader needs.
    #[error("{}: bad MATLAB file: {why}", path.display())]
    Mat {
        /// The `.mat` file.
        path: PathBuf,
        /// What is wrong, e.g. "no array `X`", "`X` has dims [32, 32, 2, 5], expected [32, 32, 3, n]".
        why: String,
    },
    /// A verified set holds a different number of items than the official one.
    #[error("{}: {got} {what} images, the official set has {expected}", path.display())]
    Count {
        /// The file (or folder) counted.
        path: PathBuf,
        /// Which set: "training" or "test".
        what: &'static str,
        /// Items found.
        got: usize,
        /// Items of the official set.
        expected: usize,
    },
    /// A `.tar.gz` archive could not be unpacked.
    #[error("{}: corrupt tar.gz archive: {source}", path.display())]
    Archive {
        /// The archive.
        path: PathBuf,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },
    /// Anything else that makes the dataset unusable, with a message naming file and line.
    #[error("{0}")]
    Invalid(String),
}
