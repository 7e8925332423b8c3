//! The reproduction pages cite the papers correctly, and README's list of papers matches the
//! reproduction binaries.
//!
//! 1. Every section, appendix, figure, table, algorithm, equation and theorem-like label that
//!    a `paper/*.md` page (or an item of README's list under "## Citing") attributes to one of
//!    the papers must exist in that paper. The papers' texts are not in the repository, so the
//!    labels they contain are read from `paper/labels.json`, written by
//!    `scripts/paper_labels.py` from the texts (run by hand when a text changes).
//! 2. README's list names every paper that has a binary in `reproduce/src/bin/`, none of them
//!    as "not implemented", and lists for each exactly the figures and tables that the titles
//!    of those binaries' pages name.
//!
//! Which paper a label belongs to: the nearest qualifier before it in the same sentence —
//! a paper's authors or number ("Zhang, Liu & Liu", "Han et al.", "Yokoi", "004 §4.5"), "the
//! paper" (the page's own paper), a spec (`spec §4.2`, `` `gof.md` §9.3 ``: skipped) or
//! another work ("Grathwohl et al. 2021, §5", "Hoffman & Gelman 2014": skipped) — or, with
//! none, the page's own paper: `001-*`, `003-*`, `004-*` pages cite those papers, other pages
//! the paper their title names, else the main paper 000. A label followed by "of"/"in" and a
//! spec or another work ("§4.2 of the spec") is skipped too. Fenced code is ignored.
//!
//! This lives in dlp-core because that crate builds fast and already has serde_json; the test
//! reads only files in the repository.

use regex::Regex;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Binaries of `reproduce/src/bin/` that reproduce no figure or table, so have no page.
const HELPERS: &[(&str, &str)] = &[("train-mlm", "trains the word-level MLM stand-in that table3 samples")];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Section,
    Appendix,
    Figure,
    Table,
    Algorithm,
    Equation,
    Theorem,
    Lemma,
    Proposition,
    Definition,
    Assumption,
    Corollary,
}

impl Kind {
    /// The key of `paper/labels.json`.
    fn key(self) -> &'static str {
        match self {
            Kind::Section => "sections",
            Kind::Appendix => "appendices",
            Kind::Figure => "figures",
            Kind::Table => "tables",
            Kind::Algorithm => "algorithms",
            Kind::Equation => "equations",
            Kind::Theorem => "theorems",
            Kind::Lemma => "lemmas",
            Kind::Proposition => "propositions",
            Kind::Definition => "definitions",
            Kind::Assumption => "assumptions",
            Kind::Corollary => "corollaries",
        }
    }

    /// Words that may name several labels ("Figs. 4 and 8", "Tables 1–4") continue a list.
    fn from_keyword(kw: &str) -> (Kind, bool) {
        let plural = kw.starts_with("Figs")
            || kw.starts_with("Figures")
            || kw.starts_with("Tables")
            || kw.starts_with("Apps")
            || kw.starts_with("Appendices")
            || kw.starts_with("Algs")
            || kw.starts_with("Algorithms")
            || kw.to_lowercase().starts_with("eqs")
            || kw.to_lowercase().starts_with("equations")
            || kw.starts_with("Sections")
            || kw.starts_with("Theorems")
            || kw.starts_with("Lemmas")
            || kw.starts_with("Props")
            || kw.starts_with("Propositions");
        let kind = match kw.chars().next() {
            Some('§') => Kind::Section,
            Some('S') => Kind::Section,
            Some('A') if kw.starts_with("App") => Kind::Appendix,
            Some('A') if kw.starts_with("Alg") => Kind::Algorithm,
            Some('A') => Kind::Assumption,
            Some('F') => Kind::Figure,
            Some('T') if kw.starts_with("Tab") => Kind::Table,
            Some('T') => Kind::Theorem,
            Some('E') | Some('e') => Kind::Equation,
            Some('L') => Kind::Lemma,
            Some('P') => Kind::Proposition,
            Some('D') => Kind::Definition,
            Some('C') => Kind::Corollary,
            _ => unreachable!("keyword {kw}"),
        };
        (kind, plural)
    }
}

