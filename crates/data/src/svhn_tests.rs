use super::*;
use crate::mat_writer::mat_bytes;
use crate::test_dir::TempDir;

/// Pixel `(r, c, ch)` of synthetic image `k`: distinct along every axis, so reading the
/// column-major planes row-major (a missing transpose) or mixing channels reads other values.
fn value(k: usize, r: usize, c: usize, ch: usize) -> u8 {
    ((31 * k + 101 * ch + 7 * r + c) % 256) as u8
}

/// `X` of `n` images written directly in MATLAB's column-major `32 x 32 x 3 x n` order
/// (independently of [`write_svhn`]).
fn column_major_x(n: usize) -> Vec<u8> {
    let mut x = vec![0; n * 3072];
    for k in 0..n {
        for ch in 0..3 {
            for c in 0..32 {
                for r in 0..32 {
                    x[r + 32 * c + 1024 * ch + 3072 * k] = value(k, r, c, ch);
                }
            }
        }
    }
    x
}

fn vars(n: usize, y: MatValues) -> Vec<MatVar> {
    vec![
        MatVar {
            name: "X".into(),
            dims: vec![32, 32, 3, n],
            values: MatValues::U8(column_major_x(n)),
        },
        MatVar {
            name: "y".into(),
            dims: vec![n, 1],
            values: y,
        },
    ]
}

#[test]
fn svhn_mat_reads_column_major_pixels_and_maps_label_10_to_0() {
    let d = TempDir::new("svhn");
    let path = d.0.join(SVHN_FILES[0]);
    for compressed in [false, true] {
        for y in [
            MatValues::F64(vec![10.0, 1.0, 9.0]),
            MatValues::U8(vec![10, 1, 9]),
        ] {
            write_mat(&path, &vars(3, y), compressed).unwrap();
            let set = read_svhn(&path).unwrap();
            assert_eq!(
                (set.len(), set.channels, set.rows, set.cols),
                (3, 3, 32, 32)
            );
            assert_eq!(set.labels, vec![0, 1, 9], "compressed {compressed}");
            for k in 0..3 {
                for (r, c, ch) in [(0, 1, 0), (1, 0, 0), (3, 29, 1), (30, 2, 2), (31, 31, 2)] {
                    assert_eq!(
                        set.at(k, r, c, ch),
                        value(k, r, c, ch),
                        "{k} ({r}, {c}, {ch})"
                    );
                }
            }
            // Pixel (row 3, col 29, green) of image 2: (62 + 101 + 21 + 29) % 256 = 213; the
            // untransposed plane would give (row 29, col 3): (62 + 101 + 203 + 3) % 256 = 113.
            assert_eq!(set.at(2, 3, 29, 1), 213);
        }
    }
}

#[test]
fn write_svhn_round_trips_through_the_reader_and_the_folder_loads() {
    let d = TempDir::new("svhn-rt");
    write_mat(
        &d.0.join(SVHN_FILES[0]),
        &vars(2, MatValues::F64(vec![3.0, 10.0])),
        true,
    )
    .unwrap();
    let set = read_svhn(&d.0.join(SVHN_FILES[0])).unwrap();
    write_svhn(&d.0.join(SVHN_FILES[1]), &set, false).unwrap();
    // Written by write_svhn, uncompressed, the bytes of X are those of the independent writer.
    let expected = mat_bytes(&vars(2, MatValues::F64(vec![3.0, 10.0])), false);
    assert_eq!(
        fs::read(d.0.join(SVHN_FILES[1])).unwrap()[128..],
        expected[128..]
    );
    let data = Svhn::load(&d.0).unwrap();
    assert_eq!(data.test, set);
    assert_eq!(data.train.labels, vec![3, 0]);
}

#[test]
fn corrupt_svhn_files_are_one_line_errors_naming_the_file() {
    let d = TempDir::new("svhn-bad");
    let path = d.0.join(SVHN_FILES[1]);
    let check = |why: &str| {
        let e = read_svhn(&path).unwrap_err();
        let s = e.to_string();
        assert!(matches!(e, DataError::Mat { .. }), "{s}");
        assert!(s.contains("test_32x32.mat") && s.contains(why), "{s}");
        assert_eq!(s.lines().count(), 1, "{s}");
    };
    for compressed in [false, true] {
        let good = mat_bytes(&vars(2, MatValues::F64(vec![1.0, 2.0])), compressed);
        // Truncated anywhere past the header: the parser refuses it (never a panic).
        for cut in [130, 200, good.len() / 2, good.len() - 3] {
            fs::write(&path, &good[..cut]).unwrap();
            check("may be truncated or corrupt");
        }
        // A flipped byte in the compressed stream or the element tags.
        let mut flipped = good.clone();
        flipped[140] ^= 0xff;
        fs::write(&path, &flipped).unwrap();
        assert!(read_svhn(&path).is_err());
    }
    fs::write(&path, b"MATLAB 7.3 MAT-file, HDF5").unwrap();
    check("only v5");
    fs::write(&path, []).unwrap();
    check("only v5");
    // Wrong sizes and labels.
    let mut v = vars(2, MatValues::F64(vec![1.0, 2.0]));
    v[0].dims = vec![32, 32, 2, 3];
    write_mat(&path, &v, false).unwrap();
    check("expected [32, 32, 3, n]");
    let mut v = vars(2, MatValues::F64(vec![1.0]));
    v[1].dims = vec![1, 1];
    write_mat(&path, &v, false).unwrap();
    check("one per image");
    write_mat(&path, &vars(2, MatValues::F64(vec![1.0, 0.0])), false).unwrap();
    check("label 0 of item 1");
    write_mat(&path, &vars(2, MatValues::F64(vec![2.5, 1.0])), true).unwrap();
    check("label 2.5 of item 0");
    write_mat(&path, &vars(2, MatValues::F64(vec![1.0, 2.0]))[..1], false).unwrap();
    check("no numeric array `y`");
    let mut v = vars(2, MatValues::F64(vec![1.0, 2.0]));
    v[0].values = MatValues::F64(vec![0.0; 6144]);
    write_mat(&path, &v, false).unwrap();
    check("not a real uint8");
    let e = read_svhn(&d.0.join("absent.mat")).unwrap_err();
    assert!(matches!(e, DataError::Missing { .. }), "{e}");
}
