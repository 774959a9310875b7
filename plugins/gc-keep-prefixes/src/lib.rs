//! Image GC that never deletes images under kept prefixes and frees space
//! largest image first (world `gc-strategy`).
//!
//! An image is kept when any of its tags starts with one of `keepPrefixes`
//! (e.g. `registry.local/platform/`). Of the rest (not in use, not pinned,
//! old enough), images past `imageMaximumGCAge` go first, then the largest
//! until `bytes-to-free` is reached: fewer deletions for the same space.
//! Container GC stays upstream's.
//!
//! Config: `{"keepPrefixes": ["registry.local/platform/", "docker.io/library/pause"]}`, and
//! optionally `"keepPrefixesFile": "/keep/prefixes"`: more prefixes, one per line (`#`
//! starts a comment), read when the plugin is configured and again before every plan, so
//! an operator edits the list without swapping the plugin. The plugin sees no host files
//! unless the plugin config grants the file's directory:
//!
//! ```yaml
//! capabilities:
//!   directories: [{hostPath: /etc/wasmlet/gc-keep, guestPath: /keep}]   # read-only
//! ```
//!
//! A file that cannot be read at configure time refuses the config; one that cannot be read
//! later keeps the prefixes last read, with a warning.

use core::cmp::Reverse;

use serde::Deserialize;
use wasmlet_plugin_sdk::defaults::gc;
use wasmlet_plugin_sdk::{config, export, host, DiskInfo, GcStrategy, ImageInfo};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    keep_prefixes: Vec<String>,
    keep_prefixes_file: Option<String>,
}

/// Largest first, kept prefixes never.
#[derive(Debug, Default)]
pub struct KeepPrefixes {
    config: Config,
    /// The prefixes last read from `keepPrefixesFile`.
    from_file: Vec<String>,
}

/// Reads one prefix per line; blank lines and `#` comments are skipped.
fn read_prefixes(path: &str) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "keepPrefixesFile {path}: {e} (the plugin config must grant its directory under capabilities.directories)"
        )
    })?;
    Ok(text
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect())
}

impl KeepPrefixes {
    fn kept(prefixes: &[String], index: u32) -> bool {
        !prefixes.is_empty()
            && host::image_tags(index)
                .iter()
                .any(|tag| prefixes.iter().any(|p| tag.starts_with(p.as_str())))
    }

    /// The configured prefixes plus the file's, re-read now.
    fn prefixes(&self) -> Vec<String> {
        let mut prefixes = self.config.keep_prefixes.clone();
        if let Some(path) = &self.config.keep_prefixes_file {
            match read_prefixes(path) {
                Ok(read) => prefixes.extend(read),
                Err(error) => {
                    host::warn(&format!("{error}; keeping the prefixes last read"));
                    prefixes.extend(self.from_file.iter().cloned());
                }
            }
        }
        prefixes
    }
}

impl GcStrategy for KeepPrefixes {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let config: Config = config::parse(text)?;
        if config.keep_prefixes.iter().any(String::is_empty) {
            return Err("keepPrefixes: an empty prefix would keep every image".into());
        }
        self.from_file = match &config.keep_prefixes_file {
            Some(path) => read_prefixes(path)?,
            None => Vec::new(),
        };
        self.config = config;
        Ok(())
    }

    fn plan_images(&self, disk: &DiskInfo, images: &[ImageInfo]) -> Result<Vec<u32>, String> {
        let now = host::now_unix_ms();
        let prefixes = self.prefixes();
        let mut candidates: Vec<u32> = (0..images.len() as u32)
            .filter(|&i| gc::is_candidate(disk, &images[i as usize], now))
            .filter(|&i| !Self::kept(&prefixes, i))
            .collect();
        candidates.sort_by_key(|&i| {
            let image = &images[i as usize];
            (Reverse(image.size_bytes), image.last_used_unix_ms)
        });
        Ok(gc::take_until_freed(disk, images, candidates, now))
    }
}

export!(KeepPrefixes as gc);

#[cfg(test)]
mod tests;
