use super::*;
use crate::test_dir::TempDir;

/// The value of pixel `(r, c, ch)` of synthetic image `k`: distinct along every axis, so a
/// swapped axis or a shifted record reads other values.
fn value(k: usize, r: usize, c: usize, ch: usize) -> u8 {
    ((31 * k + 101 * ch + 7 * r + c) % 256) as u8
}

/// Image `k` as a record's 3072 pixel bytes: the R plane, then G, then B, each row-major.
fn record_pixels(k: usize) -> Vec<u8> {
    let mut p = vec![0; PIXELS];
    for ch in 0..3 {
        for r in 0..SIDE {
            for c in 0..SIDE {
                p[ch * 1024 + r * 32 + c] = value(k, r, c, ch);
            }
        }
    }
    p
}

/// A CIFAR-10 folder: `data_batch_1` holds images 0..3, `data_batch_2` 3..5, the other
/// batches one image each (5, 6, 7), `test_batch` images 100, 101. Label of image k: k % 10.
fn write_cifar10(dir: &Path) {
    let batches: [&[usize]; 5] = [&[0, 1, 2], &[3, 4], &[5], &[6], &[7]];
    for (file, ks) in CIFAR10_TRAIN
        .iter()
        .zip(batches)
        .chain([(&CIFAR10_TEST, &[100, 101][..])])
    {
        let labels: Vec<Vec<u8>> = ks.iter().map(|&k| vec![(k % 10) as u8]).collect();
        let pixels: Vec<Vec<u8>> = ks.iter().map(|&k| record_pixels(k)).collect();
        write_records(&dir.join(file), Layout::Cifar10, &labels, &pixels).unwrap();
    }
}

fn assert_images(set: &Images, ks: &[usize]) {
    assert_eq!(
        (set.len(), set.channels, set.rows, set.cols),
        (ks.len(), 3, 32, 32)
    );
    for (i, &k) in ks.iter().enumerate() {
        for (r, c, ch) in [
            (0, 0, 0),
            (0, 1, 0),
            (1, 0, 0),
            (5, 17, 1),
            (31, 31, 2),
            (2, 30, 2),
        ] {
            assert_eq!(
                set.at(i, r, c, ch),
                value(k, r, c, ch),
                "image {i} ({r}, {c}, {ch})"
            );
        }
    }
    // Every byte, against burn's [n, 3, 32, 32] row-major index.
    let expected: Vec<u8> = ks.iter().flat_map(|&k| record_pixels(k)).collect();
    assert_eq!(set.pixels, expected);
}

#[test]
fn cifar10_reads_batches_in_order_with_channel_planes() {
    let d = TempDir::new("cifar10");
    write_cifar10(&d.0);
    let data = Cifar10::load(&d.0).unwrap();
    assert_images(&data.train, &[0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(data.train.labels, vec![0, 1, 2, 3, 4, 5, 6, 7]);
    assert_images(&data.test, &[100, 101]);
    assert_eq!(
        (data.test.labels.clone(), data.test.classes),
        (vec![0, 1], 10)
    );
    // Image 4, pixel (row 5, col 17, green) = (31*4 + 101 + 35 + 17) % 256 = 21: the 4th byte
    // after the label of record 1 of data_batch_2 at offset 1024 + 5*32 + 17.
    assert_eq!(data.train.at(4, 5, 17, 1), 21);
}

#[test]
fn cifar10_in_the_tarball_subfolder_loads() {
    let d = TempDir::new("cifar10-sub");
    let sub = d.0.join(CIFAR10_SUBDIR);
    fs::create_dir_all(&sub).unwrap();
    write_cifar10(&sub);
    assert_eq!(Cifar10::load(&d.0).unwrap().train.len(), 8);
}

#[test]
fn cifar100_reads_fine_and_coarse_labels() {
    let d = TempDir::new("cifar100");
    for (file, ks) in CIFAR100_FILES.iter().zip([&[0usize, 1, 2][..], &[9, 10]]) {
        // Coarse label k % 20, fine label 99 - k.
        let labels: Vec<Vec<u8>> = ks
            .iter()
            .map(|&k| vec![(k % 20) as u8, (99 - k) as u8])
            .collect();
        let pixels: Vec<Vec<u8>> = ks.iter().map(|&k| record_pixels(k)).collect();
        write_records(&d.0.join(file), Layout::Cifar100, &labels, &pixels).unwrap();
    }
    let data = Cifar100::load(&d.0).unwrap();
    assert_images(&data.train.fine, &[0, 1, 2]);
    assert_images(&data.test.fine, &[9, 10]);
    assert_eq!(
        (data.train.fine.labels.clone(), data.train.fine.classes),
        (vec![99, 98, 97], 100)
    );
    assert_eq!(data.test.coarse, vec![9, 10]);
    let coarse = data.test.coarse_images();
    assert_eq!((coarse.labels, coarse.classes), (vec![9, 10], 20));
}

#[test]
fn truncated_missing_and_bad_label_files_are_refused_naming_the_file() {
    let d = TempDir::new("cifar10-bad");
    write_cifar10(&d.0);
    // One byte short of two records.
    let path = d.0.join("data_batch_2.bin");
    let raw = fs::read(&path).unwrap();
    fs::write(&path, &raw[..raw.len() - 1]).unwrap();
    let e = Cifar10::load(&d.0).unwrap_err();
    assert!(
        matches!(
            e,
            DataError::RecordLength {
                record: 3073,
                len: 6145,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("data_batch_2.bin"), "{e}");
    assert_eq!(e.to_string().lines().count(), 1);
    // Empty.
    fs::write(&path, []).unwrap();
    let e = Cifar10::load(&d.0).unwrap_err();
    assert!(matches!(e, DataError::RecordLength { len: 0, .. }), "{e}");
    // A CIFAR-100 file read as CIFAR-10: 3074 is not a multiple of 3073.
    write_records(&path, Layout::Cifar100, &[vec![1, 2]], &[record_pixels(0)]).unwrap();
    assert!(matches!(
        Cifar10::load(&d.0).unwrap_err(),
        DataError::RecordLength { .. }
    ));
    // Label 10 in CIFAR-10.
    write_records(
        &path,
        Layout::Cifar10,
        &[vec![3], vec![10]],
        &[record_pixels(0), record_pixels(1)],
    )
    .unwrap();
    let e = Cifar10::load(&d.0).unwrap_err();
    assert!(
        matches!(
            e,
            DataError::LabelOutOfRange {
                index: 1,
                label: 10,
                classes: 10,
                ..
            }
        ),
        "{e}"
    );
    // Missing test batch, named.
    write_cifar10(&d.0);
    fs::remove_file(d.0.join(CIFAR10_TEST)).unwrap();
    let e = Cifar10::load(&d.0).unwrap_err();
    assert!(
        matches!(&e, DataError::Missing { path } if path.ends_with(CIFAR10_TEST)),
        "{e}"
    );
    // CIFAR-100: coarse label 20 is out of range.
    let d = TempDir::new("cifar100-bad");
    for file in CIFAR100_FILES {
        write_records(
            &d.0.join(file),
            Layout::Cifar100,
            &[vec![20, 5]],
            &[record_pixels(0)],
        )
        .unwrap();
    }
    let e = Cifar100::load(&d.0).unwrap_err();
    assert!(
        matches!(
            e,
            DataError::LabelOutOfRange {
                label: 20,
                classes: 20,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("train.bin"), "{e}");
}
