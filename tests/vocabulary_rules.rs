//! The vocabulary's rules (the crate docs' "Vocabulary"), held over the
//! source: every `pub` method of every type the crate exports is read
//! with `syn`, and each rule below fails naming the method that breaks it.
//! `tests/vocabulary.rs` checks the shared names by compiling calls (and
//! the methods a macro writes, such as the cache builders' setters, which
//! this reading of the source does not expand); this file checks the rules
//! a new method must follow.
//!
//! A method is public here when it is `pub` (not `pub(crate)`), in an
//! inherent `impl` of a type that `lib.rs` or a public module
//! (`reflector`, `controller`) re-exports, and not compiled only for tests
//! or loom (`cfg(test)`, `cfg(loom)`, `feature = "testing"`) nor hidden
//! from the docs.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::{FnArg, ImplItem, Item, ReturnType, Type, UseTree, Visibility};

/// A public method: its type, name, whether it takes `&self` (and
/// nothing else), its return type as written, and where it is.
#[derive(Debug, Clone)]
struct Method {
    ty: String,
    name: String,
    /// `&self` and no other argument.
    self_only: bool,
    /// Takes `&self` (not a builder's `self`).
    by_ref: bool,
    /// An `async fn`.
    is_async: bool,
    /// The return type as tokens, `()` when none.
    output: String,
    /// The outermost type of the return type (`Vec`, `Result`, ...).
    output_head: String,
    file: PathBuf,
}

impl Method {
    fn at(&self) -> String {
        format!("{}::{} ({})", self.ty, self.name, self.file.display())
    }
}

/// Whether `attrs` keep an item out of the public API: test or loom only,
/// the `testing` feature, or hidden from the docs.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        let tokens = match &attr.meta {
            syn::Meta::List(list) => list.tokens.to_string(),
            _ => String::new(),
        };
        (path.is_ident("cfg")
            && (tokens.contains("test") || tokens.contains("loom") || tokens.contains("testing")))
            || (path.is_ident("doc") && tokens.contains("hidden"))
    })
}

/// The last identifier of a type path (`IndexedStore` of
/// `IndexedStore<K, V, S>`).
fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn collect_methods(items: &[Item], file: &Path, out: &mut Vec<Method>) {
    for item in items {
        match item {
            Item::Impl(block) if block.trait_.is_none() && !test_only(&block.attrs) => {
                let Some(ty) = type_name(&block.self_ty) else {
                    continue;
                };
                for member in &block.items {
                    let ImplItem::Fn(f) = member else { continue };
                    if !matches!(f.vis, Visibility::Public(_)) || test_only(&f.attrs) {
                        continue;
                    }
                    let inputs: Vec<&FnArg> = f.sig.inputs.iter().collect();
                    let by_ref = matches!(
                        inputs.first(),
                        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none()
                    );
                    let self_only = by_ref && inputs.len() == 1;
                    let (output, output_head) = match &f.sig.output {
                        ReturnType::Default => ("()".to_string(), "()".to_string()),
                        ReturnType::Type(_, ty) => {
                            (quote_type(ty), type_name(ty).unwrap_or_default())
                        }
                    };
                    out.push(Method {
                        ty: ty.clone(),
                        name: f.sig.ident.to_string(),
                        self_only,
                        by_ref,
                        is_async: f.sig.asyncness.is_some(),
                        output,
                        output_head,
                        file: file.to_path_buf(),
                    });
                }
            }
            Item::Mod(module) if !test_only(&module.attrs) => {
                if let Some((_, items)) = &module.content {
                    collect_methods(items, file, out);
                }
            }
            _ => {}
        }
    }
}

fn quote_type(ty: &Type) -> String {
    use quote::ToTokens;
    ty.to_token_stream().to_string()
}

