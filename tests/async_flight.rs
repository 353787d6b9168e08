//! The async single-flight forms through the public API:
//! `TypedCache::get_or_init_async`, `AnyCache::get_or_init_async`,
//! `LruCache::get_or_init_async` and their `try` twins (hand-overs from a
//! leader that is aborted, fails or panics: `async_flight/handover.rs`).
//!
//! Every test runs under `tokio::time::timeout` and a thread watchdog
//! (through [`within`]), so a hang fails with the test's name instead of
//! wedging the suite.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use larder::{AnyCache, LruCache, TypedCache};

#[path = "async_flight/handover.rs"]
mod handover;
#[path = "common/watchdog.rs"]
mod watchdog;
use tokio::sync::{Notify, oneshot};

const LIMIT: Duration = Duration::from_secs(20);

/// Runs `body` on a fresh runtime (`workers == 0`: current-thread) and
/// fails with `name` if it does not finish within [`LIMIT`]. A future that
/// spins inside one `poll` never lets the runtime's timer fire: the thread
/// watchdog, armed a little later, aborts naming the test then.
fn within<F: Future>(name: &str, workers: usize, body: F) -> F::Output {
    let _watchdog = watchdog::arm(LIMIT + Duration::from_secs(10));
    let runtime = if workers == 0 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    }
    .expect("runtime");
    runtime.block_on(async {
        match tokio::time::timeout(LIMIT, body).await {
            Ok(out) => out,
            Err(_) => panic!("{name}: hung for {LIMIT:?}"),
        }
    })
}

fn assert_send<T: Send>(_: &T) {}

/// Yields to the runtime `n` times (on a current-thread runtime, lets every
/// spawned task run up to its next await).
async fn settle(n: usize) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

/// The first hang of the blocking form: three tasks on one key, the init
/// doing a real async fetch. Async form, both runtime flavours.
#[test]
fn three_tasks_one_key_async_fetch_load_once() {
    for workers in [0, 2] {
        within(
            "three_tasks_one_key_async_fetch_load_once",
            workers,
            async {
                // `Arc` values: every caller gets the one instance.
                let cache: Arc<TypedCache<String, Arc<String>>> = Arc::new(TypedCache::new());
                let inits = Arc::new(AtomicUsize::new(0));
                let tasks: Vec<_> = (0..3)
                    .map(|_| {
                        let (cache, inits) = (Arc::clone(&cache), Arc::clone(&inits));
                        tokio::spawn(async move {
                            cache
                                .get_or_init_async("users", || async {
                                    inits.fetch_add(1, Ordering::SeqCst);
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    Arc::new("id,name".to_string())
                                })
                                .await
                        })
                    })
                    .collect();
                let mut values = Vec::new();
                for task in tasks {
                    values.push(task.await.unwrap());
                }
                assert_eq!(inits.load(Ordering::SeqCst), 1, "workers {workers}");
                assert!(values.iter().all(|v| Arc::ptr_eq(v, &values[0])));
                let stats = cache.stats();
                assert_eq!((stats.inits, stats.misses), (1, 3));
                assert_eq!(stats.waits, 2);
                cache.check_invariants();
            },
        );
    }
}

