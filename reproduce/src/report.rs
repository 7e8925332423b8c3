//! Pieces of the `summary.json` files: five-number summaries and the list of paper claims
//! checked against a run.

use dlp_core::stats::quantile;
use serde::Serialize;
use serde_json::{Value, json};

/// Minimum, first quartile, median, third quartile and maximum of `values`.
pub fn five_numbers(values: &[f64]) -> [f64; 5] {
    [0.0, 0.25, 0.5, 0.75, 1.0].map(|p| quantile(values, p))
}

/// [`five_numbers`] as `{"min", "q1", "median", "q3", "max"}`.
pub fn five_json(values: &[f64]) -> Value {
    let [min, q1, median, q3, max] = five_numbers(values);
    json!({"min": min, "q1": q1, "median": median, "q3": q3, "max": max})
}

/// The `paper_claims` / `claims` list of a summary: each claim with its source, whether our
/// run agrees (`null` when it cannot tell) and our numbers.
#[derive(Default)]
pub struct Claims(Vec<Value>);

impl Claims {
    /// Adds one claim.
    pub fn add(&mut self, claim: &str, source: &str, holds: Option<bool>, ours: impl Serialize) {
        self.0.push(json!({"claim": claim, "source": source, "holds": holds, "ours": ours}));
    }

    /// The list, in the order added.
    pub fn into_vec(self) -> Vec<Value> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_numbers_are_named_quantiles() {
        let v = [3.0, 1.0, 2.0];
        assert_eq!(five_numbers(&v), [1.0, 1.5, 2.0, 2.5, 3.0]);
        assert_eq!(five_json(&v)["median"], 2.0);
    }

    #[test]
    fn claims_keep_their_order_and_fields() {
        let mut c = Claims::default();
        c.add("a", "paper", Some(true), "1.0");
        c.add("b", "spec", None, 2.0);
        let v = c.into_vec();
        assert_eq!(
            (v[0]["claim"].as_str(), v[1]["holds"].is_null(), v[1]["ours"].as_f64()),
            (Some("a"), true, Some(2.0))
        );
    }
}
