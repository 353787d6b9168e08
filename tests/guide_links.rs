//! The guides in `docs/` are read in two places: on GitHub, where a link to
//! `lru.md` or `../examples/x.rs` resolves as a path, and on docs.rs as the
//! `larder::guide` modules, where it would not. Each guide links by
//! reference (`[text][lru.md]`, defined at the bottom of the page), and
//! `src/guide/links.md` defines every such label again for docs.rs. These
//! tests fail when a guide gains a link docs.rs could not follow.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn guides() -> Vec<(PathBuf, String)> {
    let mut pages: Vec<_> = fs::read_dir(root().join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| {
            let text = fs::read_to_string(&path).expect("a guide is UTF-8");
            (path, text)
        })
        .collect();
    pages.sort();
    assert!(pages.len() >= 10, "the guides are in docs/");
    pages
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The reference definitions (`[label]: target`) of `text`.
fn definitions(text: &str) -> BTreeMap<String, String> {
    prose(text)
        .filter_map(|line| {
            let rest = line.strip_prefix('[')?;
            let (label, target) = rest.split_once("]: ")?;
            Some((label.to_lowercase(), target.trim().to_owned()))
        })
        .collect()
}

fn is_external(target: &str) -> bool {
    target.starts_with("https://") || target.starts_with("http://") || target.starts_with('#')
}

#[test]
fn no_guide_links_inline_to_a_path() {
    let mut inline = Vec::new();
    for (path, text) in guides() {
        for line in prose(&text) {
            for (at, _) in line.match_indices("](") {
                let target = &line[at + 2..];
                if !is_external(target) {
                    inline.push(format!("{}: {line}", path.display()));
                }
            }
        }
    }
    assert!(
        inline.is_empty(),
        "link by reference ([text][label], with `[label]: path` at the bottom \
         of the page and in src/guide/links.md), not inline:\n{}",
        inline.join("\n")
    );
}

#[test]
fn every_path_a_guide_defines_is_defined_for_docs_rs() {
    let links = fs::read_to_string(root().join("src/guide/links.md"))
        .expect("src/guide/links.md is readable");
    let for_docs_rs = definitions(&links);
    let mut missing = Vec::new();
    for (path, text) in guides() {
        for (label, target) in definitions(&text) {
            if !is_external(&target) && !for_docs_rs.contains_key(&label) {
                missing.push(format!("{}: [{label}]: {target}", path.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "define these labels in src/guide/links.md too:\n{}",
        missing.join("\n")
    );
}

#[test]
fn docs_rs_definitions_name_a_guide_module_or_a_url() {
    let links = fs::read_to_string(root().join("src/guide/links.md"))
        .expect("src/guide/links.md is readable");
    let guide_rs = fs::read_to_string(root().join("src/guide.rs")).expect("src/guide.rs");
    let definitions = definitions(&links);
    assert!(!definitions.is_empty(), "src/guide/links.md defines labels");
    for (label, target) in definitions {
        if target.starts_with("https://") {
            continue;
        }
        let module = target
            .strip_prefix("crate::guide::")
            .unwrap_or_else(|| panic!("[{label}]: {target} is neither a URL nor a guide"));
        let module = module.split('#').next().unwrap_or_default();
        assert!(
            guide_rs.contains(&format!("guide!({module}, "))
                || guide_rs.contains(&format!("    {module},\n")),
            "[{label}]: {target} names no guide module"
        );
        let page = label.split('#').next().unwrap_or_default();
        let text = fs::read_to_string(root().join("docs").join(page))
            .unwrap_or_else(|_| panic!("[{label}] names no page in docs/"));
        if let Some((_, anchor)) = label.split_once('#') {
            assert!(
                prose(&text)
                    .filter_map(|line| line.strip_prefix('#'))
                    .any(|heading| slug(heading.trim_start_matches('#')) == anchor),
                "[{label}]: {page} has no heading whose anchor is #{anchor}"
            );
        }
    }
}

/// A heading's anchor, as GitHub and rustdoc spell it: lower case, spaces
/// as hyphens, punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}