/// 64 tasks each ask for the same 1,000 keys on a 2-worker runtime: every
/// key is loaded exactly once (typed and LRU forms).
#[test]
fn sixty_four_tasks_thousand_keys_each_loaded_once() {
    within(
        "sixty_four_tasks_thousand_keys_each_loaded_once",
        2,
        async {
            const KEYS: usize = 1_000;
            let typed: Arc<TypedCache<u64, u64>> = Arc::new(TypedCache::new());
            let lru: Arc<LruCache<u64, u64>> = Arc::new(LruCache::new(2 * KEYS));
            let typed_loads: Arc<Vec<AtomicUsize>> =
                Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
            let lru_loads: Arc<Vec<AtomicUsize>> =
                Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
            let tasks: Vec<_> = (0..64u64)
                .map(|task| {
                    let (typed, lru) = (Arc::clone(&typed), Arc::clone(&lru));
                    let (typed_loads, lru_loads) =
                        (Arc::clone(&typed_loads), Arc::clone(&lru_loads));
                    tokio::spawn(async move {
                        for i in 0..KEYS as u64 {
                            // Each task walks the keys from its own offset.
                            let key = (i + task * 15) % KEYS as u64;
                            let v = typed
                                .get_or_init_async(&key, || async {
                                    typed_loads[key as usize].fetch_add(1, Ordering::SeqCst);
                                    tokio::task::yield_now().await;
                                    key * 2
                                })
                                .await;
                            assert_eq!(v, key * 2);
                            let v = lru
                                .get_or_init_async(&key, || async {
                                    lru_loads[key as usize].fetch_add(1, Ordering::SeqCst);
                                    tokio::task::yield_now().await;
                                    key * 3
                                })
                                .await;
                            assert_eq!(v, key * 3);
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
            for (key, loads) in typed_loads.iter().enumerate() {
                assert_eq!(loads.load(Ordering::SeqCst), 1, "typed key {key}");
            }
            for (key, loads) in lru_loads.iter().enumerate() {
                assert_eq!(loads.load(Ordering::SeqCst), 1, "lru key {key}");
            }
            assert_eq!(typed.stats().inits, KEYS as u64);
            assert_eq!(lru.stats().inits, KEYS as u64);
            typed.check_invariants();
        },
    );
}

/// A sync leader (blocking thread) and async waiters share one flight, and
/// so do an async leader and a sync waiter (blocking on its condvar).
#[test]
fn sync_and_async_callers_share_one_flight() {
    within("sync_and_async_callers_share_one_flight", 2, async {
        // `Arc` values, so sharing one value is visible (`Arc::ptr_eq`).
        let cache: Arc<TypedCache<u32, Arc<u32>>> = Arc::new(TypedCache::new());
        let inits = Arc::new(AtomicUsize::new(0));
        // Sync leader, async waiters.
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let sync_leader = {
            let (cache, inits) = (Arc::clone(&cache), Arc::clone(&inits));
            std::thread::spawn(move || {
                cache.get_or_init(&1, || {
                    inits.fetch_add(1, Ordering::SeqCst);
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    Arc::new(10)
                })
            })
        };
        tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
            .await
            .unwrap();
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let (cache, inits) = (Arc::clone(&cache), Arc::clone(&inits));
                tokio::spawn(async move {
                    cache
                        .get_or_init_async(&1, || async move {
                            inits.fetch_add(1, Ordering::SeqCst);
                            Arc::new(11)
                        })
                        .await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        release_tx.send(()).unwrap();
        let leader_value = tokio::task::spawn_blocking(move || sync_leader.join().unwrap())
            .await
            .unwrap();
        for waiter in waiters {
            assert!(Arc::ptr_eq(&waiter.await.unwrap(), &leader_value));
        }
        assert_eq!(inits.load(Ordering::SeqCst), 1);

        // Async leader, sync waiter.
        let started = Arc::new(Notify::new());
        let (release, released) = oneshot::channel::<()>();
        let async_leader = {
            let (cache, started) = (Arc::clone(&cache), Arc::clone(&started));
            tokio::spawn(async move {
                cache
                    .get_or_init_async(&2, || async {
                        started.notify_one();
                        released.await.unwrap();
                        Arc::new(20)
                    })
                    .await
            })
        };
        started.notified().await;
        let sync_waiter = {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || cache.get_or_init(&2, || unreachable!("joined")))
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        release.send(()).unwrap();
        let value = async_leader.await.unwrap();
        let theirs = tokio::task::spawn_blocking(move || sync_waiter.join().unwrap())
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&value, &theirs));
        assert_eq!(cache.stats().inits, 2);
    });
}

/// A waiter whose future is dropped while it waits stops waiting; the load
/// and the other waiters are unaffected.
#[test]
fn dropped_waiter_leaves_the_flight_intact() {
    within("dropped_waiter_leaves_the_flight_intact", 0, async {
        let cache: Arc<TypedCache<u32, u32>> = Arc::new(TypedCache::new());
        let (release, released) = oneshot::channel::<()>();
        let leader = {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move {
                cache
                    .get_or_init_async(&1, || async {
                        released.await.unwrap();
                        1
                    })
                    .await
            })
        };
        settle(2).await;
        // A waiter that gives up after 5 ms: its future is dropped.
        let gave_up = tokio::time::timeout(
            Duration::from_millis(5),
            cache.get_or_init_async(&1, || async { unreachable!("joined") }),
        )
        .await;
        assert!(gave_up.is_err());
        let patient = {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move { cache.get_or_init_async(&1, || async { 2 }).await })
        };
        settle(2).await;
        release.send(()).unwrap();
        assert_eq!(leader.await.unwrap(), 1);
        assert_eq!(patient.await.unwrap(), 1);
        assert_eq!(cache.stats().inits, 1);
        cache.check_invariants();
    });
}

/// An init that awaits its own key while being polled is detected: the
/// inner call panics instead of waiting for itself.
#[test]
fn reentrant_init_in_the_same_poll_panics() {
    within("reentrant_init_in_the_same_poll_panics", 0, async {
        let cache: Arc<TypedCache<u32, u32>> = Arc::new(TypedCache::new());
        let task = {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move {
                let inner = Arc::clone(&cache);
                cache
                    .get_or_init_async(&1, || async move {
                        inner.get_or_init_async(&1, || async { 1 }).await + 1
                    })
                    .await
            })
        };
        let panic = task.await.unwrap_err().into_panic();
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(text.contains("re-entrant load"), "got {text:?}");
        // Nothing stuck: the key loads normally afterwards.
        assert_eq!(cache.get_or_init_async(&1, || async { 3 }).await, 3);
    });
}

/// The failure mode that cannot be detected without a runtime: an init that
/// hands its own key to another task and awaits that task waits forever.
/// Shown bounded by a timeout: the hang is the expected outcome.
#[test]
fn reentrant_init_through_another_task_hangs_until_timeout() {
    within(
        "reentrant_init_through_another_task_hangs_until_timeout",
        2,
        async {
            let cache: Arc<TypedCache<u32, u32>> = Arc::new(TypedCache::new());
            let inner = Arc::clone(&cache);
            let outcome = tokio::time::timeout(
                Duration::from_millis(100),
                cache.get_or_init_async(&1, || async move {
                    let helper =
                        tokio::spawn(
                            async move { inner.get_or_init_async(&1, || async { 1 }).await },
                        );
                    helper.await.unwrap() + 1
                }),
            )
            .await;
            assert!(outcome.is_err(), "expected the documented hang");
            // The timeout dropped the leader: the helper task took over the key
            // and loaded it, so nothing is left stuck.
            let value = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    if let Some(v) = cache.get(&1) {
                        return v;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
            .await
            .expect("the helper task loaded the key after the leader was dropped");
            assert_eq!(value, 1);
        },
    );
}

/// The returned futures are `Send` (they can be spawned on a multi-thread
/// runtime) when the key, value and init are.
#[test]
fn futures_are_send() {
    within("futures_are_send", 2, async {
        let typed: Arc<TypedCache<String, Vec<u8>>> = Arc::new(TypedCache::new());
        let any: Arc<AnyCache<String>> = Arc::new(AnyCache::new());
        let lru: Arc<LruCache<String, Vec<u8>>> = Arc::new(LruCache::new(4));
        let f1 = typed.get_or_init_async("a", || async { vec![1] });
        let f2 = typed.get_or_try_init_async("b", || async { Ok::<_, String>(vec![2]) });
        let f3 = any.get_or_init_async("c", || async { 3_u32 });
        let f4 = any.get_or_try_init_async("d", || async { Ok::<_, String>(4_u32) });
        let f5 = lru.get_or_init_async("e", || async { vec![5] });
        let f6 = lru.get_or_try_init_async("f", || async { Ok::<_, String>(vec![6]) });
        assert_send(&f1);
        assert_send(&f2);
        assert_send(&f3);
        assert_send(&f4);
        assert_send(&f5);
        assert_send(&f6);
        drop((f1, f2, f3, f4, f5, f6));
        let task = {
            let (typed, any, lru) = (Arc::clone(&typed), Arc::clone(&any), Arc::clone(&lru));
            tokio::spawn(async move {
                let a = typed
                    .get_or_init_async("a", || async {
                        tokio::task::yield_now().await;
                        vec![1]
                    })
                    .await;
                let c = any.get_or_init_async("c", || async { 3_u32 }).await;
                let e = lru.get_or_init_async("e", || async { vec![5] }).await;
                (a, c, e)
            })
        };
        let (a, c, e) = task.await.unwrap();
        assert_eq!((a.as_slice(), *c, e.as_slice()), (&[1][..], 3, &[5][..]));
    });
}

/// A hit borrows the key: the owned key is built only on a miss.
#[test]
fn hit_builds_no_owned_key() {
    static CLONES: AtomicUsize = AtomicUsize::new(0);
    #[derive(PartialEq, Eq, Hash, Debug)]
    struct Key(u32);
    impl Clone for Key {
        fn clone(&self) -> Self {
            CLONES.fetch_add(1, Ordering::SeqCst);
            Key(self.0)
        }
    }
    within("hit_builds_no_owned_key", 0, async {
        let typed: TypedCache<Key, u32> = TypedCache::new();
        let lru: LruCache<Key, u32> = LruCache::new(4);
        typed.get_or_init_async(&Key(1), || async { 1 }).await;
        lru.get_or_init_async(&Key(1), || async { 1 }).await;
        let before = CLONES.load(Ordering::SeqCst);
        assert!(before > 0, "a miss builds the owned key");
        for _ in 0..10 {
            assert_eq!(typed.get_or_init_async(&Key(1), || async { 2 }).await, 1);
            assert_eq!(lru.get_or_init_async(&Key(1), || async { 2 }).await, 1);
        }
        assert_eq!(
            CLONES.load(Ordering::SeqCst),
            before,
            "a hit cloned the key"
        );
    });
}

/// An expired entry is a miss for the async forms as for the sync ones: the
/// init runs and its value replaces the expired one (the leader's re-check
/// must not hand the expired value back as found).
#[test]
fn an_expired_entry_is_initialized_again() {
    within("an_expired_entry_is_initialized_again", 0, async {
        let clock = larder::ManualClock::new();
        let cache = TypedCache::<u32, u32>::builder()
            .time_to_live(Duration::from_secs(10))
            .clock(clock.clone())
            .build()
            .unwrap();
        cache.insert(1, 10);
        cache.insert(2, 20);
        clock.advance(Duration::from_secs(11));
        assert_eq!(cache.get_or_init_async(&1, || async { 11 }).await, 11);
        let tried = cache
            .get_or_try_init_async(&2, || async { Ok::<_, ()>(21) })
            .await;
        assert_eq!(tried, Ok(21));
        assert_eq!(cache.get(&1), Some(11));
        assert_eq!(cache.get(&2), Some(21));
        let stats = cache.stats();
        assert_eq!((stats.inits, stats.waits), (2, 0));
        cache.check_invariants();
    });
}

/// The lookup runs when the method is called: a hit is counted, and its
/// init closure dropped uncalled, before the returned future is polled,
/// and that future is then ready without touching the cache again (an
/// invalidation in between does not change what it returns). A miss is counted at the
/// call too, and registers nothing until polled.
#[test]
fn the_lookup_runs_when_the_method_is_called() {
    within("the_lookup_runs_when_the_method_is_called", 0, async {
        struct Flag(Arc<AtomicUsize>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));

        let typed: TypedCache<u32, u32> = TypedCache::new();
        typed.insert(1, 10);
        let flag = Flag(Arc::clone(&dropped));
        let hit = typed.get_or_init_async(&1, || async move {
            let _flag = flag;
            unreachable!("a hit never polls its init")
        });
        assert_eq!(typed.stats().hits, 1, "counted at the call");
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the init is dropped at the call"
        );
        typed.remove(&1);
        assert_eq!(hit.await, 10, "the value found at the call");
        let miss = typed.get_or_init_async(&2, || async { 20 });
        assert_eq!(typed.stats().misses, 1);
        assert_eq!(typed.stats().inits, 0, "nothing runs until polled");
        assert_eq!(miss.await, 20);

        let lru: LruCache<u32, u32> = LruCache::new(8);
        lru.insert(1, 10);
        let flag = Flag(Arc::clone(&dropped));
        let hit = lru.get_or_init_async(&1, || async move {
            let _flag = flag;
            unreachable!("a hit never polls its loader")
        });
        assert_eq!(lru.stats().hits, 1);
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
        lru.remove(&1);
        assert_eq!(hit.await, 10);
    });
}

/// The init is a closure, called only by the caller that runs it: a hit
/// and a waiter never call theirs, and the future a call returns holds the
/// closure, never the init's future, so its size does not grow with that
/// future (here one that holds 16 KiB across an await).
#[test]
fn only_the_leader_calls_its_init_closure() {
    within("only_the_leader_calls_its_init_closure", 0, async {
        let called = Arc::new(AtomicUsize::new(0));
        let counted = |value: u32| {
            let called = Arc::clone(&called);
            move || {
                called.fetch_add(1, Ordering::SeqCst);
                async move { value }
            }
        };
        // A heavy init: 16 KiB of state held across an await.
        let heavy = || async {
            let buffer = [7u8; 16 * 1024];
            tokio::task::yield_now().await;
            u32::from(buffer[16 * 1024 - 1])
        };
        const SMALL: usize = 512;

        let typed: Arc<TypedCache<u32, u32>> = Arc::new(TypedCache::new());
        let lru: Arc<LruCache<u32, u32>> = Arc::new(LruCache::new(8));
        let any: AnyCache<u32> = AnyCache::new();
        let hit = typed.get_or_init_async(&1, heavy);
        assert!(
            std::mem::size_of_val(&hit) < SMALL,
            "{} bytes",
            std::mem::size_of_val(&hit)
        );
        assert_eq!(hit.await, 7, "the leader's heavy init ran");
        let lru_miss = lru.get_or_init_async(&1, heavy);
        assert!(std::mem::size_of_val(&lru_miss) < SMALL);
        assert_eq!(lru_miss.await, 7);
        let try_miss = typed.get_or_try_init_async(&2, || async { Ok::<_, ()>(heavy().await) });
        assert!(std::mem::size_of_val(&try_miss) < SMALL);
        assert_eq!(try_miss.await, Ok(7));
        let try_lru = lru.get_or_try_init_async(&2, || async { Ok::<_, ()>(heavy().await) });
        assert!(std::mem::size_of_val(&try_lru) < SMALL);
        assert_eq!(try_lru.await, Ok(7));

        // Hits: no closure called.
        assert_eq!(typed.get_or_init_async(&1, counted(0)).await, 7);
        assert_eq!(lru.get_or_init_async(&1, counted(0)).await, 7);
        assert_eq!(any.get_or_init_async(&1, counted(5)).await.as_ref(), &5);
        assert_eq!(any.get_or_init_async(&1, counted(6)).await.as_ref(), &5);
        assert_eq!(called.load(Ordering::SeqCst), 1, "only AnyCache's leader");

        // Waiters: a leader pending on a gate, two waiters joined; only the
        // leader's closure runs.
        let gate = Arc::new(Notify::new());
        let leader = tokio::spawn({
            let (typed, gate, called) =
                (Arc::clone(&typed), Arc::clone(&gate), Arc::clone(&called));
            async move {
                typed
                    .get_or_init_async(&3, move || {
                        called.fetch_add(1, Ordering::SeqCst);
                        async move {
                            gate.notified().await;
                            30
                        }
                    })
                    .await
            }
        });
        settle(4).await;
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let typed = Arc::clone(&typed);
                let init = counted(0);
                tokio::spawn(async move { typed.get_or_init_async(&3, init).await })
            })
            .collect();
        settle(4).await;
        assert_eq!(typed.stats().inits, 3, "two earlier inits and the leader's");
        gate.notify_one();
        assert_eq!(leader.await.unwrap(), 30);
        for waiter in waiters {
            assert_eq!(waiter.await.unwrap(), 30);
        }
        assert_eq!(
            called.load(Ordering::SeqCst),
            2,
            "AnyCache's and the leader's"
        );
        assert_eq!(typed.stats().waits, 2);
    });
}