/// paper id → kind key → labels.
type Labels = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn load_labels(root: &Path) -> Labels {
    let path = root.join("paper/labels.json");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).expect("paper/labels.json is JSON");
    let papers = doc["papers"].as_object().expect("labels.json has \"papers\"");
    papers
        .iter()
        .map(|(id, kinds)| {
            let kinds = kinds
                .as_object()
                .expect("a paper is an object")
                .iter()
                .filter_map(|(k, v)| {
                    v.as_array().map(|a| {
                        (k.clone(), a.iter().map(|s| s.as_str().expect("labels are strings").to_string()).collect())
                    })
                })
                .collect();
            (id.clone(), kinds)
        })
        .collect()
}

/// One cited label and the paper it was attributed to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Citation {
    paper: String,
    kind: Kind,
    label: String,
    line: usize,
}

#[derive(Clone, Debug, PartialEq)]
enum Owner {
    Paper(String),
    /// The page's own paper ("the paper's Table 2").
    Own,
    /// A spec or another work: its labels are not checked.
    Elsewhere,
}

static KEYWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(§|\bSections?\b|\bSec\.|\bApp(?:endix|endices|s?\.)|\bFig(?:ures?|s?\.)|\bTables?\b|\bTab\.",
        r"|\bAlg(?:orithms?|s?\.)|\b[Ee]q(?:uations?|s?\.)|\bThm\.?|\bTheorems?\b|\bLemmas?\b",
        r"|\bProp(?:ositions?|s?\.)|\bDefinitions?\b|\bAssumptions?\b|\bCorollar(?:y|ies)\b)",
        r"\s?"
    ))
    .unwrap()
});
static NUMBERED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:[A-Z](?:\.\d+)+|\d+(?:\.\d+)*[a-z]?)").unwrap());
static LETTERED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[A-Z](?:\.\d+)*").unwrap());
static EQUATION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\(?(\d+)\)?").unwrap());
static CONTINUE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*/\s*)").unwrap());
static RANGE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*[–-]\s*").unwrap());
static SENTENCE_END: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(\w*)[.!?:;]\s+[A-Z0-9(*`\x22_]").unwrap());
static BLOCK_START: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\n\s*\n|\n\s*(?:[-*] |\||#|\d+\. )|\|").unwrap());
/// Abbreviations whose period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "Fig", "Figs", "App", "Apps", "Alg", "Algs", "eq", "Eq", "eqs", "Eqs", "al", "Prop", "Props", "Thm", "Sec", "Tab",
    "e", "g", "i", "vs", "cf", "resp", "approx", "No", "St", "Dr",
];

/// Qualifiers in priority order: a paper's own names first, so that "Zhang, Liu & Liu" is not
/// read as another work's "Liu & Liu". A paper's number ("004 §4.5") must not follow a digit,
/// '.' or ',', where it is part of a number (10,000; 0.001).
static QUALIFIERS: LazyLock<Vec<(Regex, Owner)>> = LazyLock::new(|| {
    let q = |re: &str, o: Owner| (Regex::new(re).unwrap(), o);
    vec![
        q(
            r"Zhang, Liu (?:&|and) Liu|Zhang et al\.?,? \(?2022|ICML 2022|\bmain paper\b|(?:^|[^\w.,])000\b",
            Owner::Paper("000".into()),
        ),
        q(r"\bYokoi\b|(?:^|[^\w.,])001\b", Owner::Paper("001".into())),
        q(r"\bslides\b|(?:^|[^\w.,])002\b", Owner::Paper("002".into())),
        q(r"\bKanagawa\b|\bblog\b|(?:^|[^\w.,])003\b", Owner::Paper("003".into())),
        q(r"\bHan et al\b|\bHan, Ding\b|AISTATS 2020|(?:^|[^\w.,])004\b", Owner::Paper("004".into())),
        q(r"(?i)\bspecs?\b|\bspec's\b|[\w-]+\.md\b", Owner::Elsewhere),
        q(r"\b(?:the|this|its) paper\b|\bpaper's\b|\bthe paper:", Owner::Own),
        q(
            r"\b[A-Z][A-Za-z'-]+ et al\b|\b[A-Z][a-z]+ & [A-Z][a-z]+\b|\b[A-Z][a-z]+,? \(?(?:19\d\d|20[0-2]\d)\b",
            Owner::Elsewhere,
        ),
    ]
});
static ELSEWHERE_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*,?\s*(?:of|in)\s+(?:the\s+)?(?:specs?\b|spec's|`?[\w-]+\.md|[A-Z][A-Za-z'-]+ et al|[A-Z][a-z]+ & [A-Z][a-z]+)",
    )
    .unwrap()
});

