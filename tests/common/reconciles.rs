//! A recording reconcile for a controller over config maps in the end to
//! end test (tests/kube_end_to_end.rs): it logs every attempt (the
//! resource version it was given, its time on the controller's
//! `ManualClock`, the key's failure count then), checks on entry and exit
//! that no other worker holds its key, and fails a chosen set of keys on
//! a fixed schedule. The checks read the log once the run is over:
//! [`Reconciles::unreconciled`] (each key's last reconcile saw the
//! server's final state) and [`Reconciles::backoff_errors`] (each failing
//! key's retries came no sooner than the limiter's delays, counted as it
//! says, and a success reset them).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use larder::controller::{Action, ControllerHandle};
use larder::{Clock, ManualClock};

/// What a failing key's reconcile does at each attempt, by attempt number:
/// three failures (retried after 5, 10 and 20 ms by client-go's default
/// limiter), a success asking to come back at once (its failures
/// forgotten), one more failure (5 ms again), a success. Every other key
/// succeeds at once.
///
/// The requeue at once is an add while the key's worker still holds it:
/// the queue must hand the key out again only after that worker is done,
/// so a queue that lost its per-key guard gives it to a second worker
/// while the first holds it, which the reconcile sees.
pub const FAILING_SCHEDULE: [Outcome; 6] = [
    Outcome::Failed,
    Outcome::Failed,
    Outcome::Failed,
    Outcome::Requeued,
    Outcome::Failed,
    Outcome::Done,
];

/// The delay of the schedule's `Action::requeue`: none.
pub const REQUEUE_AFTER: Duration = Duration::ZERO;

/// client-go's default per-key backoff: 5 ms, doubling, capped at 1000 s.
pub fn limiter_delay(failures: u32) -> Duration {
    let base = Duration::from_millis(5);
    let max = Duration::from_secs(1000);
    base.checked_mul(1 << failures.saturating_sub(1).min(30))
        .map_or(max, |delay| delay.min(max))
}

/// What one attempt returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Failed,
    Requeued,
    Done,
}

/// One reconcile attempt.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The resource version of the object it was given, `None` for a
    /// deleted one.
    pub seen: Option<String>,
    /// The controller's clock when it started.
    pub at: Duration,
    /// The key's failures since its last success, as the controller
    /// counted them when it started (`ControllerHandle::num_requeues`).
    pub requeues: u32,
    pub outcome: Outcome,
}

/// The log, the in-flight keys and the failing ones; shared by the
/// reconcile and the test.
pub struct Reconciles {
    clock: ManualClock,
    failing: BTreeSet<String>,
    /// Set once the controller is built (the reconcile reads each key's
    /// failure count through it).
    pub handle: OnceLock<ControllerHandle<String>>,
    log: Mutex<BTreeMap<String, Vec<Attempt>>>,
    in_flight: Mutex<HashSet<String>>,
    overlaps: Mutex<Vec<String>>,
    most_at_once: AtomicUsize,
}

impl Reconciles {
    pub fn new(clock: ManualClock, failing: BTreeSet<String>) -> Arc<Self> {
        Arc::new(Self {
            clock,
            failing,
            handle: OnceLock::new(),
            log: Mutex::default(),
            in_flight: Mutex::default(),
            overlaps: Mutex::default(),
            most_at_once: AtomicUsize::new(0),
        })
    }

    /// The reconcile: records the attempt, holds the key across two
    /// yields (so that another worker given the same key would run
    /// meanwhile and be caught), and answers by the schedule.
    pub async fn reconcile(
        self: Arc<Self>,
        key: String,
        object: Option<Arc<ConfigMap>>,
    ) -> Result<Action, String> {
        let requeues = self
            .handle
            .get()
            .expect("the handle is set before the controller runs")
            .num_requeues(&key);
        let at = self.clock.now();
        self.enter(&key);
        let outcome = {
            let mut log = self.log.lock().unwrap();
            let attempts = log.entry(key.clone()).or_default();
            let outcome = if self.failing.contains(&key) {
                // Past the schedule: an extra reconcile, reported by the
                // checks; it succeeds.
                FAILING_SCHEDULE
                    .get(attempts.len())
                    .copied()
                    .unwrap_or(Outcome::Done)
            } else {
                Outcome::Done
            };
            attempts.push(Attempt {
                seen: object.as_ref().and_then(|o| o.resource_version()),
                at,
                requeues,
                outcome,
            });
            outcome
        };
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        self.leave(&key);
        match outcome {
            Outcome::Failed => Err(format!("{key}: failing by the schedule")),
            Outcome::Requeued => Ok(Action::requeue(REQUEUE_AFTER)),
            Outcome::Done => Ok(Action::done()),
        }
    }

