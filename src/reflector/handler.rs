//! Event handlers (client-go's `ResourceEventHandler`) and their delivery:
//! outside every lock, one notification at a time, a panic caught and
//! reported.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::ReflectorError;
use super::report::Reporter;
use super::source::Revision;
use crate::sync::Arc;

/// Receives the changes a reflector applies to its store (client-go's
/// `ResourceEventHandler`). Every method has a default: implement the
/// three `on_*` methods for the changes alone, or
/// [`on_change`](Self::on_change) for the changes with their revisions.
///
/// Called on the reflector's task, after the store holds the change and
/// with no lock held (a handler may read the store), one notification at a
/// time, in the order the changes were applied (so in revision order per
/// key). The reflector waits for a handler to return before it applies the
/// next change (and before [`ReflectorHandle::revision`](super::ReflectorHandle::revision)
/// moves on): a slow handler delays the cache's later updates, never a
/// reader of the store. Hand slow work to a queue. A panic is caught,
/// reported as [`ReflectorError::HandlerPanicked`] and counted; the other
/// handlers still receive the notification and the loop goes on.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use larder::reflector::Handler;
///
/// struct Count(AtomicUsize);
/// impl Handler<String, u32> for Count {
///     fn on_add(&self, _key: &String, _new: &Arc<u32>) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// let count = Count(AtomicUsize::new(0));
/// count.on_add(&"a".to_string(), &Arc::new(1));
/// assert_eq!(count.0.load(Ordering::Relaxed), 1);
/// ```
pub trait Handler<K, V>: Send + Sync + 'static {
    /// `key` appeared with `new` (a watch `Put` of a new key, or a key a
    /// relist found that the store did not hold).
    fn on_add(&self, key: &K, new: &Arc<V>) {
        let _ = (key, new);
    }

    /// `key` changed from `old` to `new`: a watch `Put` of a stored key, or
    /// a key a relist found changed since the reflector last saw it (its
    /// revision moved).
    ///
    /// Also called for a *sync*, with `old` and `new` the same `Arc`: by a
    /// periodic resync for every stored object, and by a relist, for every
    /// object it found unchanged (its revision the same), to the handlers
    /// whose resync is due (client-go's `Sync`, and `Replaced` with an
    /// unchanged resource version). `Arc::ptr_eq(old, new)` is true for a
    /// sync and false for a change, however equal the two objects are
    /// ([`Change::is_sync`]): client-go's handlers compare resource
    /// versions for this.
    fn on_update(&self, key: &K, old: &Arc<V>, new: &Arc<V>) {
        let _ = (key, old, new);
    }

    /// `key` is gone; `last_known` is the object the store held (a watch
    /// `Delete`, an undecodable or rejected object, or a key a relist no
    /// longer finds: client-go's `DeletedFinalStateUnknown`).
    fn on_delete(&self, key: &K, last_known: &Arc<V>) {
        let _ = (key, last_known);
    }

    /// Every notification goes through here, with the source's `revision`
    /// the handler's view is at once it has applied `change`: the content
    /// built from every notification so far equals the source's at
    /// `revision` once the last notification of that revision is in (one
    /// etcd transaction or relist delivers several). The default calls
    /// [`on_add`](Self::on_add), [`on_update`](Self::on_update) or
    /// [`on_delete`](Self::on_delete); override it to see revisions.
    ///
    /// The revision is the change's own for a watch event, the list's for a
    /// relist's notifications, and the revision the store's content was
    /// read at for a resync or a [`HandlerRegistry`](super::HandlerRegistry)
    /// handler's first adds. Along one handler's notifications it never
    /// decreases; per key it increases from one change to the next, except
    /// that a sync (a resync, or a relist that found the key unchanged) may
    /// repeat it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use std::sync::{Arc, Mutex};
    /// use larder::reflector::{Change, Handler, Revision};
    ///
    /// /// A copy of the store with the revision it is at.
    /// #[derive(Default)]
    /// struct Replica(Mutex<(HashMap<String, u32>, Revision)>);
    /// impl Handler<String, u32> for Replica {
    ///     fn on_change(&self, change: Change<'_, String, u32>, revision: Revision) {
    ///         let mut replica = self.0.lock().unwrap();
    ///         match change {
    ///             Change::Add { key, new } | Change::Update { key, new, .. } => {
    ///                 replica.0.insert(key.clone(), **new);
    ///             }
    ///             Change::Delete { key, .. } => {
    ///                 replica.0.remove(key);
    ///             }
    ///         }
    ///         replica.1 = revision;
    ///     }
    /// }
    /// let replica = Replica::default();
    /// replica.on_change(Change::Add { key: &"a".to_string(), new: &Arc::new(1) }, 7);
    /// assert_eq!(replica.0.lock().unwrap().1, 7);
    /// ```
    fn on_change(&self, change: Change<'_, K, V>, revision: Revision) {
        let _ = revision;
        match change {
            Change::Add { key, new } => self.on_add(key, new),
            Change::Update { key, old, new } => self.on_update(key, old, new),
            Change::Delete { key, last_known } => self.on_delete(key, last_known),
        }
    }
}

/// One change as [`Handler::on_change`] receives it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use larder::reflector::Change;
///
/// let (key, new) = ("a".to_string(), Arc::new(1));
/// let change = Change::Add { key: &key, new: &new };
/// assert_eq!(change.key(), "a");
/// ```
#[derive(Debug)]
pub enum Change<'a, K, V> {
    /// See [`Handler::on_add`].
    Add {
        /// The key.
        key: &'a K,
        /// Its object.
        new: &'a Arc<V>,
    },
    /// See [`Handler::on_update`].
    Update {
        /// The key.
        key: &'a K,
        /// The object the store held.
        old: &'a Arc<V>,
        /// The object it holds now.
        new: &'a Arc<V>,
    },
    /// See [`Handler::on_delete`].
    Delete {
        /// The key.
        key: &'a K,
        /// The object the store held.
        last_known: &'a Arc<V>,
    },
}

