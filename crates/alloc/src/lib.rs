//! cuzk-alloc: device-memory strategies, a memory budget with a safety
//! margin, and pinned host buffers.
//!
//! Not implemented yet: this crate holds the workspace's place for the
//! allocator layer (issue "cuzk-alloc"). GPU discovery lives in
//! [`cuzk_field::gpu`] for now.

pub use cuzk_field::gpu;
