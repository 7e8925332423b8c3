//! The gather step: every finished run's CSV files stacked into one tidy table each (with
//! `run_id`, `seed` and the axis columns in front), mean ± sd and quantiles per configuration,
//! the numbers of the runs' `summary.json` aggregated the same way, and a figure with bands.
//!
//! The sweep layer knows nothing about a figure, so it must tell key columns (what a row is
//! about: `sampler`, `step`) from value columns (what was measured: `log_rmse`) by itself,
//! unless the sweep file names the keys (`[gather] keys`). Rule: text columns are keys; a
//! column of integers is a key when every run of a configuration has the same values row by
//! row (a step counter), otherwise a value (a count that varies with the seed); any other
//! numeric column is a value, except a column named `seed` (a binary that runs several seeds
//! itself writes one), which names rows and is never summarised.

use super::Sweep;
use crate::args::CommonArgs;
use crate::plot::{Band, Figure, Panel};
use crate::results::Run;
use anyhow::{Context, Result, bail};
use dlp_core::stats::{mean_variance, quantile};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A CSV file: header and rows of text.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

fn read_csv(path: &Path) -> Result<Table> {
    let mut r = csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    let header = r.headers().with_context(|| path.display().to_string())?.iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| rec.map(|r| r.iter().map(String::from).collect()))
        .collect::<Result<_, _>>()
        .with_context(|| path.display().to_string())?;
    Ok(Table { header, rows })
}

/// Mean, sample standard deviation (n − 1; NaN for one value), min, median, max of the
/// finite values, and their count.
pub fn describe(values: &[f64]) -> (usize, [f64; 5]) {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n == 0 {
        return (0, [f64::NAN; 5]);
    }
    let (mean, var) = mean_variance(&v);
    let std = var.sqrt();
    (n, [mean, std, quantile(&v, 0.0), quantile(&v, 0.5), quantile(&v, 1.0)])
}

/// The runs of one CSV file name, with each run's configuration label (axis values).
struct Stack<'a> {
    runs: Vec<(usize, &'a [String], Table)>,
}

/// Key columns of a file stacked over runs (see the module doc for the rule).
fn key_columns(stack: &Stack, header: &[String], named: &[String]) -> Vec<bool> {
    if !named.is_empty() {
        return header.iter().map(|h| named.contains(h)).collect();
    }
    (0..header.len())
        .map(|c| {
            let all = || stack.runs.iter().flat_map(|r| r.2.rows.iter().map(move |row| row[c].as_str()));
            if !all().all(|s| s.trim().parse::<f64>().is_ok()) {
                return true;
            }
            if !all().all(|s| s.trim().parse::<i64>().is_ok()) {
                return false;
            }
            // Integers: a key if aligned across the runs of each configuration.
            let mut first: HashMap<&[String], &Table> = HashMap::new();
            stack.runs.iter().all(|(_, config, t)| {
                let f = first.entry(*config).or_insert(t);
                f.rows.len() == t.rows.len() && f.rows.iter().zip(&t.rows).all(|(a, b)| a[c] == b[c])
            })
        })
        .collect()
}

/// What the gather wrote.
#[derive(Debug)]
pub struct Gathered {
    /// The `gather/` directory.
    pub dir: PathBuf,
    /// Runs found / tasks.
    pub complete: usize,
    /// Run ids of the tasks without a finished run.
    pub missing: Vec<String>,
}

