//! How many times faster one row is than another, decided round by round.
//!
//! The rounds of a workload are interleaved (every contender measured once
//! per round), so round `i` of two rows ran in the same phase of the host:
//! their ratio in that round is free of the drift that moves this kind of
//! machine's speed by a third within minutes. The showdown reports the
//! median of those per-round ratios, and their spread (the lowest and the
//! highest), instead of a ratio of two medians taken at different moments.

/// The per-round ratios of one row over another, with their median and
/// spread.
pub struct Ratio {
    /// The median of the per-round ratios (the mean of the middle two for an
    /// even number of rounds).
    pub median: f64,
    /// The lowest per-round ratio.
    pub min: f64,
    /// The highest per-round ratio.
    pub max: f64,
    /// Every round's ratio, in round order.
    pub rounds: Vec<f64>,
}

impl Ratio {
    /// `first[i] / other[i]` for every round both measured.
    pub fn of(first: &[f64], other: &[f64]) -> Self {
        let rounds: Vec<f64> = first
            .iter()
            .zip(other)
            .map(|(a, b)| a / b.max(f64::MIN_POSITIVE))
            .collect();
        let mut sorted = rounds.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => sorted[n / 2],
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        };
        Self {
            median,
            min: sorted.first().copied().unwrap_or(f64::NAN),
            max: sorted.last().copied().unwrap_or(f64::NAN),
            rounds,
        }
    }

    /// `x1.23` for one round, `x1.23, 1.10-1.31` for more.
    pub fn label(&self) -> String {
        if self.rounds.len() > 1 {
            format!("x{:.2}, {:.2}-{:.2}", self.median, self.min, self.max)
        } else {
            format!("x{:.2}", self.median)
        }
    }

    /// The JSON form: median, spread and every round's ratio.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "median": self.median,
            "min": self.min,
            "max": self.max,
            "rounds": self.rounds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Ratio;

    #[test]
    fn the_median_of_per_round_ratios() {
        let ratio = Ratio::of(&[2.0, 9.0, 3.0], &[1.0, 3.0, 2.0]);
        assert_eq!(ratio.rounds, [2.0, 3.0, 1.5]);
        assert_eq!((ratio.median, ratio.min, ratio.max), (2.0, 1.5, 3.0));
        let even = Ratio::of(&[1.0, 2.0, 3.0, 4.0], &[1.0; 4]);
        assert_eq!(even.median, 2.5);
        assert_eq!(even.label(), "x2.50, 1.00-4.00");
    }
}
