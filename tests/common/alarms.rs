//! A timer for resync tests: its sleeps of [`MANUAL`] or more complete
//! only when the test fires them (no waiting on the wall clock); shorter
//! ones, the backoff's, are real tokio sleeps. A sleep whose alarm is
//! dropped unfired (the loop ended) never completes.

#![allow(dead_code)]

use std::sync::Mutex;
use std::time::Duration;

use larder::reflector::Sleep;

/// The shortest sleep the test fires by hand.
pub const MANUAL: Duration = Duration::from_secs(1);

#[derive(Default)]
pub struct Alarms {
    pending: Mutex<Vec<(Duration, tokio::sync::oneshot::Sender<()>)>>,
}

impl Alarms {
    pub fn sleep(&self, duration: Duration) -> Sleep {
        if duration < MANUAL {
            return Box::pin(tokio::time::sleep(duration));
        }
        let (fire, fired) = tokio::sync::oneshot::channel();
        self.pending.lock().unwrap().push((duration, fire));
        Box::pin(async move {
            if fired.await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }

    /// Fires every pending sleep of `duration`; returns how many.
    pub fn fire(&self, duration: Duration) -> usize {
        let mut pending = self.pending.lock().unwrap();
        let (due, rest): (Vec<_>, Vec<_>) = pending.drain(..).partition(|(d, _)| *d == duration);
        *pending = rest;
        let count = due.len();
        for (_, fire) in due {
            // The loop may have dropped the sleep meanwhile: nothing to wake.
            let _ = fire.send(());
        }
        count
    }

    /// How many sleeps of `duration` wait to be fired.
    pub fn pending(&self, duration: Duration) -> usize {
        let pending = self.pending.lock().unwrap();
        pending.iter().filter(|(d, _)| *d == duration).count()
    }
}
