//! Every plot of the reproduction binaries, drawn with plotters (pure Rust, DejaVu font
//! embedded): line and box-plot panels ([`Figure`]) and binary image grids. The binaries
//! describe what to draw; only this module touches plotters.

use crate::report::five_numbers;
use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use std::path::Path;

/// A named curve.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label; also picks the colour (see [`Figure::labels`]).
    pub label: String,
    /// (x, y) points; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
}

/// A horizontal dashed reference line.
#[derive(Clone, Debug)]
pub struct RefLine {
    /// Legend label.
    pub label: String,
    /// Height.
    pub y: f64,
}

/// Five-number summary of one box.
#[derive(Clone, Debug)]
pub struct BoxStats {
    /// Category label (also picks the colour).
    pub label: String,
    /// Minimum, first quartile, median, third quartile, maximum.
    pub five: [f64; 5],
}

impl BoxStats {
    /// The box of `values` (their [`five_numbers`]).
    pub fn from_values(label: &str, values: &[f64]) -> Self {
        BoxStats { label: label.to_string(), five: five_numbers(values) }
    }
}

/// A curve with a shaded band around it (a mean ± one standard deviation over seeds).
#[derive(Clone, Debug)]
pub struct Band {
    /// Legend label; also picks the colour (see [`Figure::labels`]).
    pub label: String,
    /// (x, centre, low, high) points; points with a non-finite x or centre are skipped, and
    /// a non-finite low or high collapses the band onto the centre there.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// One panel of a figure.
#[derive(Clone, Debug)]
pub enum Panel {
    /// Curves against a common x axis.
    Lines {
        /// Panel title.
        title: String,
        /// x axis description.
        x_label: String,
        /// y axis description.
        y_label: String,
        /// The curves.
        series: Vec<Series>,
        /// Reference lines.
        refs: Vec<RefLine>,
        /// A log10 y axis (points with y ≤ 0 are left out): for a loss whose first epochs are
        /// orders of magnitude above the rest, which a linear axis flattens to one line.
        log_y: bool,
    },
    /// Curves with shaded bands against a common x axis (the sweep gather's figures).
    Bands {
        /// Panel title.
        title: String,
        /// x axis description.
        x_label: String,
        /// y axis description.
        y_label: String,
        /// The curves and their bands.
        bands: Vec<Band>,
    },
    /// Horizontal bars per category on a log10 value axis (DISCS's bar charts, turned so that
    /// long sampler names fit): one value each, non-positive or non-finite values left out.
    Bars {
        /// Panel title.
        title: String,
        /// Value axis description.
        x_label: String,
        /// (category, value), top to bottom.
        bars: Vec<(String, f64)>,
    },
    /// Box plots per category on a log10 y axis.
    Boxes {
        /// Panel title.
        title: String,
        /// y axis description.
        y_label: String,
        /// The boxes, in display order.
        boxes: Vec<BoxStats>,
    },
}

impl Panel {
    /// A [`Panel::Lines`] from its parts.
    pub fn lines(
        title: impl Into<String>,
        x_label: &str,
        y_label: &str,
        series: Vec<Series>,
        refs: Vec<RefLine>,
    ) -> Self {
        Panel::Lines {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series,
            refs,
            log_y: false,
        }
    }

    /// The same panel with a log10 y axis (a [`Panel::Lines`]; other panels are returned as
    /// they are: box plots are always on a log axis, bands never).
    pub fn with_log_y(mut self) -> Self {
        if let Panel::Lines { log_y, .. } = &mut self {
            *log_y = true;
        }
        self
    }
}

/// Panels side by side under a caption.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Caption.
    pub caption: String,
    /// Labels in colour order, so a sampler has the same colour in every panel.
    pub labels: Vec<String>,
    /// The panels, left to right.
    pub panels: Vec<Panel>,
}

impl Figure {
    fn size(&self) -> (u32, u32) {
        (560 * self.panels.len().max(1) as u32, 460)
    }