/// Blank out fenced code blocks, keeping line numbers and offsets.
fn strip_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fenced = false;
    for line in text.split_inclusive('\n') {
        let is_fence = line.trim_start().starts_with("```");
        if fenced || is_fence {
            out.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
        } else {
            out.push_str(line);
        }
        if is_fence {
            fenced = !fenced;
        }
    }
    out
}

/// Byte offsets where a sentence, table cell, list item or paragraph starts.
fn sentence_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(BLOCK_START.find_iter(text).map(|m| m.end()));
    for c in SENTENCE_END.captures_iter(text) {
        let word = c.get(1).unwrap().as_str();
        let single_initial = word.len() == 1 && word.chars().all(|ch| ch.is_ascii_uppercase());
        if !ABBREVIATIONS.contains(&word) && !single_initial {
            starts.push(c.get(0).unwrap().end() - 1);
        }
    }
    starts.sort_unstable();
    starts
}

/// The owner of a label at `at`: the nearest qualifier between the sentence start and `at`.
fn owner(text: &str, from: usize, at: usize) -> Option<Owner> {
    let window = &text[from..at];
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut best: Option<(usize, Owner)> = None;
    for (re, who) in QUALIFIERS.iter() {
        for m in re.find_iter(window) {
            if taken.iter().any(|&(s, e)| m.start() < e && s < m.end()) {
                continue;
            }
            taken.push((m.start(), m.end()));
            if best.as_ref().is_none_or(|(s, _)| m.start() > *s) {
                best = Some((m.start(), who.clone()));
            }
        }
    }
    best.map(|(_, who)| who)
}

/// One label token of `kind` at the start of `rest`: (label, its byte length).
fn token(kind: Kind, rest: &str) -> Option<(String, usize)> {
    let (label, len) = match kind {
        Kind::Appendix => {
            let m = LETTERED.find(rest)?;
            // "App. Fig. 8" names a figure, not appendix F.
            if rest[m.end()..].chars().next().is_some_and(char::is_alphabetic) {
                return None;
            }
            (m.as_str().to_string(), m.end())
        }
        Kind::Equation => {
            let c = EQUATION.captures(rest)?;
            (c[1].to_string(), c.get(0).unwrap().end())
        }
        _ => {
            let m = NUMBERED.find(rest)?;
            (m.as_str().to_string(), m.end())
        }
    };
    Some((label, len))
}

/// Expand "2–10" and "C–D".
fn expand(from: &str, to: &str) -> Vec<String> {
    if let (Ok(a), Ok(b)) = (from.parse::<u32>(), to.parse::<u32>())
        && a < b
        && b - a < 50
    {
        return (a..=b).map(|i| i.to_string()).collect();
    }
    let (fa, fb) = (from.as_bytes(), to.as_bytes());
    if fa.len() == 1 && fb.len() == 1 && fa[0].is_ascii_uppercase() && fa[0] < fb[0] {
        return (fa[0]..=fb[0]).map(|c| (c as char).to_string()).collect();
    }
    vec![from.to_string(), to.to_string()]
}

/// Every label cited in `text` with its paper; `default` is the page's own paper (None: labels
/// without a qualifier naming a paper are not attributed).
fn citations(text: &str, default: Option<&str>) -> Vec<Citation> {
    let text = strip_code(text);
    let starts = sentence_starts(&text);
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for m in KEYWORD.captures_iter(&text) {
        let kw = m.get(1).unwrap().as_str();
        let (mut kind, plural) = Kind::from_keyword(kw);
        let at = m.get(0).unwrap().start();
        let mut pos = m.get(0).unwrap().end();
        let Some((first, len)) = token(kind, &text[pos..]) else { continue };
        if kind == Kind::Section && first.starts_with(|c: char| c.is_ascii_uppercase()) {
            kind = Kind::Appendix;
        }
        pos += len;
        let mut labels = vec![first];
        loop {
            let rest = &text[pos..];
            if let Some(r) = RANGE.find(rest)
                && let Some((to, len)) = token(kind, &rest[r.end()..])
            {
                let from = labels.pop().unwrap();
                labels.extend(expand(&from, &to));
                pos += r.end() + len;
                continue;
            }
            if !plural {
                break;
            }
            let Some(c) = CONTINUE.find(rest) else { break };
            let Some((next, len)) = token(kind, &rest[c.end()..]) else { break };
            let after = &rest[c.end() + len..];
            // "Fig. 3, 50,000 steps": a number with a thousands separator is not a label.
            if after.starts_with(',') && after[1..].starts_with(|ch: char| ch.is_ascii_digit()) {
                break;
            }
            labels.push(next);
            pos += c.end() + len;
        }
        if ELSEWHERE_AFTER.is_match(&text[pos..]) {
            continue;
        }
        let from = *starts.iter().rfind(|&&s| s <= at).unwrap();
        let paper = match owner(&text, from, at) {
            Some(Owner::Paper(p)) => Some(p),
            Some(Owner::Elsewhere) => None,
            Some(Owner::Own) | None => default.map(str::to_string),
        };
        let Some(paper) = paper else { continue };
        for label in labels {
            out.push(Citation { paper: paper.clone(), kind, label, line: line_of(at) });
        }
    }
    out
}

