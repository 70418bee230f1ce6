//! Nothing is generated: this script exists for its build-dependency (see Cargo.toml,
//! `[build-dependencies]`), which makes the root crate's builds and the Python extension's
//! build compile every shared dependency alike.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
