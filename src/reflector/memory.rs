//! [`MemorySource`]: a versioned in-memory map that implements [`Source`],
//! with a compaction point and fault injection, for tests and examples.
//!
//! Lock order: the source's state, then a watch channel's. A stream polls
//! only its own channel, so a reader never waits on a writer for long, and
//! writers never wait on readers: every live watch is fed by pushing onto
//! an unbounded queue and waking its task (after the channel lock is
//! released).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_core::Stream;

use super::source::{InvalidObject, Listed, Revision, Source, SourceError, WatchEvent};
use super::timer::{DefaultTimer, SharedTimer, Timer};
use crate::sync::{Arc, Mutex};

/// A versioned in-memory map that a reflector can list and watch, with
/// faults on demand: a stand-in for etcd or a Kubernetes API server in
/// tests, examples and prototypes.
///
/// Every [`put`](Self::put) and [`delete`](Self::delete) is one change with
/// the next revision (a delete of an absent key changes nothing and takes
/// no revision, as in etcd). History is kept from the compaction point on;
/// a watch from an older revision fails with [`SourceError::TooOld`].
/// Cloning gives another handle to the same map.
///
/// Faults: [`drop_watches`](Self::drop_watches),
/// [`break_watches_after`](Self::break_watches_after),
/// [`expire_watches`](Self::expire_watches), [`compact`](Self::compact),
/// [`fail_lists`](Self::fail_lists), [`fail_watches`](Self::fail_watches),
/// [`set_delay`](Self::set_delay), and undecodable objects with
/// [`put_invalid`](Self::put_invalid).
///
/// # Examples
///
/// ```
/// use larder::reflector::MemorySource;
///
/// let source = MemorySource::new();
/// assert_eq!(source.put("a", 1), 1);
/// assert_eq!(source.put("b", 2), 2);
/// assert_eq!(source.delete(&"a"), Some(3));
/// assert_eq!(source.revision(), 3);
/// assert_eq!(source.to_vec(), [("b", 2)]);
/// ```
pub struct MemorySource<K, V> {
    shared: Arc<Shared<K, V>>,
}

struct Shared<K, V> {
    state: Mutex<State<K, V>>,
    timer: SharedTimer,
}

struct State<K, V> {
    objects: HashMap<K, Stored<V>, ahash::RandomState>,
    revision: Revision,
    compacted: Revision,
    /// Every change after `compacted`, in revision order.
    history: VecDeque<WatchEvent<K, V>>,
    watches: Vec<Arc<Channel<K, V>>>,
    fail_lists: usize,
    fail_watches: usize,
    delay: Duration,
    lists: u64,
    watch_calls: u64,
}

enum Stored<V> {
    /// An object and the revision of its last change.
    Valid(V, Revision),
    Invalid(InvalidObject),
}

/// One live watch: the events not yet taken, and how it ends.
struct Channel<K, V> {
    inner: Mutex<ChannelState<K, V>>,
}

struct ChannelState<K, V> {
    queue: VecDeque<WatchEvent<K, V>>,
    /// The revision of the last event taken (or the watch's start).
    position: Revision,
    /// Events left before the stream breaks (`break_watches_after`).
    budget: Option<usize>,
    /// The error the stream ends with, once the queue no longer matters.
    end: Option<SourceError>,
    /// The stream returned its end (or was dropped).
    closed: bool,
    waker: Option<Waker>,
}

impl<K, V> ChannelState<K, V> {
    /// Ends the stream with `error`; events not yet taken are lost.
    fn fail(&mut self, error: SourceError) -> Option<Waker> {
        if self.closed || self.end.is_some() {
            return None;
        }
        self.queue.clear();
        self.end = Some(error);
        self.waker.take()
    }
}

/// The stream of a [`MemorySource`] watch.
///
/// # Examples
///
/// ```
/// use larder::reflector::{MemorySource, Source};
///
/// let source = MemorySource::new();
/// source.put("a", 1);
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let watch = source.watch(0).await.unwrap();
/// assert!(format!("{watch:?}").contains("MemoryWatch"));
/// # });
/// ```
pub struct MemoryWatch<K, V> {
    channel: Arc<Channel<K, V>>,
}