    fn color(&self, label: &str) -> RGBColor {
        let i = self.labels.iter().position(|l| l == label).unwrap_or(self.labels.len());
        series_color(i)
    }
}

/// The colour of the `i`-th series: Tableau 10 (distinguishable and colour-blind tolerant),
/// then its ten lighter partners of Tableau 20, then hues a golden angle apart, so that a
/// figure with many series (the DISCS charts have up to 28) repeats no colour.
fn series_color(i: usize) -> RGBColor {
    const TABLEAU_20: [RGBColor; 20] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(174, 199, 232),
        RGBColor(255, 187, 120),
        RGBColor(152, 223, 138),
        RGBColor(255, 152, 150),
        RGBColor(197, 176, 213),
        RGBColor(196, 156, 148),
        RGBColor(247, 182, 210),
        RGBColor(199, 199, 199),
        RGBColor(219, 219, 141),
        RGBColor(158, 218, 229),
    ];
    match TABLEAU_20.get(i) {
        Some(&c) => c,
        None => {
            // Hues a golden angle apart: never the same twice, well spread for any count.
            let hue = ((i - TABLEAU_20.len()) as f64 * 0.618_033_988_749_895).fract();
            let c = HSLColor(hue, 0.65, 0.45).to_rgba();
            RGBColor(c.0, c.1, c.2)
        }
    }
}

/// Registers the embedded DejaVu Sans under the family names plotters uses, so that text
/// renders without system font libraries (`toolchain.md` §6).
pub fn register_fonts() {
    for family in ["sans-serif", "serif", "monospace"] {
        let _ = plotters::style::register_font(family, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(family, FontStyle::Bold, dejavu::sans::bold());
    }
}

/// Range of finite values padded by 5 % (or ±0.5 around a single value).
fn padded_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.5 };
    (lo - pad)..(hi + pad)
}

/// The range of the positive finite values padded by 5% of its width on a log scale (1..10
/// when there are none), for a log axis.
fn padded_log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let logs = padded_range(values.filter(|v| *v > 0.0).map(f64::log10));
    10f64.powf(logs.start)..10f64.powf(logs.end)
}

/// A tick label with at most three significant digits and no trailing zeros (`200`, `0.05`,
/// `6.31e4`).
pub fn short_number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        return format!("{v:.2e}").replace(".00e", "e");
    }
    let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// The legend's corner: the one whose box (the outer 40% × 35% of the plot area) the curves
/// cross least, so the legend hides as little of them as possible; ties go to upper right,
/// upper left, lower right, lower left. A fixed upper-right legend sat on the end of every
/// rising curve (accuracy vs epoch), where the reader looks first. Each segment between two
/// points counts at 16 places along it, so sparse curves crossing a corner are seen too.
fn legend_corner<'a>(
    curves: impl Iterator<Item = &'a [(f64, f64)]>,
    x: &std::ops::Range<f64>,
    y: &std::ops::Range<f64>,
) -> SeriesLabelPosition {
    let (w, h) = ((x.end - x.start).max(f64::MIN_POSITIVE), (y.end - y.start).max(f64::MIN_POSITIVE));
    let mut count = [0usize; 4]; // upper right, upper left, lower right, lower left
    let mut add = |px: f64, py: f64| {
        let (u, v) = ((px - x.start) / w, (py - y.start) / h);
        let (right, left, top, bottom) = (u >= 0.6, u <= 0.4, v >= 0.65, v <= 0.35);
        for (k, inside) in [right && top, left && top, right && bottom, left && bottom].into_iter().enumerate() {
            count[k] += usize::from(inside);
        }
    };
    for pts in curves {
        let finite: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
        if let [only] = finite[..] {
            add(only.0, only.1);
        }
        for seg in finite.windows(2) {
            for k in 0..16 {
                let t = k as f64 / 16.0;
                add(seg[0].0 + t * (seg[1].0 - seg[0].0), seg[0].1 + t * (seg[1].1 - seg[0].1));
            }
        }
        if let (Some(last), true) = (finite.last(), finite.len() > 1) {
            add(last.0, last.1);
        }
    }
    match (0..4).min_by_key(|&k| count[k]) {
        Some(1) => SeriesLabelPosition::UpperLeft,
        Some(2) => SeriesLabelPosition::LowerRight,
        Some(3) => SeriesLabelPosition::LowerLeft,
        _ => SeriesLabelPosition::UpperRight,
    }
}

