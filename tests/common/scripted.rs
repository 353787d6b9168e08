//! A watch stream that yields queued items, then stays open and quiet
//! (pending) forever: the stream of a scripted test source.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use larder::reflector::{SourceError, WatchEvent};

pub struct Scripted<K, V>(pub VecDeque<Result<WatchEvent<K, V>, SourceError>>);

// Items move out of the queue by value: nothing is pinned in place.
impl<K, V> Unpin for Scripted<K, V> {}

impl<K, V> Stream for Scripted<K, V> {
    type Item = Result<WatchEvent<K, V>, SourceError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.0.pop_front() {
            Some(item) => Poll::Ready(Some(item)),
            None => Poll::Pending,
        }
    }
}
