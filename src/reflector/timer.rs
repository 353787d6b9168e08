//! The reflector's clock for waiting: backoff between retries, the resync
//! period, and the `*_timeout` forms.
//!
//! Why a trait and not a runtime's `sleep`: the crate names no async
//! runtime, so the default, [`DefaultTimer`], is `futures-timer`'s `Delay`
//! (one helper thread for the whole process, wakes any executor's tasks).
//! A program already on a runtime can hand the reflector that runtime's own
//! sleep instead (any closure `Fn(Duration) -> Sleep` is a [`Timer`]), and
//! tests can pass a timer that completes at once, so that a reflector driven
//! by a single-threaded executor never waits on the wall clock.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed sleep: completes once its duration has passed.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Something that can sleep without blocking a thread.
///
/// # Examples
///
/// With tokio's own timer (tokio is only an example; any runtime works):
///
/// ```
/// use std::time::Duration;
/// use larder::reflector::{Sleep, Timer};
///
/// let tokio_timer = |duration: Duration| -> Sleep { Box::pin(tokio::time::sleep(duration)) };
/// fn takes_a_timer(_: impl Timer) {}
/// takes_a_timer(tokio_timer);
/// ```
pub trait Timer: Send + Sync + 'static {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Sleep;
}

impl<F> Timer for F
where
    F: Fn(Duration) -> Sleep + Send + Sync + 'static,
{
    fn sleep(&self, duration: Duration) -> Sleep {
        self(duration)
    }
}

/// The default [`Timer`]: `futures-timer`'s `Delay`, driven by one helper
/// thread for the process; works under any executor.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use larder::reflector::{DefaultTimer, Timer};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// DefaultTimer.sleep(Duration::from_millis(1)).await;
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultTimer;

impl Timer for DefaultTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(futures_timer::Delay::new(duration))
    }
}

/// A shared timer, printable.
#[derive(Clone)]
pub(crate) struct SharedTimer(pub(crate) crate::sync::Arc<dyn Timer>);

impl SharedTimer {
    pub(crate) fn sleep(&self, duration: Duration) -> Sleep {
        self.0.sleep(duration)
    }
}

impl fmt::Debug for SharedTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Timer")
    }
}

/// Polls `future` until it completes or `sleep` does (`None`).
pub(crate) async fn timeout<F: Future>(future: F, sleep: Sleep) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut sleep = sleep;
    std::future::poll_fn(move |cx| {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(output));
        }
        sleep.as_mut().poll(cx).map(|()| None)
    })
    .await
}
