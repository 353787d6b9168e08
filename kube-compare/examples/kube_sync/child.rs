//! One contender's run, in a process of its own (so that its resident
//! memory is its own): a kube client for the test server, one reflector
//! over every pod, driven until its store is ready, then one line on
//! stdout with the time taken, the memory resident and the objects held.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::{reflector, watcher};
use larder::IndexedStore;
use larder::reflector::{KubeSource, Reflector, index_by_namespace, index_by_pod_node};

/// How long a contender may take to sync before the run fails.
const SYNC_LIMIT: Duration = Duration::from_secs(600);

/// The contenders, in the table's order.
pub const CONTENDERS: [Contender; 3] = [
    Contender::KubeRuntime,
    Contender::Larder,
    Contender::LarderIndexed,
];

/// A reflector under measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contender {
    /// kube-runtime: `reflector(writer, watcher(api, Config::default()))`
    /// until `Store::wait_until_ready`.
    KubeRuntime,
    /// larder: a `Reflector` over a `KubeSource`, no index, until synced.
    Larder,
    /// larder with a namespace and a node index.
    LarderIndexed,
}

impl Contender {
    pub fn name(self) -> &'static str {
        match self {
            Contender::KubeRuntime => "kube-runtime",
            Contender::Larder => "larder",
            Contender::LarderIndexed => "larder_indexed",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        CONTENDERS.into_iter().find(|c| c.name() == name)
    }
}

/// What a child reports.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// From building the client to a ready store.
    pub sync: Duration,
    /// VmRSS once the client is built, before the first request (KiB).
    pub rss_start_kib: u64,
    /// VmRSS once the store is ready (KiB).
    pub rss_kib: u64,
    /// VmHWM, the peak resident memory, once the store is ready (KiB).
    pub peak_kib: u64,
    /// Objects the store holds once ready.
    pub objects: usize,
}

const RESULT: &str = "kube_sync_result";

impl Measured {
    /// The line a child prints.
    fn line(&self) -> String {
        format!(
            "{RESULT} {} {} {} {} {}",
            self.sync.as_nanos(),
            self.rss_start_kib,
            self.rss_kib,
            self.peak_kib,
            self.objects
        )
    }

    /// Reads the line a child printed, among its other output.
    pub fn parse(output: &str) -> Option<Self> {
        let line = output.lines().find(|line| line.starts_with(RESULT))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|field| field.parse().ok())
            .collect::<Option<_>>()?;
        let [nanos, rss_start_kib, rss_kib, peak_kib, objects] = fields[..] else {
            return None;
        };
        Some(Measured {
            sync: Duration::from_nanos(nanos),
            rss_start_kib,
            rss_kib,
            peak_kib,
            objects: objects as usize,
        })
    }
}

/// A field of /proc/self/status in KiB (`VmRSS`, `VmHWM`).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Runs `contender` against the server at `url`, expecting `expect`
/// pods, and prints its line; exits non-zero on a failure.
pub fn run(contender: Contender, url: &str, expect: usize) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("a tokio runtime: {error}"))?;
    let measured = runtime.block_on(async {
        tokio::time::timeout(SYNC_LIMIT, sync(contender, url))
            .await
            .map_err(|_| format!("{} not synced within {SYNC_LIMIT:?}", contender.name()))?
    })?;
    if measured.objects != expect {
        return Err(format!(
            "{} holds {} objects, {expect} expected",
            contender.name(),
            measured.objects
        ));
    }
    println!("{}", measured.line());
    // The runtime (and the watch it still runs) ends with the process.
    std::process::exit(0);
}

async fn sync(contender: Contender, url: &str) -> Result<Measured, String> {
    let started = Instant::now();
    let uri = url.parse().map_err(|error| format!("{url}: {error}"))?;
    let client = kube::Client::try_from(kube::Config::new(uri))
        .map_err(|error| format!("a kube client: {error}"))?;
    let rss_start_kib = status_kib("VmRSS");
    let api = Api::<Pod>::all(client);
    // Each branch returns its store with the figures, so that the store
    // is alive (and resident) when the memory is read.
    let (sync, objects, keep): (Duration, usize, Box<dyn std::any::Any>) = match contender {
        Contender::KubeRuntime => {
            let (store, writer) = reflector::store();
            let stream = reflector(writer, watcher(api, watcher::Config::default()));
            tokio::spawn(stream.for_each(|event| {
                if let Err(error) = event {
                    eprintln!("kube-runtime watcher: {error}");
                }
                std::future::ready(())
            }));
            store
                .wait_until_ready()
                .await
                .map_err(|error| format!("kube-runtime: {error}"))?;
            (started.elapsed(), store.len(), Box::new(store))
        }
        Contender::Larder | Contender::LarderIndexed => {
            let source = KubeSource::builder(api)
                // kube-runtime's watcher::Config::default() pages by 500.
                .page_size(500)
                .build()
                .map_err(|error| error.to_string())?;
            let store = if contender == Contender::LarderIndexed {
                IndexedStore::<String, Arc<Pod>>::builder()
                    .index("namespace", index_by_namespace)
                    .index("node", index_by_pod_node)
                    .build()
                    .map_err(|error| error.to_string())?
            } else {
                IndexedStore::new()
            };
            let reflector = Reflector::builder(source, store)
                .on_error(|error| eprintln!("larder reflector: {error}"))
                .build()
                .map_err(|error| error.to_string())?;
            let reader = reflector.reader();
            let handle = reflector.handle();
            tokio::spawn(reflector.run());
            handle
                .wait_until_synced()
                .await
                .map_err(|error| format!("larder: {error}"))?;
            (started.elapsed(), reader.len(), Box::new((reader, handle)))
        }
    };
    let measured = Measured {
        sync,
        rss_start_kib,
        rss_kib: status_kib("VmRSS"),
        peak_kib: status_kib("VmHWM"),
        objects,
    };
    drop(keep);
    Ok(measured)
}
