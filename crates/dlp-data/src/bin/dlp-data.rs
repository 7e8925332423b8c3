//! `dlp-data mnist-convert <idx-dir> <cache-file>`: reads the four raw MNIST IDX files and
//! writes the compact cache that `dlp_data::Mnist::load_cache` reads (called by
//! `data/fetch.sh` after the checksums were verified).

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [cmd, dir, out] if cmd == "mnist-convert" => {
            match dlp_data::Mnist::from_idx_dir(Path::new(dir)).and_then(|m| {
                m.write_cache(Path::new(out))?;
                Ok(m)
            }) {
                Ok(m) => {
                    let mean =
                        m.train_images.iter().map(|&p| p as f64).sum::<f64>() / m.train_images.len() as f64 / 255.0;
                    let mut counts = [0usize; 10];
                    m.train_labels.iter().for_each(|&l| counts[l as usize] += 1);
                    println!(
                        "wrote {out}: {} train + {} test images, train label counts {:?}, mean pixel {:.5}",
                        m.n_train(),
                        m.n_test(),
                        counts,
                        mean
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        _ => {
            eprintln!("error: usage: dlp-data mnist-convert <idx-dir> <cache-file>");
            ExitCode::from(2)
        }
    }
}
