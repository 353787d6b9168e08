//! The crate's vocabulary (the table in the crate docs), checked by the
//! compiler: one name per concept on every primitive that has it. A rename
//! on one primitive and not the others fails to compile here.

use std::fmt::Debug;
use std::sync::Arc;

use larder::{
    AnyCache, AnyCacheBuilder, AsyncLoadingLruCache, BuildError, CacheStats, CachedReader,
    CoarseClock, CompareAndSwapError, DrainOutcome, EvictionPolicy, ExponentialBackoff,
    GetTimeoutError, Guard, IndexError, IndexedStore, IndexedStoreBuilder, ItemFastSlow,
    LoadingLruCache, LruCache, LruCacheBuilder, ManualClock, MaxOf, OrderedIndex,
    OrderedIndexBuilder, OrderedLock, OrderedSnapshot, RemovalCause, Snapshot, SystemClock,
    TokenBucket, Transaction, TryGetError, TypedCache, TypedCacheBuilder, Versioned, WithMaxWait,
    WorkQueue, WorkQueueBuilder, WorkQueueStats,
};

/// A type that is not `Debug` (nor `Hash`, `Eq`, `Ord`): containers print
/// a summary, never their entries, so they need no bound on `K` or `V`.
struct Opaque;

fn assert_debug<T: Debug + ?Sized>() {}

#[test]
fn every_public_type_is_debug() {
    // Containers and builders: no bound on their parameters (`Opaque` is
    // neither `Debug` nor `Hash`, `Eq` or `Ord`).
    assert_debug::<IndexedStore<Opaque, Opaque>>();
    assert_debug::<IndexedStoreBuilder<Opaque, Opaque>>();
    assert_debug::<Transaction<Opaque, Opaque>>();
    assert_debug::<OrderedIndex<Opaque, Opaque>>();
    assert_debug::<OrderedIndexBuilder<Opaque, Opaque>>();
    assert_debug::<LruCache<Opaque, Opaque>>();
    assert_debug::<LruCacheBuilder<Opaque, Opaque>>();
    assert_debug::<LoadingLruCache<Opaque, Opaque>>();
    assert_debug::<AsyncLoadingLruCache<Opaque, Opaque>>();
    assert_debug::<TypedCache<Opaque, Opaque>>();
    assert_debug::<TypedCacheBuilder<Opaque, Opaque>>();
    assert_debug::<AnyCache<Opaque>>();
    assert_debug::<AnyCacheBuilder<Opaque>>();
    assert_debug::<WorkQueue<Opaque>>();
    assert_debug::<WorkQueueBuilder<Opaque>>();
    assert_debug::<CachedReader<'static, Opaque>>();
    assert_debug::<ExponentialBackoff<Opaque>>();
    assert_debug::<MaxOf<Opaque>>();
    assert_debug::<ItemFastSlow<Opaque>>();
    // Views that print what they hold: `T: Debug`.
    assert_debug::<Snapshot<String>>();
    assert_debug::<Guard<String>>();
    assert_debug::<Versioned<String>>();
    assert_debug::<OrderedSnapshot<String, String>>();
    assert_debug::<CompareAndSwapError<String>>();
    // A wrapper prints the limiter it wraps (every limiter is `Debug`).
    assert_debug::<WithMaxWait<TokenBucket>>();
    // Plain values.
    assert_debug::<CacheStats>();
    assert_debug::<WorkQueueStats>();
    assert_debug::<BuildError>();
    assert_debug::<IndexError>();
    assert_debug::<TryGetError>();
    assert_debug::<GetTimeoutError>();
    assert_debug::<DrainOutcome>();
    assert_debug::<RemovalCause>();
    assert_debug::<EvictionPolicy>();
    assert_debug::<OrderedLock>();
    assert_debug::<SystemClock>();
    assert_debug::<CoarseClock>();
    assert_debug::<ManualClock>();
    assert_debug::<TokenBucket>();
}

#[test]
fn every_builder_is_x_builder_then_a_result() {
    let _: Result<IndexedStore<String, u32>, BuildError> = IndexedStore::builder().build();
    let _: Result<OrderedIndex<String, u32>, BuildError> = OrderedIndex::builder().build();
    let _: Result<LruCache<String, u32>, BuildError> = LruCache::builder().capacity(8).build();
    let _: Result<TypedCache<String, u32>, BuildError> = TypedCache::builder().build();
    let _: Result<AnyCache<String>, BuildError> = AnyCache::builder().build();
    let _: Result<WorkQueue<String>, BuildError> = WorkQueue::builder().build();
}