impl<K, V> MemorySource<K, V>
where
    K: Hash + Eq + Clone,
    V: Clone,
{
    /// An empty source at revision 0, with the [`DefaultTimer`] for
    /// [`set_delay`](Self::set_delay).
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<String, u32>::new();
    /// assert_eq!(source.revision(), 0);
    /// ```
    pub fn new() -> Self {
        Self::with_timer(DefaultTimer)
    }

    /// An empty source whose [`set_delay`](Self::set_delay) waits on
    /// `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::reflector::{DefaultTimer, MemorySource};
    ///
    /// let source = MemorySource::<u32, u32>::with_timer(DefaultTimer);
    /// assert!(source.to_vec().is_empty());
    /// ```
    pub fn with_timer(timer: impl Timer) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    objects: HashMap::with_hasher(crate::sync::default_hasher()),
                    revision: 0,
                    compacted: 0,
                    history: VecDeque::new(),
                    watches: Vec::new(),
                    fail_lists: 0,
                    fail_watches: 0,
                    delay: Duration::ZERO,
                    lists: 0,
                    watch_calls: 0,
                }),
                timer: SharedTimer(Arc::new(timer)),
            }),
        }
    }

    /// Stores `object` under `key` as a new change; returns its revision.
    /// Every live watch receives the change.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::new();
    /// assert_eq!(source.put(1, "a"), 1);
    /// assert_eq!(source.put(1, "b"), 2);
    /// ```
    pub fn put(&self, key: K, object: V) -> Revision {
        let mut state = self.shared.state.lock();
        let revision = state.revision + 1;
        state.revision = revision;
        state
            .objects
            .insert(key.clone(), Stored::Valid(object.clone(), revision));
        publish(
            state,
            WatchEvent::Put {
                key,
                object,
                revision,
            },
        );
        revision
    }

    /// Deletes `key` as a new change; returns its revision, or `None` (and
    /// no change) if `key` was absent.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::new();
    /// source.put("a", 1);
    /// assert_eq!(source.delete(&"a"), Some(2));
    /// assert_eq!(source.delete(&"a"), None);
    /// ```
    pub fn delete(&self, key: &K) -> Option<Revision> {
        let mut state = self.shared.state.lock();
        let (key, _) = state.objects.remove_entry(key)?;
        let revision = state.revision + 1;
        state.revision = revision;
        publish(state, WatchEvent::Delete { key, revision });
        Some(revision)
    }

    /// Stores under `key` a value the source cannot decode, as a new
    /// change: watches receive [`WatchEvent::Invalid`] and lists report it
    /// in [`Listed::invalid`] (named by `key`'s `Display`). Returns the
    /// revision.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::new();
    /// source.put("a".to_string(), 1);
    /// source.put_invalid("a".to_string(), "truncated");
    /// assert!(source.to_vec().is_empty());
    /// ```
    pub fn put_invalid(&self, key: K, reason: impl Into<String>) -> Revision
    where
        K: fmt::Display,
    {
        let mut state = self.shared.state.lock();
        let revision = state.revision + 1;
        state.revision = revision;
        let invalid = InvalidObject {
            key: key.to_string(),
            revision,
            reason: reason.into(),
        };
        state.objects.insert(key, Stored::Invalid(invalid.clone()));
        publish(state, WatchEvent::Invalid(invalid));
        revision
    }

    /// Sends a [`WatchEvent::Bookmark`] at the current revision to every
    /// live watch.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// source.bookmark(); // nobody watches: nothing happens
    /// ```
    pub fn bookmark(&self) {
        let state = self.shared.state.lock();
        let revision = state.revision;
        feed(&state.watches, &WatchEvent::Bookmark { revision });
    }

    /// The revision of the last change (0 before any).
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::new();
    /// source.put(1, 1);
    /// assert_eq!(source.revision(), 1);
    /// ```
    pub fn revision(&self) -> Revision {
        self.shared.state.lock().revision
    }

    /// The compaction point: watches must start at or after it.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::new();
    /// source.put(1, 1);
    /// source.compact(1);
    /// assert_eq!(source.compacted(), 1);
    /// ```
    pub fn compacted(&self) -> Revision {
        self.shared.state.lock().compacted
    }

    /// A copy of every decodable object, in no particular order (sorted by key:
    /// [`to_vec_sorted`](Self::to_vec_sorted)): a snapshot at one
    /// revision.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::new();
    /// source.put("a", 1);
    /// assert_eq!(source.to_vec(), [("a", 1)]);
    /// ```
    pub fn to_vec(&self) -> Vec<(K, V)> {
        let state = self.shared.state.lock();
        state
            .objects
            .iter()
            .filter_map(|(key, stored)| match stored {
                Stored::Valid(object, _) => Some((key.clone(), object.clone())),
                Stored::Invalid(_) => None,
            })
            .collect()
    }

    /// [`to_vec`](Self::to_vec), sorted by key.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::new();
    /// source.put(2, "b");
    /// source.put(1, "a");
    /// assert_eq!(source.to_vec_sorted(), [(1, "a"), (2, "b")]);
    /// ```
    pub fn to_vec_sorted(&self) -> Vec<(K, V)>
    where
        K: Ord,
    {
        let mut contents = self.to_vec();
        contents.sort_by(|a, b| a.0.cmp(&b.0));
        contents
    }

    /// Discards the history up to `revision` (capped at the current one):
    /// a later watch from an older revision fails with
    /// [`SourceError::TooOld`], and a live watch that has not yet taken a
    /// discarded change ends with it (etcd cancels such a watcher).
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::new();
    /// source.put(1, 1);
    /// source.put(2, 2);
    /// source.compact(5);
    /// assert_eq!(source.compacted(), 2);
    /// ```
    pub fn compact(&self, revision: Revision) {
        let mut state = self.shared.state.lock();
        let at = revision.min(state.revision);
        if at <= state.compacted {
            return;
        }
        state.compacted = at;
        while state.history.front().is_some_and(|e| e.revision() <= at) {
            state.history.pop_front();
        }
        let mut wake = Vec::new();
        for channel in &state.watches {
            let mut inner = channel.inner.lock();
            if inner.queue.front().is_some_and(|e| e.revision() <= at) {
                let requested = inner.position;
                wake.extend(inner.fail(SourceError::TooOld {
                    requested,
                    compacted: Some(at),
                }));
            }
        }
        drop(state);
        wake.into_iter().for_each(Waker::wake);
    }

    /// Ends every live watch now with a connection error; the events it
    /// had not yet delivered are lost (the reader must resume from its
    /// last revision).
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// source.drop_watches();
    /// ```
    pub fn drop_watches(&self) {
        self.fail_all(|_| SourceError::connection("watch dropped by MemorySource::drop_watches"));
    }

    /// Ends every live watch now with [`SourceError::TooOld`] (as a
    /// Kubernetes API server does with a watcher that fell behind), so the
    /// reader must relist.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// source.expire_watches();
    /// ```
    pub fn expire_watches(&self) {
        self.fail_all(|position| SourceError::TooOld {
            requested: position,
            compacted: None,
        });
    }

    /// Every live watch breaks (connection error) after delivering `events`
    /// more events: a reconnect in the middle of a burst.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// source.break_watches_after(3);
    /// ```
    pub fn break_watches_after(&self, events: usize) {
        let state = self.shared.state.lock();
        let mut wake = Vec::new();
        for channel in &state.watches {
            let mut inner = channel.inner.lock();
            if events == 0 {
                wake.extend(inner.fail(SourceError::connection("watch broken mid-burst")));
            } else if !inner.closed && inner.end.is_none() {
                inner.budget = Some(events);
            }
        }
        drop(state);
        wake.into_iter().for_each(Waker::wake);
    }

    /// The next `count` calls of [`Source::list`] fail with a connection
    /// error.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// source.fail_lists(2);
    /// ```
    pub fn fail_lists(&self, count: usize) {
        self.shared.state.lock().fail_lists = count;
    }

    /// The next `count` calls of [`Source::watch`] fail with a connection
    /// error.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// source.fail_watches(2);
    /// ```
    pub fn fail_watches(&self, count: usize) {
        self.shared.state.lock().fail_watches = count;
    }

    /// Every later list and watch call waits `delay` (on the source's
    /// timer) before it reads the map: a slow network.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// source.set_delay(std::time::Duration::from_millis(5));
    /// ```
    pub fn set_delay(&self, delay: Duration) {
        self.shared.state.lock().delay = delay;
    }

    /// How many lists and watches were asked for so far (failed ones
    /// included): `(lists, watches)`.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// assert_eq!(source.calls(), (0, 0));
    /// ```
    pub fn calls(&self) -> (u64, u64) {
        let state = self.shared.state.lock();
        (state.lists, state.watch_calls)
    }

    /// How many watch streams are live.
    ///
    /// # Examples
    ///
    /// ```
    /// let source = larder::reflector::MemorySource::<u32, u32>::new();
    /// assert_eq!(source.live_watches(), 0);
    /// ```
    pub fn live_watches(&self) -> usize {
        let state = self.shared.state.lock();
        state
            .watches
            .iter()
            .filter(|channel| {
                let inner = channel.inner.lock();
                !inner.closed && inner.end.is_none()
            })
            .count()
    }

    fn fail_all(&self, error: impl Fn(Revision) -> SourceError) {
        let state = self.shared.state.lock();
        let mut wake = Vec::new();
        for channel in &state.watches {
            let mut inner = channel.inner.lock();
            let position = inner.position;
            wake.extend(inner.fail(error(position)));
        }
        drop(state);
        wake.into_iter().for_each(Waker::wake);
    }

    fn list_now(&self) -> Result<Listed<K, V>, SourceError> {
        let mut state = self.shared.state.lock();
        state.lists += 1;
        if state.fail_lists > 0 {
            state.fail_lists -= 1;
            return Err(SourceError::connection(
                "list failed (MemorySource::fail_lists)",
            ));
        }
        let mut items = Vec::with_capacity(state.objects.len());
        let mut invalid = Vec::new();
        for (key, stored) in &state.objects {
            match stored {
                Stored::Valid(object, at) => items.push((key.clone(), object.clone(), *at)),
                Stored::Invalid(object) => invalid.push(object.clone()),
            }
        }
        Ok(Listed {
            items,
            revision: state.revision,
            invalid,
        })
    }

    fn watch_now(&self, from: Revision) -> Result<MemoryWatch<K, V>, SourceError> {
        let mut state = self.shared.state.lock();
        state.watch_calls += 1;
        if state.fail_watches > 0 {
            state.fail_watches -= 1;
            return Err(SourceError::connection(
                "watch failed (MemorySource::fail_watches)",
            ));
        }
        if from < state.compacted {
            return Err(SourceError::TooOld {
                requested: from,
                compacted: Some(state.compacted),
            });
        }
        let queue = state
            .history
            .iter()
            .filter(|event| event.revision() > from)
            .cloned()
            .collect();
        let channel = Arc::new(Channel {
            inner: Mutex::new(ChannelState {
                queue,
                position: from,
                budget: None,
                end: None,
                closed: false,
                waker: None,
            }),
        });
        state.watches.retain(|c| !c.inner.lock().closed);
        state.watches.push(Arc::clone(&channel));
        Ok(MemoryWatch { channel })
    }

    fn delay(&self) -> Option<super::timer::Sleep> {
        let delay = self.shared.state.lock().delay;
        (!delay.is_zero()).then(|| self.shared.timer.sleep(delay))
    }
}

