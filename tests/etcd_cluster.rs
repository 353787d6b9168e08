//! A `Reflector` fed by an `EtcdSource` over a real three-member etcd
//! cluster (tests/common/etcd_cluster.rs, etcd's default server settings),
//! through the faults users meet: a killed leader, a hung member serving the
//! watch, a dead member while etcd compacts, the whole cluster restarted.
//! Each check compares the store, its two indexes and a handler-built
//! replica with etcd's prefix at one revision.
//!
//! Needs the `etcd` feature and an `etcd` binary (`apt-get install
//! etcd-server`).

#[path = "common/etcd_cluster.rs"]
mod etcd_cluster;
#[path = "common/etcd_mirror.rs"]
mod etcd_mirror;
#[path = "common/etcd.rs"]
mod etcd_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use etcd_client::{Client, CompactionOptions, DeleteOptions, GetOptions, Txn, TxnOp};
use etcd_cluster::EtcdCluster;
use etcd_mirror::{Harness, consistent_read_trials, decimal, fast_backoff, start, start_with};
use etcd_server::bounded;
use larder::reflector::{EtcdSource, EtcdSourceBuilder, Revision, Source};

/// Far above a test's usual running time, below nextest's 180 s kill in
/// CI, so a hang fails here with the test's name.
const LIMIT: Duration = Duration::from_secs(170);

/// A source over every member, with the safe defaults of
/// `EtcdSource::connect` and a 3 s request timeout.
async fn source(cluster: &EtcdCluster, prefix: &str) -> EtcdSource<u64> {
    source_on(cluster, &[0, 1, 2], prefix).await
}

/// The leader's two followers, then the leader: a source given its
/// endpoints in this order watches a follower (whose failure costs no
/// election).
fn followers_first(cluster: &EtcdCluster) -> [usize; 3] {
    let leader = cluster.leader();
    let followers: Vec<usize> = (0..3).filter(|&m| m != leader).collect();
    [followers[0], followers[1], leader]
}

/// [`source`] with the members' endpoints in the given order.
async fn source_on(cluster: &EtcdCluster, members: &[usize], prefix: &str) -> EtcdSource<u64> {
    builder_on(cluster, members, prefix)
        .await
        .build()
        .expect("a valid configuration")
}

/// The builder of [`source_on`].
async fn builder_on(
    cluster: &EtcdCluster,
    members: &[usize],
    prefix: &str,
) -> EtcdSourceBuilder<u64> {
    let endpoints: Vec<String> = members
        .iter()
        .map(|&m| cluster.member(m).endpoint())
        .collect();
    EtcdSource::connect(endpoints, prefix, decimal)
        .await
        .expect("endpoints are URLs")
        .request_timeout(Duration::from_secs(3))
}

/// Bounds one write: a request stuck on a hung member is abandoned (it may
/// or may not have been applied; the checks read etcd's own content).
async fn bounded_write<T>(
    write: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
) -> Option<T> {
    match tokio::time::timeout(Duration::from_secs(2), write).await {
        Ok(Ok(value)) => Some(value),
        _ => None,
    }
}

/// The revision of a write's response.
fn revision_of(header: Option<&etcd_client::ResponseHeader>) -> Revision {
    header.expect("etcd sends a header").revision() as Revision
}

/// Writers that can be paused for a check.
struct Writers {
    stop: Arc<AtomicBool>,
    pause: Arc<AtomicBool>,
    paused: Arc<AtomicU64>,
    acknowledged: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    /// Four writers under `prefix`: puts, deletes, three-key transactions
    /// and prefix deletes, each value a larger sequence number than the
    /// writer's earlier ones.
    fn start(client: &Client, prefix: &str) -> Self {
        let writers = Writers {
            stop: Arc::new(AtomicBool::new(false)),
            pause: Arc::new(AtomicBool::new(false)),
            paused: Arc::new(AtomicU64::new(0)),
            acknowledged: Arc::new(AtomicU64::new(0)),
            tasks: Vec::new(),
        };
        let tasks = (0..4u64)
            .map(|w| {
                tokio::spawn(writer(
                    client.clone(),
                    format!("{prefix}w{w}/"),
                    w,
                    Arc::clone(&writers.stop),
                    Arc::clone(&writers.pause),
                    Arc::clone(&writers.paused),
                    Arc::clone(&writers.acknowledged),
                ))
            })
            .collect();
        Writers { tasks, ..writers }
    }

