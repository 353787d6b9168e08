//! Workloads of the `indexed` family (filled in with the primitive).

/// The family's workloads (none until the primitive lands).
pub fn workloads(_size: super::Size) -> Vec<super::Workload> {
    Vec::new()
}
