//! TypedCache single-flight init and warm hits against moka, DashMap,
//! `Mutex<HashMap<K, Arc<OnceLock<V>>>>` and quick_cache.
//! `cargo bench --bench typed`; results in docs/benchmarks.md.
//!
//! After each workload it prints every contender's inits per key (must be
//! exactly 1 for larder), for the cold key sets the wall time of whole
//! sets against the ideal keys / threads x 1 ms, and for the async
//! workloads interleaved rounds: warm hits the best of 5, cold key sets the
//! median wall time of 61 sets against the ideal row (see
//! `common/typed_async.rs`).

mod common;

use common::typed::{COLD_SET_THREADS, INIT_TIME, cold_set_keys};

fn typed(c: &mut criterion::Criterion) {
    let size = common::Size::Full;
    let slack = if common::typed::tighten_timer_slack() {
        "timer slack 1 ns"
    } else {
        "default timer slack"
    };
    for workload in common::typed::workloads(size) {
        common::criterion_workload(c, &workload);
        if workload.name.starts_with("cold_keys") {
            let keys = cold_set_keys(size);
            let ideal = INIT_TIME.as_secs_f64() * keys as f64 / COLD_SET_THREADS as f64;
            // The floor this machine allows: the same sleeps, perfectly
            // partitioned, no cache (`thread::sleep(1 ms)` oversleeps).
            let floor_start = std::time::Instant::now();
            std::thread::scope(|s| {
                for _ in 0..COLD_SET_THREADS {
                    s.spawn(|| {
                        for _ in 0..keys / COLD_SET_THREADS as u64 {
                            std::thread::sleep(INIT_TIME);
                        }
                    });
                }
            });
            println!(
                "{}/{} sleep floor (no cache, {slack}): {:.1} ms, {:.3} x ideal",
                workload.family,
                workload.name,
                floor_start.elapsed().as_secs_f64() * 1e3,
                floor_start.elapsed().as_secs_f64() / ideal,
            );
            for contender in &workload.contenders {
                let _background = contender.start();
                let sets = 3;
                let elapsed = common::run_parallel(
                    contender.as_ref(),
                    COLD_SET_THREADS,
                    (sets * COLD_SET_THREADS) as u64,
                );
                let per_set = elapsed.as_secs_f64() / sets as f64;
                println!(
                    "{}/{} {}: {:.1} ms per set of {keys} keys, {:.3} x ideal ({:.1} ms)",
                    workload.family,
                    workload.name,
                    contender.name(),
                    per_set * 1e3,
                    per_set / ideal,
                    ideal * 1e3,
                );
            }
        }
        if workload.name.starts_with("async_") {
            // Interleaved rounds: every contender in turn, so a slow phase
            // of the host falls on every row alike. Warm hits: 5 rounds of
            // 400,000 hits, the best round per contender (on a shared
            // machine the minimum is the estimate least disturbed by other
            // load), in ns per hit against larder's async form (the first
            // row). Cold sets: 61 rounds of one set each, the median per
            // contender, in ms per set against the ideal (the first row):
            // a set lasts a few ms, as long as the host's hiccups, and the
            // best of a few such rounds is whichever row was luckiest.
            let cold = workload.name.starts_with("async_cold_keys");
            let (rounds, ops) = if cold { (61, 1) } else { (5, 400_000) };
            for &threads in &workload.threads {
                let mut per_round = vec![Vec::with_capacity(rounds); workload.contenders.len()];
                for _round in 0..rounds {
                    for (i, contender) in workload.contenders.iter().enumerate() {
                        let _background = contender.start();
                        let elapsed = common::run_parallel(contender.as_ref(), threads, ops);
                        let done = ops.div_ceil(threads as u64) * threads as u64;
                        per_round[i].push(elapsed.as_secs_f64() / done as f64);
                    }
                }
                let pick = |rounds: &[f64]| {
                    let mut sorted = rounds.to_vec();
                    sorted.sort_by(f64::total_cmp);
                    if cold {
                        sorted[sorted.len() / 2]
                    } else {
                        sorted[0]
                    }
                };
                let picked: Vec<f64> = per_round.iter().map(|rounds| pick(rounds)).collect();
                let (scale, unit, how) = if cold {
                    (1e3, "ms per set", format!("median of {rounds}"))
                } else {
                    (
                        1e9,
                        "ns per hit (wall time / hits, all threads)",
                        format!("best of {rounds}"),
                    )
                };
                for (i, contender) in workload.contenders.iter().enumerate() {
                    println!(
                        "{}/{} {}t {}: {:.2} {unit}, {:.3} x first row, {how} interleaved rounds",
                        workload.family,
                        workload.name,
                        threads,
                        contender.name(),
                        picked[i] * scale,
                        picked[i] / picked[0],
                    );
                }
            }
        }
        for contender in &workload.contenders {
            if let Some((what, value)) = contender.extra() {
                println!(
                    "{}/{} {}: {what} = {value:.4}",
                    workload.family,
                    workload.name,
                    contender.name()
                );
            }
        }
    }
}

criterion::criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = typed
}
criterion::criterion_main!(benches);
