//! Image and container garbage collection as upstream's kubelet does it
//! (`image_gc_manager.go`, `kuberuntime_gc.go`), with the order planned by the `gc-strategy`
//! plugin and every safety rule enforced here: a plugin proposes, the host disposes.

pub mod containers;
pub mod images;

use crate::cri::CriClient;
use crate::metrics::Metrics;
use crate::source::SourceSnapshot;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::warn;
use wasmlet_plugin_host::PluginRegistry;

pub use containers::ContainerGc;

/// Why a GC cycle could not run; the next cycle tries again.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error(transparent)]
    Cri(#[from] crate::cri::CriError),
    #[error("cannot measure the image filesystem: {0}")]
    ImageFs(String),
    #[error("the GC plan could not be made: {0}")]
    Plan(String),
}
pub use images::{ImageGc, ImageGcPolicy};

/// Everything a GC cycle needs from the rest of the node.
pub struct GarbageCollector {
    pub cri: CriClient,
    pub plugins: Arc<PluginRegistry>,
    pub metrics: Arc<Metrics>,
    pub images: ImageGc,
    pub containers: ContainerGc,
    /// The pods the sources want: a container of any other pod belongs to a deleted pod.
    pub source: watch::Receiver<Arc<SourceSnapshot>>,
}

impl GarbageCollector {
    /// UIDs of the pods the sources want, or `None` until every source has been read (upstream
    /// waits for `allSourcesReady` before treating any pod as deleted).
    pub fn desired_pods(&self) -> Option<HashSet<String>> {
        let snapshot = self.source.borrow();
        snapshot
            .ready
            .then(|| snapshot.pods.iter().map(|p| p.uid().to_string()).collect())
    }

    /// One container GC cycle; errors are logged, the next cycle retries.
    pub async fn collect_containers(&self) {
        let Some(desired) = self.desired_pods() else {
            return;
        };
        if let Err(error) = self
            .containers
            .collect(&self.cri, &self.plugins, &self.metrics, &desired)
            .await
        {
            warn!(%error, "container garbage collection failed");
        }
    }

    /// One image GC cycle by the thresholds; errors are logged, the next cycle retries.
    pub async fn collect_images(&self) {
        if let Err(error) = self
            .images
            .collect(&self.cri, &self.plugins, &self.metrics, None)
            .await
        {
            warn!(%error, "image garbage collection failed");
        }
    }

    /// Runs container GC every `container_period` and image GC every `image_period`.
    pub async fn run(self: Arc<Self>, container_period: Duration, image_period: Duration) {
        let mut containers = tokio::time::interval(container_period);
        let mut images = tokio::time::interval(image_period);
        for timer in [&mut containers, &mut images] {
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        }
        // Upstream's first cycles come one period after start, not at once.
        containers.tick().await;
        images.tick().await;
        loop {
            tokio::select! {
                _ = containers.tick() => self.collect_containers().await,
                _ = images.tick() => self.collect_images().await,
            }
        }
    }
}
