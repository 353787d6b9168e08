//! A work queue's statistics: the counters kept under its mutex and the
//! public [`WorkQueueStats`] read from them (client-go's workqueue
//! metrics).

use std::time::Duration;

/// The running totals, kept in the core under the queue's mutex (every
/// operation that changes them holds it anyway, so they add no atomic).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub(crate) adds: u64,
    pub(crate) retries: u64,
    pub(crate) taken: u64,
    pub(crate) queue_time: Duration,
    pub(crate) longest_queue_time: Duration,
    pub(crate) processed: u64,
    pub(crate) processing_time: Duration,
}

impl Counters {
    /// A key was taken after waiting `waited` in the queue.
    pub(crate) fn waited(&mut self, waited: Duration) {
        self.taken += 1;
        self.queue_time = self.queue_time.saturating_add(waited);
        self.longest_queue_time = self.longest_queue_time.max(waited);
    }

    /// A worker finished a key it held for `worked`.
    pub(crate) fn processed(&mut self, worked: Duration) {
        self.processed += 1;
        self.processing_time = self.processing_time.saturating_add(worked);
    }
}

/// A snapshot of a [`WorkQueue`](super::WorkQueue)'s statistics, read
/// under its lock at one instant (so the fields agree with each other):
/// client-go's workqueue metrics.
///
/// | client-go metric | field |
/// |---|---|
/// | `depth` | [`depth`](Self::depth) |
/// | `adds_total` | [`adds`](Self::adds) |
/// | `retries_total` | [`retries`](Self::retries) |
/// | `queue_duration_seconds` | [`total_queue_time`](Self::total_queue_time) / [`taken`](Self::taken), [`longest_queue_time`](Self::longest_queue_time) |
/// | `work_duration_seconds` | [`total_processing_time`](Self::total_processing_time) / [`processed`](Self::processed) |
/// | `longest_running_processor_seconds` | [`longest_running_processor`](Self::longest_running_processor) |
/// | `unfinished_work_seconds` | [`unfinished_work`](Self::unfinished_work) |
///
/// Times are read from the queue's clock.
///
/// # Examples
///
/// ```
/// use larder::WorkQueue;
///
/// let queue = WorkQueue::new();
/// queue.add("a");
/// queue.add("a"); // deduplicated: not counted again
/// let stats = queue.stats();
/// assert_eq!((stats.depth, stats.adds), (1, 1));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkQueueStats {
    /// Keys waiting in the queue now ([`len`](super::WorkQueue::len)).
    pub depth: usize,
    /// Keys being processed now (taken and not yet done).
    pub processing: usize,
    /// Keys waiting for a later time (`add_after`, `add_rate_limited`).
    pub delayed: usize,
    /// Adds that made a key dirty: an add of a key already waiting is not
    /// counted (client-go's `adds_total`).
    pub adds: u64,
    /// Calls of [`add_rate_limited`](super::WorkQueue::add_rate_limited).
    pub retries: u64,
    /// Keys taken by workers.
    pub taken: u64,
    /// Keys a worker finished ([`done`](super::WorkQueue::done)).
    pub processed: u64,
    /// The time the taken keys waited in the queue, in all.
    pub total_queue_time: Duration,
    /// The longest time a taken key waited in the queue.
    pub longest_queue_time: Duration,
    /// The time workers held the keys they finished, in all.
    pub total_processing_time: Duration,
    /// How long the longest-held key now being processed has been held.
    pub longest_running_processor: Duration,
    /// The time the keys now being processed have been held, in all.
    pub unfinished_work: Duration,
}

impl WorkQueueStats {
    /// The statistics of `counters`, with `running`, the start times of the
    /// keys being processed, measured against `now`.
    pub(crate) fn read(
        counters: &Counters,
        depth: usize,
        delayed: usize,
        running: impl Iterator<Item = Duration>,
        now: Duration,
    ) -> Self {
        let mut stats = Self {
            depth,
            delayed,
            adds: counters.adds,
            retries: counters.retries,
            taken: counters.taken,
            processed: counters.processed,
            total_queue_time: counters.queue_time,
            longest_queue_time: counters.longest_queue_time,
            total_processing_time: counters.processing_time,
            ..Self::default()
        };
        for since in running {
            let held = now.saturating_sub(since);
            stats.processing += 1;
            stats.longest_running_processor = stats.longest_running_processor.max(held);
            stats.unfinished_work = stats.unfinished_work.saturating_add(held);
        }
        stats
    }
}