/// The names a `pub use` tree exports (the last segment of each path, or
/// its rename).
fn exported(tree: &UseTree, out: &mut BTreeSet<String>) {
    match tree {
        UseTree::Path(path) => exported(&path.tree, out),
        UseTree::Name(name) => {
            out.insert(name.ident.to_string());
        }
        UseTree::Rename(rename) => {
            out.insert(rename.rename.to_string());
        }
        UseTree::Group(group) => group.items.iter().for_each(|tree| exported(tree, out)),
        UseTree::Glob(_) => {}
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every public method of every exported type, by type.
fn public_api() -> BTreeMap<String, Vec<Method>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut exports = BTreeSet::new();
    let mut methods = Vec::new();
    for path in &files {
        let text = fs::read_to_string(path).expect("read a source file");
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let relative = path.strip_prefix(&src).unwrap();
        // The crate root and the public modules re-export the public types.
        let public_module = relative == Path::new("lib.rs")
            || relative.starts_with("reflector")
            || relative.starts_with("controller")
            || relative == Path::new("guide.rs");
        for item in &file.items {
            if let Item::Use(used) = item
                && public_module
                && matches!(used.vis, Visibility::Public(_))
                && !test_only(&used.attrs)
            {
                exported(&used.tree, &mut exports);
            }
        }
        collect_methods(&file.items, relative, &mut methods);
    }
    let mut api: BTreeMap<String, Vec<Method>> = BTreeMap::new();
    for method in methods {
        if exports.contains(&method.ty) {
            api.entry(method.ty.clone()).or_default().push(method);
        }
    }
    assert!(
        api.contains_key("IndexedStore")
            && api.contains_key("WorkQueue")
            && api.contains_key("ControllerBuilder"),
        "the source walk found no public API: {:?}",
        api.keys().collect::<Vec<_>>()
    );
    api
}

fn has(api: &BTreeMap<String, Vec<Method>>, ty: &str, name: &str) -> bool {
    api.get(ty)
        .is_some_and(|methods| methods.iter().any(|m| m.name == name))
}

/// Fails listing every breach of `rule`, one a line.
fn check(rule: &str, breaches: Vec<String>) {
    assert!(breaches.is_empty(), "{rule}:\n  {}", breaches.join("\n  "));
}

/// "Iteration is named for its cost": a method that copies every entry
/// into a `Vec` is `to_vec()` (or `range_to_vec`, `keys_to_vec`,
/// `to_vec_sorted`: the rest of the name says what it copies or how). A `&self` method with no argument that
/// returns a `Vec` is such a copy, except those below, which copy no
/// entries.
#[test]
fn a_copy_of_every_entry_is_to_vec() {
    // (type, method, what it returns instead of entries)
    const NOT_ENTRIES: &[(&str, &str, &str)] = &[
        ("IndexedStore", "index_names", "the names of the indexes"),
        (
            "IndexedStoreBuilder",
            "index_names",
            "the names of the indexes",
        ),
        ("StoreReader", "index_names", "the names of the indexes"),
    ];
    let api = public_api();
    let breaches = api
        .values()
        .flatten()
        .filter(|m| m.self_only && m.output_head == "Vec")
        .filter(|m| !m.name.starts_with("to_vec") && !m.name.ends_with("_to_vec"))
        .filter(|m| {
            !NOT_ENTRIES
                .iter()
                .any(|(t, n, _)| *t == m.ty && *n == m.name)
        })
        .map(|m| {
            format!(
                "{} returns {}: name it to_vec or x_to_vec",
                m.at(),
                m.output
            )
        })
        .collect();
    check(
        "a `&self` method returning a Vec is a copy: to_vec",
        breaches,
    );
}

/// "Builders": `build()` returns `Result<X, BuildError>`, one error for
/// every builder (the reflector module's builders, which take their
/// required parts as arguments, have errors of their own); shortcut
/// constructors (`new`) return the value and panic on an invalid argument,
/// as their *Panics* sections say; a hasher is a builder setting, never a
/// `with_hasher` constructor.
#[test]
fn builders_return_build_error_and_constructors_return_the_value() {
    let api = public_api();
    let mut breaches = Vec::new();
    for m in api.values().flatten() {
        let reflector = m.file.starts_with("reflector");
        if m.name == "build" && !reflector && !m.output.contains("BuildError") {
            breaches.push(format!(
                "{} returns {}: Result<_, BuildError>",
                m.at(),
                m.output
            ));
        }
        if m.name == "new" && matches!(m.output_head.as_str(), "Result" | "Option") {
            breaches.push(format!(
                "{} returns {}: a shortcut constructor returns the value (a builder returns Result)",
                m.at(),
                m.output
            ));
        }
        if m.name == "with_hasher" {
            breaches.push(format!(
                "{}: a hasher is a builder setting (`.hasher(S)`)",
                m.at()
            ));
        }
    }
    check("builders and constructors", breaches);
}

/// "Blocking forms come as a family": a wait with a deadline
/// (`x_timeout`) has its blocking form, its non-blocking twin and its
/// async form. The non-blocking twin is `try_x` beside a blocking `x`
/// (`WorkQueue::get`, as client-go and std's channels name them), or `x`
/// itself where std names the non-blocking operation `x`
/// (`OrderedIndex::pop_first`, as `BTreeMap`'s), whose blocking form is
/// then `x_wait`. (`WorkQueue::shut_down_with_drain`'s twin that never
/// waits is `shut_down`, as in client-go.) A wait that is only async (the reflector's, which runs
/// as a future) has its `async fn x_timeout` beside `async fn x`. A
/// timeout returns an `Option` when running out of time is the one way to
/// fail, a `Result` whose error names each way, or, where timing out is a
/// result rather than a failure, an outcome that says so
/// (`DrainOutcome`, as std's `Condvar::wait_timeout` returns a
/// `WaitTimeoutResult`).
#[test]
fn every_timeout_has_its_blocking_non_blocking_and_async_twins() {
    let api = public_api();
    let mut breaches = Vec::new();
    let mut families = 0;
    let find = |ty: &str, name: &str| {
        api.get(ty)
            .and_then(|ms| ms.iter().find(|m| m.name == name))
    };
    for (ty, methods) in &api {
        for m in methods
            .iter()
            .filter(|m| m.by_ref && m.name.ends_with("_timeout"))
        {
            families += 1;
            let base = m.name.trim_end_matches("_timeout");
            let says = matches!(m.output_head.as_str(), "Option" | "Result" | "Vec")
                || m.output_head.ends_with("Outcome");
            if !says {
                breaches.push(format!(
                    "{} returns {}: a timeout returns Option (one way to fail) or Result",
                    m.at(),
                    m.output
                ));
            }
            if m.is_async {
                if !find(ty, base).is_some_and(|b| b.is_async) {
                    breaches.push(format!(
                        "{}: an async timeout needs async fn {base}",
                        m.at()
                    ));
                }
                continue;
            }
            // A drain's twin that never waits is the shutdown itself.
            let shutdown = base == "shut_down_with_drain" && has(&api, ty, "shut_down");
            let client_go =
                has(&api, ty, base) && (has(&api, ty, &format!("try_{base}")) || shutdown);
            let std_named = has(&api, ty, base) && has(&api, ty, &format!("{base}_wait"));
            if !client_go && !std_named {
                breaches.push(format!(
                    "{}: needs {base} and try_{base}, or {base} and {base}_wait",
                    m.at()
                ));
            }
            if !has(&api, ty, &format!("{base}_async")) {
                breaches.push(format!("{}: needs {base}_async", m.at()));
            }
        }
    }
    assert!(families >= 3, "only {families} blocking families found");
    check("blocking families", breaches);
}

/// "`get` returns a clone of what the primitive stores": an `Option`
/// (`WorkQueue::get` is client-go's: it takes the next key to process).
#[test]
fn get_returns_an_option() {
    const DEVIATIONS: &[&str] = &["WorkQueue"];
    let api = public_api();
    let breaches = api
        .values()
        .flatten()
        .filter(|m| m.name == "get" && !DEVIATIONS.contains(&m.ty.as_str()))
        .filter(|m| m.output_head != "Option")
        .map(|m| format!("{} returns {}", m.at(), m.output))
        .collect();
    check("get returns Option", breaches);
}

/// "A read-only view offers every read and no write": `StoreReader`, the
/// reflector's view of the store it owns, has each `&self` read of
/// `IndexedStore` under the same name and return type, and no write; its
/// other methods are the reflector handle's waits, under the handle's
/// names. A read added to `IndexedStore` fails here until the reader has
/// it; a new write fails until it is listed below.
#[test]
fn a_store_reader_offers_every_read_and_no_write() {
    const WRITES: &[&str] = &[
        "insert",
        "remove",
        "replace",
        "clear",
        "transaction",
        "try_extend",
        "add_index",
        "add_try_index",
        "insert_at_revision",
        "remove_at_revision",
        "replace_at_revision",
    ];
    let api = public_api();
    let reader = api.get("StoreReader").expect("StoreReader is exported");
    let store = &api["IndexedStore"];
    let handle = &api["ReflectorHandle"];
    // The reader's types spelled as the store's: `V` is `Arc<O>`.
    let as_store = |output: &str| output.replace("Arc < O >", "V");
    let mut breaches = Vec::new();
    for read in store
        .iter()
        .filter(|m| m.by_ref && !WRITES.contains(&m.name.as_str()))
    {
        match reader.iter().find(|m| m.name == read.name) {
            None => breaches.push(format!("{} has no StoreReader twin", read.at())),
            Some(twin) if as_store(&twin.output) != read.output => breaches.push(format!(
                "{} returns {}, the store's {}",
                twin.at(),
                twin.output,
                read.output
            )),
            Some(_) => {}
        }
    }
    for m in reader {
        let a_read = store.iter().any(|s| s.name == m.name && s.by_ref);
        let a_wait = handle
            .iter()
            .any(|h| h.name == m.name && h.output == m.output);
        if WRITES.contains(&m.name.as_str()) || !(a_read || a_wait) {
            breaches.push(format!(
                "{} is neither a read of IndexedStore nor a wait of ReflectorHandle",
                m.at()
            ));
        }
    }
    check("StoreReader: every read, no write", breaches);
}
