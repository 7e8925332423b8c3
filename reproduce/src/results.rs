//! The results directory of one run: atomic CSV/JSON/figure writes, `meta.json`, progress bars.

use crate::args::CommonArgs;
use crate::plot::{self, Figure};
use crate::{csv_out, meta};
use anyhow::{Context, Result, anyhow, bail};
use dlp_core::io::atomic_write;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// One run of a reproduction binary: where its files go and what `meta.json` records.
pub struct Run {
    /// Name of the experiment (`fig3`).
    pub name: String,
    /// The results directory.
    pub dir: PathBuf,
    /// The common arguments it was started with.
    pub common: CommonArgs,
    started: Instant,
    started_unix: u64,
    /// The git revision at the start: a long run outlives commits made meanwhile, and the
    /// code that ran is the start's (the binary was built then).
    git: serde_json::Value,
    /// Whether [`Run::cell`] reads the cells a previous run left (`--resume` of the binaries
    /// that have cells); cells are written either way.
    pub resume: bool,
    /// Cells read instead of computed.
    resumed: AtomicUsize,
}

/// Serde helpers for floats in [`Run::cell`] values: JSON has no NaN or infinity (serde_json
/// writes `null`, which does not read back as a float), so a non-finite value is written as
/// the string `"NaN"`, `"inf"` or `"-inf"` and read back from it; finite values stay numbers
/// (exact round trip). Use `#[serde(with = "dlp_reproduce::results::lenient_f64")]` on an
/// `f64` field that can be non-finite (a diverged chain's loss), `lenient_f64::vec` on a
/// `Vec<f64>`.
pub mod lenient_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    /// A float or the name of a non-finite one.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Number(f64),
        Name(String),
    }

    fn from_repr<E: serde::de::Error>(r: Repr) -> Result<f64, E> {
        match r {
            Repr::Number(x) => Ok(x),
            Repr::Name(s) => match s.as_str() {
                "NaN" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                other => Err(E::custom(format!("{other:?} is not a number, NaN, inf or -inf"))),
            },
        }
    }

    /// Writes `x` as a number, or as its name when it is not finite.
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() { s.serialize_f64(*x) } else { s.serialize_str(&x.to_string()) }
    }

    /// Reads what [`serialize`] wrote.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        from_repr(Repr::deserialize(d)?)
    }

    /// The same for every element of a `Vec<f64>`.
    pub mod vec {
        use serde::ser::SerializeSeq;
        use serde::{Deserialize, Deserializer, Serializer};

        /// Writes the elements as [`super::serialize`] does.
        pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
            struct One(f64);
            impl serde::Serialize for One {
                fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    super::serialize(&self.0, s)
                }
            }
            let mut seq = s.serialize_seq(Some(v.len()))?;
            for &x in v {
                seq.serialize_element(&One(x))?;
            }
            seq.end()
        }

        /// Reads what [`serialize`] wrote.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
            Vec::<super::Repr>::deserialize(d)?.into_iter().map(super::from_repr).collect()
        }
    }
}

/// A cell's file: what determines it, the revision that computed it, and its value.
#[derive(Serialize, Deserialize)]
struct CellFile<T> {
    identity: Value,
    git: Value,
    value: T,
}

impl Run {
    /// Creates the results directory, sizes the global thread pool, registers the plot font
    /// and keeps freed tensor buffers for reuse ([`dlp_core::memory::keep_freed_buffers`]). Call
    /// once, first thing in `main`.
    pub fn start(name: &str, common: &CommonArgs) -> Result<Run> {
        dlp_core::memory::keep_freed_buffers();
        let dir = common.out.clone().unwrap_or_else(|| Path::new("results").join(name));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        if let Some(t) = common.threads {
            if t == 0 {
                return Err(anyhow!("--threads must be at least 1"));
            }
            // Fails only if the pool was already built (a second Run in one process).
            let _ = rayon::ThreadPoolBuilder::new().num_threads(t).build_global();
        }
        plot::register_fonts();
        let started_unix =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        Ok(Run {
            name: name.to_string(),
            dir,
            common: common.clone(),
            started: Instant::now(),
            started_unix,
            git: meta::git_info(),
            resume: false,
            resumed: AtomicUsize::new(0),
        })
    }

