//! A cache workload's trade-off in one picture: each contender's
//! throughput against its hit ratio, at the headline's thread count (the
//! most threads the cores run without oversubscribing them). Up and right
//! is better: more operations and more hits. Every point is labelled with
//! its contender; a cache that held more than its capacity is a cross (its
//! hit ratio is that of a bigger cache).

use super::Measured;
use super::chart::{self, Chart, is_larder};
use super::legend::{self, Mark};
use super::versus;
use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (1180, 560);
const PLOT_WIDTH: u32 = 880;
/// Label height and the width of one character, in pixels, at 12 pixels.
const LABEL_HEIGHT: i32 = 14;
const CHAR_WIDTH: f64 = 6.6;

struct Point {
    label: String,
    larder: bool,
    over: bool,
    hit_ratio: f64,
    ops_per_sec: f64,
}

/// The chart, when every row of `m` reports a hit ratio and they differ
/// (a workload where every cache hits alike has no trade-off to show).
pub fn draw(m: &Measured, cores: usize, out: &Path) -> Option<Chart> {
    let at = versus::headline_at(m, cores);
    let points: Option<Vec<Point>> = m
        .rows
        .iter()
        .map(|row| {
            Some(Point {
                label: row.contender.clone(),
                larder: is_larder(&row.contender),
                over: row.over_bound(),
                hit_ratio: versus::hit_ratio(row, at)?,
                ops_per_sec: row.cells[at].ops_per_sec,
            })
        })
        .collect();
    let points = points?;
    let (lo, hi) = points.iter().fold((1.0_f64, 0.0_f64), |(lo, hi), p| {
        (lo.min(p.hit_ratio), hi.max(p.hit_ratio))
    });
    if hi - lo < 0.005 {
        return None;
    }
    let threads = m.rows[0].cells[at].threads;
    let caption = format!(
        "{} / {}: throughput against hit ratio, {threads} thread{}",
        m.family,
        m.workload,
        if threads == 1 { "" } else { "s" }
    );
    let file = format!(
        "{}_{}_vs_hit_ratio.svg",
        m.family,
        super::file_stem(&m.workload)
    );
    let (svg, plot) = Chart::draw(out, &file, SIZE, |root| {
        root.fill(&WHITE)?;
        let titled = root.titled(&caption, ("sans-serif", 20))?;
        let (plot, legend_area) = titled.split_horizontally(PLOT_WIDTH);
        // At least 4 points of hit ratio across, so equal caches stay close.
        let pad = ((hi - lo) * 0.12).max(0.02);
        let x_range = (lo - pad).max(0.0)..(hi + pad).min(1.0);
        let (scale, unit) = chart::unit(points.iter().map(|p| p.ops_per_sec).fold(0.0, f64::max));
        let y_max = points
            .iter()
            .map(|p| p.ops_per_sec / scale)
            .fold(0.0, f64::max)
            * 1.12;
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range, 0.0..y_max.max(1e-3))?;
        chart
            .configure_mesh()
            .x_desc("hit ratio (more is better)")
            .y_desc(format!("{unit} (more is better)"))
            .x_label_formatter(&|r| format!("{:.0}%", r * 100.0))
            .light_line_style(TRANSPARENT)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()?;
        let pixels: Vec<(i32, i32)> = points
            .iter()
            .map(|p| chart.backend_coord(&(p.hit_ratio, p.ops_per_sec / scale)))
            .collect();
        let (x0, y0) = chart.backend_coord(&(chart.x_range().start, y_max));
        let (x1, y1) = chart.backend_coord(&(chart.x_range().end, 0.0));
        let mut placed: Vec<[i32; 4]> = pixels
            .iter()
            .map(|&(x, y)| [x - 6, y - 6, x + 6, y + 6])
            .collect();
        // The others first, larder's marks on top.
        let mut order: Vec<usize> = (0..points.len()).collect();
        order.sort_by_key(|&i| points[i].larder);
        for &i in &order {
            let p = &points[i];
            let colour = if p.larder {
                chart::LARDER_MARK
            } else {
                chart::OTHER_MARK
            };
            if p.over {
                root.draw(&Cross::new(pixels[i], 6, colour.stroke_width(2)))?;
            } else {
                let mark = if p.larder { Mark::Circle } else { Mark::Square };
                legend::marker(&root, mark, pixels[i], colour.to_rgba(), true)?;
            }
        }
        // Labels from the top down, each where it covers no mark and no
        // other label.
        order.sort_by_key(|&i| pixels[i].1);
        for &i in &order {
            let p = &points[i];
            let text = if p.over {
                format!("{} † {}", p.label, chart::percent(p.hit_ratio))
            } else {
                format!("{} {}", p.label, chart::percent(p.hit_ratio))
            };
            let width = (text.chars().count() as f64 * CHAR_WIDTH) as i32;
            let bounds = [x0, y0, x1, y1];
            let spot = place(pixels[i], width, &placed, bounds);
            placed.push(spot);
            let colour = if p.larder {
                chart::LARDER_MARK
            } else {
                chart::OTHER_MARK
            };
            let near = (spot[1] + spot[3]) / 2;
            let anchor_x = if spot[0] >= pixels[i].0 {
                spot[0]
            } else {
                spot[2]
            };
            // A label moved up or down points back to its mark.
            if (near - pixels[i].1).abs() > 2 {
                root.draw(&PathElement::new(
                    vec![pixels[i], (anchor_x, near)],
                    RGBColor(150, 150, 150).stroke_width(1),
                ))?;
            }
            let font = ("sans-serif", 12).into_font().color(&colour);
            root.draw(&Text::new(text, (spot[0], spot[1]), font))?;
        }
        let entries = [
            legend::Entry {
                label: "larder".to_string(),
                detail: None,
                style: chart::LARDER_MARK.stroke_width(0),
                mark: Mark::Circle,
            },
            legend::Entry {
                label: "the others".to_string(),
                detail: None,
                style: chart::OTHER_MARK.stroke_width(0),
                mark: Mark::Square,
            },
        ];
        let mut notes = vec![
            "Up and right is better: more operations and more hits. A faster cache that hits \
             less does more work outside the cache."
                .to_string(),
            format!(
                "{threads} thread{} on {cores} cores; each label gives the hit ratio.",
                if threads == 1 { "" } else { "s" }
            ),
        ];
        if points.iter().any(|p| p.over) {
            notes.push(
                "† a cross: held more than its capacity (the hit ratio of a bigger cache, \
                 not comparable)."
                    .to_string(),
            );
        }
        legend::draw(&legend_area, &entries, &notes)?;
        root.present()?;
        Ok(chart::plot_box(&chart))
    })?;
    let message = match versus::headline(m, cores) {
        Some(v) => v.sentence(m),
        None => caption.clone(),
    };
    Some(Chart {
        file,
        svg,
        plot,
        family: m.family,
        workloads: vec![m.workload.clone()],
        kind: "throughput-vs-hit-ratio",
        message,
    })
}

