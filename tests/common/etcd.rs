//! A real etcd server for the tests: one `etcd` process on free loopback
//! ports (client and peer) with its own temporary data directory, stopped
//! (SIGKILL) and its directory removed when the value is dropped, also when
//! the test panics. It can be killed mid-test and restarted on the same data
//! directory and ports, and frozen (SIGSTOP) and thawed (SIGCONT). A
//! three-member cluster of these is in etcd_cluster.rs.
//!
//! The binary is `$ETCD_BIN`, else `etcd` on `PATH`, else `/usr/bin/etcd`.
//! A missing binary fails the test with a message saying how to install it.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a fresh or restarted etcd may take to answer `/health`.
const START_LIMIT: Duration = Duration::from_secs(30);

/// A running (or killed) etcd server owned by one test.
#[derive(Debug)]
pub struct EtcdServer {
    binary: PathBuf,
    dir: PathBuf,
    name: String,
    client_port: u16,
    peer_port: u16,
    /// `--initial-cluster`; this member alone when `None`.
    initial_cluster: Option<String>,
    /// `None`: etcd's default (no server-side progress notifications
    /// worth the name: every 10 minutes).
    progress_interval: Option<Duration>,
    child: Option<Child>,
    /// SIGSTOPped and not yet SIGCONTinued.
    frozen: bool,
}

/// Options for [`EtcdServer::start_with`].
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// etcd's `--experimental-watch-progress-notify-interval`: how often a
    /// quiet watch that asked for progress notifications gets one.
    pub progress_interval: Duration,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            progress_interval: Duration::from_secs(1),
        }
    }
}

fn etcd_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("ETCD_BIN") {
        return PathBuf::from(path);
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("etcd");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    let debian = PathBuf::from("/usr/bin/etcd");
    if debian.is_file() {
        return debian;
    }
    panic!(
        "the etcd tests need an etcd server binary and none was found (looked at $ETCD_BIN, \
         `etcd` on PATH and /usr/bin/etcd). Install it: `sudo apt-get install etcd-server` \
         (Debian/Ubuntu), or download a release from https://github.com/etcd-io/etcd/releases \
         and set ETCD_BIN to its `etcd`"
    );
}

/// `n` distinct loopback ports nobody listens on right now: every listener
/// is held until all are bound, so the kernel cannot hand out one port
/// twice (binding and dropping one at a time, two members of a cluster
/// once got the same peer port).
pub fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a loopback port"))
        .collect();
    listeners
        .iter()
        .map(|listener| listener.local_addr().expect("a bound address").port())
        .collect()
}

impl EtcdServer {
    /// Starts a fresh single-member etcd and waits until it is healthy.
    pub fn start() -> Self {
        Self::start_with(EtcdOptions::default())
    }

    /// [`start`](Self::start) with options.
    pub fn start_with(options: EtcdOptions) -> Self {
        let ports = free_ports(2);
        let mut server = Self::unstarted(
            "larder-test".to_owned(),
            ports[0],
            ports[1],
            None,
            Some(options.progress_interval),
        );
        server.spawn();
        server
    }

