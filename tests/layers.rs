//! The library's modules form layers, and every `crate::` path points down: a module uses only
//! modules of lower layers (or of its own). Read from the source text, so that a new arrow
//! upwards fails here before it tangles the design (docs/design.md, "Layers").

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// The top-level modules of `src/`, lowest layer first; modules on one line share a layer
/// and must not use each other.
const LAYERS: [&[&str]; 8] = [
    &["problem", "gpu_profile"],
    &["format", "shapes", "summary"],
    &["reference", "codegen", "checkpoint"],
    &["model", "gpu"],
    &["kernels", "db"],
    &["plot", "replay"],
    &["tuner", "runtime"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every `crate::<module>` a source file names, outside comments.
fn uses(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (at, _) in code.match_indices("crate::") {
            let name: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // Items of lib.rs itself (TOOL_VERSION) are below every module.
            if name.starts_with(|c: char| c.is_ascii_lowercase()) {
                found.insert(name);
            }
        }
    }
    found
}

fn visit(dir: &Path, top: Option<&str>, arrows: &mut Vec<(String, String, String)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        // A file's module is the first component below src/; main.rs and the CLI are one.
        let module = top
            .map(str::to_string)
            .unwrap_or_else(|| match name.as_str() {
                "main" => "cli".to_string(),
                other => other.to_string(),
            });
        if path.is_dir() {
            visit(&path, Some(&module), arrows);
        } else if path.extension().is_some_and(|e| e == "rs") {
            for used in uses(&fs::read_to_string(&path).unwrap()) {
                arrows.push((module.clone(), used, path.display().to_string()));
            }
        }
    }
}

#[test]
fn every_module_uses_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut arrows = Vec::new();
    visit(&src, None, &mut arrows);
    assert!(arrows.len() > 50, "read too little: {}", arrows.len());
    let mut wrong = Vec::new();
    for (from, to, file) in &arrows {
        if from == to || from == "lib" {
            continue;
        }
        match (layer_of(from), layer_of(to)) {
            (Some(a), Some(b)) if b < a => {}
            (None, _) => wrong.push(format!("{file}: module {from} is in no layer")),
            (_, None) => wrong.push(format!("{file}: uses crate::{to}, which is in no layer")),
            _ => wrong.push(format!(
                "{file}: {from} uses crate::{to}, a module of its layer or above"
            )),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checker_sees_an_arrow_upwards() {
    let text = "use crate::tuner::search; // crate::cli in a comment\nfn f() { crate::db::x(crate::TOOL_VERSION); }";
    let names: Vec<String> = uses(text).into_iter().collect();
    assert_eq!(names, ["db", "tuner"]);
    assert!(layer_of("runtime") > layer_of("kernels"));
    assert_eq!(layer_of("tuner"), layer_of("runtime"));
}
