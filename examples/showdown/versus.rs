//! larder's first row against the fastest other row: the message of a
//! throughput chart and the headline of the page.
//!
//! At each thread count the other rows (every contender not named
//! `larder ...`; a cache that held more than its capacity only when every
//! other did) are ranked by their median throughput; the fastest is the
//! one a user would otherwise pick for speed, and larder's first row over
//! it, round by round (`ratio.rs`), is the figure written on the chart.
//! For a cache the hit ratios of both rows go with it: a faster cache that
//! hits less is not the better one.

use super::chart::is_larder;
use super::ratio::Ratio;
use super::{Measured, Row};

/// larder's first row over the fastest other row at one thread count.
pub struct Versus {
    /// The cell's index in each row.
    pub at: usize,
    pub threads: usize,
    /// The other row's index in the workload.
    pub other: usize,
    pub ratio: Ratio,
    /// Whether the thread count is above the core count.
    pub oversubscribed: bool,
}

/// One [`Versus`] per thread count of `m` (none when it has no other row).
pub fn each_thread_count(m: &Measured, cores: usize) -> Vec<Versus> {
    let first = &m.rows[0];
    (0..first.cells.len())
        .filter_map(|at| {
            let other = fastest_other(&m.rows, at)?;
            Some(Versus {
                at,
                threads: first.cells[at].threads,
                other,
                ratio: Ratio::of(&first.cells[at].rounds, &m.rows[other].cells[at].rounds),
                oversubscribed: first.cells[at].threads > cores,
            })
        })
        .collect()
}

/// The thread-count index the headline reads: the most threads that do
/// not oversubscribe the cores, else the fewest.
pub fn headline_at(m: &Measured, cores: usize) -> usize {
    let cells = &m.rows[0].cells;
    (0..cells.len())
        .filter(|&at| cells[at].threads <= cores)
        .max_by_key(|&at| cells[at].threads)
        .unwrap_or(0)
}

/// The headline: [`each_thread_count`] at [`headline_at`].
pub fn headline(m: &Measured, cores: usize) -> Option<Versus> {
    let at = headline_at(m, cores);
    each_thread_count(m, cores).into_iter().find(|v| v.at == at)
}

/// The fastest other row at cell `at`, among those that kept their bound
/// when any did: a cache over its bound skipped evictions the others did
/// (the hit-ratio study never marks one best either).
fn fastest_other(rows: &[Row], at: usize) -> Option<usize> {
    let fastest = |kept_only: bool| {
        rows.iter()
            .enumerate()
            .filter(|(_, row)| !is_larder(&row.contender))
            .filter(|(_, row)| !kept_only || !row.over_bound())
            .max_by(|a, b| {
                a.1.cells[at]
                    .ops_per_sec
                    .total_cmp(&b.1.cells[at].ops_per_sec)
            })
            .map(|(index, _)| index)
    };
    fastest(true).or_else(|| fastest(false))
}

/// A row's hit ratio at cell `at`, for the caches that report one.
pub fn hit_ratio(row: &Row, at: usize) -> Option<f64> {
    row.cells[at]
        .extra
        .as_ref()
        .filter(|(label, _)| label == "hit ratio")
        .map(|(_, value)| *value)
}

impl Versus {
    /// `x1.42 over moka::sync::Cache at 2 threads`, with the hit ratios of
    /// both rows for a cache.
    pub fn sentence(&self, m: &Measured) -> String {
        let other = &m.rows[self.other];
        let mut out = format!(
            "{} {} over the fastest other, {}, at {} thread{}",
            m.rows[0].contender,
            self.ratio.label(),
            other.contender,
            self.threads,
            if self.threads == 1 { "" } else { "s" }
        );
        if let (Some(mine), Some(theirs)) =
            (hit_ratio(&m.rows[0], self.at), hit_ratio(other, self.at))
        {
            out.push_str(&format!(
                " (hit ratio {} against {})",
                super::chart::percent(mine),
                super::chart::percent(theirs)
            ));
        }
        if self.oversubscribed {
            out.push_str(", more threads than cores");
        }
        out
    }
}

/// A workload of `rows` (name, throughput at 1, 2 and 4 threads), one
/// round each, for the tests of the modules that read workloads.
#[cfg(test)]
pub fn sample(rows: &[(&str, [f64; 3])]) -> Measured {
    Measured {
        family: "lru",
        workload: "sample".to_string(),
        rows: rows
            .iter()
            .map(|(name, speeds)| Row {
                contender: name.to_string(),
                bound: None,
                cells: [1, 2, 4]
                    .iter()
                    .zip(speeds)
                    .map(|(&threads, &ops)| super::Cell {
                        threads,
                        ops_per_sec: ops,
                        extra: Some(("hit ratio".to_string(), ops / 1e3)),
                        rounds: vec![ops],
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::{each_thread_count, headline, sample};

    #[test]
    fn the_fastest_row_not_larders_at_each_thread_count() {
        let m = sample(&[
            ("larder A", [10.0, 20.0, 20.0]),
            ("larder B", [99.0, 99.0, 99.0]),
            ("peer C", [5.0, 40.0, 8.0]),
            ("peer D", [8.0, 10.0, 10.0]),
        ]);
        let each = each_thread_count(&m, 2);
        let others: Vec<usize> = each.iter().map(|v| v.other).collect();
        assert_eq!(others, [3, 2, 3]);
        assert_eq!(each[1].ratio.median, 0.5);
        assert_eq!(
            each.iter().map(|v| v.oversubscribed).collect::<Vec<_>>(),
            [false, false, true]
        );
        // The headline reads the most threads that the 2 cores run.
        let v = headline(&m, 2).expect("a peer");
        assert_eq!((v.threads, v.other), (2, 2));
        assert_eq!(
            v.sentence(&m),
            "larder A x0.50 over the fastest other, peer C, at 2 threads (hit ratio 2.0% \
             against 4.0%)"
        );
        assert!(headline(&sample(&[("larder A", [1.0; 3])]), 2).is_none());
        // A cache over its bound is passed over while another kept its own.
        let mut m = m;
        m.rows[2].bound = Some((11, 10));
        let others: Vec<usize> = each_thread_count(&m, 2).iter().map(|v| v.other).collect();
        assert_eq!(others, [3, 3, 3]);
        m.rows[3].bound = Some((11, 10));
        let others: Vec<usize> = each_thread_count(&m, 2).iter().map(|v| v.other).collect();
        assert_eq!(others, [3, 2, 3]);
    }
}
