//! [`Reflector`]: the list+watch loop that keeps an
//! [`IndexedStore`](crate::IndexedStore) equal to a [`Source`].
//!
//! # The loop
//!
//! 1. List; replace the store's content with the list atomically (one
//!    critical section, the list's revision included), and deliver the
//!    difference between the old and the new content to the handlers, an
//!    object whose revision did not change only to those whose resync is
//!    due (`relist.rs`).
//! 2. Watch from the last applied revision; apply the events to the store
//!    (objects, indexes and revision in one critical section; the events
//!    the stream already holds together: `burst.rs`), notify the handlers,
//!    then publish the revision to the handle's waiters.
//! 3. A connection error or a dropped stream: back off, then watch again
//!    from the last applied revision (step 2). A too-old revision or a
//!    progress notification ahead of an event: back off, then list again
//!    (step 1).
//!
//! Events below the last applied revision are skipped (a source may repeat
//! them after a reconnect), and so is an event at that revision for a key
//! already changed at it: one request can change several keys at one
//! revision (an etcd transaction or prefix delete), so a revision alone does
//! not name a change; revision and key do. Nothing is applied twice.
//!
//! Locks: the loop holds no lock while it awaits or calls user code. It
//! takes the store's lock inside each store call and the status mutex
//! briefly after each change, never both at once.

use std::collections::HashSet;
use std::fmt;
use std::future::{Future, poll_fn};
use std::hash::BuildHasher;
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Instant;

use futures_core::Stream;

use super::builder::{Backoff, ReflectorBuilder, Resync};
use super::burst;
use super::error::ReflectorError;
use super::handler::{Handlers, Notification};
use super::reader::StoreReader;
use super::registry::{Audience, HandlerRegistry, Registry};
use super::relist::Due;
use super::report::Reporter;
use super::source::{Revision, Source, SourceError, WatchEvent};
use super::status::{FinishGuard, ReflectorHandle, Status};
use super::timer::{SharedTimer, Sleep};
use crate::IndexedStore;
use crate::sync::Arc;

pub(crate) type KeyParser<K> = Box<dyn Fn(&str) -> Option<K> + Send + Sync>;

