//! A watchdog for tests that can deadlock: a lost wake-up or a lock-order
//! bug must fail fast, naming the test, instead of stalling the run.
//!
//! [`arm`] (or [`with_timeout`]) lets the test body run on its own thread
//! (so it may borrow anything) while a watcher thread waits for it. If the body has not
//! finished (returned or panicked) within the limit, the watcher prints the
//! test's name and aborts the process: a thread stuck on a lock or a
//! condition variable cannot be unwound, and aborting is the one way to
//! stop it that works under both `cargo test` and `cargo nextest`.

#![allow(dead_code)]

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

/// The limit for the stress tests: far above their usual running time
/// (seconds, in debug builds on 2 cores), far below a stalled CI job.
pub const STRESS_LIMIT: Duration = Duration::from_secs(120);

/// Names an environment variable that lowers every limit to this many
/// seconds, for runs where a hang is expected and waiting for it is the
/// cost (scripts/mutants.sh sets it: a mutant that deadlocks should fail in
/// seconds, not minutes). Unset, the limits are as the tests give them.
pub const LIMIT_OVERRIDE: &str = "LARDER_WATCHDOG_SECS";

/// `limit`, or the override's seconds when that is set and smaller.
fn effective(limit: Duration) -> Duration {
    std::env::var(LIMIT_OVERRIDE)
        .ok()
        .and_then(|secs| secs.trim().parse::<u64>().ok())
        .map_or(limit, |secs| limit.min(Duration::from_secs(secs)))
}

/// An armed watchdog: disarmed when dropped (when the test's body returns
/// or unwinds).
#[must_use = "the watchdog is disarmed when this value is dropped"]
pub struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

/// Arms a watchdog for the running test: unless the returned value is
/// dropped within `limit`, the process aborts with a message naming the
/// test. Put `let _watchdog = watchdog::arm(LIMIT);` first in a test body.
pub fn arm(limit: Duration) -> Watchdog {
    let limit = effective(limit);
    let name = std::thread::current()
        .name()
        .unwrap_or("an unnamed test")
        .to_owned();
    let (done, finished) = mpsc::channel::<()>();
    let watcher = std::thread::Builder::new()
        .name(format!("watchdog of {name}"))
        .spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(limit) {
                // Straight to the process's stderr: the test harness
                // captures `eprintln!` and would lose it in the abort.
                let _ = writeln!(
                    std::io::stderr(),
                    "\nwatchdog: test `{name}` did not finish within {limit:?} \
                     (a deadlock or a lost wake-up?); aborting"
                );
                std::process::abort();
            }
        })
        .expect("spawn the watchdog thread");
    Watchdog {
        done: Some(done),
        watcher: Some(watcher),
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}

/// Runs `body` under a watchdog armed for `limit` (see [`arm`]).
pub fn with_timeout<T>(limit: Duration, body: impl FnOnce() -> T) -> T {
    let _watchdog = arm(limit);
    body()
}
