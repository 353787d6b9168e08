//! The key-sharded state of `IndexedStore`: shard counts, keys spread over
//! every shard, and reads and transactions across shards racing writers,
//! each on plain and on striped (`read_mostly`) shard locks.

#[path = "common/watchdog.rs"]
mod watchdog;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use larder::{BuildError, IndexError, IndexedStore};

#[test]
fn shard_counts_are_powers_of_two_and_bounded() {
    let store = |n| IndexedStore::<u32, u32>::builder().shards(n).build();
    assert_eq!(store(1).unwrap().shard_count(), 1);
    assert_eq!(store(3).unwrap().shard_count(), 4);
    assert_eq!(store(128).unwrap().shard_count(), 128);
    assert!(matches!(store(0), Err(BuildError::ZeroShards)));
    let error = store(129).unwrap_err();
    assert!(matches!(
        error,
        BuildError::TooManyShards {
            shards: 129,
            max: 128
        }
    ));
    assert_eq!(
        error.to_string(),
        "the shard count 129 exceeds the most allowed, 128"
    );
    assert!(
        IndexedStore::<u32, u32>::new()
            .shard_count()
            .is_power_of_two()
    );
}

/// Both shard-lock modes.
const MODES: [bool; 2] = [false, true];

#[test]
fn keys_spread_over_every_shard_and_stay_in_theirs() {
    for read_mostly in MODES {
        keys_spread_over_every_shard(read_mostly);
    }
}

fn keys_spread_over_every_shard(read_mostly: bool) {
    let store = IndexedStore::<u32, u32>::builder()
        .index("parity", |n: &u32| [(n % 2).to_string()])
        .shards(8)
        .read_mostly(read_mostly)
        .build()
        .unwrap();
    let mut used = [0usize; 8];
    for key in 0..4_000u32 {
        store.insert(key, key).unwrap();
        used[store.shard_of(&key)] += 1;
    }
    assert!(
        used.iter().all(|&n| n > 300),
        "keys do not spread over the shards: {used:?}"
    );
    for key in (0..4_000u32).step_by(3) {
        store.remove(&key);
    }
    store.replace((0..1_000u32).map(|k| (k, k * 2))).unwrap();
    // `check_invariants` also checks that every key sits in its own shard.
    store.check_invariants();
    assert_eq!(store.len(), 1_000);
    assert_eq!(store.index_len("parity", "0").unwrap(), 1_000);
}

/// Writers move objects between keys of different shards in transactions
/// (remove one key, insert another, one color to the other) while readers
/// take whole-store reads: every read sees exactly the number of objects
/// the store always holds, each under its color.
#[test]
fn whole_store_reads_see_transactions_across_shards_whole() {
    let _watchdog = watchdog::arm(Duration::from_secs(60));
    for read_mostly in MODES {
        transactions_across_shards_whole(read_mostly);
    }
}