/// The series' legend in `corner`, the same on every panel.
fn draw_legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    corner: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(corner)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(|e| anyhow!("plot: {e:?}"))
}

/// A [`Panel::Lines`] ready to draw: its curves' plottable points and the reference lines
/// that fit the axis.
struct LinesPanel<'a> {
    figure: &'a Figure,
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    series: &'a [Series],
    pts: &'a [Vec<(f64, f64)>],
    refs: &'a [&'a RefLine],
}

impl LinesPanel<'_> {
    /// Draws on `area` over `xr` × `yr`, a linear or (`log_y`) a log10 axis.
    fn draw<DB: DrawingBackend, Y>(
        &self,
        area: &DrawingArea<DB, Shift>,
        xr: std::ops::Range<f64>,
        yr: Y,
        log_y: bool,
    ) -> Result<()>
    where
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plot: {e:?}");
        // The legend's corner is chosen where the curves are drawn: on a log axis, in log10(y).
        let to_axis = |y: f64| if log_y { y.log10() } else { y };
        let mut chart = ChartBuilder::on(area)
            .caption(self.title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(xr.clone(), yr)
            .map_err(e)?;
        let y_axis = chart.y_range();
        let (y0, y1) = (to_axis(y_axis.start), to_axis(y_axis.end));
        let axis_pts: Vec<Vec<(f64, f64)>> =
            self.pts.iter().map(|p| p.iter().map(|q| (q.0, to_axis(q.1))).collect()).collect();
        let ref_lines: Vec<[(f64, f64); 2]> =
            self.refs.iter().map(|r| [(xr.start, to_axis(r.y)), (xr.end, to_axis(r.y))]).collect();
        let corner =
            legend_corner(axis_pts.iter().map(|p| &p[..]).chain(ref_lines.iter().map(|l| &l[..])), &xr, &(y0..y1));
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(self.x_label).y_desc(self.y_label).x_label_formatter(&|v| short_number(*v)).light_line_style(WHITE);
        // A log axis's ticks (1, 2, 5, 10, …) read best short; a linear axis keeps plotters'
        // labels, which every earlier figure has.
        let short = |v: &f64| short_number(*v);
        if log_y {
            mesh.y_label_formatter(&short);
        }
        mesh.draw().map_err(e)?;
        for (s, pts) in self.series.iter().zip(self.pts) {
            let color = self.figure.color(&s.label);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(e)?
                .label(s.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        for r in self.refs {
            let (x0, x1) = (xr.start, xr.end);
            let n = 40;
            let dashes = (0..n).step_by(2).map(|k| {
                let a = x0 + (x1 - x0) * k as f64 / n as f64;
                let b = x0 + (x1 - x0) * (k + 1) as f64 / n as f64;
                PathElement::new(vec![(a, r.y), (b, r.y)], BLACK.stroke_width(1))
            });
            chart
                .draw_series(dashes)
                .map_err(e)?
                .label(r.label.clone())
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(1)));
        }
        draw_legend(&mut chart, corner)
    }
}

