//! Images, as upstream's `EnsureImageExists` (`kuberuntime_image.go`, `images/image_manager.go`):
//! the pull policy against what the runtime has, and ImagePullBackOff after a failed pull.

use super::{RuntimeManager, SYNC_ERROR_RETRY};
use crate::backoff::BackOff;
use crate::cri::api;
use crate::events::{EventType, ObjectRef};
use k8s_openapi::api::core::v1::{Container, Pod};
use std::time::{Duration, Instant, SystemTime};
use tracing::{info, warn};

/// Why a container waits for its image: the waiting reason, its message, when to retry.
pub(super) struct ImageWait {
    pub reason: &'static str,
    pub message: String,
    pub retry: Duration,
}

impl RuntimeManager {
    /// Makes the image of `container` (of `pod`) available per its `imagePullPolicy`, or says
    /// why the container waits, with upstream's events. `sandbox_config` goes with a pull, as
    /// CRI asks. Returns the time spent pulling (zero when the image was present).
    pub(super) async fn ensure_image(
        &self,
        pod: &Pod,
        container: &Container,
        sandbox_config: &api::PodSandboxConfig,
        backoff: &mut BackOff,
    ) -> Result<Duration, ImageWait> {
        let image = container.image.clone().unwrap_or_default();
        let policy = container
            .image_pull_policy
            .as_deref()
            .unwrap_or("IfNotPresent");
        let object = ObjectRef::container(pod, &container.name);
        let event = |kind, reason: &str, message: String| {
            self.events.record(&object, kind, reason, message)
        };
        let present = match self.cri.image_status(&image).await {
            Ok(found) => found.is_some(),
            Err(error) => {
                event(
                    EventType::Warning,
                    "InspectFailed",
                    format!("Failed to inspect image \"{image}\": {error}"),
                );
                return Err(ImageWait {
                    reason: "ImageInspectError",
                    message: error.to_string(),
                    retry: SYNC_ERROR_RETRY,
                });
            }
        };
        match (policy, present) {
            ("Never", true) | ("IfNotPresent", true) => {
                event(
                    EventType::Normal,
                    "Pulled",
                    format!("Container image \"{image}\" already present on machine"),
                );
                return Ok(Duration::ZERO);
            }
            ("Never", false) => {
                let message =
                    format!("Container image \"{image}\" is not present with pull policy of Never");
                event(EventType::Warning, "ErrImageNeverPull", message.clone());
                return Err(ImageWait {
                    reason: "ErrImageNeverPull",
                    message,
                    retry: self.sync_frequency,
                });
            }
            _ => {}
        }
        let now = SystemTime::now();
        if let Some(left) = backoff.remaining_since_update(&image, now) {
            let message = format!("Back-off pulling image \"{image}\"");
            event(EventType::Normal, "BackOff", message.clone());
            return Err(ImageWait {
                reason: "ImagePullBackOff",
                message,
                retry: left,
            });
        }
        event(
            EventType::Normal,
            "Pulling",
            format!("Pulling image \"{image}\""),
        );
        let started = Instant::now();
        match self.cri.pull_image(&image, sandbox_config.clone()).await {
            Ok(image_ref) => {
                info!(%image, %image_ref, "image pulled");
                let took = go_duration(started.elapsed());
                event(EventType::Normal, "Pulled", format!("Successfully pulled image \"{image}\" in {took} ({took} including waiting)"));
                Ok(started.elapsed())
            }
            Err(error) => {
                backoff.next(&image, now, now);
                warn!(%image, %error, "image pull failed");
                event(
                    EventType::Warning,
                    "Failed",
                    format!("Failed to pull image \"{image}\": {error}"),
                );
                // Sync again soon: the container then shows ImagePullBackOff until the
                // back-off allows the next pull, as upstream.
                Err(ImageWait {
                    reason: "ErrImagePull",
                    message: error.to_string(),
                    retry: SYNC_ERROR_RETRY,
                })
            }
        }
    }
}

/// A duration as Go prints one truncated to milliseconds (`1.234s`, `850ms`), for upstream's
/// `Pulled` message.
fn go_duration(elapsed: Duration) -> String {
    let millis = elapsed.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let (hours, minutes, rest) = (millis / 3_600_000, millis / 60_000 % 60, millis % 60_000);
    let seconds = format!("{}.{:03}", rest / 1000, rest % 1000);
    let seconds = seconds.trim_end_matches('0').trim_end_matches('.');
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pull_times_read_as_go_prints_them() {
        use super::go_duration;
        use std::time::Duration;
        assert_eq!(go_duration(Duration::from_micros(850_400)), "850ms");
        assert_eq!(go_duration(Duration::from_millis(1234)), "1.234s");
        assert_eq!(go_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(go_duration(Duration::from_secs(3)), "3s");
        assert_eq!(go_duration(Duration::from_millis(90_500)), "1m30.5s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
    }
}
