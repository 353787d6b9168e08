//! loom model of `IndexedStore`'s resource version: a revisioned write
//! changes the object and the store's revision in one critical section, so
//! a reader of `get_with_revision` never pairs an object with a revision it
//! does not belong with. The negative control records the revision in a
//! second critical section and must fail.
#![cfg(loom)]

use larder::IndexedStore;
use larder::fault::{IndexedFault, inject};
use loom::sync::Arc;
use loom::thread;

fn revision_agrees_with_objects(fault: IndexedFault) {
    let _fault = inject(fault);
    loom::model(move || {
        let store = Arc::new(IndexedStore::<&'static str, u32>::new());
        store.insert_at_revision("a", 1, 1).unwrap();
        let writer = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store.insert_at_revision("a", 2, 2).unwrap();
                store.remove_at_revision("a", 3);
            })
        };
        let (object, revision) = store.get_with_revision("a");
        let seen = (object, revision);
        assert!(
            matches!(seen, (Some(1), 1) | (Some(2), 2) | (None, 3)),
            "object and revision disagree: {seen:?}"
        );
        writer.join().unwrap();
        assert_eq!(store.get_with_revision("a"), (None, 3));
    });
}

#[test]
fn indexed_revision_agrees_with_objects() {
    revision_agrees_with_objects(IndexedFault::None);
}

#[test]
#[should_panic(expected = "object and revision disagree")]
fn indexed_revision_negative_control_revision_outside_lock() {
    revision_agrees_with_objects(IndexedFault::RevisionOutsideLock);
}