/// Gathers the finished runs of `sweep` into `<sweep-dir>/gather/` (built in `gather.tmp/`
/// and renamed, so it is replaced whole). Missing runs are listed, not fatal.
pub fn gather(sweep: &Sweep) -> Result<Gathered> {
    let axes: Vec<String> = sweep.description.axes.iter().map(|a| a.0.clone()).collect();
    let done: Vec<usize> = (0..sweep.tasks.len()).filter(|&i| sweep.run_dir(i).is_dir()).collect();
    let missing: Vec<String> =
        (0..sweep.tasks.len()).filter(|i| !done.contains(i)).map(|i| sweep.tasks[i].run_id.clone()).collect();
    if done.is_empty() {
        bail!("no finished runs to gather in {}", sweep.runs_dir.display());
    }
    let configs: Vec<Vec<String>> =
        sweep.tasks.iter().map(|t| t.config.iter().map(|c| c.1.clone()).collect()).collect();

    let (tmp, final_dir) = (sweep.dir().join("gather.tmp"), sweep.dir().join("gather"));
    let _ = std::fs::remove_dir_all(&tmp);
    let common = CommonArgs { seed: 0, quick: false, threads: None, out: Some(tmp.clone()) };
    let run = Run::start(&format!("{}-sweep", sweep.name), &common)?;

    let mut names: Vec<String> = done
        .iter()
        .flat_map(|&i| std::fs::read_dir(sweep.run_dir(i)).into_iter().flatten().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".csv"))
        .collect();
    names.sort();
    names.dedup();

    let mut files = Map::new();
    for name in &names {
        let mut stack = Stack { runs: vec![] };
        for &i in &done {
            let path = sweep.run_dir(i).join(name);
            if path.is_file() {
                stack.runs.push((i, &configs[i][..], read_csv(&path)?));
            }
        }
        let header = stack.runs[0].2.header.clone();
        if let Some((i, _, t)) = stack.runs.iter().find(|r| r.2.header != header) {
            bail!(
                "{}: columns {} differ from the other runs' {}",
                sweep.run_dir(*i).join(name).display(),
                t.header.join(","),
                header.join(",")
            );
        }
        let is_key = key_columns(&stack, &header, &sweep.description.keys);
        let stem = name.trim_end_matches(".csv");

        // The tidy table: run_id, seed, axes, then the file's own columns. A name the file
        // has too (table2's curves carry the binary's own `seed`) becomes `sweep_<name>`, so
        // that every column name is unique.
        let mut tidy_header: Vec<String> = ["run_id", "seed"]
            .into_iter()
            .map(String::from)
            .chain(axes.iter().cloned())
            .map(|n| if header.contains(&n) { format!("sweep_{n}") } else { n })
            .collect();
        tidy_header.extend(header.iter().cloned());
        let mut tidy = Vec::new();
        // Groups: (axis values, key values) → values of each value column, in first-seen order.
        let mut order: Vec<Vec<String>> = Vec::new();
        let mut groups: HashMap<Vec<String>, Vec<Vec<f64>>> = HashMap::new();
        // A file's own `seed` column names a run, it measures nothing: never summarised.
        let values: Vec<usize> = (0..header.len()).filter(|&c| !is_key[c] && header[c] != "seed").collect();
        for (i, config, table) in &stack.runs {
            for row in &table.rows {
                let mut line = vec![sweep.tasks[*i].run_id.clone(), sweep.tasks[*i].seed.to_string()];
                line.extend(config.iter().cloned());
                line.extend(row.iter().cloned());
                tidy.push(line);
                let mut key = config.to_vec();
                key.extend((0..header.len()).filter(|&c| is_key[c]).map(|c| row[c].clone()));
                let slot = groups.entry(key.clone()).or_insert_with(|| {
                    order.push(key);
                    vec![vec![]; values.len()]
                });
                for (k, &c) in values.iter().enumerate() {
                    slot[k].push(row[c].trim().parse().unwrap_or(f64::NAN));
                }
            }
        }
        run.write_csv(name, &tidy_header.join(","), &tidy)?;

        let keys: Vec<&str> = (0..header.len()).filter(|&c| is_key[c]).map(|c| header[c].as_str()).collect();
        let mut sum_header: Vec<&str> = axes.iter().map(String::as_str).collect();
        sum_header.extend(keys.iter());
        sum_header.extend(["measure", "n", "mean", "std", "min", "median", "max"]);
        let mut rows = Vec::new();
        for key in &order {
            for (k, &c) in values.iter().enumerate() {
                let (n, stats) = describe(&groups[key][k]);
                let mut line = key.clone();
                line.extend([header[c].clone(), n.to_string()]);
                line.extend(stats.iter().map(|s| s.to_string()));
                rows.push(line);
            }
        }
        run.write_csv(&format!("{stem}_summary.csv"), &sum_header.join(","), &rows)?;

        let figure = band_figure(sweep, stem, &header, &is_key, &values, &order, &groups, axes.len());
        if let Some(fig) = &figure {
            run.write_figure(stem, fig)?;
        }
        files.insert(
            name.clone(),
            json!({
                "runs": stack.runs.len(),
                "key_columns": keys,
                "value_columns": values.iter().map(|&c| &header[c]).collect::<Vec<_>>(),
                "summary": format!("{stem}_summary.csv"),
                "figure": figure.map(|_| format!("{stem}.svg")),
            }),
        );
    }

    let summary = json!({
        "schema": "dlp.sweep.gather.v1",
        "name": sweep.name,
        "sweep_id": sweep.id,
        "tasks": sweep.tasks.len(),
        "complete": done.len(),
        "missing": missing,
        "axes": axes,
        "seeds": sweep.description.seeds,
        "stats_note": "per configuration (axis values and key columns) over seeds: n finite values, mean, sample std (n-1), min, median, max",
        "files": files,
        "run_summaries": summaries(sweep, &done, &configs)?,
    });
    run.write_json("summary.json", &summary)?;
    run.write_meta(&json!({"sweep": sweep.dir(), "runs": done.len()}))?;
    let _ = std::fs::remove_dir_all(&final_dir);
    std::fs::rename(&tmp, &final_dir)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), final_dir.display()))?;
    Ok(Gathered { dir: final_dir, complete: done.len(), missing })
}

