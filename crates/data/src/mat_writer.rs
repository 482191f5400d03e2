//! A minimal writer of MATLAB v5 `.mat` files (numeric, real arrays), for synthetic test
//! data in the layout of the SVHN files. Reading goes through the `matfile` crate.
//!
//! Format (MathWorks, "MAT-File Format", level 5): a 128-byte header (116 bytes of text, 8
//! bytes of subsystem offset, version `0x0100`, endian indicator `IM` for little endian), then
//! one data element per variable. A data element is an 8-byte tag (`u32` type, `u32` byte
//! count) and its data padded to 8 bytes. A variable is a `miMATRIX` (14) element holding the
//! sub-elements array flags (`miUINT32`: class in the low byte, then `nzmax`), dimensions
//! (`miINT32`), name (`miINT8`) and real part (numbers in column-major order). With
//! compression the whole `miMATRIX` element is zlib-compressed into a `miCOMPRESSED` (15)
//! element.

use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::ZlibEncoder;

use crate::error::DataError;
use crate::fetch::io_or_missing;

const MI_INT8: u32 = 1;
const MI_UINT8: u32 = 2;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_DOUBLE: u32 = 9;
const MI_MATRIX: u32 = 14;
const MI_COMPRESSED: u32 = 15;
const MX_DOUBLE_CLASS: u32 = 6;
const MX_UINT8_CLASS: u32 = 9;

/// The numbers of a variable, column-major.
#[derive(Clone, Debug, PartialEq)]
pub enum MatValues {
    /// A `uint8` array.
    U8(Vec<u8>),
    /// A `double` array.
    F64(Vec<f64>),
}

/// One variable: name, dimensions (at least 2) and values.
#[derive(Clone, Debug, PartialEq)]
pub struct MatVar {
    /// Variable name.
    pub name: String,
    /// MATLAB dimensions.
    pub dims: Vec<usize>,
    /// `prod(dims)` values in column-major order.
    pub values: MatValues,
}

/// Appends a data element (tag, data, padding to 8 bytes).
fn element(out: &mut Vec<u8>, ty: u32, data: &[u8]) {
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(8), 0);
}

/// The `miMATRIX` element of `v`.
fn matrix(v: &MatVar) -> Vec<u8> {
    let (class, ty, data) = match &v.values {
        MatValues::U8(x) => (MX_UINT8_CLASS, MI_UINT8, x.clone()),
        MatValues::F64(x) => (
            MX_DOUBLE_CLASS,
            MI_DOUBLE,
            x.iter().flat_map(|f| f.to_le_bytes()).collect(),
        ),
    };
    let mut body = Vec::new();
    element(
        &mut body,
        MI_UINT32,
        &[class.to_le_bytes(), [0; 4]].concat(),
    );
    let dims: Vec<u8> = v
        .dims
        .iter()
        .flat_map(|&d| (d as i32).to_le_bytes())
        .collect();
    element(&mut body, MI_INT32, &dims);
    element(&mut body, MI_INT8, v.name.as_bytes());
    element(&mut body, ty, &data);
    let mut out = Vec::new();
    element(&mut out, MI_MATRIX, &body);
    out
}

/// The bytes of a v5 `.mat` file holding `vars`, each compressed or not.
pub fn mat_bytes(vars: &[MatVar], compressed: bool) -> Vec<u8> {
    let mut text = b"MATLAB 5.0 MAT-file, written by sgmcmc-data for tests".to_vec();
    text.resize(116, b' ');
    let mut out = text;
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&0x0100u16.to_le_bytes());
    out.extend_from_slice(b"IM");
    for v in vars {
        let m = matrix(v);
        if compressed {
            let mut z = ZlibEncoder::new(Vec::new(), Compression::fast());
            // Writing into a Vec cannot fail.
            let _ = z.write_all(&m);
            let z = z.finish().unwrap_or_default();
            out.extend_from_slice(&MI_COMPRESSED.to_le_bytes());
            out.extend_from_slice(&(z.len() as u32).to_le_bytes());
            out.extend_from_slice(&z);
        } else {
            out.extend_from_slice(&m);
        }
    }
    out
}

/// Writes [`mat_bytes`] to `path`.
pub fn write_mat(path: &Path, vars: &[MatVar], compressed: bool) -> Result<(), DataError> {
    std::fs::write(path, mat_bytes(vars, compressed)).map_err(|e| io_or_missing(path, e))
}
