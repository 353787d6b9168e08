//! Every module with files of its own lists them: a `Files` paragraph in
//! its leading comments (`//!` for a private module; `//` below the user
//! docs of `lib.rs` and the public modules, so that docs.rs shows users
//! only what they use) names each child's file (`name.rs` or `name/`),
//! what it holds, and nothing else. These tests fail when a `mod` line and
//! that list disagree, so the map a maintainer reads first stays true.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a src/ entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The modules a file declares with a `mod name;` line (out-of-line
/// modules, whatever their `cfg`), each with its line number.
fn declared(text: &str) -> Vec<(String, usize)> {
    let mut mods = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        let rest = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub(super) "))
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        if let Some(name) = rest.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            mods.push((name.trim().to_owned(), number + 1));
        }
    }
    mods
}

/// The comment text of a line (`//!` or `//`, not `///`), or `None`.
fn comment(line: &str) -> Option<&str> {
    let line = line.trim_start();
    if line.starts_with("///") {
        return None;
    }
    line.strip_prefix("//!").or_else(|| line.strip_prefix("//"))
}

/// The names a file's `Files` paragraph lists (`name` for `name.rs` or
/// `name/`), or `None` when it has no such paragraph. The paragraph starts
/// at the first comment line reading `Files` (a `# Files` heading, or
/// `Files:`/`Files (...)`), and runs over the comment lines after it, up to
/// the next heading or the first line that is not a comment.
fn listed(text: &str) -> Option<BTreeSet<String>> {
    let mut lines = text.lines().skip_while(|line| {
        !comment(line).is_some_and(|c| {
            let c = c.trim_start().trim_start_matches("# ");
            c.starts_with("Files:") || c.starts_with("Files (") || c == "Files"
        })
    });
    let first = comment(lines.next()?)?;
    let mut names = BTreeSet::new();
    let mut add = |text: &str| {
        for (i, quoted) in text.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            let name = quoted
                .strip_suffix(".rs")
                .or_else(|| quoted.strip_suffix('/'));
            if let Some(name) = name.filter(|n| !n.is_empty() && !n.contains('/')) {
                if name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                {
                    names.insert(name.to_owned());
                }
            }
        }
    };
    add(first);
    for line in lines {
        match comment(line) {
            Some(c) if c.trim_start().starts_with('#') => break,
            Some(c) => add(c),
            None => break,
        }
    }
    Some(names)
}

/// The files that declare child modules: `lib.rs`, each folder's `mod.rs`,
/// and each `name.rs` beside a `name/` folder.
fn module_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|file| !declared(&fs::read_to_string(file).unwrap()).is_empty())
        .collect()
}

#[test]
fn every_module_with_children_lists_them() {
    let mut breaches = Vec::new();
    for file in module_files() {
        let text = fs::read_to_string(&file).unwrap();
        let at = file.strip_prefix(src()).unwrap().display().to_string();
        let Some(names) = listed(&text) else {
            breaches.push(format!(
                "src/{at}: no `Files` paragraph listing its modules"
            ));
            continue;
        };
        let mods: BTreeSet<String> = declared(&text).into_iter().map(|(m, _)| m).collect();
        for (name, line) in declared(&text) {
            if !names.contains(&name) {
                breaches.push(format!(
                    "src/{at}:{line}: `mod {name};` is not in the Files list"
                ));
            }
        }
        for name in names.difference(&mods) {
            breaches.push(format!(
                "src/{at}: the Files list names `{name}`, which no mod line declares"
            ));
        }
    }
    assert!(
        breaches.is_empty(),
        "module file lists:\n  {}",
        breaches.join("\n  ")
    );
}

#[test]
fn a_list_and_its_mod_lines_are_read_as_they_are_written() {
    // A negative control of the reading above: a list that omits a module,
    // and one that names a module no line declares, are both seen.
    let text = "//! Things.\n//!\n//! # Files\n//!\n//! - `a.rs`: a; `b/`: b.\n//! - `c.rs` (see `other/d.rs`)\n//!\n//! # Next\n//! `e.rs`\nmod a;\npub(crate) mod b;\n#[cfg(test)]\nmod f;\n";
    let names = listed(text).unwrap();
    assert_eq!(names, ["a", "b", "c"].map(String::from).into());
    let mods: Vec<String> = declared(text).into_iter().map(|(m, _)| m).collect();
    assert_eq!(mods, ["a", "b", "f"]);
    assert_eq!(
        listed("// Files: `x.rs`\nmod x;\n").unwrap(),
        ["x"].map(String::from).into()
    );
    assert!(listed("//! No list.\nmod x;\n").is_none());
}
