//! The shapes file: which problems to tune (see README "Shapes file").
//!
//! OWNER: format helper.