    /// A member not yet started: `initial_cluster` names every member's
    /// peer URL (`None`: this one alone).
    pub fn unstarted(
        name: String,
        client_port: u16,
        peer_port: u16,
        initial_cluster: Option<String>,
        progress_interval: Option<Duration>,
    ) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let binary = etcd_binary();
        // tmpfs where there is one: etcd syncs its log on every write, which
        // on a disk makes a 20,000-write test take minutes.
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "larder-etcd-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the etcd test directory");
        EtcdServer {
            binary,
            dir,
            name,
            client_port,
            peer_port,
            initial_cluster,
            progress_interval,
            child: None,
            frozen: false,
        }
    }

    /// The peer URL (`http://127.0.0.1:PORT`).
    pub fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// The member's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the process runs (started, not killed; maybe frozen).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Whether the process is SIGSTOPped.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// SIGSTOPs the server: its sockets stay open, it answers nothing.
    pub fn freeze(&mut self) {
        self.signal("-STOP");
        self.frozen = true;
    }

    /// SIGCONTs a frozen server.
    pub fn thaw(&mut self) {
        self.signal("-CONT");
        self.frozen = false;
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("a running etcd");
        let status = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .expect("run kill(1)");
        assert!(status.success(), "kill {signal} {}: {status}", child.id());
    }

    /// GETs `path` from the client port: the body of a 200 answer.
    pub fn http_get(&self, path: &str) -> Option<String> {
        http_get(self.client_port, path)
    }

    /// The client URL (`http://127.0.0.1:PORT`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The etcd data directory (kept across [`kill`](Self::kill) and
    /// [`restart`](Self::restart)).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// SIGKILLs the server (no clean shutdown) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // `Child::kill` is SIGKILL on Unix (a stopped process dies too).
            let _ = child.kill();
            let _ = child.wait();
        }
        self.frozen = false;
    }

    /// Starts the server again on the same data directory and ports, and
    /// waits until it is healthy.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Starts the process without waiting for it to be healthy (a cluster's
    /// members are healthy only once a quorum runs).
    pub fn launch(&mut self) {
        self.kill();
        self.spawn_process();
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("etcd.log")
    }

    fn spawn(&mut self) {
        self.spawn_process();
        self.wait_healthy();
    }

    fn spawn_process(&mut self) {
        let client = self.endpoint();
        let peer = self.peer_url();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the etcd log");
        let initial_cluster = self
            .initial_cluster
            .clone()
            .unwrap_or_else(|| format!("{}={peer}", self.name));
        let mut command = Command::new(&self.binary);
        command
            .arg(format!("--name={}", self.name))
            .arg(format!("--data-dir={}", self.data_dir().display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster={initial_cluster}"))
            .arg("--initial-cluster-state=new");
        if let Some(interval) = self.progress_interval {
            command.arg(format!(
                "--experimental-watch-progress-notify-interval={}ms",
                interval.as_millis()
            ));
        }
        let child = command
            .arg("--logger=zap")
            .arg("--log-outputs=stderr")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("share the etcd log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot start {} ({error}); install etcd with `sudo apt-get install \
                     etcd-server` or set ETCD_BIN",
                    self.binary.display()
                )
            });
        self.child = Some(child);
    }

    /// Waits (at most 30 s) until the server answers `/health` with true.
    pub fn wait_healthy(&mut self) {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "etcd exited during startup ({status}); its log:\n{}",
                        self.log_tail()
                    );
                }
            }
            if health(self.client_port) {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "etcd was not healthy within {START_LIMIT:?}; its log:\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The end of etcd's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let start = text.len().saturating_sub(4_000);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }
}

/// Whether etcd on `port` answers `GET /health` with `"health":"true"`.
fn health(port: u16) -> bool {
    http_get(port, "/health").is_some_and(|answer| answer.contains("\"health\":\"true\""))
}

/// `GET path` on a loopback port (each step bounded: 200 ms to connect,
/// 2 s to answer): the whole answer, headers included, or `None` when it
/// did not arrive whole.
///
/// The request is HTTP/1.0 so that etcd sends the body as it is, ended by
/// closing the connection: to an HTTP/1.1 request it answers `/metrics`
/// (about 150 KB) in chunks, and a chunk's size line can fall inside the
/// very line a test looks for (`etcd_debugging_mvcc_watcher_total 1`),
/// which then reads as missing for as long as the metrics before it keep
/// their length.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(
        &format!("127.0.0.1:{port}")
            .parse()
            .expect("a loopback address"),
        Duration::from_millis(200),
    )
    .ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    // An error (a timeout, a reset) leaves a partial answer: not used.
    stream.read_to_string(&mut answer).ok()?;
    (!answer.is_empty()).then_some(answer)
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
        remove_dir(&self.dir);
    }
}

fn remove_dir(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs a test's async body under a time limit: a hang fails the test with
/// its name (and the unwinding drops, so kills, its etcd servers).
pub async fn bounded<T>(
    name: &str,
    limit: Duration,
    body: impl std::future::Future<Output = T>,
) -> T {
    match tokio::time::timeout(limit, body).await {
        Ok(value) => value,
        Err(_) => panic!("test `{name}` did not finish within {limit:?} (a hang?)"),
    }
}

/// A client for `server` whose connection attempts give up quickly (so a
/// request to a killed server fails instead of waiting).
pub async fn connect(server: &EtcdServer) -> etcd_client::Client {
    let options = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2));
    etcd_client::Client::connect([server.endpoint()], Some(options))
        .await
        .expect("connect to the test etcd")
}
