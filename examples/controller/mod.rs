//! The controller of `examples/controller.rs`, shared with the test that
//! runs it against a real etcd (`tests/etcd_controller.rs`), which includes
//! this file with `#[path]`.
//!
//! The picture (client-go's controller): a reflector mirrors the spec
//! prefix into a store; a handler added through the reflector's handler
//! registry queues the name of every spec that changed; workers take names
//! from the work queue and reconcile each into its status key. A failed
//! reconcile is retried later (`add_rate_limited`), a successful one clears
//! the key's failures (`forget`); the queue never gives a name to two
//! workers at once, and a change that comes while a name is reconciled
//! queues it again for after.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions, KvClient};
use larder::reflector::{
    Backoff, EtcdSource, Handler, HandlerRegistration, Reflector, ReflectorHandle, StoreReader,
    WaitError,
};
use larder::{ExponentialBackoff, IndexedStore, WorkQueue};
use tokio::task::JoinHandle;

/// Where the specs live: `<SPEC_PREFIX><name>` holds any UTF-8 value.
pub const SPEC_PREFIX: &str = "/larder-controller/spec/";
/// Where the controller writes each spec's status: `<STATUS_PREFIX><name>`.
pub const STATUS_PREFIX: &str = "/larder-controller/status/";
/// The limit on each etcd request of a reconcile: past it, the reconcile
/// fails and is retried.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// The status a spec reconciles to.
pub fn status_for(spec: &str) -> String {
    format!("reconciled: {spec}")
}

/// The counters a controller keeps.
#[derive(Debug, Default)]
pub struct Counters {
    /// Reconciles that succeeded (a status written or deleted).
    pub reconciled: AtomicU64,
    /// Reconciles that failed (and were queued again, rate limited).
    pub failed: AtomicU64,
    /// Reconciles that found their name already being reconciled by
    /// another worker: the work queue promises this never happens.
    pub overlaps: AtomicU64,
}

/// The names being reconciled right now, to check the queue's promise of
/// one worker per key.
#[derive(Debug, Default)]
struct InFlight {
    names: Mutex<HashSet<String>>,
    /// The first names found in flight twice.
    overlapping: Mutex<Vec<String>>,
}

/// A name marked in flight until dropped.
struct InFlightGuard<'a> {
    in_flight: &'a InFlight,
    name: String,
    /// Whether this guard added the mark (and so removes it).
    marked: bool,
}

impl InFlight {
    fn enter<'a>(&'a self, name: &str, counters: &Counters) -> InFlightGuard<'a> {
        let marked = self.names.lock().unwrap().insert(name.to_owned());
        if !marked {
            counters.overlaps.fetch_add(1, Ordering::SeqCst);
            let mut overlapping = self.overlapping.lock().unwrap();
            if overlapping.len() < 10 {
                overlapping.push(name.to_owned());
            }
        }
        InFlightGuard {
            in_flight: self,
            name: name.to_owned(),
            marked,
        }
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        if self.marked {
            self.in_flight.names.lock().unwrap().remove(&self.name);
        }
    }
}

/// The handler: queues the name of every spec that changed (client-go's
/// `ResourceEventHandlerFuncs` calling `queue.Add(key)`). It runs on its
/// own delivery task and only adds to the queue, so its buffer stays short.
struct Enqueue(Arc<WorkQueue<String>>);

impl Enqueue {
    fn enqueue(&self, key: &str) {
        if let Some(name) = key.strip_prefix(SPEC_PREFIX) {
            self.0.add(name.to_owned());
        }
    }
}

impl Handler<String, String> for Enqueue {
    fn on_add(&self, key: &String, _new: &Arc<String>) {
        self.enqueue(key);
    }
    fn on_update(&self, key: &String, _old: &Arc<String>, _new: &Arc<String>) {
        self.enqueue(key);
    }
    fn on_delete(&self, key: &String, _last_known: &Arc<String>) {
        self.enqueue(key);
    }
}

