use super::*;
use crate::color_synthetic::write_synthetic;
use crate::fetch::tests::{serve, tmp};
use crate::fetch::verify_dir;

/// Packs the files of `src` into `tarball` under `folder/` (as the official tarballs do), with
/// a non-`.bin` file beside them that unpacking must skip.
fn pack(src: &Path, folder: &str, tarball: &Path) {
    let gz = flate2::write::GzEncoder::new(
        fs::File::create(tarball).unwrap(),
        flate2::Compression::fast(),
    );
    let mut b = tar::Builder::new(gz);
    let mut names: Vec<_> = fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for p in names {
        let name = p.file_name().unwrap().to_str().unwrap().to_owned();
        b.append_path_with_name(&p, format!("{folder}/{name}"))
            .unwrap();
    }
    let readme = src.join("batches.meta.txt");
    fs::write(&readme, "airplane\n").unwrap();
    b.append_path_with_name(&readme, format!("{folder}/batches.meta.txt"))
        .unwrap();
    b.into_inner().unwrap().finish().unwrap();
}

/// The synthetic set's entry: its counts, its content hash (computed by the reader on the
/// files in `src`) and the MD5s of the files `upstream` serves.
fn synthetic_known(
    mut k: ColorKnown,
    src: &Path,
    upstream: &Path,
    counts: [usize; 2],
) -> ColorKnown {
    let (train, test, coarse) = load(src, k.set).unwrap();
    k.counts = counts;
    k.sha256 = Some(content_sha256(&train, &test, &coarse));
    for (file, md5) in &mut k.md5 {
        *md5 = md5_file(&upstream.join(file)).unwrap();
    }
    k
}

#[test]
fn md5s_are_the_rfc_vectors_and_the_official_files_are_pinned() {
    let d = tmp("md5");
    for (text, want) in [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
    ] {
        fs::write(d.join("f"), text).unwrap();
        assert_eq!(md5_file(&d.join("f")).unwrap(), want);
    }
    // Each official download has its publisher's MD5, by file name.
    for k in color_benchmarks() {
        let files: Vec<&str> = k.md5.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(files, upstream_files(k.set), "{}", k.name);
        assert!(k.md5.iter().all(|(_, h)| h.len() == 32), "{}", k.name);
    }
    let _ = fs::remove_dir_all(d);
}

#[test]
fn fetch_cifar_unpacks_the_tarball_verifies_and_refuses_a_wrong_count() {
    for (known, folder, tarball) in [
        (cifar10(), "cifar-10-batches-bin", "cifar-10-binary.tar.gz"),
        (cifar100(), "cifar-100-binary", "cifar-100-binary.tar.gz"),
    ] {
        let src = tmp("color-src");
        write_synthetic(&src, known.set, 12, 3, 7).unwrap();
        let upstream = tmp("color-upstream");
        pack(&src, folder, &upstream.join(tarball));
        let known = synthetic_known(known, &src, &upstream, [12, 3]);
        let base = serve(upstream.clone(), 3);

        let to = tmp("color-to");
        let (dir, hash) = fetch_color(&base, &to, &known).unwrap();
        assert_eq!(dir, to.join(&known.name));
        assert_eq!(Some(hash), known.sha256);
        // Only the .bin files, flat; the tarball and the partial folder are gone.
        let mut got: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        got.sort();
        let n_bins = if known.set == ColorSet::Cifar10 { 6 } else { 2 };
        assert_eq!(got.len(), n_bins, "{got:?}");
        assert!(got.iter().all(|f| f.ends_with(".bin")), "{got:?}");
        assert_eq!(fs::read_dir(&to).unwrap().count(), 1);
        // Kept without downloading when already verified (nothing listens on port 9).
        assert_eq!(
            fetch_color("http://127.0.0.1:9", &to, &known).unwrap().0,
            dir
        );

        // The official counts refuse the synthetic folder, through verify_dir too.
        let e = verify_dir(&to).unwrap_err();
        assert!(
            matches!(
                &e,
                DataError::Count {
                    got: 12,
                    expected: 50_000,
                    what: "training",
                    ..
                }
            ),
            "{e}"
        );
        // A wrong expected count: an error, nothing left in the target.
        let to2 = tmp("color-to2");
        let bad = ColorKnown {
            counts: [12, 4],
            ..known.clone()
        };
        let e = fetch_color(&base, &to2, &bad).unwrap_err();
        assert!(
            matches!(
                e,
                DataError::Count {
                    got: 3,
                    expected: 4,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(fs::read_dir(&to2).unwrap().count(), 0);
        // A tarball whose MD5 is not the published one: refused before unpacking, nothing
        // left in the target.
        let mut other = known.clone();
        other.md5[0].1 = CIFAR10_MD5.into();
        let e = fetch_color(&base, &to2, &other).unwrap_err();
        assert!(
            matches!(&e, DataError::Md5 { expected, .. } if expected == CIFAR10_MD5),
            "{e}"
        );
        assert!(e.to_string().contains(tarball), "{e}");
        assert_eq!(fs::read_dir(&to2).unwrap().count(), 0);
        for d in [src, upstream, to, to2] {
            let _ = fs::remove_dir_all(d);
        }
    }
}

#[test]
fn fetch_svhn_downloads_both_files_and_refuses_a_wrong_hash_or_a_corrupt_archive() {
    let upstream = tmp("svhn-upstream");
    write_synthetic(&upstream, ColorSet::Svhn, 6, 2, 3).unwrap();
    let known = synthetic_known(svhn(), &upstream, &upstream, [6, 2]);
    let base = serve(upstream.clone(), 6);
    let to = tmp("svhn-to");
    let (dir, _) = fetch_color(&base, &to, &known).unwrap();
    let data = Svhn::load(&dir).unwrap();
    assert_eq!((data.train.len(), data.test.len()), (6, 2));
    assert_eq!(data.train.labels, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(verify_dir(&to).unwrap_err().to_string().lines().count(), 1);

    let bad = ColorKnown {
        sha256: Some("00".repeat(32)),
        ..known.clone()
    };
    let to2 = tmp("svhn-to2");
    let e = fetch_color(&base, &to2, &bad).unwrap_err();
    assert!(matches!(e, DataError::Checksum { .. }), "{e}");
    assert_eq!(fs::read_dir(&to2).unwrap().count(), 0);
    // The official MD5 of the test file against the synthetic one.
    let mut other = known.clone();
    other.md5[1].1 = SVHN_MD5[1].into();
    let e = fetch_color(&base, &to2, &other).unwrap_err();
    assert!(e.to_string().contains("test_32x32.mat"), "{e}");
    assert_eq!(fs::read_dir(&to2).unwrap().count(), 0);

    // A tarball cut short: an Archive (or Missing-file) error naming it, nothing unpacked kept.
    let src = tmp("cifar-cut");
    write_synthetic(&src, ColorSet::Cifar100, 5, 1, 1).unwrap();
    let tarball = to2.join("cifar-100-binary.tar.gz");
    pack(&src, "cifar-100-binary", &tarball);
    let raw = fs::read(&tarball).unwrap();
    fs::write(&tarball, &raw[..raw.len() / 2]).unwrap();
    let e = unpack_bins(&tarball, &to2).unwrap_err();
    assert!(matches!(e, DataError::Archive { .. }), "{e}");
    assert!(e.to_string().contains("cifar-100-binary.tar.gz"), "{e}");
    for d in [upstream, to, to2, src] {
        let _ = fs::remove_dir_all(d);
    }
}
