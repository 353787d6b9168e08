//! The hit-ratio-against-capacity chart: capacity on a log axis ticked at
//! the measured capacities, the references dashed, each cache a
//! solid line, a cache over its bound a cross off its line, and the legend
//! in a panel right of the plot, clear of the curves.

use super::hit_ratio::Study;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use std::ops::Range;

/// A log axis over capacities in percent, ticked exactly at the capacities
/// measured (plotters' own log axis ticks only at powers of ten).
struct LogPercent {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl Ranged for LogPercent {
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

/// Distinct colours for the caches (the references are black and greys).
const COLORS: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
];

/// Width of the plot; the legend panel takes the rest.
const PLOT_WIDTH: u32 = 760;

pub fn draw(study: &Study, path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let percents = study.percents();
    let lo = percents.iter().copied().fold(f64::MAX, f64::min);
    let hi = percents.iter().copied().fold(0.0, f64::max);
    let root = SVGBackend::new(path, (PLOT_WIDTH + 260, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(&study.caption(), ("sans-serif", 20))?;
    let (plot, legend) = root.split_horizontally(PLOT_WIDTH);
    let axis = LogPercent {
        range: lo / 1.25..hi * 1.25,
        ticks: percents.to_vec(),
    };
    let mut chart = ChartBuilder::on(&plot)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(52)
        .build_cartesian_2d(axis, 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("capacity, % of the keys (log scale)")
        .y_desc("hit ratio")
        .x_label_formatter(&|p| format!("{p}%"))
        .y_label_formatter(&|r: &f64| format!("{:.0}%", r * 100.0))
        .y_labels(11)
        .light_line_style(WHITE)
        .draw()?;

    // (label, style, dashed) for the legend: the references first.
    let mut entries: Vec<super::legend::Entry> = Vec::new();
    let references = study.references().map(|(label, ratios)| {
        let points: Vec<(f64, f64)> = percents.iter().copied().zip(ratios).collect();
        (label, points)
    });
    let reference_styles = [
        BLACK.stroke_width(2),
        RGBColor(70, 70, 70).stroke_width(1),
        RGBColor(110, 110, 110).stroke_width(2),
    ];
    // Dash and gap lengths: the oracle dotted, between OPT and LRU.
    let dashes = [(6, 4), (2, 3), (6, 4)];
    for ((label, _), style) in references.iter().zip(reference_styles) {
        entries.push((label.to_string(), style, true));
    }
    let mut over_any = false;
    for (i, (label, points)) in study.curves().into_iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let style = color.stroke_width(2);
        // A solid line joins neighbouring points that kept their bound; a
        // thin one joins neighbouring crosses (points over the bound).
        let thin = color.stroke_width(1);
        let mut run: Vec<(f64, f64)> = Vec::new();
        let mut over_run: Vec<(f64, f64)> = Vec::new();
        for (&percent, &(ratio, over)) in percents.iter().zip(&points) {
            if over {
                over_any = true;
                chart.draw_series(std::iter::once(Cross::new((percent, ratio), 5, style)))?;
                chart.draw_series(LineSeries::new(std::mem::take(&mut run), style))?;
                over_run.push((percent, ratio));
            } else {
                chart.draw_series(LineSeries::new(std::mem::take(&mut over_run), thin))?;
                run.push((percent, ratio));
                let dot = Circle::new((percent, ratio), 3, color.filled());
                chart.draw_series(std::iter::once(dot))?;
            }
        }
        chart.draw_series(LineSeries::new(run, style))?;
        chart.draw_series(LineSeries::new(over_run, thin))?;
        entries.push((label.to_string(), style, false));
    }
    // The references last, dashed over the caches that run along them.
    for (((_, points), style), (dash, gap)) in
        references.into_iter().zip(reference_styles).zip(dashes)
    {
        chart.draw_series(DashedLineSeries::new(points, dash, gap, style))?;
    }

    let notes: &[&str] = if over_any {
        &[
            "x, thin line: held more than its",
            "capacity (the hit ratio of a bigger",
            "cache: not comparable, not a winner)",
        ]
    } else {
        &["every cache kept its bound"]
    };
    super::legend::draw(&legend, &entries, notes)?;
    root.present()?;
    Ok(())
}
