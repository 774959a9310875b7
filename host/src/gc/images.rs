//! Image GC: when the image filesystem passes the high threshold, remove unused images in the
//! plugin's order until the low threshold is reached. First-seen and last-used times are kept
//! in a state file so a restart neither forgets how old an image is nor resets its LRU place.

use super::GcError;
use crate::cri::{api, CriClient, Labels};
use crate::metrics::{decided_by_label, Metrics, PluginLabels};
use crate::stats;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tracing::{debug, info, warn};
use wasmlet_plugin_host::{DecidedBy, PluginRegistry};
use wasmlet_policy_default::{DiskInfo, ImageInfo};

/// The KubeletConfiguration's image GC settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageGcPolicy {
    /// `imageGCHighThresholdPercent`: usage that starts a collection.
    pub high_threshold_percent: u64,
    /// `imageGCLowThresholdPercent`: usage a collection frees down to.
    pub low_threshold_percent: u64,
    /// `imageMinimumGCAge`: younger unused images stay.
    pub min_age: Duration,
    /// `imageMaximumGCAge`: unused images older than this go whatever the usage (0: off).
    pub max_age: Duration,
}

impl ImageGcPolicy {
    /// Upstream disables image GC entirely at 100% with no maximum age.
    fn disabled(&self) -> bool {
        self.high_threshold_percent >= 100 && self.max_age.is_zero()
    }
}

/// When an image was first seen and last used by a container, in Unix milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRecord {
    /// When GC first saw the image.
    pub first_seen_unix_ms: u64,
    /// 0 while no container has used it (upstream's zero `lastUsed`).
    pub last_used_unix_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StateFile {
    /// By image ID.
    images: BTreeMap<String, ImageRecord>,
}

/// What one image GC cycle did.
#[derive(Debug, Clone, Default)]
pub struct ImageGcReport {
    /// What the cycle set out to free.
    pub bytes_to_free: u64,
    /// What the removed images' sizes add up to.
    pub freed: u64,
    /// IDs of the removed images, in removal order.
    pub removed: Vec<String>,
    /// Who planned the order (`None`: nothing to free, no plan asked).
    pub decided_by: Option<DecidedBy>,
}

/// Image GC state: the policy and the image records.
pub struct ImageGc {
    policy: ImageGcPolicy,
    state_file: PathBuf,
    records: Mutex<BTreeMap<String, ImageRecord>>,
}

/// Milliseconds since the Unix epoch.
fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The image IDs every container of the runtime (any node, any state) refers to: upstream
/// counts exited containers too, since their images are needed to restart them.
fn images_in_use(containers: &[api::Container], by_tag: &HashMap<&str, &str>) -> HashSet<String> {
    let mut used = HashSet::new();
    for container in containers {
        if !container.image_ref.is_empty() {
            used.insert(container.image_ref.clone());
        }
        if let Some(spec) = &container.image {
            let id = by_tag
                .get(spec.image.as_str())
                .copied()
                .unwrap_or(&spec.image);
            used.insert(id.to_string());
        }
    }
    used
}

