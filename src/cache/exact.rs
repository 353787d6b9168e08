//! [`Exact`]: exact LRU, one recency list per shard (head = most recently
//! used). A hit moves its entry to the head, so it needs exclusive access;
//! the victim is the tail.

use super::list::{Links, List};
use super::policy::Policy;
use super::shard::{Node, Weights};

/// Exact LRU (see the module docs).
pub(crate) struct Exact {
    list: List,
}

impl Policy for Exact {
    type Meta = Links;
    type Admit = ();
    const SHARED_HITS: bool = false;

    fn new(_capacity: usize) -> Self {
        Self { list: List::EMPTY }
    }

    #[inline]
    fn admit(&mut self, _hash: u64) {}

    #[inline]
    fn readmit(&self, _meta: &Links) {}

    #[inline]
    fn fresh((): ()) -> Links {
        Links::NONE
    }

    #[inline]
    fn hit<K, V>(&mut self, entries: &mut [Node<K, V, Links>], i: u32) {
        if self.list.head != i {
            self.list.unlink(entries, i);
            self.list.push_front(entries, i);
        }
    }

    fn hit_shared(_meta: &Links) {
        unreachable!("larder: exact LRU hits need exclusive access");
    }

    #[inline]
    fn replaced<K, V>(&mut self, entries: &mut [Node<K, V, Links>], i: u32, _: u32, _: u32) {
        self.hit(entries, i);
    }

    #[inline]
    fn link<K, V>(&mut self, entries: &mut [Node<K, V, Links>], i: u32, _: u32, (): ()) {
        self.list.push_front(entries, i);
    }

    #[inline]
    fn recycle<K, V>(&mut self, entries: &mut [Node<K, V, Links>], v: u32, _: u32, _: u32, (): ()) {
        self.hit(entries, v);
    }

    #[inline]
    fn unlink<K, V>(&mut self, entries: &mut [Node<K, V, Links>], i: u32, _weight: u32) {
        self.list.unlink(entries, i);
    }

    #[inline]
    fn moved<K, V>(&mut self, entries: &mut [Node<K, V, Links>], _from: u32, to: u32) {
        self.list.moved(entries, to);
    }

    #[inline]
    fn victim<K, V>(&mut self, _entries: &mut [Node<K, V, Links>], _weights: &Weights) -> u32 {
        self.list.tail
    }

    fn clear(&mut self) {
        self.list = List::EMPTY;
    }

    fn for_each<K, V>(&self, entries: &[Node<K, V, Links>], mut f: impl FnMut(&K, &V)) {
        for i in self.list.iter(entries) {
            let entry = &entries[i as usize];
            f(&entry.key, &entry.value);
        }
    }

    #[cfg(any(test, feature = "testing"))]
    fn check<K, V>(&self, entries: &[Node<K, V, Links>], _weights: &Weights) {
        let mut seen = vec![false; entries.len()];
        let order = self.list.check(entries, &mut seen, "LRU list");
        assert_eq!(
            order.len(),
            entries.len(),
            "list length differs from entry count"
        );
    }
}
