//! The injectable time source that `TypedCache`'s expiry and `WorkQueue`'s
//! delays read: [`Clock`], the real [`SystemClock`], the cheap
//! [`CoarseClock`] and the hand-driven [`ManualClock`] for tests. (Not the
//! CLOCK eviction policy, which is `SecondChance` in `cache/second_chance.rs`.)

use std::fmt;
use std::time::{Duration, Instant};

use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering};

/// A monotonic source of time for a cache's expiry policies.
///
/// `now` returns the time elapsed since an arbitrary, fixed origin; it must
/// never go backwards. A cache reads its clock only when it has an expiry
/// policy (time to live or time to idle), once per operation.
///
/// Tests inject a [`ManualClock`] to move time by hand, so expiry is tested
/// without sleeping.
///
/// # Examples
///
/// ```
/// use larder::Clock;
/// use std::time::Duration;
///
/// /// A clock frozen at one instant.
/// #[derive(Debug)]
/// struct Frozen(Duration);
///
/// impl Clock for Frozen {
///     fn now(&self) -> Duration {
///         self.0
///     }
/// }
///
/// assert_eq!(Frozen(Duration::from_secs(3)).now(), Duration::from_secs(3));
/// ```
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The time elapsed since the clock's origin.
    fn now(&self) -> Duration;
}

/// The real clock: `std::time::Instant`, measured from the clock's creation.
///
/// # Examples
///
/// ```
/// use larder::{Clock, SystemClock};
///
/// let clock = SystemClock::new();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{Clock, SystemClock};
    ///
    /// assert!(SystemClock::new().now() < std::time::Duration::from_secs(60));
    /// ```
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// A clock read from memory: a background thread stores the time every
/// `resolution`, so `now` is one relaxed load instead of a system call or
/// vDSO read, which costs many times more (most of all on some virtual
/// machines). For caches with expiry and a very hot hit path, where the
/// clock read of every hit would dominate.
///
/// `now` lags the real time by up to `resolution` (plus scheduling delay of
/// the ticker thread), so expiry is that much late. It never goes backwards.
/// Clones share the ticker; the thread stops once every clone is dropped
/// (within one `resolution`).
///
/// # Examples
///
/// ```
/// use larder::{CoarseClock, TypedCache};
/// use std::time::Duration;
///
/// let cache = TypedCache::<u32, String>::builder()
///     .time_to_idle(Duration::from_secs(60))
///     .clock(CoarseClock::new(Duration::from_millis(5)))
///     .build()
///     .unwrap();
/// cache.insert(1, "one".into());
/// assert!(cache.contains_key(&1));
/// ```
#[derive(Debug, Clone)]
pub struct CoarseClock {
    shared: Arc<StopOnDrop>,
}

#[derive(Debug)]
struct CoarseTime {
    nanos: AtomicU64,
    stop: AtomicBool,
}

/// Stops the ticker when the last clone of the clock goes.
#[derive(Debug)]
struct StopOnDrop(Arc<CoarseTime>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        // Relaxed: the ticker only needs to see it eventually.
        self.0.stop.store(true, Ordering::Relaxed);
    }
}

impl CoarseClock {
    /// Starts a ticker thread that stores the time every `resolution`
    /// (at least 100 microseconds).
    ///
    /// # Panics
    ///
    /// If the ticker thread cannot be spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{Clock, CoarseClock};
    /// use std::time::Duration;
    ///
    /// let clock = CoarseClock::new(Duration::from_millis(1));
    /// let a = clock.now();
    /// std::thread::sleep(Duration::from_millis(20));
    /// assert!(clock.now() > a);
    /// ```
    pub fn new(resolution: Duration) -> Self {
        let resolution = resolution.max(Duration::from_micros(100));
        let time = Arc::new(CoarseTime {
            nanos: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let ticker = Arc::clone(&time);
        let origin = Instant::now();
        std::thread::Builder::new()
            .name("larder-coarse-clock".into())
            .spawn(move || {
                // Relaxed: see the store in `StopOnDrop::drop`.
                while !ticker.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(resolution);
                    let now = u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    // Relaxed: the time is a standalone value that
                    // publishes no other data.
                    ticker.nanos.store(now, Ordering::Relaxed);
                }
            })
            .expect("larder: could not spawn the CoarseClock ticker thread");
        Self {
            shared: Arc::new(StopOnDrop(time)),
        }
    }
}

impl Clock for CoarseClock {
    #[inline]
    fn now(&self) -> Duration {
        // Relaxed: pairs with nothing; see the ticker's store.
        Duration::from_nanos(self.shared.0.nanos.load(Ordering::Relaxed))
    }
}

/// A clock that moves only when told to: for tests of expiry without sleeps.
///
/// Clones share the same time, so a test keeps one handle and gives a clone
/// to the cache's builder. It starts at zero.
///
/// # Examples
///
/// ```
/// use larder::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let handle = clock.clone();
/// handle.advance(Duration::from_secs(5));
/// assert_eq!(clock.now(), Duration::from_secs(5));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock standing at zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{Clock, ManualClock};
    ///
    /// assert_eq!(ManualClock::new().now(), std::time::Duration::ZERO);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock (and every clone of it) forward by `by`. The time
    /// saturates at `u64::MAX` nanoseconds (about 584 years) and never
    /// runs backwards, whatever `by` is (`Duration::MAX` included).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::{Clock, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// clock.advance(Duration::from_millis(1500));
    /// clock.advance(Duration::from_millis(500));
    /// assert_eq!(clock.now(), Duration::from_secs(2));
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // Saturates at `u64::MAX` nanoseconds (about 584 years): time never
        // runs backwards. AcqRel (success) pairs with the Acquire load in
        // `now`: a thread that sees the new time also sees what the
        // advancing thread did before; Acquire (failure, and the reload the
        // retry works from) reads the latest time to add to.
        let _ = self
            .nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |nanos| {
                Some(nanos.saturating_add(by))
            });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        // Acquire pairs with the AcqRel fetch_add in `advance`.
        Duration::from_nanos(self.nanos.load(Ordering::Acquire))
    }
}