/// One figure per CSV file: a panel per value column (at most four), x = the first numeric
/// key column with more than one value, one band (mean ± sd) per configuration and other key
/// values. `None` when the file has no such x column.
#[allow(clippy::too_many_arguments)]
fn band_figure(
    sweep: &Sweep,
    stem: &str,
    header: &[String],
    is_key: &[bool],
    values: &[usize],
    order: &[Vec<String>],
    groups: &HashMap<Vec<String>, Vec<Vec<f64>>>,
    n_axes: usize,
) -> Option<Figure> {
    let keys: Vec<usize> = (0..header.len()).filter(|&c| is_key[c]).collect();
    let x_pos = (0..keys.len()).find(|&p| {
        let xs: Vec<&str> = order.iter().map(|k| k[n_axes + p].as_str()).collect();
        xs.iter().all(|x| x.trim().parse::<f64>().is_ok()) && xs.iter().any(|x| *x != xs[0])
    })?;
    let label = |key: &[String]| {
        let mut parts: Vec<String> = key[..n_axes].to_vec();
        parts.extend(key[n_axes..].iter().enumerate().filter(|(k, _)| *k != x_pos).map(|(_, v)| v.clone()));
        if parts.is_empty() { "all".to_string() } else { parts.join(" ") }
    };
    let mut labels: Vec<String> = Vec::new();
    for key in order {
        let l = label(key);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let panels = values
        .iter()
        .enumerate()
        .take(4)
        .map(|(k, &c)| {
            let bands = labels
                .iter()
                .map(|l| Band {
                    label: l.clone(),
                    points: order
                        .iter()
                        .filter(|key| label(key) == *l)
                        .map(|key| {
                            let x = key[n_axes + x_pos].trim().parse().unwrap_or(f64::NAN);
                            let (_, [mean, std, ..]) = describe(&groups[key][k]);
                            (x, mean, mean - std, mean + std)
                        })
                        .collect(),
                })
                .collect();
            Panel::Bands {
                title: header[c].clone(),
                x_label: header[keys[x_pos]].clone(),
                y_label: header[c].clone(),
                bands,
            }
        })
        .collect();
    let n = sweep.description.seeds.len();
    Some(Figure {
        caption: format!("{} sweep {}: {stem}, mean ± 1 sd over {n} seeds", sweep.name, sweep.id),
        labels,
        panels,
    })
}

/// Text fields that name an element of an array of records (a table's row), in the order
/// [`element_names`] tries them.
const NAME_FIELDS: [&str; 6] = ["dataset", "model", "column", "label", "sampler", "name"];

/// Names for the elements of an array of records, so that a gathered statistic reads
/// `rows.adult/dmala α=0.1.train_ll` rather than `rows.7.train_ll`: the text fields of
/// [`NAME_FIELDS`] that tell the elements apart, taken in that order while they still split
/// them further, joined by `/`. `None` (indices) unless every element is a record and those
/// fields name each one uniquely.
fn element_names(a: &[Value]) -> Option<Vec<String>> {
    let mut names = vec![String::new(); a.len()];
    let distinct = |names: &[String]| names.iter().collect::<std::collections::HashSet<_>>().len();
    for field in NAME_FIELDS {
        let Some(values) = a.iter().map(|v| v.get(field)?.as_str()).collect::<Option<Vec<&str>>>() else { continue };
        let longer: Vec<String> = names
            .iter()
            .zip(&values)
            .map(|(n, v)| if n.is_empty() { v.to_string() } else { format!("{n}/{v}") })
            .collect();
        if distinct(&longer) > distinct(&names) {
            names = longer;
        }
        if distinct(&names) == a.len() {
            return Some(names);
        }
    }
    None
}

/// Numeric and boolean leaves of a JSON document as `path → value` (`samplers.3.acceptance`,
/// or `rows.adult/dmala α=0.1.train_ll` for records named by [`element_names`]; `true` is 1,
/// so a claim's mean is the fraction of seeds where it held).
fn leaves(value: &Value, path: String, out: &mut Vec<(String, f64)>) {
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match value {
        Value::Number(n) => out.extend(n.as_f64().map(|x| (path, x))),
        Value::Bool(b) => out.push((path, f64::from(u8::from(*b)))),
        Value::Array(a) => {
            let names = element_names(a).unwrap_or_else(|| (0..a.len()).map(|i| i.to_string()).collect());
            a.iter().zip(names).for_each(|(v, name)| leaves(v, join(&name), out))
        }
        Value::Object(m) => m.iter().for_each(|(k, v)| leaves(v, join(k), out)),
        _ => {}
    }
}

/// The leaves of one run's `summary.json`.
type Leaves = Vec<(String, f64)>;

/// The runs' `summary.json` leaves per configuration: mean, std, min, median, max over seeds
/// (leaves present in every run of the configuration).
fn summaries(sweep: &Sweep, done: &[usize], configs: &[Vec<String>]) -> Result<Vec<Value>> {
    let mut order: Vec<&Vec<String>> = Vec::new();
    let mut by_config: HashMap<&Vec<String>, Vec<Leaves>> = HashMap::new();
    for &i in done {
        let path = sweep.run_dir(i).join("summary.json");
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let doc: Value = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
        let mut l = Vec::new();
        leaves(&doc, String::new(), &mut l);
        let slot = by_config.entry(&configs[i]).or_default();
        if slot.is_empty() {
            order.push(&configs[i]);
        }
        slot.push(l);
    }
    Ok(order
        .into_iter()
        .map(|config| {
            let runs = &by_config[config];
            let mut stats = Map::new();
            for (path, _) in &runs[0] {
                let xs: Vec<f64> = runs.iter().filter_map(|r| r.iter().find(|(p, _)| p == path).map(|l| l.1)).collect();
                if xs.len() == runs.len() {
                    let (n, [mean, std, min, median, max]) = describe(&xs);
                    stats.insert(
                        path.clone(),
                        json!({"n": n, "mean": mean, "std": std, "min": min, "median": median, "max": max}),
                    );
                }
            }
            let names = sweep.description.axes.iter().map(|a| a.0.clone());
            let config: Map<String, Value> = names.zip(config.iter().map(|v| json!(v))).collect();
            json!({"config": config, "runs": runs.len(), "stats": stats})
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_gives_the_sample_moments_and_quantiles_of_the_finite_values() {
        let (n, [mean, std, min, median, max]) = describe(&[1.0, 2.0, 4.0, f64::NAN]);
        assert_eq!(n, 3);
        assert!((mean - 7.0 / 3.0).abs() < 1e-15);
        // Σ(x − 7/3)² = 16/9 + 1/9 + 25/9 = 42/9, over n − 1 = 2: 7/3.
        assert!((std - (7.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert_eq!((min, median, max), (1.0, 2.0, 4.0));
        assert!(describe(&[3.0]).1[1].is_nan());
        assert_eq!(describe(&[]).0, 0);
    }

    use crate::sweep::spec::Description;

    /// A sweep over `--k a,b` × seeds 0..3 whose run directories hold hand-written CSV files.
    fn fake_sweep(dir: &Path) -> Sweep {
        let d = Description {
            seeds: vec![0, 1, 2],
            axes: vec![("k".into(), vec!["a".into(), "b".into()])],
            ..Default::default()
        };
        Sweep::new("toy", Path::new("/bin/true"), dir, d).unwrap()
    }

    #[test]
    fn gather_stacks_the_runs_and_gives_exact_per_configuration_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let sweep = fake_sweep(dir.path());
        // Columns: a text key, a step counter equal across seeds (a key), a count that varies
        // with the seed (a value although integer), a float value. Task 5 (k=b, seed 2) never ran.
        for (i, t) in sweep.tasks.iter().enumerate().take(5) {
            let s = t.seed as f64;
            let run = sweep.run_dir(i);
            std::fs::create_dir_all(&run).unwrap();
            let csv = format!("name,step,count,value\nx,0,{},{}\nx,10,{},{}\n", t.seed, 0.5 * s, 7, 1.0 + s * s);
            std::fs::write(run.join("out.csv"), csv).unwrap();
            std::fs::write(run.join("summary.json"), format!("{{\"v\": {s}, \"ok\": {}}}", t.seed == 0)).unwrap();
        }
        let g = gather(&sweep).unwrap();
        assert_eq!((g.complete, g.missing.len()), (5, 1));
        assert_eq!(g.missing[0], sweep.tasks[5].run_id);
        let tidy = std::fs::read_to_string(g.dir.join("out.csv")).unwrap();
        assert_eq!(tidy.lines().count(), 1 + 5 * 2);
        assert!(
            tidy.starts_with(&format!("run_id,seed,k,name,step,count,value\n{},0,a,x,0,0,0\n", sweep.tasks[0].run_id))
        );
        let summary = std::fs::read_to_string(g.dir.join("out_summary.csv")).unwrap();
        let lines: Vec<&str> = summary.lines().collect();
        assert_eq!(lines[0], "k,name,step,measure,n,mean,std,min,median,max");
        // k=a, step 10, value: seeds 0, 1, 2 give 1, 2, 5: mean 8/3, sd √((25 + 4 + 49)/9/2) = √(13/3),
        // median 2.
        let row: Vec<&str> = lines.iter().find(|l| l.starts_with("a,x,10,value,")).unwrap().split(',').collect();
        let num = |k: usize| row[k].parse::<f64>().unwrap();
        assert_eq!(row[4], "3");
        assert!((num(5) - 8.0 / 3.0).abs() < 1e-12 && (num(6) - (13.0f64 / 3.0).sqrt()).abs() < 1e-12, "{row:?}");
        assert_eq!((num(7), num(8), num(9)), (1.0, 2.0, 5.0));
        // k=b has seeds 0 and 1 only; `count` at step 0 is the seed: mean 0.5, sd √½.
        let row: Vec<&str> = lines.iter().find(|l| l.starts_with("b,x,0,count,")).unwrap().split(',').collect();
        assert_eq!(row[4], "2");
        assert!((row[5].parse::<f64>().unwrap() - 0.5).abs() < 1e-12);
        assert!((row[6].parse::<f64>().unwrap() - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(lines.len(), 1 + 2 * 2 * 2, "2 settings × 2 steps × 2 value columns");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(g.dir.join("summary.json")).unwrap()).unwrap();
        assert_eq!(doc["files"]["out.csv"]["key_columns"], json!(["name", "step"]));
        assert_eq!(doc["files"]["out.csv"]["value_columns"], json!(["count", "value"]));
        let a = &doc["run_summaries"][0];
        assert_eq!((a["config"]["k"].as_str(), a["runs"].as_u64()), (Some("a"), Some(3)));
        assert!((a["stats"]["ok"]["mean"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert!(g.dir.join("out.svg").is_file() && !sweep.dir().join("gather.tmp").exists());
    }

    #[test]
    fn named_keys_override_the_detection_and_mismatched_columns_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut sweep = fake_sweep(dir.path());
        sweep.description.keys = vec!["step".into()];
        for i in 0..2 {
            std::fs::create_dir_all(sweep.run_dir(i)).unwrap();
            std::fs::write(sweep.run_dir(i).join("out.csv"), "step,value\n0,1.5\n").unwrap();
        }
        gather(&sweep).unwrap();
        let summary = std::fs::read_to_string(sweep.dir().join("gather/out_summary.csv")).unwrap();
        assert!(
            summary.starts_with("k,step,measure,n,mean,std,min,median,max\na,0,value,2,1.5,0,1.5,1.5,1.5\n"),
            "{summary}"
        );
        std::fs::write(sweep.run_dir(1).join("out.csv"), "step,other\n0,1.5\n").unwrap();
        let e = gather(&sweep).unwrap_err().to_string();
        assert!(e.contains("columns step,other differ from the other runs' step,value"), "{e}");
    }

    #[test]
    fn a_files_own_seed_column_keeps_its_name_and_is_not_summarised() {
        // table2/table4 write curves with the binary's own `seed` column (seed, seed + 1, …
        // of its --seeds): the gathered table must not have two columns named `seed`, and
        // the values of the runs' seeds pool into one statistic per step.
        let dir = tempfile::tempdir().unwrap();
        let sweep = fake_sweep(dir.path());
        for (i, t) in sweep.tasks.iter().enumerate().take(3) {
            std::fs::create_dir_all(sweep.run_dir(i)).unwrap();
            let (s0, s1) = (t.seed, t.seed + 1);
            let csv = format!("seed,step,value\n{s0},0,{}\n{s1},0,{}\n", s0 as f64, s1 as f64);
            std::fs::write(sweep.run_dir(i).join("out.csv"), csv).unwrap();
        }
        let g = gather(&sweep).unwrap();
        let tidy = std::fs::read_to_string(g.dir.join("out.csv")).unwrap();
        assert!(tidy.starts_with("run_id,sweep_seed,k,seed,step,value\n"), "{tidy}");
        let summary = std::fs::read_to_string(g.dir.join("out_summary.csv")).unwrap();
        // k = a: tasks 0, 1, 2 (seeds 0, 1, 2) wrote values 0, 1 | 1, 2 | 2, 3: n 6, mean 1.5.
        assert_eq!(
            summary.lines().collect::<Vec<_>>(),
            ["k,step,measure,n,mean,std,min,median,max", &format!("a,0,value,6,1.5,{},0,1.5,3", (5.5f64 / 5.0).sqrt()),]
        );
    }

    #[test]
    fn json_leaves_are_numbers_and_booleans_with_dotted_paths() {
        let doc = json!({"a": 1, "b": [{"c": 2.5, "d": "text"}, true], "e": null});
        let mut out = Vec::new();
        leaves(&doc, String::new(), &mut out);
        assert_eq!(out, [("a".to_string(), 1.0), ("b.0.c".to_string(), 2.5), ("b.1".to_string(), 1.0)]);
        // Rows of a table are named by the text fields that tell them apart: the column alone
        // for one data set, data set and column for two; indices when nothing names them all.
        let row = |d: &str, c: &str, x: f64| json!({"dataset": d, "column": c, "sampler": "dmala", "ll": x});
        let one = json!({"rows": [row("adult", "gwg", 1.0), row("adult", "dmala α=0.1", 2.0)]});
        let two = json!({"rows": [row("adult", "gwg", 1.0), row("adult", "dula", 1.5), row("compas", "gwg", 2.0)]});
        let none = json!({"rows": [row("adult", "gwg", 1.0), row("adult", "gwg", 2.0), json!({"ll": 3.0})]});
        let paths = |doc: &Value| {
            let mut out = Vec::new();
            leaves(doc, String::new(), &mut out);
            out.into_iter().map(|l| l.0).collect::<Vec<_>>()
        };
        assert_eq!(paths(&one), ["rows.gwg.ll", "rows.dmala α=0.1.ll"]);
        assert_eq!(paths(&two), ["rows.adult/gwg.ll", "rows.adult/dula.ll", "rows.compas/gwg.ll"]);
        assert_eq!(paths(&none), ["rows.0.ll", "rows.1.ll", "rows.2.ll"]);
    }
}
