//! The controller of `examples/controller.rs`, shared with the test that
//! runs it against a real etcd (`tests/etcd_controller.rs`), which includes
//! this file with `#[path]`.
//!
//! A `larder::controller::Controller` does client-go's loop: its reflector
//! mirrors the spec prefix into a store, its handler queues the key of every
//! spec that changed, and its workers reconcile each key into its status
//! key, reading the spec's current state from the store. A failed
//! reconcile is retried after a per-key backoff, a successful one clears
//! the key's failures; the queue never gives a key to two workers at once
//! (the `InFlight` set below checks it), and a change that comes while a
//! key is reconciled queues it again for after.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions, KvClient};
use larder::controller::{Action, ControllerHandle, ControllerStats};
use larder::reflector::{Backoff, EtcdSource, Reflector, ReflectorHandle, WaitError};
use larder::{ExponentialBackoff, IndexedStore};
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

/// The keys being reconciled right now, to check the queue's promise of
/// one worker per key.
#[derive(Debug, Default)]
struct InFlight {
    keys: Mutex<HashSet<String>>,
    /// Reconciles that found their key already being reconciled.
    overlaps: AtomicU64,
    /// The first keys found in flight twice.
    overlapping: Mutex<Vec<String>>,
}

/// A key marked in flight until dropped.
struct InFlightGuard<'a> {
    in_flight: &'a InFlight,
    key: String,
    /// Whether this guard added the mark (and so removes it).
    marked: bool,
}

impl InFlight {
    fn enter<'a>(&'a self, key: &str) -> InFlightGuard<'a> {
        let marked = self.keys.lock().unwrap().insert(key.to_owned());
        if !marked {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
            let mut overlapping = self.overlapping.lock().unwrap();
            if overlapping.len() < 10 {
                overlapping.push(key.to_owned());
            }
        }
        InFlightGuard {
            in_flight: self,
            key: key.to_owned(),
            marked,
        }
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        if self.marked {
            self.in_flight.keys.lock().unwrap().remove(&self.key);
        }
    }
}

/// Makes the status of the spec at `key` agree with `spec`, the spec as the
/// store holds it now: written if it exists, deleted if not.
async fn reconcile(
    mut kv: KvClient,
    in_flight: &InFlight,
    key: String,
    spec: Option<Arc<String>>,
) -> Result<Action, String> {
    let _in_flight = in_flight.enter(&key);
    let name = key.strip_prefix(SPEC_PREFIX).unwrap_or(&key);
    let status_key = format!("{STATUS_PREFIX}{name}");
    let request = async {
        match spec {
            Some(spec) => kv.put(status_key, status_for(&spec), None).await.map(drop),
            None => kv.delete(status_key, None).await.map(drop),
        }
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, request).await {
        Ok(Ok(())) => Ok(Action::done()),
        Ok(Err(error)) => Err(format!("{name}: {error}")),
        Err(_) => Err(format!("{name}: no answer within {REQUEST_TIMEOUT:?}")),
    }
}

/// A running controller.
pub struct Controller {
    client: Client,
    handle: ControllerHandle<String>,
    in_flight: Arc<InFlight>,
    running: JoinHandle<()>,
}

impl Controller {
    /// Starts the controller with `workers` workers and waits until its
    /// handler has been given the specs etcd held (client-go's
    /// `WaitForCacheSync`). Then queues the key of every status's spec too,
    /// so a status whose spec was deleted while no controller ran is
    /// removed.
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
        let in_flight = Arc::new(InFlight::default());
        let controller = {
            let (kv, in_flight) = (client.kv_client(), Arc::clone(&in_flight));
            larder::controller::Controller::builder(reflector, move |key, spec| {
                let (kv, in_flight) = (kv.clone(), Arc::clone(&in_flight));
                async move { reconcile(kv, &in_flight, key, spec).await }
            })
        }
        .workers(workers)
        // Per-key backoff from 5 ms to 1 s and no overall token bucket:
        // client-go's default bucket (10 retries a second) would space out
        // the retries of thousands of keys that failed in one etcd outage
        // over minutes.
        .rate_limiter(ExponentialBackoff::new(
            Duration::from_millis(5),
            Duration::from_secs(1),
        ))
        .build()?;
        let handle = controller.handle();
        let controller = Controller {
            client,
            handle,
            in_flight,
            running: tokio::spawn(controller.run()),
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
                controller.handle.enqueue(format!("{SPEC_PREFIX}{name}"));
            }
        }
        Ok(controller)
    }

    /// Waits until the store holds etcd's specs and the handler has been
    /// given them.
    async fn wait_until_synced(&self, limit: Duration) -> Result<(), WaitError> {
        self.handle
            .reflector()
            .wait_until_synced_timeout(limit)
            .await?;
        let deadline = Instant::now() + limit;
        while !self.handle.has_synced() {
            if Instant::now() > deadline {
                return Err(WaitError::TimedOut);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// The controller's counts.
    pub fn stats(&self) -> ControllerStats {
        self.handle.stats()
    }

    /// How many reconciles found their key already being reconciled by
    /// another worker: the work queue promises none.
    pub fn overlaps(&self) -> u64 {
        self.in_flight.overlaps.load(Ordering::SeqCst)
    }

    /// The keys found being reconciled by two workers at once (at most
    /// ten).
    pub fn overlapping(&self) -> Vec<String> {
        self.in_flight.overlapping.lock().unwrap().clone()
    }

    /// The reflector's handle (statistics, revision).
    pub fn handle(&self) -> &ReflectorHandle {
        self.handle.reflector()
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

    /// Stops the controller: the reconciles in flight finish, the reflector
    /// stops; waits for the end.
    pub async fn stop(self) {
        self.handle.shut_down();
        self.running.await.expect("the controller panicked");
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
