//! What a reflector reads from: a list+watch source of truth (client-go's
//! `ListerWatcher`).

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;

use futures_core::Stream;

/// A position in the source's history: etcd's revision, Kubernetes'
/// `resourceVersion`. Revisions never decrease along a watch. Changes made
/// by one request may share a revision (etcd gives every key a transaction
/// or a prefix delete touches the same one), so a change is named by its
/// revision *and* its key.
pub type Revision = u64;

/// The whole content of a source, read at one revision
/// (client-go's `List`, whose `ListMeta.resourceVersion` is `revision`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed<K, V> {
    /// Every object, with its key and the revision of its last change
    /// (etcd's `mod_revision`, Kubernetes' `metadata.resourceVersion`: the
    /// revision a [`WatchEvent::Put`] of that object carried). A key
    /// appears at most once.
    ///
    /// A relist compares these revisions with how far the reflector had
    /// got: an object not changed since is a *sync*, delivered only to the
    /// handlers whose resync is due. A source that cannot tell an object's
    /// revision gives the list's `revision`: the object then counts as
    /// changed unless nothing at all changed since the reflector's last
    /// revision, which is never wrong, only more notifications.
    pub items: Vec<(K, V, Revision)>,
    /// The revision the list was read at: a watch from `revision` sees every
    /// change after it.
    pub revision: Revision,
    /// Objects the source could not decode (reported, not silently dropped);
    /// they are absent from `items`.
    pub invalid: Vec<InvalidObject>,
}

/// One change in the source, in revision order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent<K, V> {
    /// `key` now holds `object` (created or updated) as of `revision`.
    Put {
        /// The object's key.
        key: K,
        /// Its new content.
        object: V,
        /// The revision of this change.
        revision: Revision,
    },
    /// `key` was deleted at `revision`.
    Delete {
        /// The deleted object's key.
        key: K,
        /// The revision of this change.
        revision: Revision,
    },
    /// Nothing changed up to `revision` beyond what the stream has already
    /// delivered (etcd's progress notification, Kubernetes' `BOOKMARK`).
    Bookmark {
        /// The revision the stream has caught up with.
        revision: Revision,
    },
    /// `key` changed at `revision` but its new value could not be decoded.
    /// The reflector reports it and drops the key's old object (the cache
    /// never serves content the source no longer holds); the rest of the
    /// stream goes on.
    Invalid(InvalidObject),
}

impl<K, V> WatchEvent<K, V> {
    /// The revision this event brings the reader to.
    pub fn revision(&self) -> Revision {
        match self {
            WatchEvent::Put { revision, .. }
            | WatchEvent::Delete { revision, .. }
            | WatchEvent::Bookmark { revision } => *revision,
            WatchEvent::Invalid(invalid) => invalid.revision,
        }
    }
}

/// An object the source holds but could not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidObject {
    /// The key, as the source names it (for etcd: the key's bytes, lossily
    /// decoded as UTF-8).
    pub key: String,
    /// The revision of the undecodable value.
    pub revision: Revision,
    /// Why decoding failed.
    pub reason: String,
}

/// Why a list or a watch stopped. The reflector's reaction depends on the
/// kind: [`TooOld`](SourceError::TooOld) and
/// [`ProgressAheadOfEvent`](SourceError::ProgressAheadOfEvent) make it
/// relist, [`Connection`](SourceError::Connection) makes it retry with
/// backoff.
#[derive(Debug)]
#[non_exhaustive]
pub enum SourceError {
    /// The requested revision is no longer available (compacted): the
    /// reader must list again (Kubernetes' `410 Gone`, etcd's
    /// `ErrCompacted`).
    TooOld {
        /// The revision asked for.
        requested: Revision,
        /// The oldest revision still available, when the source says.
        compacted: Option<Revision>,
    },
    /// The source could not be reached or the stream broke; retrying from
    /// the last applied revision is safe.
    Connection(Box<dyn StdError + Send + Sync>),
    /// The source said it had delivered everything up to `bookmarked` (a
    /// progress notification), then delivered an event at `event`, not
    /// later: a reader that trusted the bookmark missed that event, so the
    /// reader must list again. Nothing was compacted. etcd before 3.4.25
    /// and 3.5.8 can do this under load.
    ProgressAheadOfEvent {
        /// The revision the progress notification claimed.
        bookmarked: Revision,
        /// The revision of the event that came after it.
        event: Revision,
    },
}

