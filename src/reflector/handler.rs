//! Event handlers (client-go's `ResourceEventHandler`) and their delivery:
//! outside every lock, one notification at a time, a panic caught and
//! reported.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::ReflectorError;
use crate::sync::Arc;

/// Receives the changes a reflector applies to its store (client-go's
/// `ResourceEventHandler`). Every method has an empty default.
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

    /// `key` changed from `old` to `new`. Also called for every object a
    /// relist finds already stored (client-go's `Replaced`, `old` and `new`
    /// then may be equal) and, by a periodic resync, with `old` and `new`
    /// the same `Arc` (client-go's `Sync`).
    fn on_update(&self, key: &K, old: &Arc<V>, new: &Arc<V>) {
        let _ = (key, old, new);
    }

    /// `key` is gone; `last_known` is the object the store held (a watch
    /// `Delete`, an undecodable or rejected object, or a key a relist no
    /// longer finds: client-go's `DeletedFinalStateUnknown`).
    fn on_delete(&self, key: &K, last_known: &Arc<V>) {
        let _ = (key, last_known);
    }
}

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

/// One change to deliver.
pub(crate) enum Notification<K, V> {
    Add(K, Arc<V>),
    Update(K, Arc<V>, Arc<V>),
    Delete(K, Arc<V>),
}

impl<K: Clone, V> Clone for Notification<K, V> {
    fn clone(&self) -> Self {
        match self {
            Self::Add(key, new) => Self::Add(key.clone(), Arc::clone(new)),
            Self::Update(key, old, new) => {
                Self::Update(key.clone(), Arc::clone(old), Arc::clone(new))
            }
            Self::Delete(key, old) => Self::Delete(key.clone(), Arc::clone(old)),
        }
    }
}

/// Every registered handler.
pub(crate) struct Handlers<K, V> {
    pub(crate) list: Vec<Box<dyn Handler<K, V>>>,
}

impl<K: 'static, V: 'static> Handlers<K, V> {
    /// Delivers `notification` to every handler, catching panics; returns
    /// the panics as errors to report.
    pub(crate) fn deliver(&self, notification: &Notification<K, V>) -> Vec<ReflectorError> {
        let mut panics = Vec::new();
        for handler in &self.list {
            let (callback, result) = match notification {
                Notification::Add(key, new) => (
                    "on_add",
                    catch_unwind(AssertUnwindSafe(|| handler.on_add(key, new))),
                ),
                Notification::Update(key, old, new) => (
                    "on_update",
                    catch_unwind(AssertUnwindSafe(|| handler.on_update(key, old, new))),
                ),
                Notification::Delete(key, old) => (
                    "on_delete",
                    catch_unwind(AssertUnwindSafe(|| handler.on_delete(key, old))),
                ),
            };
            if let Err(payload) = result {
                panics.push(ReflectorError::HandlerPanicked {
                    callback,
                    message: panic_message(&*payload),
                });
            }
        }
        panics
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
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
