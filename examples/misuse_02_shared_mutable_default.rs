//! Misuse 02: one shared mutable value aliased as the default of many keys.
//!
//! Go original: `m.LoadOrStore(key, &defaultSettings)` stores the same
//! pointer under every key; mutating it through one key changes them all.
//! The Rust form is an `Arc<Mutex<T>>` cloned into every entry as its
//! default. The fix: store immutable values (`Arc<T>` gives out only `&T`)
//! and replace a key's value instead of mutating it.
//!
//! Run with `cargo run --example misuse_02_shared_mutable_default`.

#[path = "misuse_common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dashmap::DashMap;
use larder::Snapshot;

/// A tenant's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Requests per second.
    pub rate_limit: u32,
    /// Whether the tenant may use the beta API.
    pub beta: bool,
}

const DEFAULT: Settings = Settings {
    rate_limit: 100,
    beta: false,
};

/// What happened when one tenant's limit was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How many tenants there are.
    pub tenants: usize,
    /// Tenants whose settings changed, broken variant (should be 1).
    pub broken_changed: usize,
    /// Tenants whose settings changed, larder variant.
    pub fixed_changed: usize,
}

fn tenant(i: usize) -> String {
    format!("tenant-{i}")
}

/// BROKEN: every tenant gets a clone of one `Arc<Mutex<Settings>>`.
fn broken(tenants: usize) -> usize {
    let default = Arc::new(Mutex::new(DEFAULT));
    let table: DashMap<String, Arc<Mutex<Settings>>> = DashMap::new();
    for i in 0..tenants {
        table
            .entry(tenant(i))
            .or_insert_with(|| Arc::clone(&default));
    }
    // Give tenant-3 its own limit, through its entry.
    table
        .get("tenant-3")
        .expect("present")
        .lock()
        .unwrap()
        .rate_limit = 5;
    table
        .iter()
        .filter(|entry| *entry.value().lock().unwrap() != DEFAULT)
        .count()
}

/// LARDER: values are `Arc<Settings>`, immutable; sharing one default is
/// safe. A change replaces the tenant's value inside `Snapshot::update`.
fn fixed(tenants: usize) -> usize {
    let default = Arc::new(DEFAULT);
    let table: Snapshot<HashMap<String, Arc<Settings>>> = Snapshot::new(
        (0..tenants)
            .map(|i| (tenant(i), Arc::clone(&default)))
            .collect(),
    );
    // `table.load()["tenant-3"].rate_limit = 5;` does not compile: an `Arc`
    // hands out `&Settings` only. Replace the value instead.
    table.update(|old| {
        let mut new = old.clone();
        let current = &new["tenant-3"];
        let changed = Settings {
            rate_limit: 5,
            ..Settings::clone(current)
        };
        new.insert("tenant-3".to_owned(), Arc::new(changed));
        new
    });
    table
        .load()
        .values()
        .filter(|settings| ***settings != DEFAULT)
        .count()
}

/// Runs both variants with eight tenants.
pub fn run() -> Outcome {
    let tenants = 8;
    Outcome {
        tenants,
        broken_changed: broken(tenants),
        fixed_changed: fixed(tenants),
    }
}

fn main() {
    common::header(
        2,
        "one shared mutable value aliased as the default of many keys",
    );
    let outcome = run();
    common::broken(format!(
        "Arc<Mutex<Settings>> shared as the default: setting tenant-3's limit changed {} of {} tenants",
        outcome.broken_changed, outcome.tenants
    ));
    common::fixed(format!(
        "immutable Arc<Settings> in a Snapshot, replaced with update: changed {} of {} tenants",
        outcome.fixed_changed, outcome.tenants
    ));
}
