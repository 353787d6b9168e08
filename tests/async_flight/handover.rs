//! Hand-overs: a leader aborted, cancelled, failing or panicking, and what
//! its waiters do then.

use std::sync::Arc;
use std::time::Duration;

use larder::{AnyCache, LruCache, TypedCache};
use tokio::sync::{Notify, oneshot};

use super::{LIMIT, settle, watchdog, within};

/// The leader's task is aborted while its init awaits: the flight is
/// abandoned, and the waiter runs its own init and completes.
#[test]
fn leader_aborted_mid_load_hands_over_to_a_waiter() {
    within("leader_aborted_mid_load_hands_over_to_a_waiter", 2, async {
        let cache: Arc<TypedCache<u32, &'static str>> = Arc::new(TypedCache::new());
        let started = Arc::new(Notify::new());
        let leader = {
            let (cache, started) = (Arc::clone(&cache), Arc::clone(&started));
            tokio::spawn(async move {
                cache
                    .get_or_init_async(&1, || async {
                        started.notify_one();
                        std::future::pending::<&'static str>().await
                    })
                    .await
            })
        };
        started.notified().await;
        let waiter = {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move { cache.get_or_init_async(&1, || async { "waiter's" }).await })
        };
        // Give the waiter time to join the flight (either order passes).
        tokio::time::sleep(Duration::from_millis(20)).await;
        leader.abort();
        assert!(leader.await.unwrap_err().is_cancelled());
        assert_eq!(waiter.await.unwrap(), "waiter's");
        let stats = cache.stats();
        assert_eq!(stats.inits, 2);
        assert_eq!(
            stats.init_failures, 1,
            "the abandoned init counts as failed"
        );
        cache.check_invariants();
    });
}

/// The same with a leader cancelled by a timeout (its future dropped), on a
/// current-thread runtime, for the LRU form.
#[test]
fn lru_leader_cancelled_by_timeout_hands_over() {
    within("lru_leader_cancelled_by_timeout_hands_over", 0, async {
        let cache: Arc<LruCache<String, u32>> = Arc::new(LruCache::new(8));
        let waiter = {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move {
                // Runs after the leader registered (current-thread, FIFO).
                cache.get_or_init_async("k", || async { 2 }).await
            })
        };
        let leader = tokio::time::timeout(
            Duration::from_millis(10),
            cache.get_or_init_async("k", std::future::pending),
        )
        .await;
        assert!(leader.is_err(), "the pending load cannot finish");
        assert_eq!(waiter.await.unwrap(), 2);
        assert_eq!(cache.get("k"), Some(2));
        let stats = cache.stats();
        assert_eq!((stats.inits, stats.init_failures), (2, 1));
    });
}

/// An error is shared (the same `Arc`) with the waiters already joined and
/// is not cached.
#[test]
fn error_is_shared_with_joined_waiters_and_not_cached() {
    within(
        "error_is_shared_with_joined_waiters_and_not_cached",
        0,
        async {
            let cache: Arc<TypedCache<u32, u32>> = Arc::new(TypedCache::new());
            let (release, released) = oneshot::channel::<()>();
            let leader = {
                let cache = Arc::clone(&cache);
                tokio::spawn(async move {
                    cache
                        .get_or_try_init_async(&1, || async {
                            released.await.unwrap();
                            Err::<u32, String>("backend down".into())
                        })
                        .await
                })
            };
            settle(2).await; // the leader registers and awaits `released`
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let cache = Arc::clone(&cache);
                    tokio::spawn(async move {
                        cache
                            .get_or_try_init_async(&1, || async {
                                unreachable!("a joined waiter never runs its init")
                            })
                            .await
                    })
                })
                .collect();
            settle(2).await; // the waiters join
            release.send(()).unwrap();
            let error = leader.await.unwrap().unwrap_err();
            assert_eq!(*error, "backend down");
            for waiter in waiters {
                let theirs: Arc<String> = waiter.await.unwrap().unwrap_err();
                assert!(Arc::ptr_eq(&theirs, &error), "a waiter got another error");
            }
            assert!(!cache.contains_key(&1), "the error was cached");
            let ok = cache
                .get_or_try_init_async(&1, || async { Ok::<_, String>(5) })
                .await;
            assert_eq!(ok.unwrap(), 5);
            let stats = cache.stats();
            assert_eq!((stats.inits, stats.init_failures, stats.waits), (2, 1, 3));
        },
    );
}

/// A panic inside the leader's init future reaches the leader's task only;
/// a joined waiter takes over and nothing is poisoned.
#[test]
fn panicking_init_future_hands_over() {
    within("panicking_init_future_hands_over", 2, async {
        let cache: Arc<AnyCache<u32>> = Arc::new(AnyCache::new());
        let started = Arc::new(Notify::new());
        let (release, released) = oneshot::channel::<()>();
        let leader = {
            let (cache, started) = (Arc::clone(&cache), Arc::clone(&started));
            tokio::spawn(async move {
                cache
                    .get_or_init_async(&1, || async {
                        started.notify_one();
                        released.await.unwrap();
                        panic!("init panicked on purpose");
                        #[allow(unreachable_code)]
                        0_u64
                    })
                    .await
            })
        };
        started.notified().await;
        let waiter = {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move { cache.get_or_init_async(&1, || async { 7_u64 }).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        release.send(()).unwrap();
        assert!(leader.await.unwrap_err().is_panic());
        assert_eq!(*waiter.await.unwrap(), 7);
        assert_eq!(cache.get::<u64, _>(&1).as_deref(), Some(&7));
        cache.check_invariants();
    });
}

/// A panic inside the leader's init abandons the flight while it unwinds,
/// not only when the leader's future is later dropped: here the caller
/// catches the panic around `poll` and keeps the future, and a joined
/// waiter still takes over at once.
#[test]
fn panicking_init_hands_over_while_the_panicked_future_is_kept() {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    let _watchdog = watchdog::arm(LIMIT);
    let cache: TypedCache<u32, u32> = TypedCache::new();
    let mut cx = Context::from_waker(Waker::noop());
    // The leader's init: pending on its first poll, panics on its second.
    let mut polls = 0;
    let init = std::future::poll_fn(|_| {
        polls += 1;
        if polls == 1 {
            Poll::Pending
        } else {
            panic!("init panicked on purpose")
        }
    });
    let mut leader = pin!(cache.get_or_init_async(&1, || init));
    assert!(
        leader.as_mut().poll(&mut cx).is_pending(),
        "registers, loads"
    );
    let mut waiter = pin!(cache.get_or_init_async(&1, || async { 7 }));
    assert!(
        waiter.as_mut().poll(&mut cx).is_pending(),
        "joins the flight"
    );
    let panicked = catch_unwind(AssertUnwindSafe(|| leader.as_mut().poll(&mut cx)));
    assert!(
        panicked.is_err(),
        "the init's panic reaches the leader's poll"
    );
    // `leader` is still alive (pinned above, not dropped): the flight must
    // already be abandoned.
    match waiter.as_mut().poll(&mut cx) {
        Poll::Ready(value) => assert_eq!(value, 7),
        Poll::Pending => panic!("the waiter still waits for a leader that panicked"),
    }
    let stats = cache.stats();
    assert_eq!((stats.inits, stats.init_failures), (2, 1), "{stats:?}");
    assert_eq!(cache.get(&1), Some(7));
    cache.check_invariants();
}
