//! `index.html`: the showdown as one page to open in a browser, after
//! criterion's `report/index.html`. It is self-contained: the charts are
//! inlined SVG, the style is inline, there is no script, and its content
//! security policy forbids the browser to fetch anything, so it reads the
//! same offline, from a CI artifact or from a mail attachment.
//!
//! The order is the reader's: the machine's state and the warnings first
//! (they say how far to trust every figure below), a table of the
//! primitives with their headline ratio, then per primitive the headline,
//! and per workload its one-line message, its charts and its table.
//! `report.md` and `report.json` are linked for the figures as text.

use super::chart::Chart;
use super::hit_ratio::{self, Study};
use super::table::escape;
use super::versus::{self, Versus};
use super::{CELLS, Measured, file_stem, workload_table};
use std::fmt::Write as _;

/// Everything the page shows.
pub struct Page<'a> {
    pub results: &'a [Measured],
    pub studies: &'a [Study],
    pub charts: &'a [Chart],
    /// The run's conditions (machine, mode, idle check, host speed).
    pub state: &'a str,
    pub warnings: &'a [String],
    pub cores: usize,
}

/// The primitive a family measures, as the page titles it.
fn title(family: &str) -> &str {
    match family {
        "snapshot" => "Snapshot",
        "indexed" => "IndexedStore",
        "ordered" => "OrderedIndex",
        "lru" => "LruCache",
        "typed" => "TypedCache and AnyCache",
        "workqueue" => "WorkQueue",
        other => other,
    }
}

const STYLE: &str = "
body { font: 15px/1.45 system-ui, -apple-system, 'Segoe UI', sans-serif; color: #1a1a1a;
  max-width: 1240px; margin: 0 auto; padding: 0 20px 40px; }
