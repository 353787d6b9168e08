//! The by-index forms of `IndexedStore` against each other: what a caller
//! pays per call for the objects of one index value, handed out as `Arc`s
//! (`by_index`), as `(key, Arc)` pairs (`by_index_entries`), or visited in
//! place under the read lock (`for_each_by_index`).
//!
//! One store of [`PODS`] pods with the namespace and label indexes of the
//! main workloads; each operation asks for one namespace of
//! [`NAMESPACES`](super::NAMESPACES) (about 100 pods) and reads every pod's
//! generation, so the three forms do the same work on the answer. No
//! writer runs.

use std::sync::{Arc, OnceLock};

use super::{Fixture, Larder, NAMESPACES, PodStore};
use crate::common::{Contender, Rng, Workload};

/// Pods in the store.
pub const PODS: usize = 10_000;

/// The form a contender calls.
#[derive(Clone, Copy, Debug)]
enum Form {
    ByIndex,
    Entries,
    ForEach,
}

struct Shared {
    fixture: OnceLock<Fixture>,
    store: OnceLock<Larder>,
}

impl Shared {
    fn fixture(&self) -> &Fixture {
        self.fixture.get_or_init(|| Fixture::new(PODS))
    }
    fn store(&self) -> &Larder {
        self.store.get_or_init(|| {
            let store = Larder::empty();
            for (key, versions) in self.fixture().keys.iter().zip(&self.fixture().pods) {
                store.upsert(key, &versions[0]);
            }
            store
        })
    }
}

struct FormContender {
    shared: Arc<Shared>,
    form: Form,
}

impl Contender for FormContender {
    fn name(&self) -> String {
        match self.form {
            Form::ByIndex => "by_index (Vec<Arc<V>>)",
            Form::Entries => "by_index_entries (Vec<(K, Arc<V>)>)",
            Form::ForEach => "for_each_by_index (visit, no clone)",
        }
        .to_string()
    }
    fn run(&self, thread: usize, threads: usize, ops: u64) -> u64 {
        let fixture = self.shared.fixture();
        let store = self.shared.store();
        let mut rng = Rng::new((thread as u64 + 1) * 104_729 + threads as u64);
        let mut sum = 0u64;
        for _ in 0..ops {
            let ns = &fixture.namespaces[rng.below(NAMESPACES as u64) as usize];
            match self.form {
                Form::ByIndex => {
                    for pod in store.by_index("namespace", ns).expect("index exists") {
                        sum = sum.wrapping_add(pod.generation + 1);
                    }
                }
                Form::Entries => {
                    for (key, pod) in store
                        .by_index_entries("namespace", ns)
                        .expect("index exists")
                    {
                        sum = sum.wrapping_add(pod.generation + key.len() as u64);
                    }
                }
                Form::ForEach => store
                    .for_each_by_index("namespace", ns, |_, pod| {
                        sum = sum.wrapping_add(pod.generation + 1);
                    })
                    .expect("index exists"),
            }
        }
        sum
    }
}

/// The by-index forms' workload, at 1 and 2 threads.
pub fn workloads() -> Vec<Workload> {
    let shared = Arc::new(Shared {
        fixture: OnceLock::new(),
        store: OnceLock::new(),
    });
    let contenders: Vec<Box<dyn Contender>> = [Form::ByIndex, Form::Entries, Form::ForEach]
        .into_iter()
        .map(|form| {
            Box::new(FormContender {
                shared: Arc::clone(&shared),
                form,
            }) as Box<dyn Contender>
        })
        .collect();
    vec![Workload {
        family: "indexed",
        name: format!("by-index forms {}K", PODS / 1000),
        contenders,
        threads: vec![1, 2],
    }]
}
