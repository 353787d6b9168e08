//! Throughput against threads (one chart per workload) and against size
//! (one per family, `--sweep`). Each says one thing: how larder's rows
//! (blues, round markers) stand against the others (warm colours, square
//! markers). Above each thread count, larder's first row over the fastest
//! other row is written; thread counts above the core count are shaded;
//! a cache's hit ratio stands under its name. A workload with more than
//! [`MAX_LINES`] rows draws larder's first row, the fastest others, and the
//! fastest of the rest, and says how many more the table holds (the
//! scatter of a cache workload draws every row).

use super::Measured;
use super::chart::{self, Chart, LogAxis, MAX_LINES, is_larder};
use super::legend::{self, Entry, Mark};
use super::versus::{self, Versus};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

const SIZE: (u32, u32) = (1180, 520);
/// Width of the plot; the legend panel takes the rest.
const PLOT_WIDTH: u32 = 800;

/// One curve.
struct Line {
    label: String,
    detail: Option<String>,
    larder: bool,
    points: Vec<(f64, f64)>,
}

/// Everything one line chart draws.
struct Spec {
    caption: String,
    x_desc: &'static str,
    x_ticks: Vec<f64>,
    x_label: fn(&f64) -> String,
    lines: Vec<Line>,
    /// The x values at and above which the cores are oversubscribed.
    oversubscribed_from: Option<(f64, String)>,
    /// Written above the plot at an x value: a headline and a second line.
    columns: Vec<(f64, String, String)>,
    notes: Vec<String>,
}

/// The chart of one workload's throughput against threads (a bar chart
/// when it ran at one thread count).
pub fn draw(m: &Measured, cores: usize, out: &Path) -> Option<Chart> {
    if m.rows[0].cells.len() == 1 {
        return super::bar_chart::draw(m, cores, out);
    }
    let each = versus::each_thread_count(m, cores);
    let at = versus::headline_at(m, cores);
    let chosen = chosen_rows(m, &each, at);
    let mut lines = Vec::new();
    for &index in &chosen {
        let row = &m.rows[index];
        lines.push(Line {
            label: row.contender.clone(),
            detail: versus::hit_ratio(row, at).map(|ratio| {
                let bound = if row.over_bound() {
                    ", over its bound"
                } else {
                    ""
                };
                format!(
                    "hit ratio {} at {} threads{bound}",
                    chart::percent(ratio),
                    row.cells[at].threads
                )
            }),
            larder: is_larder(&row.contender),
            points: row
                .cells
                .iter()
                .map(|c| (c.threads as f64, c.ops_per_sec))
                .collect(),
        });
    }
    let threads: Vec<f64> = m.rows[0].cells.iter().map(|c| c.threads as f64).collect();
    let first_over = threads.iter().position(|&t| t > cores as f64);
    let oversubscribed_from = first_over.map(|i| {
        let from = if i == 0 {
            threads[0] / 1.25
        } else {
            (threads[i - 1] * threads[i]).sqrt()
        };
        (from, format!("more threads than the {cores} cores"))
    });
    let columns = each
        .iter()
        .map(|v| {
            (
                v.threads as f64,
                format!("larder {}", v.ratio.label()),
                format!("over {}", m.rows[v.other].contender),
            )
        })
        .collect();
    let mut notes = vec![format!(
        "Above each thread count: {} over the fastest other row (above 1: larder is faster).",
        m.rows[0].contender
    )];
    if m.rows.len() > chosen.len() {
        notes.push(format!(
            "{} more rows in the table.",
            m.rows.len() - chosen.len()
        ));
    }
    let spec = Spec {
        caption: format!("{} / {}: throughput", m.family, m.workload),
        x_desc: "threads",
        x_ticks: threads,
        x_label: |x| format!("{x}"),
        lines,
        oversubscribed_from,
        columns,
        notes,
    };
    let file = format!("{}_{}.svg", m.family, super::file_stem(&m.workload));
    let message = match versus::headline(m, cores) {
        Some(v) => v.sentence(m),
        None => format!("{} against threads", m.rows[0].contender),
    };
    let (svg, plot) = Chart::draw(out, &file, SIZE, |root| line_chart(&root, spec))?;
    Some(Chart {
        file,
        svg,
        plot,
        family: m.family,
        workloads: vec![m.workload.clone()],
        kind: "throughput",
        message,
    })
}

