//! A controller runner: client-go's controller loop (and kube-runtime's
//! `Controller`) over any reflector [`Source`](crate::reflector::Source).
//! Needs the `reflector` feature.
//!
//! A [`Controller`] runs a [`Reflector`](crate::reflector::Reflector), puts
//! the key of every object that changed on a [`WorkQueue`](crate::WorkQueue),
//! and has `n` workers take keys and call an async `reconcile(key, object)`
//! with the object's *current* state in the store (`None` once deleted).
//! The queue gives each key to one worker at a time, folds the changes that
//! come while a key waits into one reconcile, and queues a key that changed
//! during its reconcile again for after it.
//!
//! - [`Action`]: what a successful reconcile asks for: nothing more, or a
//!   reconcile again after a delay.
//! - [`ReconcileError`]: a failed or panicking reconcile, as `on_error`
//!   receives it; the key is retried after its rate limiter's delay.
//! - [`ControllerBuilder`]: workers, rate limiter, clock, hasher, `on_error`
//!   and secondary watches (an owned object's change mapped to its owner's
//!   key).
//! - [`ControllerHandle`]: shut down gracefully, statistics
//!   ([`ControllerStats`]), queue a key by hand.
//!
//! The run future names no runtime: its workers, the reflector and the
//! handlers' deliveries all run on the task that polls it, concurrently but
//! not in parallel (as kube-runtime's `Controller` runs its reconciles).
//! A reconcile must not block the thread; CPU-heavy work goes to a
//! spawned task that the reconcile awaits.
//!
//! [The controller guide](https://github.com/larder-rs/larder/blob/main/docs/controller.md)
//! shows the loop and compares it with kube-runtime's.

// Files (one concept each): `action.rs` (Action), `error.rs`
// (ReconcileError), `stats.rs` (ControllerStats and its counters),
// `builder.rs` (ControllerBuilder), `watch.rs` (the handlers that queue
// keys: the primary's, and the secondary watches' mappers), `worker.rs`
// (one worker: take a key, read the store, reconcile with panics caught,
// settle the key), `run.rs` (Controller and the future that polls the
// reflector, the deliveries and the workers), `handle.rs`
// (ControllerHandle and the stop signal); `owner.rs` (with `kube`: a
// mapper through owner references).
mod action;
mod builder;
mod error;
mod handle;
#[cfg(feature = "kube")]
mod owner;
mod run;
mod stats;
mod watch;
mod worker;

pub use action::Action;
pub use builder::{ControllerBuilder, DEFAULT_WORKERS};
pub use error::ReconcileError;
pub use handle::ControllerHandle;
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub use owner::owner_keys;
pub use run::Controller;
pub use stats::ControllerStats;
