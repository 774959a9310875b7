//! Kubernetes' name rules (RFC 1123), written once for both crates: the plugin host checks
//! plugin and container names with them, the node its own name, label prefixes and static
//! pods' names, and two copies could drift apart.

/// Whether `name` is a DNS subdomain (RFC 1123) as Kubernetes validates object names: at most
/// 253 characters of dot-separated labels of lowercase letters, digits and `-`, none empty
/// and none starting or ending with `-`.
///
/// ```
/// use wasmlet_plugin_host::names::is_dns_subdomain;
/// assert!(is_dns_subdomain("node-1.example.com"));
/// assert!(!is_dns_subdomain("Node_1"));
/// assert!(!is_dns_subdomain("a..b"));
/// ```
pub fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Whether `name` is a DNS label (RFC 1123): one label of at most 63 characters, as
/// Kubernetes requires of container, volume and namespace names (and `plugin new` of a crate
/// name).
///
/// ```
/// use wasmlet_plugin_host::names::is_dns_label;
/// assert!(is_dns_label("main"));
/// assert!(!is_dns_label("a.b"));
/// ```
pub fn is_dns_label(name: &str) -> bool {
    name.len() <= 63 && !name.contains('.') && is_dns_subdomain(name)
}
