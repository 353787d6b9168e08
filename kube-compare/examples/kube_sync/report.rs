//! The table: per contender the median and range over the rounds of its
//! sync time and resident memory, its ratios against kube-runtime (the
//! median of the per-round ratios, with their range), and the goals'
//! verdicts.

use super::child::{CONTENDERS, Contender, Measured};

/// The goals: larder's sync time at most this times kube-runtime's...
const TIME_GOAL: f64 = 1.1;
/// ...and its resident memory at most this times kube-runtime's, plus
/// the indexes'.
const MEMORY_GOAL: f64 = 1.1;

/// One round: each contender's figures (in `CONTENDERS`' order).
pub type Round = Vec<(Contender, Measured)>;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Median, min and max.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    let m = median(&mut values);
    (m, values[0], values[values.len() - 1])
}

fn figure(round: &Round, contender: Contender) -> Measured {
    round
        .iter()
        .find(|(c, _)| *c == contender)
        .map(|(_, m)| *m)
        .expect("every contender runs in every round")
}

fn per_round(rounds: &[Round], contender: Contender, f: impl Fn(&Measured) -> f64) -> Vec<f64> {
    rounds.iter().map(|r| f(&figure(r, contender))).collect()
}

fn ratios(
    rounds: &[Round],
    contender: Contender,
    f: impl Fn(&Measured) -> f64 + Copy,
) -> (f64, f64, f64) {
    let ours = per_round(rounds, contender, f);
    let theirs = per_round(rounds, Contender::KubeRuntime, f);
    spread(ours.iter().zip(&theirs).map(|(a, b)| a / b).collect())
}

fn mib(kib: f64) -> f64 {
    kib / 1024.0
}

fn seconds(m: &Measured) -> f64 {
    m.sync.as_secs_f64()
}

fn rss(m: &Measured) -> f64 {
    m.rss_kib as f64
}

/// The report, in Markdown.
pub fn table(rounds: &[Round], pods: usize) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{pods} pods, {} interleaved rounds, each contender in a fresh process; \
         median (min–max)\n\n",
        rounds.len()
    ));
    out.push_str(
        "| contender | sync (s) | × kube-runtime | RSS after sync (MiB) | × kube-runtime | \
         RSS before the first request (MiB) | peak RSS (MiB) |\n|---|---|---|---|---|---|---|\n",
    );
    for contender in CONTENDERS {
        let (t, t_min, t_max) = spread(per_round(rounds, contender, seconds));
        let (r, r_min, r_max) = spread(per_round(rounds, contender, rss));
        let (s, _, _) = spread(per_round(rounds, contender, |m| m.rss_start_kib as f64));
        let (p, _, _) = spread(per_round(rounds, contender, |m| m.peak_kib as f64));
        let (tr, rr) = if contender == Contender::KubeRuntime {
            ("1".to_owned(), "1".to_owned())
        } else {
            let (tr, tr_min, tr_max) = ratios(rounds, contender, seconds);
            let (rr, rr_min, rr_max) = ratios(rounds, contender, rss);
            (
                format!("{tr:.2} ({tr_min:.2}–{tr_max:.2})"),
                format!("{rr:.2} ({rr_min:.2}–{rr_max:.2})"),
            )
        };
        out.push_str(&format!(
            "| {} | {t:.2} ({t_min:.2}–{t_max:.2}) | {tr} | {:.0} ({:.0}–{:.0}) | {rr} | {:.0} | {:.0} |\n",
            contender.name(),
            mib(r),
            mib(r_min),
            mib(r_max),
            mib(s),
            mib(p),
        ));
    }
    out.push('\n');
    out.push_str(&verdicts(rounds));
    out
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn verdicts(rounds: &[Round]) -> String {
    let (time, time_min, time_max) = ratios(rounds, Contender::Larder, seconds);
    let (time_ix, ..) = ratios(rounds, Contender::LarderIndexed, seconds);
    let (kube, ..) = spread(per_round(rounds, Contender::KubeRuntime, rss));
    let (larder, ..) = spread(per_round(rounds, Contender::Larder, rss));
    let (indexed, ..) = spread(per_round(rounds, Contender::LarderIndexed, rss));
    // The indexes' share: what the indexed run holds beyond the plain one.
    let indexes = indexed - larder;
    let allowed = kube * MEMORY_GOAL + indexes;
    let mut out = String::new();
    out.push_str(&format!(
        "- sync time: larder {time:.2}× kube-runtime (per-round {time_min:.2}–{time_max:.2}), \
         goal ≤ {TIME_GOAL}×: {} (with both indexes: {time_ix:.2}×)\n",
        met(time <= TIME_GOAL)
    ));
    out.push_str(&format!(
        "- resident memory: the indexes' share, measured as larder_indexed RSS − larder RSS \
         (medians), is {:.1} MiB; larder_indexed {:.0} MiB ≤ kube-runtime {:.0} MiB × {MEMORY_GOAL} \
         + {:.1} MiB = {:.0} MiB: {} (the same as larder {:.0} MiB ≤ {:.0} MiB, {:.2}× kube-runtime)\n",
        mib(indexes),
        mib(indexed),
        mib(kube),
        mib(indexes),
        mib(allowed),
        met(indexed <= allowed),
        mib(larder),
        mib(kube * MEMORY_GOAL),
        larder / kube,
    ));
    out
}