impl SourceError {
    /// A [`Connection`](SourceError::Connection) error from anything that
    /// describes it.
    pub fn connection(error: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        SourceError::Connection(error.into())
    }

    /// Whether the requested revision is compacted
    /// ([`TooOld`](SourceError::TooOld)).
    pub fn is_too_old(&self) -> bool {
        matches!(self, SourceError::TooOld { .. })
    }

    /// Whether the reader must relist rather than resume its watch: a
    /// compacted revision or a progress notification ahead of an event.
    pub fn needs_relist(&self) -> bool {
        matches!(
            self,
            SourceError::TooOld { .. } | SourceError::ProgressAheadOfEvent { .. }
        )
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::TooOld {
                requested,
                compacted: Some(compacted),
            } => write!(
                f,
                "revision {requested} is too old: the source is compacted up to {compacted}"
            ),
            SourceError::TooOld {
                requested,
                compacted: None,
            } => write!(f, "revision {requested} is too old (compacted)"),
            SourceError::Connection(error) => write!(f, "source connection failed: {error}"),
            SourceError::ProgressAheadOfEvent { bookmarked, event } => write!(
                f,
                "the source reported progress up to revision {bookmarked}, then sent an event \
                 of revision {event}: its progress notification came ahead of events"
            ),
        }
    }
}

impl StdError for SourceError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            SourceError::Connection(error) => Some(&**error),
            SourceError::TooOld { .. } | SourceError::ProgressAheadOfEvent { .. } => None,
        }
    }
}

/// A list+watch source of truth (client-go's `ListerWatcher`): a reflector
/// lists it once, then watches it from the listed revision, and lists again
/// when the watch says its revision is too old.
///
/// The futures and streams must be `Send` so that a reflector can run on a
/// multi-threaded executor; no particular runtime is assumed.
pub trait Source: Send + Sync + 'static {
    /// The key objects are stored under.
    type Key: std::hash::Hash + Eq + Clone + Send + Sync + 'static;
    /// The objects.
    type Object: Send + Sync + 'static;
    /// The stream a watch returns.
    type Watch: Stream<Item = Result<WatchEvent<Self::Key, Self::Object>, SourceError>>
        + Send
        + Unpin
        + 'static;

    /// Reads the whole content at one revision, each object with the
    /// revision of its last change (see [`Listed::items`]).
    fn list(
        &self,
    ) -> impl Future<Output = Result<Listed<Self::Key, Self::Object>, SourceError>> + Send;

    /// Streams every change after `from` (exclusive), in revision order.
    /// The stream ends with `Err` (or `None`, read as a dropped connection);
    /// an `Err(TooOld)` may come first thing if `from` is compacted.
    fn watch(
        &self,
        from: Revision,
    ) -> impl Future<Output = Result<Self::Watch, SourceError>> + Send;

    /// Whether a [`WatchEvent::Bookmark`] at revision `r` proves that every
    /// change up to `r` has been sent. The default says yes.
    ///
    /// A source that says no (etcd before 3.4.25 and 3.5.8 can send a
    /// progress notification ahead of events) has a broken watch resumed
    /// after the last change the reflector applied, not after its last
    /// bookmark: a change that an early bookmark skipped is then delivered
    /// by the new watch, and the reflector relists, counting it in
    /// [`ReflectorStats::progress_ahead_of_events`](super::ReflectorStats::progress_ahead_of_events).
    /// The cost: a watch that breaks on a prefix quiet for longer than the
    /// source keeps its history resumes from a compacted revision and
    /// relists.
    ///
    /// # Examples
    ///
    /// ```
    /// use larder::reflector::{MemorySource, Source};
    ///
    /// // A `MemorySource` sends a bookmark only once every change before
    /// // it is queued; an `EtcdSource` answers `false`.
    /// let source = MemorySource::<String, u32>::new();
    /// assert!(source.bookmarks_cover_every_change());
    /// ```
    fn bookmarks_cover_every_change(&self) -> bool {
        true
    }
}
