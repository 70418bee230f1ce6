//! runtime: looks up the best kernel for a problem and launches it.