/// Records `event` in the history and feeds it to every live watch.
fn publish<K: Clone, V: Clone>(
    mut state: crate::sync::MutexGuard<'_, State<K, V>>,
    event: WatchEvent<K, V>,
) {
    feed(&state.watches, &event);
    state.history.push_back(event);
}

fn feed<K: Clone, V: Clone>(watches: &[Arc<Channel<K, V>>], event: &WatchEvent<K, V>) {
    let mut wake = Vec::new();
    for channel in watches {
        let mut inner = channel.inner.lock();
        if inner.closed || inner.end.is_some() {
            continue;
        }
        inner.queue.push_back(event.clone());
        wake.extend(inner.waker.take());
    }
    // Wakers may run user code (an executor's): with no channel lock held.
    wake.into_iter().for_each(Waker::wake);
}

impl<K, V> Source for MemorySource<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    type Key = K;
    type Object = V;
    type Watch = MemoryWatch<K, V>;

    fn list(&self) -> impl Future<Output = Result<Listed<K, V>, SourceError>> + Send {
        let delay = self.delay();
        async move {
            if let Some(delay) = delay {
                delay.await;
            }
            self.list_now()
        }
    }

    fn watch(
        &self,
        from: Revision,
    ) -> impl Future<Output = Result<MemoryWatch<K, V>, SourceError>> + Send {
        let delay = self.delay();
        async move {
            if let Some(delay) = delay {
                delay.await;
            }
            self.watch_now(from)
        }
    }
}