fn transactions_across_shards_whole(read_mostly: bool) {
    const OBJECTS: u32 = 16;
    let store = Arc::new(
        IndexedStore::<u32, &'static str>::builder()
            .index("color", |color: &&'static str| [*color])
            .shards(4)
            .read_mostly(read_mostly)
            .build()
            .unwrap(),
    );
    // Object i lives under key i (red) or key i + 1000 (blue).
    for i in 0..OBJECTS {
        store.insert(i, "red").unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        thread::spawn(move || {
            let mut round = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let i = round % OBJECTS;
                store
                    .transaction(|tx| -> Result<(), IndexError> {
                        if store.contains_key(&i) {
                            tx.remove(&i);
                            tx.insert(i + 1000, "blue")
                        } else {
                            tx.remove(&(i + 1000));
                            tx.insert(i, "red")
                        }
                    })
                    .unwrap();
                round += 1;
            }
        })
    };
    for _ in 0..2_000 {
        let listed = store.to_vec();
        assert_eq!(listed.len(), OBJECTS as usize, "{listed:?}");
        for (key, color) in &listed {
            assert_eq!(*color, if *key >= 1000 { "blue" } else { "red" });
        }
        let red = store.by_index("color", "red").unwrap().len();
        let blue = store.by_index("color", "blue").unwrap().len();
        assert!(red <= OBJECTS as usize && blue <= OBJECTS as usize);
        assert_eq!(store.len(), OBJECTS as usize);
        let keys = store.keys_to_vec();
        let mut objects: Vec<u32> = keys.iter().map(|key| key % 1000).collect();
        objects.sort_unstable();
        objects.dedup();
        assert_eq!(
            (keys.len(), objects.len()),
            (OBJECTS as usize, OBJECTS as usize),
            "an object listed twice or missing: {keys:?}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    store.check_invariants();
}

/// A writer applies revisioned inserts, revision r to key r (keys spread
/// over every shard), while a reader takes `to_vec_with_revision`: each
/// read holds exactly the keys 1..=r of its revision r, never one more or
/// one fewer (a read of the content and the revision apart would pair a
/// content with a revision it does not belong with).
///
/// The reads provably overlap the writes, whatever the scheduling: the
/// writer starts after the reader's first read and keeps writing (at
/// least `WRITES` revisions) until the reader has read `OVERLAPPING` times
/// after the first write.
#[test]
fn a_whole_store_read_carries_the_revision_of_its_content() {
    let _watchdog = watchdog::arm(Duration::from_secs(60));
    for read_mostly in MODES {
        read_carries_its_revision(read_mostly);
    }
}

fn read_carries_its_revision(read_mostly: bool) {
    const WRITES: u64 = 20_000;
    const OVERLAPPING: usize = 20;
    let store = Arc::new(
        IndexedStore::<u64, u64>::builder()
            .shards(4)
            .read_mostly(read_mostly)
            .build()
            .unwrap(),
    );
    // Reads taken so far, and those that saw a write (revision >= 1).
    let reads = Arc::new(AtomicUsize::new(0));
    let overlapping = Arc::new(AtomicUsize::new(0));
    // The writer's last revision, once it has stopped (0 until then).
    let last = Arc::new(AtomicU64::new(0));
    let writer = {
        let (store, reads, overlapping, last) = (
            Arc::clone(&store),
            Arc::clone(&reads),
            Arc::clone(&overlapping),
            Arc::clone(&last),
        );
        thread::spawn(move || {
            while reads.load(Ordering::SeqCst) == 0 {
                thread::yield_now();
            }
            let mut revision = 0;
            while revision < WRITES || overlapping.load(Ordering::SeqCst) < OVERLAPPING {
                revision += 1;
                store
                    .insert_at_revision(revision, revision, revision)
                    .unwrap();
            }
            last.store(revision, Ordering::SeqCst);
        })
    };
    loop {
        // Read before the read: if the writer had stopped, this read is at
        // its last revision.
        let stopped = last.load(Ordering::SeqCst);
        let (objects, revision) = store.to_vec_with_revision();
        assert_eq!(objects.len() as u64, revision, "content and revision apart");
        assert!(objects.iter().all(|(key, _)| *key <= revision));
        reads.fetch_add(1, Ordering::SeqCst);
        if revision >= 1 {
            overlapping.fetch_add(1, Ordering::SeqCst);
        }
        if stopped != 0 {
            assert_eq!(revision, stopped, "a read after the last write");
            break;
        }
    }
    writer.join().unwrap();
    // Every read counted here but the last ran while the writer was still
    // writing (it stops only after seeing them).
    assert!(overlapping.load(Ordering::SeqCst) > OVERLAPPING);
}

/// Readers on every read stripe of a read-mostly store (more reader
/// threads than stripes) take point reads while a writer updates the same
/// keys: every read finds its key, whole (`(key, version)` with the key it
/// was stored under). A writer that left a stripe unlocked, or emptied it
/// outside its critical section, would fail these reads or the write.
#[test]
fn point_reads_on_every_stripe_see_writes_whole() {
    let _watchdog = watchdog::arm(Duration::from_secs(60));
    const KEYS: u64 = 64;
    const READS: usize = 20_000;
    let store = Arc::new(
        IndexedStore::<u64, (u64, u64)>::builder()
            .shards(2)
            .read_mostly(true)
            .build()
            .unwrap(),
    );
    for key in 0..KEYS {
        store.insert(key, (key, 0)).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        thread::spawn(move || {
            let mut version = 0;
            while !stop.load(Ordering::Relaxed) {
                version += 1;
                store
                    .insert(version % KEYS, (version % KEYS, version))
                    .unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                for read in 0..READS as u64 {
                    let key = read % KEYS;
                    let (stored, _) = store.get(&key).expect("no key is ever removed");
                    assert_eq!(stored, key);
                }
            })
        })
        .collect();
    for reader in readers {
        reader.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    store.check_invariants();
}
