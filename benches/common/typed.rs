//! Workloads of the `typed` family (filled in with the primitive).
