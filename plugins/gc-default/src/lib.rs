//! The upstream kubelet's image and container GC as a plugin (world
//! `gc-strategy`).
//!
//! Images: least recently used first (last used, then first seen), skipping
//! images in use, pinned, or younger than `imageMinimumGCAge`; images past
//! `imageMaximumGCAge` go first; then enough to reach `bytes-to-free`.
//! Containers: all of deleted pods, then all but the newest
//! `maxPerPodContainer` per (pod, container), then `maxContainers`
//! node-wide. The logic is [`wasmlet_plugin_sdk::defaults::gc`], which the
//! host also compiles as its built-in default.
//!
//! Config (all optional; upstream's flag defaults):
//! `{"maxPerPodContainer": 1, "maxContainers": -1}`

use serde::Deserialize;
use wasmlet_plugin_sdk::defaults::gc::{self, ContainerGcPolicy};
use wasmlet_plugin_sdk::{config, export, host, DeadContainer, DiskInfo, GcStrategy, ImageInfo};

/// `--maximum-dead-containers-per-container` and `--maximum-dead-containers`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    max_per_pod_container: i32,
    max_containers: i32,
}

impl Default for Config {
    fn default() -> Self {
        let d = ContainerGcPolicy::default();
        Config {
            max_per_pod_container: d.max_per_pod_container,
            max_containers: d.max_containers,
        }
    }
}

/// The upstream GC policy.
#[derive(Debug, Default)]
pub struct DefaultGc {
    policy: ContainerGcPolicy,
}

impl GcStrategy for DefaultGc {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let c: Config = config::parse(text)?;
        self.policy = ContainerGcPolicy {
            max_per_pod_container: c.max_per_pod_container,
            max_containers: c.max_containers,
        };
        Ok(())
    }

    fn plan_images(&self, disk: &DiskInfo, images: &[ImageInfo]) -> Result<Vec<u32>, String> {
        Ok(gc::plan_images(disk, images, host::now_unix_ms()))
    }

    fn plan_containers(&self, dead: &[DeadContainer]) -> Result<Vec<u32>, String> {
        Ok(gc::plan_containers(dead, &self.policy))
    }
}

export!(DefaultGc as gc);

#[cfg(test)]
mod tests;
