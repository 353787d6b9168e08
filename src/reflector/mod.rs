//! Keeps an [`IndexedStore`](crate::IndexedStore) in step with a list+watch
//! source of truth (client-go's informer loop). Needs the `reflector`
//! feature.

#[cfg(feature = "etcd")]
mod etcd;
mod source;

#[cfg(feature = "etcd")]
pub use etcd::{
    DEFAULT_PAGE_SIZE, DEFAULT_REQUEST_TIMEOUT, EtcdBuildError, EtcdSource, EtcdSourceBuilder,
    EtcdWatch,
};
pub use source::{InvalidObject, Listed, Revision, Source, SourceError, WatchEvent};