    /// Pauses every writer (bounded: a writer finishes its current write,
    /// itself bounded).
    async fn pause(&self) {
        self.pause.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.paused.load(Ordering::SeqCst) < self.tasks.len() as u64 {
            assert!(Instant::now() < deadline, "the writers did not pause");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn resume(&self) {
        self.paused.store(0, Ordering::SeqCst);
        self.pause.store(false, Ordering::SeqCst);
    }

    async fn stop(self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.pause.store(false, Ordering::SeqCst);
        for task in self.tasks {
            task.await.expect("a writer");
        }
        self.acknowledged.load(Ordering::SeqCst)
    }
}

async fn writer(
    client: Client,
    prefix: String,
    writer: u64,
    stop: Arc<AtomicBool>,
    pause: Arc<AtomicBool>,
    paused: Arc<AtomicU64>,
    acknowledged: Arc<AtomicU64>,
) {
    let mut kv = client.kv_client();
    let mut sequence = writer << 40;
    let mut step = 0u64;
    while !stop.load(Ordering::SeqCst) {
        if pause.load(Ordering::SeqCst) {
            paused.fetch_add(1, Ordering::SeqCst);
            while pause.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            continue;
        }
        step += 1;
        sequence += 1;
        let group = step / 50 % 8;
        let key = |i: u64| format!("{prefix}g{group}/{i:03}");
        let done = match step % 10 {
            // Three keys in one transaction (one revision).
            0 => {
                let ops = (0..3)
                    .map(|i| TxnOp::put(key((step + i) % 40), (sequence + i).to_string(), None))
                    .collect::<Vec<_>>();
                sequence += 3;
                bounded_write(kv.txn(Txn::new().and_then(ops)))
                    .await
                    .is_some()
            }
            // A prefix delete of a whole group, now and then.
            5 if step % 200 == 5 => bounded_write(kv.delete(
                format!("{prefix}g{}/", (group + 3) % 8),
                Some(DeleteOptions::new().with_prefix()),
            ))
            .await
            .is_some(),
            3 | 7 => bounded_write(kv.delete(key(step % 40), None))
                .await
                .is_some(),
            _ => bounded_write(kv.put(key(step % 40), sequence.to_string(), None))
                .await
                .is_some(),
        };
        if done {
            acknowledged.fetch_add(1, Ordering::Relaxed);
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Put-then-consistent-read probes while faults happen: how many read a
/// stale value, and how many could not get a consistent read at all.
#[derive(Debug, Default)]
struct Probes {
    done: AtomicU64,
    /// Consistent reads whose store differed from etcd at the store's own
    /// revision, or whose store had not reached the probe's write.
    stale: std::sync::Mutex<Vec<String>>,
    /// Consistent reads that found a later value than the probe's: a put
    /// the probe abandoned on a hung member, committed after its next one
    /// (the store held etcd's value at the store's revision).
    overtaken: AtomicU64,
    /// Consistent reads that differed from the probe's value and could not
    /// be compared with etcd at the store's revision (compacted, or no
    /// member answered).
    unchecked: AtomicU64,
    failed: AtomicU64,
}

/// Probes under the writers' pause: the checks see no change.
async fn probe(
    client: Client,
    source: EtcdSource<u64>,
    harness_handle: larder::reflector::ReflectorHandle,
    store: larder::reflector::StoreReader<String, u64>,
    writers: (Arc<AtomicBool>, Arc<AtomicBool>, Arc<AtomicU64>),
    probes: Arc<Probes>,
) {
    let (stop, pause, paused) = writers;
    let mut kv = client.kv_client();
    let mut value = 0u64;
    while !stop.load(Ordering::SeqCst) {
        if pause.load(Ordering::SeqCst) {
            paused.fetch_add(1, Ordering::SeqCst);
            while pause.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            continue;
        }
        value += 1;
        let Some(put) = bounded_write(kv.put("/f/probe", value.to_string(), None)).await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let written = revision_of(put.header());
        match source
            .wait_consistent(&harness_handle, Duration::from_secs(10))
            .await
        {
            Ok(_) => {
                probes.done.fetch_add(1, Ordering::Relaxed);
                // The store and its revision at one cut.
                let (content, at) = store.to_vec_with_revision();
                let held = content
                    .iter()
                    .find(|(key, _)| key == "/f/probe")
                    .map(|(_, held)| **held);
                if held != Some(value) {
                    let options = GetOptions::new().with_revision(at as i64);
                    match bounded_write(kv.get("/f/probe", Some(options))).await {
                        Some(then) => {
                            let etcd = then
                                .kvs()
                                .first()
                                .map(|pair| pair.value_str().unwrap().parse::<u64>().unwrap());
                            if at >= written && etcd == held {
                                probes.overtaken.fetch_add(1, Ordering::Relaxed);
                            } else {
                                probes.stale.lock().unwrap().push(format!(
                                    "wrote {value} at {written}; the store at {at} held \
                                     {held:?}, etcd at {at} {etcd:?}"
                                ));
                            }
                        }
                        None => {
                            probes.unchecked.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            Err(_) => {
                probes.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Takes `member` down with `down` for `held`, then brings it back with
/// `up`.
async fn outage(
    cluster: &mut EtcdCluster,
    member: usize,
    down: fn(&mut EtcdCluster, usize),
    held: Duration,
    up: fn(&mut EtcdCluster, usize),
) {
    tokio::task::block_in_place(|| down(cluster, member));
    tokio::time::sleep(held).await;
    tokio::task::block_in_place(|| up(cluster, member));
}

/// Pauses the writers, checks the mirror against etcd, resumes them.
async fn check(name: &str, harness: &Harness, writers: &Writers, source: &EtcdSource<u64>) {
    writers.pause().await;
    let client = source.client().clone();
    let revision = harness.assert_converged(source, &client).await;
    println!(
        "after {name}: store, indexes and replica equal etcd at revision {revision} \
         ({} keys)",
        harness.store.len()
    );
    writers.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_writers_through_the_fault_sequence_leave_no_mismatch() {
    let mut cluster = tokio::task::block_in_place(EtcdCluster::start);
    bounded(
        "four_writers_through_the_fault_sequence_leave_no_mismatch",
        LIMIT,
        async {
            let source = source(&cluster, "/f/").await;
            // The writers abandon requests stuck on a dead or hung member,
            // and etcd may commit such a write after the writer's later
            // ones: values need not grow along etcd's history here.
            let harness = start_with(source.clone(), fast_backoff(), false);
            harness.handle.wait_until_synced().await.unwrap();
            let client = cluster.client_on(&[0, 1, 2]).await;
            let mut writers = Writers::start(&client, "/f/");
            let probes = Arc::new(Probes::default());
            let prober = tokio::spawn(probe(
                client.clone(),
                source.clone(),
                harness.handle.clone(),
                harness.store.clone(),
                (
                    Arc::clone(&writers.stop),
                    Arc::clone(&writers.pause),
                    Arc::clone(&writers.paused),
                ),
                Arc::clone(&probes),
            ));
            writers.tasks.push(prober);
            tokio::time::sleep(Duration::from_secs(1)).await;
            check("a quiet start", &harness, &writers, &source).await;

            // The leader SIGKILLed, then restarted.
            let leader = tokio::task::block_in_place(|| cluster.leader());
            let (kill, restart) = (EtcdCluster::kill, EtcdCluster::restart);
            outage(&mut cluster, leader, kill, Duration::from_secs(1), restart).await;
            let name = "the leader's SIGKILL and restart";
            check(name, &harness, &writers, &source).await;

            // The member serving the watch SIGSTOPped for 5 s.
            let serving = tokio::task::block_in_place(|| cluster.watch_member());
            let (freeze, thaw) = (EtcdCluster::freeze, EtcdCluster::thaw);
            outage(&mut cluster, serving, freeze, Duration::from_secs(5), thaw).await;
            let name = "a 5 s SIGSTOP of the watch's member";
            check(name, &harness, &writers, &source).await;

            // The member serving the watch SIGKILLed; etcd compacts while it
            // is down; it restarts.
            let serving = tokio::task::block_in_place(|| cluster.watch_member());
            tokio::task::block_in_place(|| cluster.kill(serving));
            let others: Vec<usize> = (0..3).filter(|&m| m != serving).collect();
            let mut other = cluster.client_on(&others).await;
            // When the killed member led, the others elect a leader first.
            let began = Instant::now();
            loop {
                let compacted = match bounded_write(other.get("/", None)).await {
                    Some(now) => bounded_write(other.compact(
                        revision_of(now.header()) as i64,
                        Some(CompactionOptions::new().with_physical()),
                    ))
                    .await
                    .is_some(),
                    None => false,
                };
                if compacted {
                    break;
                }
                assert!(began.elapsed() < Duration::from_secs(20), "no compaction");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            tokio::task::block_in_place(|| cluster.restart(serving));
            check(
                "the watch member's SIGKILL with a compaction",
                &harness,
                &writers,
                &source,
            )
            .await;

            // Every member SIGKILLed, then all restarted.
            tokio::task::block_in_place(|| cluster.restart_all());
            check("the SIGKILL of all three", &harness, &writers, &source).await;

            let acknowledged = writers.stop().await;
            check_final(&harness, &source).await;
            let stats = harness.handle.stats();
            let stale = probes.stale.lock().unwrap().clone();
            let (done, overtaken, unchecked, failed) = (
                probes.done.load(Ordering::Relaxed),
                probes.overtaken.load(Ordering::Relaxed),
                probes.unchecked.load(Ordering::Relaxed),
                probes.failed.load(Ordering::Relaxed),
            );
            println!(
                "{acknowledged} acknowledged writes; probes: {done} consistent reads, {} \
                 stale, {overtaken} overtaken by an abandoned put, {unchecked} unchecked, \
                 {failed} without a consistent read; {stats:?}",
                stale.len()
            );
            assert!(acknowledged > 300, "the writers wrote only {acknowledged}");
            assert!(done > 20, "only {done} consistent reads succeeded");
            // A stale consistent read is possible only where etcd (before
            // 3.4.25) sent a progress notification ahead of an event, and
            // then it is counted (also when the watch broke before the
            // event: the reflector resumes after its last change).
            assert!(
                stale.is_empty() || stats.progress_ahead_of_events > 0,
                "stale consistent reads with no progress notification ahead of an event: \
                 {stale:?}; {stats:?}"
            );
            harness.stop().await;
        },
    )
    .await;
}

/// The last check, with the writers stopped.
async fn check_final(harness: &Harness, source: &EtcdSource<u64>) {
    let client = source.client().clone();
    harness.assert_converged(source, &client).await;
}

/// Waits (bounded) until the store has reached `revision`; returns when.
async fn reached(harness: &Harness, revision: Revision, limit: Duration) -> Instant {
    let deadline = Instant::now() + limit;
    while harness.store.revision() < revision {
        assert!(
            Instant::now() < deadline,
            "the store stayed at {}, short of {revision}, for {limit:?}",
            harness.store.revision()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Instant::now()
}

/// Starts a mirror of `source`, whose endpoints are the members in
/// `order`, checks that its watch is on the first, and opens a client on
/// the last: the mirror's harness, the watch's member and the client.
async fn mirror_watching_first(
    cluster: &EtcdCluster,
    source: &EtcdSource<u64>,
    order: [usize; 3],
) -> (Harness, usize, Client) {
    let harness = start(source.clone(), fast_backoff());
    harness.handle.wait_until_synced().await.unwrap();
    let serving = tokio::task::block_in_place(|| cluster.watch_member());
    assert_eq!(
        serving, order[0],
        "the watch is on the first endpoint's member"
    );
    (harness, serving, cluster.client_on(&[order[2]]).await)
}

/// Puts `1` under `key` until a put succeeds (bounded: 20 s after `since`;
/// when the member that went down led, the others elect a leader first);
/// returns its revision.
async fn first_write(client: &mut Client, key: &str, since: Instant) -> Revision {
    loop {
        if let Some(put) = bounded_write(client.put(key, "1", None)).await {
            return revision_of(put.header());
        }
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "no write succeeded"
        );
    }
}

/// The hung-member test's watch deadline: short enough that the
/// connection's keep-alive (2 s + 2 s) cannot be what recovers the mirror
/// within it + 1 s.
const SHORT_DEADLINE: Duration = Duration::from_millis(1_500);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_watch_member_is_left_within_the_deadline_plus_one_second() {
    let mut cluster = tokio::task::block_in_place(EtcdCluster::start);
    bounded(
        "a_hung_watch_member_is_left_within_the_deadline_plus_one_second",
        LIMIT,
        async {
            let order = tokio::task::block_in_place(|| followers_first(&cluster));
            let source = builder_on(&cluster, &order, "/h/")
                .await
                .watch_deadline(SHORT_DEADLINE)
                .build()
                .expect("a valid configuration");
            let (harness, serving, mut other) =
                mirror_watching_first(&cluster, &source, order).await;
            tokio::task::block_in_place(|| cluster.freeze(serving));
            let frozen = Instant::now();
            let revision = first_write(&mut other, "/h/k", frozen).await;
            let at = reached(&harness, revision, Duration::from_secs(30)).await;
            let took = at - frozen;
            println!(
                "a hung watch member: the store reached etcd's revision {took:?} after the SIGSTOP"
            );
            assert!(
                took <= SHORT_DEADLINE + Duration::from_secs(1),
                "the mirror took {took:?} (deadline {SHORT_DEADLINE:?} + 1 s)"
            );
            let moved = tokio::task::block_in_place(|| cluster.watch_member_other_than(serving));
            assert_ne!(moved, serving);
            tokio::task::block_in_place(|| cluster.thaw(serving));
            harness.stop().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_watch_member_and_a_compaction_are_recovered_within_two_seconds() {
    let mut cluster = tokio::task::block_in_place(EtcdCluster::start);
    bounded(
        "a_dead_watch_member_and_a_compaction_are_recovered_within_two_seconds",
        LIMIT,
        async {
            let order = tokio::task::block_in_place(|| followers_first(&cluster));
            let source = source_on(&cluster, &order, "/d/").await;
            let (harness, serving, mut other) =
                mirror_watching_first(&cluster, &source, order).await;
            tokio::task::block_in_place(|| cluster.kill(serving));
            let died = Instant::now();
            let revision = first_write(&mut other, "/d/k", died).await;
            other.compact(revision as i64, None).await.expect("compact");
            let at = reached(&harness, revision, Duration::from_secs(30)).await;
            let took = at - died;
            let stats = harness.handle.stats();
            println!(
                "a dead watch member and a compaction: the store reached etcd's revision {took:?} \
                 after the SIGKILL ({} relists)",
                stats.relists
            );
            assert!(took <= Duration::from_secs(2), "the mirror took {took:?}");
            assert_eq!(harness.store.get("/d/k").as_deref(), Some(&1));
            harness.stop().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_revision_read_and_watch_fail_over_from_a_dead_member_at_once() {
    let mut cluster = tokio::task::block_in_place(EtcdCluster::start);
    bounded(
        "list_revision_read_and_watch_fail_over_from_a_dead_member_at_once",
        LIMIT,
        async {
            // Followers first: a follower's death costs no election, so
            // the requests' own failover is what is timed.
            let [first, second, leader] = tokio::task::block_in_place(|| followers_first(&cluster));
            let source = source_on(&cluster, &[first, second, leader], "/o/").await;
            let mut client = cluster.client_on(&[second, leader]).await;
            client.put("/o/a", "1", None).await.unwrap();
            // Every request has gone to the first member so far.
            let listed = source.list().await.expect("a list");
            assert_eq!(listed.items.len(), 1);
            tokio::task::block_in_place(|| cluster.kill(first));
            // Each request after the death reaches a live member at once:
            // far below the 3 s request timeout and any backoff.
            let began = Instant::now();
            let listed = source.list().await.expect("a list after the death");
            let list_took = began.elapsed();
            let began = Instant::now();
            let now = source
                .current_revision()
                .await
                .expect("a revision read after the death");
            let read_took = began.elapsed();
            let began = Instant::now();
            let watch = source
                .watch(listed.revision)
                .await
                .expect("a watch after the death");
            let watch_took = began.elapsed();
            println!(
                "after a member's death: list {list_took:?}, revision read {read_took:?}, \
                 watch {watch_took:?}"
            );
            assert!(now >= listed.revision);
            for (what, took) in [
                ("list", list_took),
                ("revision read", read_took),
                ("watch", watch_took),
            ] {
                assert!(
                    took < Duration::from_millis(500),
                    "the {what} took {took:?} after the member's death"
                );
            }
            drop(watch);
            // The first member back, the second (now asked first) dead:
            // the requests go on to the leader at once.
            tokio::task::block_in_place(|| cluster.restart(first));
            tokio::task::block_in_place(|| cluster.kill(second));
            let began = Instant::now();
            source.list().await.expect("a list after the second death");
            source.current_revision().await.expect("a revision read");
            let took = began.elapsed();
            assert!(took < Duration::from_millis(500), "{took:?}");
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_put_then_consistent_read_trials_on_a_cluster_are_never_stale() {
    let cluster = tokio::task::block_in_place(EtcdCluster::start);
    bounded(
        "a_thousand_put_then_consistent_read_trials_on_a_cluster_are_never_stale",
        LIMIT,
        async {
            let source = source(&cluster, "/cr/").await;
            let harness = start(source.clone(), fast_backoff());
            harness.handle.wait_until_synced().await.unwrap();
            let mut client = cluster.client_on(&[0, 1, 2]).await;
            let (stale, latencies) = consistent_read_trials(&mut client, &source, &harness).await;
            println!(
                "1,000 consistent reads on a 3-member cluster: p50 {:?}, p99 {:?}, {} stale",
                latencies[500],
                latencies[990],
                stale.len()
            );
            assert!(
                stale.is_empty(),
                "stale reads (trial, value read): {stale:?}"
            );
            harness.stop().await;
        },
    )
    .await;
}