fn exists(labels: &Labels, c: &Citation) -> bool {
    let Some(set) = labels.get(&c.paper).and_then(|p| p.get(c.kind.key())) else { return false };
    // "Fig. 5c" is a panel of Fig. 5; the texts lost most panel letters.
    set.contains(&c.label) || (c.kind == Kind::Figure && set.contains(c.label.trim_end_matches(char::is_alphabetic)))
}

/// The paper a page cites by default.
fn page_paper(name: &str, text: &str) -> String {
    for prefix in ["001", "002", "003", "004"] {
        if name.starts_with(&format!("{prefix}-")) {
            return prefix.to_string();
        }
    }
    let title = text.lines().next().unwrap_or("");
    match owner(title, 0, title.len()) {
        Some(Owner::Paper(p)) => p,
        _ => "000".to_string(),
    }
}

/// The "## Citing" section of README, one entry per list item or paragraph, with the paper it
/// names (None for works that are not among the papers, e.g. the KDSD paper).
fn readme_papers(readme: &str) -> Vec<(Option<String>, String, usize)> {
    let start = readme.find("\n## Citing").expect("README has a \"## Citing\" section") + 1;
    let end = readme[start + 3..].find("\n## ").map_or(readme.len(), |e| start + 3 + e);
    let section = strip_code(&readme[start..end]);
    let first_line = readme[..start].matches('\n').count() + 1;
    let titles: [(&str, Regex); 4] = [
        ("000", Regex::new(r"Langevin-like\s+Sampler").unwrap()),
        ("001", Regex::new(r"Transformations\s+in\s+Stochastic\s+Gradient").unwrap()),
        ("003", Regex::new(r"Kanagawa").unwrap()),
        ("004", Regex::new(r"Stein\s+Variational\s+Inference\s+for\s+Discrete").unwrap()),
    ];
    let mut items: Vec<(usize, String)> = Vec::new();
    for (i, line) in section.lines().enumerate() {
        let new_item =
            line.starts_with("- ") || (!line.starts_with(' ') && items.last().is_some_and(|l| l.1.is_empty()));
        if line.trim().is_empty() {
            items.push((i, String::new()));
        } else if new_item || items.is_empty() {
            items.push((i, line.to_string()));
        } else {
            let last = items.last_mut().unwrap();
            last.1.push('\n');
            last.1.push_str(line);
        }
    }
    items
        .into_iter()
        .filter(|(_, t)| !t.trim().is_empty())
        .map(|(i, t)| {
            let named: Vec<&str> = titles.iter().filter(|(_, re)| re.is_match(&t)).map(|(p, _)| *p).collect();
            let paper = if named.len() == 1 { Some(named[0].to_string()) } else { None };
            (paper, t, first_line + i)
        })
        .collect()
}

/// Wrong labels on `pages` (file name, text) and in README's list.
fn label_errors(labels: &Labels, pages: &[(String, String)], readme: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for (name, text) in pages {
        let paper = page_paper(name, text);
        for c in citations(text, Some(&paper)) {
            if !exists(labels, &c) {
                errors.push(format!(
                    "paper/{name}:{}: {:?} {} is not a label of paper {}",
                    c.line, c.kind, c.label, c.paper
                ));
            }
        }
    }
    for (paper, text, line) in readme_papers(readme) {
        for c in citations(&text, paper.as_deref()) {
            if !exists(labels, &c) {
                errors.push(format!(
                    "README.md:{}: {:?} {} is not a label of paper {}",
                    line + c.line - 1,
                    c.kind,
                    c.label,
                    c.paper
                ));
            }
        }
    }
    errors
}

