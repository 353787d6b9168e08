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
//! keeping a store in step with a source; [`async_use`] before calling
//! larder from async code; [`misuse`] for the classic mistakes with
//! concurrent maps and their fixes; [`benchmarks`] for the figures.

// The guides link each other by file name (`lru.md`), which resolves on
// GitHub. Here the same labels resolve to the modules: each guide's links
// are reference links, and a reference defined first (below, before the
// guide's own definitions) wins.
macro_rules! guide {
    ($(#[$attr:meta])* $name:ident, $file:literal) => {
        #[doc = concat!(
            "[snapshot.md]: crate::guide::snapshot\n",
            "[indexed.md]: crate::guide::indexed\n",
            "[ordered.md]: crate::guide::ordered\n",
            "[lru.md]: crate::guide::lru\n",
            "[typed.md]: crate::guide::typed\n",
            "[workqueue.md]: crate::guide::workqueue\n",
            "[reflector.md]: crate::guide::reflector\n",
            "[controller.md]: crate::guide::controller\n",
            "[async.md]: crate::guide::async_use\n",
            "[misuse.md]: crate::guide::misuse\n",
            "[benchmarks.md]: crate::guide::benchmarks\n",
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
guide!(async_use, "async.md");
guide!(misuse, "misuse.md");
guide!(benchmarks, "benchmarks.md");
