//! Image GC that never deletes images under kept prefixes and frees space
//! largest image first (world `gc-strategy`).
//!
//! An image is kept when any of its tags starts with one of `keepPrefixes`
//! (e.g. `registry.local/platform/`). Of the rest (not in use, not pinned,
//! old enough), images past `imageMaximumGCAge` go first, then the largest
//! until `bytes-to-free` is reached: fewer deletions for the same space.
//! Container GC stays upstream's.
//!
//! Config: `{"keepPrefixes": ["registry.local/platform/", "docker.io/library/pause"]}`

use core::cmp::Reverse;

use serde::Deserialize;
use wasmlet_plugin_sdk::defaults::gc;
use wasmlet_plugin_sdk::{config, export, host, DiskInfo, GcStrategy, ImageInfo};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    keep_prefixes: Vec<String>,
}

/// Largest first, kept prefixes never.
#[derive(Debug, Default)]
pub struct KeepPrefixes {
    config: Config,
}

impl KeepPrefixes {
    fn kept(&self, index: u32) -> bool {
        let prefixes = &self.config.keep_prefixes;
        !prefixes.is_empty()
            && host::image_tags(index)
                .iter()
                .any(|tag| prefixes.iter().any(|p| tag.starts_with(p.as_str())))
    }
}

impl GcStrategy for KeepPrefixes {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let config: Config = config::parse(text)?;
        if config.keep_prefixes.iter().any(String::is_empty) {
            return Err("keepPrefixes: an empty prefix would keep every image".into());
        }
        self.config = config;
        Ok(())
    }

    fn plan_images(&self, disk: &DiskInfo, images: &[ImageInfo]) -> Result<Vec<u32>, String> {
        let now = host::now_unix_ms();
        let mut candidates: Vec<u32> = (0..images.len() as u32)
            .filter(|&i| gc::is_candidate(disk, &images[i as usize], now))
            .filter(|&i| !self.kept(i))
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
