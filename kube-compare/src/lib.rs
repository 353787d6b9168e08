//! larder's Kubernetes cache beside kube-runtime's reflector store, on the
//! same objects: pods of a realistic shape (labels, owner references, a
//! few containers) spread over nodes and namespaces. Not published: the
//! programs here measure; `docs/benchmarks.md` holds their figures.

pub mod pods;
