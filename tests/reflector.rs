//! Public-API tests of `Reflector` on a tokio runtime (any executor would
//! do): convergence after faults, the relist's exact difference, no
//! half-applied relist, handler panics and slow handlers, undecodable
//! objects, resync, readiness, stopping. Every wait is bounded: a hang
//! fails with the test's name.

#![cfg(feature = "reflector")]

#[path = "common/recorder.rs"]
mod recorder;
#[path = "common/reflecting.rs"]
mod reflecting;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use larder::IndexedStore;
use larder::reflector::{
    Backoff, MemorySource, Reflector, ReflectorBuildError, ReflectorError, Resync, WaitError,
};
use recorder::{Call, Recorder, Shared};
use reflecting::{
    LIMIT, bounded, caught_up, churn, fast, key, relist_over, small_values_store, sorted, start,
    store,
};

#[test]
fn converges_after_dropped_streams_compactions_and_mid_burst_reconnects() {
    bounded("converges_after_faults", async {
        let source = MemorySource::new();
        for i in 0..50 {
            source.put(key(i), i);
        }
        let store = store();
        let recorder = Recorder::new();
        let reflector = Reflector::builder(source.clone(), store)
            .handler(Shared(Arc::clone(&recorder)))
            .backoff(fast())
            .build()
            .unwrap();
        let store = reflector.reader();
        let handle = reflector.handle();
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();

        for round in 0..20u32 {
            churn(&source, round, 80, 30, || {});
            tokio::task::yield_now().await;
        }
        caught_up(&handle, &source).await;
        assert_eq!(sorted(&store), source.to_vec_sorted());
        assert_eq!(recorder.model(), source.to_vec_sorted());
        assert_eq!(recorder.violations(), Vec::<String>::new());
        let stats = handle.stats();
        assert!(stats.relists >= 1, "{stats:?}");
        assert!(stats.watch_restarts >= 1, "{stats:?}");
        assert_eq!(stats.last_revision, source.revision());
        assert!(stats.since_last_event.is_some());
        store.check_invariants();
        handle.stop();
        task.await.unwrap();
    });
}

#[test]
fn a_relist_delivers_the_exact_difference() {
    bounded("a_relist_delivers_the_exact_difference", async {
        let source = MemorySource::new();
        source.put("a".to_string(), 1);
        source.put("b".to_string(), 2);
        source.put("c".to_string(), 3);
        let store = store();
        let recorder = Recorder::new();
        let reflector = Reflector::builder(source.clone(), store)
            .handler(Shared(Arc::clone(&recorder)))
            .backoff(fast())
            .build()
            .unwrap();
        let store = reflector.reader();
        let handle = reflector.handle();
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        let mut initial = recorder.take_calls();
        initial.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
        assert_eq!(
            initial,
            [
                Call::Add("a".into(), 1),
                Call::Add("b".into(), 2),
                Call::Add("c".into(), 3)
            ]
        );

        relist_over(&source, &handle, || {
            source.put("b".to_string(), 20);
            source.delete(&"c".to_string());
            source.put("d".to_string(), 4);
        })
        .await;
        let mut calls = recorder.take_calls();
        calls.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
        // An update for the changed key, an add for the new one, a delete
        // for the vanished one; nothing for the unchanged "a" (a sync, and
        // this handler has no resync). Never a second add.
        assert_eq!(
            calls,
            [
                Call::Add("d".into(), 4),
                Call::Delete("c".into(), 3),
                Call::Update("b".into(), 2, 20),
            ]
        );
        assert_eq!(handle.stats().relists, 1);
        assert_eq!(sorted(&store), source.to_vec_sorted());
        assert_eq!(store.revision(), source.revision());
        handle.stop();
        task.await.unwrap();
    });
}

/// Waits, off the runtime's threads, until the reader thread has checked
/// more than `n` snapshots (on a busy machine it may not have run at all).
async fn reader_past(snapshots: &Arc<AtomicUsize>, n: usize) {
    let snapshots = Arc::clone(snapshots);
    tokio::task::spawn_blocking(move || {
        let start = std::time::Instant::now();
        while snapshots.load(Ordering::Relaxed) <= n {
            assert!(start.elapsed() < LIMIT, "the reader thread never ran");
            std::thread::yield_now();
        }
    })
    .await
    .unwrap();
}