fn draw_figure<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, figure: &Figure) -> Result<()> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plot: {e:?}");
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(&figure.caption, ("sans-serif", 20)).map_err(e)?;
    let areas = root.split_evenly((1, figure.panels.len().max(1)));
    for (area, panel) in areas.into_iter().zip(&figure.panels) {
        match panel {
            Panel::Lines { title, x_label, y_label, series, refs, log_y } => {
                let keep = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite() && (!log_y || p.1 > 0.0);
                let pts: Vec<Vec<(f64, f64)>> =
                    series.iter().map(|s| s.points.iter().copied().filter(keep).collect()).collect();
                let refs: Vec<&RefLine> = refs.iter().filter(|r| !log_y || r.y > 0.0).collect();
                let xr = padded_range(pts.iter().flatten().map(|p| p.0));
                let ys = pts.iter().flatten().map(|p| p.1).chain(refs.iter().map(|r| r.y));
                let lines = LinesPanel { figure, title, x_label, y_label, series, pts: &pts, refs: &refs };
                if *log_y {
                    lines.draw(&area, xr, padded_log_range(ys).log_scale(), true)?;
                } else {
                    lines.draw(&area, xr, padded_range(ys), false)?;
                }
            }
            Panel::Bands { title, x_label, y_label, bands } => {
                let finite = |p: &&(f64, f64, f64, f64)| p.0.is_finite() && p.1.is_finite();
                let clamp = |p: &(f64, f64, f64, f64)| {
                    (p.0, p.1, if p.2.is_finite() { p.2 } else { p.1 }, if p.3.is_finite() { p.3 } else { p.1 })
                };
                let pts: Vec<Vec<(f64, f64, f64, f64)>> =
                    bands.iter().map(|b| b.points.iter().filter(finite).map(clamp).collect()).collect();
                let xs = pts.iter().flatten().map(|p| p.0);
                let ys = pts.iter().flatten().flat_map(|p| [p.2, p.3]);
                let (xr, yr) = (padded_range(xs), padded_range(ys));
                // The legend avoids the bands' edges and centres alike.
                let edges: Vec<Vec<(f64, f64)>> = pts
                    .iter()
                    .flat_map(|p| {
                        [
                            p.iter().map(|q| (q.0, q.1)).collect(),
                            p.iter().map(|q| (q.0, q.2)).collect(),
                            p.iter().map(|q| (q.0, q.3)).collect(),
                        ]
                    })
                    .collect();
                let corner = legend_corner(edges.iter().map(|c| &c[..]), &xr, &yr);
                let mut chart = ChartBuilder::on(&area)
                    .caption(title, ("sans-serif", 16))
                    .margin(10)
                    .x_label_area_size(40)
                    .y_label_area_size(55)
                    .build_cartesian_2d(xr, yr)
                    .map_err(e)?;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
                    .x_label_formatter(&|v| short_number(*v))
                    .light_line_style(WHITE)
                    .draw()
                    .map_err(e)?;
                for (b, p) in bands.iter().zip(&pts) {
                    if p.is_empty() {
                        continue;
                    }
                    let color = figure.color(&b.label);
                    // The band as one polygon: the high edge left to right, the low edge back.
                    let outline: Vec<(f64, f64)> =
                        p.iter().map(|q| (q.0, q.3)).chain(p.iter().rev().map(|q| (q.0, q.2))).collect();
                    chart.draw_series([Polygon::new(outline, color.mix(0.2).filled())]).map_err(e)?;
                    chart
                        .draw_series(LineSeries::new(p.iter().map(|q| (q.0, q.1)), color.stroke_width(2)))
                        .map_err(e)?
                        .label(b.label.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                }
                draw_legend(&mut chart, corner)?;
            }
            Panel::Bars { title, x_label, bars } => {
                let n = bars.len().max(1);
                let logs: Vec<f64> =
                    bars.iter().map(|b| if b.1 > 0.0 && b.1.is_finite() { b.1.log10() } else { f64::NAN }).collect();
                let xr = padded_range(logs.iter().copied());
                let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
                let mut chart = ChartBuilder::on(&area)
                    .caption(title, ("sans-serif", 16))
                    .margin(10)
                    .x_label_area_size(40)
                    .y_label_area_size(110)
                    .build_cartesian_2d(xr.clone(), -0.5..(n as f64 - 0.5))
                    .map_err(e)?;
                chart
                    .configure_mesh()
                    .disable_y_mesh()
                    .y_labels(2 * n + 1)
                    .y_label_formatter(&|v| {
                        let i = v.round();
                        // Row 0 is drawn at the top.
                        // `get`: a panel without bars (every cell skipped) has n = 1 and no names.
                        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                            names.get(n - 1 - i as usize).cloned().unwrap_or_default()
                        } else {
                            String::new()
                        }
                    })
                    .x_label_formatter(&|v| short_number(10f64.powf(*v)))
                    .light_line_style(WHITE)
                    .x_desc(x_label)
                    .draw()
                    .map_err(e)?;
                for (i, (b, v)) in bars.iter().zip(&logs).enumerate() {
                    if !v.is_finite() {
                        continue;
                    }
                    let y = (n - 1 - i) as f64;
                    let color = figure.color(&b.0);
                    chart
                        .draw_series([Rectangle::new([(xr.start, y - 0.35), (*v, y + 0.35)], color.mix(0.7).filled())])
                        .map_err(e)?;
                }
            }
            Panel::Boxes { title, y_label, boxes } => {
                let logs = |b: &BoxStats| b.five.map(|v| v.log10());
                let ys = boxes.iter().flat_map(|b| logs(b).into_iter());
                let n = boxes.len().max(1);
                let names: Vec<String> = boxes.iter().map(|b| b.label.clone()).collect();
                let mut chart = ChartBuilder::on(&area)
                    .caption(title, ("sans-serif", 16))
                    .margin(10)
                    .x_label_area_size(40)
                    .y_label_area_size(70)
                    .build_cartesian_2d(-0.5..(n as f64 - 0.5), padded_range(ys))
                    .map_err(e)?;
                chart
                    .configure_mesh()
                    .disable_x_mesh()
                    .x_labels(n + 1)
                    .x_label_formatter(&|v| {
                        let i = v.round();
                        if (v - i).abs() < 1e-6 && i >= 0.0 {
                            names.get(i as usize).cloned().unwrap_or_default()
                        } else {
                            String::new()
                        }
                    })
                    .y_label_formatter(&|v| short_number(10f64.powf(*v)))
                    .light_line_style(WHITE)
                    .y_desc(y_label)
                    .draw()
                    .map_err(e)?;
                for (i, b) in boxes.iter().enumerate() {
                    let [lo, q1, med, q3, hi] = logs(b);
                    if ![lo, q1, med, q3, hi].iter().all(|v| v.is_finite()) {
                        continue;
                    }
                    let color = figure.color(&b.label);
                    let x = i as f64;
                    chart
                        .draw_series([Rectangle::new([(x - 0.3, q1), (x + 0.3, q3)], color.mix(0.3).filled())])
                        .map_err(e)?;
                    chart
                        .draw_series([Rectangle::new([(x - 0.3, q1), (x + 0.3, q3)], color.stroke_width(1))])
                        .map_err(e)?;
                    let seg = |a: (f64, f64), b: (f64, f64), w| PathElement::new(vec![a, b], color.stroke_width(w));
                    chart
                        .draw_series([
                            seg((x - 0.3, med), (x + 0.3, med), 2),
                            seg((x, lo), (x, q1), 1),
                            seg((x, q3), (x, hi), 1),
                            seg((x - 0.15, lo), (x + 0.15, lo), 1),
                            seg((x - 0.15, hi), (x + 0.15, hi), 1),
                        ])
                        .map_err(e)?;
                }
            }
        }
    }
    root.present().map_err(e)?;
    Ok(())
}

