//! The guides: for each primitive, what it is for, how to use it, what it
//! guarantees and what it costs; the reflector and a controller end to
//! end; larder from async code; the misuse catalogue; the benchmarks.
//! They are the pages of the repository's `docs/` folder, shipped in the
//! package, and every code block in them is compiled and run as a
//! doctest.
//!
//! Start with the guide of the primitive you need (the crate docs' table
//! says which): [`snapshot`], [`indexed`], [`ordered`], [`lru`],
//! [`typed`], [`workqueue`]; then [`reflector`] and [`controller`] for
//! keeping a store in step with a source, and [`kubernetes`] for doing so
//! with kube-rs; [`async_use`] before calling
//! larder from async code; [`misuse`] for the classic mistakes with
//! concurrent maps and their fixes; [`benchmarks`] for the figures.

// The guides link each other, the examples and their images by path
// (`lru.md`, `benchmarks.md#snapshot`, `../examples/x.rs`), which resolves
// on GitHub. Each guide's links are reference links whose definitions sit
// at the bottom of the page; `guide/links.md` defines the same labels for
// docs.rs (a guide becomes a module here, an example its page in the
// package's source) and comes first, and the first definition of a label
// wins. `tests/guide_links.rs` fails when a guide's link has no
// definition here.
macro_rules! guide {
    ($(#[$attr:meta])* $name:ident, $file:literal) => {
        #[doc = concat!(
            include_str!("guide/links.md"),
            "\n",
            include_str!(concat!("../docs/", $file)),
        )]
        $(#[$attr])*
        pub mod $name {}
    };
}

guide!(snapshot, "snapshot.md");
guide!(indexed, "indexed.md");
guide!(ordered, "ordered.md");
guide!(lru, "lru.md");
guide!(typed, "typed.md");
guide!(workqueue, "workqueue.md");
guide!(
    // Its examples use the reflector, and one the etcd source: its
    // doctests run when the `etcd` feature is on (as in CI).
    #[cfg(any(not(doctest), feature = "etcd"))]
    reflector,
    "reflector.md"
);
guide!(
    // Its loop runs a reflector.
    #[cfg(any(not(doctest), feature = "reflector"))]
    controller,
    "controller.md"
);
guide!(
    // Its example needs kube's client.
    #[cfg(any(not(doctest), feature = "kube"))]
    kubernetes,
    "kubernetes.md"
);
guide!(async_use, "async.md");
guide!(misuse, "misuse.md");
guide!(benchmarks, "benchmarks.md");