/// A spot `[left, top, right, bottom]` for a label `width` wide near
/// `point`, inside `bounds`, overlapping nothing in `placed`: right of the
/// point, left of it, then further up and down; right of it, over what is
/// there, when every spot is taken.
fn place(point: (i32, i32), width: i32, placed: &[[i32; 4]], bounds: [i32; 4]) -> [i32; 4] {
    let (x, y) = point;
    let rows = (0..12).flat_map(|step| {
        let offset = (step + 1) / 2 * LABEL_HEIGHT;
        if step % 2 == 0 { [offset] } else { [-offset] }
    });
    for dy in rows {
        for left in [x + 8, x - 8 - width] {
            let top = y - LABEL_HEIGHT / 2 + dy;
            let spot = [left, top, left + width, top + LABEL_HEIGHT];
            let inside = spot[0] >= bounds[0]
                && spot[2] <= bounds[2] + 20
                && spot[1] >= bounds[1]
                && spot[3] <= bounds[3];
            let clear = placed
                .iter()
                .all(|b| spot[2] <= b[0] || b[2] <= spot[0] || spot[3] <= b[1] || b[3] <= spot[1]);
            if inside && clear {
                return spot;
            }
        }
    }
    let top = y - LABEL_HEIGHT / 2;
    [x + 8, top, x + 8 + width, top + LABEL_HEIGHT]
}