/// An `async` closure is an init too, in a spawned (so `Send`) task as well.
#[test]
fn async_closures_are_inits() {
    within("async_closures_are_inits", 2, async {
        let typed: Arc<TypedCache<String, usize>> = Arc::new(TypedCache::new());
        let name = String::from("four");
        assert_eq!(
            typed.get_or_init_async("k", async move || name.len()).await,
            4
        );
        let lru: Arc<LruCache<u32, u32>> = Arc::new(LruCache::new(4));
        let task = tokio::spawn({
            let lru = Arc::clone(&lru);
            async move { lru.get_or_init_async(&1, async || 10).await }
        });
        assert_eq!(task.await.unwrap(), 10);
        assert_eq!(lru.get(&1), Some(10));
    });
}

/// The LRU's async form counts a joined waiter as a wait (and its miss),
/// the leader as a load, as the sync form does.
#[test]
fn lru_async_waiters_count_as_waits() {
    within("lru_async_waiters_count_as_waits", 0, async {
        let lru: Arc<LruCache<u32, u32>> = Arc::new(LruCache::new(8));
        let gate = Arc::new(Notify::new());
        let leader = tokio::spawn({
            let (lru, gate) = (Arc::clone(&lru), Arc::clone(&gate));
            async move {
                lru.get_or_init_async(&1, || async move {
                    gate.notified().await;
                    10
                })
                .await
            }
        });
        settle(4).await;
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let lru = Arc::clone(&lru);
                tokio::spawn(async move { lru.get_or_init_async(&1, || async { 0 }).await })
            })
            .collect();
        settle(4).await;
        gate.notify_one();
        assert_eq!(leader.await.unwrap(), 10);
        for waiter in waiters {
            assert_eq!(waiter.await.unwrap(), 10);
        }
        let stats = lru.stats();
        assert_eq!(
            (stats.misses, stats.inits, stats.waits, stats.hits),
            (3, 1, 2, 0)
        );
    });
}
