//! Property tests: no manifest text panics the loader, and every refusal names a field.

use super::*;
use proptest::prelude::*;

const VALID: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: prod\n  labels: {app: web}\nspec:\n  restartPolicy: Always\n  terminationGracePeriodSeconds: 5\n  volumes:\n  - name: data\n    emptyDir: {sizeLimit: 64Mi}\n  initContainers:\n  - name: init\n    image: busybox:local\n  containers:\n  - name: web\n    image: busybox:local\n    env:\n    - name: LIMIT\n      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}\n    resources:\n      requests: {cpu: 100m, memory: 32Mi}\n      limits: {cpu: '1', memory: 64Mi}\n    volumeMounts:\n    - {name: data, mountPath: /data, subPath: x}\n";

fn check(text: &str) {
    if let Err(problem) = load(text, Path::new("/m/p.yaml"), "node") {
        assert!(!problem.field.is_empty(), "{problem}");
        assert!(!problem.reason.is_empty(), "{problem}");
    }
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
