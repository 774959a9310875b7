//! The generator on small WIT packages of its own: what it refuses, and how it lays out what
//! does not fit in core values.

use super::generate;
use std::path::PathBuf;

/// A WIT package `test:pkg` whose world `w` holds `items`, in a fresh directory.
fn package(name: &str, items: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("go-bindgen-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("w.wit"),
        format!("package test:pkg;\n\ninterface types {{\n    variant choice {{ one(u32), two }}\n}}\n\nworld w {{\n{items}\n}}\n"),
    )
    .unwrap();
    dir
}

fn error_of(name: &str, items: &str) -> String {
    let dir = package(name, items);
    let result = generate(&dir, "example.com/x/internal/wit", &["w".to_string()]);
    std::fs::remove_dir_all(&dir).unwrap();
    format!(
        "{:#}",
        result.expect_err("the generator should refuse this")
    )
}

#[test]
fn a_variant_is_refused_naming_the_function_and_parameter() {
    let message = error_of(
        "variant",
        "    use types.{choice};\n    export pick: func(c: choice);",
    );
    assert!(
        message.contains("pick: parameter c") && message.contains("WIT variant is not supported"),
        "{message}"
    );
}

#[test]
fn an_option_among_flat_parameters_is_refused() {
    let message = error_of("option", "    export maybe: func(o: option<u32>);");
    assert!(
        message.contains("export maybe")
            && message.contains("option as a flat parameter is not supported"),
        "{message}"
    );
}

#[test]
fn a_result_needs_a_string_error() {
    let message = error_of("result", "    export f: func() -> result<u32, u32>;");
    assert!(message.contains("error must be a string"), "{message}");
}

#[test]
fn what_docs_say_imports_nothing() {
    let dir = package(
        "docs",
        "    /// Mentions errors. and unsafe. and wit. in prose.\n    export f: func(x: u32) -> u32;",
    );
    let files = generate(&dir, "example.com/x/internal/wit", &["w".to_string()]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let interface = &files[&PathBuf::from("w/exports.go")];
    assert!(interface.contains("Mentions errors."), "{interface}");
    assert!(!interface.contains("import"), "{interface}");
    let exports = &files[&PathBuf::from("w/exports_wasip1.go")];
    assert!(!exports.contains("\"errors\""), "{exports}");
}

#[test]
fn a_section_heading_of_the_wit_file_is_not_an_items_doc() {
    let dir = package(
        "heading",
        "    // ---- a section of the file\n\n    /// Doubles x.\n    export f: func(x: u32) -> u32;",
    );
    let files = generate(&dir, "example.com/x/internal/wit", &["w".to_string()]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let interface = &files[&PathBuf::from("w/exports.go")];
    assert!(interface.contains("// Doubles x."), "{interface}");
    assert!(!interface.contains("----"), "{interface}");
}

#[test]
fn more_than_sixteen_flat_parameters_go_through_memory() {
    let params: Vec<String> = (0..17).map(|i| format!("p{i}: u32")).collect();
    let params = params.join(", ");
    let dir = package(
        "indirect",
        &format!(
            "    import many-in: func({params});\n    export many-out: func({params}) -> string;"
        ),
    );
    let files = generate(&dir, "example.com/x/internal/wit", &["w".to_string()]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let imports = &files[&PathBuf::from("imports_wasip1.go")];
    // The import's 17 arguments are stored in a buffer of 68 bytes, passed as one pointer.
    assert!(imports.contains("cabi.Alloc(68, 4)"), "{imports}");
    assert!(
        imports.contains("func importManyIn(c0 uint32)"),
        "{imports}"
    );
    let exports = &files[&PathBuf::from("w/exports_wasip1.go")];
    // The export reads its 17th argument at offset 64 of the one pointer it gets, and
    // returns the string through the return area.
    assert!(exports.contains("p16 := cabi.Load32(c0 + 64)"), "{exports}");
    assert!(
        exports.contains("func exportManyOut(c0 uint32) uint32"),
        "{exports}"
    );
    assert!(exports.contains("cabi.KeepString(ret)"), "{exports}");
}

#[test]
fn import_arguments_go_in_place_and_stay_alive_across_the_call() {
    let dir = package(
        "arguments",
        "    import greet: func(name: string, level: u8, words: list<string>);",
    );
    let files = generate(&dir, "example.com/x/internal/wit", &["w".to_string()]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let imports = &files[&PathBuf::from("imports_wasip1.go")];
    assert!(imports.contains("cabi.StringArg(name)"), "{imports}");
    assert!(!imports.contains("KeepString"), "{imports}");
    assert!(imports.contains("runtime.KeepAlive(name)"), "{imports}");
    assert!(imports.contains("runtime.KeepAlive(words)"), "{imports}");
    assert!(!imports.contains("runtime.KeepAlive(level)"), "{imports}");
}
