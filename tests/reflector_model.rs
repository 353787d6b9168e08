//! A property test of the reflector against the source it mirrors: random
//! interleavings of source writes, compactions and faults, driven by a
//! single-threaded executor (a no-op waker, polled by hand) with a timer
//! that never waits, so that each case runs in microseconds and never
//! depends on the wall clock.
//!
//! After every case the store must hold exactly the source's decodable
//! content, the handler-replayed model must equal it, no handler call may
//! break the contract (no duplicate add, no update or delete of an unknown
//! object), and the reflector must have caught up with the source's
//! revision. Every put writes a value never written before, so an update
//! whose old and new values are equal is a sync: the handler has no
//! resync, and a relist must send it none (only what changed).

#![cfg(feature = "reflector")]

#[path = "common/recorder.rs"]
mod recorder;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use larder::IndexedStore;
use larder::reflector::{Backoff, MemorySource, Reflector, ReflectorHandle, Sleep, StoreReader};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use recorder::{Call, Recorder, Shared};

#[derive(Debug, Clone)]
enum Op {
    /// A put of a value never written before.
    Put(u8),
    Delete(u8),
    PutInvalid(u8),
    Compact,
    DropWatches,
    BreakWatchesAfter(usize),
    ExpireWatches,
    FailWatches(usize),
    FailLists(usize),
    Bookmark,
    /// Let the reflector run until it waits for the source.
    Poll,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..8).prop_map(Op::Put),
        3 => (0u8..8).prop_map(Op::Delete),
        1 => (0u8..8).prop_map(Op::PutInvalid),
        1 => Just(Op::Compact),
        1 => Just(Op::DropWatches),
        1 => (0usize..4).prop_map(Op::BreakWatchesAfter),
        1 => Just(Op::ExpireWatches),
        1 => (0usize..3).prop_map(Op::FailWatches),
        1 => (0usize..3).prop_map(Op::FailLists),
        1 => Just(Op::Bookmark),
        4 => Just(Op::Poll),
    ]
}

/// A timer whose sleeps are over at once.
fn instant(_: Duration) -> Sleep {
    Box::pin(std::future::ready(()))
}

type Loop = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One poll: with every source call ready at once and no backoff, the loop
/// runs until it waits on an empty watch stream.
fn poll(reflector: &mut Loop) {
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(
        reflector.as_mut().poll(&mut cx),
        Poll::Pending,
        "the loop ended without being stopped"
    );
}

struct Case {
    source: MemorySource<u8, u32>,
    store: StoreReader<u8, u32>,
    recorder: Arc<Recorder<u8, u32>>,
    handle: ReflectorHandle,
    reflector: Loop,
    /// The next value a put writes.
    next_value: u32,
}

fn case(parse_keys: bool) -> Case {
    let source = MemorySource::with_timer(instant);
    let store = IndexedStore::<u8, Arc<u32>>::builder()
        .index("parity", |v: &Arc<u32>| {
            [if **v % 2 == 0 { "even" } else { "odd" }]
        })
        .build()
        .unwrap();
    let recorder = Recorder::new();
    let mut builder = Reflector::builder(source.clone(), store)
        .handler(Shared(Arc::clone(&recorder)))
        .backoff(Backoff::none())
        .timer(instant);
    if parse_keys {
        builder = builder.parse_invalid_key(|key| key.parse().ok());
    }
    let reflector = builder.build().unwrap();
    let store = reflector.reader();
    let handle = reflector.handle();
    Case {
        source,
        store,
        recorder,
        handle,
        reflector: Box::pin(reflector.run()),
        next_value: 0,
    }
}

fn apply(case: &mut Case, op: &Op) {
    let source = &case.source;
    match *op {
        Op::Put(key) => {
            source.put(key, case.next_value);
            case.next_value += 1;
        }
        Op::Delete(key) => drop(source.delete(&key)),
        Op::PutInvalid(key) => drop(source.put_invalid(key, "undecodable")),
        Op::Compact => source.compact(source.revision()),
        Op::DropWatches => source.drop_watches(),
        Op::BreakWatchesAfter(n) => source.break_watches_after(n),
        Op::ExpireWatches => source.expire_watches(),
        Op::FailWatches(n) => source.fail_watches(n),
        Op::FailLists(n) => source.fail_lists(n),
        Op::Bookmark => source.bookmark(),
        Op::Poll => poll(&mut case.reflector),
    }
}

