//! What the two resident-memory examples (`heap_per_entry`,
//! `indexed_heap`) share: the process's resident set, scattered keys, and
//! measuring one structure in a child process of its own.

use std::process::Command;

/// The process's resident set in bytes (Linux's `/proc/self/statm`).
pub fn resident() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Keys in a scattered order (a bijection of `0..2^64`), so no structure
/// sees a sequential pattern it could favour.
pub fn key(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555
}

/// Runs `fill` and returns what it built with the resident bytes it added
/// (the hasher's lazy state touched before the first reading).
pub fn measured<T>(fill: impl FnOnce() -> T) -> (usize, T) {
    let _ = ahash::RandomState::new().hash_one(1_u64);
    let before = resident().expect("/proc/self/statm");
    let built = fill();
    let after = resident().expect("/proc/self/statm");
    (after.saturating_sub(before), built)
}

/// Runs this example again as `--child NAME ARGS...` and returns what it
/// printed.
pub fn child_output(name: &str, args: &[usize]) -> String {
    let exe = std::env::current_exe().expect("own path");
    let output = Command::new(&exe)
        .args(["--child", name])
        .args(args.iter().map(usize::to_string))
        .output()
        .expect("run the child");
    assert!(output.status.success(), "{name}: child failed: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// This example's two numbers: as a child (`--child NAME A B`), the row's
/// name and both; else `None` and the ones given, each defaulting as
/// `defaults` says (`--bench`, which cargo passes, ignored).
pub fn arguments(usage: &str, defaults: [usize; 2]) -> (Option<String>, [usize; 2]) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |a: &String| a.parse::<usize>().expect(usage);
    if let [flag, name, a, b] = &args[..]
        && flag == "--child"
    {
        return (Some(name.clone()), [number(a), number(b)]);
    }
    let mut given = args.iter().filter(|a| *a != "--bench").map(number);
    let [a, b] = defaults;
    (None, [given.next().unwrap_or(a), given.next().unwrap_or(b)])
}
