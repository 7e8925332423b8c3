//! The sweep itself (`sweep.json`), the request that plans it and the binary it runs; feature
//! `sweep`, with the engines.

use super::spec::{BinaryFlags, Description, Task, parse_seeds, short_hash};
use super::task;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A sweep as written to `sweep.json`: everything a task or the gather needs, with absolute
/// paths (Slurm tasks start in whatever directory the cluster chooses).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sweep {
    /// Schema tag.
    pub schema: String,
    /// Binary name (`fig3`).
    pub name: String,
    /// Content hash of the task list.
    pub id: String,
    /// Absolute path of the reproduction binary.
    pub bin: PathBuf,
    /// Absolute path of the runs' parent, `results/<name>`.
    pub runs_dir: PathBuf,
    /// The description the tasks came from.
    pub description: Description,
    /// The tasks, in order.
    pub tasks: Vec<Task>,
}

impl Sweep {
    /// Expands `description` for the binary at `bin` (absolute) with runs under
    /// `results/<name>`.
    pub fn new(name: &str, bin: &Path, results: &Path, description: Description) -> Result<Sweep> {
        let tasks = description.expand(name)?;
        let ids: Vec<&str> = tasks.iter().map(|t| t.run_id.as_str()).collect();
        let id = short_hash(&ids, 12);
        let results =
            std::path::absolute(results).with_context(|| format!("bad results path {}", results.display()))?;
        Ok(Sweep {
            schema: "dlp.sweep.v1".into(),
            name: name.to_string(),
            id,
            bin: bin.to_path_buf(),
            runs_dir: results.join(name),
            description,
            tasks,
        })
    }

    /// `results/<name>/sweeps/<id>`.
    pub fn dir(&self) -> PathBuf {
        self.runs_dir.join("sweeps").join(&self.id)
    }

    /// The finished run directory of task `i`.
    pub fn run_dir(&self, i: usize) -> PathBuf {
        self.runs_dir.join(&self.tasks[i].run_id)
    }

    /// Reads `sweep.json` from a sweep directory.
    pub fn load(dir: &Path) -> Result<Sweep> {
        let path = dir.join("sweep.json");
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}: not a sweep file", path.display()))
    }

    /// Writes `sweep.json`, `tasks.tsv` and `logs/` (atomically, file by file).
    pub fn write(&self) -> Result<()> {
        let dir = self.dir();
        std::fs::create_dir_all(dir.join("logs")).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        crate::atomic_write(&dir.join("sweep.json"), json.as_bytes())?;
        let mut tsv = String::from("index\trun_id\targs\n");
        for (i, t) in self.tasks.iter().enumerate() {
            tsv.push_str(&format!("{i}\t{}\t{}\n", t.run_id, t.args.join(" ")));
        }
        crate::atomic_write(&dir.join("tasks.tsv"), tsv.as_bytes())?;
        Ok(())
    }

    /// Indices of the tasks without a finished run directory, after checking that every
    /// finished one was made with the same arguments.
    pub fn missing(&self) -> Result<Vec<usize>> {
        let mut todo = Vec::new();
        for i in 0..self.tasks.len() {
            if !task::is_done(self, i)? {
                todo.push(i);
            }
        }
        Ok(todo)
    }
}

/// What `dlp-sweep run` was asked for, before any check.
pub struct Request<'a> {
    /// Binary name.
    pub name: &'a str,
    /// `--bin`, if given.
    pub bin: Option<&'a Path>,
    /// `--results`.
    pub results: &'a Path,
    /// `--config`, a sweep TOML file.
    pub config: Option<&'a Path>,
    /// `--seeds`, replacing the file's.
    pub seeds: Option<&'a str>,
    /// `--keys`, comma-separated, replacing the file's.
    pub keys: Option<&'a str>,
}

impl Request<'_> {
    /// Finds the binary, reads its flags, builds and checks the description (the file, then
    /// the command line's `binary_flags`), expands it and finds the missing tasks. Nothing is
    /// written; every error is bad input.
    pub fn plan(&self, binary_flags: &[String]) -> Result<(Sweep, Vec<usize>)> {
        let bin = locate_binary(self.name, self.bin)?;
        let flags = BinaryFlags::of_binary(&bin)?;
        let mut d = match self.config {
            Some(path) => Description::from_toml(path)?,
            None => Description::default(),
        };
        if let Some(s) = self.seeds {
            d.seeds = parse_seeds(s)?;
        }
        if let Some(k) = self.keys {
            d.keys = k.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        }
        d.add_cli(binary_flags, &flags, self.name)?;
        d.check(&flags, self.name)?;
        let sweep = Sweep::new(self.name, &bin, self.results, d)?;
        let todo = sweep.missing()?;
        Ok((sweep, todo))
    }
}

/// Absolute path of the reproduction binary `name`: `given`, or the file of that name next to
/// the running executable (where cargo puts every binary of this package).
pub fn locate_binary(name: &str, given: Option<&Path>) -> Result<PathBuf> {
    let path = match given {
        Some(p) => std::path::absolute(p)?,
        None => {
            let exe = std::env::current_exe().context("cannot find the running executable")?;
            exe.parent().map(|d| d.join(name)).unwrap_or_else(|| PathBuf::from(name))
        }
    };
    if !path.is_file() {
        bail!(
            "no reproduction binary {} (build it with `cargo build --release -p dlp-reproduce --bin {name}`, or pass --bin)",
            path.display()
        );
    }
    Ok(path)
}
