//! A handler that replays every notification into a model of the store and
//! records what breaks the handler contract (a duplicate add, an update or
//! delete of an unknown key, an `old` that is not the last known object).
//! It never panics: the reflector would catch the panic.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use larder::reflector::Handler;

/// One notification, as delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call<K, V> {
    Add(K, V),
    Update(K, V, V),
    Delete(K, V),
}

#[derive(Debug)]
pub struct Recorder<K, V> {
    pub state: Mutex<Replay<K, V>>,
}

#[derive(Debug)]
pub struct Replay<K, V> {
    pub model: BTreeMap<K, V>,
    pub calls: Vec<Call<K, V>>,
    pub violations: Vec<String>,
}

impl<K: Ord + Clone + Debug, V: Clone + PartialEq + Debug> Recorder<K, V> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(Replay {
                model: BTreeMap::new(),
                calls: Vec::new(),
                violations: Vec::new(),
            }),
        })
    }

    /// The replayed content, sorted by key.
    pub fn model(&self) -> Vec<(K, V)> {
        let state = self.state.lock().unwrap();
        state
            .model
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn violations(&self) -> Vec<String> {
        self.state.lock().unwrap().violations.clone()
    }

    /// Takes the calls recorded so far.
    pub fn take_calls(&self) -> Vec<Call<K, V>> {
        std::mem::take(&mut self.state.lock().unwrap().calls)
    }
}

/// Lets an `Arc<Recorder>` be registered while the test keeps a clone.
pub struct Shared<K, V>(pub Arc<Recorder<K, V>>);

impl<K, V> Handler<K, V> for Shared<K, V>
where
    K: Ord + Clone + Debug + Send + Sync + 'static,
    V: Clone + PartialEq + Debug + Send + Sync + 'static,
{
    fn on_add(&self, key: &K, new: &Arc<V>) {
        let mut state = self.0.state.lock().unwrap();
        if let Some(old) = state.model.insert(key.clone(), (**new).clone()) {
            state
                .violations
                .push(format!("duplicate add of {key:?} (model had {old:?})"));
        }
        state.calls.push(Call::Add(key.clone(), (**new).clone()));
    }

    fn on_update(&self, key: &K, old: &Arc<V>, new: &Arc<V>) {
        let mut state = self.0.state.lock().unwrap();
        match state.model.insert(key.clone(), (**new).clone()) {
            Some(known) if known == **old => {}
            other => state.violations.push(format!(
                "update of {key:?}: old {old:?}, model had {other:?}"
            )),
        }
        state
            .calls
            .push(Call::Update(key.clone(), (**old).clone(), (**new).clone()));
    }

    fn on_delete(&self, key: &K, last_known: &Arc<V>) {
        let mut state = self.0.state.lock().unwrap();
        match state.model.remove(key) {
            Some(known) if known == **last_known => {}
            other => state.violations.push(format!(
                "delete of {key:?}: last known {last_known:?}, model had {other:?}"
            )),
        }
        state
            .calls
            .push(Call::Delete(key.clone(), (**last_known).clone()));
    }
}
