//! Workloads of the `ordered` family (filled in with the primitive).
