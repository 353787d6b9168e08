//! The error of [`IndexedStore`](super::IndexedStore)'s operations.

use std::error::Error;
use std::fmt;

/// Why an [`IndexedStore`](super::IndexedStore) operation was refused.
///
/// A refused write leaves the store exactly as it was.
///
/// # Examples
///
/// ```
/// use larder::{IndexError, IndexedStore};
///
/// let store: IndexedStore<String, String> = IndexedStore::builder()
///     .try_index("first-char", |s: &String| match s.chars().next() {
///         Some(c) => Ok(vec![c.to_string()]),
///         None => Err("empty strings cannot be indexed"),
///     })
///     .build()
///     .unwrap();
///
/// let err = store.insert("k".to_string(), String::new()).unwrap_err();
/// assert!(matches!(err, IndexError::IndexFunction { .. }));
/// assert!(store.is_empty()); // the write was rejected, nothing changed
///
/// let err = store.by_index("no-such-index", "x").unwrap_err();
/// assert!(matches!(err, IndexError::UnknownIndex { .. }));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum IndexError {
    /// No index of that name is registered.
    UnknownIndex {
        /// The name asked for.
        name: String,
    },
    /// An index of that name already exists (from
    /// [`add_index`](super::IndexedStore::add_index), or from
    /// [`IndexedStoreBuilder::build`](super::IndexedStoreBuilder::build) as
    /// a [`BuildError::Index`](crate::BuildError::Index)).
    DuplicateIndex {
        /// The clashing name.
        name: String,
    },
    /// An index function failed on an object; the write that needed it was
    /// rejected and the store left unchanged. (client-go panics here.)
    IndexFunction {
        /// The index whose function failed.
        index: String,
        /// The function's error.
        source: Box<dyn Error + Send + Sync + 'static>,
    },
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownIndex { name } => write!(f, "no index named {name:?}"),
            Self::DuplicateIndex { name } => write!(f, "an index named {name:?} already exists"),
            Self::IndexFunction { index, source } => {
                write!(f, "index function {index:?} failed: {source}")
            }
        }
    }
}

impl Error for IndexError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::IndexFunction { source, .. } => Some(&**source),
            _ => None,
        }
    }
}
