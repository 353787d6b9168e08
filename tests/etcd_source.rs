//! `EtcdSource` against a real etcd server: list, watch, bookmarks,
//! compaction, a killed server and undecodable values.
//!
//! Needs the `etcd` feature and an `etcd` binary (`apt-get install
//! etcd-server`); tests/common/etcd.rs starts one server per test.

#[path = "common/etcd.rs"]
mod etcd_server;

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use etcd_client::{Client, GetOptions};
use etcd_server::{EtcdOptions, EtcdServer, bounded, connect};
use futures_core::Stream;
use larder::reflector::{
    EtcdSource, EtcdSourceBuildError, EtcdWatch, Revision, Source, SourceError, WatchEvent,
};

/// Far above a test's usual running time (seconds), far below a stalled run.
const LIMIT: Duration = Duration::from_secs(90);

/// A decode function that accepts decimal numbers only.
fn numbers(client: Client, prefix: &str) -> EtcdSource<u64> {
    EtcdSource::builder(client, prefix, |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())?
            .parse::<u64>()
            .map_err(|e| e.to_string())
    })
    .request_timeout(Duration::from_secs(3))
    .build()
    .expect("a valid configuration")
}

async fn put(client: &mut Client, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Revision {
    let response = client.put(key, value, None).await.expect("put");
    response.header().expect("a header").revision() as Revision
}

async fn next(watch: &mut EtcdWatch<u64>) -> Option<Result<WatchEvent<String, u64>, SourceError>> {
    tokio::time::timeout(
        Duration::from_secs(10),
        poll_fn(|cx| Pin::new(&mut *watch).poll_next(cx)),
    )
    .await
    .expect("the watch delivered nothing within 10 s")
}

async fn next_ok(watch: &mut EtcdWatch<u64>) -> WatchEvent<String, u64> {
    match next(watch).await {
        Some(Ok(event)) => event,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// The next event that is not a bookmark.
async fn next_change(watch: &mut EtcdWatch<u64>) -> WatchEvent<String, u64> {
    loop {
        match next_ok(watch).await {
            WatchEvent::Bookmark { .. } => continue,
            event => return event,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_reads_every_page_at_the_first_pages_revision() {
    let server = EtcdServer::start();
    bounded(
        "list_reads_every_page_at_the_first_pages_revision",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            for i in 0..250u64 {
                put(&mut client, format!("/n/{i:04}"), i.to_string()).await;
            }
            put(&mut client, "/m/outside", "1").await;
            put(&mut client, "/n0", "1").await; // just past the prefix's range
            // While the list reads its first page, a writer adds a key that
            // sorts into the last page: a pinned list must not see it.
            let endpoint = server.endpoint();
            let wrote = std::sync::Arc::new(std::sync::Mutex::new(None::<Revision>));
            let wrote_in_decode = std::sync::Arc::clone(&wrote);
            let source = EtcdSource::builder(client.clone(), "/n/", move |bytes: &[u8]| {
                let mut slot = wrote_in_decode.lock().unwrap();
                if slot.is_none() {
                    let endpoint = endpoint.clone();
                    // A second runtime on its own thread: `decode` is synchronous.
                    let revision = std::thread::spawn(move || {
                        tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .unwrap()
                            .block_on(async {
                                let mut writer = Client::connect([endpoint], None).await.unwrap();
                                put(&mut writer, "/n/9999-late", "7").await
                            })
                    })
                    .join()
                    .unwrap();
                    *slot = Some(revision);
                }
                std::str::from_utf8(bytes)
                    .unwrap()
                    .parse::<u64>()
                    .map_err(|e| e.to_string())
            })
            .page_size(10)
            .build()
            .unwrap();
            let listed = source.list().await.expect("list");
            let late = wrote.lock().unwrap().expect("the decode function wrote");
            assert!(listed.invalid.is_empty(), "{:?}", listed.invalid);
            assert_eq!(
                listed.items.len(),
                250,
                "exactly the keys present at the list's revision"
            );
            assert!(
                listed.revision < late,
                "listed at {} after the late write {late}",
                listed.revision
            );
            assert!(!listed.items.iter().any(|(key, ..)| key == "/n/9999-late"));
            for (i, (key, value, changed)) in listed.items.iter().enumerate() {
                assert!(*changed <= listed.revision, "{key} changed at {changed}");
                assert_eq!(
                    key,
                    &format!("/n/{i:04}"),
                    "full keys, prefix kept, in key order"
                );
                assert_eq!(*value, i as u64);
            }
            // A second list sees the late key, at a later revision.
            let again = source.list().await.expect("list");
            assert_eq!(again.items.len(), 251);
            assert!(again.revision >= late);
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_delivers_changes_after_its_revision_in_order() {
    let server = EtcdServer::start();
    bounded(
        "watch_delivers_changes_after_its_revision_in_order",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            let before = put(&mut client, "/w/before", "1").await;
            let source = numbers(client.clone(), "/w/");
            let listed = source.list().await.unwrap();
            // Each object with the revision of its last change.
            assert_eq!(listed.items, vec![("/w/before".to_owned(), 1, before)]);
            // A change between the list and the watch is still delivered: the
            // watch starts just after the listed revision.
            let a = put(&mut client, "/w/a", "10").await;
            let mut watch = source.watch(listed.revision).await.unwrap();
            put(&mut client, "/x/outside", "5").await;
            let b = put(&mut client, "/w/b", "20").await;
            let deleted = client.delete("/w/a", None).await.unwrap();
            let d = deleted.header().unwrap().revision() as Revision;
            assert_eq!(
                next_change(&mut watch).await,
                WatchEvent::Put {
                    key: "/w/a".into(),
                    object: 10,
                    revision: a
                }
            );
            assert_eq!(
                next_change(&mut watch).await,
                WatchEvent::Put {
                    key: "/w/b".into(),
                    object: 20,
                    revision: b
                }
            );
            assert_eq!(
                next_change(&mut watch).await,
                WatchEvent::Delete {
                    key: "/w/a".into(),
                    revision: d
                }
            );
            // Watching from the latest revision sees nothing old.
            let mut late = source.watch(d).await.unwrap();
            let e = put(&mut client, "/w/c", "30").await;
            assert_eq!(
                next_change(&mut late).await,
                WatchEvent::Put {
                    key: "/w/c".into(),
                    object: 30,
                    revision: e
                }
            );
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_watch_gets_periodic_bookmarks_at_etcds_revision() {
    // etcd sends a progress notification every second to a quiet watch.
    let server = EtcdServer::start_with(EtcdOptions {
        progress_interval: Duration::from_secs(1),
    });
    bounded(
        "a_quiet_watch_gets_periodic_bookmarks_at_etcds_revision",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            put(&mut client, "/q/a", "1").await;
            let source = numbers(client.clone(), "/q/");
            let listed = source.list().await.unwrap();
            let mut watch = source.watch(listed.revision).await.unwrap();
            // Writes outside the prefix move etcd's revision, not the prefix's.
            let outside = put(&mut client, "/elsewhere", "1").await;
            loop {
                match next_ok(&mut watch).await {
                    WatchEvent::Bookmark { revision } if revision >= outside => {
                        assert_eq!(revision, source.current_revision().await.unwrap());
                        break;
                    }
                    WatchEvent::Bookmark { .. } => continue,
                    other => panic!("a quiet prefix delivered {other:?}"),
                }
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_request_gets_a_bookmark_at_once() {
    // Periodic notifications an hour apart: a bookmark within seconds can
    // only answer the request.
    let server = EtcdServer::start_with(EtcdOptions {
        progress_interval: Duration::from_secs(3600),
    });
    bounded("a_progress_request_gets_a_bookmark_at_once", LIMIT, async {
        let mut client = connect(&server).await;
        let source = numbers(client.clone(), "/p/");
        assert!(
            source.request_progress().await.is_err(),
            "no watch is open yet"
        );
        let listed = source.list().await.unwrap();
        let mut watch = source.watch(listed.revision).await.unwrap();
        let outside = put(&mut client, "/elsewhere", "1").await;
        source.request_progress().await.unwrap();
        assert_eq!(
            next_ok(&mut watch).await,
            WatchEvent::Bookmark { revision: outside }
        );
        // A clone shares the watch's progress handle.
        let other = put(&mut client, "/elsewhere", "2").await;
        source.clone().request_progress().await.unwrap();
        assert_eq!(
            next_ok(&mut watch).await,
            WatchEvent::Bookmark { revision: other }
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_revision_is_too_old_for_a_watch_and_a_pinned_list() {
    let server = EtcdServer::start();
    bounded(
        "a_compacted_revision_is_too_old_for_a_watch_and_a_pinned_list",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            let first = put(&mut client, "/c/a", "1").await;
            for i in 0..10u64 {
                put(&mut client, "/c/b", i.to_string()).await;
            }
            let last = put(&mut client, "/c/z", "2").await;
            client.compact(last as i64, None).await.unwrap();
            let source = numbers(client.clone(), "/c/");
            let (requested, compacted) = too_old(&source, first).await;
            assert_eq!(requested, first);
            assert_eq!(compacted, Some(last));
            // Just below the compaction point is too old too; at it, fine.
            too_old(&source, last - 2).await;
            let mut watch = source.watch(last).await.unwrap();
            let next_put = put(&mut client, "/c/new", "3").await;
            assert_eq!(
                next_change(&mut watch).await,
                WatchEvent::Put {
                    key: "/c/new".into(),
                    object: 3,
                    revision: next_put
                }
            );
            // A list still works after compaction (it reads the present).
            let listed = source.list().await.unwrap();
            assert_eq!(listed.items.len(), 4);
            // A read pinned to a compacted revision is refused as too old: what
            // a paginated list meets if etcd compacts between its pages.
            let mut kv = client.kv_client();
            let error = kv
                .get(
                    "/c/",
                    Some(GetOptions::new().with_prefix().with_revision(first as i64)),
                )
                .await
                .unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("required revision has been compacted"),
                "{error}"
            );
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_a_connection_error_and_a_restart_resumes() {
    let mut server = EtcdServer::start();
    bounded(
        "a_killed_server_is_a_connection_error_and_a_restart_resumes",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            put(&mut client, "/k/a", "1").await;
            let source = numbers(client.clone(), "/k/");
            let listed = source.list().await.unwrap();
            let mut watch = source.watch(listed.revision).await.unwrap();
            let b = put(&mut client, "/k/b", "2").await;
            assert_eq!(
                next_change(&mut watch).await,
                WatchEvent::Put {
                    key: "/k/b".into(),
                    object: 2,
                    revision: b
                }
            );
            server.kill();
            // The stream ends with a connection error (possibly after bookmarks
            // already in flight), then ends.
            loop {
                match next(&mut watch).await {
                    Some(Ok(WatchEvent::Bookmark { .. })) => continue,
                    Some(Err(SourceError::Connection(_))) => break,
                    other => panic!("expected a connection error, got {other:?}"),
                }
            }
            assert!(
                next(&mut watch).await.is_none(),
                "nothing after the final error"
            );
            // While etcd is down, list and watch fail as connection errors
            // (within the request timeout), never as too old.
            let list_error = source.list().await.unwrap_err();
            assert!(
                matches!(list_error, SourceError::Connection(_)),
                "{list_error}"
            );
            let watch_error = source.watch(b).await.unwrap_err();
            assert!(
                matches!(watch_error, SourceError::Connection(_)),
                "{watch_error}"
            );
            let revision_error = source.current_revision().await.unwrap_err();
            assert!(
                matches!(revision_error, SourceError::Connection(_)),
                "{revision_error}"
            );
            // Restarted on the same data: the history survived, and a watch
            // resumes from the last revision seen.
            tokio::task::block_in_place(|| server.restart());
            let relisted = retry(|| source.list()).await;
            assert_eq!(relisted.items.len(), 2);
            let mut resumed = retry(|| source.watch(b)).await;
            let c = put(&mut client, "/k/c", "3").await;
            assert_eq!(
                next_change(&mut resumed).await,
                WatchEvent::Put {
                    key: "/k/c".into(),
                    object: 3,
                    revision: c
                }
            );
        },
    )
    .await;
}

/// Watches from `from` and expects etcd to refuse it as compacted: etcd
/// creates the watch, then cancels it with its compaction revision, so the
/// refusal comes as `watch`'s error or as the stream's first item.
async fn too_old(source: &EtcdSource<u64>, from: Revision) -> (Revision, Option<Revision>) {
    let error = match source.watch(from).await {
        Err(error) => error,
        Ok(mut watch) => match next(&mut watch).await {
            Some(Err(error)) => {
                assert!(
                    next(&mut watch).await.is_none(),
                    "nothing after the final error"
                );
                error
            }
            other => panic!("expected TooOld first thing, got {other:?}"),
        },
    };
    match error {
        SourceError::TooOld {
            requested,
            compacted,
        } => (requested, compacted),
        other => panic!("expected TooOld, got {other}"),
    }
}

/// Retries a request until the restarted server answers.
async fn retry<T, F: std::future::Future<Output = Result<T, SourceError>>>(
    mut request: impl FnMut() -> F,
) -> T {
    for _ in 0..100 {
        match request().await {
            Ok(value) => return value,
            Err(SourceError::Connection(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(other) => panic!("expected success or a connection error, got {other}"),
        }
    }
    panic!("the restarted etcd never answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_values_are_reported_with_their_keys() {
    let server = EtcdServer::start();
    bounded(
        "undecodable_values_are_reported_with_their_keys",
        LIMIT,
        async {
            let mut client = connect(&server).await;
            put(&mut client, "/u/good", "1").await;
            let bad = put(&mut client, "/u/bad", "not a number").await;
            let bad_key = put(&mut client, b"/u/\xff\xfe".to_vec(), "2").await;
            put(&mut client, "/u/good2", "2").await;
            let source = numbers(client.clone(), "/u/");
            let listed = source.list().await.unwrap();
            let mut keys: Vec<_> = listed
                .items
                .iter()
                .map(|(k, v, _)| (k.as_str(), *v))
                .collect();
            keys.sort();
            assert_eq!(keys, vec![("/u/good", 1), ("/u/good2", 2)]);
            assert_eq!(listed.invalid.len(), 2, "{:?}", listed.invalid);
            let by_key = |key: &str| listed.invalid.iter().find(|i| i.key == key).cloned();
            let not_number = by_key("/u/bad").expect("the bad value is reported with its key");
            assert_eq!(not_number.revision, bad);
            assert!(
                not_number.reason.contains("invalid digit"),
                "{}",
                not_number.reason
            );
            let not_utf8 = by_key("/u/\u{fffd}\u{fffd}").expect("the non-UTF-8 key is reported");
            assert_eq!(not_utf8.revision, bad_key);
            assert!(not_utf8.reason.contains("not UTF-8"), "{}", not_utf8.reason);

            let mut watch = source.watch(listed.revision).await.unwrap();
            let worse = put(&mut client, "/u/good", "-1").await;
            let fine = put(&mut client, "/u/good2", "3").await;
            match next_change(&mut watch).await {
                WatchEvent::Invalid(invalid) => {
                    assert_eq!(invalid.key, "/u/good");
                    assert_eq!(invalid.revision, worse);
                }
                other => panic!("expected Invalid, got {other:?}"),
            }
            assert_eq!(
                next_change(&mut watch).await,
                WatchEvent::Put {
                    key: "/u/good2".into(),
                    object: 3,
                    revision: fine
                },
                "the stream goes on after an undecodable value"
            );
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builder_refuses_a_zero_page_size_and_timeout() {
    let server = EtcdServer::start();
    bounded(
        "the_builder_refuses_a_zero_page_size_and_timeout",
        LIMIT,
        async {
            let client = connect(&server).await;
            let decode = |b: &[u8]| Ok::<_, String>(b.len());
            let zero_page = EtcdSource::builder(client.clone(), "/b/", decode)
                .page_size(0)
                .build();
            assert_eq!(zero_page.unwrap_err(), EtcdSourceBuildError::ZeroPageSize);
            let zero_timeout = EtcdSource::builder(client.clone(), "/b/", decode)
                .request_timeout(Duration::ZERO)
                .build();
            assert_eq!(
                zero_timeout.unwrap_err(),
                EtcdSourceBuildError::ZeroRequestTimeout
            );
            let zero_deadline = EtcdSource::builder(client.clone(), "/b/", decode)
                .watch_deadline(Duration::ZERO)
                .build();
            assert_eq!(
                zero_deadline.unwrap_err(),
                EtcdSourceBuildError::ZeroWatchDeadline
            );
            let source = EtcdSource::builder(client, "/b/", decode).build().unwrap();
            assert_eq!(source.prefix(), "/b/");
            assert!(format!("{source:?}").contains("/b/"));
        },
    )
    .await;
}