/// containerd 1.6 never marks the sandbox image pinned; its CRI config names it in the
/// verbose `Status` (`info.config.sandboxImage`).
async fn sandbox_image(cri: &CriClient) -> Option<String> {
    let status = match cri.status_verbose().await {
        Ok(status) => status,
        Err(error) => {
            warn!(%error, "cannot read the runtime's sandbox image; it is protected only if pinned");
            return None;
        }
    };
    let config: serde_json::Value = serde_json::from_str(status.info.get("config")?).ok()?;
    config
        .get("sandboxImage")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

impl ImageGc {
    /// Loads the records from `state_file`; an unreadable file is logged and started afresh.
    pub fn new(policy: ImageGcPolicy, state_file: PathBuf) -> Self {
        let records = match std::fs::read(&state_file) {
            Ok(bytes) => match serde_json::from_slice::<StateFile>(&bytes) {
                Ok(state) => state.images,
                Err(error) => {
                    warn!(file = %state_file.display(), %error, "image GC state is not valid JSON; starting afresh");
                    BTreeMap::new()
                }
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(error) => {
                warn!(file = %state_file.display(), %error, "cannot read the image GC state; starting afresh");
                BTreeMap::new()
            }
        };
        ImageGc {
            policy,
            state_file,
            records: Mutex::new(records),
        }
    }

    /// The record of an image ID, if it has been seen.
    pub fn record(&self, id: &str) -> Option<ImageRecord> {
        self.records.lock().get(id).copied()
    }

    fn save(&self, records: &BTreeMap<String, ImageRecord>) {
        let state = StateFile {
            images: records.clone(),
        };
        let result = serde_json::to_vec_pretty(&state)
            .map_err(std::io::Error::other)
            .and_then(|bytes| write_atomically(&self.state_file, &bytes));
        if let Err(error) = result {
            warn!(file = %self.state_file.display(), %error, "cannot save the image GC state");
        }
    }

    /// Updates the records from the runtime's images: new ones are first seen now, images in
    /// use are used now, vanished ones are forgotten. Returns each image's record.
    fn detect(
        &self,
        images: &[api::Image],
        in_use: &HashSet<String>,
        now_ms: u64,
    ) -> Vec<ImageRecord> {
        let mut records = self.records.lock();
        let present: HashSet<&str> = images.iter().map(|i| i.id.as_str()).collect();
        records.retain(|id, _| present.contains(id.as_str()));
        let out = images
            .iter()
            .map(|image| {
                let record = records.entry(image.id.clone()).or_insert(ImageRecord {
                    first_seen_unix_ms: now_ms,
                    last_used_unix_ms: 0,
                });
                if in_use.contains(&image.id) {
                    record.last_used_unix_ms = now_ms;
                }
                *record
            })
            .collect();
        self.save(&records);
        out
    }

    /// One cycle. `free_at_least` overrides the thresholds (eviction's node-level reclaim asks
    /// for everything unused: `Some(u64::MAX)`).
    pub async fn collect(
        &self,
        cri: &CriClient,
        plugins: &Arc<PluginRegistry>,
        metrics: &Metrics,
        free_at_least: Option<u64>,
    ) -> Result<ImageGcReport, GcError> {
        let images = cri.list_images().await?;
        let containers = cri.list_containers(Labels::new()).await?;
        let by_tag: HashMap<&str, &str> = images
            .iter()
            .flat_map(|i| i.repo_tags.iter().map(move |t| (t.as_str(), i.id.as_str())))
            .collect();
        let in_use = images_in_use(&containers, &by_tag);
        let sandbox = sandbox_image(cri).await;
        let sandbox_id = sandbox
            .as_deref()
            .map(|s| by_tag.get(s).copied().unwrap_or(s).to_string());
        let now = SystemTime::now();
        let now_ms = unix_ms(now);
        let records = self.detect(&images, &in_use, now_ms);

        if self.policy.disabled() && free_at_least.is_none() {
            return Ok(ImageGcReport::default());
        }
        let fs = stats::fs::image_fs(cri).await?;
        let bytes_to_free = match free_at_least {
            Some(bytes) => bytes,
            None if fs.usage_percent() >= self.policy.high_threshold_percent => {
                let low = u128::from(fs.capacity_bytes)
                    * u128::from(100 - self.policy.low_threshold_percent.min(100))
                    / 100;
                (low as u64).saturating_sub(fs.available_bytes)
            }
            None => 0,
        };
        if bytes_to_free == 0 && self.policy.max_age.is_zero() {
            debug!(
                usage_percent = fs.usage_percent(),
                "image GC: below the high threshold"
            );
            return Ok(ImageGcReport::default());
        }
        info!(
            usage_percent = fs.usage_percent(),
            high = self.policy.high_threshold_percent,
            low = self.policy.low_threshold_percent,
            bytes_to_free,
            "image GC: freeing space"
        );

        let infos: Vec<ImageInfo> = images
            .iter()
            .zip(&records)
            .map(|(image, record)| ImageInfo {
                size_bytes: image.size,
                first_seen_unix_ms: record.first_seen_unix_ms,
                last_used_unix_ms: record.last_used_unix_ms,
                in_use: in_use.contains(&image.id),
                pinned: image.pinned || sandbox_id.as_deref() == Some(image.id.as_str()),
            })
            .collect();
        let disk = DiskInfo {
            capacity_bytes: fs.capacity_bytes,
            available_bytes: fs.available_bytes,
            bytes_to_free,
            min_age_ms: self.policy.min_age.as_millis() as u64,
            max_age_ms: self.policy.max_age.as_millis() as u64,
        };
        let tags: Vec<Vec<String>> = images.iter().map(|i| i.repo_tags.clone()).collect();
        let decision = {
            let plugins = plugins.clone();
            let (disk, infos) = (disk.clone(), infos.clone());
            tokio::task::spawn_blocking(move || plugins.plan_images(&disk, &infos, tags, now_ms))
                .await
                .map_err(|e| GcError::Plan(e.to_string()))?
        };
        if let DecidedBy::BuiltIn { reason } = &decision.decided_by {
            debug!(%reason, "image GC planned by the built-in default");
        }
        if let DecidedBy::Plugin { name, .. } = &decision.decided_by {
            tracing::Span::current().record("plugin", name.as_str());
        }
        let plugin = decided_by_label(&decision.decided_by);

        let mut report = ImageGcReport {
            bytes_to_free,
            decided_by: Some(decision.decided_by.clone()),
            ..Default::default()
        };
        for index in decision.order {
            let (image, info) = (&images[index as usize], &infos[index as usize]);
            if !wasmlet_policy_default::gc::is_candidate(&disk, info, now_ms) {
                warn!(image = %image.id, %plugin, "image GC: plan names an image in use, pinned or too young; skipped");
                continue;
            }
            let expired = disk.max_age_ms > 0
                && now_ms.saturating_sub(info.last_used_unix_ms) > disk.max_age_ms;
            if report.freed >= bytes_to_free && !expired {
                continue;
            }
            if let Err(error) = cri.remove_image(&image.id).await {
                warn!(image = %image.id, tags = ?image.repo_tags, %error, "image GC: removing an image failed");
                continue;
            }
            report.freed = report.freed.saturating_add(image.size);
            report.removed.push(image.id.clone());
            metrics
                .images_removed
                .get_or_create(&PluginLabels {
                    plugin: plugin.clone(),
                })
                .inc();
            metrics.image_bytes_freed.inc_by(image.size);
            crate::metrics::kubelet::kubelet()
                .image_garbage_collected
                .get_or_create(&crate::metrics::kubelet::image_gc_reason(expired))
                .inc();
            info!(image = %image.id, tags = ?image.repo_tags, size = image.size, %plugin, expired, "image GC: removed image");
        }
        if report.freed < bytes_to_free && free_at_least.is_none() {
            warn!(
                reason = "FreeDiskSpaceFailed",
                bytes_to_free,
                freed = report.freed,
                "image GC: could not free enough space"
            );
        }
        Ok(report)
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(id: &str) -> api::Image {
        api::Image {
            id: id.into(),
            repo_tags: vec![format!("docker.io/library/{id}:local")],
            ..Default::default()
        }
    }

    fn gc(dir: &Path) -> ImageGc {
        ImageGc::new(
            ImageGcPolicy {
                high_threshold_percent: 85,
                low_threshold_percent: 80,
                min_age: Duration::ZERO,
                max_age: Duration::ZERO,
            },
            dir.join("image-gc-state.json"),
        )
    }

    #[test]
    fn records_survive_a_restart_and_track_use() {
        let dir = tempfile::tempdir().expect("tempdir");
        let images = vec![image("a"), image("b")];
        let used: HashSet<String> = ["a".to_string()].into();
        let first = gc(dir.path()).detect(&images, &used, 1_000);
        assert_eq!(first[0].last_used_unix_ms, 1_000);
        assert_eq!(first[1].last_used_unix_ms, 0);
        // A new process reads the same file: first-seen stays, last-used moves only if used.
        let again = gc(dir.path()).detect(&images, &HashSet::new(), 5_000);
        assert_eq!(again[0].first_seen_unix_ms, 1_000);
        assert_eq!(again[0].last_used_unix_ms, 1_000);
        assert_eq!(again[1].first_seen_unix_ms, 1_000);
        // A vanished image is forgotten.
        let after = gc(dir.path());
        after.detect(&images[1..], &HashSet::new(), 6_000);
        assert_eq!(after.record("a"), None);
        assert!(after.record("b").is_some());
    }

    #[test]
    fn a_corrupt_state_file_starts_afresh() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("image-gc-state.json"), b"{not json").expect("write");
        let gc = gc(dir.path());
        assert_eq!(gc.record("a"), None);
        gc.detect(&[image("a")], &HashSet::new(), 7);
        assert_eq!(gc.record("a").map(|r| r.first_seen_unix_ms), Some(7));
    }

    #[test]
    fn containers_of_any_state_keep_their_image_in_use() {
        let images = [image("busybox")];
        let by_tag: HashMap<&str, &str> = images
            .iter()
            .flat_map(|i| i.repo_tags.iter().map(move |t| (t.as_str(), i.id.as_str())))
            .collect();
        let exited = api::Container {
            image: Some(api::ImageSpec {
                image: "docker.io/library/busybox:local".into(),
                ..Default::default()
            }),
            state: api::ContainerState::ContainerExited as i32,
            ..Default::default()
        };
        let used = images_in_use(&[exited], &by_tag);
        assert!(used.contains("busybox"));
    }
}