/// `figure` as SVG text.
pub fn svg(figure: &Figure) -> Result<String> {
    let mut svg = String::new();
    draw_figure(SVGBackend::with_string(&mut svg, figure.size()).into_drawing_area(), figure)?;
    Ok(svg)
}

/// Draws `figure` as a PNG at `path`.
pub fn png(figure: &Figure, path: &Path) -> Result<()> {
    let (w, h) = figure.size();
    let mut rgb = vec![0u8; 3 * w as usize * h as usize];
    draw_figure(BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area(), figure)?;
    write_png(path, (w, h), &rgb)
}

/// Writes an RGB8 buffer as a PNG with the settings plotters' `bitmap_encoder` (the `image`
/// crate) used: fast compression, adaptive filtering; so the files are byte-identical to
/// before. Drawing into a buffer and encoding with `png` alone keeps `image` (its decoders, a
/// second `syn`) out of the build (paper/performance.md, "Cold build of `just reproduce fig3`").
/// Encoded in memory, then written, so that a failed write is reported (a `BufWriter` flushed
/// on drop would swallow it).
fn write_png(path: &Path, (w, h): (u32, u32), rgb: &[u8]) -> Result<()> {
    let e = |e: png::EncodingError| anyhow!("encoding {}: {e}", path.display());
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::FilterType::Sub);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut writer = encoder.write_header().map_err(e)?;
    writer.write_image_data(rgb).map_err(e)?;
    writer.finish().map_err(e)?;
    std::fs::write(path, bytes).map_err(|err| anyhow!("writing {}: {err}", path.display()))
}

