//! [`ReflectorBuilder`]: the store, the source, handlers, backoff, resync
//! and timer of a [`Reflector`](super::Reflector).

use std::fmt;
use std::hash::BuildHasher;
use std::time::Duration;

use super::error::{ReflectorBuildError, ReflectorError};
use super::handler::{Closures, Handler, Handlers};
use super::registry::{Registry, SnapshotFn};
use super::report::{ErrorFn, Reporter};
use super::run::{KeyParser, Reflector, RegistryGuard};
use super::source::Source;
use super::status::Status;
use super::timer::{DefaultTimer, SharedTimer, Timer};
use crate::IndexedStore;
use crate::sync::Arc;

/// Capped exponential backoff with jitter, between failed lists and
/// watches: the `n`th consecutive failure waits
/// `min(max, initial * 2^n)`, shortened by a random fraction of at most
/// `jitter` (so that many reflectors do not retry in step). A success (an
/// applied event, a list) starts over from `initial`.
///
/// The default: 100 ms doubling up to 30 s, jitter 0.5.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use larder::reflector::Backoff;
///
/// let backoff = Backoff::new(Duration::from_millis(10), Duration::from_secs(1)).jitter(0.2);
/// assert_eq!(backoff.delay(0, 0.0), Duration::from_millis(10));
/// assert_eq!(backoff.delay(3, 0.0), Duration::from_millis(80));
/// assert_eq!(backoff.delay(30, 0.0), Duration::from_secs(1)); // capped
/// assert_eq!(backoff.delay(0, 1.0), Duration::from_millis(8)); // 20% jitter
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    jitter: f64,
}

impl Backoff {
    /// From `initial` doubling up to `max`, jitter 0.5.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            jitter: 0.5,
        }
    }

    /// No waiting at all (for tests driven by a single-threaded executor).
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::reflector::Backoff;
    /// assert!(Backoff::none().delay(5, 0.5).is_zero());
    /// ```
    pub fn none() -> Self {
        Self::new(Duration::ZERO, Duration::ZERO).jitter(0.0)
    }

    /// The largest fraction of a delay that jitter may take off, in
    /// `0.0..=1.0` (checked by the builder).
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// The delay after `failures` consecutive failures (0 for the first),
    /// with `random` in `0.0..1.0` picking the jitter.
    pub fn delay(&self, failures: u32, random: f64) -> Duration {
        let factor = 2u32.saturating_pow(failures.min(31));
        let full = self.initial.saturating_mul(factor).min(self.max);
        full.mul_f64(1.0 - self.jitter * random.clamp(0.0, 1.0))
    }

    fn check(&self) -> Result<(), ReflectorBuildError> {
        if self.initial > self.max {
            return Err(ReflectorBuildError::Backoff(
                "initial delay exceeds the maximum",
            ));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(ReflectorBuildError::Backoff(
                "jitter must be within 0.0..=1.0",
            ));
        }
        Ok(())
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(Duration::from_millis(100), Duration::from_secs(30))
    }
}

/// Periodic resync: every `period`, every stored object is re-delivered to
/// [`Handler::on_update`] with old and new the same (client-go's
/// `resyncPeriod`), so a controller can retry work that failed.
///
/// A relist that finds a handler's resync due does it: the handler gets
/// every object the relist found unchanged as such a sync (the others as
/// adds, updates and deletes), and its period starts again. A handler
/// whose resync is not due gets the relist's changes alone.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use larder::reflector::Resync;
///
/// let resync = Resync::Every(Duration::from_secs(300));
/// assert_ne!(resync, Resync::Never);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Resync {
    /// No resync (the default).
    #[default]
    Never,
    /// Every period (must not be zero).
    Every(Duration),
}

/// Builds a [`Reflector`]: [`Reflector::builder`].
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use larder::IndexedStore;
/// use larder::reflector::{Backoff, MemorySource, Reflector, Resync};
///
/// let store = IndexedStore::<String, Arc<u32>>::new();
/// let reflector = Reflector::builder(MemorySource::new(), store)
///     .on_add(|key, new| println!("added {key}: {new}"))
///     .on_update(|key, old, new| println!("{key}: {old} -> {new}"))
///     .on_delete(|key, _| println!("deleted {key}"))
///     .on_error(|error| eprintln!("{error}"))
///     .backoff(Backoff::new(Duration::from_millis(50), Duration::from_secs(10)))
///     .resync(Resync::Every(Duration::from_secs(600)))
///     .build()
///     .unwrap();
/// # drop(reflector);
/// ```
pub struct ReflectorBuilder<Src: Source, S> {
    source: Src,
    store: IndexedStore<Src::Key, Arc<Src::Object>, S>,
    handlers: Vec<Box<dyn Handler<Src::Key, Src::Object>>>,
    closures: Closures<Src::Key, Src::Object>,
    on_error: Option<ErrorFn>,
    parse_key: Option<KeyParser<Src::Key>>,
    backoff: Backoff,
    resync: Resync,
    timer: SharedTimer,
}

