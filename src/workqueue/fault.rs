//! The deliberately broken protocols of a [`WorkQueue`](super::WorkQueue)
//! (loom builds only): the loom suite's negative controls select one with
//! `WorkQueueBuilder::build_with_fault` to prove its models catch that bug.

/// A deliberately broken protocol, for the loom suite's negative controls.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The correct protocol.
    None,
    /// `done` forgets that the key was added while it was processed: the
    /// add is lost.
    DoneForgetsDirty,
    /// `get` hands a key out without marking it processing: an add while
    /// it is processed queues it for a second worker.
    GetSkipsProcessing,
    /// `shut_down` wakes one waiting worker, not all of them.
    ShutdownWakesOne,
    /// `done` queues a key added during processing again but wakes no
    /// waiting worker.
    DoneSkipsWake,
}
