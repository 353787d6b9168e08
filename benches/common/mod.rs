//! Workloads and contenders shared by the criterion benches (`benches/*.rs`)
//! and the showdown (`examples/showdown.rs`), so both measure the same code.
//!
//! A [`Contender`] performs `ops` operations of one workload on one thread;
//! [`run_parallel`] runs it on N threads released together by a barrier and
//! times the whole. Throughput = total ops / elapsed, summed over threads.
//! On a 2-core machine, runs with more than 2 threads oversubscribe the cores.
#![allow(dead_code)]

pub mod harness;
pub mod indexed;
pub mod lru;
pub mod offline;
pub mod ordered;
pub mod snapshot;
pub mod typed;
pub mod typed_async;
pub mod workqueue;

pub use harness::*;
