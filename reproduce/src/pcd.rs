//! Fig. 5 (PCD learning of a lattice Ising model's couplings, spec `reproduction.md` §3.4): the
//! learning runs over (sampler, K) and the tables and figure made from their records.

use crate::plot::{Figure, Panel, Series};
use crate::{Run, SamplerSpec};
use anyhow::Result;
use dlp_learn::pcd::{PcdConfig, PcdRecord, learn_pcd};
use serde_json::Value;

/// The training problem shared by every run: data rows of `d` spins (bits), the true
/// couplings and the PCD settings besides K.
pub struct Problem<'a> {
    /// Training samples, `n × d` bits.
    pub data: &'a [u32],
    /// Sites.
    pub d: usize,
    /// The data model's couplings, d × d.
    pub j_true: &'a [f64],
    /// PCD settings; `k` is replaced per run.
    pub base: PcdConfig,
    /// What determines the data besides the seed (its generator's settings), for the runs'
    /// cells: `--resume` reads a finished (sampler, K) run back only when this, the PCD
    /// settings, the seed and the sampler match.
    pub data_identity: Value,
}

/// One learning run: the sampler, its steps per iteration K and the records.
pub struct LearnRun {
    /// The sampler.
    pub sampler: SamplerSpec,
    /// Sampler steps per iteration.
    pub k: usize,
    /// RMSE records, the initial one first.
    pub records: Vec<PcdRecord>,
}

impl LearnRun {
    /// The last record (there is always the initial one).
    pub fn last(&self) -> &PcdRecord {
        self.records.last().expect("at least the initial record")
    }
}

/// Runs PCD with `spec` at K = `k` on `problem` and appends it to `runs`, unless that
/// (sampler, K) is there already (panels a/b and c share runs). Each run is a cell of `run`
/// (`cells/<sampler>_<step>_k<K>.json`), so `--resume` continues a long run from the
/// (sampler, K) runs it finished.
pub fn learn(run: &Run, problem: &Problem<'_>, spec: &SamplerSpec, k: usize, runs: &mut Vec<LearnRun>) -> Result<()> {
    if runs.iter().any(|r| &r.sampler == spec && r.k == k) {
        return Ok(());
    }
    let sampler = spec.build()?;
    let cfg = PcdConfig { k, ..problem.base.clone() };
    let identity = serde_json::json!({"data": problem.data_identity, "pcd": cfg, "seed": run.seed(),
                                      "sampler": spec.name, "step_size": spec.step_size});
    let key = format!("{}_{}_k{k}", spec.name, spec.step_size.map_or("default".into(), |a| a.to_string()));
    let records = run.cell(&key, &identity, || {
        let bar = run.progress(cfg.iters as u64, &format!("{} K={k}", spec.name));
        let (records, _) =
            learn_pcd(sampler.as_ref(), problem.data, problem.d, problem.j_true, &cfg, run.seed(), |r| {
                bar.set_position(r.iter as u64)
            })?;
        bar.finish_and_clear();
        Ok(records)
    })?;
    let r = LearnRun { sampler: spec.clone(), k, records };
    let last = r.last();
    println!(
        "{:>12} K={k:<4} final log RMSE {:.3} after {} iterations, {:.1}s ({:.1}s sampling), accept {:.3}",
        spec.name,
        last.rmse.ln(),
        last.iter,
        last.seconds,
        last.sampler_seconds,
        last.accept
    );
    runs.push(r);
    Ok(())
}

/// Rows of `curves.csv` (`sampler,step_size,k,iter,seconds,sampler_seconds,rmse,log_rmse,accept`).
pub fn curve_rows(runs: &[LearnRun]) -> Vec<Vec<String>> {
    runs.iter()
        .flat_map(|r| {
            r.records.iter().map(|p| {
                vec![
                    r.sampler.name.clone(),
                    format!("{}", r.sampler.step_size.unwrap_or(f64::NAN)),
                    r.k.to_string(),
                    p.iter.to_string(),
                    format!("{:.4}", p.seconds),
                    format!("{:.4}", p.sampler_seconds),
                    format!("{:.8e}", p.rmse),
                    format!("{:.6}", p.rmse.ln()),
                    format!("{:.4}", p.accept),
                ]
            })
        })
        .collect()
}

/// Panel c's data: rows of `final_vs_k.csv` (`sampler,step_size,k,final_log_rmse,seconds`)
/// and one series per sampler of `k_samplers`, final log RMSE against K over `ks`.
pub fn final_vs_k(runs: &[LearnRun], k_samplers: &[SamplerSpec], ks: &[usize]) -> (Vec<Vec<String>>, Vec<Series>) {
    let mut rows = Vec::new();
    let mut series = Vec::new();
    for spec in k_samplers {
        let mut pts = Vec::new();
        for &k in ks {
            if let Some(r) = runs.iter().find(|r| &r.sampler == spec && r.k == k) {
                let last = r.last();
                pts.push((k as f64, last.rmse.ln()));
                rows.push(vec![
                    spec.name.clone(),
                    format!("{}", spec.step_size.unwrap_or(f64::NAN)),
                    k.to_string(),
                    format!("{:.6}", last.rmse.ln()),
                    format!("{:.4}", last.seconds),
                ]);
            }
        }
        series.push(Series { label: spec.legend(), points: pts });
    }
    (rows, series)
}

/// Fig. 5: log RMSE of J against iterations (a) and training seconds (b) for `samplers` at K =
/// `k`, and `panel_c` (final log RMSE against K) when given.
pub fn fig5_figure(
    runs: &[LearnRun],
    samplers: &[SamplerSpec],
    k_samplers: &[SamplerSpec],
    k: usize,
    panel_c: Option<(usize, Vec<Series>)>,
    caption: String,
) -> Figure {
    let main: Vec<&LearnRun> = runs.iter().filter(|r| r.k == k && samplers.contains(&r.sampler)).collect();
    let series = |x: fn(&PcdRecord) -> f64| -> Vec<Series> {
        main.iter()
            .map(|r| Series {
                label: r.sampler.legend(),
                points: r.records.iter().map(|p| (x(p), p.rmse.ln())).collect(),
            })
            .collect()
    };
    let mut labels: Vec<String> = samplers.iter().map(SamplerSpec::legend).collect();
    for l in k_samplers.iter().map(SamplerSpec::legend) {
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let y = "log RMSE of J";
    let mut panels = vec![
        Panel::lines(format!("(a) K = {k}"), "iteration", y, series(|p| p.iter as f64), vec![]),
        Panel::lines(format!("(b) K = {k}"), "training seconds", y, series(|p| p.seconds), vec![]),
    ];
    if let Some((iters, c_series)) = panel_c {
        let title = format!("(c) after {iters} iterations");
        panels.push(Panel::lines(title, "sampler steps per iteration K", "final log RMSE of J", c_series, vec![]));
    }
    Figure { caption, labels, panels }
}
