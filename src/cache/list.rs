//! [`List`]: a doubly linked list threaded through a shard's entries by
//! `u32` slot numbers, the order of exact LRU (one list) and of S3-FIFO
//! (two queues). The links live in each entry's policy meta ([`Linked`]).

use super::shard::Node;

/// The "no entry" slot.
pub(crate) const NIL: u32 = u32::MAX;

/// An entry's neighbours in its list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Links {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl Links {
    /// Unlinked.
    pub(crate) const NONE: Links = Links {
        prev: NIL,
        next: NIL,
    };
}

/// A policy meta holding an entry's [`Links`].
pub(crate) trait Linked {
    fn links(&self) -> &Links;
    fn links_mut(&mut self) -> &mut Links;
}

impl Linked for Links {
    #[inline]
    fn links(&self) -> &Links {
        self
    }
    #[inline]
    fn links_mut(&mut self) -> &mut Links {
        self
    }
}

/// A list's ends: new entries at the head, the oldest at the tail.
#[derive(Clone, Copy, Debug)]
pub(crate) struct List {
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl List {
    pub(crate) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    /// Takes entry `i` out of the list.
    #[inline]
    pub(crate) fn unlink<K, V, M: Linked>(&mut self, entries: &mut [Node<K, V, M>], i: u32) {
        let Links { prev, next } = *entries[i as usize].meta.links();
        if prev == NIL {
            self.head = next;
        } else {
            entries[prev as usize].meta.links_mut().next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            entries[next as usize].meta.links_mut().prev = prev;
        }
    }

    /// Puts entry `i` (unlinked) at the head.
    #[inline]
    pub(crate) fn push_front<K, V, M: Linked>(&mut self, entries: &mut [Node<K, V, M>], i: u32) {
        let old_head = self.head;
        *entries[i as usize].meta.links_mut() = Links {
            prev: NIL,
            next: old_head,
        };
        if old_head == NIL {
            self.tail = i;
        } else {
            entries[old_head as usize].meta.links_mut().prev = i;
        }
        self.head = i;
    }

    /// Moves the tail entry to the head (the list is not empty).
    #[inline]
    pub(crate) fn tail_to_head<K, V, M: Linked>(&mut self, entries: &mut [Node<K, V, M>]) {
        let (t, head) = (self.tail, self.head);
        if t == head {
            return;
        }
        let new_tail = entries[t as usize].meta.links().prev;
        entries[new_tail as usize].meta.links_mut().next = NIL;
        entries[head as usize].meta.links_mut().prev = t;
        *entries[t as usize].meta.links_mut() = Links {
            prev: NIL,
            next: head,
        };
        self.head = t;
        self.tail = new_tail;
    }

    /// Whether the list holds no entry.
    #[inline]
    pub(crate) fn is_empty(self) -> bool {
        self.tail == NIL
    }

    /// Repoints the neighbours of the entry now at slot `i` (moved there by
    /// a swap-remove) and the list's ends.
    #[inline]
    pub(crate) fn moved<K, V, M: Linked>(&mut self, entries: &mut [Node<K, V, M>], i: u32) {
        let Links { prev, next } = *entries[i as usize].meta.links();
        if prev == NIL {
            self.head = i;
        } else {
            entries[prev as usize].meta.links_mut().next = i;
        }
        if next == NIL {
            self.tail = i;
        } else {
            entries[next as usize].meta.links_mut().prev = i;
        }
    }

    /// The slots from head to tail.
    pub(crate) fn iter<'a, K, V, M: Linked>(
        self,
        entries: &'a [Node<K, V, M>],
    ) -> impl Iterator<Item = u32> + 'a {
        let mut at = self.head;
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let i = at;
                at = entries[i as usize].meta.links().next;
                i
            })
        })
    }

    /// Checks the links from head to tail, marking each slot in `seen`;
    /// returns the slots in order. Panics with a description (`name` names
    /// the list) on a broken link, a cycle or an entry in two lists.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn check<K, V, M: Linked>(
        self,
        entries: &[Node<K, V, M>],
        seen: &mut [bool],
        name: &str,
    ) -> Vec<u32> {
        let mut order = Vec::new();
        let mut at = self.head;
        let mut prev = NIL;
        while at != NIL {
            assert!(
                (at as usize) < entries.len(),
                "{name}: link to slot {at} beyond the entries"
            );
            assert!(!seen[at as usize], "{name}: slot {at} linked twice");
            seen[at as usize] = true;
            let links = entries[at as usize].meta.links();
            assert_eq!(links.prev, prev, "{name}: broken prev link at slot {at}");
            order.push(at);
            prev = at;
            at = links.next;
        }
        assert_eq!(self.tail, prev, "{name}: tail is not the last entry");
        order
    }
}
