//! Images, as upstream's `EnsureImageExists` (`kuberuntime_image.go`, `images/image_manager.go`):
//! the pull policy against what the runtime has, and ImagePullBackOff after a failed pull.

use super::{RuntimeManager, SYNC_ERROR_RETRY};
use crate::backoff::BackOff;
use crate::cri::api;
use k8s_openapi::api::core::v1::Container;
use std::time::{Duration, SystemTime};
use tracing::{info, warn};

/// Why a container waits for its image: the waiting reason, its message, when to retry.
pub(super) struct ImageWait {
    pub reason: &'static str,
    pub message: String,
    pub retry: Duration,
}

impl RuntimeManager {
    /// Makes the image of `container` available per its `imagePullPolicy`, or says why the
    /// container waits. `sandbox_config` goes with a pull, as CRI asks.
    pub(super) async fn ensure_image(
        &self,
        container: &Container,
        sandbox_config: &api::PodSandboxConfig,
        backoff: &mut BackOff,
    ) -> Result<(), ImageWait> {
        let image = container.image.clone().unwrap_or_default();
        let policy = container
            .image_pull_policy
            .as_deref()
            .unwrap_or("IfNotPresent");
        let present = match self.cri.image_status(&image).await {
            Ok(found) => found.is_some(),
            Err(error) => {
                return Err(ImageWait {
                    reason: "ImageInspectError",
                    message: error.to_string(),
                    retry: SYNC_ERROR_RETRY,
                })
            }
        };
        match (policy, present) {
            ("Never", true) | ("IfNotPresent", true) => return Ok(()),
            ("Never", false) => {
                return Err(ImageWait {
                    reason: "ErrImageNeverPull",
                    message: format!(
                        "Container image \"{image}\" is not present with pull policy of Never"
                    ),
                    retry: self.sync_frequency,
                });
            }
            _ => {}
        }
        let now = SystemTime::now();
        if let Some(left) = backoff.remaining_since_update(&image, now) {
            return Err(ImageWait {
                reason: "ImagePullBackOff",
                message: format!("Back-off pulling image \"{image}\""),
                retry: left,
            });
        }
        match self.cri.pull_image(&image, sandbox_config.clone()).await {
            Ok(image_ref) => {
                info!(%image, %image_ref, "image pulled");
                Ok(())
            }
            Err(error) => {
                backoff.next(&image, now, now);
                warn!(%image, %error, "image pull failed");
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
