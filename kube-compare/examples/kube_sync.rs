//! A sync of many pods through kube's client, list and watch until the
//! store is ready: kube-runtime's reflector beside larder's, with and
//! without indexes.
//!
//! ```text
//! cargo run --release -p kube-compare --features sync --example kube_sync
//! cargo run -p kube-compare --features sync --example kube_sync -- --quick
//! ```
//!
//! It starts an etcd on free loopback ports (or uses the one at
//! `--etcd URL`, under a prefix of its own that it deletes at the end),
//! the Kubernetes list/watch test server of larder's tests
//! (`tests/common/kube_server/`, a test fixture, not an API server) on a
//! loopback port over it, and writes `--pods N` pods (default 100,000,
//! `kube_compare::pods`) straight into etcd in the server's layout. Then,
//! in `--rounds R` interleaved rounds (default 5; the order rotates each
//! round), it runs each contender in a fresh process of its own (this
//! program again, with `--child`), so that its resident memory is its own:
//!
//! - `kube-runtime`: `reflector(writer, watcher(api, watcher::Config::default()))`
//!   until `Store::wait_until_ready()` (pages of 500, the watcher's default);
//! - `larder`: a `Reflector` over a `KubeSource` (pages of 500), no index,
//!   until synced;
//! - `larder_indexed`: the same with a namespace and a node index.
//!
//! Each reports the time from building its client to a ready store, its
//! resident memory (VmRSS) then and its object count (checked). The table
//! gives per contender the median and range over the rounds, the median of
//! the per-round ratios against kube-runtime with their range, and the
//! goals' verdicts. `--quick` (2,000 pods, one round) is a smoke run.

#[path = "../../tests/common/etcd.rs"]
mod etcd;
#[path = "../../tests/common/kube_server/mod.rs"]
mod kube_server;

#[path = "kube_sync/child.rs"]
mod child;
#[path = "kube_sync/report.rs"]
mod report;
#[path = "kube_sync/seed.rs"]
mod seed;

use std::process::{Command, Stdio};
use std::time::Instant;

use child::{CONTENDERS, Contender, Measured};
use kube_compare::pods::PODS;

/// What the command line asks.
struct Args {
    pods: usize,
    rounds: usize,
    etcd: Option<String>,
}

const USAGE: &str = "usage: kube_sync [--pods N] [--rounds R] [--quick] [--etcd URL]";

fn value<T: std::str::FromStr>(flag: &str, value: Option<String>) -> T {
    value
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| fail(&format!("{flag} needs a value\n{USAGE}")))
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        pods: PODS,
        rounds: 5,
        etcd: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--child" => {
                // --child NAME URL EXPECTED: one contender's run.
                let name: String = value("--child", args.next());
                let contender = Contender::from_name(&name)
                    .unwrap_or_else(|| fail(&format!("no contender {name}")));
                let url: String = value("--child", args.next());
                let expect = value("--child", args.next());
                if let Err(error) = child::run(contender, &url, expect) {
                    fail(&error);
                }
                return;
            }
            "--pods" => parsed.pods = value(&arg, args.next()),
            "--rounds" => parsed.rounds = value(&arg, args.next()),
            "--etcd" => parsed.etcd = Some(value(&arg, args.next())),
            "--quick" => {
                parsed.pods = 2_000;
                parsed.rounds = 1;
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return;
            }
            _ => fail(&format!("unknown argument {arg}\n{USAGE}")),
        }
    }
    if parsed.pods == 0 || parsed.rounds == 0 {
        fail("--pods and --rounds must be at least 1");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if let Err(error) = runtime.block_on(parent(parsed)) {
        fail(&error);
    }
}

/// Starts etcd and the server, seeds the pods, runs the rounds and prints
/// the table.
async fn parent(args: Args) -> Result<(), String> {
    // Kept alive (and killed when dropped) for the whole run.
    let mut own_etcd = None;
    let endpoint = match &args.etcd {
        Some(url) => url.clone(),
        None => {
            let server = tokio::task::spawn_blocking(etcd::EtcdServer::start)
                .await
                .map_err(|error| format!("starting etcd: {error}"))?;
            let endpoint = server.endpoint();
            own_etcd = Some(server);
            endpoint
        }
    };
    let client = etcd_client::Client::connect([endpoint.as_str()], None)
        .await
        .map_err(|error| format!("connecting to etcd at {endpoint}: {error}"))?;
    let prefix = format!("/larder-kube-sync/{}/", std::process::id());
    let server = kube_server::KubeServer::start(client.clone(), &prefix).await;

    let seeding = Instant::now();
    let bytes = seed::seed(&client, &prefix, args.pods)
        .await
        .map_err(|error| format!("seeding etcd: {error}"))?;
    eprintln!(
        "seeded {} pods ({:.1} MiB of JSON) in {:.1?}; server at {}",
        args.pods,
        bytes as f64 / (1 << 20) as f64,
        seeding.elapsed(),
        server.url()
    );

    let exe = std::env::current_exe().map_err(|error| format!("this program's path: {error}"))?;
    let mut rounds = Vec::new();
    let mut failure = None;
    'rounds: for round in 0..args.rounds {
        let mut figures = Vec::new();
        for at in 0..CONTENDERS.len() {
            let contender = CONTENDERS[(at + round) % CONTENDERS.len()];
            let (exe, url, pods) = (exe.clone(), server.url(), args.pods);
            let output = tokio::task::spawn_blocking(move || {
                Command::new(exe)
                    .args(["--child", contender.name(), &url, &pods.to_string()])
                    .stdin(Stdio::null())
                    .stderr(Stdio::inherit())
                    .output()
            })
            .await
            .map_err(|error| format!("waiting for a child: {error}"))?
            .map_err(|error| format!("starting a child: {error}"))?;
            let text = String::from_utf8_lossy(&output.stdout);
            let Some(measured) = output
                .status
                .success()
                .then(|| Measured::parse(&text))
                .flatten()
            else {
                failure = Some(format!(
                    "{} failed in round {} ({}): {text}",
                    contender.name(),
                    round + 1,
                    output.status
                ));
                break 'rounds;
            };
            eprintln!(
                "round {} {:>14}: {:.3} s, {:.0} MiB, load {}",
                round + 1,
                contender.name(),
                measured.sync.as_secs_f64(),
                measured.rss_kib as f64 / 1024.0,
                loadavg()
            );
            figures.push((contender, measured));
        }
        rounds.push(figures);
    }

    if args.etcd.is_some() {
        seed::clear(&client, &prefix)
            .await
            .map_err(|error| format!("deleting the seeded pods: {error}"))?;
    }
    drop(server);
    drop(own_etcd);
    if let Some(failure) = failure {
        return Err(failure);
    }
    println!("{}", report::table(&rounds, args.pods));
    Ok(())
}

/// /proc/loadavg's first three fields (the 1, 5 and 15 minute loads).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}