/// What the workers share.
struct Shared {
    store: StoreReader<String, String>,
    queue: Arc<WorkQueue<String>>,
    counters: Arc<Counters>,
    in_flight: InFlight,
}

impl Shared {
    /// One worker (client-go's `runWorker` / `processNextWorkItem`).
    async fn work(self: Arc<Self>, mut kv: KvClient) {
        while let Some(name) = self.queue.get_async().await {
            match self.reconcile(&mut kv, &name).await {
                Ok(()) => {
                    self.counters.reconciled.fetch_add(1, Ordering::Relaxed);
                    self.queue.forget(&name);
                }
                Err(_) => {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    self.queue.add_rate_limited(name.clone());
                }
            }
            self.queue.done(&name);
        }
    }

    /// Makes `name`'s status agree with its spec as the store holds it now:
    /// written if the spec exists, deleted if not.
    async fn reconcile(&self, kv: &mut KvClient, name: &str) -> Result<(), String> {
        let _in_flight = self.in_flight.enter(name, &self.counters);
        let spec = self.store.get(format!("{SPEC_PREFIX}{name}").as_str());
        let status_key = format!("{STATUS_PREFIX}{name}");
        let request = async {
            match spec {
                Some(spec) => kv.put(status_key, status_for(&spec), None).await.map(drop),
                None => kv.delete(status_key, None).await.map(drop),
            }
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, request).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(format!("{name}: {error}")),
            Err(_) => Err(format!("{name}: no answer within {REQUEST_TIMEOUT:?}")),
        }
    }
}

/// A running controller: its reflector, handler, queue and workers.
pub struct Controller {
    client: Client,
    handle: ReflectorHandle,
    shared: Arc<Shared>,
    registration: HandlerRegistration<String, String>,
    tasks: Vec<JoinHandle<()>>,
}

impl Controller {
    /// Starts the reflector, the handler and `workers` workers, and waits
    /// until the handler has been given the specs etcd held (client-go's
    /// `WaitForCacheSync`). Then queues the name of every status too, so a
    /// status whose spec was deleted while no controller ran is removed.
    pub async fn start(
        client: Client,
        workers: usize,
    ) -> Result<Controller, Box<dyn std::error::Error>> {
        let source = EtcdSource::builder(client.clone(), SPEC_PREFIX, |bytes: &[u8]| {
            std::str::from_utf8(bytes).map(str::to_owned)
        })
        .request_timeout(REQUEST_TIMEOUT)
        .build()?;
        let store = IndexedStore::<String, Arc<String>>::new();
        let reflector = Reflector::builder(source, store)
            .parse_invalid_key(|key| Some(key.to_owned()))
            // Watch again within a second or two of etcd coming back.
            .backoff(Backoff::new(
                Duration::from_millis(100),
                Duration::from_secs(2),
            ))
            .on_error(|error| eprintln!("reflector: {error}"))
            .build()?;
        let store = reflector.reader();
        let (handle, registry) = (reflector.handle(), reflector.handler_registry());
        // Per-key backoff from 5 ms to 1 s and no overall token bucket:
        // client-go's default bucket (10 retries a second) would space out
        // the retries of thousands of keys that failed in one etcd outage
        // over minutes.
        let queue = Arc::new(
            WorkQueue::builder()
                .rate_limiter(ExponentialBackoff::new(
                    Duration::from_millis(5),
                    Duration::from_secs(1),
                ))
                .build()?,
        );
        let (registration, delivery) = registry.add(Enqueue(Arc::clone(&queue)));
        let shared = Arc::new(Shared {
            store,
            queue,
            counters: Arc::new(Counters::default()),
            in_flight: InFlight::default(),
        });
        let mut tasks = vec![tokio::spawn(reflector.run()), tokio::spawn(delivery)];
        for _ in 0..workers {
            tasks.push(tokio::spawn(Arc::clone(&shared).work(client.kv_client())));
        }
        let controller = Controller {
            client,
            handle,
            shared,
            registration,
            tasks,
        };
        controller
            .wait_until_synced(Duration::from_secs(30))
            .await?;
        let statuses = controller
            .client
            .kv_client()
            .get(
                STATUS_PREFIX,
                Some(GetOptions::new().with_prefix().with_keys_only()),
            )
            .await?;
        for pair in statuses.kvs() {
            if let Some(name) = pair.key_str()?.strip_prefix(STATUS_PREFIX) {
                controller.shared.queue.add(name.to_owned());
            }
        }
        Ok(controller)
    }