impl<K, V> Stream for MemoryWatch<K, V> {
    type Item = Result<WatchEvent<K, V>, SourceError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut inner = self.channel.inner.lock();
        if let Some(event) = inner.queue.pop_front() {
            inner.position = event.revision();
            if let Some(budget) = &mut inner.budget {
                *budget -= 1;
                if *budget == 0 {
                    inner.budget = None;
                    inner.fail(SourceError::connection("watch broken mid-burst"));
                }
            }
            return Poll::Ready(Some(Ok(event)));
        }
        if let Some(error) = inner.end.take() {
            inner.closed = true;
            return Poll::Ready(Some(Err(error)));
        }
        if inner.closed {
            return Poll::Ready(None);
        }
        inner.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl<K, V> Drop for MemoryWatch<K, V> {
    fn drop(&mut self) {
        self.channel.inner.lock().closed = true;
    }
}

impl<K, V> Clone for MemorySource<K, V> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K, V> Default for MemorySource<K, V>
where
    K: Hash + Eq + Clone,
    V: Clone,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> fmt::Debug for MemorySource<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("MemorySource")
            .field("len", &state.objects.len())
            .field("revision", &state.revision)
            .field("compacted", &state.compacted)
            .field("watches", &state.watches.len())
            .finish_non_exhaustive()
    }
}

impl<K, V> fmt::Debug for MemoryWatch<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.channel.inner.lock();
        f.debug_struct("MemoryWatch")
            .field("position", &inner.position)
            .field("pending", &inner.queue.len())
            .field("closed", &inner.closed)
            .finish_non_exhaustive()
    }
}
