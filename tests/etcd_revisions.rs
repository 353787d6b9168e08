//! Handlers told the revision of each change (`Handler::on_change`) on a
//! real three-member etcd cluster: puts, deletes, three-key transactions
//! and prefix deletes, the member serving the watch SIGKILLed (the watch
//! resumes elsewhere), then SIGSTOPped while etcd compacts (a relist). A builder handler with a resync, a `HandlerRegistry` handler
//! with its own resync period and one added mid-stream: each one's
//! revisions never decrease and rise per key with each change, and the
//! replica it builds, at the end of each revision's notifications, equals
//! etcd's `get --prefix` at that revision.
//!
//! Needs the `etcd` feature and an `etcd` binary (`apt-get install
//! etcd-server`).

#[path = "common/etcd_cluster.rs"]
mod etcd_cluster;
#[path = "common/etcd_mirror.rs"]
mod etcd_mirror;
#[path = "common/etcd.rs"]
mod etcd_server;
#[path = "common/revisioned.rs"]
mod revisioned;

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, CompactionOptions, DeleteOptions, Txn, TxnOp};
use etcd_cluster::EtcdCluster;
use etcd_mirror::{decimal, etcd_content, fast_backoff};
use etcd_server::bounded;
use larder::IndexedStore;
use larder::reflector::{EtcdSource, Reflector, Resync, Revision};
use revisioned::{Tag, Tagged, Tagging, order_violations, replicas, spread};

const LIMIT: Duration = Duration::from_secs(170);
const PREFIX: &str = "/r/";
/// A bound below the earliest moment the watch gives a frozen member up
/// (its 3 s deadline; the connection's keep-alive pings every 2 s and waits
/// 2 s for the answer): two puts and a compaction made while the watch's
/// member is frozen must be done by then, so the watch resumes from a
/// compacted revision.
const KEEP_ALIVE: Duration = Duration::from_secs(2);

type Log = Arc<Tagged<String, u64>>;

