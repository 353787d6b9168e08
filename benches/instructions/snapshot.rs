//! `Snapshot` against `arc_swap::ArcSwap`: a load that reads one field, and
//! a store of a fresh value.

use std::hint::black_box;
use std::sync::Arc;

use arc_swap::ArcSwap;
use gungraun::{library_benchmark, library_benchmark_group};
use larder::Snapshot;

use crate::inputs::OPS;

/// The value held: a small configuration-like struct.
#[derive(Clone)]
pub struct Config {
    limit: u64,
    _name: String,
}

fn config(limit: u64) -> Config {
    Config {
        limit,
        _name: "default".to_string(),
    }
}

/// What both contenders do.
trait Swapped {
    fn read(&self) -> u64;
    fn replace(&self, value: Config);
}

impl Swapped for Snapshot<Config> {
    #[inline]
    fn read(&self) -> u64 {
        self.load().limit
    }
    #[inline]
    fn replace(&self, value: Config) {
        black_box(self.store(value));
    }
}

impl Swapped for ArcSwap<Config> {
    #[inline]
    fn read(&self) -> u64 {
        self.load().limit
    }
    #[inline]
    fn replace(&self, value: Config) {
        self.store(Arc::new(value));
    }
}

fn larder() -> Snapshot<Config> {
    let snapshot = Snapshot::new(config(0));
    black_box(snapshot.read()); // the first use, outside the count
    snapshot
}

fn arc_swap() -> ArcSwap<Config> {
    let swap = ArcSwap::from_pointee(config(0));
    black_box(swap.read());
    swap
}

#[library_benchmark]
#[bench::larder(setup = larder)]
#[bench::arc_swap(setup = arc_swap)]
fn load<S: Swapped>(swapped: S) -> S {
    let mut sum = 0;
    for _ in 0..OPS {
        sum += black_box(&swapped).read();
    }
    black_box(sum);
    swapped
}

fn with_values<S: Swapped>(swapped: S) -> (S, Vec<Config>) {
    (swapped, (0..OPS as u64).map(config).collect())
}

fn larder_values() -> (Snapshot<Config>, Vec<Config>) {
    with_values(larder())
}

fn arc_swap_values() -> (ArcSwap<Config>, Vec<Config>) {
    with_values(arc_swap())
}

#[library_benchmark]
#[bench::larder(setup = larder_values)]
#[bench::arc_swap(setup = arc_swap_values)]
fn store<S: Swapped>((swapped, values): (S, Vec<Config>)) -> S {
    for value in values {
        swapped.replace(value);
    }
    swapped
}

library_benchmark_group!(name = snapshot; benchmarks = load, store);
