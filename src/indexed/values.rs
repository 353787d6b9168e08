//! [`Values`]: the values one object has for one index, as a write computes
//! them and a slot keeps them.
//!
//! Most index functions give each object exactly one value (a namespace, a
//! node, a status). That value is held inline, with no allocation of its
//! own; only an index that gives an object several values (labels, say)
//! allocates a list for it, and one that gives none holds an empty list,
//! which allocates nothing. A slot's values for every index are one boxed
//! slice of these (`AllValues`), so an object whose indexes give one value
//! each costs one allocation however many indexes there are.

use std::ops::{Deref, DerefMut};
use std::slice;

use crate::sync::Arc;

/// One object's values for one index: sorted, without duplicates. Reads as
/// a slice.
#[derive(Clone, Debug)]
pub(crate) enum Values {
    /// Exactly one value.
    One(Arc<str>),
    /// Any other number of values (none allocates nothing).
    List(Box<[Arc<str>]>),
}

impl Values {
    /// The values of `values`, which must be sorted and distinct: one held
    /// inline, any other number as a list.
    #[inline]
    pub(crate) fn from_sorted(mut values: Vec<Arc<str>>) -> Self {
        if values.len() == 1
            && let Some(value) = values.pop()
        {
            return Self::One(value);
        }
        Self::List(values.into_boxed_slice())
    }
}

impl Default for Values {
    /// No value.
    fn default() -> Self {
        Self::List(Box::default())
    }
}

impl Deref for Values {
    type Target = [Arc<str>];

    #[inline]
    fn deref(&self) -> &[Arc<str>] {
        match self {
            Self::One(value) => slice::from_ref(value),
            Self::List(values) => values,
        }
    }
}

impl DerefMut for Values {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Arc<str>] {
        match self {
            Self::One(value) => slice::from_mut(value),
            Self::List(values) => values,
        }
    }
}

impl PartialEq for Values {
    /// The same values, however held.
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Values {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn values(of: &[&str]) -> Vec<Arc<str>> {
        of.iter().map(|&value| Arc::from(value)).collect()
    }

    #[test]
    fn one_value_is_held_inline_and_any_other_number_as_a_list() {
        let one = Values::from_sorted(values(&["a"]));
        assert!(matches!(one, Values::One(_)));
        assert_eq!(&*one, &values(&["a"])[..]);
        let two = Values::from_sorted(values(&["a", "b"]));
        assert!(matches!(two, Values::List(_)));
        assert_eq!(two.len(), 2);
        assert!(Values::from_sorted(Vec::new()).is_empty());
        assert_eq!(Values::List(values(&["a"]).into()), one);
        assert_ne!(one, two);
    }

    #[test]
    fn a_slot_keeps_a_value_in_a_list_s_room() {
        assert_eq!(
            std::mem::size_of::<Values>(),
            std::mem::size_of::<Box<[Arc<str>]>>() + 8
        );
    }
}