impl<Src, S> ReflectorBuilder<Src, S>
where
    Src: Source,
    S: BuildHasher + Send + Sync + 'static,
{
    pub(crate) fn new(source: Src, store: IndexedStore<Src::Key, Arc<Src::Object>, S>) -> Self {
        Self {
            source,
            store,
            handlers: Vec::new(),
            closures: Closures {
                add: None,
                update: None,
                delete: None,
            },
            on_error: None,
            parse_key: None,
            backoff: Backoff::default(),
            resync: Resync::Never,
            timer: SharedTimer(Arc::new(DefaultTimer)),
        }
    }

    /// Adds a [`Handler`]; handlers are called in the order added.
    pub fn handler(mut self, handler: impl Handler<Src::Key, Src::Object>) -> Self {
        self.handlers.push(Box::new(handler));
        self
    }

    /// Calls `f(key, new)` for each added object (see [`Handler::on_add`]).
    pub fn on_add(
        mut self,
        f: impl Fn(&Src::Key, &Arc<Src::Object>) + Send + Sync + 'static,
    ) -> Self {
        self.closures.add = Some(Box::new(f));
        self
    }

    /// Calls `f(key, old, new)` for each updated object (see
    /// [`Handler::on_update`]).
    pub fn on_update(
        mut self,
        f: impl Fn(&Src::Key, &Arc<Src::Object>, &Arc<Src::Object>) + Send + Sync + 'static,
    ) -> Self {
        self.closures.update = Some(Box::new(f));
        self
    }

    /// Calls `f(key, last_known)` for each deleted object (see
    /// [`Handler::on_delete`]).
    pub fn on_delete(
        mut self,
        f: impl Fn(&Src::Key, &Arc<Src::Object>) + Send + Sync + 'static,
    ) -> Self {
        self.closures.delete = Some(Box::new(f));
        self
    }

    /// Calls `f` with every [`ReflectorError`] (failed lists and watches,
    /// undecodable or rejected objects, handler panics), on the
    /// reflector's task; the panic of a handler added through a
    /// [`HandlerRegistry`](super::HandlerRegistry), on the task that polls
    /// its delivery. None of them stops the loop, or a delivery.
    pub fn on_error(mut self, f: impl Fn(&ReflectorError) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Box::new(f));
        self
    }

    /// How to turn the key of an undecodable object (a source reports it
    /// as a string, [`InvalidObject::key`](super::InvalidObject::key)) back
    /// into a key, so that the reflector removes that key's old object.
    /// Without it, or when it returns `None`, an undecodable object in a
    /// watch makes the reflector relist (the list leaves the object out, so
    /// the store drops it).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use larder::IndexedStore;
    /// use larder::reflector::{MemorySource, Reflector};
    ///
    /// let store = IndexedStore::<String, Arc<u32>>::new();
    /// let reflector = Reflector::builder(MemorySource::new(), store)
    ///     .parse_invalid_key(|key| Some(key.to_owned()))
    ///     .build()
    ///     .unwrap();
    /// # drop(reflector);
    /// ```
    pub fn parse_invalid_key(
        mut self,
        f: impl Fn(&str) -> Option<Src::Key> + Send + Sync + 'static,
    ) -> Self {
        self.parse_key = Some(Box::new(f));
        self
    }

    /// The backoff between failed lists and watches (default: 100 ms
    /// doubling up to 30 s, jitter 0.5).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Periodic resync (default [`Resync::Never`]).
    pub fn resync(mut self, resync: Resync) -> Self {
        self.resync = resync;
        self
    }

    /// The timer for backoff, resync and the `*_timeout` waits (default
    /// [`DefaultTimer`]).
    pub fn timer(mut self, timer: impl Timer) -> Self {
        self.timer = SharedTimer(Arc::new(timer));
        self
    }

    /// The reflector.
    ///
    /// # Errors
    ///
    /// [`ReflectorBuildError::Backoff`] if the backoff's initial delay
    /// exceeds its maximum or its jitter is outside `0.0..=1.0`;
    /// [`ReflectorBuildError::ZeroResyncPeriod`] for `Resync::Every(0)`.
    pub fn build(self) -> Result<Reflector<Src, S>, ReflectorBuildError> {
        self.backoff.check()?;
        if self.resync == Resync::Every(Duration::ZERO) {
            return Err(ReflectorBuildError::ZeroResyncPeriod);
        }
        let mut handlers = self.handlers;
        let closures = self.closures;
        if closures.add.is_some() || closures.update.is_some() || closures.delete.is_some() {
            handlers.insert(0, Box::new(closures));
        }
        let store = Arc::new(self.store);
        let status = Arc::new(Status::default());
        let snapshot = {
            let store = Arc::clone(&store);
            Box::new(move || store.to_vec()) as SnapshotFn<Src::Key, Src::Object>
        };
        let reporter = Arc::new(Reporter::new(self.on_error, Arc::clone(&status)));
        let registry = Arc::new(Registry::new(
            snapshot,
            Arc::clone(&status),
            Arc::clone(&reporter),
            self.timer.clone(),
        ));
        Ok(Reflector {
            source: self.source,
            store,
            handlers: Handlers { list: handlers },
            reporter,
            parse_key: self.parse_key,
            backoff: self.backoff,
            resync: self.resync,
            timer: self.timer,
            status,
            registry: RegistryGuard(registry),
        })
    }
}

impl<Src: Source, S> fmt::Debug for ReflectorBuilder<Src, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorBuilder")
            .field("handlers", &self.handlers.len())
            .field("backoff", &self.backoff)
            .field("resync", &self.resync)
            .finish_non_exhaustive()
    }
}