    /// A resumable piece of a long run (one seed of one sampler, one sequence): `compute`'s
    /// value, stored in `cells/<key>.json` with `identity` (everything that determines it:
    /// data, configuration, seed). With [`Run::resume`] a cell whose file holds the same
    /// identity is read instead of computed, so an interrupted run continues where it stopped
    /// and writes the files an uninterrupted one would (the value round-trips exactly through
    /// JSON); a file with another identity is an error, never silently reused. Keys must be
    /// unique within a run; characters outside `[A-Za-z0-9._-]` become `_`.
    pub fn cell<T: Serialize + DeserializeOwned>(
        &self,
        key: &str,
        identity: &Value,
        compute: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let name: String =
            key.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
        let path = self.dir.join("cells").join(format!("{name}.json"));
        if self.resume && path.is_file() {
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let file: CellFile<T> = serde_json::from_str(&text)
                .with_context(|| format!("--resume: {} is not a readable cell", path.display()))?;
            if file.identity != *identity {
                bail!(
                    "--resume: {} was computed for {} but this run needs {}; resume with the same arguments or use another --out",
                    path.display(),
                    file.identity,
                    identity
                );
            }
            self.resumed.fetch_add(1, Ordering::Relaxed);
            return Ok(file.value);
        }
        let value = compute()?;
        let file = CellFile { identity: identity.clone(), git: self.git["revision"].clone(), value };
        std::fs::create_dir_all(path.parent().expect("cells/"))
            .with_context(|| format!("cannot create {}", path.display()))?;
        atomic_write(&path, serde_json::to_string(&file)?.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(file.value)
    }

    /// How many cells [`Run::cell`] read instead of computing (`meta.json` records it).
    pub fn resumed_cells(&self) -> usize {
        self.resumed.load(Ordering::Relaxed)
    }

    /// The master seed (`--seed`).
    pub fn seed(&self) -> u64 {
        self.common.seed
    }

    /// Path of `file` inside the results directory.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Writes `bytes` to `file` in the results directory atomically.
    pub fn write_bytes(&self, file: &str, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.path(file);
        atomic_write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    /// Writes `file` through `write`, which creates it at a temporary path in the same
    /// directory, then renames that over `file`: atomic like [`Run::write_bytes`], for encoders
    /// that write to a path themselves (the temporary name keeps the extension, from which the
    /// bitmap backend picks its encoder).
    pub fn write_through(&self, file: &str, write: impl FnOnce(&Path) -> Result<()>) -> Result<PathBuf> {
        let target = self.path(file);
        let ext = Path::new(file).extension().and_then(|e| e.to_str()).unwrap_or("tmp");
        let tmp = self.path(&format!(".{file}.{}.tmp.{ext}", std::process::id()));
        let written = write(&tmp).and_then(|()| std::fs::rename(&tmp, &target).map_err(Into::into));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.with_context(|| format!("cannot write {}", target.display()))?;
        Ok(target)
    }

    /// Writes a pretty-printed JSON file.
    pub fn write_json(&self, file: &str, value: &impl Serialize) -> Result<PathBuf> {
        let mut text = serde_json::to_string_pretty(value)?;
        text.push('\n');
        self.write_bytes(file, text.as_bytes())
    }

    /// Writes a CSV file with the comma-separated column names `columns` as its header and
    /// `rows` (see [`csv_out::csv_bytes`]).
    pub fn write_csv(&self, file: &str, columns: &str, rows: &[Vec<String>]) -> Result<PathBuf> {
        let header: Vec<&str> = columns.split(',').collect();
        self.write_bytes(file, &csv_out::csv_bytes(&header, rows).with_context(|| file.to_string())?)
    }

    /// Draws `figure` to `<stem>.svg` and `<stem>.png`.
    pub fn write_figure(&self, stem: &str, figure: &Figure) -> Result<()> {
        self.write_bytes(&format!("{stem}.svg"), plot::svg(figure)?.as_bytes())?;
        self.write_through(&format!("{stem}.png"), |tmp| plot::png(figure, tmp))?;
        Ok(())
    }

    /// Writes up to 100 square binary images (`states`, `d` pixels each) as a grid PNG
    /// (see [`plot::image_grid_png`]).
    pub fn write_image_grid(&self, file: &str, states: &[u32], d: usize) -> Result<PathBuf> {
        self.write_through(file, |tmp| plot::image_grid_png(tmp, states, d))
    }

    /// Writes `meta.json`: seed, the full configuration, git revision (at the start), crate versions,
    /// threads, machine and timing.
    pub fn write_meta(&self, config: &impl Serialize) -> Result<PathBuf> {
        let meta = json!({
            "experiment": self.name,
            "command_line": std::env::args().collect::<Vec<_>>(),
            "seed": self.common.seed,
            "quick": self.common.quick,
            "config": config,
            "threads": {
                "requested": self.common.threads,
                "used": rayon::current_num_threads(),
            },
            "git": self.git,
            "resumed_cells": self.resumed_cells(),
            "versions": meta::versions(),
            "machine": meta::machine(),
            "started_unix": self.started_unix,
            "wall_seconds": self.started.elapsed().as_secs_f64(),
        });
        self.write_json("meta.json", &meta)
    }

    /// Writes `meta.json` (see [`Run::write_meta`]) and prints where the files went: the
    /// last call of every binary.
    pub fn finish(&self, config: &impl Serialize) -> Result<()> {
        self.write_meta(config)?;
        println!("wrote {} in {:.1} s", self.dir.display(), self.elapsed());
        Ok(())
    }

    /// A progress bar on stderr ([`dlp_core::progress::bar`]: plain log lines every minute
    /// when stderr is not a terminal, e.g. in a Slurm job).
    pub fn progress(&self, len: u64, message: &str) -> indicatif::ProgressBar {
        dlp_core::progress::bar(len, message)
    }

    /// Seconds since [`Run::start`].
    pub fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// The loss rows up to step `start` that the run which wrote the checkpoint kept in `path`, when
/// they are there and that run had the same `identity` (seed, batch, held-out interval, text);
/// `None` otherwise (a checkpoint from before these files, or another configuration
/// continued): the rows then start at `start`.
pub fn earlier_loss_rows(path: &std::path::Path, identity: &Value, start: usize) -> Result<Option<Vec<Vec<String>>>> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(None) };
    let file: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("--resume: {} is not a loss history", path.display()))?;
    if file["identity"] != *identity {
        println!("train-mlm: {} is another configuration's; loss.csv starts at step {start}", path.display());
        return Ok(None);
    }
    let rows: Vec<Vec<String>> = serde_json::from_value(file["rows"].clone())
        .with_context(|| format!("--resume: {} is not a loss history", path.display()))?;
    let kept: Vec<Vec<String>> =
        rows.into_iter().filter(|r| r.len() == 3 && r[0].parse::<usize>().is_ok_and(|s| s <= start)).collect();
    Ok(Some(kept).filter(|k| !k.is_empty()))
}

