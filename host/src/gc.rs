//! Image and container garbage collection as upstream's kubelet does it
//! (`image_gc_manager.go`, `kuberuntime_gc.go`), with the order planned by the `gc-strategy`
//! plugin and every safety rule enforced here: a plugin proposes, the host disposes.

pub mod containers;
pub mod images;

use crate::cri::CriClient;
use crate::metrics::Metrics;
use crate::source::{ApiSnapshot, SourceSnapshot};
use crate::stats::StatsError;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::{warn, Instrument};
use wasmlet_plugin_host::PluginRegistry;

pub use containers::ContainerGc;
pub use images::{ImageGc, ImageGcPolicy, ImageGcReport};

/// Why a GC cycle could not run; the next cycle tries again.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// A CRI call failed (it names its RPC).
    #[error(transparent)]
    Cri(#[from] crate::cri::CriError),
    /// The image filesystem could not be measured, so no amount to free is known.
    #[error("cannot measure the image filesystem: {0}")]
    ImageFs(#[source] StatsError),
    /// The blocking task that asks the plugin for a plan panicked or was cancelled.
    #[error("the GC plan could not be made: {0}")]
    Plan(String),
}

impl From<StatsError> for GcError {
    /// A failed CRI call stays a CRI error; any other reading failed to measure the imagefs.
    fn from(error: StatsError) -> Self {
        match error {
            StatsError::Cri(error) => GcError::Cri(error),
            other => GcError::ImageFs(other),
        }
    }
}

/// GC cycle counters, for the `cycle` field of each cycle's span.
#[derive(Debug, Default)]
pub struct GcCycles {
    containers: AtomicU64,
    images: AtomicU64,
}

/// Everything a GC cycle needs from the rest of the node.
pub struct GarbageCollector {
    /// Lists and removes containers, sandboxes and images.
    pub cri: CriClient,
    /// Asked for the order (`gc-strategy`).
    pub plugins: Arc<PluginRegistry>,
    /// Removals and freed bytes are counted here.
    pub metrics: Arc<Metrics>,
    /// Image GC and its per-image records.
    pub images: ImageGc,
    /// Container GC for this node.
    pub containers: ContainerGc,
    /// The pods the sources want: a container of any other pod belongs to a deleted pod.
    pub source: watch::Receiver<Arc<SourceSnapshot>>,
    /// In cluster mode, the pods the API server binds to this node: wanted too.
    pub api_source: Option<watch::Receiver<Arc<ApiSnapshot>>>,
    /// Cycles run so far; starts at zero.
    pub cycles: GcCycles,
}

impl GarbageCollector {
    /// UIDs of the pods the sources want, or `None` until every source has been read (upstream
    /// waits for `allSourcesReady` before treating any pod as deleted).
    pub fn desired_pods(&self) -> Option<HashSet<String>> {
        let snapshot = self.source.borrow();
        if !snapshot.ready {
            return None;
        }
        let mut desired: HashSet<String> =
            snapshot.pods.iter().map(|p| p.uid().to_string()).collect();
        if let Some(api) = &self.api_source {
            let api = api.borrow();
            if !api.ready {
                return None;
            }
            desired.extend(api.pods.iter().filter_map(|p| p.metadata.uid.clone()));
        }
        Some(desired)
    }

    /// One container GC cycle in a span with its `cycle` number (and `plugin` when a plugin
    /// planned it); errors are logged, the next cycle retries.
    pub async fn collect_containers(&self) {
        let Some(desired) = self.desired_pods() else {
            return;
        };
        let cycle = self.cycles.containers.fetch_add(1, Ordering::Relaxed) + 1;
        let span = tracing::info_span!("container_gc", cycle, plugin = tracing::field::Empty);
        async {
            if let Err(error) = self
                .containers
                .collect(&self.cri, &self.plugins, &self.metrics, &desired)
                .await
            {
                warn!(%error, "container garbage collection failed");
            }
        }
        .instrument(span)
        .await
    }

    /// One image GC cycle by the thresholds; errors are logged, the next cycle retries.
    pub async fn collect_images(&self) {
        if let Err(error) = self.image_cycle(None).await {
            warn!(%error, "image garbage collection failed");
        }
    }

    /// One image GC cycle in a span with its `cycle` number (and `plugin` when a plugin
    /// planned it). `free_at_least` as [`ImageGc::collect`]: eviction's disk reclaim passes
    /// `Some(u64::MAX)`.
    pub async fn image_cycle(&self, free_at_least: Option<u64>) -> Result<ImageGcReport, GcError> {
        let cycle = self.cycles.images.fetch_add(1, Ordering::Relaxed) + 1;
        let span = tracing::info_span!("image_gc", cycle, plugin = tracing::field::Empty);
        self.images
            .collect(&self.cri, &self.plugins, &self.metrics, free_at_least)
            .instrument(span)
            .await
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
