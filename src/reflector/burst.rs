//! A burst: the puts and deletes a watch stream already holds when the
//! loop takes one, applied to the store as one write.
//!
//! The loop takes the first change, then polls the stream without waiting
//! for up to [`MAX_EVENTS`] in all, stopping at anything that is not a put
//! or a delete. Skipping repeats as [`apply_event`](super::Reflector) does,
//! it applies the rest with one store write
//! ([`IndexedStore::apply_burst`](crate::IndexedStore)): each touched shard
//! locked once, in ascending order, the store's revision set to the last
//! change's in the same critical section. Then it notifies the handlers of
//! every change, in revision order, and publishes the last revision.
//!
//! So a whole-store read sees none of a burst or all of it, and a handler
//! notified of one of a burst's changes may find the store already
//! holding the later ones. Joins and resyncs, which run between two
//! revisions, run between two bursts.

use std::hash::BuildHasher;
use std::time::Instant;

use super::error::ReflectorError;
use super::handler::Notification;
use super::run::{Applying, Reflector};
use super::source::{Source, WatchEvent};
use crate::indexed::burst::{BurstChange, BurstOutcome};
use crate::sync::Arc;

/// The most events one burst applies: a bound on how long joins, resyncs
/// and a stop request wait under a stream that is never empty.
pub(super) const MAX_EVENTS: usize = 256;

/// Whether `event` can be part of a burst (a put or a delete).
pub(super) fn is_change<K, V>(event: &WatchEvent<K, V>) -> bool {
    matches!(event, WatchEvent::Put { .. } | WatchEvent::Delete { .. })
}

impl<Src, S> Reflector<Src, S>
where
    Src: Source,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Applies `events` (puts and deletes, in stream order) as one store
    /// write, then notifies the handlers and publishes the last revision.
    /// Returns whether any event was new.
    pub(super) fn apply_burst(
        &self,
        events: Vec<WatchEvent<Src::Key, Src::Object>>,
        applied: &mut Applying<Src::Key>,
    ) -> bool {
        let mut changes = Vec::with_capacity(events.len());
        // Per change: its revision, and a put's object.
        let mut tags = Vec::with_capacity(events.len());
        for event in events {
            let revision = event.revision();
            let (key, object) = match event {
                WatchEvent::Put { key, object, .. } => (key, Some(Arc::new(object))),
                WatchEvent::Delete { key, .. } => (key, None),
                WatchEvent::Bookmark { .. } | WatchEvent::Invalid(_) => {
                    unreachable!("a burst holds puts and deletes only")
                }
            };
            if !applied.admit(revision, &key) {
                continue;
            }
            changes.push(match &object {
                Some(object) => BurstChange::Put(key, Arc::clone(object)),
                None => BurstChange::Delete(key),
            });
            tags.push((revision, object));
        }
        let Some(&(last, _)) = tags.last() else {
            return false;
        };
        let applied_count = tags.len() as u64;
        let outcomes = self.store.apply_burst(changes, last);
        let mut rejected_count = 0u64;
        for (outcome, (revision, object)) in outcomes.into_iter().zip(tags) {
            let BurstOutcome {
                key,
                previous,
                rejected,
            } = outcome;
            let notification = match (object, rejected) {
                (Some(object), None) => Some(match previous {
                    Some(previous) => Notification::update(key, previous, object, revision),
                    None => Notification::add(key, object, revision),
                }),
                (_, rejected) => {
                    if let Some(error) = rejected {
                        rejected_count += 1;
                        self.report(ReflectorError::Rejected { revision, error });
                    }
                    previous.map(|previous| Notification::delete(key, previous, revision))
                }
            };
            if let Some(notification) = notification {
                self.notify(&notification);
            }
        }
        // Published once the handlers have seen every change.
        self.status.update(|inner| {
            let stats = &mut inner.stats;
            stats.last_revision = last;
            stats.events_applied += applied_count;
            stats.rejected_objects += rejected_count;
            inner.last_event = Some(Instant::now());
        });
        true
    }
}
