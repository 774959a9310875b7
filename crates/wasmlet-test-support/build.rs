//! Generates the table of plugin components the tests load (`components.rs` in `OUT_DIR`):
//! one constant per cdylib crate of `plugins/` and per `[[example]]` of `tests/guests/`, each
//! with the path `scripts/build-plugins.sh` writes it to. A test naming a component that no
//! crate builds then fails to compile instead of failing at run time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One component: its constant's name, its file stem, where it is built, and what it is.
struct Entry {
    constant: String,
    stem: String,
    path: PathBuf,
    doc: String,
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let mut entries = plugins(&root);
    entries.extend(guests(&root));
    entries.sort_by(|a, b| a.constant.cmp(&b.constant));

    let mut code = String::new();
    for entry in &entries {
        writeln!(
            code,
            "/// {}\npub const {}: Component = Component {{ name: {:?}, path: {:?} }};",
            entry.doc,
            entry.constant,
            entry.stem,
            entry.path.display().to_string()
        )
        .expect("write to a String");
    }
    let all: Vec<&str> = entries.iter().map(|e| e.constant.as_str()).collect();
    writeln!(
        code,
        "/// Every component the plugin and guest crates build.\npub const ALL: &[Component] = &[{}];",
        all.join(", ")
    )
    .expect("write to a String");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("components.rs"), code).expect("write components.rs");
}

/// Every cdylib member of the `plugins/` workspace: `plugins/target/wasm32-wasip2/release/`.
fn plugins(root: &Path) -> Vec<Entry> {
    let workspace = root.join("plugins/Cargo.toml");
    println!("cargo:rerun-if-changed={}", workspace.display());
    let text = read(&workspace);
    let Some(members) = text
        .split("members = [")
        .nth(1)
        .and_then(|m| m.split(']').next())
    else {
        panic!("{}: no `members = [...]`", workspace.display());
    };
    let mut entries = Vec::new();
    for member in members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
    {
        let crate_manifest = root.join("plugins").join(member).join("Cargo.toml");
        println!("cargo:rerun-if-changed={}", crate_manifest.display());
        let text = read(&crate_manifest);
        if !text.contains("\"cdylib\"") {
            continue;
        }
        let name =
            field(&text, "name").unwrap_or_else(|| panic!("{}: no name", crate_manifest.display()));
        let stem = name.replace('-', "_");
        entries.push(Entry {
            constant: stem.to_uppercase(),
            path: root
                .join("plugins/target/wasm32-wasip2/release")
                .join(format!("{stem}.wasm")),
            doc: format!(
                "`plugins/{member}`: {}.",
                field(&text, "description").unwrap_or_default()
            ),
            stem,
        });
    }
    entries
}

/// Every `[[example]]` of `tests/guests/`, with the comment above it as its description:
/// `tests/guests/target/wasm32-wasip2/release/examples/`.
fn guests(root: &Path) -> Vec<Entry> {
    let manifest = root.join("tests/guests/Cargo.toml");
    println!("cargo:rerun-if-changed={}", manifest.display());
    let text = read(&manifest);
    let lines: Vec<&str> = text.lines().collect();
    let mut entries = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() != "[[example]]" {
            continue;
        }
        let name = lines[i + 1..]
            .iter()
            .take_while(|l| !l.trim().starts_with('['))
            .find_map(|l| field(l, "name"))
            .unwrap_or_else(|| panic!("{}: an [[example]] without a name", manifest.display()));
        let doc = i
            .checked_sub(1)
            .and_then(|above| lines[above].strip_prefix("# "))
            .unwrap_or("A test guest.");
        entries.push(Entry {
            constant: name.to_uppercase(),
            path: root
                .join("tests/guests/target/wasm32-wasip2/release/examples")
                .join(format!("{name}.wasm")),
            doc: format!("`tests/guests/examples/{name}.rs`: {doc}"),
            stem: name,
        });
    }
    entries
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The string value of `key = "..."` on the first line that sets it.
fn field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
    })
}
