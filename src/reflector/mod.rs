//! Keeps an [`IndexedStore`](crate::IndexedStore) in step with a list+watch
//! source of truth (client-go's informer loop). Needs the `reflector`
//! feature.
//!
//! - [`Source`]: what a reflector reads (client-go's `ListerWatcher`);
//!   [`MemorySource`] is an in-memory one with fault injection.
//! - [`Reflector`]: the loop, a future for any executor; built with
//!   [`Reflector::builder`], observed and stopped through a
//!   [`ReflectorHandle`]; it owns its store and hands out read-only
//!   [`StoreReader`]s.
//! - [`Handler`]: the notifications (client-go's `ResourceEventHandler`);
//!   [`HandlerRegistry`] adds and removes handlers while the loop runs,
//!   each with its own buffer (client-go's shared informer).
//! - [`Timer`]: how the loop sleeps (backoff, resync, timeouts) without
//!   naming a runtime.
//!
//! - With the `etcd` feature, [`EtcdSource`]: an etcd key prefix as a
//!   source (building it needs `protoc` and protobuf's well-known types;
//!   running it, a tokio runtime and an etcd v3 server).
//! - With the `kube` feature, `KubeSource`: a Kubernetes resource as a
//!   source, through kube's client (a tokio runtime), with client-go's
//!   `namespace/name` keys (`meta_namespace_key`) and ready index
//!   functions (`index_by_namespace`, `index_by_label`,
//!   `index_by_owner_uid`, `index_by_pod_node`).
//!
//! [The reflector guide](https://github.com/larder-rs/larder/blob/main/docs/reflector.md)
//! shows the loop, its guarantees, what each fault does, and how to mirror
//! an etcd prefix.

// Files (one concept each): `source.rs` (the Source trait and its events),
// `memory.rs` (MemorySource), `run.rs` (the loop: list, watch, apply,
// resync), `burst.rs` (the events a stream holds, as one write),
// `relist.rs` (a relist's difference: changes to all, syncs to the handlers
// whose resync is due), `builder.rs`, `handler.rs` (handlers and their
// delivery), `registry.rs` (handlers added while running, each with its
// buffer and resync), `report.rs` (on_error and the one panic path),
// `status.rs` (what handles share: revision, readiness, stats, stop),
// `reader.rs` (StoreReader, the store's read-only view),
// `timer.rs` (Timer, backoff), `error.rs`; `etcd/` (EtcdSource);
// `kube/` (KubeSource, keys and index functions).
mod builder;
mod burst;
mod error;
#[cfg(feature = "etcd")]
mod etcd;
mod handler;
#[cfg(feature = "kube")]
mod kube;
mod memory;
mod reader;
mod registry;
mod relist;
mod report;
mod run;
mod source;
mod status;
mod timer;

#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub use self::kube::{
    DEFAULT_KUBE_PAGE_SIZE, DEFAULT_KUBE_WATCH_GRACE, DEFAULT_KUBE_WATCH_TIMEOUT, KubeSource,
    KubeSourceBuildError, KubeSourceBuilder, KubeWatch, ResourceVersionError, index_by_label,
    index_by_namespace, index_by_owner_uid, index_by_pod_node, meta_namespace_key,
    split_meta_namespace_key,
};
pub use builder::{Backoff, ReflectorBuilder, Resync};
pub use error::{ReflectorBuildError, ReflectorError, WaitError};
#[cfg(feature = "etcd")]
#[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
pub use etcd::{
    ConsistencyError, DEFAULT_PAGE_SIZE, DEFAULT_REQUEST_TIMEOUT, DEFAULT_WATCH_DEADLINE,
    EtcdSource, EtcdSourceBuildError, EtcdSourceBuilder, EtcdWatch, etcd_connect_options,
};
/// The message of a caught panic, for the controller's reconciles.
pub(crate) use handler::panic_message;
pub use handler::{Change, Handler};
pub use memory::{MemorySource, MemoryWatch};
pub use reader::StoreReader;
pub use registry::{HandlerDelivery, HandlerRegistration, HandlerRegistry};
pub use run::Reflector;
pub use source::{InvalidObject, Listed, Revision, Source, SourceError, WatchEvent};
pub use status::{ReflectorHandle, ReflectorStats};
pub use timer::{DefaultTimer, Sleep, Timer};
