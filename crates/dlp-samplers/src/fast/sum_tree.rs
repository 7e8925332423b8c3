//! Sum trees over non-negative weights, one per chain in one buffer: the exact structure
//! behind the O(log n) one-move proposals of GWG and LB on sparse models
//! ([`super::gwg_ising`], [`super::gwg_potts`]) and the O(d + R log d) no-replacement paths of
//! PAS and `alb` ([`crate::pas`]). Written here because the proposals need a
//! draw that consumes one uniform exactly as the generic scan does (u·Z, first cumulative sum
//! above it), per-chain storage without allocation, and a normaliser that is a function of the
//! leaves (every internal node is recomputed as the sum of its children, so no drift) — a
//! few dozen lines that no crate offers in this form.

/// `n` binary sum trees of `leaves` leaves each (padded to a power of two).
#[derive(Clone, Debug)]
pub struct SumTrees {
    /// Leaves start at `p`; tree j occupies `2p` nodes from `j·2p`, node 1 the root.
    p: usize,
    leaves: usize,
    nodes: Vec<f64>,
}

impl SumTrees {
    /// `n` trees of `leaves` zero weights.
    pub fn new(n: usize, leaves: usize) -> Self {
        let p = leaves.max(1).next_power_of_two();
        SumTrees { p, leaves, nodes: vec![0.0; n * 2 * p] }
    }

    fn tree(&self, j: usize) -> &[f64] {
        &self.nodes[j * 2 * self.p..(j + 1) * 2 * self.p]
    }

    /// Writes leaf `i` of tree `j` without updating its ancestors (call
    /// [`SumTrees::rebuild`] after filling a whole tree).
    pub fn put(&mut self, j: usize, i: usize, w: f64) {
        self.nodes[j * 2 * self.p + self.p + i] = w;
    }

    /// Sets tree `j`'s leaves to `w` (at most `leaves` entries; the rest stay as they are)
    /// and recomputes its internal nodes.
    pub fn fill(&mut self, j: usize, w: &[f64]) {
        let start = j * 2 * self.p + self.p;
        self.nodes[start..start + w.len()].copy_from_slice(w);
        self.rebuild(j);
    }

    /// Recomputes every internal node of tree `j` from its leaves.
    pub fn rebuild(&mut self, j: usize) {
        let t = &mut self.nodes[j * 2 * self.p..(j + 1) * 2 * self.p];
        for node in (1..self.p).rev() {
            t[node] = t[2 * node] + t[2 * node + 1];
        }
    }

    /// Sets leaf `i` of tree `j` to `w` and recomputes its ancestors.
    pub fn set(&mut self, j: usize, i: usize, w: f64) {
        let t = &mut self.nodes[j * 2 * self.p..(j + 1) * 2 * self.p];
        let mut node = self.p + i;
        t[node] = w;
        while node > 1 {
            node /= 2;
            t[node] = t[2 * node] + t[2 * node + 1];
        }
    }

    /// Leaf `i` of tree `j`.
    pub fn get(&self, j: usize, i: usize) -> f64 {
        self.tree(j)[self.p + i]
    }

    /// The sum of tree `j`'s leaves.
    pub fn total(&self, j: usize) -> f64 {
        self.tree(j)[1]
    }

    /// The leaf where the cumulative sum first exceeds `u · total` (u uniform on [0, 1)), by
    /// one descent; when rounding walks past the last positive leaf, that leaf (as the
    /// generic scan does), and 0 if every weight is 0.
    pub fn draw(&self, j: usize, u: f64) -> usize {
        let t = self.tree(j);
        let mut r = u * t[1];
        let mut node = 1;
        while node < self.p {
            let left = t[2 * node];
            if r < left {
                node *= 2;
            } else {
                r -= left;
                node = 2 * node + 1;
            }
        }
        let i = node - self.p;
        if i < self.leaves && t[node] > 0.0 {
            return i;
        }
        (0..self.leaves).rev().find(|&i| t[self.p + i] > 0.0).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_the_cumulative_sums_and_updates_keep_the_total() {
        let w = [0.5, 0.0, 2.0, 1.5, 0.25];
        let mut t = SumTrees::new(2, w.len());
        for (i, &v) in w.iter().enumerate() {
            t.put(1, i, v);
        }
        t.rebuild(1);
        assert_eq!(t.total(1), 4.25);
        assert_eq!(t.total(0), 0.0);
        // u·Z against the cumulative sums 0.5, 0.5, 2.5, 4.0, 4.25.
        for (u, want) in [(0.0, 0), (0.1, 0), (0.2, 2), (0.58, 2), (0.6, 3), (0.95, 4), (0.999_999, 4)] {
            assert_eq!(t.draw(1, u), want, "u = {u}");
        }
        t.set(1, 2, 0.0);
        assert_eq!(t.total(1), 2.25);
        assert_eq!(t.get(1, 2), 0.0);
        assert_eq!(t.draw(1, 0.3), 3);
        // A weightless tree draws 0; rounding past the end takes the last positive leaf.
        assert_eq!(t.draw(0, 0.5), 0);
        assert_eq!(t.draw(1, 1.0), 4);
        // `fill` replaces the leaves it is given and the totals with them.
        t.fill(0, &[1.0, 3.0]);
        assert_eq!((t.total(0), t.draw(0, 0.3), t.get(0, 2)), (4.0, 1, 0.0));
        assert_eq!(t.total(1), 2.25);
    }
}