#[test]
fn capacity_is_the_bound_everywhere() {
    let lru: LruCache<String, u32> = LruCache::builder().capacity(8).build().unwrap();
    let typed: TypedCache<String, u32> = TypedCache::builder().capacity(8).build().unwrap();
    let any: AnyCache<String> = AnyCache::builder().capacity(8).build().unwrap();
    assert_eq!(lru.stats().capacity, Some(8));
    assert_eq!(typed.stats().capacity, Some(8));
    assert_eq!(any.stats().capacity, Some(8));
    // Every type built with a capacity reports it (an `LruCache` always
    // has one).
    let _: usize = lru.capacity();
    assert_eq!(typed.capacity(), Some(8));
    assert_eq!(any.capacity(), Some(8));
    // Not a bound: named for what it is.
    let _ = IndexedStore::<String, u32>::builder().initial_capacity(8);
    let _ = OrderedIndex::<String, u32>::builder().leaf_size(8);
}

#[test]
fn keyed_primitives_share_get_get_with_remove_clear_len_is_empty() {
    let store: IndexedStore<String, u32> = IndexedStore::new();
    store.insert("k".to_string(), 1).unwrap();
    let _: Option<u32> = store.get("k");
    assert_eq!(store.get_with("k", |v| *v), Some(1));
    assert!(store.contains_key("k"));
    let _: Vec<(String, u32)> = store.to_vec();
    let _: Option<u32> = store.remove("k");
    store.clear();
    assert_eq!((store.len(), store.is_empty()), (0, true));

    let ordered: OrderedIndex<String, u32> = OrderedIndex::new();
    ordered.insert("k".to_string(), 1);
    let _: Option<Arc<u32>> = ordered.get("k");
    assert_eq!(ordered.get_with("k", |v| *v), Some(1));
    assert!(ordered.contains_key("k"));
    let _: Vec<(String, Arc<u32>)> = ordered.to_vec();
    let _: Vec<(String, Arc<u32>)> = ordered.range_to_vec::<String, _>(..);
    let _: Option<Arc<u32>> = ordered.remove("k");
    ordered.clear();
    assert_eq!((ordered.len(), ordered.is_empty()), (0, true));

    let lru: LruCache<String, u32> = LruCache::new(8);
    lru.insert("k".to_string(), 1);
    let _: Option<u32> = lru.get("k");
    assert_eq!(lru.get_with("k", |v| *v), Some(1));
    assert!(lru.contains_key("k"));
    let _: Vec<(String, u32)> = lru.to_vec();
    let _: Option<u32> = lru.remove("k");
    lru.clear();
    assert_eq!((lru.len(), lru.is_empty()), (0, true));

    let typed: TypedCache<String, u32> = TypedCache::new();
    typed.insert("k".to_string(), 1);
    let _: Option<u32> = typed.get("k");
    assert_eq!(typed.get_with("k", |v| *v), Some(1));
    assert!(typed.contains_key("k"));
    let _: Vec<(String, u32)> = typed.to_vec();
    let _: Option<u32> = typed.remove("k");
    typed.clear();
    assert_eq!((typed.len(), typed.is_empty()), (0, true));

    let any: AnyCache<String> = AnyCache::new();
    any.insert("k".to_string(), 1_u32);
    let _: Option<Arc<u32>> = any.get::<u32, _>("k");
    assert_eq!(any.get_with("k", |v: &u32| *v), Some(1));
    assert!(any.contains_key::<u32, _>("k"));
    let _: Option<Arc<u32>> = any.remove::<u32, _>("k");
    any.clear();
    assert_eq!((any.len(), any.is_empty()), (0, true));

    let queue: WorkQueue<String> = WorkQueue::new();
    assert_eq!((queue.len(), queue.is_empty()), (0, true));
}