/// Disagreements between README's list of papers and the binaries with their pages' titles.
fn list_errors(bins: &[String], pages: &[(String, String)], readme: &str) -> Vec<String> {
    let mut errors = Vec::new();
    // paper → figures and tables named by the titles of its binaries' pages.
    let mut expected: BTreeMap<String, BTreeSet<(Kind, String)>> = BTreeMap::new();
    for bin in bins {
        if HELPERS.iter().any(|(h, _)| h == bin) {
            continue;
        }
        let Some((name, text)) = pages.iter().find(|(n, _)| *n == format!("{bin}.md")) else {
            errors.push(format!("reproduce/src/bin/{bin}.rs has no page paper/{bin}.md"));
            continue;
        };
        let paper = page_paper(name, text);
        let title = text.lines().next().unwrap_or("");
        let set = expected.entry(paper.clone()).or_default();
        for c in citations(title, Some(&paper)) {
            if c.paper == paper && matches!(c.kind, Kind::Figure | Kind::Table) {
                set.insert((c.kind, c.label));
            }
        }
    }
    let items = readme_papers(readme);
    let not_implemented = Regex::new(r"(?i)\bnot\s+implemented\b").unwrap();
    for (paper, want) in &expected {
        let mine: Vec<_> = items.iter().filter(|(p, _, _)| p.as_deref() == Some(paper)).collect();
        let [(_, text, line)] = mine.as_slice() else {
            errors.push(format!(
                "README's papers list has {} items for paper {paper}, which has binaries; want 1",
                mine.len()
            ));
            continue;
        };
        if not_implemented.is_match(text) {
            errors.push(format!("README.md:{line}: paper {paper} has binaries but is listed as not implemented"));
        }
        let listed: BTreeSet<(Kind, String)> = citations(text, Some(paper))
            .into_iter()
            .filter(|c| c.paper == *paper && matches!(c.kind, Kind::Figure | Kind::Table))
            .map(|c| (c.kind, c.label))
            .collect();
        if &listed != want {
            errors.push(format!(
                "README.md:{line}: paper {paper} lists {listed:?}, but its binaries' pages reproduce {want:?}"
            ));
        }
    }
    errors
}

fn read_pages(root: &Path) -> Vec<(String, String)> {
    let mut pages: Vec<(String, String)> = fs::read_dir(root.join("paper"))
        .expect("paper/ is readable")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), fs::read_to_string(&p).unwrap()))
        .collect();
    pages.sort();
    pages
}

fn read_bins(root: &Path) -> Vec<String> {
    let mut bins: Vec<String> = fs::read_dir(root.join("reproduce/src/bin"))
        .expect("reproduce/src/bin is readable")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    bins.sort();
    bins
}

fn readme(root: &Path) -> String {
    fs::read_to_string(root.join("README.md")).expect("README.md is readable")
}

#[test]
fn every_label_the_pages_cite_exists_in_the_cited_paper() {
    let root = repo();
    let labels = load_labels(&root);
    let pages = read_pages(&root);
    let readme = readme(&root);
    // Guard against a scanner that silently finds nothing: today's pages cite hundreds of labels.
    let checked: usize = pages.iter().map(|(n, t)| citations(t, Some(&page_paper(n, t))).len()).sum();
    assert!(checked > 150, "only {checked} citations found on the pages");
    let errors = label_errors(&labels, &pages, &readme);
    assert!(errors.is_empty(), "wrong labels:\n{}", errors.join("\n"));
}

#[test]
fn readme_lists_the_papers_and_figures_the_binaries_reproduce() {
    let root = repo();
    let errors = list_errors(&read_bins(&root), &read_pages(&root), &readme(&root));
    assert!(errors.is_empty(), "README's papers list disagrees with reproduce/src/bin:\n{}", errors.join("\n"));
}

