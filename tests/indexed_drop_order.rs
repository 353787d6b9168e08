//! Where the user code of a key or an object runs relative to an
//! `IndexedStore`'s locks: a key whose `Eq` panics in a write's probe
//! leaves the key and object it brought to drop after the unlock (a `Drop`
//! that reads the store would deadlock under it), and a panicking `Drop`
//! of what a write displaced runs after the write is complete.

#[path = "common/watchdog.rs"]
mod watchdog;

use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use larder::{IndexError, IndexedStore};

/// A key whose `Eq` panics when either side is a bomb, and whose `Drop`
/// reads the store it points to: a deadlock if that runs under the lock.
#[derive(Clone, Debug)]
struct EqBomb {
    id: u32,
    bomb: bool,
    store: std::sync::Weak<IndexedStore<EqBomb, u32>>,
}

impl Hash for EqBomb {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl PartialEq for EqBomb {
    fn eq(&self, other: &Self) -> bool {
        assert!(!self.bomb && !other.bomb, "Eq panics");
        self.id == other.id
    }
}

impl Eq for EqBomb {}

impl Drop for EqBomb {
    fn drop(&mut self) {
        if let Some(store) = self.store.upgrade() {
            assert_eq!(store.len(), 1);
        }
    }
}

#[test]
fn an_insert_whose_key_eq_panics_drops_the_key_after_the_lock_is_released() {
    let _watchdog = watchdog::arm(Duration::from_secs(30));
    let key = |bomb| EqBomb {
        id: 1,
        bomb,
        store: std::sync::Weak::new(),
    };
    let store = Arc::new(IndexedStore::<EqBomb, u32>::new());
    store.insert(key(false), 1).unwrap();
    let bomb = EqBomb {
        store: Arc::downgrade(&store),
        ..key(true)
    };
    // The probe meets the stored key with the same hash: `Eq` panics, and
    // the key, still the caller's, drops (reading the store) unlocked.
    assert!(catch_unwind(AssertUnwindSafe(|| store.insert(bomb, 2))).is_err());
    assert_eq!(store.get(&key(false)), Some(1));
    store.check_invariants();
}

/// An object whose `Drop` reads the store it was written to: under that
/// store's write lock it would deadlock (the watchdog then fails the test).
struct StoreReader(std::sync::Weak<IndexedStore<EqBomb, StoreReader>>);

impl Drop for StoreReader {
    fn drop(&mut self) {
        if let Some(store) = self.0.upgrade() {
            assert_eq!(store.len(), 1);
        }
    }
}

#[test]
fn an_insert_whose_key_eq_panics_drops_the_object_after_the_lock_is_released() {
    let _watchdog = watchdog::arm(Duration::from_secs(30));
    let key = |bomb| EqBomb {
        id: 1,
        bomb,
        store: std::sync::Weak::new(),
    };
    // Without index (the lean write) and with one (the full write).
    for indexed in [false, true] {
        let mut builder = IndexedStore::builder();
        if indexed {
            builder = builder.index("all", |_: &StoreReader| ["all"]);
        }
        let store = Arc::new(builder.build().unwrap());
        store
            .insert(key(false), StoreReader(std::sync::Weak::new()))
            .unwrap();
        let object = StoreReader(Arc::downgrade(&store));
        assert!(catch_unwind(AssertUnwindSafe(|| store.insert(key(true), object))).is_err());
        assert_eq!(store.len(), 1, "indexed: {indexed}");
        store.check_invariants();
    }
}

#[test]
fn a_transaction_whose_key_eq_panics_drops_its_writes_after_the_locks_are_released() {
    let _watchdog = watchdog::arm(Duration::from_secs(30));
    let key = |id, bomb| EqBomb {
        id,
        bomb,
        store: std::sync::Weak::new(),
    };
    let store = Arc::new(IndexedStore::<EqBomb, u32>::new());
    store.insert(key(1, false), 1).unwrap();
    let bomb = EqBomb {
        store: Arc::downgrade(&store),
        ..key(1, true)
    };
    // The probe under the locks meets the stored key: `Eq` panics before
    // any change, and the recorded writes, still the caller's, drop (the
    // bomb reading the store) unlocked.
    let result = catch_unwind(AssertUnwindSafe(|| {
        store.transaction(|tx| -> Result<(), IndexError> {
            tx.insert(key(2, false), 2)?;
            tx.insert(bomb, 3)?;
            Ok(())
        })
    }));
    assert!(result.is_err());
    assert_eq!(store.len(), 1);
    assert_eq!(store.get(&key(1, false)), Some(1));
    store.check_invariants();
}

static DROP_PANICS: AtomicBool = AtomicBool::new(false);

/// A value whose `Drop` panics while `DROP_PANICS` is set.
#[derive(Debug)]
struct Grenade(u32);

impl Drop for Grenade {
    fn drop(&mut self) {
        if DROP_PANICS.load(Ordering::SeqCst) && !thread::panicking() {
            panic!("Drop panics");
        }
    }
}

#[test]
fn panicking_drop_runs_after_the_write_is_complete() {
    let store: IndexedStore<u32, Grenade> = IndexedStore::builder()
        .index("n", |g: &Grenade| [g.0.to_string()])
        .build()
        .unwrap();
    store.insert(1, Grenade(1)).unwrap();
    store.insert(2, Grenade(2)).unwrap();
    DROP_PANICS.store(true, Ordering::SeqCst);
    // The old objects are dropped after the new content is installed and
    // the lock released: the panic reaches the caller, the store is whole.
    let result = catch_unwind(AssertUnwindSafe(|| store.replace(vec![(3, Grenade(3))])));
    assert!(result.is_err());
    DROP_PANICS.store(false, Ordering::SeqCst);
    store.check_invariants();
    assert_eq!(store.keys_to_vec(), [3]);
    assert_eq!(store.index_values("n").unwrap(), ["3"]);
    // The lock was released: writes still work.
    store.insert(4, Grenade(4)).unwrap();
    assert_eq!(store.len(), 2);
}
