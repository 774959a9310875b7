//! Property tests: no manifest text panics the loader, and every refusal names a field of the
//! input it was given: a path the document has, a missing field under one it has, or the
//! document or file as a whole when the text is no single YAML mapping.

use super::*;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::HashSet;

const VALID: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: prod\n  labels: {app: web}\nspec:\n  restartPolicy: Always\n  terminationGracePeriodSeconds: 5\n  volumes:\n  - name: data\n    emptyDir: {sizeLimit: 64Mi}\n  initContainers:\n  - name: init\n    image: busybox:local\n  containers:\n  - name: web\n    image: busybox:local\n    env:\n    - name: LIMIT\n      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}\n    resources:\n      requests: {cpu: 100m, memory: 32Mi}\n      limits: {cpu: '1', memory: 64Mi}\n    volumeMounts:\n    - {name: data, mountPath: /data, subPath: x}\n";

fn check(text: &str) {
    if let Err(problem) = load(text, Path::new("/m/p.yaml"), "node") {
        assert!(!problem.reason.is_empty(), "{problem}");
        assert!(
            names_a_field_of(text, &problem.field),
            "{problem} names no field of {text:?}"
        );
    }
}

/// Whether `field` is a place in `text`: `(file)` when the text holds no document or more
/// than one, `(document)` when its one document is no mapping, and otherwise the path of a
/// value the document has or of a missing field directly under one (`spec.containers[0].image`
/// for a container without an image). A map entry may be named `.key` or, as for
/// quantities, `[key]`. A text that is no YAML value (a syntax error, a key twice) may name
/// `(document)`, or a path whose keys appear in the text but for the last, which may be
/// missing; a key is compared folded, as YAML reads a plain scalar cut by a line break.
fn names_a_field_of(text: &str, field: &str) -> bool {
    if field == "(file)" {
        return document_count(text) != 1;
    }
    let Ok(document) = wasmlet_plugin_host::yaml::from_str::<Value>(text) else {
        let keys = keys_of(field);
        let above = &keys[..keys.len().saturating_sub(1)];
        let text = folded(text);
        return field == "(document)" || above.iter().all(|key| text.contains(&folded(key)));
    };
    if field == "(document)" {
        return !document.is_object();
    }
    let field = dotted(field);
    let mut paths = HashSet::from([String::new()]);
    paths_of(&document, "", &mut paths);
    paths.contains(&field)
        || paths.iter().any(|path| {
            field
                .strip_prefix(path.as_str())
                .is_some_and(|rest| missing_under(rest, path.is_empty()))
        })
}

/// How many YAML documents `text` holds, as the loader counts them; a text that is no YAML
/// counts as one (the loader names the document, not the file).
fn document_count(text: &str) -> usize {
    wasmlet_plugin_host::yaml::document_count(text).unwrap_or(1)
}

/// `field` with each map entry written `.key` (a quantity's `limits[cpu]` is `limits.cpu`);
/// indices stay `[i]`.
fn dotted(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else {
            break;
        };
        let (before, key) = (&rest[..open], &rest[open + 1..close]);
        out.push_str(before);
        if key.parse::<usize>().is_ok() {
            out.push_str(&rest[open..=close]);
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(key);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether `rest` names fields missing under a path the document has: field names
/// (`.metadata.name`; at the root without the first dot), never an index.
fn missing_under(rest: &str, at_root: bool) -> bool {
    let rest = if at_root {
        rest
    } else {
        match rest.strip_prefix('.') {
            Some(r) => r,
            None => return false,
        }
    };
    !rest.is_empty()
        && rest.split('.').all(|name| {
            name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// Every path of `value` under `prefix`, map entries as `.key`, items as `[i]`.
fn paths_of(value: &Value, prefix: &str, paths: &mut HashSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let key = key.clone();
                let path = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                paths_of(child, &path, paths);
                paths.insert(path);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let path = format!("{prefix}[{i}]");
                paths_of(child, &path, paths);
                paths.insert(path);
            }
        }
        _ => {}
    }
}

/// `text` with each run of whitespace, line breaks included, as one space: YAML folds a line
/// break inside a plain scalar (a key cut by a `\r`) into a space.
fn folded(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The map keys a path names (`spec.containers[0].image`: spec, containers, image).
fn keys_of(field: &str) -> Vec<&str> {
    field
        .split(['.', '[', ']'])
        .filter(|key| !key.is_empty() && key.parse::<usize>().is_err())
        .collect()
}

#[test]
fn the_field_check_can_fail() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: c}]\n";
    assert!(names_a_field_of(text, "spec.containers[0].image"));
    assert!(names_a_field_of(text, "spec.containers[0].name"));
    assert!(names_a_field_of(text, "metadata[name]"));
    assert!(names_a_field_of("kind: Pod\n", "metadata.name"));
    assert!(!names_a_field_of(text, "spec.volumes[0].name"));
    assert!(!names_a_field_of(text, "spec.containers[0]image"));
    assert!(!names_a_field_of(text, "spec.containers[1].image"));
    assert!(!names_a_field_of(text, "(document)"));
    assert!(!names_a_field_of(text, "(file)"));
    assert!(names_a_field_of("a: 1\n---\nb: 2\n", "(file)"));
    assert!(names_a_field_of("[1, 2]", "(document)"));
}

