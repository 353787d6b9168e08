//! The measuring harness: run one contender on N threads, time it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

/// One contender of one workload: a data structure plus the operation mix.
pub trait Contender: Sync {
    /// Short name shown in reports (`"larder Snapshot::load"`).
    fn name(&self) -> String;
    /// Performs `ops` operations as thread `thread` of `threads`. Returns a
    /// checksum of what it read, so the optimizer cannot remove the work.
    fn run(&self, thread: usize, threads: usize, ops: u64) -> u64;
    /// Called once before a measurement; may start background writers that
    /// stop when the returned guard is dropped.
    fn start(&self) -> Option<Background> {
        None
    }
    /// An extra figure to report beside throughput (hit ratio, init count).
    fn extra(&self) -> Option<(String, f64)> {
        None
    }
    /// For a bounded cache, after a measurement: the entries it holds and
    /// its bound (`(len, capacity)`). The showdown flags a cache holding
    /// more than its bound (lazy eviction) instead of charting its hit
    /// ratio beside caches that kept theirs.
    fn bound(&self) -> Option<(usize, usize)> {
        None
    }
}

/// How big a workload should be: `Full` for criterion and the showdown,
/// `Quick` for `showdown --quick` and CI's smoke run (smaller key sets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// The sizes the project's own targets are stated at.
    Full,
    /// Small sizes: builds in well under a second.
    Quick,
}

/// One workload of a family: a set of contenders measured at each thread
/// count. Shared by the criterion benches and the showdown.
pub struct Workload {
    /// The family (`"snapshot"`, `"indexed"`, ...).
    pub family: &'static str,
    /// The workload's name within the family (`"get-heavy 100K"`).
    pub name: String,
    /// Contenders, larder's first; ratios are reported against the others.
    pub contenders: Vec<Box<dyn Contender>>,
    /// Thread counts to measure.
    pub threads: Vec<usize>,
}

/// Registers every contender of `workload` at each of its thread counts as
/// one criterion group named `family/name`.
pub fn criterion_workload(c: &mut criterion::Criterion, workload: &Workload) {
    let group = format!("{}/{}", workload.family, workload.name);
    criterion_group_for(c, &group, &workload.contenders, &workload.threads);
}

/// A background thread that runs `tick` every `period` until dropped.
pub struct Background {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl Background {
    /// Starts a thread calling `tick` every `period`.
    pub fn every(period: Duration, mut tick: impl FnMut() + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                tick();
                thread::sleep(period);
            }
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// Runs `ops` operations split over `threads` threads released together;
/// returns the wall time from the first thread's start to the last thread's
/// end (each thread reads the clock itself, so a main thread scheduled late
/// cannot shorten the measured interval).
pub fn run_parallel(contender: &dyn Contender, threads: usize, ops: u64) -> Duration {
    let per_thread = ops.div_ceil(threads as u64).max(1);
    let barrier = Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    std::hint::black_box(contender.run(t, threads, per_thread));
                    (start, Instant::now())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread panicked"))
            .collect()
    });
    let first = spans
        .iter()
        .map(|s| s.0)
        .min()
        .expect("at least one thread");
    let last = spans
        .iter()
        .map(|s| s.1)
        .max()
        .expect("at least one thread");
    last - first
}

/// Measures throughput (operations per second over all threads) for about
/// `budget`: calibrates an op count starting from one op per thread (some
/// workloads take a millisecond per op), then times one run of it.
pub fn throughput(contender: &dyn Contender, threads: usize, budget: Duration) -> f64 {
    let _background = contender.start();
    let mut ops = threads as u64;
    loop {
        let elapsed = run_parallel(contender, threads, ops);
        if elapsed >= budget / 8 || ops >= 1 << 40 {
            let scale = budget.as_secs_f64() / elapsed.as_secs_f64().max(1e-9);
            let target = ((ops as f64 * scale) as u64).max(ops);
            let elapsed = run_parallel(contender, threads, target);
            let done = target.div_ceil(threads as u64) * threads as u64;
            return done as f64 / elapsed.as_secs_f64();
        }
        ops *= 4;
    }
}

