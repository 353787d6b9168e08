//! Placeholder: the typed bench lands with the primitive.
fn main() {}
