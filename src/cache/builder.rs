//! The options both faces' builders share (`LruCacheBuilder`,
//! `TypedCacheBuilder`, `AnyCacheBuilder`) and their validation: each
//! builder wraps one [`Settings`] and adds only what its face alone has.

use std::fmt;
use std::time::Duration;

use super::Expiry;
use crate::EvictionPolicy;
use crate::error::BuildError;
use crate::sync::Arc;
use crate::time::{Clock, SystemClock};

/// The most shards a cache may have (`LruCache`'s default never exceeds
/// 4096, `TypedCache`'s 16).
pub(crate) const MAX_SHARDS: usize = 1 << 16;

/// Checks a shard count asked for: at least 1, at most [`MAX_SHARDS`].
pub(crate) fn check_shards(shards: usize) -> Result<usize, BuildError> {
    match shards {
        0 => Err(BuildError::ZeroShards),
        shards if shards > MAX_SHARDS => Err(BuildError::TooManyShards {
            shards,
            max: MAX_SHARDS,
        }),
        shards => Ok(shards),
    }
}

/// A builder's options: the listener `L` and weigher `W` are the face's own
/// types (`()` where the face has none).
#[derive(Clone)]
pub(crate) struct Settings<L, W, S> {
    pub(crate) capacity: Option<usize>,
    pub(crate) shards: Option<usize>,
    pub(crate) policy: EvictionPolicy,
    pub(crate) hasher: S,
    pub(crate) listener: L,
    pub(crate) weigher: W,
    pub(crate) time_to_live: Option<Duration>,
    pub(crate) time_to_idle: Option<Duration>,
    pub(crate) clock: Option<Arc<dyn Clock>>,
}

impl<L, W, S> Settings<L, W, S> {
    pub(crate) fn new(policy: EvictionPolicy, hasher: S, listener: L, weigher: W) -> Self {
        Self {
            capacity: None,
            shards: None,
            policy,
            hasher,
            listener,
            weigher,
            time_to_live: None,
            time_to_idle: None,
            clock: None,
        }
    }

    pub(crate) fn with_hasher<S2>(self, hasher: S2) -> Settings<L, W, S2> {
        Settings {
            capacity: self.capacity,
            shards: self.shards,
            policy: self.policy,
            hasher,
            listener: self.listener,
            weigher: self.weigher,
            time_to_live: self.time_to_live,
            time_to_idle: self.time_to_idle,
            clock: self.clock,
        }
    }

    /// Checks the options every face shares (a capacity, if set, above 0;
    /// a time to live or idle, if set, above 0) and returns the expiry
    /// they make.
    pub(crate) fn expiry(&self) -> Result<Option<Expiry>, BuildError> {
        if self.capacity == Some(0) {
            return Err(BuildError::ZeroCapacity);
        }
        if self.time_to_live == Some(Duration::ZERO) {
            return Err(BuildError::ZeroTimeToLive);
        }
        if self.time_to_idle == Some(Duration::ZERO) {
            return Err(BuildError::ZeroTimeToIdle);
        }
        Ok(Expiry::new(self.time_to_live, self.time_to_idle))
    }

    /// The clock set, else the system's.
    pub(crate) fn clock_or_system(&mut self) -> Arc<dyn Clock> {
        let system = || Arc::new(SystemClock::new()) as Arc<dyn Clock>;
        self.clock.take().unwrap_or_else(system)
    }
}

impl<L, W, S> fmt::Debug for Settings<L, W, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("capacity", &self.capacity)
            .field("shards", &self.shards)
            .field("policy", &self.policy)
            .field("time_to_live", &self.time_to_live)
            .field("time_to_idle", &self.time_to_idle)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}
