//! The delay thread: client-go's `waitingLoop`. Keys added for a later
//! time sit in the core's heap; every `get` moves the due ones into the
//! queue itself, so a worker that asks finds them without this thread. The
//! thread is for the workers already waiting: it sleeps until the soonest
//! key is due, moves it into the queue and wakes them.
//!
//! One thread per queue, started by the first `add_after` with a delay (a
//! queue that never delays keys has none), stopped by `shut_down` or by
//! dropping the queue. Not in loom builds: loom models call the `get`
//! forms, which promote due keys themselves, and a timed wait under loom
//! ends only when notified.
//!
//! The wait is measured on the queue's [`Clock`](crate::Clock) and slept
//! in real time, at most [`LONGEST_SLEEP`] at once: a clock that jumps
//! (a `ManualClock` in a test) is looked at again that often while keys
//! are delayed.

use std::fmt;
use std::time::{Duration, Instant};

use crate::sync::{Arc, Condvar, Mutex};

/// The longest the thread sleeps before it reads the clock again while a
/// key is delayed.
pub(crate) const LONGEST_SLEEP: Duration = Duration::from_millis(100);

/// What the thread drives: the queue's shared state.
pub(crate) trait Promote: Send + Sync {
    /// Moves the due keys into the queue and wakes waiting workers;
    /// returns how long until the next delayed key is due by the clock.
    fn promote_due(&self) -> Option<Duration>;
    /// The thread's own state.
    fn delay(&self) -> &DelayThread;
}

/// The thread's state, kept in the queue's shared state.
#[derive(Default)]
pub(crate) struct DelayThread {
    state: Mutex<DelayState>,
    wake: Condvar,
}

#[derive(Default)]
struct DelayState {
    started: bool,
    /// Look at the heap again now (a sooner key came).
    poked: bool,
    stop: bool,
}

impl fmt::Debug for DelayThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("DelayThread")
            .field("started", &state.started)
            .field("stopped", &state.stop)
            .finish()
    }
}

impl DelayThread {
    /// Tells the thread that `owner`'s heap has a new soonest key,
    /// starting the thread if it is not running.
    ///
    /// # Panics
    ///
    /// If the thread cannot be spawned.
    pub(crate) fn poke<P: Promote + 'static>(&self, owner: &Arc<P>) {
        let mut state = self.state.lock();
        if state.stop {
            return;
        }
        state.poked = true;
        if !state.started {
            state.started = true;
            let owner: Arc<dyn Promote> = Arc::clone(owner) as Arc<dyn Promote>;
            std::thread::Builder::new()
                .name("larder-workqueue-delay".into())
                .spawn(move || run(&*owner))
                .expect("larder: could not spawn a work queue's delay thread");
        }
        drop(state);
        self.wake.notify_one();
    }

    /// Stops the thread (for good).
    pub(crate) fn stop(&self) {
        self.state.lock().stop = true;
        self.wake.notify_one();
    }
}

/// The thread's loop.
fn run(owner: &dyn Promote) {
    let delay = owner.delay();
    loop {
        let next = owner.promote_due();
        let mut state = delay.state.lock();
        if state.stop {
            return;
        }
        if !std::mem::take(&mut state.poked) {
            match next {
                None => delay.wake.wait(&mut state),
                Some(wait) => {
                    let deadline = Instant::now() + wait.min(LONGEST_SLEEP);
                    let _ = delay.wake.wait_until(&mut state, deadline);
                }
            }
            state.poked = false;
            if state.stop {
                return;
            }
        }
    }
}