h1 { margin: 24px 0 4px; }
h2 { margin-top: 40px; border-bottom: 2px solid #08458f; padding-bottom: 4px; }
h3 { margin: 28px 0 6px; }
a { color: #08458f; }
.state { background: #f4f6f9; padding: 10px 14px; border-radius: 4px; }
.warnings { background: #fff3e6; border-left: 5px solid #d94801; padding: 8px 14px; margin: 12px 0; }
.warnings h2 { border: none; margin: 4px 0; font-size: 17px; }
.warnings li { margin: 4px 0; }
.ok { border-left: 5px solid #31a354; padding: 6px 12px; background: #f1f8f2; }
.headline { font-size: 16px; }
.headline strong { color: #08458f; }
figure { margin: 10px 0 14px; }
figure svg { width: 100%; height: auto; max-width: 1180px; display: block;
  border: 1px solid #e2e2e2; }
figcaption { color: #555; font-size: 13px; margin-top: 3px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #d9d9d9; padding: 3px 8px; }
th { background: #f4f6f9; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.larder td:first-child { border-left: 5px solid #08458f; font-weight: 600; }
.key span { display: inline-block; width: 14px; height: 14px; vertical-align: -2px;
  margin: 0 4px 0 10px; }
";

pub fn render(page: &Page<'_>) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>larder showdown</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>larder showdown</h1>\n\
         <p>Every larder primitive against what you would otherwise use, measured side by \
         side in one run. The same figures as text: <a href=\"report.md\">report.md</a> \
         (the tables) and <a href=\"report.json\">report.json</a> (every round's figure and \
         ratio); each chart is also an SVG file beside this page.</p>\n"
    );
    machine(&mut out, page);
    contents(&mut out, page);
    for family in families(page) {
        section(&mut out, page, family);
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The families measured, in the run's order (the hit-ratio study is
/// LruCache's).
fn families(page: &Page<'_>) -> Vec<&'static str> {
    let mut families: Vec<&'static str> = Vec::new();
    let measured = page.results.iter().map(|m| m.family);
    for family in measured.chain(page.studies.iter().map(|_| "lru")) {
        if !families.contains(&family) {
            families.push(family);
        }
    }
    families
}

fn machine(out: &mut String, page: &Page<'_>) {
    let _ = writeln!(out, "<p class=\"state\">{}</p>", escape(page.state));
    if page.warnings.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"ok\">No warnings: the machine was idle and every thread count ran on \
             its own core.</p>"
        );
    } else {
        out.push_str("<div class=\"warnings\"><h2>Warnings</h2>\n<ul>\n");
        for warning in page.warnings {
            let _ = writeln!(out, "<li>{}.</li>", escape(&capitalized(warning)));
        }
        out.push_str("</ul></div>\n");
    }
    let _ = writeln!(
        out,
        "<p class=\"key\">On the charts:<span style=\"background:#08458f\"></span>larder \
         (blues, round markers)<span style=\"background:#d94801\"></span>the others (warm \
         colours, square markers)<span style=\"background:#e8e8e8\"></span>more threads than \
         the {} cores. Above each thread count, larder's first row over the fastest other \
         row: above 1, larder is faster.</p>\n<p>{}</p>",
        page.cores,
        escape(CELLS)
    );
}

/// `text` with its first word capitalized, unless that word is a name
/// (`moka::sync::Cache` stays as it is).
fn capitalized(text: &str) -> String {
    let first_word = text.split_whitespace().next().unwrap_or("");
    if !first_word.chars().all(|c| c.is_ascii_lowercase()) {
        return text.to_string();
    }
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The family's headline: larder's first row over the fastest other row
/// at the headline's thread count, the lowest and the highest of its
/// workloads.
fn family_headline(page: &Page<'_>, family: &str) -> Option<String> {
    let lines: Vec<(&Measured, Versus)> = page
        .results
        .iter()
        .filter(|m| m.family == family)
        .filter_map(|m| versus::headline(m, page.cores).map(|v| (m, v)))
        .collect();
    let (low, high) = (
        lines
            .iter()
            .min_by(|a, b| a.1.ratio.median.total_cmp(&b.1.ratio.median))?,
        lines
            .iter()
            .max_by(|a, b| a.1.ratio.median.total_cmp(&b.1.ratio.median))?,
    );
    let threads = low.1.threads;
    let at = format!("at {threads} thread{}", if threads == 1 { "" } else { "s" });
    Some(if lines.len() == 1 {
        format!(
            "{} <strong>x{:.2}</strong> over the fastest other row ({}), {at}.",
            escape(&low.0.rows[0].contender),
            low.1.ratio.median,
            escape(&low.0.rows[low.1.other].contender)
        )
    } else {
        format!(
            "larder's first row over the fastest other row, {at}: from <strong>x{:.2}</strong> \
             ({}) to <strong>x{:.2}</strong> ({}) over {} workloads.",
            low.1.ratio.median,
            escape(&low.0.workload),
            high.1.ratio.median,
            escape(&high.0.workload),
            lines.len()
        )
    })
}

fn contents(out: &mut String, page: &Page<'_>) {
    out.push_str(
        "<h2>Primitives</h2>\n<table>\n<thead><tr><th>primitive</th>\
                  <th>headline</th></tr></thead>\n<tbody>\n",
    );
    for family in families(page) {
        let headline = family_headline(page, family)
            .unwrap_or_else(|| "hit ratio against capacity".to_string());
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#{family}\">{}</a></td><td>{headline}</td></tr>",
            title(family)
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

fn figure(out: &mut String, chart: &Chart) {
    let _ = writeln!(
        out,
        "<figure data-chart=\"{file}\">\n{svg}<figcaption>{message}. \
         <a href=\"{file}\">{file}</a></figcaption>\n</figure>",
        file = escape(&chart.file),
        svg = chart.svg,
        message = escape(&chart.message),
    );
}

fn section(out: &mut String, page: &Page<'_>, family: &'static str) {
    let _ = writeln!(out, "<section id=\"{family}\">\n<h2>{}</h2>", title(family));
    if let Some(headline) = family_headline(page, family) {
        let _ = writeln!(out, "<p class=\"headline\">{headline}</p>");
    }
    // Charts of several workloads (a size sweep) open the section.
    for chart in page
        .charts
        .iter()
        .filter(|c| c.family == family && c.workloads.len() > 1)
    {
        figure(out, chart);
    }
    let of_workload = |workload: &str| -> Vec<&Chart> {
        page.charts
            .iter()
            .filter(|c| c.family == family && c.workloads.len() == 1 && c.workloads[0] == workload)
            .collect()
    };
    for m in page.results.iter().filter(|m| m.family == family) {
        let _ = writeln!(
            out,
            "<article id=\"{family}-{}\">\n<h3>{family} / {}</h3>",
            file_stem(&m.workload),
            escape(&m.workload)
        );
        if let Some(v) = versus::headline(m, page.cores) {
            let _ = writeln!(out, "<p class=\"headline\">{}.</p>", escape(&v.sentence(m)));
        }
        for chart in of_workload(&m.workload) {
            figure(out, chart);
        }
        out.push_str(&workload_table(m).html());
        out.push_str("</article>\n");
    }
    if family == "lru" {
        for study in page.studies {
            let _ = writeln!(
                out,
                "<article id=\"lru-{}\">\n<h3>{}</h3>\n<p>{}</p>",
                file_stem(&study.workload),
                escape(&hit_ratio::heading(study)),
                escape(&hit_ratio::description(study))
            );
            for chart in of_workload(&study.workload) {
                figure(out, chart);
            }
            let (ratios, held) = hit_ratio::tables(study);
            out.push_str(&ratios.html());
            out.push_str(
                "<p>Entries held at the end / capacity (and the most seen held, when above \
                 it):</p>\n",
            );
            out.push_str(&held.html());
            out.push_str("</article>\n");
        }
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::{Page, render};
    use crate::chart::Chart;
    use crate::versus::sample;

    #[test]
    fn the_page_holds_its_charts_and_fetches_nothing() {
        let m = sample(&[("larder A", [1.0, 2.0, 3.0]), ("B<T>", [2.0, 2.0, 2.0])]);
        let chart = Chart {
            file: "lru_sample.svg".to_string(),
            svg: "<svg xmlns=\"http://www.w3.org/2000/svg\"><rect/></svg>\n".to_string(),
            plot: [0, 0, 10, 10],
            family: "lru",
            workloads: vec!["sample".to_string()],
            kind: "throughput",
            message: "a message".to_string(),
        };
        let warnings = [
            "moka::sync::Cache held more".to_string(),
            "two threads".to_string(),
        ];
        let html = render(&Page {
            results: &[m],
            studies: &[],
            charts: &[chart],
            state: "Machine: 2 cores.",
            warnings: &warnings,
            cores: 2,
        });
        assert!(html.contains("content=\"default-src 'none'; style-src 'unsafe-inline'\""));
        assert!(html.contains("<figure data-chart=\"lru_sample.svg\">\n<svg"));
        assert!(
            html.contains("<a href=\"report.md\">") && html.contains("<a href=\"report.json\">")
        );
        // The warnings come before the first section; a name keeps its case.
        let warned = html
            .find("<li>moka::sync::Cache held more.</li>")
            .expect("warning");
        assert!(html.contains("<li>Two threads.</li>"));
        assert!(warned < html.find("<section").expect("a section"));
        assert!(html.contains("<td>B&lt;T&gt;</td>"));
        assert!(html.contains("larder A x1.00 over the fastest other, B&lt;T&gt;, at 2 threads"));
        // Nothing to fetch: no source attribute, no link off the page but
        // the SVG namespace (a name, never fetched).
        assert!(!html.contains(" src="));
        let urls = html.matches("://").count();
        assert_eq!(urls, html.matches("http://www.w3.org/2000/svg").count());
    }
}
