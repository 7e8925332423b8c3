//! Ergodicity of a transition matrix: the communicating classes of its support graph
//! (x → y when P(x, y) > 0), which of them are closed, their periods, the stationary law of
//! each closed class and where a chain started uniformly at random ends up.
//!
//! Why this sits beside πP = π: invariance does not make a law *the* law of a chain. A
//! π-invariant kernel with two closed classes (`pas-2` on bits keeps the parity of the number
//! of ones) has every mixture of its class laws as a stationary law, and its samples depend on
//! the start; a periodic kernel has a unique law but does not converge to it. The exact suite
//! and `dlp exact` therefore report the class structure first and solve for a law only per
//! closed class, where the solve ([`crate::gth::stationary_gth`] on an irreducible block) never
//! divides by zero.
//!
//! The classes and periods are found on the dense matrix directly (Tarjan's algorithm with an
//! explicit stack, one scan of each row; periods from breadth-first levels, Denardo 1977): a
//! graph crate would first need the support as an edge list, up to n² = 16.7 million edges
//! at the 2¹² states of the largest matrix built here.

use crate::ExactError;
use crate::gth::stationary_gth;
use dlp_core::Space;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// The class structure of a transition matrix's support graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Classes {
    /// The closed (recurrent) classes, each as sorted state indices; ordered by their
    /// smallest state.
    pub closed: Vec<Vec<usize>>,
    /// The period of each closed class (1: aperiodic).
    pub periods: Vec<usize>,
    /// States in no closed class (transient), sorted.
    pub transient: Vec<usize>,
}

impl Classes {
    /// One closed class and no transient state.
    pub fn irreducible(&self) -> bool {
        self.closed.len() == 1 && self.transient.is_empty()
    }

    /// Exactly one closed class: the stationary law is unique (zero on transient states).
    pub fn unique_law(&self) -> bool {
        self.closed.len() == 1
    }

    /// Every closed class has period 1.
    pub fn aperiodic(&self) -> bool {
        self.periods.iter().all(|&p| p == 1)
    }

    /// Unique law and aperiodic: the chain converges to one law from any start.
    pub fn ergodic(&self) -> bool {
        self.unique_law() && self.aperiodic()
    }
}

/// The communicating classes of `p`'s support graph (entries > 0), the closed ones with
/// their periods, and the transient states.
pub fn classes(p: &DMatrix<f64>) -> Classes {
    let n = p.nrows();
    assert_eq!(n, p.ncols(), "transition matrix must be square");
    let comp = strongly_connected(p);
    let n_comp = comp.iter().map(|&c| c + 1).max().unwrap_or(0);
    // A class is closed when no edge leaves it.
    let mut open = vec![false; n_comp];
    for v in 0..n {
        if (0..n).any(|w| p[(v, w)] > 0.0 && comp[w] != comp[v]) {
            open[comp[v]] = true;
        }
    }
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n_comp];
    for (v, &c) in comp.iter().enumerate() {
        members[c].push(v);
    }
    let mut closed: Vec<Vec<usize>> = Vec::new();
    let mut transient = Vec::new();
    for (c, states) in members.into_iter().enumerate() {
        if open[c] {
            transient.extend(states);
        } else {
            closed.push(states);
        }
    }
    closed.sort_by_key(|s| s[0]);
    transient.sort_unstable();
    let periods = closed.iter().map(|c| period(p, c, &comp)).collect();
    Classes { closed, periods, transient }
}