/// What the machine looked like before a run: whether it is idle, and
/// how fast its core and its memory were, so two runs' figures can be told
/// apart by their host as well as by their code.
#[derive(Debug, Clone, Copy)]
pub struct HostCheck {
    /// Two spinning threads' work over one's: close to 2 on an idle
    /// two-core machine.
    pub idle_ratio: f64,
    /// One spinning thread's rate, million additions a second: a slowed
    /// core shows here even when both are slowed alike (the ratio then
    /// still reads 2).
    pub spin_mops: f64,
    /// One dependent random read over 64 MiB (a pointer chase, mostly
    /// cache and TLB misses), nanoseconds: a host whose memory is shared
    /// with a busy neighbour shows here, where spinning in registers does
    /// not.
    pub random_read_ns: f64,
}

/// Measures the [`HostCheck`]: the idle check, then the memory probe.
pub fn host_check() -> HostCheck {
    let (idle_ratio, spin_mops) = idle_check();
    HostCheck {
        idle_ratio,
        spin_mops,
        random_read_ns: random_read_ns(),
    }
}

/// Nanoseconds per step of a pointer chase through one random cycle over
/// 16M `u32`s (64 MiB), the best of three runs of 2M steps.
fn random_read_ns() -> f64 {
    const SLOTS: usize = 1 << 24;
    const STEPS: u32 = 1 << 21;
    // Sattolo's shuffle: one cycle through every slot, so the chase never
    // settles into a short loop that caches would hold.
    let mut next: Vec<u32> = (0..SLOTS as u32).collect();
    let mut rng = Rng::new(0x5eed);
    for i in (1..SLOTS).rev() {
        let j = (rng.next_u64() % i as u64) as usize;
        next.swap(i, j);
    }
    (0..3)
        .map(|_| {
            let started = Instant::now();
            let mut at = 0u32;
            for _ in 0..STEPS {
                at = next[at as usize];
            }
            std::hint::black_box(at);
            started.elapsed().as_nanos() as f64 / f64::from(STEPS)
        })
        .fold(f64::INFINITY, f64::min)
}

/// Whether the machine looks idle: two spinning threads should get close
/// to twice the work of one. Returns that ratio and one thread's rate
/// (million additions a second).
fn idle_check() -> (f64, f64) {
    fn spin(threads: usize) -> f64 {
        let stop = AtomicBool::new(false);
        let counts: Vec<u64> = thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut n = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            for _ in 0..1000 {
                                n = std::hint::black_box(n.wrapping_add(1));
                            }
                        }
                        n
                    })
                })
                .collect();
            thread::sleep(Duration::from_millis(100));
            stop.store(true, Ordering::Relaxed);
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        counts.iter().sum::<u64>() as f64
    }
    // Best of three for each, so one descheduled window does not decide.
    let one = (0..3).map(|_| spin(1)).fold(0.0, f64::max);
    let two = (0..3).map(|_| spin(2)).fold(0.0, f64::max);
    // `spin` counts additions over a 100 ms window.
    (two / one, one * 1000.0 / 100.0 / 1e6)
}

/// A small fast PRNG (xorshift64*) for per-thread op streams.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded from `seed` (never zero internally).
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A value below `n`.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Registers `contenders` as a criterion group measured at each thread
/// count, reporting element throughput (ops/s over all threads).
pub fn criterion_group_for(
    c: &mut criterion::Criterion,
    group: &str,
    contenders: &[Box<dyn Contender>],
    threads: &[usize],
) {
    let mut g = c.benchmark_group(group);
    g.throughput(criterion::Throughput::Elements(1));
    for contender in contenders {
        let _background = contender.start();
        for &t in threads {
            g.bench_with_input(
                criterion::BenchmarkId::new(contender.name(), format!("{t}t")),
                &t,
                |b, &t| b.iter_custom(|iters| run_parallel(contender.as_ref(), t, iters)),
            );
        }
    }
    g.finish();
}

/// The criterion configuration all benches share: short but repeatable.
pub fn criterion_config() -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args()
}
