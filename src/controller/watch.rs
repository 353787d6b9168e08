//! The handlers that put keys on the controller's queue: [`Enqueue`] for
//! the primary reflector's objects (their own keys), [`MapToKeys`] for a
//! secondary watch's (the keys its map gives). Each only adds to the
//! queue, a hash-set insert, so its delivery buffer drains as fast as the
//! changes come (docs/controller.md, "Slow handlers and their buffers").

use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

use crate::WorkQueue;
use crate::reflector::Handler;
use crate::sync::Arc;

/// Queues the key of every change of the primary reflector: adds, updates
/// (resyncs included: a periodic resync reconciles every key again, as
/// client-go's controllers do) and deletes.
pub(crate) struct Enqueue<K, H>(pub(crate) Arc<WorkQueue<K, H>>);

impl<K, O, H> Handler<K, O> for Enqueue<K, H>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    H: BuildHasher + Send + Sync + 'static,
{
    fn on_add(&self, key: &K, _new: &Arc<O>) {
        self.0.add(key.clone());
    }
    fn on_update(&self, key: &K, _old: &Arc<O>, _new: &Arc<O>) {
        self.0.add(key.clone());
    }
    fn on_delete(&self, key: &K, _last_known: &Arc<O>) {
        self.0.add(key.clone());
    }
}

/// Queues the keys `map` gives for every change of a secondary watch. An
/// update maps the old object as well as the new (unless a resync, where
/// they are one): an owned object that moved to another owner reconciles
/// both owners. A panic of `map` is caught by the delivery and reported to
/// the secondary reflector's `on_error`, as any handler's.
pub(crate) struct MapToKeys<K, K2, O2, F> {
    /// The queue's `add` (the queue's hasher is not named here).
    pub(crate) add: AddFn<K>,
    pub(crate) map: F,
    pub(crate) _watched: PhantomData<fn(&K2, &O2)>,
}

/// Adds a key to the controller's queue.
pub(crate) type AddFn<K> = Arc<dyn Fn(K) + Send + Sync>;

impl<K, K2, O2, F, I> MapToKeys<K, K2, O2, F>
where
    F: Fn(&K2, &O2) -> I,
    I: IntoIterator<Item = K>,
{
    fn enqueue(&self, key: &K2, object: &O2) {
        for owner in (self.map)(key, object) {
            (self.add)(owner);
        }
    }
}

impl<K, K2, O2, F, I> Handler<K2, O2> for MapToKeys<K, K2, O2, F>
where
    K: 'static,
    K2: 'static,
    O2: 'static,
    F: Fn(&K2, &O2) -> I + Send + Sync + 'static,
    I: IntoIterator<Item = K>,
{
    fn on_add(&self, key: &K2, new: &Arc<O2>) {
        self.enqueue(key, new);
    }
    fn on_update(&self, key: &K2, old: &Arc<O2>, new: &Arc<O2>) {
        if !Arc::ptr_eq(old, new) {
            self.enqueue(key, old);
        }
        self.enqueue(key, new);
    }
    fn on_delete(&self, key: &K2, last_known: &Arc<O2>) {
        self.enqueue(key, last_known);
    }
}
