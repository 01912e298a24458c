//! cuzk-msm: Pippenger multi-scalar multiplication for BLS12-381 G1 and G2.
//!
//! Not implemented yet: this crate holds the workspace's place for the MSM
//! layer (issue "cuzk-msm"). Its point types come from [`cuzk_field`].

pub use cuzk_field::{G1Affine, G2Affine};
