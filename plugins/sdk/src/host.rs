//! Safe wrappers over the `host` and `pod-meta` imports.
//!
//! In a plugin (wasm32) these call the host. In native tests they read the
//! snapshot a `fixtures` case installed for the call in progress,
//! and [`log`] records into `fixtures::take_logs`.
//!
//! Pod indices are those of the current call (see `wit/host.wit`): the
//! `pods` of `rank`, `DeadContainer::pod` in `plan_containers`, 0 in the
//! hooks. Outside a call or out of range, strings are empty and options
//! `None`. The `pod-meta` functions are not imported by the `probe-handler`
//! world: a probe plugin calling them fails to instantiate.

use crate::types::LogLevel;

/// Writes a structured event to the host's log (the plugin's name is added
/// by the host).
pub fn log(level: LogLevel, message: &str, fields: &[(&str, &str)]) {
    imp::log(level, message, fields)
}

/// Whether the host would write an event at `level` (contract 0.1.1): ask before building
/// an expensive message. Always true in native tests.
pub fn log_enabled(level: LogLevel) -> bool {
    imp::log_enabled(level)
}

/// [`log`] at debug level without fields.
pub fn debug(message: &str) {
    log(LogLevel::Debug, message, &[])
}

/// [`log`] at info level without fields.
pub fn info(message: &str) {
    log(LogLevel::Info, message, &[])
}

/// [`log`] at warn level without fields.
pub fn warn(message: &str) {
    log(LogLevel::Warn, message, &[])
}

/// Wall-clock time, Unix milliseconds.
pub fn now_unix_ms() -> u64 {
    imp::now_unix_ms()
}

/// `metadata.namespace` of pod `index`.
pub fn pod_namespace(index: u32) -> String {
    imp::pod_namespace(index)
}

/// `metadata.name` of pod `index`.
pub fn pod_name(index: u32) -> String {
    imp::pod_name(index)
}

/// `metadata.uid` of pod `index`.
pub fn pod_uid(index: u32) -> String {
    imp::pod_uid(index)
}

/// Label `key` of pod `index`.
pub fn pod_label(index: u32, key: &str) -> Option<String> {
    imp::pod_label(index, key)
}

/// Annotation `key` of pod `index`.
pub fn pod_annotation(index: u32, key: &str) -> Option<String> {
    imp::pod_annotation(index, key)
}

/// Repo tags of image `index` (in `plan_images` only).
pub fn image_tags(index: u32) -> Vec<String> {
    imp::image_tags(index)
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use crate::bindings::eviction::wasmlet::plugin::{host, pod_meta};
    use crate::types::LogLevel;

    fn wit_level(level: LogLevel) -> host::LogLevel {
        match level {
            LogLevel::Trace => host::LogLevel::Trace,
            LogLevel::Debug => host::LogLevel::Debug,
            LogLevel::Info => host::LogLevel::Info,
            LogLevel::Warn => host::LogLevel::Warn,
            LogLevel::Error => host::LogLevel::Error,
        }
    }

    pub fn log(level: LogLevel, message: &str, fields: &[(&str, &str)]) {
        let level = wit_level(level);
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        host::log(level, message, &fields)
    }

    pub fn log_enabled(level: LogLevel) -> bool {
        host::log_enabled(wit_level(level))
    }

    pub fn now_unix_ms() -> u64 {
        host::now_unix_ms()
    }

    pub fn pod_namespace(index: u32) -> String {
        pod_meta::pod_namespace(index)
    }

    pub fn pod_name(index: u32) -> String {
        pod_meta::pod_name(index)
    }

    pub fn pod_uid(index: u32) -> String {
        pod_meta::pod_uid(index)
    }

    pub fn pod_label(index: u32, key: &str) -> Option<String> {
        pod_meta::pod_label(index, key)
    }

    pub fn pod_annotation(index: u32, key: &str) -> Option<String> {
        pod_meta::pod_annotation(index, key)
    }

    pub fn image_tags(index: u32) -> Vec<String> {
        pod_meta::image_tags(index)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use crate::fixtures::mock;
    use crate::types::LogLevel;

    pub fn log(level: LogLevel, message: &str, fields: &[(&str, &str)]) {
        mock::log(level, message, fields)
    }

    pub fn log_enabled(_: LogLevel) -> bool {
        true
    }

    pub fn now_unix_ms() -> u64 {
        mock::now_unix_ms()
    }

    pub fn pod_namespace(index: u32) -> String {
        mock::pod(index, |p| p.namespace.clone()).unwrap_or_default()
    }

    pub fn pod_name(index: u32) -> String {
        mock::pod(index, |p| p.name.clone()).unwrap_or_default()
    }

    pub fn pod_uid(index: u32) -> String {
        mock::pod(index, |p| p.uid.clone()).unwrap_or_default()
    }

    pub fn pod_label(index: u32, key: &str) -> Option<String> {
        mock::pod(index, |p| lookup(&p.labels, key)).flatten()
    }

    pub fn pod_annotation(index: u32, key: &str) -> Option<String> {
        mock::pod(index, |p| lookup(&p.annotations, key)).flatten()
    }

    pub fn image_tags(index: u32) -> Vec<String> {
        mock::image_tags(index)
    }

    fn lookup(pairs: &[(String, String)], key: &str) -> Option<String> {
        pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }
}