/// The property test's finding: a scan error inside a container named `spec.containers[0].?`,
/// a `?` that is no field of the manifest; the place is the container.
#[test]
fn a_yaml_scan_error_names_where_it_stopped() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    image: b:\u{3ed88}  x: y\n";
    let problem = load(text, Path::new("/m/p.yaml"), "node").unwrap_err();
    assert_eq!(problem.field, "spec.containers[0]", "{problem}");
    assert!(problem.reason.contains("line"), "{problem}");
    assert_eq!(error_place("spec.?", true), "spec");
    let wrong = "apiVersion: v2\nkind: Pod\nspec: {containers: [{name: c, image: b}]}\n";
    let problem = load(wrong, Path::new("/m/p.yaml"), "node").unwrap_err();
    assert_eq!(problem.field, "apiVersion", "{problem}");
    assert_eq!(error_place("?", true), "(document)");
    assert_eq!(error_place(".", false), "(document)");
}

/// The property test's finding: a key that ends in `?` (a `\r` and `.?` spliced into a
/// flow mapping's key, read folded as `v .?`) in a document that is valid YAML is the
/// field's own name, not a place the scanner stopped at.
#[test]
fn a_key_ending_in_a_question_mark_is_named_whole() {
    let text = VALID.replace("limits: {cpu: '1'", "limits: {v\t\r.?, cpu: '1'");
    let problem = load(&text, Path::new("/m/p.yaml"), "node").unwrap_err();
    assert_eq!(
        problem.field, "spec.containers[0].resources.limits.v .?",
        "{problem}"
    );
    check(&text);
    assert_eq!(error_place("spec.a?", false), "spec.a?");
}

/// The property test's finding: a `\r` spliced into a flow mapping's key, which the loader
/// names folded, with a space for the line break.
#[test]
fn a_key_cut_by_a_line_break_names_a_field() {
    let text = VALID.replace(
        "requests: {cpu: 100m, memory: 32Mi}\n      limits",
        "requests: {cpu:/\u{88dcd}\r\u{c88a1}.      limits",
    );
    assert!(load(&text, Path::new("/m/p.yaml"), "node").is_err());
    check(&text);
    assert!(!names_a_field_of(
        &text,
        "spec.containers[0].resources.requests.cpu:/x.limits"
    ));
}

/// The `manifest` fuzz target's crash (fuzz/README.md): an anchor on a key YAML cannot scan
/// left an empty field in the problem.
#[test]
fn a_yaml_scan_error_names_the_document() {
    check("&r:\ni");
    let problem = load("&r:\ni", Path::new("/m/p.yaml"), "node").unwrap_err();
    assert_eq!(problem.field, "(document)", "{problem}");
}

/// Values a field of the valid manifest may be replaced with: quantities, numbers, names,
/// YAML structure, and bytes.
fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+]?[0-9]{0,45}(\\.[0-9]{0,45})?(e[-+]?[0-9]{1,12}|E|Ei|Ki|Mi|m|n|k|u|x)?",
        "-?[0-9]{1,25}",
        "[a-zA-Z0-9._/:@-]{0,70}",
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("~".to_string()),
        Just("*a".to_string()),
        Just("&a [*a]".to_string()),
        ".{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_text_is_loaded_or_refused_by_field(text in ".{0,400}") {
        check(&text);
    }

    /// The valid manifest with one scalar replaced: the deep parts of validation are reached.
    #[test]
    fn a_manifest_with_one_value_changed(index in 0usize..64, value in field_value()) {
        let values: Vec<(usize, &str)> = VALID.match_indices([':', '-']).collect();
        let (at, _) = values[index % values.len()];
        let end = VALID[at..].find(['\n', ',', '}']).map_or(VALID.len(), |e| at + e);
        let text = format!("{}: {value}{}", &VALID[..at], &VALID[end..]);
        check(&text);
    }

    /// The valid manifest cut or with a byte range replaced.
    #[test]
    fn a_manifest_cut_or_spliced(start in 0usize..600, len in 0usize..40, insert in ".{0,8}") {
        let start = start.min(VALID.len());
        let end = (start + len).min(VALID.len());
        if VALID.is_char_boundary(start) && VALID.is_char_boundary(end) {
            check(&format!("{}{insert}{}", &VALID[..start], &VALID[end..]));
        }
    }
}

#[test]
fn the_valid_manifest_loads() {
    load(VALID, Path::new("/m/p.yaml"), "node").unwrap();
}
