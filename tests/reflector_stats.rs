//! The reflector's statistics counted exactly (lists, relists, watch
//! restarts, objects rejected by a list), the backoff asked of the timer
//! after each failure, and a watch stream that ends cleanly (`None`, as a
//! closed connection can) watched again. Every wait is bounded: a hang
//! fails with the test's name.

#![cfg(feature = "reflector")]

#[path = "common/reflecting.rs"]
mod reflecting;
#[path = "common/scripted.rs"]
mod scripted;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use larder::reflector::{
    Listed, MemorySource, Reflector, Revision, Sleep, Source, SourceError, WatchEvent,
};
use reflecting::{
    bounded, caught_up, fast, key, relist_over, small_values_store, sorted, start, store,
};
use scripted::Scripted;

/// Polls `done` every millisecond until it holds (the test's bound ends a
/// wait that never does).
async fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[test]
fn stats_count_lists_relists_and_watch_restarts_exactly() {
    bounded(
        "stats_count_lists_relists_and_watch_restarts_exactly",
        async {
            let source = MemorySource::new();
            source.put(key(0), 0);
            let store = store();
            let (store, handle, task) = start(source.clone(), store);
            handle.wait_until_synced().await.unwrap();
            until(|| source.live_watches() == 1).await;
            let stats = handle.stats();
            // The first watch after a list is no restart.
            assert_eq!(
                (stats.lists, stats.relists, stats.watch_restarts),
                (1, 0, 0),
                "{stats:?}"
            );
            for restarts in 1..=2 {
                source.drop_watches();
                // Only a watch opened again can deliver this.
                source.put(key(restarts), restarts);
                caught_up(&handle, &source).await;
                assert_eq!(handle.stats().watch_restarts, u64::from(restarts));
            }
            relist_over(&source, &handle, || {
                source.put(key(9), 9);
            })
            .await;
            let stats = handle.stats();
            assert_eq!((stats.lists, stats.relists), (2, 1), "{stats:?}");
            assert_eq!(sorted(&store), source.to_vec_sorted());
            handle.stop();
            task.await.unwrap();
        },
    );
}

#[test]
fn objects_a_list_cannot_store_are_counted() {
    bounded("objects_a_list_cannot_store_are_counted", async {
        let source = MemorySource::new();
        source.put("a".to_string(), 500);
        source.put("b".to_string(), 2);
        source.put("c".to_string(), 700);
        let store = small_values_store();
        let (store, handle, task) = start(source.clone(), store);
        handle.wait_until_synced().await.unwrap();
        assert_eq!(sorted(&store), [("b".to_string(), 2)]);
        assert_eq!(handle.stats().rejected_objects, 2);
        handle.stop();
        task.await.unwrap();
    });
}

/// A memory source whose watch streams end cleanly (`None`) after their
/// first event, as a connection closed by the server can.
#[derive(Clone)]
struct EndsAfterOneEvent(MemorySource<String, u32>);

/// A watch stream that ends after one item.
struct OneEvent<W>(Option<W>);

impl<W: Stream + Unpin> Stream for OneEvent<W> {
    type Item = W::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<W::Item>> {
        let Some(inner) = self.0.as_mut() else {
            return Poll::Ready(None);
        };
        let item = Pin::new(inner).poll_next(cx);
        if let Poll::Ready(Some(_)) = item {
            self.0 = None;
        }
        item
    }
}

impl Source for EndsAfterOneEvent {
    type Key = String;
    type Object = u32;
    type Watch = OneEvent<<MemorySource<String, u32> as Source>::Watch>;

    fn list(&self) -> impl Future<Output = Result<Listed<String, u32>, SourceError>> + Send {
        self.0.list()
    }

    fn watch(
        &self,
        from: Revision,
    ) -> impl Future<Output = Result<Self::Watch, SourceError>> + Send {
        let watch = self.0.watch(from);
        async move { watch.await.map(|stream| OneEvent(Some(stream))) }
    }
}

#[test]
fn a_watch_stream_that_ends_is_watched_again() {
    bounded("a_watch_stream_that_ends_is_watched_again", async {
        let source = MemorySource::new();
        let store = store();
        let (store, handle, task) = start(EndsAfterOneEvent(source.clone()), store);
        handle.wait_until_synced().await.unwrap();
        // Each change ends the stream that carried it: every next one needs
        // a new watch.
        for i in 0..5 {
            source.put(key(i), i);
            caught_up(&handle, &source).await;
        }
        assert_eq!(sorted(&store), source.to_vec_sorted());
        let stats = handle.stats();
        assert!(stats.watch_restarts >= 4, "{stats:?}");
        assert_eq!(stats.relists, 0, "{stats:?}");
        handle.stop();
        task.await.unwrap();
    });
}

