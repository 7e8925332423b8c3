//! The null distribution of the Stein tests as the front ends run them: a bootstrap on the
//! statistic's matrix, or the model null (data sets drawn from the model). `dlp gof` and the
//! Python package's `dlp_mcmc.gof` both compute their p-values here, so they agree.

use dlp_core::Target;

/// The null distribution of `dlp gof --test kdsd|gfksd` and of the Python package's
/// `dlp_mcmc.gof.kdsd`/`gfksd`: a bootstrap on the statistic's matrix, or with `model` the model null
/// (`--bootstrap model`: `reps` data sets of n draws from the model,
/// [`crate::model_replicates`]). Shared by `dlp gof` and the Python package.
pub struct GofNull {
    /// The bootstrap; with `model`, the statistic's default one (its single replicate unused).
    pub bootstrap: crate::Bootstrap,
    /// Replicates B (bootstrap draws or model data sets).
    pub reps: usize,
    /// Seed of every stream.
    pub seed: u64,
    /// `Some` for the model null: exact or Gibbs draws.
    pub model: Option<crate::ModelDraws>,
}

impl GofNull {
    /// The null the test itself runs: the bootstrap, or one replicate of it for the model null.
    pub fn test(&self, statistic: crate::Statistic) -> crate::NullTest {
        let reps = if self.model.is_some() { 1 } else { self.reps };
        crate::NullTest { statistic, bootstrap: self.bootstrap, reps, seed: self.seed }
    }

    /// The p-value of the `observed` test: the bootstrap's, or against the model null's
    /// replicates of `stat` (the statistic of a data set, given a seed for what it draws
    /// itself). Records the method in `doc["bootstrap"]` and warns when the draws are not exact.
    pub fn p_value<F>(
        &self,
        target: &dyn Target,
        n: usize,
        observed: &crate::bootstrap::NullOutcome,
        doc: &mut serde_json::Value,
        warnings: &mut Vec<String>,
        stat: F,
    ) -> Result<f64, crate::GofError>
    where
        F: Fn(&[u32], u64) -> Result<f64, crate::GofError> + Sync,
    {
        let Some(draws) = self.model else {
            doc["bootstrap"] = serde_json::json!({"method": self.bootstrap.name(), "reps": self.reps});
            return Ok(observed.p_value);
        };
        let burnin = match draws {
            crate::ModelDraws::Exact => serde_json::Value::Null,
            crate::ModelDraws::Gibbs { burnin } => {
                warnings.push(format!(
                    "model null drawn by {burnin} single-site Gibbs sweeps per chain (the space is too large to draw exactly); its level is exact only with exact draws"
                ));
                serde_json::json!(burnin)
            }
        };
        doc["bootstrap"] =
            serde_json::json!({"method": "model", "reps": self.reps, "sampler": draws.name(), "burnin": burnin});
        let replicates = crate::model_replicates(target, n, self.reps, self.seed, draws, stat)?;
        Ok(crate::p_value(observed.statistic, &replicates))
    }
}
