//! A relist: the store's content replaced by a list in one critical
//! section, then the difference delivered (client-go's `Replace` and its
//! shared informer's `OnUpdate`).
//!
//! Each listed object carries the revision of its last change
//! ([`Listed::items`]). Before the relist the store held the source's
//! content at a known revision, `C` ([`Applying::content_revision`]): so a
//! stored key whose listed object was last changed at or before `C` holds
//! that very object. It is *unchanged*, a sync, and goes only to the
//! handlers whose resync is due (client-go compares the old and new
//! resource versions, and hands a sync to the listeners that are
//! resyncing). A key whose object changed after `C` is an update to every
//! handler; a key new to the store an add, a stored key the list lacks a
//! delete, as before.
//!
//! A handler's resync is due when its timer (its own, or the reflector's)
//! has fired: the loop polls the timers just before the relist delivers
//! ([`Reflector::mark_due`]). For such a handler the relist is its resync:
//! it gets every object once (unchanged ones as `on_update(key, obj, obj)`,
//! the rest as adds and updates), and its timer starts again.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::task::Context;
use std::time::Instant;

use super::error::ReflectorError;
use super::handler::Notification;
use super::registry::Audience;
#[cfg(doc)]
use super::run::Applying;
use super::run::Reflector;
use super::source::{Listed, Revision, Source};
use super::timer::Sleep;
use crate::sync::Arc;

/// Whose resync a relist does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Due {
    /// The reflector's own resync (for the builder's handlers and the
    /// added ones without a period of their own).
    reflector: bool,
    /// Any handler at all: without one, the relist makes no sync.
    any: bool,
}

impl Due {
    /// Nobody's (the first list: the store held nothing to be unchanged).
    pub(super) const NONE: Due = Due {
        reflector: false,
        any: false,
    };
}

impl<Src, S> Reflector<Src, S>
where
    Src: Source,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Polls the resync timers with the loop's context just before a
    /// relist delivers: the reflector's (`resync`) and each added
    /// handler's own. Each that has fired starts again, and its handlers
    /// are due: the relist does their resync.
    pub(super) fn mark_due(&self, cx: &mut Context<'_>, resync: &mut Option<Sleep>) -> Due {
        let reflector = resync
            .as_mut()
            .is_some_and(|sleep| sleep.as_mut().poll(cx).is_ready());
        if reflector {
            *resync = self.resync_sleep();
        }
        let added = self.registry.0.mark_due(cx, reflector);
        Due {
            reflector,
            any: added || (reflector && !self.handlers.is_empty()),
        }
    }

    /// Replaces the store with `listed` atomically, then delivers the
    /// difference: changes to every handler, the objects unchanged since
    /// `content_revision` (the revision the store held the source's
    /// content at; `None` before the first list) to the handlers `due`
    /// names. Returns the list's revision.
    pub(super) fn apply_list(
        &self,
        listed: Listed<Src::Key, Src::Object>,
        content_revision: Option<Revision>,
        due: Due,
    ) -> Revision {
        let Listed {
            items,
            revision,
            invalid,
        } = listed;
        // A list older than the store's content proves nothing unchanged.
        let unchanged_up_to = content_revision.filter(|&at| at <= revision);
        // Handlers join only between changes (registry.rs), so none joins
        // while this list is delivered.
        let notifying = !self.handlers.is_empty() || self.registry.0.has_active();
        let mut changed_at = Vec::with_capacity(if notifying { items.len() } else { 0 });
        let items: Vec<(Src::Key, Arc<Src::Object>)> = items
            .into_iter()
            .map(|(key, object, at)| {
                if notifying {
                    changed_at.push(at);
                }
                (key, Arc::new(object))
            })
            .collect();
        let wanted = if notifying { items.clone() } else { Vec::new() };
        let relisted = self.store.replace_for_relist(items, revision);
        let (invalid_count, rejected_count) =
            (invalid.len() as u64, relisted.rejected.len() as u64);
        self.status.update(|inner| {
            let stats = &mut inner.stats;
            stats.lists += 1;
            if stats.lists > 1 {
                stats.relists += 1;
            }
            stats.invalid_objects += invalid_count;
            stats.rejected_objects += rejected_count;
            inner.last_event = Some(Instant::now());
        });
        for object in invalid {
            self.report(ReflectorError::InvalidObject(object));
        }
        let mut rejected = HashSet::new();
        for (key, error) in relisted.rejected {
            rejected.insert(key);
            self.report(ReflectorError::Rejected { revision, error });
        }
        if notifying {
            let mut old: HashMap<Src::Key, Arc<Src::Object>> = relisted.old.into_iter().collect();
            // The store kept the last of repeated keys: so does the diff.
            type Listing<K, V> = Vec<(K, Arc<V>, Revision)>;
            let mut new: Listing<Src::Key, Src::Object> = Vec::with_capacity(wanted.len());
            let mut position = HashMap::with_capacity(wanted.len());
            for ((key, object), at) in wanted.into_iter().zip(changed_at) {
                if rejected.contains(&key) {
                    continue;
                }
                match position.get(&key) {
                    Some(&index) => new[index] = (key, object, at),
                    None => {
                        position.insert(key.clone(), new.len());
                        new.push((key, object, at));
                    }
                }
            }
            for (key, object, at) in new {
                match old.remove(&key) {
                    Some(_) if unchanged_up_to.is_some_and(|up_to| at <= up_to) => {
                        if due.any {
                            let sync =
                                Notification::update(key, Arc::clone(&object), object, revision);
                            self.deliver(&sync, Audience::Due, due.reflector);
                        }
                    }
                    Some(previous) => {
                        self.notify(&Notification::update(key, previous, object, revision));
                    }
                    None => self.notify(&Notification::add(key, object, revision)),
                }
            }
            for (key, previous) in old {
                self.notify(&Notification::delete(key, previous, revision));
            }
        }
        self.registry.0.clear_due();
        // Published once the handlers have seen the whole list.
        self.status.update(|inner| {
            inner.stats.last_revision = revision;
            inner.synced = true;
            if due.reflector {
                inner.stats.resyncs += 1;
            }
        });
        revision
    }
}