/// `count` writes from `step` on: puts, deletes, three-key transactions
/// and a prefix delete now and then, each retried (bounded) until
/// acknowledged. Returns the next step.
async fn write(client: &Client, step: u64, count: u64) -> u64 {
    let mut kv = client.kv_client();
    for step in step..step + count {
        let key = |i: u64| format!("{PREFIX}g{}/{:02}", i % 3, i % 20);
        for attempt in 0.. {
            assert!(attempt < 100, "write {step} was never acknowledged");
            let done = match step % 10 {
                0 => {
                    let ops: Vec<TxnOp> = (0..3)
                        .map(|i| TxnOp::put(key(step + i * 7), (step * 10 + i).to_string(), None))
                        .collect();
                    kv.txn(Txn::new().and_then(ops)).await.is_ok()
                }
                5 if step % 50 == 5 => {
                    let group = format!("{PREFIX}g{}/", step % 3);
                    let prefix = Some(DeleteOptions::new().with_prefix());
                    kv.delete(group, prefix).await.is_ok()
                }
                3 | 7 => kv.delete(key(step), None).await.is_ok(),
                _ => kv.put(key(step), step.to_string(), None).await.is_ok(),
            };
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    step + count
}

/// Checks each handler's order, and its replica at (up to 60 of) its
/// revisions from `from` on against etcd's prefix at that revision.
async fn check(client: &Client, logs: &[(&str, &Log)], from: Revision) {
    for (name, log) in logs {
        let log: Vec<Tag<String, u64>> = log.log.lock().unwrap().clone();
        assert!(!log.is_empty(), "{name}: no notification");
        assert_eq!(order_violations(&log), Vec::<String>::new(), "{name}");
        let boundaries: Vec<_> = replicas(&log)
            .into_iter()
            .filter(|(revision, _)| *revision >= from)
            .collect();
        assert!(!boundaries.is_empty(), "{name}: nothing at or after {from}");
        for (revision, replica) in spread(&boundaries, 60) {
            let etcd = etcd_content(client, PREFIX, revision).await;
            assert_eq!(replica, etcd, "{name}: the replica at revision {revision}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn handler_replicas_tagged_with_revisions_equal_etcd_at_each() {
    let mut cluster = tokio::task::block_in_place(EtcdCluster::start);
    bounded(
        "handler_replicas_tagged_with_revisions_equal_etcd_at_each",
        LIMIT,
        async {
            // Followers first: the watch starts on a follower and fails
            // over to the other, so neither fault costs an election.
            let leader = tokio::task::block_in_place(|| cluster.leader());
            let endpoints: Vec<String> = [(leader + 1) % 3, (leader + 2) % 3, leader]
                .iter()
                .map(|&m| cluster.member(m).endpoint())
                .collect();
            let source = EtcdSource::connect(endpoints, PREFIX, decimal)
                .await
                .expect("endpoints are URLs")
                .request_timeout(Duration::from_secs(3))
                .build()
                .expect("a valid configuration");
            let (builder, own, joined): (Log, Log, Log) =
                (Tagged::new(), Tagged::new(), Tagged::new());
            let store = IndexedStore::<String, Arc<u64>>::new();
            let reflector = Reflector::builder(source.clone(), store)
                .handler(Tagging(Arc::clone(&builder)))
                .backoff(fast_backoff())
                .resync(Resync::Every(Duration::from_millis(300)))
                .build()
                .unwrap();
            let (handle, registry) = (reflector.handle(), reflector.handler_registry());
            let every = Resync::Every(Duration::from_millis(200));
            let (_own, own_delivery) = registry
                .add_with_resync(Tagging(Arc::clone(&own)), every)
                .unwrap();
            let mut deliveries = vec![tokio::spawn(own_delivery)];
            let task = tokio::spawn(reflector.run());
            handle.wait_until_synced().await.unwrap();
            let all = cluster.client_on(&[0, 1, 2]).await;

            let mut step = write(&all, 0, 200).await;
            let (_joined, joined_delivery) = registry.add(Tagging(Arc::clone(&joined)));
            deliveries.push(tokio::spawn(joined_delivery));
            step = write(&all, step, 100).await;
            // The watch's member dies: the watch resumes on another.
            let serving = tokio::task::block_in_place(|| cluster.watch_member());
            tokio::task::block_in_place(|| cluster.kill(serving));
            let others: Vec<usize> = (0..3).filter(|&m| m != serving).collect();
            let other = cluster.client_on(&others).await;
            step = write(&other, step, 100).await;
            tokio::task::block_in_place(|| cluster.restart(serving));
            step = write(&all, step, 100).await;
            source
                .wait_consistent(&handle, Duration::from_secs(30))
                .await
                .expect("a consistent read");
            let logs = [("builder", &builder), ("own", &own), ("joined", &joined)];
            check(&all, &logs, 0).await;

            // The watch's member frozen while etcd compacts: once the
            // connection's keep-alive (or the watch deadline) gives it up,
            // the watch resumes elsewhere from a compacted revision, and
            // the reflector relists.
            let serving = tokio::task::block_in_place(|| cluster.watch_member());
            tokio::task::block_in_place(|| cluster.freeze(serving));
            let frozen = std::time::Instant::now();
            let others: Vec<usize> = (0..3).filter(|&m| m != serving).collect();
            let mut other = cluster.client_on(&others).await;
            // Two puts (a delete of an absent key would not move the
            // revision) past the watch's position `R`, compacted at once at
            // the second: a watch from `R` (its first event `R + 1`) is then
            // too old.
            let mut compacted = 0;
            for i in 0..2 {
                let key = format!("{PREFIX}moved{i}");
                let put = other.put(key, step.to_string(), None).await;
                let put = put.expect("a put with two members up");
                compacted = put.header().expect("a header").revision();
            }
            other
                .compact(compacted, Some(CompactionOptions::new().with_physical()))
                .await
                .expect("a compaction");
            assert!(
                frozen.elapsed() < KEEP_ALIVE,
                "a write and the compaction took {:?}: the watch may have left first",
                frozen.elapsed()
            );
            write(&other, step, 50).await;
            while handle.stats().relists == 0 {
                assert!(frozen.elapsed() < LIMIT / 4, "no relist");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::task::block_in_place(|| cluster.thaw(serving));
            let revision = source
                .wait_consistent(&handle, Duration::from_secs(30))
                .await
                .expect("a consistent read");
            tokio::time::sleep(Duration::from_millis(400)).await; // resyncs
            handle.stop();
            task.await.unwrap();
            for delivery in deliveries {
                delivery.await.unwrap();
            }
            check(&all, &logs, compacted as Revision).await;
            let stats = handle.stats();
            println!("{stats:?}");
            assert!(stats.relists >= 1 && stats.resyncs >= 1, "{stats:?}");
            let etcd = etcd_content(&all, PREFIX, revision).await;
            for (name, log) in logs {
                let log = log.log.lock().unwrap();
                assert_eq!(replicas(&log).last().unwrap().1, etcd, "{name} at the end");
                assert!(log.iter().any(|tag| tag.unchanged), "{name}: no resync");
            }
        },
    )
    .await;
}
