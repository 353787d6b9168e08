//! What every chart of the showdown shares: the written chart, its
//! colours (larder's rows in blues, the others in warm colours, the
//! references in black and greys), a log axis ticked where the data is,
//! and the shaded band of thread counts that oversubscribe the cores.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;
use std::ops::Range;
use std::path::Path;

/// Lines one chart carries at most; a workload with more rows draws the
/// ones that carry its message and names how many the table adds.
pub const MAX_LINES: usize = 6;

/// One chart written by the run: its file, its SVG (the page inlines it)
/// and what it shows.
pub struct Chart {
    /// The file name in the output folder.
    pub file: String,
    pub svg: String,
    /// The plotting area `[left, top, right, bottom]` in the SVG's pixels:
    /// where the data is drawn (the legend and the titles lie outside).
    pub plot: [i32; 4],
    pub family: &'static str,
    /// The workloads it draws (names within the family): one for most
    /// charts, every size for a sweep chart.
    pub workloads: Vec<String>,
    /// `throughput`, `throughput-vs-hit-ratio`, `hit-ratio`, `sweep`.
    pub kind: &'static str,
    /// What the chart says, in one line (the page's caption for it).
    pub message: String,
}

impl Chart {
    /// Draws a `size` chart with `draw` (which returns its plotting area,
    /// [`plot_box`]) into a string, then writes it to `out/file`: the SVG
    /// and the plotting area. None (reported on stderr) when either step
    /// fails.
    pub fn draw(
        out: &Path,
        file: &str,
        size: (u32, u32),
        draw: impl FnOnce(
            DrawingArea<SVGBackend<'_>, Shift>,
        ) -> Result<[i32; 4], Box<dyn std::error::Error>>,
    ) -> Option<(String, [i32; 4])> {
        let mut svg = String::new();
        let drawn = draw(SVGBackend::with_string(&mut svg, size).into_drawing_area());
        let written = drawn.and_then(|plot| {
            std::fs::write(out.join(file), &svg)?;
            Ok(plot)
        });
        match written {
            Ok(plot) => Some((svg, plot)),
            Err(e) => {
                eprintln!("chart {file} failed: {e}");
                None
            }
        }
    }

    /// The entry of `report.json`'s chart list.
    pub fn json(&self) -> serde_json::Value {
        let workloads: Vec<String> = self
            .workloads
            .iter()
            .map(|w| format!("{} / {w}", self.family))
            .collect();
        serde_json::json!({
            "file": self.file,
            "plot": self.plot,
            "kind": self.kind,
            "workloads": workloads,
            "message": self.message,
        })
    }
}

/// The plotting area of `chart`, `[left, top, right, bottom]` in pixels.
pub fn plot_box<DB: DrawingBackend, CT: CoordTranslate>(
    chart: &ChartContext<'_, DB, CT>,
) -> [i32; 4] {
    let (x, y) = chart.plotting_area().get_pixel_range();
    [x.start, y.start, x.end, y.end]
}

/// Whether a row is one of larder's (every larder contender is named so).
pub fn is_larder(name: &str) -> bool {
    name.starts_with("larder")
}

/// larder's rows: blues, dark to light.
const LARDER: [RGBColor; 4] = [
    RGBColor(8, 69, 148),
    RGBColor(49, 130, 189),
    RGBColor(107, 174, 214),
    RGBColor(8, 48, 107),
];
/// The other rows: warm colours, each far from the blues and from the
/// others.
const OTHERS: [RGBColor; 5] = [
    RGBColor(217, 72, 1),
    RGBColor(153, 52, 4),
    RGBColor(241, 163, 64),
    RGBColor(203, 24, 29),
    RGBColor(140, 109, 49),
];
/// One blue and one warm colour for charts that label every point.
pub const LARDER_MARK: RGBColor = LARDER[0];
pub const OTHER_MARK: RGBColor = OTHERS[0];

/// The colour of the `nth` larder row or the `nth` other row of a chart.
pub fn colour(larder: bool, nth: usize) -> RGBColor {
    if larder {
        LARDER[nth % LARDER.len()]
    } else {
        OTHERS[nth % OTHERS.len()]
    }
}

/// The line style of a row: larder's lines are the thicker.
pub fn line_style(larder: bool, nth: usize) -> ShapeStyle {
    colour(larder, nth).stroke_width(if larder { 3 } else { 2 })
}

/// The shading of the thread counts above the core count.
pub const OVERSUBSCRIBED: RGBColor = RGBColor(232, 232, 232);

/// A log axis ticked exactly at the values measured (plotters' own log
/// axis ticks only at powers of its base).
pub struct LogAxis {
    pub range: Range<f64>,
    pub ticks: Vec<f64>,
}

impl LogAxis {
    /// An axis over `ticks` with `pad` (a factor) of room either side.
    pub fn over(ticks: &[f64], pad: f64) -> Self {
        let lo = ticks.iter().copied().fold(f64::MAX, f64::min);
        let hi = ticks.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
        let lo = if lo == f64::MAX { 1.0 } else { lo };
        Self {
            range: lo / pad..hi.max(lo * 1.01) * pad,
            ticks: ticks.to_vec(),
        }
    }
}

impl Ranged for LogAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = (self.range.end / self.range.start).ln();
        let at = (value / self.range.start).ln() / span;
        limit.0 + (f64::from(limit.1 - limit.0) * at).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The unit a throughput axis reads in, for the largest figure
/// `max_ops_per_sec`: `(operations per unit, axis label)`, so the ticks
/// read 0.5 to 500 rather than 0.0005.
pub fn unit(max_ops_per_sec: f64) -> (f64, &'static str) {
    if max_ops_per_sec >= 1e6 {
        (1e6, "million operations / s")
    } else if max_ops_per_sec >= 1e3 {
        (1e3, "thousand operations / s")
    } else {
        (1.0, "operations / s")
    }
}

/// `name` cut to `chars` characters, an ellipsis marking the cut.
pub fn shorten(name: &str, chars: usize) -> String {
    if name.chars().count() <= chars {
        name.to_string()
    } else {
        let kept: String = name.chars().take(chars.saturating_sub(1)).collect();
        format!("{}…", kept.trim_end())
    }
}

/// A percentage with one decimal (`61.3%`).
pub fn percent(ratio: f64) -> String {
    format!("{:.1}%", ratio * 100.0)
}
