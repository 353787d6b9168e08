//! The misuse catalogue (`docs/misuse.md`), run as tests: every example's
//! demonstrator runs here, and both halves are asserted: the broken variant
//! shows the failure, the larder variant does not.
//!
//! Each example file is included as a module, so the demonstrator that
//! `cargo run --example misuse_NN_...` prints is the code tested here (its
//! `main` is unused in this crate). Harmful interleavings are forced with
//! barriers and channels, so no assertion depends on timing; the failures
//! that cannot be forced at run time (`Relaxed` publication, and the
//! exhaustive forms of the races) are expected-failure loom models in
//! `loom-tests/tests/misuse.rs`.

// Every example includes `examples/misuse_common/mod.rs` for itself, so this
// crate compiles that small module once per example, on purpose.
#![allow(clippy::duplicate_mod)]

#[path = "../examples/misuse_01_unordered_iteration.rs"]
#[allow(dead_code)]
mod m01;
#[path = "../examples/misuse_02_shared_mutable_default.rs"]
#[allow(dead_code)]
mod m02;
#[path = "../examples/misuse_03_torn_views.rs"]
#[allow(dead_code)]
mod m03;
#[path = "../examples/misuse_04_check_then_act.rs"]
#[allow(dead_code)]
mod m04;
#[path = "../examples/misuse_05_guard_held_while_writing.rs"]
#[allow(dead_code)]
mod m05;
#[path = "../examples/misuse_06_lock_across_await.rs"]
#[allow(dead_code)]
mod m06;
#[path = "../examples/misuse_07_recursive_read_lock.rs"]
#[allow(dead_code)]
mod m07;
#[path = "../examples/misuse_08_iterate_while_mutating.rs"]
#[allow(dead_code)]
mod m08;
#[path = "../examples/misuse_09_relaxed_publication.rs"]
#[allow(dead_code)]
mod m09;
#[path = "../examples/misuse_10_stale_snapshot.rs"]
#[allow(dead_code)]
mod m10;
#[path = "../examples/misuse_11_unbounded_growth.rs"]
#[allow(dead_code)]
mod m11;
#[path = "../examples/misuse_12_poisoned_init.rs"]
#[allow(dead_code)]
mod m12;
#[path = "../examples/misuse_13_blocking_single_flight.rs"]
#[allow(dead_code)]
mod m13;
#[path = "../examples/misuse_14_handmade_work_queue.rs"]
#[allow(dead_code)]
mod m14;

#[test]
fn misuse_01_unordered_iteration() {
    let o = m01::run();
    assert_eq!(o.expected, (100..=115).collect::<Vec<u64>>());
    // Broken: the hash order skips offsets, reorders them, and its "first"
    // is not the oldest.
    assert!(
        m01::missed(&o.expected, &o.broken_stop_early) > 0,
        "stopping at the first offset beyond the commit skipped nothing: {:?}",
        o.broken_stop_early
    );
    assert_eq!(o.broken_filtered.len(), o.expected.len());
    assert!(
        m01::inversions(&o.broken_filtered) > 0,
        "{:?}",
        o.broken_filtered
    );
    assert_ne!(o.broken_first, 100);
    // Fixed: every committed offset once, in order; the rest stays.
    assert_eq!(o.fixed_drained, o.expected);
    assert_eq!(o.fixed_first, 116);
    assert_eq!(o.fixed_left, 16);
}

#[test]
fn misuse_02_shared_mutable_default() {
    let o = m02::run();
    assert_eq!(
        o.broken_changed, o.tenants,
        "one write changed every tenant"
    );
    assert_eq!(
        o.fixed_changed, 1,
        "the replacement changed one tenant only"
    );
}

#[test]
fn misuse_03_torn_views() {
    let o = m03::run();
    assert_eq!(o.broken_listed_wrongly, 1);
    assert_eq!(o.broken_missing_from_index, 1);
    assert!(o.fixed_reads > 0);
    assert_eq!(o.fixed_torn_reads, 0, "IndexedStore showed a torn read");
    assert_eq!(o.broken_mutated_stale, 1);
    assert_eq!(o.fixed_replaced_stale, 0);
}

#[test]
fn misuse_04_check_then_act() {
    let o = m04::run();
    // Double init: every caller checked before anyone inserted.
    assert_eq!(o.broken_inits, o.callers);
    assert_eq!(o.broken_distinct_values, o.callers);
    assert_eq!(o.fixed_inits, 1, "get_or_init ran the init more than once");
    assert_eq!(o.fixed_distinct_values, 1);
    // Lost update.
    assert_eq!(o.broken_final, 1);
    assert_eq!(o.broken_lost, o.racers - 1);
    assert_eq!(o.fixed_final, o.racers, "update lost a write");
    assert!(
        o.fixed_closure_runs > o.racers,
        "the loser must have recomputed: {} runs",
        o.fixed_closure_runs
    );
    assert_eq!(o.stress_fixed_final, o.stress_expected);
}

#[test]
fn misuse_05_guard_held_while_writing() {
    let o = m05::run();
    assert!(o.broken_same_key_deadlock);
    assert!(o.broken_other_keys_deadlocked > 0);
    assert!(o.broken_other_keys_deadlocked < o.other_keys);
    assert!(o.broken_rwlock_deadlock);
    assert_eq!(o.fixed_writes_completed, 3);
    assert_eq!(
        o.fixed_guard_version, 0,
        "the guard keeps the value it loaded"
    );
    assert_eq!(o.fixed_final_version, 3);
    assert!(o.fixed_store_writes_completed);
}

