//! OTLP/gRPC export of wasmlet's spans when KubeletConfiguration has a `tracing` stanza, as
//! upstream's kubelet does (`k8s.io/component-base/tracing`: a parent-based ratio sampler,
//! a batch span processor, service name `kubelet`). Nothing of it exists without the stanza.

use super::LoggingError;
use crate::config::logging::TracingConfiguration;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing::level_filters::LevelFilter;
use tracing::Level;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::{Layer, Registry};

/// The running export: flushed and stopped by [`Exporter::shutdown`].
pub(super) struct Exporter(SdkTracerProvider);

impl Exporter {
    /// Exports what is still queued and stops the batch processor.
    pub(super) fn shutdown(self) {
        if let Err(error) = self.0.shutdown() {
            tracing::warn!(%error, "trace export did not shut down cleanly");
        }
    }
}

/// The layer that turns wasmlet's spans into OpenTelemetry spans, and its exporter.
///
/// It takes the spans of wasmlet's crates up to `debug` (pod syncs, eviction and GC cycles,
/// plugin calls) whatever the log verbosity, and their `info` and louder events as span
/// events; nothing from other crates, so the exporter's own gRPC calls never trace themselves.
pub(super) fn layer(
    config: &TracingConfiguration,
    node_name: &str,
) -> Result<(Box<dyn Layer<Registry> + Send + Sync>, Exporter), LoggingError> {
    let endpoint = config.endpoint_url();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint.clone())
        .build()
        .map_err(|source| LoggingError::Exporter { endpoint, source })?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("kubelet")
        .with_attribute(KeyValue::new("host.name", node_name.to_string()))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            config.sampling_ratio(),
        ))))
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("wasmlet");
    let ours = filter_fn(|metadata| {
        let loudest = if metadata.is_span() {
            Level::DEBUG
        } else {
            Level::INFO
        };
        metadata.target().starts_with("wasmlet") && *metadata.level() <= loudest
    })
    .with_max_level_hint(LevelFilter::DEBUG);
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(ours)
        .boxed();
    Ok((layer, Exporter(provider)))
}
