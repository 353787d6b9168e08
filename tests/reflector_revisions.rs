//! Handlers told the revision of each change (`Handler::on_change`), on a
//! `MemorySource` through dropped streams, compactions (relists),
//! bookmarks and resyncs: a builder handler, a `HandlerRegistry` handler
//! added mid-stream (its first adds carry the revision the store's content
//! was read at) and one with its own resync period. Each handler's
//! revisions never decrease, rise per key with every change, and the
//! replica they tag equals the source's content at each revision.
//! Every wait is bounded: a hang fails with the test's name.

#![cfg(feature = "reflector")]

#[path = "common/reflecting.rs"]
mod reflecting;
#[path = "common/revisioned.rs"]
mod revisioned;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use larder::reflector::{MemorySource, Reflector, Resync, Revision};
use reflecting::{bounded, caught_up, churn, fast, key, sorted, store};
use revisioned::{Tagged, Tagging, order_violations, replicas};

type Log = Arc<Tagged<String, u32>>;

/// The source's content after each of its changes, by revision.
#[derive(Default)]
struct History(BTreeMap<Revision, BTreeMap<String, u32>>);

impl History {
    fn record(&mut self, source: &MemorySource<String, u32>) {
        let content = source.to_vec_sorted().into_iter().collect();
        self.0.insert(source.revision(), content);
    }

    /// The content at `revision`: after the last change at or below it.
    fn at(&self, revision: Revision) -> BTreeMap<String, u32> {
        self.0
            .range(..=revision)
            .next_back()
            .map(|(_, content)| content.clone())
            .unwrap_or_default()
    }
}

/// Checks one handler's log against the source's history.
fn check(name: &str, log: &Log, history: &History, final_content: &BTreeMap<String, u32>) {
    let log = log.log.lock().unwrap();
    assert!(!log.is_empty(), "{name}: no notification");
    assert_eq!(order_violations(&log), Vec::<String>::new(), "{name}");
    let replicas = replicas(&log);
    for (revision, replica) in &replicas {
        assert_eq!(
            replica,
            &history.at(*revision),
            "{name}: the replica at revision {revision}"
        );
    }
    assert_eq!(
        &replicas.last().unwrap().1,
        final_content,
        "{name}: at the end"
    );
}

#[test]
fn handlers_replicas_tagged_with_revisions_equal_the_source_at_each() {
    bounded("handlers_replicas_tagged_with_revisions", async {
        let source = MemorySource::new();
        let mut history = History::default();
        for i in 0..30 {
            source.put(key(i), i);
            history.record(&source);
        }
        let store = store();
        let (builder, joined, own): (Log, Log, Log) = (Tagged::new(), Tagged::new(), Tagged::new());
        let reflector = Reflector::builder(source.clone(), store)
            .handler(Tagging(Arc::clone(&builder)))
            .backoff(fast())
            .resync(Resync::Every(Duration::from_millis(3)))
            .build()
            .unwrap();
        let store = reflector.reader();
        let (handle, registry) = (reflector.handle(), reflector.handler_registry());
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        let mut deliveries = Vec::new();
        let mut registrations = Vec::new();

        for round in 0..20u32 {
            if round == 5 {
                // Joins mid-stream: its first adds carry the revision the
                // content it got was read at.
                let (registration, delivery) = registry.add(Tagging(Arc::clone(&joined)));
                deliveries.push(tokio::spawn(delivery));
                registrations.push(registration);
            }
            if round == 8 {
                let every = Resync::Every(Duration::from_millis(2));
                let (registration, delivery) = registry
                    .add_with_resync(Tagging(Arc::clone(&own)), every)
                    .unwrap();
                deliveries.push(tokio::spawn(delivery));
                registrations.push(registration);
            }
            churn(&source, round, 60, 25, || history.record(&source));
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        caught_up(&handle, &source).await;
        // A bookmark past the last change, then one more resync of each.
        source.bookmark();
        tokio::time::sleep(Duration::from_millis(10)).await;
        handle.stop();
        task.await.unwrap();
        for delivery in deliveries {
            delivery.await.unwrap();
        }

        let content: BTreeMap<String, u32> = source.to_vec_sorted().into_iter().collect();
        assert_eq!(sorted(&store), source.to_vec_sorted());
        for (name, log) in [("builder", &builder), ("joined", &joined), ("own", &own)] {
            check(name, log, &history, &content);
        }
        // Every kind of notification was there to check.
        let stats = handle.stats();
        assert!(stats.relists >= 1 && stats.resyncs >= 1, "{stats:?}");
        let own_log = own.log.lock().unwrap();
        assert!(own_log.iter().any(|tag| tag.unchanged), "no own resync");
    });
}
