//! A real etcd server for the tests: one `etcd` process on free loopback
//! ports (client and peer) with its own temporary data directory, stopped
//! (SIGKILL) and its directory removed when the value is dropped, also when
//! the test panics. It can be killed mid-test and restarted on the same data
//! directory and ports.
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
    client_port: u16,
    peer_port: u16,
    progress_interval: Duration,
    child: Option<Child>,
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

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("bind a loopback port")
}

impl EtcdServer {
    /// Starts a fresh single-member etcd and waits until it is healthy.
    pub fn start() -> Self {
        Self::start_with(EtcdOptions::default())
    }

    /// [`start`](Self::start) with options.
    pub fn start_with(options: EtcdOptions) -> Self {
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
        let mut server = EtcdServer {
            binary,
            dir,
            client_port: free_port(),
            peer_port: free_port(),
            progress_interval: options.progress_interval,
            child: None,
        };
        server.spawn();
        server
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
            // `Child::kill` is SIGKILL on Unix.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same data directory and ports, and
    /// waits until it is healthy.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("etcd.log")
    }

    fn spawn(&mut self) {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the etcd log");
        let child = Command::new(&self.binary)
            .arg("--name=larder-test")
            .arg(format!("--data-dir={}", self.data_dir().display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=larder-test={peer}"))
            .arg("--initial-cluster-state=new")
            .arg(format!(
                "--experimental-watch-progress-notify-interval={}ms",
                self.progress_interval.as_millis()
            ))
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
        self.wait_healthy();
    }

    fn wait_healthy(&mut self) {
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
    let Ok(mut stream) = TcpStream::connect_timeout(
        &format!("127.0.0.1:{port}")
            .parse()
            .expect("a loopback address"),
        Duration::from_millis(200),
    ) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request =
        format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
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
