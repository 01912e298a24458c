//! placeholder
mod sys;