#[test]
fn no_reader_sees_a_half_applied_relist() {
    // Objects carry their generation; a relist moves every object to the
    // next one. The index function of one object blocks the relist while
    // it builds the new content (with no lock held): the store must still
    // show all of the old content and the old revision; afterwards, all of
    // the new. A reader thread checks every snapshot meanwhile.
    let gate_entered = Arc::new(Mutex::new(None::<mpsc::Sender<()>>));
    let (release, released) = mpsc::channel::<()>();
    let released = Arc::new(Mutex::new(released));
    let hook = {
        let gate_entered = Arc::clone(&gate_entered);
        let released = Arc::clone(&released);
        move |v: &Arc<u32>| {
            if **v == 2_000 {
                if let Some(entered) = gate_entered.lock().unwrap().take() {
                    entered.send(()).unwrap();
                    released.lock().unwrap().recv_timeout(LIMIT).unwrap();
                }
            }
            [(**v / 1_000).to_string()]
        }
    };
    let store: IndexedStore<String, Arc<u32>> = IndexedStore::builder()
        .index("generation", hook)
        .build()
        .unwrap();
    bounded("no_reader_sees_a_half_applied_relist", async move {
        let source = MemorySource::new();
        for i in 0..20 {
            source.put(key(i), 1_000 + i);
        }
        let (store, handle, task) = start(source.clone(), store);
        handle.wait_until_synced().await.unwrap();
        let old_revision = store.revision();
        let old = sorted(&store);

        let stop = Arc::new(AtomicBool::new(false));
        let snapshots = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (store, stop, snapshots) =
                (store.clone(), Arc::clone(&stop), Arc::clone(&snapshots));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let values = store.values_to_vec();
                    let generations: std::collections::BTreeSet<u32> =
                        values.iter().map(|v| **v / 1_000).collect();
                    assert_eq!(generations.len(), 1, "a torn relist: {generations:?}");
                    assert_eq!(values.len(), 20);
                    let (object, revision) = store.get_with_revision("k000");
                    let generation = *object.unwrap() / 1_000;
                    assert_eq!(
                        generation == 1,
                        revision == old_revision,
                        "object and revision disagree"
                    );
                    snapshots.fetch_add(1, Ordering::Relaxed);
                }
            })
        };

        reader_past(&snapshots, 0).await;
        let (entered, entered_rx) = mpsc::channel();
        *gate_entered.lock().unwrap() = Some(entered);
        source.fail_watches(usize::MAX);
        source.drop_watches();
        for i in 0..20 {
            source.put(key(i), 2_000 + i);
        }
        source.compact(source.revision());
        source.fail_watches(0);
        // The relist is building the new content now, blocked in the gate.
        tokio::task::spawn_blocking(move || entered_rx.recv_timeout(LIMIT).unwrap())
            .await
            .unwrap();
        assert_eq!(
            sorted(&store),
            old,
            "the store changed before the relist's swap"
        );
        assert_eq!(store.revision(), old_revision);
        // The reader checks the store while the relist is held mid-way.
        let checked = snapshots.load(Ordering::Relaxed);
        reader_past(&snapshots, checked).await;
        release.send(()).unwrap();
        caught_up(&handle, &source).await;
        assert_eq!(sorted(&store), source.to_vec_sorted());
        stop.store(true, Ordering::Relaxed);
        reader.join().expect("the reader saw a torn state");
        assert!(snapshots.load(Ordering::Relaxed) > 0);
        handle.stop();
        task.await.unwrap();
    });
}