#[test]
fn each_failure_waits_the_backoff_on_the_timer() {
    bounded("each_failure_waits_the_backoff_on_the_timer", async {
        let source = MemorySource::new();
        source.put(key(0), 0);
        source.fail_lists(3);
        let asked = Arc::new(Mutex::new(Vec::new()));
        let timer = {
            let asked = Arc::clone(&asked);
            move |duration: Duration| -> Sleep {
                asked.lock().unwrap().push(duration);
                Box::pin(tokio::time::sleep(duration))
            }
        };
        let reflector = Reflector::builder(source.clone(), store())
            .backoff(fast())
            .timer(timer)
            .build()
            .unwrap();
        let handle = reflector.handle();
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        assert_eq!(handle.stats().list_failures, 3);
        let asked = asked.lock().unwrap().clone();
        // One pause per failed list, each within the backoff's bounds.
        assert_eq!(asked.len(), 3, "{asked:?}");
        for delay in asked {
            assert!(delay <= Duration::from_millis(5), "{delay:?}");
        }
        handle.stop();
        task.await.unwrap();
    });
}

/// A source whose bookmarks can come early, as etcd's before 3.4.25 and
/// 3.5.8: listed at 3, its first watch sends a bookmark at 5 and breaks
/// before the change at 4 (`b` put) that the bookmark claimed; a watch
/// from before 4 delivers it; a list after it holds it.
#[derive(Clone, Default)]
struct EarlyBookmark {
    /// What the source says of its bookmarks.
    trusted: bool,
    /// The revision each watch started after, in order.
    watched_from: Arc<Mutex<Vec<Revision>>>,
    lists: Arc<Mutex<u32>>,
}

impl Source for EarlyBookmark {
    type Key = String;
    type Object = u32;
    type Watch = Scripted<String, u32>;

    async fn list(&self) -> Result<Listed<String, u32>, SourceError> {
        let mut lists = self.lists.lock().unwrap();
        *lists += 1;
        let (items, revision) = if *lists == 1 {
            (vec![(key(0), 0, 1)], 3)
        } else {
            (vec![(key(0), 0, 1), (key(1), 1, 4)], 5)
        };
        Ok(Listed {
            items,
            revision,
            invalid: Vec::new(),
        })
    }

    async fn watch(&self, from: Revision) -> Result<Scripted<String, u32>, SourceError> {
        let mut watched_from = self.watched_from.lock().unwrap();
        let mut items = VecDeque::new();
        if watched_from.is_empty() {
            items.push_back(Ok(WatchEvent::Bookmark { revision: 5 }));
            items.push_back(Err(SourceError::connection("the member went away")));
        } else if from < 4 {
            items.push_back(Ok(WatchEvent::Put {
                key: key(1),
                object: 1,
                revision: 4,
            }));
        }
        watched_from.push(from);
        Ok(Scripted(items))
    }

    fn bookmarks_cover_every_change(&self) -> bool {
        self.trusted
    }
}

#[test]
fn a_change_an_early_bookmark_skipped_arrives_on_the_resumed_watch_and_relists() {
    bounded(
        "a_change_an_early_bookmark_skipped_arrives_on_the_resumed_watch_and_relists",
        async {
            let source = EarlyBookmark::default();
            let store = store();
            let (store, handle, task) = start(source.clone(), store);
            until(|| store.contains_key(&key(1))).await;
            until(|| source.watched_from.lock().unwrap().len() == 3).await;
            // Resumed after the list's 3, not the bookmark's 5; the change at
            // 4 proves the bookmark early: a relist, counted, then a watch
            // from the relist's 5.
            assert_eq!(*source.watched_from.lock().unwrap(), [3, 3, 5]);
            let stats = handle.stats();
            assert_eq!(
                (stats.lists, stats.relists, stats.progress_ahead_of_events),
                (2, 1, 1),
                "{stats:?}"
            );
            assert_eq!(sorted(&store), [(key(0), 0), (key(1), 1)]);
            assert_eq!(handle.revision(), 5);
            handle.stop();
            task.await.unwrap();
        },
    );
}

#[test]
fn a_source_that_vouches_for_its_bookmarks_is_resumed_after_the_last_one() {
    bounded(
        "a_source_that_vouches_for_its_bookmarks_is_resumed_after_the_last_one",
        async {
            let source = EarlyBookmark {
                trusted: true,
                ..EarlyBookmark::default()
            };
            let store = store();
            let (store, handle, task) = start(source.clone(), store);
            until(|| source.watched_from.lock().unwrap().len() == 2).await;
            // Trusted, the bookmark at 5 is where the second watch starts:
            // the change at 4 it skipped never comes (what the default
            // promises a source will not do).
            assert_eq!(*source.watched_from.lock().unwrap(), [3, 5]);
            assert_eq!(handle.revision(), 5);
            assert_eq!(sorted(&store), [(key(0), 0)]);
            assert_eq!(handle.stats().progress_ahead_of_events, 0);
            handle.stop();
            task.await.unwrap();
        },
    );
}
