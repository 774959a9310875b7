//! The misbehaviour shared by the `guest_hostile_*` examples of this crate (one per world, as a
//! component exports one world): each export of each world calls [`act`], which does what the plugin
//! config asks when it names that export (or names none).
//!
//! Config (every field optional):
//! `{"fault": "sleep" | "read" | "strings" | "long-answer" | "none", "in": EXPORT,
//!   "sleepMs": 20000, "path": FILE}`.
//! - `sleep`: `std::thread::sleep`, which a `wasm32-wasip2` guest does through WASI
//!   (`monotonic-clock.subscribe-duration`, then blocking on the pollable): the guest is
//!   blocked in the host, where no epoch reaches it.
//! - `read`: reads `path` whole (a FIFO with no writer blocks in the host).
//! - `strings`: logs the worst message with the worst fields through `host.log`, prints it
//!   on stdout and stderr, and answers it as the export's error, reason or message.
//! - `long-answer`: an answer list far longer than the list it ranks, with indices out of
//!   range (worlds with a list answer).
//!
//! `in` is `configure`, `self-check` or a call's export name (`rank`, `plan-images`,
//! `plan-containers`, `check`, `admit`, `post-start`, `pre-stop`); empty means every export.

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, host, LogLevel};

/// The plugin config.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Config {
    /// What to do.
    pub fault: String,
    /// In which export; empty for all.
    #[serde(rename = "in")]
    pub export: String,
    /// How long `sleep` sleeps.
    pub sleep_ms: Option<u64>,
    /// What `read` reads.
    pub path: String,
}

impl Config {
    /// Parses the config and acts as it says for `configure`.
    pub fn configure(text: &str) -> Result<Self, String> {
        let config: Config = config::parse(text)?;
        act(&config, "configure")?;
        Ok(config)
    }

    /// Whether the fault applies to `export`.
    pub fn applies(&self, export: &str) -> bool {
        self.export.is_empty() || self.export == export
    }

    /// Whether `export` should answer a list far too long.
    pub fn long_answer(&self, export: &str) -> bool {
        self.fault == "long-answer" && self.applies(export)
    }
}

/// 64 KiB of "a" then two-byte characters: every even byte index past 0 falls inside a
/// character, so a cap that cuts at a byte index panics.
pub fn worst() -> String {
    format!("a{}", "é".repeat(32 * 1024))
}

/// An answer list for `len` items that is far longer than `len`, mostly out of range.
pub fn long_answer(len: usize) -> Vec<u32> {
    (0..(len as u32).saturating_add(100_000))
        .chain([u32::MAX])
        .collect()
}

/// Misbehaves in `export` as configured; `Err` is the error (or message) to answer.
pub fn act(config: &Config, export: &str) -> Result<(), String> {
    if !config.applies(export) {
        return Ok(());
    }
    match config.fault.as_str() {
        "sleep" => {
            std::thread::sleep(std::time::Duration::from_millis(
                config.sleep_ms.unwrap_or(20_000),
            ));
            Ok(())
        }
        "read" => {
            let read = std::fs::read(&config.path);
            Err(format!(
                "read {}: {} bytes",
                config.path,
                read.map_or(0, |b| b.len())
            ))
        }
        "strings" => {
            let text = worst();
            let fields: Vec<(String, String)> = (0..100)
                .map(|i| (format!("{i}{text}"), text.clone()))
                .collect();
            let fields: Vec<(&str, &str)> = fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            for level in [LogLevel::Info, LogLevel::Warn, LogLevel::Error] {
                host::log(level, &text, &fields);
            }
            println!("{text}");
            eprintln!("{text}");
            Err(text)
        }
        _ => Ok(()),
    }
}
