//! loom models of larder live in `tests/`; run them with `RUSTFLAGS="--cfg loom" cargo test -p loom-tests --release`.
//! This library holds what several model files share.

use std::sync::Once;

/// The panic message of the models' deliberately panicking inits.
pub const INIT_PANIC: &str = "init panicked on purpose";

/// Keeps the expected init panics ([`INIT_PANIC`]) of the panic models out
/// of the output; every other panic goes to the default hook.
pub fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let expected = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|message| *message == INIT_PANIC);
            if !expected {
                default(info);
            }
        }));
    });
}

/// The models' LRU cache: `capacity` entries over `shards` shards under
/// `policy` (a negative control injects its fault before building it).
pub fn lru(
    capacity: usize,
    shards: usize,
    policy: larder::EvictionPolicy,
) -> larder::LruCache<u32, u32> {
    larder::LruCache::builder()
        .capacity(capacity)
        .shards(shards)
        .policy(policy)
        .build()
        .expect("valid settings")
}
