//! The CRI image service calls: status, list, pull, remove, and the image filesystem.

use super::{api, CriClient, CriError};

impl CriClient {
    /// The image if present locally; `None` when the runtime does not have it.
    pub async fn image_status(&self, image: &str) -> Result<Option<api::Image>, CriError> {
        let request = api::ImageStatusRequest {
            image: Some(api::ImageSpec {
                image: image.into(),
                ..Default::default()
            }),
            verbose: false,
        };
        Ok(call!(self.images.image_status(request), "ImageStatus")?.image)
    }

    /// Every image the runtime holds.
    pub async fn list_images(&self) -> Result<Vec<api::Image>, CriError> {
        let request = api::ListImagesRequest { filter: None };
        Ok(call!(self.images.list_images(request), "ListImages")?.images)
    }

    /// Removes an image by ID or reference; removing one that is already gone succeeds.
    pub async fn remove_image(&self, image: &str) -> Result<(), CriError> {
        let request = api::RemoveImageRequest {
            image: Some(api::ImageSpec {
                image: image.into(),
                ..Default::default()
            }),
        };
        call!(self.images.remove_image(request), "RemoveImage").map(drop)
    }

    /// The filesystems holding images (containerd: its snapshotter's root).
    pub async fn image_fs_info(&self) -> Result<api::ImageFsInfoResponse, CriError> {
        call!(
            self.images.image_fs_info(api::ImageFsInfoRequest {}),
            "ImageFsInfo"
        )
    }

    /// Pulls an image; returns the image reference the runtime resolved it to.
    pub async fn pull_image(
        &self,
        image: &str,
        sandbox_config: api::PodSandboxConfig,
    ) -> Result<String, CriError> {
        let request = api::PullImageRequest {
            image: Some(api::ImageSpec {
                image: image.into(),
                ..Default::default()
            }),
            auth: None,
            sandbox_config: Some(sandbox_config),
        };
        Ok(call!(self.images.pull_image(request), "PullImage")?.image_ref)
    }
}