    fn enter(&self, key: &str) {
        let mut keys = self.in_flight.lock().unwrap();
        if !keys.insert(key.to_owned()) {
            self.overlaps
                .lock()
                .unwrap()
                .push(format!("{key} entered while in flight"));
        }
        self.most_at_once.fetch_max(keys.len(), Ordering::Relaxed);
    }

    fn leave(&self, key: &str) {
        if !self.in_flight.lock().unwrap().remove(key) {
            self.overlaps
                .lock()
                .unwrap()
                .push(format!("{key} left by another worker first"));
        }
    }

    /// Keys reconciled at once by two workers (entries and exits that
    /// found the key held), in the order found.
    pub fn overlaps(&self) -> Vec<String> {
        self.overlaps.lock().unwrap().clone()
    }

    /// The most keys in flight at once: above one, the workers did
    /// overlap, so an overlap of one key could have been seen.
    pub fn most_at_once(&self) -> usize {
        self.most_at_once.load(Ordering::Relaxed)
    }

    /// The controller's clock now.
    pub fn now(&self) -> Duration {
        self.clock.now()
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().len()
    }

    pub fn attempts(&self) -> usize {
        self.log.lock().unwrap().values().map(Vec::len).sum()
    }

    /// Each key of `notified` (the keys the reflector ever delivered) whose
    /// last reconcile did not see its final state, succeeding: the
    /// server's resource version for a key in `truth`, no object for a
    /// deleted one. A key of `truth` the reflector never delivered is
    /// reported too. Empty once every key is reconciled after its last
    /// change.
    pub fn unreconciled(
        &self,
        notified: &BTreeSet<String>,
        truth: &BTreeMap<String, ConfigMap>,
    ) -> Vec<String> {
        let log = self.log.lock().unwrap();
        let mut found = Vec::new();
        for key in truth.keys().filter(|key| !notified.contains(*key)) {
            found.push(format!("{key} is on the server but never delivered"));
        }
        for key in notified {
            let wanted = truth.get(key).and_then(|object| object.resource_version());
            match log.get(key).and_then(|attempts| attempts.last()) {
                None => found.push(format!("{key} never reconciled (final {wanted:?})")),
                Some(last) if last.seen != wanted => found.push(format!(
                    "{key} last reconciled at {:?}, final {wanted:?}",
                    last.seen
                )),
                Some(last) if last.outcome != Outcome::Done => {
                    found.push(format!("{key}'s last reconcile ended {:?}", last.outcome))
                }
                Some(_) => {}
            }
        }
        found
    }

    /// Each failing key's departures from the schedule and the limiter:
    /// exactly the schedule's attempts, all given the key's one object
    /// (the failing keys are written once: every attempt after the first
    /// is the controller's retry or requeue, none a change's); each
    /// attempt's failure count
    /// the failures since the last success; each retry no sooner, on the
    /// manual clock, than the limiter's delay for that count (5, 10,
    /// 20 ms, then 5 ms again after the success).
    pub fn backoff_errors(&self) -> Vec<String> {
        let log = self.log.lock().unwrap();
        let mut found = Vec::new();
        for key in &self.failing {
            let Some(attempts) = log.get(key) else {
                found.push(format!("{key} never reconciled"));
                continue;
            };
            if attempts.len() != FAILING_SCHEDULE.len() {
                found.push(format!(
                    "{key}: {} attempts, the schedule has {}: {attempts:?}",
                    attempts.len(),
                    FAILING_SCHEDULE.len()
                ));
            }
            let mut failures = 0;
            for (n, attempt) in attempts.iter().enumerate() {
                if attempt.seen != attempts[0].seen {
                    found.push(format!(
                        "{key}: attempt {n} saw another object: {attempts:?}"
                    ));
                }
                if attempt.requeues != failures {
                    found.push(format!(
                        "{key}: attempt {n} counted {} failures, {failures} since the last \
                         success: {attempts:?}",
                        attempt.requeues
                    ));
                }
                if n > 0 {
                    let previous = &attempts[n - 1];
                    let due = match previous.outcome {
                        Outcome::Failed => limiter_delay(failures),
                        Outcome::Requeued => REQUEUE_AFTER,
                        Outcome::Done => Duration::ZERO,
                    };
                    let gap = attempt.at.saturating_sub(previous.at);
                    if gap < due {
                        found.push(format!(
                            "{key}: attempt {n} came {gap:?} after the last, before its \
                             {due:?}: {attempts:?}"
                        ));
                    }
                }
                failures = match attempt.outcome {
                    Outcome::Failed => failures + 1,
                    Outcome::Requeued | Outcome::Done => 0,
                };
            }
        }
        found
    }
}
