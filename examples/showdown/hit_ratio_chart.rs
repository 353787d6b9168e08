//! The hit-ratio-against-capacity charts, two per trace so each carries
//! one message in at most about six lines:
//!
//! - **larder's policies** against the three references (OPT, the
//!   popularity oracle, exact LRU): how close each policy comes to the
//!   bound;
//! - **the others** against OPT and exact LRU (the exact-LRU peer hits
//!   exactly as the reference, so it is named beside it rather than drawn
//!   over it), with larder's best policy for comparison.
//!
//! Capacity is on a log axis ticked at the measured capacities; the
//! references are dashed, each cache a solid line (larder's blue, the
//! others warm), a cache over its bound a cross off its line, and the
//! legend in a panel right of the plot, clear of the curves.

use super::chart::{self, LogAxis, is_larder};
use super::hit_ratio::Study;
use super::legend::{Entry, Mark};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width of the plot; the legend panel takes the rest.
const PLOT_WIDTH: u32 = 760;
pub const SIZE: (u32, u32) = (PLOT_WIDTH + 300, 520);

/// A reference curve: label, hit ratio at each capacity, style, and
/// dash and gap lengths.
type Reference = (String, Vec<f64>, ShapeStyle, (u32, u32));

/// Which of a trace's two charts.
#[derive(Clone, Copy, PartialEq)]
pub enum Part {
    Larder,
    Others,
}

impl Part {
    pub fn file_suffix(self) -> &'static str {
        match self {
            Part::Larder => "larder",
            Part::Others => "others",
        }
    }
}

pub fn draw(
    study: &Study,
    part: Part,
    root: &DrawingArea<SVGBackend<'_>, Shift>,
) -> Result<[i32; 4], Box<dyn std::error::Error>> {
    let percents = study.percents();
    root.fill(&WHITE)?;
    let title = match part {
        Part::Larder => format!("{}: larder's policies", study.caption()),
        Part::Others => format!("{}: the others", study.caption()),
    };
    let titled = root.titled(&title, ("sans-serif", 18))?;
    let (plot, legend) = titled.split_horizontally(PLOT_WIDTH);
    let axis = LogAxis::over(percents, 1.25);
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
        .light_line_style(TRANSPARENT)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()?;

    let [opt, oracle, lru] = study.references();
    let references: Vec<Reference> = match part {
        Part::Larder => vec![
            (opt.0.to_string(), opt.1, BLACK.stroke_width(2), (6, 4)),
            // The oracle dotted, between OPT and LRU.
            (
                oracle.0.to_string(),
                oracle.1,
                RGBColor(70, 70, 70).stroke_width(1),
                (2, 3),
            ),
            (
                lru.0.to_string(),
                lru.1,
                RGBColor(110, 110, 110).stroke_width(2),
                (6, 4),
            ),
        ],
        Part::Others => vec![
            (opt.0.to_string(), opt.1, BLACK.stroke_width(2), (6, 4)),
            (
                format!("{} = {}", lru.0, super::hit_ratio::EXACT_LRU_PEER),
                lru.1,
                RGBColor(110, 110, 110).stroke_width(2),
                (6, 4),
            ),
        ],
    };
    let curves = study.curves();
    let best = study.best_larder_policy();
    let drawn: Vec<_> = curves
        .iter()
        .filter(|(label, _)| match part {
            Part::Larder => is_larder(label),
            Part::Others => {
                (!is_larder(label) && *label != super::hit_ratio::EXACT_LRU_PEER)
                    || Some(*label) == best
            }
        })
        .collect();

    let mut entries: Vec<Entry> = references
        .iter()
        .map(|(label, _, style, _)| Entry {
            label: label.clone(),
            detail: None,
            style: *style,
            mark: Mark::Dashed,
        })
        .collect();
    let (mut larders, mut others) = (0, 0);
    let mut over_any = false;
    for (label, points) in drawn {
        let larder = is_larder(label);
        let nth = if larder { &mut larders } else { &mut others };
        let style = chart::line_style(larder, *nth);
        *nth += 1;
        let colour = style.color;
        // A solid line joins neighbouring points that kept their bound; a
        // thin one joins neighbouring crosses (points over the bound).
        let thin = colour.stroke_width(1);
        let mark = if larder { Mark::Circle } else { Mark::Square };
        let mut run: Vec<(f64, f64)> = Vec::new();
        let mut over_run: Vec<(f64, f64)> = Vec::new();
        for (&percent, &(ratio, over)) in percents.iter().zip(points) {
            if over {
                over_any = true;
                chart.draw_series(std::iter::once(Cross::new((percent, ratio), 5, style)))?;
                chart.draw_series(LineSeries::new(std::mem::take(&mut run), style))?;
                over_run.push((percent, ratio));
            } else {
                chart.draw_series(LineSeries::new(std::mem::take(&mut over_run), thin))?;
                run.push((percent, ratio));
                let at = chart.backend_coord(&(percent, ratio));
                super::legend::marker(root, mark, at, colour, true)?;
            }
        }
        chart.draw_series(LineSeries::new(run, style))?;
        chart.draw_series(LineSeries::new(over_run, thin))?;
        let detail =
            (part == Part::Others && larder).then(|| "larder's best policy here".to_string());
        entries.push(Entry {
            label: label.to_string(),
            detail,
            style,
            mark,
        });
    }
    // The references last, dashed over the caches that run along them.
    for (_, ratios, style, (dash, gap)) in references {
        let points: Vec<(f64, f64)> = percents.iter().copied().zip(ratios).collect();
        chart.draw_series(DashedLineSeries::new(points, dash, gap, style))?;
    }

    let mut notes = Vec::new();
    if over_any {
        notes.push(
            "x, thin line: held more than its capacity (the hit ratio of a bigger cache: not \
             comparable, not a winner)."
                .to_string(),
        );
    } else {
        notes.push("Every cache kept its bound.".to_string());
    }
    super::legend::draw(&legend, &entries, &notes)?;
    root.present()?;
    Ok(chart::plot_box(&chart))
}
