//! tuner: searches the configuration space and measures candidates on the GPU.
