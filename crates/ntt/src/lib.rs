//! cuzk-ntt: number-theoretic transforms over BLS12-381 Fr on the GPU.
//!
//! Not implemented yet: this crate holds the workspace's place for the NTT
//! layer (issue "cuzk-ntt"). Its element type is [`cuzk_field::Fr`].

pub use cuzk_field::Fr;
