//! Placeholder: filled in with the primitive.