/// Keeps an [`IndexedStore`] equal to a list+watch [`Source`] (client-go's
/// `Reflector` plus the handler side of its shared informer), run as a
/// future on any executor.
///
/// # Guarantees
///
/// - **Convergence.** Once the source is quiet and reachable, the store
///   holds exactly the source's decodable content at its last revision,
///   whatever happened before: dropped streams, compacted revisions,
///   reconnects in the middle of a burst. Replaying every handler call
///   gives the same content: nothing lost, nothing duplicated, no deleted
///   object left behind.
/// - **No half-applied relist.** A relist replaces the store's content in
///   one critical section; a reader sees the old content or the new,
///   never a mix. Watch events are applied in one critical section too,
///   their revision with them ([`IndexedStore::get_with_revision`]): the
///   events the stream already holds (up to 256) in one, so a whole-store
///   read sees none of them or all.
/// - **Handlers** run with no lock held, after the store holds the change
///   (and possibly later changes applied in the same write), one at a
///   time, in the order the changes were applied: in revision order per
///   key. A relist delivers the difference (an add for a new key, an
///   update for a key whose revision changed, a delete for a key gone),
///   never a second add; a key whose revision did not change is a sync,
///   `on_update(key, obj, obj)`, for the handlers whose resync is due
///   alone (see [`Resync`]). A panicking handler, the builder's or an
///   added one, is counted and reported to `on_error`, and the loop goes
///   on; the other handlers still get the notification. See
///   [`Handler`](super::Handler).
/// - **Readiness and read-your-writes**: [`ReflectorHandle::has_synced`],
///   [`wait_until_synced`](ReflectorHandle::wait_until_synced),
///   [`wait_for_revision`](ReflectorHandle::wait_for_revision).
///
/// The reflector owns its store and is its only writer, by type: the
/// builder takes the store, and [`reader`](Self::reader) hands out
/// read-only [`StoreReader`]s (a write behind its back would be lost at
/// the next relist and hidden from the handlers).
///
/// # Panics
///
/// The loop's future panics (and ends) only if the store's own user code
/// does: an index function or `K`'s `Hash`/`Eq`/`Clone`. Handler and
/// `on_error` panics are caught.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use larder::IndexedStore;
/// use larder::reflector::{MemorySource, Reflector};
///
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// let source = MemorySource::new();
/// source.put("default/web".to_string(), "default".to_string());
///
/// let store = IndexedStore::<String, Arc<String>>::builder()
///     .index("namespace", |ns: &Arc<String>| [ns.to_string()])
///     .build()
///     .unwrap();
/// let reflector = Reflector::builder(source.clone(), store)
///     .on_add(|key, _| println!("added {key}"))
///     .build()
///     .unwrap();
/// let pods = reflector.reader();
/// let handle = reflector.handle();
/// let task = tokio::spawn(reflector.run());
///
/// handle.wait_until_synced().await.unwrap();
/// source.drop_watches(); // a fault: the reflector resumes its watch
/// let revision = source.put("prod/db".to_string(), "prod".to_string());
/// handle.wait_for_revision(revision).await.unwrap();
/// assert_eq!(pods.index_keys("namespace", "prod").unwrap(), ["prod/db"]);
///
/// handle.stop();
/// task.await.unwrap();
/// # });
/// ```
pub struct Reflector<Src: Source, S = ahash::RandomState> {
    pub(crate) source: Src,
    pub(crate) store: Arc<IndexedStore<Src::Key, Arc<Src::Object>, S>>,
    pub(crate) handlers: Handlers<Src::Key, Src::Object>,
    pub(crate) reporter: Arc<Reporter>,
    pub(crate) parse_key: Option<KeyParser<Src::Key>>,
    pub(crate) backoff: Backoff,
    pub(crate) resync: Resync,
    pub(crate) timer: SharedTimer,
    pub(crate) status: Arc<Status>,
    pub(crate) registry: RegistryGuard<Src::Key, Src::Object>,
}

/// The handlers added while the loop runs; closes their registry when the
/// reflector goes (its loop ended, its future dropped, or never run).
pub(crate) struct RegistryGuard<K: Clone, V>(pub(crate) Arc<Registry<K, V>>);

impl<K: Clone, V> Drop for RegistryGuard<K, V> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// What woke one step of the watch loop.
enum Wake<T> {
    Stop,
    Resync,
    Item(Option<T>),
}

/// Where the watch has got to: the last applied revision, the keys
/// changed at exactly that revision (several changes can share one), the
/// last revision that was a list or a change (not a bookmark), and whether
/// there has been a list at all.
pub(super) struct Applying<K> {
    revision: Revision,
    keys: HashSet<K>,
    changed: Revision,
    listed: bool,
}

impl<K: std::hash::Hash + Eq + Clone> Applying<K> {
    /// Before the first list: the store holds nothing of the source's.
    fn unlisted() -> Self {
        Applying {
            listed: false,
            ..Self::listed(0)
        }
    }

    fn listed(revision: Revision) -> Self {
        Applying {
            revision,
            keys: HashSet::new(),
            changed: revision,
            listed: true,
        }
    }

    /// The revision the store holds the source's content at, `None` before
    /// the first list: the last list's or change's. Every change up to it is
    /// applied (a source delivers a revision's changes together, as a
    /// resumed watch, which starts after it, relies on too). A bookmark
    /// after it is left out: it moves nothing, and a source whose bookmarks
    /// can run ahead of events may not have sent every change before it.
    pub(super) fn content_revision(&self) -> Option<Revision> {
        self.listed.then_some(self.changed)
    }

    /// The revision a new watch starts after: the last applied one, or the
    /// last change where a bookmark is no proof that nothing came before it
    /// ([`Source::bookmarks_cover_every_change`]).
    fn resume_after(&self, bookmarks_cover_every_change: bool) -> Revision {
        if bookmarks_cover_every_change {
            self.revision
        } else {
            self.changed
        }
    }

