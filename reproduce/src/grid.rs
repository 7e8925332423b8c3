//! Grids of tuning values (step sizes, α) and whether the value a run chose on one was
//! bracketed by it: a choice at the grid's largest or smallest value says the criterion may
//! still improve beyond it, which a user should hear about before trusting the comparison.

/// `n` log-spaced values in [lo, hi] (`[hi]` when n = 1).
pub fn log_grid(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![hi];
    }
    (0..n).map(|i| (lo.ln() + (hi.ln() - lo.ln()) * i as f64 / (n - 1) as f64).exp()).collect()
}

/// Whether `value` is the largest or smallest of a `grid` of two or more: the criterion may
/// still be improving past that edge, so the grid did not bracket its optimum.
pub fn at_edge(value: f64, grid: &[f64]) -> bool {
    let (lo, hi) = grid.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &g| (l.min(g), h.max(g)));
    grid.len() > 1 && (value == lo || value == hi)
}

/// [`at_edge`], and when it is, one warning line on stderr naming the run (`who`), the
/// chosen `what` and the `flags` that set the grid, so the user can widen it.
pub fn warn_if_at_edge(who: &str, what: &str, value: f64, grid: &[f64], flags: &str) -> bool {
    let edge = at_edge(value, grid);
    if edge {
        eprintln!(
            "{who}: warning: {what} = {value:.2e} is at the edge of the grid ({flags}), where the selection \
             criterion may still be improving; a wider grid may choose another value"
        );
    }
    edge
}

#[cfg(test)]
mod tests {
    use super::{at_edge, log_grid};

    #[test]
    fn a_value_at_either_end_of_the_grid_is_at_its_edge() {
        let grid = [0.3, 0.1, 10.0, 1.0];
        assert!(at_edge(10.0, &grid) && at_edge(0.1, &grid));
        assert!(!at_edge(1.0, &grid) && !at_edge(0.3, &grid));
        // One value is no bracket to judge.
        assert!(!at_edge(1.0, &[1.0]));
        // A log grid's computed ends count as its ends, whatever their rounding.
        let g = log_grid(1e-6, 1e-4, 9);
        assert!(at_edge(g[0], &g) && at_edge(g[8], &g) && !at_edge(g[4], &g));
    }

    #[test]
    fn a_log_grid_has_equal_ratios_between_its_ends() {
        let g = log_grid(1e-6, 1e-4, 5);
        assert!((g[0] / 1e-6 - 1.0).abs() < 1e-12 && (g[4] / 1e-4 - 1.0).abs() < 1e-12);
        for w in g.windows(2) {
            assert!((w[1] / w[0] / 10f64.sqrt() - 1.0).abs() < 1e-12);
        }
        assert_eq!(log_grid(1e-6, 1e-4, 1), vec![1e-4]);
    }
}
