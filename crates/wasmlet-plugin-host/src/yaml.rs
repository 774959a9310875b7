//! YAML for every file wasmlet and its tools read (node and plugin configs, manifests,
//! plugin projects, fixtures), on `serde-saphyr` (which kube already brings; `serde_yaml` is
//! no longer maintained). One set of options, so every file is read the same way: a key
//! given twice is refused, and a number too large for a float reaches the field's own type
//! (which names the field) instead of failing the parse.

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;
use serde_saphyr::{NonFiniteFloatPolicy, Options};

/// A YAML text that could not be read as the type asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// Where in the document, as `spec.containers[0].image`; `.` for the document itself.
    pub path: String,
    /// Why, with the line and column where the parser knows them.
    pub message: String,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path == "." || self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for YamlError {}

fn options() -> Options {
    let mut options = Options::default();
    // One line per error: callers put it beside the file and field they name.
    options.with_snippet = false;
    // `cpu: 1e400` reaches the quantity, which names its field, as `inf`.
    options.non_finite_float_policy = NonFiniteFloatPolicy::PassThrough;
    options
}

fn error(path: String, error: serde_saphyr::Error) -> YamlError {
    YamlError {
        path,
        message: error.to_string(),
    }
}

/// Reads the one document of `text` as a `T`; the error names the field.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let mut path = String::from(".");
    serde_saphyr::with_deserializer_from_str_with_options(text, options(), |deserializer| {
        serde_path_to_error::deserialize(deserializer).map_err(|e| {
            path = e.path().to_string();
            e.into_inner()
        })
    })
    .map_err(|e| error(path, e))
}

/// Every document of `text` as a JSON value; empty documents are left out.
pub fn documents(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    serde_saphyr::from_multiple_with_options(text, options()).map_err(|e| error(".".into(), e))
}

/// How many non-empty documents `text` holds, when it is YAML at all.
pub fn document_count(text: &str) -> Result<usize, YamlError> {
    serde_saphyr::from_multiple_with_options::<IgnoredAny>(text, options())
        .map(|documents| documents.len())
        .map_err(|e| error(".".into(), e))
}

/// `value` as a YAML document.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, YamlError> {
    serde_saphyr::to_string(value).map_err(|e| YamlError {
        path: ".".into(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Debug, serde::Deserialize)]
    struct Limits {
        #[allow(dead_code)]
        cpu: u32,
    }

    #[derive(Debug, serde::Deserialize)]
    struct Spec {
        #[allow(dead_code)]
        limits: Vec<Limits>,
    }

    #[test]
    fn a_wrong_type_is_named_by_its_path_and_line() {
        let err = from_str::<Spec>("limits:\n  - cpu: 1\n  - cpu: lots\n").unwrap_err();
        assert_eq!(err.path, "limits[1].cpu");
        assert!(err.message.contains("line 3"), "{err}");
        assert!(err.to_string().starts_with("limits[1].cpu: "), "{err}");
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let err = from_str::<BTreeMap<String, u32>>("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert!(err.message.to_lowercase().contains("duplicate"), "{err}");
    }

    #[test]
    fn documents_are_counted_and_read_as_json() {
        let text = "a: 1\n---\n---\nb: [x, 2]\n";
        assert_eq!(document_count(text).unwrap(), 2);
        let documents = documents(text).unwrap();
        assert_eq!(documents[0], serde_json::json!({"a": 1}));
        assert_eq!(documents[1], serde_json::json!({"b": ["x", 2]}));
        assert!(document_count("a: [1\n").is_err());
    }

    #[test]
    fn a_value_written_reads_back() {
        let value: BTreeMap<String, Vec<u32>> = [("a".to_string(), vec![1, 2])].into();
        let text = to_string(&value).unwrap();
        assert_eq!(
            from_str::<BTreeMap<String, Vec<u32>>>(&text).unwrap(),
            value
        );
    }
}
