//! Go names for WIT names: kebab-case becomes PascalCase for exported identifiers and
//! camelCase for parameters and locals, which never collide with Go's keywords or the
//! locals the generated code declares itself.

/// `pod-info` → `PodInfo`.
pub fn pascal(kebab: &str) -> String {
    kebab
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// `timeout-ms` → `timeoutMs`; a Go keyword or predeclared name gets a trailing `_`.
pub fn camel(kebab: &str) -> String {
    let pascal = pascal(kebab);
    let mut chars = pascal.chars();
    let name = match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    };
    if RESERVED.contains(&name.as_str()) {
        name + "_"
    } else {
        name
    }
}

/// Go's keywords, the predeclared names a parameter could shadow harmfully, and the locals
/// of generated functions.
const RESERVED: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
    "len",
    "string",
    "error",
    "bool",
    "byte",
    "rune",
    "uint32",
    "uint64",
    "int32",
    "int64",
    "make",
    "append",
    "nil",
    "true",
    "false",
    "ret",
    "err",
    "result",
    "area",
    "cabi",
    "wit",
    "errors",
    "unsafe",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_names_become_go_names() {
        assert_eq!(pascal("pod-info"), "PodInfo");
        assert_eq!(pascal("avg10"), "Avg10");
        assert_eq!(camel("timeout-ms"), "timeoutMs");
        assert_eq!(camel("type"), "type_");
        assert_eq!(camel("result"), "result_");
    }
}
