//! Shared printing and timing helpers for the `misuse_NN_*` examples.
//!
//! Each example includes this file with `#[path = "misuse_common/mod.rs"]`,
//! and `tests/misuse.rs` includes each example, so this module is compiled
//! once per example and once per included example; not every copy uses
//! every helper.
#![allow(dead_code)]

use std::fmt::Display;
use std::hash::{BuildHasherDefault, DefaultHasher};
use std::time::Duration;

/// How long a demonstrator waits for a lock before it reports that the
/// real, untimed call would have waited forever.
pub const STALL_TIMEOUT: Duration = Duration::from_millis(100);

/// A hasher with a fixed key, so maps iterate in the same order on every run
/// and every machine: the examples print the same numbers each time.
pub type FixedHasher = BuildHasherDefault<DefaultHasher>;

/// Prints the example's title.
pub fn header(number: u32, title: &str) {
    println!("misuse {number:02}: {title}");
}

/// Prints one line about the broken variant.
pub fn broken(what: impl Display) {
    println!("  broken  {what}");
}

/// Prints one line about the larder variant.
pub fn fixed(what: impl Display) {
    println!("  larder  {what}");
}

/// Prints a note under the results.
pub fn note(what: impl Display) {
    println!("  note    {what}");
}

/// Replaces the default panic message (a backtrace hint and a file name) by
/// one short line, for examples whose demonstrators panic on purpose.
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "<non-string panic>".to_owned());
        println!("          (panic, caught on purpose: {message})");
    }));
}
