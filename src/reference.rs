//! The CPU reference `C = alpha * A ⊗ (B', D) + beta * C` in FP32, parallel over rows of C.
//! Every correctness test and the tuner's verification compare against it.
//!
//! OWNER: format helper.
