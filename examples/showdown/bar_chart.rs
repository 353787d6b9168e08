//! A workload measured at one thread count: one bar per contender (a line
//! through one point says nothing), larder's bars blue and the others
//! warm, each with its throughput and larder's first row over it written
//! at its end.

use super::Measured;
use super::chart::{self, Chart, is_larder};
use super::ratio::Ratio;
use super::versus;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Height of one bar's row, in pixels.
const ROW: u32 = 30;
/// Width of the names left of the bars.
const NAMES: u32 = 380;

pub fn draw(m: &Measured, cores: usize, out: &Path) -> Option<Chart> {
    let threads = m.rows[0].cells[0].threads;
    let rows = m.rows.len() as u32;
    let size = (1180, 110 + ROW * rows);
    let (scale, unit) = chart::unit(
        m.rows
            .iter()
            .map(|r| r.cells[0].ops_per_sec)
            .fold(0.0, f64::max),
    );
    let headline = versus::headline(m, cores);
    let mut caption = format!(
        "{} / {}: throughput, {threads} thread{}",
        m.family,
        m.workload,
        if threads == 1 { "" } else { "s" }
    );
    if threads > cores {
        caption.push_str(&format!(" (more than the {cores} cores)"));
    }
    let file = format!("{}_{}.svg", m.family, super::file_stem(&m.workload));
    let (svg, plot) = Chart::draw(out, &file, size, |root| {
        root.fill(&WHITE)?;
        let titled = root.titled(&caption, ("sans-serif", 20))?;
        let x_max = m
            .rows
            .iter()
            .map(|r| r.cells[0].ops_per_sec / scale)
            .fold(0.0, f64::max)
            * 1.3;
        let mut chart = ChartBuilder::on(&titled)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(44)
            .y_label_area_size(NAMES)
            .build_cartesian_2d(0.0..x_max.max(1e-9), 0.0..f64::from(rows))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(unit)
            .light_line_style(TRANSPARENT)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()?;
        let first = &m.rows[0];
        for (i, row) in m.rows.iter().enumerate() {
            // One colour a family: the bars are told apart by their names.
            let colour = chart::colour(is_larder(&row.contender), 0);
            let value = row.cells[0].ops_per_sec / scale;
            let top = f64::from(rows) - i as f64 - 0.15;
            let bottom = top - 0.7;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, bottom), (value, top)],
                colour.filled(),
            )))?;
            let (x, y) = chart.backend_coord(&(value, (top + bottom) / 2.0));
            let mut label = super::format_mops(value);
            if i > 0 {
                let ratio = Ratio::of(&first.cells[0].rounds, &row.cells[0].rounds);
                label.push_str(&format!("   larder {}", ratio.label()));
            }
            if row.over_bound() {
                label.push_str(", over its bound");
            }
            let font = ("sans-serif", 13)
                .into_font()
                .color(&RGBColor(40, 40, 40))
                .pos(Pos::new(HPos::Left, VPos::Center));
            root.draw(&Text::new(label, (x + 6, y), font))?;
            let (left, _) = chart.backend_coord(&(0.0, 0.0));
            let name_font = ("sans-serif", 14)
                .into_font()
                .color(&colour)
                .pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(
                chart::shorten(&row.contender, 52),
                (left - 8, y),
                name_font,
            ))?;
        }
        root.present()?;
        Ok(chart::plot_box(&chart))
    })?;
    let message = match headline {
        Some(v) => v.sentence(m),
        None => caption.clone(),
    };
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