/// Draws up to 100 binary square images (`states`, `d` pixels each, 1 = white) as a
/// 10-column grid PNG at `path`: 2 px per pixel, 2 px grey gaps (Fig. 8's sample grids).
pub fn image_grid_png(path: &Path, states: &[u32], d: usize) -> Result<()> {
    let n = (states.len() / d).min(100);
    let side = (d as f64).sqrt() as usize;
    let (scale, gap, cols) = (2u32, 2u32, 10usize);
    let rows = n.div_ceil(cols).max(1);
    let cell = side as u32 * scale + gap;
    let size = (cols as u32 * cell + gap, rows as u32 * cell + gap);
    let mut rgb = vec![0u8; 3 * size.0 as usize * size.1 as usize];
    let area = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
    area.fill(&RGBColor(128, 128, 128))?;
    for k in 0..n {
        let (r, c) = ((k / cols) as u32, (k % cols) as u32);
        for p in 0..d.min(side * side) {
            let v = if states[k * d + p] == 1 { 255 } else { 0 };
            let (py, px) = ((p / side) as u32, (p % side) as u32);
            for dy in 0..scale {
                for dx in 0..scale {
                    let x = gap + c * cell + px * scale + dx;
                    let y = gap + r * cell + py * scale + dy;
                    area.draw_pixel((x as i32, y as i32), &RGBColor(v, v, v))?;
                }
            }
        }
    }
    area.present()?;
    drop(area);
    write_png(path, size, &rgb)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accuracy curves rising to a plateau fill the upper right; a falling loss fills the upper
    /// left and lower right; a flat line through the middle leaves every corner free.
    #[test]
    fn series_colours_do_not_repeat_within_a_large_figure() {
        // The DISCS charts have up to 28 series; Tableau 10 alone repeated from the 11th.
        let colours: Vec<(u8, u8, u8)> = (0..60).map(|i| series_color(i).rgb()).collect();
        for (i, a) in colours.iter().enumerate() {
            assert!(!colours[..i].contains(a), "series {i} repeats colour {a:?}");
        }
        assert_eq!(series_color(0), RGBColor(31, 119, 180));
    }

    #[test]
    fn the_legend_takes_the_emptiest_corner() {
        let rising: Vec<(f64, f64)> = (1..=100).map(|e| (e as f64, 0.95 - 0.5 * (-(e as f64) / 5.0).exp())).collect();
        let (x, y) = (padded_range(rising.iter().map(|p| p.0)), padded_range(rising.iter().map(|p| p.1)));
        assert!(matches!(legend_corner([&rising[..]].into_iter(), &x, &y), SeriesLabelPosition::LowerRight));
        let falling: Vec<(f64, f64)> = (1..=100).map(|e| (e as f64, 10.0 * (-(e as f64) / 5.0).exp())).collect();
        let y = padded_range(falling.iter().map(|p| p.1));
        assert!(matches!(legend_corner([&falling[..]].into_iter(), &x, &y), SeriesLabelPosition::UpperRight));
        // Two points only: the segment between them crosses the upper right and lower left.
        let diagonal = [(0.0, 0.0), (1.0, 1.0)];
        let (x, y) = (padded_range([0.0, 1.0].into_iter()), padded_range([0.0, 1.0].into_iter()));
        assert!(matches!(legend_corner([&diagonal[..]].into_iter(), &x, &y), SeriesLabelPosition::UpperLeft));
        let flat = [(0.0, 0.5), (1.0, 0.5)];
        assert!(matches!(legend_corner([&flat[..]].into_iter(), &x, &y), SeriesLabelPosition::UpperRight));
    }

    /// A loss from 36 down to 0.4 on a log axis: the padded range holds both ends with the
    /// same ratio of room on each side, the non-positive points are left out rather than
    /// failing, and the ticks are short numbers at powers of ten.
    #[test]
    fn a_log_axis_spans_the_decades_and_drops_non_positive_values() {
        register_fonts();
        let r = padded_log_range([36.0, 0.4, 0.0, -1.0, f64::NAN].into_iter());
        assert!(r.start > 0.0 && r.start < 0.4 && r.end > 36.0);
        assert!(((0.4 / r.start).ln() - (r.end / 36.0).ln()).abs() < 1e-12);
        assert_eq!(padded_log_range(std::iter::empty()), 1.0..10.0);
        let loss: Vec<(f64, f64)> = (1..=300).map(|e| (e as f64, 0.4 + 36.0 / (e as f64).powi(2))).collect();
        let series = vec![Series { label: "ce".into(), points: [&[(0.0, 0.0)], &loss[..]].concat() }];
        let panel = |log: bool| {
            let p = Panel::lines("CE", "epoch", "nats", series.clone(), vec![RefLine { label: "zero".into(), y: 0.0 }]);
            let p = if log { p.with_log_y() } else { p };
            svg(&Figure { caption: "c".into(), labels: vec!["ce".into()], panels: vec![p] }).unwrap()
        };
        let (log, linear) = (panel(true), panel(false));
        let ticks = |svg: &str| -> Vec<String> {
            svg.split("</text>").filter_map(|t| t.rsplit('>').next()).map(|t| t.trim().to_string()).collect()
        };
        let (log_ticks, linear_ticks) = (ticks(&log), ticks(&linear));
        assert!(log_ticks.iter().any(|t| t == "1") && log_ticks.iter().any(|t| t == "10"), "{log_ticks:?}");
        // The linear axis has no room for a tick at 1 between 0 and 36's round steps.
        assert!(!linear_ticks.iter().any(|t| t == "1"), "{linear_ticks:?}");
        // The reference line at 0 cannot sit on a log axis: it is left out, legend and all.
        assert!(!log_ticks.iter().any(|t| t == "zero") && linear_ticks.iter().any(|t| t == "zero"));
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(short_number(200.0), "200");
        assert_eq!(short_number(0.05), "0.05");
        assert_eq!(short_number(-2.5), "-2.5");
        assert_eq!(short_number(1234.5678), "1235");
        assert_eq!(short_number(63095.734), "63096");
        assert_eq!(short_number(250000.0), "2.50e5");
    }

    #[test]
    fn boxes_are_the_quartiles_of_the_values() {
        let b = BoxStats::from_values("x", &[4.0, 1.0, 3.0, 2.0, 5.0]);
        assert_eq!(b.five, [1.0, 2.0, 3.0, 4.0, 5.0]);
    }
}