/// Writes the loss rows so far with the run's `identity` to `path` (atomically), for
/// [`earlier_loss_rows`] after a resume.
pub fn save_loss_rows(path: &std::path::Path, identity: &Value, rows: &[Vec<String>]) -> Result<()> {
    let text = serde_json::to_string(&json!({"identity": identity, "rows": rows}))?;
    dlp_core::io::atomic_write(path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}

/// The (step, loss) points of one split (`train`, `heldout`) of loss rows `[step, split, loss]`.
pub fn loss_points(rows: &[Vec<String>], split: &str) -> Result<Vec<(f64, f64)>> {
    rows.iter().filter(|r| r[1] == split).map(|r| Ok((r[0].parse::<f64>()?, r[2].parse::<f64>()?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{BoxStats, Panel, RefLine, Series};
    use serde_json::Value;

    #[test]
    fn figures_are_written_as_svg_and_png_with_text_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let common = CommonArgs { seed: 0, quick: true, threads: None, out: Some(dir.path().to_path_buf()) };
        let run = Run::start("test", &common).unwrap();
        let fig = Figure {
            caption: "caption".into(),
            labels: vec!["a".into(), "b".into()],
            panels: vec![
                Panel::Lines {
                    title: "lines".into(),
                    x_label: "x".into(),
                    y_label: "y".into(),
                    series: vec![Series { label: "a".into(), points: vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 0.5)] }],
                    refs: vec![RefLine { label: "floor".into(), y: 0.2 }],
                    log_y: false,
                },
                Panel::Boxes {
                    title: "boxes".into(),
                    y_label: "z".into(),
                    boxes: vec![BoxStats { label: "b".into(), five: [1.0, 2.0, 3.0, 4.0, 5.0] }],
                },
            ],
        };
        run.write_figure("fig", &fig).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("fig.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("caption") && svg.contains("floor"));
        let png = std::fs::read(dir.path().join("fig.png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        run.write_image_grid("grid.png", &[0, 1, 1, 0], 4).unwrap();
        assert_eq!(&std::fs::read(dir.path().join("grid.png")).unwrap()[..4], b"\x89PNG");
        run.write_meta(&json!({"k": 1})).unwrap();
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("meta.json")).unwrap()).unwrap();
        assert_eq!(meta["config"]["k"], 1);
        assert_eq!(meta["versions"]["dlp"], env!("CARGO_PKG_VERSION"));
        // The revision recorded is the one taken when the run started (a fresh clone has git;
        // a source tarball has none and records null).
        assert_eq!(meta["git"], run.git);
        if let Some(rev) = meta["git"]["revision"].as_str() {
            assert!(rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()), "revision {rev}");
        }
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["fig.png", "fig.svg", "grid.png", "meta.json"]);
    }

    #[test]
    fn cells_are_read_back_on_resume_only_for_the_same_identity() {
        let dir = tempfile::tempdir().unwrap();
        let common = CommonArgs { seed: 0, quick: true, threads: None, out: Some(dir.path().to_path_buf()) };
        let id = json!({"seed": 3, "sampler": "dmala", "step_size": 0.1});
        let v: Vec<f64> = vec![0.1, -1.0 / 3.0, 1e-300, f64::MAX];
        let mut run = Run::start("test", &common).unwrap();
        assert_eq!(run.cell("adult dmala α=0.1 s3", &id, || Ok(v.clone())).unwrap(), v);
        let path = dir.path().join("cells/adult_dmala___0.1_s3.json");
        assert!(path.is_file());
        // Without --resume a cell is computed again (and rewritten).
        assert_eq!(run.cell("adult dmala α=0.1 s3", &id, || Ok(vec![2.0])).unwrap(), [2.0]);
        run.cell("adult dmala α=0.1 s3", &id, || Ok(v.clone())).unwrap();
        // With it, the file's value comes back bit for bit and compute is not called...
        run.resume = true;
        let back: Vec<f64> = run.cell("adult dmala α=0.1 s3", &id, || panic!("recomputed")).unwrap();
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(run.resumed_cells(), 1);
        // ...and it is the file that is read: an edited value is what a resumed run sees.
        let text = std::fs::read_to_string(&path).unwrap().replace("0.1,", "0.25,");
        std::fs::write(&path, text).unwrap();
        assert_eq!(run.cell("adult dmala α=0.1 s3", &id, || Ok(v.clone())).unwrap()[0], 0.25);
        // Another identity under the same key is refused, not reused or overwritten.
        let other = json!({"seed": 4, "sampler": "dmala", "step_size": 0.1});
        let e = run.cell("adult dmala α=0.1 s3", &other, || Ok(v.clone())).unwrap_err().to_string();
        assert!(e.starts_with("--resume: ") && e.contains("\"seed\":3") && e.contains("\"seed\":4"), "{e}");
        // Every float comes back bit for bit (serde_json's `float_roundtrip`: its default
        // parser may be one ulp off), here 20,000 random bit patterns' finite values.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let many: Vec<f64> = (0..20_000)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                f64::from_bits(state)
            })
            .filter(|x| x.is_finite())
            .collect();
        run.cell("many", &id, || Ok(many.clone())).unwrap();
        let back: Vec<f64> = run.cell("many", &id, || panic!("recomputed")).unwrap();
        assert!(back.iter().zip(&many).all(|(a, b)| a.to_bits() == b.to_bits()) && back.len() == many.len());
        // A missing cell is computed and written.
        assert_eq!(run.cell("fresh", &id, || Ok(7u32)).unwrap(), 7);
        assert!(dir.path().join("cells/fresh.json").is_file());
    }

    #[test]
    fn lenient_floats_round_trip_non_finite_values_exactly() {
        #[derive(Serialize, Deserialize, Debug)]
        struct T {
            #[serde(with = "lenient_f64")]
            x: f64,
            #[serde(with = "lenient_f64::vec")]
            v: Vec<f64>,
        }
        let t = T { x: f64::NAN, v: vec![f64::INFINITY, -0.0, 0.1, f64::NEG_INFINITY, f64::MIN_POSITIVE / 8.0] };
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(text, r#"{"x":"NaN","v":["inf",-0.0,0.1,"-inf",2.781342323134e-309]}"#);
        let back: T = serde_json::from_str(&text).unwrap();
        assert!(back.x.is_nan());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back.v), bits(&t.v));
        let e = serde_json::from_str::<T>(r#"{"x":"lots","v":[]}"#).unwrap_err().to_string();
        assert!(e.contains("\"lots\" is not a number"), "{e}");
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let common = CommonArgs { seed: 0, quick: true, threads: None, out: Some(dir.path().to_path_buf()) };
        let run = Run::start("test", &common).unwrap();
        let res = run.write_through("x.png", |tmp| {
            std::fs::write(tmp, b"half")?;
            Err(anyhow!("encoder failed"))
        });
        assert!(res.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
