//! Placeholder: the indexed bench lands with the primitive.
fn main() {}
