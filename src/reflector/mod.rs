//! Keeps an [`IndexedStore`](crate::IndexedStore) in step with a list+watch
//! source of truth (client-go's informer loop). Needs the `reflector`
//! feature.

mod source;

pub use source::{InvalidObject, Listed, Revision, Source, SourceError, WatchEvent};