fn check(case: &mut Case) -> Result<(), TestCaseError> {
    poll(&mut case.reflector);
    let expected = case.source.to_vec_sorted();
    let mut stored: Vec<(u8, u32)> = case
        .store
        .to_vec()
        .into_iter()
        .map(|(k, v)| (k, *v))
        .collect();
    stored.sort();
    prop_assert_eq!(&stored, &expected, "store differs from the source");
    prop_assert_eq!(
        case.recorder.model(),
        expected,
        "replay differs from the source"
    );
    prop_assert_eq!(case.recorder.violations(), Vec::<String>::new());
    let syncs: Vec<Call<u8, u32>> = case
        .recorder
        .take_calls()
        .into_iter()
        .filter(|call| matches!(call, Call::Update(_, old, new) if old == new))
        .collect();
    prop_assert_eq!(syncs, Vec::new(), "a relist sent unchanged objects");
    prop_assert!(case.handle.has_synced());
    prop_assert_eq!(case.handle.revision(), case.source.revision());
    case.store.check_invariants();
    Ok(())
}

#[test]
fn reflector_converges_to_the_source() {
    // One watchdog for all the cases: a loop that spins or hangs fails by
    // name instead of stalling the run.
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let cases = (any::<bool>(), prop::collection::vec(op(), 0..40));
    let result = runner.run(&cases, |(parse_keys, ops)| {
        let mut case = case(parse_keys);
        for op in &ops {
            apply(&mut case, op);
        }
        check(&mut case)?;
        // And once more after a burst with a reconnect in its middle.
        case.source.break_watches_after(1);
        for key in 0..4u8 {
            case.source.put(key, u32::from(key) + 1000);
        }
        case.source.delete(&0);
        check(&mut case)
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// The changes a watch stream already holds are applied as one store
/// write: each handler notified of one of them finds the store at the last
/// one's revision, holding all of them (a put the index function rejects
/// removes its key and is reported).
#[test]
fn a_burst_is_applied_as_one_write_before_its_handlers() {
    let _watchdog = watchdog::arm(watchdog::STRESS_LIMIT);
    let source = MemorySource::with_timer(instant);
    let store = IndexedStore::<u8, Arc<u32>>::builder()
        .try_index("small", |v: &Arc<u32>| {
            if **v < 1000 {
                Ok(["yes"])
            } else {
                Err("too big")
            }
        })
        .build()
        .unwrap();
    type Seen = Vec<(u8, u64, Vec<(u8, u32)>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    // The handler reads the store through the reader, which exists once
    // the reflector is built (before it runs).
    let reader: Arc<OnceLock<StoreReader<u8, u32>>> = Arc::default();
    let log = Arc::clone(&seen);
    let reflector = Reflector::builder(source.clone(), store)
        .on_add({
            let reader = Arc::clone(&reader);
            move |key, _| {
                let (content, revision) = reader
                    .get()
                    .expect("set before the loop runs")
                    .to_vec_with_revision();
                let mut content: Vec<(u8, u32)> =
                    content.into_iter().map(|(k, v)| (k, *v)).collect();
                content.sort_unstable();
                log.lock().unwrap().push((*key, revision, content));
            }
        })
        .backoff(Backoff::none())
        .timer(instant)
        .build()
        .unwrap();
    let store = reflector.reader();
    reader.set(store.clone()).unwrap();
    let handle = reflector.handle();
    let mut run: Loop = Box::pin(reflector.run());
    poll(&mut run);
    assert!(handle.has_synced());
    for key in 0..4u8 {
        source.put(key, u32::from(key));
    }
    source.put(4, 5000);
    let last = source.put(5, 5);
    poll(&mut run);
    let seen = seen.lock().unwrap();
    let whole = vec![(0, 0), (1, 1), (2, 2), (3, 3), (5, 5)];
    let keys: Vec<u8> = seen.iter().map(|(key, ..)| *key).collect();
    assert_eq!(keys, [0, 1, 2, 3, 5], "adds in revision order");
    for (key, revision, content) in seen.iter() {
        assert_eq!((*revision, content), (last, &whole), "the add of {key}");
    }
    let stats = handle.stats();
    assert_eq!((stats.events_applied, stats.rejected_objects), (6, 1));
    assert_eq!(handle.revision(), last);
    store.check_invariants();
}
