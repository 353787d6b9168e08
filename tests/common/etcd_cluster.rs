//! A real three-member etcd cluster for the tests: three `etcd` processes
//! (tests/common/etcd.rs) on free loopback ports with their data on tmpfs,
//! with etcd's default server settings (no server-side progress
//! notifications). It finds the leader and the member serving a watch (from
//! each member's `/metrics`), and SIGKILLs, SIGSTOPs, SIGCONTs and restarts
//! members. Every wait is bounded and fails naming what it waited for.
//!
//! A test module using it declares `etcd_server` (common/etcd.rs) too.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use super::etcd_server::{EtcdServer, free_ports};

/// How long a member may take to become healthy, a leader to be elected or
/// a watch to appear.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// Three etcd members forming one cluster.
#[derive(Debug)]
pub struct EtcdCluster {
    members: Vec<EtcdServer>,
}

impl EtcdCluster {
    /// Starts a fresh three-member cluster and waits until every member is
    /// healthy (a leader is elected).
    pub fn start() -> Self {
        let ports: Vec<(u16, u16)> = free_ports(6)
            .chunks(2)
            .map(|pair| (pair[0], pair[1]))
            .collect();
        let initial_cluster = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let members = ports
            .iter()
            .enumerate()
            .map(|(i, &(client, peer))| {
                EtcdServer::unstarted(
                    format!("m{i}"),
                    client,
                    peer,
                    Some(initial_cluster.clone()),
                    None,
                )
            })
            .collect();
        let mut cluster = EtcdCluster { members };
        cluster.restart_all();
        cluster
    }

    /// Every member's client URL, in member order.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(EtcdServer::endpoint).collect()
    }

    /// A client on the given members only, with the reflector's
    /// connection settings.
    pub async fn client_on(&self, members: &[usize]) -> etcd_client::Client {
        let endpoints: Vec<String> = members.iter().map(|&m| self.member(m).endpoint()).collect();
        etcd_client::Client::connect(endpoints, Some(larder::reflector::etcd_connect_options()))
            .await
            .expect("connect to the test cluster")
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn member(&self, member: usize) -> &EtcdServer {
        &self.members[member]
    }

    /// SIGKILLs a member.
    pub fn kill(&mut self, member: usize) {
        self.members[member].kill();
    }

    /// SIGSTOPs a member.
    pub fn freeze(&mut self, member: usize) {
        self.members[member].freeze();
    }

    /// SIGCONTs a frozen member.
    pub fn thaw(&mut self, member: usize) {
        self.members[member].thaw();
    }

    /// Starts a killed member again on its data and waits until it is
    /// healthy.
    pub fn restart(&mut self, member: usize) {
        self.members[member].restart();
    }

    /// SIGKILLs every member, starts them all again and waits until each
    /// is healthy.
    pub fn restart_all(&mut self) {
        for member in &mut self.members {
            member.launch();
        }
        for member in &mut self.members {
            member.wait_healthy();
        }
    }

    /// The member that is the leader now (waits, bounded, through an
    /// election).
    pub fn leader(&self) -> usize {
        self.wait_for("a leader", |cluster| {
            let leaders: Vec<usize> = cluster
                .answering()
                .filter(|&m| cluster.gauge(m, "etcd_server_is_leader") == Some(1))
                .collect();
            (leaders.len() == 1).then(|| leaders[0])
        })
    }

    /// The member serving the one open watch (the only one with a watcher;
    /// the tests' writers do not watch). Waits, bounded, for a watch to be
    /// open on exactly one answering member.
    pub fn watch_member(&self) -> usize {
        self.wait_for("the member serving the watch", |cluster| {
            let serving: Vec<usize> = cluster
                .answering()
                .filter(|&m| cluster.gauge(m, "etcd_debugging_mvcc_watcher_total") > Some(0))
                .collect();
            (serving.len() == 1).then(|| serving[0])
        })
    }

    /// [`watch_member`](Self::watch_member), once it is not `member`.
    pub fn watch_member_other_than(&self, member: usize) -> usize {
        self.wait_for("the watch to move to another member", |cluster| {
            let serving: Vec<usize> = cluster
                .answering()
                .filter(|&m| m != member)
                .filter(|&m| cluster.gauge(m, "etcd_debugging_mvcc_watcher_total") > Some(0))
                .collect();
            (serving.len() == 1).then(|| serving[0])
        })
    }

    /// Members that run and are not frozen.
    fn answering(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.members.len())
            .filter(|&m| self.members[m].is_running() && !self.members[m].is_frozen())
    }

    /// What the waits read, per member, for a failure's message.
    fn gauges(&self) -> Vec<(bool, bool, Option<u64>, Option<u64>)> {
        (0..self.members.len())
            .map(|m| {
                (
                    self.members[m].is_running(),
                    self.members[m].is_frozen(),
                    self.gauge(m, "etcd_debugging_mvcc_watcher_total"),
                    self.gauge(m, "etcd_server_is_leader"),
                )
            })
            .collect()
    }

    /// A gauge from a member's `/metrics`.
    fn gauge(&self, member: usize, name: &str) -> Option<u64> {
        let metrics = self.members[member].http_get("/metrics")?;
        metrics.lines().find_map(|line| {
            let value = line.strip_prefix(name)?.strip_prefix(' ')?;
            value.trim().parse::<f64>().ok().map(|v| v as u64)
        })
    }

    fn wait_for<T>(&self, what: &str, mut found: impl FnMut(&Self) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            if let Some(value) = found(self) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} within {WAIT_LIMIT:?}; members (running, frozen, watchers, leader): \
                 {:?}; member m0's log:\n{}",
                self.gauges(),
                self.members[0].log_tail()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