/// Strongly connected component of every state (Tarjan 1972), iteratively: `cursor[v]` is the
/// next column of row v to scan, so each row is read once in all.
fn strongly_connected(p: &DMatrix<f64>) -> Vec<usize> {
    let n = p.nrows();
    let mut t = Tarjan {
        index: vec![NONE; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        call: Vec::new(),
        counter: 0,
    };
    let (mut comp, mut cursor, mut n_comp) = (vec![NONE; n], vec![0; n], 0);
    for root in 0..n {
        if t.index[root] != NONE {
            continue;
        }
        t.visit(root);
        while let Some(&v) = t.call.last() {
            let mut descended = false;
            while cursor[v] < n {
                let w = cursor[v];
                cursor[v] += 1;
                if p[(v, w)] <= 0.0 {
                    continue;
                }
                if t.index[w] == NONE {
                    t.visit(w);
                    descended = true;
                    break;
                } else if t.on_stack[w] {
                    t.low[v] = t.low[v].min(t.index[w]);
                }
            }
            if descended {
                continue;
            }
            t.call.pop();
            if let Some(&u) = t.call.last() {
                t.low[u] = t.low[u].min(t.low[v]);
            }
            if t.low[v] == t.index[v] {
                while let Some(w) = t.stack.pop() {
                    t.on_stack[w] = false;
                    comp[w] = n_comp;
                    if w == v {
                        break;
                    }
                }
                n_comp += 1;
            }
        }
    }
    comp
}

/// Not yet visited.
const NONE: usize = usize::MAX;

/// Tarjan's search state: discovery index, low link, the component stack and the explicit
/// call stack.
struct Tarjan {
    index: Vec<usize>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    call: Vec<usize>,
    counter: usize,
}

impl Tarjan {
    /// Discovers state `v`: numbers it and puts it on both stacks.
    fn visit(&mut self, v: usize) {
        self.index[v] = self.counter;
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        self.call.push(v);
    }
}

/// The period of the closed class `class`: the gcd of level(u) + 1 − level(v) over the
/// class's edges u → v, with levels from a breadth-first search inside the class.
fn period(p: &DMatrix<f64>, class: &[usize], comp: &[usize]) -> usize {
    let n = p.nrows();
    let c = comp[class[0]];
    let mut level = vec![usize::MAX; n];
    let mut queue = std::collections::VecDeque::from([class[0]]);
    level[class[0]] = 0;
    let mut g = 0usize;
    while let Some(u) = queue.pop_front() {
        for v in 0..n {
            if p[(u, v)] <= 0.0 || comp[v] != c {
                continue;
            }
            if level[v] == usize::MAX {
                level[v] = level[u] + 1;
                queue.push_back(v);
            } else {
                g = gcd(g, (level[u] + 1).abs_diff(level[v]));
            }
        }
    }
    // A closed class has a cycle (its rows sum to 1 inside it), so g ≥ 1 already.
    g.max(1)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The stationary law of each closed class of `p` (over that class's states, in the order of
/// [`Classes::closed`]), by GTH on the class's block: the block of a closed class is itself a
/// stochastic, irreducible matrix, so GTH never meets a zero pivot.
pub fn class_laws(p: &DMatrix<f64>, classes: &Classes) -> Result<Vec<Vec<f64>>, ExactError> {
    classes.closed.iter().map(|c| stationary_gth(&DMatrix::from_fn(c.len(), c.len(), |i, j| p[(c[i], c[j])]))).collect()
}

/// For every state, the probability that the chain started there ends in each closed class
/// (`n × k`, row-major): 1 for the state's own class; for transient states the absorption
/// probabilities h = (I − Q)⁻¹ R 1_c (Q: transient block, R: transient → class c). `None`
/// when that system is numerically singular (a transient set it practically never leaves).
pub fn absorption(p: &DMatrix<f64>, classes: &Classes) -> Option<Vec<f64>> {
    let n = p.nrows();
    let k = classes.closed.len();
    let mut h = vec![0.0; n * k];
    for (c, states) in classes.closed.iter().enumerate() {
        for &s in states {
            h[s * k + c] = 1.0;
        }
    }
    let t = &classes.transient;
    if t.is_empty() {
        return Some(h);
    }
    let a = DMatrix::from_fn(t.len(), t.len(), |i, j| if i == j { 1.0 } else { 0.0 } - p[(t[i], t[j])]);
    let b = DMatrix::from_fn(t.len(), k, |i, c| classes.closed[c].iter().map(|&s| p[(t[i], s)]).sum::<f64>());
    let sol = a.lu().solve(&b)?;
    if sol.iter().any(|v| !v.is_finite()) {
        return None;
    }
    for (i, &s) in t.iter().enumerate() {
        for c in 0..k {
            h[s * k + c] = sol[(i, c)].clamp(0.0, 1.0);
        }
    }
    Some(h)
}

/// One closed class as `dlp exact` reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedClass {
    /// Number of states in the class.
    pub size: usize,
    /// Its period (1: aperiodic).
    pub period: usize,
    /// π(class): the target's mass on the class.
    pub target_mass: f64,
    /// The probability that a chain started uniformly at random over all states ends in this
    /// class (`dlp sample`'s default start); `None` if the absorption solve was singular.
    pub uniform_start_mass: Option<f64>,
    /// The class's states (indices into the report's `states`).
    pub states: Vec<usize>,
    /// The chain's stationary law on the class, over `states`.
    pub stationary: Vec<f64>,
    /// Total variation between `stationary` and the target conditioned on the class,
    /// π(·)/π(class) (`None` when π(class) = 0). Zero for an exact sampler.
    pub total_variation_to_conditioned_target: Option<f64>,
}

/// The ergodicity part of `dlp exact`'s report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ergodicity {
    /// One line: "irreducible and aperiodic", "reducible: 2 closed classes (parity)", …
    pub verdict: String,
    /// One closed class and no transient state.
    pub irreducible: bool,
    /// Every closed class has period 1.
    pub aperiodic: bool,
    /// Exactly one closed class: the stationary law is unique.
    pub unique_stationary_law: bool,
    /// Number of transient states.
    pub transient_states: usize,
    /// The closed classes.
    pub closed_classes: Vec<ClosedClass>,
}

/// Whether the closed classes are the two parity classes of the number of ones (binary and
/// spin spaces only, where the state index's bits are the coordinates).
fn parity_classes(space: &Space, classes: &Classes) -> bool {
    space.is_binary_like()
        && classes.closed.len() == 2
        && classes.transient.is_empty()
        && classes.closed.iter().all(|c| c.iter().all(|&s| s.count_ones() % 2 == c[0].count_ones() % 2))
}

/// The verdict line of a class structure on `space`.
pub fn verdict(space: &Space, classes: &Classes) -> String {
    let k = classes.closed.len();
    let transient = match classes.transient.len() {
        0 => String::new(),
        t => format!(", {t} transient state{}", if t == 1 { "" } else { "s" }),
    };
    if k > 1 {
        let first = classes.closed[0].len();
        let why = if parity_classes(space, classes) {
            " (parity)".to_string()
        } else if classes.closed.iter().all(|c| c.len() == first) {
            format!(" of {first} state{} each", if first == 1 { "" } else { "s" })
        } else {
            let sizes: Vec<String> = classes.closed.iter().map(|c| c.len().to_string()).collect();
            format!(" of sizes {}", sizes.join(", "))
        };
        return format!("reducible: {k} closed classes{why}{transient}");
    }
    let period = classes.periods.first().copied().unwrap_or(1);
    let head =
        if classes.transient.is_empty() { "irreducible".to_string() } else { format!("one closed class{transient}") };
    if period > 1 { format!("{head}, periodic with period {period}") } else { format!("{head} and aperiodic") }
}

/// The class structure of `p` on `space` with each closed class's law and masses, given the
/// target π (in state order) and the classes' laws from [`class_laws`].
pub fn ergodicity(space: &Space, p: &DMatrix<f64>, pi: &[f64], classes: &Classes, laws: &[Vec<f64>]) -> Ergodicity {
    let n = p.nrows();
    let k = classes.closed.len();
    let h = absorption(p, classes);
    let closed_classes = classes
        .closed
        .iter()
        .zip(&classes.periods)
        .zip(laws)
        .enumerate()
        .map(|(c, ((states, &period), law))| {
            let target_mass: f64 = states.iter().map(|&s| pi[s]).sum();
            let tv = (target_mass > 0.0)
                .then(|| 0.5 * states.iter().zip(law).map(|(&s, q)| (q - pi[s] / target_mass).abs()).sum::<f64>());
            ClosedClass {
                size: states.len(),
                period,
                target_mass,
                uniform_start_mass: h.as_ref().map(|h| (0..n).map(|s| h[s * k + c]).sum::<f64>() / n as f64),
                states: states.clone(),
                stationary: law.clone(),
                total_variation_to_conditioned_target: tv,
            }
        })
        .collect();
    Ergodicity {
        verdict: verdict(space, classes),
        irreducible: classes.irreducible(),
        aperiodic: classes.aperiodic(),
        unique_stationary_law: classes.unique_law(),
        transient_states: classes.transient.len(),
        closed_classes,
    }
}

/// The law a chain started uniformly at random tends to (its Cesàro limit, for a periodic
/// class): Σ_c P(end in c) · law_c, over all states. `None` if the absorption solve failed.
pub fn uniform_start_limit(n: usize, erg: &Ergodicity) -> Option<Vec<f64>> {
    let mut out = vec![0.0; n];
    for c in &erg.closed_classes {
        let w = c.uniform_start_mass?;
        for (&s, q) in c.states.iter().zip(&c.stationary) {
            out[s] += w * q;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(n: usize, v: &[f64]) -> DMatrix<f64> {
        DMatrix::from_row_slice(n, n, v)
    }

    #[test]
    fn an_irreducible_aperiodic_chain_has_one_class() {
        let c = classes(&m(2, &[0.9, 0.1, 0.3, 0.7]));
        assert_eq!(c, Classes { closed: vec![vec![0, 1]], periods: vec![1], transient: vec![] });
        assert!(c.irreducible() && c.aperiodic() && c.ergodic());
    }

    #[test]
    fn two_closed_classes_and_a_transient_state() {
        // 0 ↔ 1 closed, 3 absorbing, 2 leaks to both: absorption from 2 is (0.25, 0.75)/(1 − 0.5).
        let p = m(4, &[0.5, 0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.125, 0.0, 0.5, 0.375, 0.0, 0.0, 0.0, 1.0]);
        let c = classes(&p);
        assert_eq!(c.closed, vec![vec![0, 1], vec![3]]);
        assert_eq!(c.transient, vec![2]);
        assert!(!c.unique_law() && !c.irreducible() && c.aperiodic());
        let h = absorption(&p, &c).unwrap();
        assert!((h[2 * 2] - 0.25).abs() < 1e-15 && (h[2 * 2 + 1] - 0.75).abs() < 1e-15, "{h:?}");
        let laws = class_laws(&p, &c).unwrap();
        assert_eq!(laws, vec![vec![0.5, 0.5], vec![1.0]]);
        let space = Space::categorical(1, 4);
        let e = ergodicity(&space, &p, &[0.25; 4], &c, &laws);
        assert_eq!(e.verdict, "reducible: 2 closed classes of sizes 2, 1, 1 transient state");
        // Uniform start: class {0,1} gets 2/4 + 0.25/4, class {3} gets 1/4 + 0.75/4.
        assert!((e.closed_classes[0].uniform_start_mass.unwrap() - 0.5625).abs() < 1e-15);
        assert!((e.closed_classes[1].uniform_start_mass.unwrap() - 0.4375).abs() < 1e-15);
        let limit = uniform_start_limit(4, &e).unwrap();
        assert!((limit.iter().sum::<f64>() - 1.0).abs() < 1e-15 && limit[2] == 0.0, "{limit:?}");
    }

    #[test]
    fn periods_of_cycles() {
        // The pure 3-cycle has period 3; a lazy one is aperiodic; a bipartite walk has period 2.
        let cycle = m(3, &[0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
        assert_eq!(classes(&cycle).periods, vec![3]);
        let lazy = m(3, &[0.5, 0.5, 0.0, 0.0, 0.5, 0.5, 0.5, 0.0, 0.5]);
        assert_eq!(classes(&lazy).periods, vec![1]);
        // Single flips on {0,1}²: the square 00 – 01 – 11 – 10.
        let flips = m(4, &[0.0, 0.5, 0.5, 0.0, 0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.5, 0.0, 0.5, 0.5, 0.0]);
        let c = classes(&flips);
        assert_eq!((c.closed.len(), c.periods[0]), (1, 2));
        assert_eq!(verdict(&Space::binary(2), &c), "irreducible, periodic with period 2");
        // Cycles of lengths 2 and 3 through one state: gcd 1.
        let mixed = m(4, &[0.0, 0.5, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
        assert_eq!(classes(&mixed).periods, vec![1]);
    }

    #[test]
    fn double_flips_split_bits_by_parity() {
        // Flip both bits of {0,1}² or stay: classes {00, 11} and {01, 10}.
        let p = m(4, &[0.5, 0.0, 0.0, 0.5, 0.0, 0.5, 0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.5, 0.0, 0.0, 0.5]);
        let c = classes(&p);
        assert_eq!(c.closed, vec![vec![0, 3], vec![1, 2]]);
        assert_eq!(verdict(&Space::binary(2), &c), "reducible: 2 closed classes (parity)");
        assert_eq!(verdict(&Space::categorical(1, 4), &c), "reducible: 2 closed classes of 2 states each");
    }

    #[test]
    fn tarjan_finds_a_long_chain_of_classes_without_recursion() {
        // 0 → 1 → … → n−1 (absorbing): n classes, one closed; deep enough to overflow a
        // recursive search's stack in a debug build if it were recursive.
        let n = 2000;
        let p = DMatrix::from_fn(n, n, |i, j| if (j == i + 1) || (i == n - 1 && j == i) { 1.0 } else { 0.0 });
        let c = classes(&p);
        assert_eq!((c.closed, c.transient.len()), (vec![vec![n - 1]], n - 1));
    }
}
