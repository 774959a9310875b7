//! Times as the API server writes them, for `/plugins`, `/evictions` and artifact metadata. A
//! leaf: the registry and the OCI side both format times without naming each other.

use std::time::SystemTime;

/// A time as the API server writes one (`metav1.Time`'s RFC 3339), as `/pods` shows times.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    let nanos = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    jiff::Timestamp::from_nanosecond(nanos)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}