    /// Waits until the store holds etcd's specs and the handler has been
    /// given them.
    async fn wait_until_synced(&self, limit: Duration) -> Result<(), WaitError> {
        self.handle.wait_until_synced_timeout(limit).await?;
        let deadline = Instant::now() + limit;
        while !self.registration.has_synced() {
            if Instant::now() > deadline {
                return Err(WaitError::TimedOut);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// The controller's counters.
    pub fn counters(&self) -> &Counters {
        &self.shared.counters
    }

    /// The names found being reconciled by two workers at once (at most
    /// ten).
    pub fn overlapping(&self) -> Vec<String> {
        self.shared.in_flight.overlapping.lock().unwrap().clone()
    }

    /// The reflector's handle (statistics, revision).
    pub fn handle(&self) -> &ReflectorHandle {
        &self.handle
    }

    /// The work queue.
    pub fn queue(&self) -> &WorkQueue<String> {
        &self.shared.queue
    }

    /// Waits until every status in etcd matches its spec and no status is
    /// left without one; returns the number of specs. `Err` lists the
    /// mismatches of the last look if `limit` passes first.
    pub async fn wait_converged(&self, limit: Duration) -> Result<usize, String> {
        let deadline = Instant::now() + limit;
        loop {
            let mismatches = match mismatches(&self.client).await {
                Ok(result) => result,
                Err(error) => Err(vec![format!("reading etcd: {error}")]),
            };
            match mismatches {
                Ok(specs) => return Ok(specs),
                Err(found) if Instant::now() > deadline => {
                    return Err(format!(
                        "not converged within {limit:?}; for example: {:?}",
                        &found[..found.len().min(10)]
                    ));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Stops the workers (each finishes its reconcile and the keys already
    /// queued), the reflector and the handler's delivery, and waits for
    /// them.
    pub async fn stop(self) {
        self.shared.queue.shut_down();
        self.handle.stop();
        for task in self.tasks {
            task.await.expect("a controller task panicked");
        }
    }
}

/// Whether etcd's statuses match its specs: `Ok(number of specs)`, or
/// `Err(what differs)`.
pub async fn mismatches(client: &Client) -> Result<Result<usize, Vec<String>>, etcd_client::Error> {
    let mut kv = client.kv_client();
    let specs = read_prefix(&mut kv, SPEC_PREFIX).await?;
    let statuses = read_prefix(&mut kv, STATUS_PREFIX).await?;
    let mut found = Vec::new();
    for (name, spec) in &specs {
        let expected = status_for(spec);
        match statuses.get(name) {
            Some(status) if *status == expected => {}
            status => found.push(format!("{name}: status {status:?}, spec {spec:?}")),
        }
    }
    for name in statuses.keys().filter(|name| !specs.contains_key(*name)) {
        found.push(format!("{name}: a status without a spec"));
    }
    Ok(if found.is_empty() {
        Ok(specs.len())
    } else {
        Err(found)
    })
}

/// The names and values under `prefix`, read at one revision.
async fn read_prefix(
    kv: &mut KvClient,
    prefix: &str,
) -> Result<BTreeMap<String, String>, etcd_client::Error> {
    let response = kv
        .get(prefix, Some(GetOptions::new().with_prefix()))
        .await?;
    let mut content = BTreeMap::new();
    for pair in response.kvs() {
        let name = pair.key_str()?.trim_start_matches(prefix).to_owned();
        content.insert(name, pair.value_str()?.to_owned());
    }
    Ok(content)
}