impl<'a, K, V> Change<'a, K, V> {
    /// The key that changed.
    pub fn key(&self) -> &'a K {
        match *self {
            Change::Add { key, .. } | Change::Update { key, .. } | Change::Delete { key, .. } => {
                key
            }
        }
    }

    /// Whether this is a sync, not a change: an update whose `old` and
    /// `new` are the same `Arc` (a periodic resync, or an object a relist
    /// found unchanged; see [`Handler::on_update`]). A controller that
    /// retries failed work on a resync reconciles on either; one that acts
    /// on changes alone skips a sync.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use larder::reflector::Change;
    ///
    /// let (key, object) = ("a".to_string(), Arc::new(1));
    /// let sync = Change::Update { key: &key, old: &object, new: &object };
    /// assert!(sync.is_sync());
    /// let equal = Arc::new(1); // the same value, a new object: a change
    /// let change = Change::Update { key: &key, old: &object, new: &equal };
    /// assert!(!change.is_sync());
    /// ```
    pub fn is_sync(&self) -> bool {
        matches!(*self, Change::Update { old, new, .. } if Arc::ptr_eq(old, new))
    }
}

impl<K, V> Clone for Change<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, V> Copy for Change<'_, K, V> {}

type AddFn<K, V> = Box<dyn Fn(&K, &Arc<V>) + Send + Sync>;
type UpdateFn<K, V> = Box<dyn Fn(&K, &Arc<V>, &Arc<V>) + Send + Sync>;

/// The closures given to the builder's `on_add`, `on_update`, `on_delete`.
pub(crate) struct Closures<K, V> {
    pub(crate) add: Option<AddFn<K, V>>,
    pub(crate) update: Option<UpdateFn<K, V>>,
    pub(crate) delete: Option<AddFn<K, V>>,
}

impl<K: 'static, V: 'static> Handler<K, V> for Closures<K, V> {
    fn on_add(&self, key: &K, new: &Arc<V>) {
        if let Some(f) = &self.add {
            f(key, new);
        }
    }
    fn on_update(&self, key: &K, old: &Arc<V>, new: &Arc<V>) {
        if let Some(f) = &self.update {
            f(key, old, new);
        }
    }
    fn on_delete(&self, key: &K, last_known: &Arc<V>) {
        if let Some(f) = &self.delete {
            f(key, last_known);
        }
    }
}

/// One change to deliver, with its revision (see [`Handler::on_change`]).
pub(crate) struct Notification<K, V> {
    pub(crate) kind: Kind<K, V>,
    pub(crate) revision: Revision,
}

/// What changed.
pub(crate) enum Kind<K, V> {
    Add(K, Arc<V>),
    Update(K, Arc<V>, Arc<V>),
    Delete(K, Arc<V>),
}

impl<K, V> Notification<K, V> {
    pub(crate) fn add(key: K, new: Arc<V>, revision: Revision) -> Self {
        Self {
            kind: Kind::Add(key, new),
            revision,
        }
    }

    pub(crate) fn update(key: K, old: Arc<V>, new: Arc<V>, revision: Revision) -> Self {
        Self {
            kind: Kind::Update(key, old, new),
            revision,
        }
    }

    pub(crate) fn delete(key: K, last_known: Arc<V>, revision: Revision) -> Self {
        Self {
            kind: Kind::Delete(key, last_known),
            revision,
        }
    }
}

impl<K: 'static, V: 'static> Notification<K, V> {
    /// Calls `handler` with this notification, catching a panic: `Err`
    /// names the callback and carries the panic's message.
    pub(crate) fn call(&self, handler: &dyn Handler<K, V>) -> Result<(), ReflectorError> {
        let (callback, change) = match &self.kind {
            Kind::Add(key, new) => ("on_add", Change::Add { key, new }),
            Kind::Update(key, old, new) => ("on_update", Change::Update { key, old, new }),
            Kind::Delete(key, last_known) => ("on_delete", Change::Delete { key, last_known }),
        };
        catch_unwind(AssertUnwindSafe(|| {
            handler.on_change(change, self.revision);
        }))
        .map_err(|payload| ReflectorError::HandlerPanicked {
            callback,
            message: panic_message(&*payload),
        })
    }
}

impl<K: Clone, V> Clone for Notification<K, V> {
    fn clone(&self) -> Self {
        let kind = match &self.kind {
            Kind::Add(key, new) => Kind::Add(key.clone(), Arc::clone(new)),
            Kind::Update(key, old, new) => {
                Kind::Update(key.clone(), Arc::clone(old), Arc::clone(new))
            }
            Kind::Delete(key, old) => Kind::Delete(key.clone(), Arc::clone(old)),
        };
        Self {
            kind,
            revision: self.revision,
        }
    }
}

/// The builder's handlers.
pub(crate) struct Handlers<K, V> {
    pub(crate) list: Vec<Box<dyn Handler<K, V>>>,
}

impl<K: 'static, V: 'static> Handlers<K, V> {
    /// Delivers `notification` to every handler; a panic is caught and
    /// reported, and the next handler still gets the notification.
    pub(crate) fn deliver(&self, notification: &Notification<K, V>, reporter: &Reporter) {
        for handler in &self.list {
            reporter.call(&**handler, notification);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

impl<K, V> fmt::Debug for Handlers<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} handler(s)", self.list.len())
    }
}
