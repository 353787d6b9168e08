//! The showdown's per-round ratios (`examples/showdown/ratio.rs`): its unit
//! tests run here, since an example's own tests are not run by `cargo test`.

#[path = "../examples/showdown/ratio.rs"]
#[allow(dead_code)]
mod ratio;