#[test]
fn a_panicking_handler_is_reported_and_skips_nothing() {
    bounded("a_panicking_handler_is_reported_and_skips_nothing", async {
        let source = MemorySource::new();
        let store = store();
        let recorder = Recorder::new();
        let errors = Arc::new(Mutex::new(Vec::new()));
        let reflector = Reflector::builder(source.clone(), store)
            .on_add(|key, _| {
                if key == "boom" {
                    panic!("handler failure on {key}");
                }
            })
            .handler(Shared(Arc::clone(&recorder)))
            .on_error({
                let errors = Arc::clone(&errors);
                move |error| errors.lock().unwrap().push(error.to_string())
            })
            .backoff(fast())
            .build()
            .unwrap();
        let store = reflector.reader();
        let handle = reflector.handle();
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        source.put("a".to_string(), 1);
        source.put("boom".to_string(), 2);
        source.put("c".to_string(), 3);
        caught_up(&handle, &source).await;
        // The second handler got every event, the panicking one included.
        assert_eq!(
            recorder.take_calls(),
            [
                Call::Add("a".into(), 1),
                Call::Add("boom".into(), 2),
                Call::Add("c".into(), 3)
            ]
        );
        assert_eq!(handle.stats().handler_panics, 1);
        let errors = errors.lock().unwrap().clone();
        assert_eq!(errors, ["handler on_add panicked: handler failure on boom"]);
        assert_eq!(sorted(&store), source.to_vec_sorted());
        handle.stop();
        task.await.unwrap();
    });
}

#[test]
fn a_slow_handler_delays_later_changes_but_not_readers() {
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let (entered, entered_rx) = mpsc::channel::<()>();
    let entered = Mutex::new(entered);
    bounded(
        "a_slow_handler_delays_later_changes_but_not_readers",
        async move {
            let source = MemorySource::new();
            let store = store();
            let reflector = Reflector::builder(source.clone(), store)
                .on_add(move |key, _| {
                    if key == "slow" {
                        entered.lock().unwrap().send(()).unwrap();
                        released.lock().unwrap().recv_timeout(LIMIT).unwrap();
                    }
                })
                .backoff(fast())
                .build()
                .unwrap();
            let store = reflector.reader();
            let handle = reflector.handle();
            let task = tokio::spawn(reflector.run());
            handle.wait_until_synced().await.unwrap();
            let slow = source.put("slow".to_string(), 1);
            tokio::task::spawn_blocking(move || entered_rx.recv_timeout(LIMIT).unwrap())
                .await
                .unwrap();
            // Written while the handler runs: not part of the burst that
            // held "slow" (a change the stream already held would have been
            // applied with it, before the handlers: `reflector_model.rs`).
            let after = source.put("after".to_string(), 2);
            // The handler runs after the store holds the change: readers see it.
            assert_eq!(store.get("slow").as_deref(), Some(&1));
            assert_eq!(store.revision(), slow);
            // The handle moves on once the handlers have seen the change.
            assert!(handle.revision() < slow);
            // Later changes wait for the handler (one notification at a time).
            let waited = handle
                .wait_for_revision_timeout(after, Duration::from_millis(50))
                .await;
            assert_eq!(waited, Err(WaitError::TimedOut));
            assert!(store.get("after").is_none());
            release.send(()).unwrap();
            handle
                .wait_for_revision_timeout(after, LIMIT)
                .await
                .unwrap();
            assert_eq!(store.get("after").as_deref(), Some(&2));
            handle.stop();
            task.await.unwrap();
        },
    );
}

#[test]
fn an_undecodable_object_drops_the_old_one() {
    for parse in [true, false] {
        bounded("an_undecodable_object_drops_the_old_one", async move {
            let source = MemorySource::new();
            source.put("a".to_string(), 1);
            source.put("b".to_string(), 2);
            let store = store();
            let recorder = Recorder::new();
            let mut builder = Reflector::builder(source.clone(), store)
                .handler(Shared(Arc::clone(&recorder)))
                .backoff(fast());
            if parse {
                builder = builder.parse_invalid_key(|key| Some(key.to_owned()));
            }
            let reflector = builder.build().unwrap();
            let store = reflector.reader();
            let handle = reflector.handle();
            let task = tokio::spawn(reflector.run());
            handle.wait_until_synced().await.unwrap();
            source.put_invalid("a".to_string(), "bad bytes");
            caught_up(&handle, &source).await;
            assert_eq!(sorted(&store), [("b".to_string(), 2)]);
            assert_eq!(recorder.model(), source.to_vec_sorted());
            let stats = handle.stats();
            assert_eq!(
                stats.invalid_objects,
                if parse { 1 } else { 2 },
                "{stats:?}"
            );
            assert_eq!(stats.relists, if parse { 0 } else { 1 }, "{stats:?}");
            handle.stop();
            task.await.unwrap();
        });
    }
}

