//! The etcd members an [`EtcdSource`](super::EtcdSource) can ask, one
//! connection each, and which one it asks first.
//!
//! Every request starts at the *preferred* member; a member that fails a
//! request (an error, a timeout, a watch that broke or went silent) stops
//! being preferred, so the next attempt, within the same request, goes to
//! the next member in the ring. A dead member thus costs one failed attempt
//! (immediate for a killed one: its port refuses the connection), never a
//! backoff. With one [`Client`] (however many endpoints it balances over
//! itself) there is one member and nothing to fail over to.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use etcd_client::{Client, ConnectOptions};

/// One connection per member, and the member to ask first.
pub(super) struct Members {
    clients: Vec<Client>,
    /// The member's client URL, for messages (`None` for a caller's
    /// client).
    names: Vec<Option<String>>,
    preferred: AtomicUsize,
}

impl fmt::Debug for Members {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Members")
            .field("endpoints", &self.names)
            .field("preferred", &self.preferred.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Members {
    /// A caller's client as the only member.
    pub(super) fn one(client: Client) -> Self {
        Members {
            clients: vec![client],
            names: vec![None],
            preferred: AtomicUsize::new(0),
        }
    }

    /// One client per endpoint, each with `options`. Sends nothing (etcd-client
    /// connects lazily when no user name is set).
    pub(super) async fn connect(
        endpoints: impl IntoIterator<Item = impl AsRef<str>>,
        options: ConnectOptions,
    ) -> Result<Self, etcd_client::Error> {
        let mut clients = Vec::new();
        let mut names = Vec::new();
        for endpoint in endpoints {
            let endpoint = endpoint.as_ref();
            clients.push(Client::connect([endpoint], Some(options.clone())).await?);
            names.push(Some(endpoint.to_owned()));
        }
        if clients.is_empty() {
            return Err(etcd_client::Error::InvalidArgs(
                "no etcd endpoint given".to_owned(),
            ));
        }
        Ok(Members {
            clients,
            names,
            preferred: AtomicUsize::new(0),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.clients.len()
    }

    /// The member to ask first.
    pub(super) fn preferred(&self) -> usize {
        self.preferred.load(Ordering::Relaxed) % self.clients.len()
    }

    pub(super) fn client(&self, member: usize) -> &Client {
        &self.clients[member]
    }

    /// The member's name for messages: its endpoint, or nothing.
    pub(super) fn name(&self, member: usize) -> &str {
        self.names[member].as_deref().unwrap_or("etcd")
    }

    /// `member` failed a request: if it is still the preferred one, the
    /// next member is (another request may have moved on already).
    pub(super) fn failed(&self, member: usize) {
        let next = (member + 1) % self.clients.len();
        let _ = self
            .preferred
            .compare_exchange(member, next, Ordering::Relaxed, Ordering::Relaxed);
    }
}