#[test]
fn loading_caches_take_the_key_as_get_does_and_share_one_stats_type() {
    // `&str` against `String` keys, in `get` and in every loading call.
    let lru: LruCache<String, u32> = LruCache::new(8);
    assert_eq!(lru.get_or_init("k", || 1), 1);
    assert_eq!(lru.get_or_try_init("k", || Ok::<_, ()>(2)), Ok(1));
    assert_eq!(lru.get("k"), Some(1));

    let typed: TypedCache<String, u32> = TypedCache::new();
    assert_eq!(typed.get_or_init("k", || 1), 1);
    assert_eq!(typed.get_or_try_init("k", || Ok::<_, ()>(2)), Ok(1));
    assert_eq!(typed.get("k"), Some(1));

    let any: AnyCache<String> = AnyCache::new();
    assert_eq!(*any.get_or_init("k", || 1_u32), 1);
    assert_eq!(
        any.get_or_try_init("k", || Ok::<_, ()>(2_u32)).map(|v| *v),
        Ok(1)
    );
    assert_eq!(any.get::<u32, _>("k").as_deref(), Some(&1));

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(lru.get_or_init_async("a", || async { 3 }).await, 3);
        assert_eq!(typed.get_or_init_async("a", || async { 3 }).await, 3);
        assert_eq!(*any.get_or_init_async("a", || async { 3_u32 }).await, 3);
        assert_eq!(
            lru.get_or_try_init_async("a", || async { Ok::<_, ()>(4) })
                .await,
            Ok(3)
        );
        assert_eq!(
            typed
                .get_or_try_init_async("a", || async { Ok::<_, ()>(4) })
                .await,
            Ok(3)
        );
    });

    // One statistics type, one set of counter names.
    let stats: [CacheStats; 3] = [lru.stats(), typed.stats(), any.stats()];
    for stats in stats {
        let CacheStats {
            hits,
            misses,
            inits,
            init_failures,
            waits,
            ..
        } = stats;
        assert!(hits >= 1 && misses >= 1 && inits >= 1, "{stats}");
        assert_eq!((init_failures, waits), (0, 0));
    }
}

#[test]
fn async_forms_look_the_key_up_at_the_call() {
    let lru: LruCache<String, u32> = LruCache::new(8);
    let typed: TypedCache<String, u32> = TypedCache::new();
    let any: AnyCache<String> = AnyCache::new();
    lru.insert("k".to_string(), 1);
    typed.insert("k".to_string(), 1);
    any.insert("k".to_string(), 1_u32);
    // Each future is dropped unpolled: the hit was counted when it was made.
    drop(lru.get_or_init_async("k", || async { 2 }));
    drop(typed.get_or_init_async("k", || async { 2 }));
    drop(any.get_or_init_async("k", || async { 2_u32 }));
    drop(any.get_or_try_init_async("k", || async { Ok::<_, ()>(2_u32) }));
    assert_eq!(lru.stats().hits, 1);
    assert_eq!(typed.stats().hits, 1);
    assert_eq!(any.stats().hits, 2);
}

#[test]
fn loading_caches_own_a_sync_or_an_async_loader_and_load_each_key_once() {
    let sync: LoadingLruCache<String, usize> = LruCache::with_loader(8, |k: &String| k.len());
    assert_eq!(sync.get_or_load("abc"), 3);
    assert_eq!(sync.get_or_try_load("abc"), Ok(3));
    assert_eq!(sync.cache().stats().inits, 1);

    let loads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&loads);
    let cache: AsyncLoadingLruCache<String, usize> =
        LruCache::with_async_loader(8, move |k: &String| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let len = k.len();
            async move {
                tokio::task::yield_now().await;
                len
            }
        });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Two callers miss the key together: one load, one wait.
        let (a, b) = tokio::join!(
            cache.get_or_load_async("abcd"),
            cache.get_or_load_async("abcd")
        );
        assert_eq!((a, b), (4, 4));
    });
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 1);
    let stats = cache.cache().stats();
    assert_eq!((stats.inits, stats.waits), (1, 1));

    let fallible: AsyncLoadingLruCache<String, u16, std::num::ParseIntError> =
        LruCache::with_try_async_loader(8, |k: &String| {
            let k = k.clone();
            async move { k.parse::<u16>() }
        });
    runtime.block_on(async {
        assert!(fallible.get_or_try_load_async("x").await.is_err());
        assert_eq!(fallible.get_or_try_load_async("8").await.unwrap(), 8);
    });
    assert!(!fallible.cache().contains_key("x"), "errors are not cached");
}