#[test]
fn an_object_the_store_rejects_is_reported_and_its_old_object_dropped() {
    bounded("rejected_objects", async {
        let source = MemorySource::new();
        source.put("a".to_string(), 1);
        source.put("b".to_string(), 2);
        let store = small_values_store();
        let (store, handle, task) = start(source.clone(), store);
        handle.wait_until_synced().await.unwrap();
        source.put("a".to_string(), 500);
        caught_up(&handle, &source).await;
        assert_eq!(sorted(&store), [("b".to_string(), 2)]);
        assert_eq!(handle.stats().rejected_objects, 1);
        handle.stop();
        task.await.unwrap();
    });
}

#[test]
fn resync_redelivers_every_object_as_an_update() {
    bounded("resync_redelivers_every_object_as_an_update", async {
        let source = MemorySource::new();
        source.put("a".to_string(), 1);
        let resyncs = Arc::new(AtomicUsize::new(0));
        let reflector = Reflector::builder(source.clone(), store())
            .on_update({
                let resyncs = Arc::clone(&resyncs);
                move |_, old, new| {
                    assert!(Arc::ptr_eq(old, new));
                    resyncs.fetch_add(1, Ordering::Relaxed);
                }
            })
            .resync(Resync::Every(Duration::from_millis(10)))
            .build()
            .unwrap();
        let handle = reflector.handle();
        let task = tokio::spawn(reflector.run());
        while resyncs.load(Ordering::Relaxed) < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(handle.stats().resyncs >= 2);
        assert_eq!(handle.stats().handler_panics, 0);
        handle.stop();
        task.await.unwrap();
    });
}

#[test]
fn failed_lists_are_retried_and_readiness_waits_for_the_first_list() {
    bounded("failed_lists_are_retried", async {
        let source = MemorySource::new();
        source.put("a".to_string(), 1);
        source.fail_lists(3);
        let reflector = Reflector::builder(source.clone(), store())
            .backoff(fast())
            .build()
            .unwrap();
        let handle = reflector.handle();
        assert!(!handle.has_synced());
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        assert!(handle.has_synced());
        let stats = handle.stats();
        assert_eq!((stats.lists, stats.list_failures, stats.relists), (1, 3, 0));
        handle.stop();
        task.await.unwrap();
        assert!(handle.is_finished());
        assert!(handle.has_synced());
    });
}