#[test]
fn labels_json_has_every_paper_and_the_main_papers_known_labels() {
    // Hand-checked against the main paper's text: §7.3.2 "Deep EBMs", App. I.4 "Learning
    // EBMs", I.5 "Binary Bayesian Neural Networks", 10 figures, 4 tables, 2 algorithms.
    let labels = load_labels(&repo());
    assert_eq!(labels.keys().cloned().collect::<Vec<_>>(), ["000", "001", "002", "003", "004"]);
    let main = &labels["000"];
    for (kind, label) in [("sections", "7.3.2"), ("appendices", "I.4"), ("appendices", "I.5"), ("figures", "10")] {
        assert!(main[kind].contains(label), "000 {kind} lacks {label}");
    }
    assert!(!main["appendices"].contains("I.7"));
    assert_eq!(main["tables"].len(), 4);
    assert_eq!(main["algorithms"].len(), 2);
}

/// The checker can fail: wrong labels in otherwise real pages are reported, and labels of
/// other works and of the specs are not.
#[test]
fn a_wrong_label_fails_and_other_works_labels_are_skipped() {
    let root = repo();
    let labels = load_labels(&root);
    let readme = readme(&root);
    let pages = read_pages(&root);
    let page = |name: &str| pages.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let table1 = page("table1.md");
    assert!(table1.contains("App. I.4"));
    for (name, text, wrong) in [
        ("table1.md", table1.replacen("App. I.4", "App. I.7", 1), "Appendix I.7"),
        ("table1.md", table1.replacen("App. I.4", "§7.6", 1), "Section 7.6"),
        ("004-fig3.md", page("004-fig3.md").replacen("§4.3", "§4.9", 1), "Section 4.9"),
        ("001-bnn.md", page("001-bnn.md").replacen("(eq. 63)", "(eq. 64)", 1), "Equation 64"),
        ("fig3.md", format!("{}\nThe paper's Fig. 11 shows it.\n", page("fig3.md")), "Figure 11"),
        (
            "fig3.md",
            format!("{}\nAs in Han et al. 2020, Theorem 2.\n", page("fig3.md")),
            "Theorem 2 is not a label of paper 004",
        ),
    ] {
        let errors = label_errors(&labels, &[(name.to_string(), text)], &readme);
        assert!(errors.iter().any(|e| e.contains(wrong)), "{name}: {wrong} not reported: {errors:?}");
    }
    for skipped in [
        "Relaxed MALA (Grathwohl et al. 2021, §5) and Hoffman & Gelman 2014, §3.2.",
        "The spec's §9.3 and `gof.md` §7.8, and §4.2 of the spec.",
    ] {
        let errors = label_errors(&labels, &[("fig3.md".to_string(), format!("# Fig. 3\n\n{skipped}\n"))], &readme);
        assert!(errors.is_empty(), "{skipped}: {errors:?}");
    }
    // The list's entry (the README's intro has the same figures without the ';').
    let bad_readme = readme.replacen("Figs. 1a, 1b, 2–10;", "Figs. 1a, 1b, 2–11;", 1);
    assert_ne!(bad_readme, readme);
    assert!(label_errors(&labels, &[], &bad_readme).iter().any(|e| e.contains("Figure 11")));
}

/// README's list fails when it calls an implemented paper "not implemented" or omits a figure.
#[test]
fn a_stale_readme_list_fails() {
    let root = repo();
    let (bins, pages, readme) = (read_bins(&root), read_pages(&root), readme(&root));
    let yokoi = "- Soma Yokoi, Takuma Otsuka, Issei Sato.";
    assert!(readme.contains(yokoi));
    // The old wording: a paragraph of its own, not a list item.
    let stale = readme.replacen(yokoi, "\nNot implemented: Soma Yokoi, Takuma Otsuka, Issei Sato.", 1);
    let errors = list_errors(&bins, &pages, &stale);
    assert!(errors.iter().any(|e| e.contains("paper 001") && e.contains("not implemented")), "{errors:?}");
    let no_fig8 = readme.replacen("Figs. 1–8, Fig. 6 on a stand-in", "Figs. 1–7, Fig. 6 on a stand-in", 1);
    assert_ne!(no_fig8, readme);
    let errors = list_errors(&bins, &pages, &no_fig8);
    assert!(errors.iter().any(|e| e.contains("paper 004")), "{errors:?}");
    let extra_bin = [bins.clone(), vec!["fig6".to_string()]].concat();
    let errors = list_errors(&extra_bin, &pages, &readme);
    assert!(errors.iter().any(|e| e.contains("fig6.rs has no page")), "{errors:?}");
}
