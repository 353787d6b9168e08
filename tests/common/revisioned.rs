//! A handler that records every notification with its revision
//! (`Handler::on_change`), and the checks of what the revision promises:
//! never lower than the handler's previous one, higher than the key's
//! previous one for every notification that changes the key's object
//! (a resync, or a relist's update of an unchanged object, may repeat it),
//! and, replayed up to the last notification of a revision `R`, a replica
//! equal to the source's content at `R`. It never panics: the reflector
//! would catch the panic.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use larder::reflector::{Change, Handler, Revision};

/// One notification: the key, its object afterwards (`None`: deleted),
/// whether the object is the same value as before, and the revision.
#[derive(Debug, Clone)]
pub struct Tag<K, V> {
    pub key: K,
    pub object: Option<V>,
    pub unchanged: bool,
    pub revision: Revision,
}

/// Records the notifications of one handler.
#[derive(Debug)]
pub struct Tagged<K, V> {
    pub log: Mutex<Vec<Tag<K, V>>>,
}

impl<K, V> Tagged<K, V> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            log: Mutex::new(Vec::new()),
        })
    }

    pub fn len(&self) -> usize {
        self.log.lock().unwrap().len()
    }
}

/// A `Handler` over a shared [`Tagged`].
pub struct Tagging<K, V>(pub Arc<Tagged<K, V>>);

impl<K, V> Handler<K, V> for Tagging<K, V>
where
    K: Clone + Send + Sync + 'static,
    V: Clone + PartialEq + Send + Sync + 'static,
{
    fn on_change(&self, change: Change<'_, K, V>, revision: Revision) {
        let (object, unchanged) = match change {
            Change::Add { new, .. } => (Some((**new).clone()), false),
            Change::Update { old, new, .. } => (Some((**new).clone()), old == new),
            Change::Delete { .. } => (None, false),
        };
        self.0.log.lock().unwrap().push(Tag {
            key: change.key().clone(),
            object,
            unchanged,
            revision,
        });
    }
}

/// Where the log breaks the order revisions promise (the first ten, and
/// how many more).
pub fn order_violations<K, V>(log: &[Tag<K, V>]) -> Vec<String>
where
    K: Hash + Eq + Clone + Debug,
{
    let mut violations = Vec::new();
    let mut last = 0;
    let mut per_key: HashMap<K, Revision> = HashMap::new();
    for (at, tag) in log.iter().enumerate() {
        if tag.revision < last {
            violations.push(format!(
                "notification {at} ({:?}) at {} after {last}",
                tag.key, tag.revision
            ));
        }
        last = last.max(tag.revision);
        if let Some(&previous) = per_key.get(&tag.key) {
            let ok = if tag.unchanged {
                tag.revision >= previous
            } else {
                tag.revision > previous
            };
            if !ok {
                violations.push(format!(
                    "notification {at}: {:?} at {} after its change at {previous} (unchanged: {})",
                    tag.key, tag.revision, tag.unchanged
                ));
            }
        }
        per_key.insert(tag.key.clone(), tag.revision);
    }
    if violations.len() > 10 {
        let more = violations.len() - 10;
        violations.truncate(10);
        violations.push(format!("and {more} more"));
    }
    violations
}

/// The replica the log builds, at the end of each revision's notifications:
/// `(R, content)` in log order, the last entry the replica at the end.
pub fn replicas<K, V>(log: &[Tag<K, V>]) -> Vec<(Revision, BTreeMap<K, V>)>
where
    K: Ord + Clone,
    V: Clone,
{
    let mut replica = BTreeMap::new();
    let mut out = Vec::new();
    for (at, tag) in log.iter().enumerate() {
        match &tag.object {
            Some(object) => replica.insert(tag.key.clone(), object.clone()),
            None => replica.remove(&tag.key),
        };
        if log
            .get(at + 1)
            .is_none_or(|next| next.revision != tag.revision)
        {
            out.push((tag.revision, replica.clone()));
        }
    }
    out
}

/// `count` entries of `all`, spread evenly (the first and last included).
pub fn spread<T: Clone>(all: &[T], count: usize) -> Vec<T> {
    if all.len() <= count {
        return all.to_vec();
    }
    (0..count)
        .map(|i| all[i * (all.len() - 1) / (count - 1)].clone())
        .collect()
}