#[test]
fn stopping_releases_waiters_and_a_dropped_loop_counts_as_stopped() {
    bounded("stopping_releases_waiters", async {
        let source = MemorySource::<String, u32>::new();
        source.fail_lists(usize::MAX); // never syncs
        let reflector = Reflector::builder(source.clone(), store())
            .backoff(fast())
            .build()
            .unwrap();
        let handle = reflector.handle();
        let task = tokio::spawn(reflector.run());
        let waiter = tokio::spawn({
            let handle = handle.clone();
            async move { handle.wait_until_synced().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        handle.stop();
        task.await.unwrap();
        assert_eq!(waiter.await.unwrap(), Err(WaitError::Stopped));
        assert_eq!(handle.wait_for_revision(1).await, Err(WaitError::Stopped));

        // Dropping the future mid-run (an aborted task) releases them too.
        let source = MemorySource::<String, u32>::new();
        let reflector = Reflector::builder(source.clone(), store()).build().unwrap();
        let handle = reflector.handle();
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        task.abort();
        assert_eq!(handle.wait_for_revision(99).await, Err(WaitError::Stopped));
    });
}

#[test]
fn a_slow_source_delays_but_converges() {
    bounded("a_slow_source_delays_but_converges", async {
        let source = MemorySource::new();
        source.set_delay(Duration::from_millis(5));
        source.put("a".to_string(), 1);
        let store = store();
        let (store, handle, task) = start(source.clone(), store);
        handle.wait_until_synced().await.unwrap();
        source.drop_watches();
        source.put("b".to_string(), 2);
        caught_up(&handle, &source).await;
        assert_eq!(sorted(&store), source.to_vec_sorted());
        handle.stop();
        task.await.unwrap();
    });
}

#[test]
fn the_builder_refuses_inconsistent_settings() {
    let build = |backoff: Backoff, resync: Resync| {
        Reflector::builder(MemorySource::<String, u32>::new(), store())
            .backoff(backoff)
            .resync(resync)
            .build()
            .map(drop)
    };
    let ms = Duration::from_millis;
    assert!(matches!(
        build(Backoff::new(ms(10), ms(1)), Resync::Never),
        Err(ReflectorBuildError::Backoff(_))
    ));
    assert!(matches!(
        build(Backoff::new(ms(1), ms(10)).jitter(1.5), Resync::Never),
        Err(ReflectorBuildError::Backoff(_))
    ));
    assert_eq!(
        build(Backoff::default(), Resync::Every(Duration::ZERO)),
        Err(ReflectorBuildError::ZeroResyncPeriod)
    );
    assert_eq!(build(Backoff::none(), Resync::Every(ms(1))), Ok(()));
}

#[test]
fn every_type_prints() {
    let source = MemorySource::<String, u32>::new();
    let builder = Reflector::builder(source.clone(), store());
    assert!(format!("{builder:?}").contains("ReflectorBuilder"));
    let reflector = builder.build().unwrap();
    assert!(format!("{reflector:?}").contains("Reflector"));
    assert!(format!("{:?}", reflector.handle()).contains("ReflectorHandle"));
    assert!(format!("{source:?}").contains("MemorySource"));
    assert!(format!("{:?}", reflector.handle().stats()).contains("lists"));
    let error = ReflectorError::HandlerPanicked {
        callback: "on_add",
        message: "x".into(),
    };
    assert!(format!("{error:?}").contains("HandlerPanicked"));
}

/// A source that, like some real ones after a reconnect, repeats the last
/// few changes before the requested revision.
struct Repeating(MemorySource<String, u32>);

impl larder::reflector::Source for Repeating {
    type Key = String;
    type Object = u32;
    type Watch = larder::reflector::MemoryWatch<String, u32>;

    fn list(
        &self,
    ) -> impl Future<
        Output = Result<larder::reflector::Listed<String, u32>, larder::reflector::SourceError>,
    > + Send {
        self.0.list()
    }

    fn watch(
        &self,
        from: larder::reflector::Revision,
    ) -> impl Future<Output = Result<Self::Watch, larder::reflector::SourceError>> + Send {
        self.0.watch(from.saturating_sub(3).max(self.0.compacted()))
    }
}

#[test]
fn changes_a_source_repeats_after_a_reconnect_are_applied_once() {
    bounded("repeated_changes_are_applied_once", async {
        let source = MemorySource::new();
        let store = store();
        let recorder = Recorder::new();
        let reflector = Reflector::builder(Repeating(source.clone()), store)
            .handler(Shared(Arc::clone(&recorder)))
            .backoff(fast())
            .build()
            .unwrap();
        let store = reflector.reader();
        let handle = reflector.handle();
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        source.put("a".to_string(), 1);
        source.put("a".to_string(), 2);
        source.put("b".to_string(), 1);
        caught_up(&handle, &source).await;
        recorder.take_calls();
        source.drop_watches();
        source.put("c".to_string(), 3);
        caught_up(&handle, &source).await;
        assert_eq!(recorder.take_calls(), [Call::Add("c".into(), 3)]);
        assert_eq!(handle.stats().events_applied, 4);
        assert_eq!(store.revision(), source.revision());
        handle.stop();
        task.await.unwrap();
    });
}
