//! Placeholder: the lru bench lands with the primitive.
fn main() {}