#[test]
fn misuse_06_lock_across_await() {
    let o = m06::run();
    assert!(
        o.broken_stalled,
        "the guard held across .await stalled nothing"
    );
    assert!(!o.scoped_stalled);
    assert!(o.snapshot_b_wrote_while_a_suspended);
    assert_eq!(o.snapshot_version_used_by_a, 0);
    assert_eq!(o.snapshot_final_version, 1);
}

#[test]
fn misuse_07_recursive_read_lock() {
    let o = m07::run();
    assert!(
        o.broken_deadlock,
        "the nested read got through a waiting writer"
    );
    assert!(o.broken_writer_finished_after_release);
    assert!(o.fixed_store_completed_under_guard);
    assert_eq!(o.fixed_versions_seen, (0, 1));
}

#[test]
fn misuse_08_iterate_while_mutating() {
    let o = m08::run();
    assert_eq!((o.broken_seen_twice, o.broken_missed), (1, 1));
    assert_eq!(o.broken_removes_deadlocked as u32, o.jobs / 2);
    assert_eq!((o.fixed_seen_twice, o.fixed_missed), (0, 0));
    assert_eq!(o.fixed_removed_in_loop as u32, o.jobs / 2);
}

#[test]
fn misuse_09_relaxed_publication() {
    let o = m09::run_rounds(100);
    // The broken half cannot be asserted at run time (x86 never shows it);
    // loom-tests/tests/misuse.rs `relaxed_flag_publication_is_caught` does.
    assert!(o.broken_stale_at_run_time <= o.rounds);
    assert_eq!(o.fixed_flag_stale, 0);
    assert_eq!(o.fixed_snapshot_stale, 0);
}

#[test]
fn misuse_10_stale_snapshot() {
    let o = m10::run();
    assert_eq!(
        o.broken_applied,
        m10::Limit {
            amount: 100,
            window: "minute"
        }
    );
    assert_eq!(o.broken_versions, (0, 1));
    assert_eq!(
        o.fixed_applied,
        m10::Limit {
            amount: 100,
            window: "second"
        }
    );
    assert_eq!(o.fixed_versions, (0, 0));
    assert_eq!(o.broken_staleness, o.updates);
    assert_eq!(o.fixed_staleness, 0);
}

#[test]
fn misuse_11_unbounded_growth() {
    let (requests, capacity) = (20_000, 500);
    let o = m11::run_with(requests, capacity);
    assert_eq!(o.broken_entries, requests);
    assert_eq!(o.broken_expired_still_held, requests - capacity + 1);
    assert_eq!(o.fixed_entries, capacity);
    assert_eq!(o.fixed_max_len_seen, capacity, "the bound was exceeded");
    assert_eq!(o.fixed_evictions, (requests - capacity) as u64);
    assert!(
        o.fixed_concurrent_max_len_seen <= capacity,
        "the bound was exceeded"
    );
    assert!(o.broken_bytes > 10 * o.fixed_bytes);
}

#[test]
fn misuse_12_poisoned_init() {
    let o = m12::run();
    assert_eq!(o.broken_lazy_failed, o.later_callers);
    assert_eq!(o.broken_lazy_init_runs, 1, "LazyLock never retries");
    assert_eq!(o.broken_mutex_poisoned, o.later_callers);
    assert_eq!(o.fixed_snapshot_failed, 0);
    assert_eq!(o.fixed_snapshot_value, o.later_callers as u64);
    assert_eq!(o.fixed_typed_failed, 0);
    assert_eq!(o.fixed_typed_init_runs, 2);
    assert_eq!(o.fixed_typed_error_sticky, 0);
    assert_eq!(o.fixed_handover, (true, true));
    assert_eq!(o.fixed_handover_stats, (1, 2));
}

#[test]
fn misuse_13_blocking_single_flight() {
    // The broken runtime hangs in a detached thread that `run` gave up on
    // after its deadline: this test finishes, and the stuck thread does not
    // keep the test binary from exiting.
    let o = m13::run();
    assert!(
        !o.broken_multi_thread_finished,
        "the blocking form finished: the hang it demonstrates did not happen"
    );
    assert!(o.broken_current_thread_panicked);
    for (values, inits) in [&o.fixed_multi_thread, &o.fixed_current_thread] {
        assert_eq!(values.len(), 3);
        assert!(values.iter().all(|v| v == "id,name"), "{values:?}");
        assert_eq!(*inits, 1, "the async form ran the init more than once");
    }
}

#[test]
fn misuse_14_handmade_work_queue() {
    let o = m14::run();
    // Broken: cleared on take, two workers hold the key at once; cleared
    // on done, the change that came mid-processing is never processed.
    assert_eq!(o.broken_most_in_flight, 2);
    assert_eq!(o.broken_versions, [1]);
    assert_eq!(o.last_version, 2);
    // Fixed: one worker at a time, and the last version processed.
    assert_eq!(o.fixed_most_in_flight, 1);
    assert!(!o.fixed_second_worker_got_it_early);
    assert_eq!(o.fixed_versions, [1, 2]);
}