/// The rows a workload's chart draws: larder's first row, the fastest
/// other at each thread count, then alternately the fastest remaining
/// larder row and the fastest remaining other at the headline's thread
/// count (a cache that kept its bound before one that did not), up to
/// [`MAX_LINES`]; in the workload's order.
fn chosen_rows(m: &Measured, each: &[Versus], at: usize) -> Vec<usize> {
    let mut chosen = vec![0];
    let mut by_need: Vec<&Versus> = each.iter().collect();
    by_need.sort_by_key(|v| (v.oversubscribed, v.at != at));
    for v in by_need {
        if !chosen.contains(&v.other) && chosen.len() < MAX_LINES {
            chosen.push(v.other);
        }
    }
    let ranked = |larder: bool, chosen: &[usize]| {
        let mut rest: Vec<usize> = (0..m.rows.len())
            .filter(|i| !chosen.contains(i) && is_larder(&m.rows[*i].contender) == larder)
            .collect();
        // Caches that kept their bound first (one over it skipped
        // evictions), then the fastest.
        rest.sort_by(|&a, &b| {
            let speed = |i: usize| m.rows[i].cells[at].ops_per_sec;
            let over = |i: usize| m.rows[i].over_bound();
            over(a).cmp(&over(b)).then(speed(b).total_cmp(&speed(a)))
        });
        rest
    };
    let (mut larder_rest, mut other_rest) = (ranked(true, &chosen), ranked(false, &chosen));
    larder_rest.reverse();
    other_rest.reverse();
    let mut larder_turn = true;
    while chosen.len() < MAX_LINES && !(larder_rest.is_empty() && other_rest.is_empty()) {
        let next = if larder_turn {
            larder_rest.pop().or_else(|| other_rest.pop())
        } else {
            other_rest.pop().or_else(|| larder_rest.pop())
        };
        chosen.extend(next);
        larder_turn = !larder_turn;
    }
    chosen.sort_unstable();
    chosen
}

/// Throughput against size (entries, the last word of each workload name),
/// one chart per family at its highest thread count.
pub fn draw_sweep(results: &[Measured], out: &Path) -> Vec<Chart> {
    use std::collections::BTreeMap;
    // family -> (threads, workloads, contender -> points), contenders in
    // the workloads' order.
    type Curves = Vec<(String, Vec<(f64, f64)>)>;
    let mut families: BTreeMap<&'static str, (usize, Vec<String>, Curves)> = BTreeMap::new();
    for m in results {
        let Some(entries) = m
            .workload
            .split_whitespace()
            .last()
            .and_then(|w| w.parse::<f64>().ok())
        else {
            continue;
        };
        let (threads, workloads, curves) = families.entry(m.family).or_default();
        workloads.push(m.workload.clone());
        for row in &m.rows {
            let Some(cell) = row.cells.iter().max_by_key(|c| c.threads) else {
                continue;
            };
            *threads = cell.threads;
            let point = (entries, cell.ops_per_sec);
            match curves.iter_mut().find(|(name, _)| *name == row.contender) {
                Some((_, points)) => points.push(point),
                None => curves.push((row.contender.clone(), vec![point])),
            }
        }
    }
    let mut charts = Vec::new();
    for (family, (threads, workloads, mut curves)) in families {
        // The first row, then the fastest of the rest at the largest size.
        let total = curves.len();
        let last_speed = |points: &[(f64, f64)]| {
            points
                .iter()
                .copied()
                .fold((0.0, 0.0), |a, p| if p.0 >= a.0 { p } else { a })
                .1
        };
        let first = curves.remove(0);
        curves.sort_by(|a, b| last_speed(&b.1).total_cmp(&last_speed(&a.1)));
        curves.truncate(MAX_LINES - 1);
        curves.insert(0, first);
        let mut ticks: Vec<f64> = curves
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.0))
            .collect();
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        let mut notes = Vec::new();
        if total > curves.len() {
            notes.push(format!("{} more rows in the tables.", total - curves.len()));
        }
        let spec = Spec {
            caption: format!("{family}: throughput against entries ({threads} threads)"),
            x_desc: "entries (log scale)",
            x_ticks: ticks,
            x_label: |x| match *x {
                x if x >= 1e6 => format!("{}M", x / 1e6),
                x if x >= 1e3 => format!("{}K", x / 1e3),
                x => format!("{x}"),
            },
            lines: curves
                .into_iter()
                .map(|(label, points)| Line {
                    larder: is_larder(&label),
                    label,
                    detail: None,
                    points,
                })
                .collect(),
            oversubscribed_from: None,
            columns: Vec::new(),
            notes,
        };
        let file = format!("sweep_{family}.svg");
        let message =
            format!("{family}: throughput against the number of entries, {threads} threads");
        if let Some((svg, plot)) = Chart::draw(out, &file, SIZE, |root| line_chart(&root, spec)) {
            charts.push(Chart {
                file,
                svg,
                plot,
                family,
                workloads,
                kind: "sweep",
                message,
            });
        }
    }
    charts
}

