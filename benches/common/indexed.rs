//! Workloads of the `indexed` family (filled in with the primitive).