    /// `item`, or the error it proves: a change at or below a bookmark
    /// already applied, that is a change the bookmark claimed was sent.
    fn vet<V>(
        &self,
        item: Option<Result<WatchEvent<K, V>, SourceError>>,
    ) -> Option<Result<WatchEvent<K, V>, SourceError>> {
        match item {
            Some(Ok(event))
                if !matches!(event, WatchEvent::Bookmark { .. })
                    && event.revision() > self.changed
                    && event.revision() <= self.revision =>
            {
                Some(Err(SourceError::ProgressAheadOfEvent {
                    bookmarked: self.revision,
                    event: event.revision(),
                }))
            }
            item => item,
        }
    }

    /// Whether the change of `key` at `revision` is new (not below the last
    /// applied revision, nor at it for a key already changed at it); if so,
    /// it is now the last applied.
    pub(super) fn admit(&mut self, revision: Revision, key: &K) -> bool {
        if revision < self.revision {
            return false;
        }
        if revision == self.revision {
            if self.keys.contains(key) {
                return false;
            }
        } else {
            self.keys.clear();
            self.revision = revision;
        }
        self.changed = revision;
        self.keys.insert(key.clone());
        true
    }
}

/// What applying one watch event led to.
enum Applied {
    /// Applied (or a bookmark that moved the revision on).
    Yes,
    /// Already applied (below the last applied revision, or at it for a
    /// key already changed at it): skipped.
    Duplicate,
    /// An undecodable object the reflector cannot name: relist.
    Relist,
}

