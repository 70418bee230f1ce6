//! What the documentation says is true: the design document the code cites is in the
//! repository and has the sections cited, the README names files that exist and kernels that
//! parse, and its figures match the code.

use nmtune::codegen::KernelConfig;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every text file of the repository's own folders (no build output, no binary data).
fn text_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if fs::read_to_string(&path).is_ok() {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(root(), &mut files);
    files
}

fn design() -> String {
    fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md exists")
}

#[test]
fn nothing_cites_a_design_document_outside_the_repository() {
    let outside = ["DESIGN", ".md"].concat();
    for file in text_files() {
        let text = fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains(&outside),
            "{} cites {outside}, which is not in the repository: cite docs/design.md",
            file.display()
        );
    }
}

#[test]
fn every_citation_of_the_design_document_names_one_of_its_sections() {
    let headings: Vec<String> = design()
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(String::from)
        .collect();
    let mut citations = 0;
    for file in text_files() {
        let text = fs::read_to_string(&file).unwrap();
        // A patch kept for a later session may cite the sections it adds itself.
        let added: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("+## "))
            .collect();
        for (at, _) in text.match_indices("docs/design.md \"") {
            let rest = &text[at + "docs/design.md \"".len()..];
            let section = &rest[..rest.find('"').unwrap()];
            if section.starts_with('<') {
                continue; // the document saying how it is cited
            }
            assert!(
                headings.iter().any(|h| h == section) || added.contains(&section),
                "{} cites docs/design.md \"{section}\", not one of {headings:?}",
                file.display()
            );
            citations += 1;
        }
    }
    assert!(citations >= 3, "{citations} citations");
}

#[test]
fn the_design_document_covers_what_the_code_relies_on() {
    let text = design();
    for section in [
        "The operation",
        "The parameter space",
        "The kernel template (v4)",
        "The performance model",
        "Timing rules",
        "The data set",
    ] {
        assert!(text.contains(&format!("\n## {section}\n")), "{section}");
    }
    for term in [
        "B'",
        "col_info",
        "`row`",
        "`col`",
        "Padding",
        "w = k·N/M",
        "q = n/L",
        "cuBLAS",
    ] {
        assert!(text.contains(term), "{term}");
    }
}

/// Repository paths the README writes in backquotes.
fn readme_paths(readme: &str) -> Vec<String> {
    let prefixes = [
        "tuning-db/",
        "docs/",
        "shapes/",
        "src/",
        "scripts/",
        "examples/",
        "templates/",
        "migrations/",
        "assets/",
        "tests/",
    ];
    readme
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|quoted| quoted.split_whitespace())
        .filter(|word| prefixes.iter().any(|p| word.starts_with(p)))
        .map(|word| word.trim_end_matches([',', ')', ';']).to_string())
        .collect()
}

#[test]
fn the_readme_names_only_files_that_exist() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let paths = readme_paths(&readme);
    assert!(paths.len() > 20, "{paths:?}");
    for path in paths {
        // Placeholders, and what runs without a GPU write (git-ignored, never committed).
        let written = path.ends_with("-model.sqlite") || path.ends_with("-replay.sqlite");
        if path.contains(['<', '*', '…']) || written {
            continue;
        }
        assert!(
            root().join(&path).exists(),
            "README names {path}, which does not exist"
        );
    }
}

#[test]
fn every_kernel_name_in_the_readme_and_the_help_parses() {
    let mut names = 0;
    for file in [
        "README.md",
        "docs/design.md",
        "src/cli/kernel.rs",
        "src/cli/bench.rs",
    ] {
        let text = fs::read_to_string(root().join(file)).unwrap();
        for (at, _) in text.match_indices("nm_spmm_f32_") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if text[at + name.len()..].starts_with('…') {
                continue; // an abbreviation
            }
            assert!(
                KernelConfig::parse_name(&name).is_some(),
                "{file} names {name}, which is not a kernel name"
            );
            names += 1;
        }
    }
    assert!(names >= 2);
}

#[test]
fn the_readme_says_how_many_candidates_the_pruned_strategy_times() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let claim = readme
        .split("about ")
        .skip(1)
        .find_map(|rest| rest.strip_suffix_at(" candidates per Llama problem"))
        .expect("the README says how many candidates the pruned strategy times");
    let claimed: f64 = claim.parse().unwrap();
    let shapes = nmtune::shapes::load(&root().join("shapes/llama.yaml")).unwrap();
    let h200 = nmtune::gpu::GpuProfile::builtin("h200").unwrap();
    // Every seventh problem: all m, shapes and sparsities, in a few seconds.
    let problems: Vec<_> = shapes.problems().into_iter().step_by(7).collect();
    let total: usize = problems
        .iter()
        .map(|p| nmtune::tuner::search::candidates(p, &h200, nmtune::tuner::Strategy::Pruned).len())
        .sum();
    let mean = total as f64 / problems.len() as f64;
    assert!(
        (mean - claimed).abs() <= 1.0,
        "the README says about {claimed}, the pruned strategy times {mean:.1} per problem"
    );
}

/// `"9 candidates per …".strip_suffix_at(" candidates per")` → `Some("9")`.
trait StripSuffixAt {
    fn strip_suffix_at(&self, marker: &str) -> Option<&str>;
}

impl StripSuffixAt for str {
    fn strip_suffix_at(&self, marker: &str) -> Option<&str> {
        let end = self.find(marker)?;
        let head = &self[..end];
        (!head.is_empty() && head.chars().all(|c| c.is_ascii_digit() || c == '.')).then_some(head)
    }
}

#[test]
fn the_first_migration_is_the_one_every_database_recorded() {
    // sqlx refuses a database whose recorded checksum of an applied migration differs from
    // the build's: editing migrations/0001_init.sql, even a comment, would lock out every
    // existing database, the committed ones included.
    let recorded: Vec<u8> = {
        use sqlx::{ConnectOptions, Row};
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(root().join("tuning-db/h200.sqlite"))
            .immutable(true);
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async {
                let mut conn = options.connect().await.unwrap();
                sqlx::query("SELECT checksum FROM _sqlx_migrations WHERE version = 1")
                    .fetch_one(&mut conn)
                    .await
                    .unwrap()
                    .get(0)
            })
    };
    let sql = fs::read(root().join("migrations/0001_init.sql")).unwrap();
    use sha2::Digest;
    assert_eq!(sha2::Sha384::digest(&sql).to_vec(), recorded);
}
