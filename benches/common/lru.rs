//! Workloads of the `lru` family (filled in with the primitive).