fn line_chart(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    spec: Spec,
) -> Result<[i32; 4], Box<dyn std::error::Error>> {
    // `root` starts at the backend's origin: what is drawn on it at a
    // chart's backend coordinates lands on the chart.
    root.fill(&WHITE)?;
    let titled = root.titled(&spec.caption, ("sans-serif", 20))?;
    let (plot, legend_area) = titled.split_horizontally(PLOT_WIDTH);
    let (scale, unit) = chart::unit(
        spec.lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0_f64, f64::max),
    );
    let y_max = spec
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1 / scale))
        .fold(0.0_f64, f64::max)
        * 1.08;
    let y_max = y_max.max(1e-3);
    let axis = LogAxis::over(&spec.x_ticks, 1.3);
    let x_range = axis.range.clone();
    let mut chart = ChartBuilder::on(&plot)
        .margin(12)
        .margin_top(if spec.columns.is_empty() { 12 } else { 52 })
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(axis, 0.0..y_max)?;
    // The shading first, under the mesh and the curves.
    if let Some((from, label)) = &spec.oversubscribed_from {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(*from, 0.0), (x_range.end, y_max)],
            chart::OVERSUBSCRIBED.filled(),
        )))?;
        // Along the band's foot, clear of the curves' usual heights.
        let (x, y) = chart.backend_coord(&(*from, 0.0));
        let font = ("sans-serif", 13)
            .into_font()
            .color(&RGBColor(90, 90, 90))
            .pos(Pos::new(HPos::Left, VPos::Bottom));
        root.draw(&Text::new(label.clone(), (x + 6, y - 6), font))?;
    }
    chart
        .configure_mesh()
        .x_desc(spec.x_desc)
        .y_desc(unit)
        .x_label_formatter(&spec.x_label)
        .light_line_style(TRANSPARENT)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()?;

    let mut entries = Vec::new();
    let (mut larders, mut others) = (0, 0);
    let over_from = spec.oversubscribed_from.as_ref().map(|(from, _)| *from);
    // The others first, so larder's lines lie on top.
    let mut order: Vec<&Line> = spec.lines.iter().filter(|l| !l.larder).collect();
    order.extend(spec.lines.iter().filter(|l| l.larder));
    let mut styles = Vec::new();
    for line in &spec.lines {
        let nth = if line.larder {
            &mut larders
        } else {
            &mut others
        };
        styles.push(chart::line_style(line.larder, *nth));
        *nth += 1;
    }
    for line in order {
        let index = spec
            .lines
            .iter()
            .position(|l| std::ptr::eq(l, line))
            .expect("a line of the spec");
        let style = styles[index];
        let mark = if line.larder {
            Mark::Circle
        } else {
            Mark::Square
        };
        let mut points: Vec<(f64, f64)> = line.points.iter().map(|p| (p.0, p.1 / scale)).collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart.draw_series(LineSeries::new(points.clone(), style))?;
        for point in points {
            let filled = over_from.is_none_or(|from| point.0 < from);
            legend::marker(root, mark, chart.backend_coord(&point), style.color, filled)?;
        }
    }
    for (line, style) in spec.lines.iter().zip(styles) {
        entries.push(Entry {
            label: line.label.clone(),
            detail: line.detail.clone(),
            style,
            mark: if line.larder {
                Mark::Circle
            } else {
                Mark::Square
            },
        });
    }

    for (x, headline, second) in &spec.columns {
        let (px, top) = chart.backend_coord(&(*x, y_max));
        let columns = spec.columns.len().max(1) as u32;
        let chars = ((PLOT_WIDTH - 80) / columns / 7) as usize;
        let bold = ("sans-serif", 15)
            .into_font()
            .style(FontStyle::Bold)
            .color(&chart::LARDER_MARK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        let small = ("sans-serif", 12)
            .into_font()
            .color(&RGBColor(70, 70, 70))
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        root.draw(&Text::new(headline.clone(), (px, top - 22), bold))?;
        root.draw(&Text::new(
            chart::shorten(second, chars),
            (px, top - 6),
            small,
        ))?;
    }
    legend::draw(&legend_area, &entries, &spec.notes)?;
    root.present()?;
    Ok(chart::plot_box(&chart))
}

#[cfg(test)]
mod tests {
    use super::{MAX_LINES, chosen_rows};
    use crate::versus::{each_thread_count, headline_at, sample};

    #[test]
    fn a_chart_keeps_larders_first_row_and_the_fastest_others() {
        let mut rows = Vec::new();
        for i in 0..7 {
            rows.push((format!("larder {i}"), [10.0 + i as f64; 3]));
        }
        for (i, speeds) in [[1.0, 2.0, 9.0], [3.0, 1.0, 1.0], [2.0, 9.0, 1.0]]
            .into_iter()
            .chain([[0.5; 3]; 3])
            .enumerate()
        {
            rows.push((format!("peer {i}"), speeds));
        }
        let named: Vec<(&str, [f64; 3])> = rows.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        let m = sample(&named);
        let chosen = chosen_rows(&m, &each_thread_count(&m, 2), headline_at(&m, 2));
        assert_eq!(chosen.len(), MAX_LINES);
        // larder's first row, the fastest other at 2, 1 and 4 threads
        // (rows 9, 8, 7), then the fastest remaining larder row and the
        // fastest remaining other, in the workload's order.
        assert_eq!(chosen, [0, 6, 7, 8, 9, 10]);
        // A faster other over its bound comes after one that kept it.
        let mut m = m;
        m.rows[10].bound = Some((11, 10));
        m.rows[10].cells[1].ops_per_sec = 0.9;
        let chosen = chosen_rows(&m, &each_thread_count(&m, 2), headline_at(&m, 2));
        assert_eq!(chosen, [0, 6, 7, 8, 9, 11]);
    }
}
