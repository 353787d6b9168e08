//! Misuse 13: a blocking single-flight call inside an async runtime.
//!
//! `TypedCache::get_or_init` (and `LruCache::get_or_init`) make a caller
//! that finds another caller's init in progress *block its thread* until the
//! init is done. On an async runtime that thread is an executor worker. With
//! three tasks on one key of a 2-worker tokio runtime, the init fetching
//! through `block_in_place(|| Handle::current().block_on(fetch))`, the two
//! waiters hold both workers while the fetch needs a worker to make
//! progress: the program hangs for good (a `tokio::time::timeout` around it
//! never fires, since no worker is left to run the timer). On a
//! current-thread runtime the same init panics instead ("Cannot start a
//! runtime from within a runtime").
//!
//! The larder way: `get_or_init_async` (`TypedCache`'s or `LruCache`'s): the init
//! is a closure returning a future, awaited in place, and a waiter waits as
//! a future, giving its worker back to the runtime. Same single flight, same shared value.
//!
//! The broken form runs on its own runtime in a detached thread, and the
//! demonstrator gives up on it after [`DEADLINE`]: the stuck thread stays
//! stuck, but nothing waits for it, so the process still exits.
//!
//! Run with `cargo run --example misuse_13_blocking_single_flight`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use larder::TypedCache;
use tokio::runtime::{Builder, Handle};

/// How long the demonstrator waits for the broken form before it reports
/// that it hung (it never finishes: the wait is only a bound).
pub const DEADLINE: Duration = Duration::from_secs(1);

/// What each variant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Blocking `get_or_init` on a 2-worker runtime: did it finish within
    /// [`DEADLINE`]? (`false`: it hung.)
    pub broken_multi_thread_finished: bool,
    /// Blocking `get_or_init` on a current-thread runtime: did the init
    /// panic ("Cannot start a runtime from within a runtime")?
    pub broken_current_thread_panicked: bool,
    /// `get_or_init_async`, 2-worker runtime: values every task got, and
    /// how often the init ran.
    pub fixed_multi_thread: (Vec<String>, usize),
    /// `get_or_init_async`, current-thread runtime: the same.
    pub fixed_current_thread: (Vec<String>, usize),
}

/// The backend: answers through a task of the same runtime after 5 ms.
async fn fetch_schema() -> String {
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let _ = tx.send("id,name".to_string());
    });
    rx.await.unwrap_or_default()
}

/// BROKEN: three tasks call the blocking `get_or_init` on one key; the init
/// drives the async fetch with `block_in_place` + `block_on`. Runs on its
/// own runtime in a detached thread; returns whether it finished in time.
fn broken_multi_thread() -> bool {
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let cache: Arc<TypedCache<String, String>> = Arc::new(TypedCache::new());
        let finished = runtime.block_on(async {
            let tasks: Vec<_> = (0..3)
                .map(|_| {
                    let cache = Arc::clone(&cache);
                    tokio::spawn(async move {
                        cache.get_or_init(&"users".to_string(), || {
                            tokio::task::block_in_place(|| {
                                Handle::current().block_on(fetch_schema())
                            })
                        })
                    })
                })
                .collect();
            // This timeout never fires either: its timer needs a worker.
            tokio::time::timeout(DEADLINE, async {
                for task in tasks {
                    let _ = task.await;
                }
            })
            .await
            .is_ok()
        });
        let _ = done_tx.send(finished);
        // Not reached when the runtime hangs. When it does finish, shut it
        // down without waiting for blocked threads.
        runtime.shutdown_background();
    });
    // The bound that works: a wait outside the stuck runtime.
    done_rx.recv_timeout(DEADLINE * 2).unwrap_or(false)
}

/// BROKEN: the same init on a current-thread runtime panics.
fn broken_current_thread() -> bool {
    let runtime = Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cache: Arc<TypedCache<String, String>> = Arc::new(TypedCache::new());
    runtime.block_on(async {
        let task = tokio::spawn(async move {
            cache.get_or_init(&"users".to_string(), || {
                Handle::current().block_on(fetch_schema())
            })
        });
        task.await.is_err_and(|error| error.is_panic())
    })
}

/// LARDER: the same three tasks with `get_or_init_async`.
fn fixed(workers: usize) -> (Vec<String>, usize) {
    let runtime = if workers == 0 {
        Builder::new_current_thread().enable_all().build()
    } else {
        Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    }
    .expect("runtime");
    let cache: Arc<TypedCache<String, String>> = Arc::new(TypedCache::new());
    let inits = Arc::new(AtomicUsize::new(0));
    let values = runtime.block_on(async {
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let (cache, inits) = (Arc::clone(&cache), Arc::clone(&inits));
                tokio::spawn(async move {
                    cache
                        .get_or_init_async("users", || async {
                            // Relaxed: a counter read after the tasks end.
                            inits.fetch_add(1, Ordering::Relaxed);
                            fetch_schema().await
                        })
                        .await
                })
            })
            .collect();
        let all = async {
            let mut values = Vec::new();
            for task in tasks {
                values.push(task.await.expect("task").as_str().to_owned());
            }
            values
        };
        tokio::time::timeout(DEADLINE, all)
            .await
            .expect("the async form finishes")
    });
    (values, inits.load(Ordering::Relaxed))
}

/// Runs every variant.
pub fn run() -> Outcome {
    Outcome {
        broken_multi_thread_finished: broken_multi_thread(),
        broken_current_thread_panicked: broken_current_thread(),
        fixed_multi_thread: fixed(2),
        fixed_current_thread: fixed(0),
    }
}

fn main() {
    common::quiet_panics();
    common::header(13, "a blocking single-flight call inside an async runtime");
    let outcome = run();
    common::broken(format!(
        "get_or_init + block_in_place/block_on, 3 tasks, 2 workers: finished within {:?} = {} (hung for good; even tokio's timeout never fired)",
        DEADLINE * 2,
        outcome.broken_multi_thread_finished
    ));
    common::broken(format!(
        "get_or_init + Handle::block_on, current-thread runtime: the init panicked = {}",
        outcome.broken_current_thread_panicked
    ));
    common::fixed(format!(
        "get_or_init_async, 3 tasks, 2 workers: values {:?}, init ran {} time(s)",
        outcome.fixed_multi_thread.0, outcome.fixed_multi_thread.1
    ));
    common::fixed(format!(
        "get_or_init_async, current-thread runtime: values {:?}, init ran {} time(s)",
        outcome.fixed_current_thread.0, outcome.fixed_current_thread.1
    ));
    common::note("the hung runtime is left in a detached thread; exiting without it");
    // The stuck runtime's threads would keep a normal return waiting for
    // nothing (they are detached, but exit explicitly all the same).
    std::process::exit(0);
}
