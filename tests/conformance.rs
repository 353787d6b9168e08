//! One conformance suite for both cache faces, `LruCache` and `TypedCache`:
//! each case is written once against [`face::Face`] and run for every cell
//! of the matrix face × policy × weights × expiry × hashing that `matrix!`
//! generates (test names read `case::face::policy::weights_expiry` with
//! keys' hashes spread, and `case::face::policy::hashing::weights_expiry`
//! where they collide: `one_hash`, every key hashes to 0; `two_hashes`,
//! the keys share two hashes). Each runs under a watchdog: a case that
//! spins fails by name.
//!
//! Both faces support every cell. A generated cell whose configuration
//! the face refuses (`Face::supports`) fails; `supported_cells` pins down
//! what each face supports, so a face cannot stop running a case
//! unnoticed. The face-specific wiring is in `conformance/face.rs` only.
//!
//! - `conformance/init.rs`: single-flight init, errors and panics of inits.
//! - `conformance/writes.rs`: inserts, the listener, statistics, `to_vec`,
//!   `clear`, borrowed lookups, `resize`.
//! - `conformance/expiry.rs`: deadlines on the manual clock, `purge_expired`.
//! - `conformance/bound.rs`: random sequences against `conformance/model.rs`.

#[path = "common/hasher.rs"]
mod hasher;
#[path = "common/watchdog.rs"]
mod watchdog;

#[path = "conformance/bound.rs"]
mod bound;
#[path = "conformance/expiry.rs"]
mod expiry;
#[path = "conformance/face.rs"]
mod face;
#[path = "conformance/init.rs"]
mod init;
#[path = "conformance/model.rs"]
mod model;
#[path = "conformance/writes.rs"]
mod writes;

use face::{Axes, Expiry, Face, Lru, Policy, Typed};
use hasher::Collide;

/// Every case, by the name its tests carry.
mod cases {
    pub use crate::bound::*;
    pub use crate::expiry::*;
    pub use crate::init::*;
    pub use crate::writes::*;
}

/// Runs `case` on face `F` in one cell (which `F` must support), under a
/// watchdog.
fn run<F: Face>(
    case: fn(&Axes),
    policy: Option<Policy>,
    weighted: bool,
    expiry: Expiry,
    collide: Collide,
) {
    let _watchdog = watchdog::arm(std::time::Duration::from_secs(60));
    let axes = Axes {
        policy,
        weighted,
        expiry,
        collide,
    };
    assert!(
        F::supports(&axes.config(1)),
        "{} does not support {axes:?}: the matrix must not generate this cell",
        F::NAME
    );
    case(&axes);
}

/// The policies of the matrix: the face's default, then each one.
const POLICIES: [Option<Policy>; 4] = [
    None,
    Some(Policy::Exact),
    Some(Policy::Clock),
    Some(Policy::S3Fifo),
];
const EXPIRIES: [Expiry; 3] = [Expiry::Never, Expiry::Ttl, Expiry::Tti];

fn supported<F: Face>() -> Vec<Axes> {
    let mut cells = Vec::new();
    for policy in POLICIES {
        for weighted in [false, true] {
            for expiry in EXPIRIES {
                let axes = Axes {
                    policy,
                    weighted,
                    expiry,
                    collide: Collide::Not,
                };
                if F::supports(&axes.config(1)) {
                    cells.push(axes);
                }
            }
        }
    }
    cells
}

/// The cells each face runs today; when a face gains a setting (and its
/// `supports` says so), this list grows with it.
#[test]
fn supported_cells() {
    let describe = |cells: Vec<Axes>| {
        cells
            .iter()
            .map(|a| format!("{:?}/{}/{:?}", a.policy, a.weighted, a.expiry))
            .collect::<Vec<_>>()
    };
    // Both faces: every policy, with and without weights, under every
    // expiry: exactly what `matrix!` generates.
    let generated: Vec<String> = ["None", "Some(Exact)", "Some(Clock)", "Some(S3Fifo)"]
        .iter()
        .flat_map(|policy| {
            ["false", "true"].iter().flat_map(move |weighted| {
                ["Never", "Ttl", "Tti"]
                    .iter()
                    .map(move |expiry| format!("{policy}/{weighted}/{expiry}"))
            })
        })
        .collect();
    assert_eq!(generated.len(), POLICIES.len() * 2 * EXPIRIES.len());
    assert_eq!(describe(supported::<Lru>()), generated);
    assert_eq!(describe(supported::<Typed>()), generated);
}

/// One module per case, face and policy; one test per weights × expiry.
macro_rules! matrix {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            mod lru {
                matrix!(@policies $case, crate::face::Lru);
            }
            mod typed {
                matrix!(@policies $case, crate::face::Typed);
            }
        }
    )*};
    (@policies $case:ident, $face:ty) => {
        mod default_policy {
            matrix!(@cells $case, $face, None);
        }
        mod exact {
            matrix!(@cells $case, $face, Some(crate::face::Policy::Exact));
        }
        mod clock {
            matrix!(@cells $case, $face, Some(crate::face::Policy::Clock));
        }
        mod s3fifo {
            matrix!(@cells $case, $face, Some(crate::face::Policy::S3Fifo));
        }
    };
    (@cells $case:ident, $face:ty, $policy:expr) => {
        matrix!(@hashing $case, $face, $policy, Not);
        mod one_hash {
            matrix!(@hashing $case, $face, $policy, All);
        }
        mod two_hashes {
            matrix!(@hashing $case, $face, $policy, Two);
        }
    };
    (@hashing $case:ident, $face:ty, $policy:expr, $collide:ident) => {
        matrix!(@cell $case, $face, $policy, $collide, unweighted_never, false, Never);
        matrix!(@cell $case, $face, $policy, $collide, unweighted_ttl, false, Ttl);
        matrix!(@cell $case, $face, $policy, $collide, unweighted_tti, false, Tti);
        matrix!(@cell $case, $face, $policy, $collide, weighted_never, true, Never);
        matrix!(@cell $case, $face, $policy, $collide, weighted_ttl, true, Ttl);
        matrix!(@cell $case, $face, $policy, $collide, weighted_tti, true, Tti);
    };
    (
        @cell $case:ident, $face:ty, $policy:expr, $collide:ident,
        $name:ident, $weighted:expr, $expiry:ident
    ) => {
        #[test]
        fn $name() {
            crate::run::<$face>(
                crate::cases::$case::<$face>,
                $policy,
                $weighted,
                crate::face::Expiry::$expiry,
                crate::hasher::Collide::$collide,
            );
        }
    };
}

matrix!(
    single_flight_inits_once,
    errors_are_not_cached,
    a_panicking_init_leaves_the_key_absent,
    insert_returns_the_displaced_value,
    the_listener_hears_each_cause,
    stats_are_exact_for_a_script,
    to_vec_and_clear,
    borrowed_lookups,
    expiry_deadlines,
    purge_expired_releases_the_expired,
    the_bound_holds_against_the_model,
    every_insert_keeps_the_bound,
    resize_keeps_the_bound,
);
