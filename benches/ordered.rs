//! Placeholder: the ordered bench lands with the primitive.
fn main() {}