impl<Src, S> Reflector<Src, S>
where
    Src: Source,
    S: BuildHasher + Send + Sync + 'static,
{
    /// A builder for a reflector that fills `store` from `source`. The
    /// reflector takes the store (built with its indexes and hasher) and
    /// owns it: [`reader`](Self::reader) hands out read-only handles, so
    /// nothing else can write to it.
    ///
    /// ```compile_fail,E0382
    /// use std::sync::Arc;
    /// use larder::IndexedStore;
    /// use larder::reflector::{MemorySource, Reflector};
    ///
    /// let store = IndexedStore::<String, Arc<u32>>::new();
    /// let reflector = Reflector::builder(MemorySource::new(), store).build().unwrap();
    /// store.insert("a".to_string(), Arc::new(1)); // error: the reflector has it
    /// ```
    ///
    /// # Examples
    ///
    /// See [`Reflector`] and [`ReflectorBuilder`].
    pub fn builder(
        source: Src,
        store: IndexedStore<Src::Key, Arc<Src::Object>, S>,
    ) -> ReflectorBuilder<Src, S> {
        ReflectorBuilder::new(source, store)
    }

    /// A handle for readiness, revisions, statistics and stopping; take it
    /// before [`run`](Self::run) consumes the reflector.
    ///
    /// # Examples
    ///
    /// See [`Reflector`].
    pub fn handle(&self) -> ReflectorHandle {
        ReflectorHandle {
            status: Arc::clone(&self.status),
            timer: self.timer.clone(),
        }
    }

    /// Adds and removes handlers while the reflector runs, each with its
    /// own buffer (client-go's shared informer); take it before
    /// [`run`](Self::run) consumes the reflector.
    ///
    /// # Examples
    ///
    /// See [`HandlerRegistry`].
    pub fn handler_registry(&self) -> HandlerRegistry<Src::Key, Src::Object> {
        HandlerRegistry {
            registry: Arc::clone(&self.registry.0),
        }
    }

    /// A read-only handle on the store the reflector fills, with the waits
    /// a worker needs; clone it freely, take it before [`run`](Self::run)
    /// consumes the reflector. The reflector owns the store: readers are
    /// the only way to it, so the loop is its only writer.
    ///
    /// # Examples
    ///
    /// See [`StoreReader`].
    pub fn reader(&self) -> StoreReader<Src::Key, Src::Object, S> {
        StoreReader::new(Arc::clone(&self.store), self.handle())
    }

    /// The loop, as a future: runs until [`ReflectorHandle::stop`] (then
    /// completes) and never fails (errors are reported and retried).
    /// Dropping the future stops the loop too; either way the handle's
    /// waiters are released.
    ///
    /// # Examples
    ///
    /// See [`Reflector`].
    pub fn run(self) -> impl Future<Output = ()> + Send {
        let finish = FinishGuard(Arc::clone(&self.status));
        async move {
            let _finish = finish;
            self.run_loop().await;
        }
    }

    async fn run_loop(&self) {
        self.registry.0.join_pending();
        let mut failures = 0u32;
        let mut resync = self.resync_sleep();
        let mut applied = Applying::unlisted();
        'list: loop {
            let listed = loop {
                match self.or_stop(self.source.list()).await {
                    None => return,
                    Some(Ok(listed)) => break listed,
                    Some(Err(error)) => {
                        self.status.update(|inner| inner.stats.list_failures += 1);
                        self.report(ReflectorError::List(error));
                        if !self.pause(&mut failures).await {
                            return;
                        }
                    }
                }
            };
            failures = 0;
            let content_revision = applied.content_revision();
            // A relist does the resyncs that are due (`relist.rs`).
            let due = match content_revision {
                Some(_) => poll_fn(|cx| Poll::Ready(self.mark_due(cx, &mut resync))).await,
                None => Due::NONE,
            };
            applied = Applying::listed(self.apply_list(listed, content_revision, due));
            let mut first_watch = true;
            loop {
                if !first_watch {
                    self.status.update(|inner| inner.stats.watch_restarts += 1);
                }
                first_watch = false;
                let from = applied.resume_after(self.source.bookmarks_cover_every_change());
                let mut stream = match self.or_stop(self.source.watch(from)).await {
                    None => return,
                    Some(Ok(stream)) => stream,
                    Some(Err(error)) => {
                        let too_old = error.needs_relist();
                        self.count_reordering(&error);
                        self.report(ReflectorError::Watch(error));
                        if !self.pause(&mut failures).await {
                            return;
                        }
                        if too_old {
                            continue 'list;
                        }
                        continue;
                    }
                };
                // An item taken from the stream while the loop was between
                // two revisions, applied after the joins and resyncs.
                let mut held = None;
                loop {
                    let step = poll_fn(|cx| {
                        if self.status.poll_stop(cx) {
                            return Poll::Ready(Wake::Stop);
                        }
                        // The rest of a revision (a transaction's next key)
                        // is applied at once: handlers join and resyncs run
                        // only between two revisions, never on half of one.
                        if held.is_none() {
                            match Pin::new(&mut stream)
                                .poll_next(cx)
                                .map(|item| applied.vet(item))
                            {
                                Poll::Ready(Some(Ok(event)))
                                    if event.revision() == applied.revision =>
                                {
                                    return Poll::Ready(Wake::Item(Some(Ok(event))));
                                }
                                Poll::Ready(item) => held = Some(item),
                                Poll::Pending => {}
                            }
                        }
                        // Between two revisions: handlers added meanwhile
                        // join here (registry.rs), and their own resyncs run.
                        self.registry.0.join_pending();
                        self.registry.0.poll_resyncs(cx);
                        if let Some(sleep) = resync.as_mut() {
                            if sleep.as_mut().poll(cx).is_ready() {
                                return Poll::Ready(Wake::Resync);
                            }
                        }
                        match held.take() {
                            Some(item) => Poll::Ready(Wake::Item(item)),
                            None => Poll::Pending,
                        }
                    })
                    .await;
                    match step {
                        Wake::Stop => return,
                        Wake::Resync => {
                            self.resync_now(applied.revision);
                            resync = self.resync_sleep();
                        }
                        Wake::Item(Some(Ok(event))) if burst::is_change(&event) => {
                            // The changes the stream already holds: one
                            // store write (see `burst.rs`).
                            let mut events = vec![event];
                            let mut after = None;
                            while events.len() < burst::MAX_EVENTS {
                                let next =
                                    poll_fn(|cx| Poll::Ready(Pin::new(&mut stream).poll_next(cx)))
                                        .await
                                        .map(|item| applied.vet(item));
                                match next {
                                    Poll::Ready(Some(Ok(event))) if burst::is_change(&event) => {
                                        events.push(event);
                                    }
                                    Poll::Ready(item) => {
                                        after = Some(item);
                                        break;
                                    }
                                    Poll::Pending => break,
                                }
                            }
                            let new = if events.len() == 1 {
                                let event = events.pop().expect("one event");
                                matches!(self.apply_event(event, &mut applied), Applied::Yes)
                            } else {
                                self.apply_burst(events, &mut applied)
                            };
                            if new {
                                failures = 0;
                            }
                            match after {
                                // The rest of the last revision: at once.
                                Some(Some(Ok(event))) if event.revision() == applied.revision => {
                                    match self.apply_event(event, &mut applied) {
                                        Applied::Yes => failures = 0,
                                        Applied::Duplicate => {}
                                        Applied::Relist => {
                                            drop(stream);
                                            continue 'list;
                                        }
                                    }
                                }
                                Some(item) => held = Some(item),
                                None => {}
                            }
                        }
                        Wake::Item(Some(Ok(event))) => {
                            match self.apply_event(event, &mut applied) {
                                Applied::Yes => failures = 0,
                                Applied::Duplicate => {}
                                Applied::Relist => {
                                    drop(stream);
                                    continue 'list;
                                }
                            }
                        }
                        Wake::Item(Some(Err(error))) => {
                            let too_old = error.needs_relist();
                            self.count_reordering(&error);
                            self.report(ReflectorError::Watch(error));
                            drop(stream);
                            if !self.pause(&mut failures).await {
                                return;
                            }
                            if too_old {
                                continue 'list;
                            }
                            break;
                        }
                        Wake::Item(None) => {
                            self.report(ReflectorError::Watch(SourceError::connection(
                                "the watch stream ended",
                            )));
                            drop(stream);
                            if !self.pause(&mut failures).await {
                                return;
                            }
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Applies one watch event to the store, publishes its revision, then
    /// notifies the handlers.
    fn apply_event(
        &self,
        event: WatchEvent<Src::Key, Src::Object>,
        applied: &mut Applying<Src::Key>,
    ) -> Applied {
        let revision = event.revision();
        if revision < applied.revision {
            return Applied::Duplicate;
        }
        if revision == applied.revision {
            let seen = match &event {
                WatchEvent::Put { key, .. } | WatchEvent::Delete { key, .. } => {
                    applied.keys.contains(key)
                }
                // Nothing new: the stream has caught up with its own past.
                WatchEvent::Bookmark { .. } => true,
                WatchEvent::Invalid(_) => false,
            };
            if seen {
                return Applied::Duplicate;
            }
        } else {
            applied.keys.clear();
        }
        if let WatchEvent::Put { key, .. } | WatchEvent::Delete { key, .. } = &event {
            applied.keys.insert(key.clone());
        }
        let mut counted = true;
        let mut rejected = false;
        let notification = match event {
            WatchEvent::Put { key, object, .. } => {
                let object = Arc::new(object);
                match self
                    .store
                    .write_insert(key.clone(), Arc::clone(&object), Some(revision))
                {
                    Ok(Some(previous)) => {
                        Some(Notification::update(key, previous, object, revision))
                    }
                    Ok(None) => Some(Notification::add(key, object, revision)),
                    Err(error) => {
                        rejected = true;
                        self.report(ReflectorError::Rejected { revision, error });
                        let previous = self.store.write_remove(&key, Some(revision));
                        previous.map(|previous| Notification::delete(key, previous, revision))
                    }
                }
            }
            WatchEvent::Delete { key, .. } => self
                .store
                .write_remove(&key, Some(revision))
                .map(|previous| Notification::delete(key, previous, revision)),
            WatchEvent::Bookmark { .. } => {
                counted = false;
                None
            }
            WatchEvent::Invalid(invalid) => {
                self.status.update(|inner| inner.stats.invalid_objects += 1);
                let key = self
                    .parse_key
                    .as_ref()
                    .and_then(|parse| parse(&invalid.key));
                self.report(ReflectorError::InvalidObject(invalid));
                let Some(key) = key else {
                    // The key cannot be named: a relist drops its object.
                    return Applied::Relist;
                };
                self.store
                    .write_remove(&key, Some(revision))
                    .map(|previous| Notification::delete(key, previous, revision))
            }
        };
        applied.revision = revision;
        if counted {
            applied.changed = revision;
        }
        if let Some(notification) = notification {
            self.notify(&notification);
        }
        // Published once the handlers have seen the change.
        self.status.update(|inner| {
            let stats = &mut inner.stats;
            stats.last_revision = revision;
            if counted {
                stats.events_applied += 1;
            }
            if rejected {
                stats.rejected_objects += 1;
            }
            inner.last_event = Some(Instant::now());
        });
        Applied::Yes
    }

    /// Re-delivers every stored object as an update (client-go's resync),
    /// at `revision`, the last one applied: the loop is between changes.
    fn resync_now(&self, revision: Revision) {
        for (key, object) in self.store.to_vec().into_iter() {
            self.deliver(
                &Notification::update(key, Arc::clone(&object), object, revision),
                Audience::Resync,
                true,
            );
        }
        self.status.update(|inner| inner.stats.resyncs += 1);
    }

    pub(super) fn resync_sleep(&self) -> Option<Sleep> {
        match self.resync {
            Resync::Every(period) => Some(self.timer.sleep(period)),
            Resync::Never => None,
        }
    }

    /// Delivers a change to every handler.
    pub(super) fn notify(&self, notification: &Notification<Src::Key, Src::Object>) {
        self.deliver(notification, Audience::All, true);
    }

    /// Queues `notification` for the added handlers `audience` names, then
    /// hands it to the builder's handlers if `builder`.
    pub(super) fn deliver(
        &self,
        notification: &Notification<Src::Key, Src::Object>,
        audience: Audience,
        builder: bool,
    ) {
        self.registry.0.push(notification, audience);
        if builder {
            self.handlers.deliver(notification, &self.reporter);
        }
    }

    /// Counts a progress notification that came ahead of an event (its
    /// relist is counted with the others when it succeeds).
    fn count_reordering(&self, error: &SourceError) {
        if matches!(error, SourceError::ProgressAheadOfEvent { .. }) {
            self.status
                .update(|inner| inner.stats.progress_ahead_of_events += 1);
        }
    }

    pub(super) fn report(&self, error: ReflectorError) {
        self.reporter.report(error);
    }

    /// Waits the backoff for `failures` consecutive failures (and counts
    /// one more). Returns false if a stop was asked for meanwhile.
    async fn pause(&self, failures: &mut u32) -> bool {
        let delay = self.backoff.delay(*failures, random_fraction());
        *failures = failures.saturating_add(1);
        if delay.is_zero() {
            return !self.status.read(|inner| inner.stop_requested);
        }
        self.or_stop(self.timer.sleep(delay)).await.is_some()
    }

    /// Polls `future` unless (or until) a stop is asked for (`None`).
    async fn or_stop<F: Future>(&self, future: F) -> Option<F::Output> {
        let mut future = pin!(future);
        poll_fn(|cx| {
            // Between two changes, as in the watch step.
            self.registry.0.join_pending();
            if self.status.poll_stop(cx) {
                return Poll::Ready(None);
            }
            future.as_mut().poll(cx).map(Some)
        })
        .await
    }
}

/// A number in `0.0..1.0` for jitter: the process-random `ahash` seed
/// over the current instant (no random-number crate needed).
fn random_fraction() -> f64 {
    let bits = crate::sync::default_hasher().hash_one(Instant::now());
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl<Src: Source, S> fmt::Debug for Reflector<Src, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("handlers", &self.handlers)
            .field("backoff", &self.backoff)
            .field("resync", &self.resync)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::random_fraction;

    #[test]
    fn jitter_fractions_are_in_zero_to_one_and_vary() {
        let fractions: Vec<f64> = (0..1_000).map(|_| random_fraction()).collect();
        for &fraction in &fractions {
            assert!((0.0..1.0).contains(&fraction), "{fraction}");
        }
        let first = fractions[0];
        assert!(
            fractions.iter().any(|&fraction| fraction != first),
            "every fraction was {first}"
        );
    }
}
