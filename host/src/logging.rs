//! wasmlet's own logs and traces (not the containers' logs: that is [`crate::logs`]): the
//! tracing subscriber, in upstream's text-or-JSON formats, filtered by klog's verbosity
//! scale, with optional OTLP export of spans.
//!
//! Verbosity maps onto tracing's levels (`-v` / `logging.verbosity`):
//!
//! | `-v`  | filter                                                    |
//! |-------|-----------------------------------------------------------|
//! | 0-1   | `info`                                                    |
//! | 2-4   | `info`, and `debug` for wasmlet's crates                  |
//! | 5-7   | `info`, and `trace` for wasmlet's crates                  |
//! | 8+    | `debug` for every library, `trace` for wasmlet's crates   |
//!
//! `--vmodule=pattern=N` adds a directive for the target `wasmlet::<pattern>` at the level
//! `N` maps to by the same scale (0-1 info, 2-4 debug, 5+ trace), so it can raise or lower
//! one module. `RUST_LOG`, when set, replaces all of this. The other way round, JSON lines
//! carry the lowest `v` that shows them: info and warn 0, debug 2, trace 5; errors carry none,
//! as upstream's.

mod json;
mod otlp;

pub use json::{JsonFields, JsonFormat};

use crate::config::logging::{LogFormat, LoggingConfiguration, TracingConfiguration};
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::level_filters::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Why logging could not be set up; each names the setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    /// `RUST_LOG` is set but is not a tracing filter.
    #[error("RUST_LOG: {0}")]
    RustLog(#[source] tracing_subscriber::filter::FromEnvError),
    /// A `--vmodule` / `logging.vmodule` entry names no module.
    #[error("vmodule: {0}")]
    VModule(#[source] crate::config::logging::VModuleError),
    /// The OTLP exporter for `tracing.endpoint` could not be built.
    #[error("tracing.endpoint {endpoint}: {source}")]
    Exporter {
        /// The collector's URL.
        endpoint: String,
        /// What the exporter said.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// A subscriber was installed already (only tests may try twice).
    #[error("cannot install the log subscriber: {0}")]
    Install(#[from] tracing_subscriber::util::TryInitError),
}

/// What outlives [`init`]: flushes the spans not yet exported when dropped, so keep it until
/// the process exits (inside the Tokio runtime the exporter runs on).
#[must_use = "dropping the guard stops the span export"]
pub struct LoggingGuard {
    tracer: Option<otlp::Exporter>,
}

impl Drop for LoggingGuard {
    fn drop(&mut self) {
        if let Some(tracer) = self.tracer.take() {
            tracer.shutdown();
        }
    }
}

/// Whether spans are exported: [`export_as_root`] does nothing otherwise.
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Makes `span` the root of a trace of its own in the OTLP export, with `attributes` there
/// only: log lines show it under its parent, whose fields already say the same. Call it
/// before the span is first entered. Without export it costs one atomic load.
pub fn export_as_root<const N: usize>(
    span: &tracing::Span,
    attributes: impl FnOnce() -> [(&'static str, String); N],
) {
    if !EXPORTING.load(Ordering::Relaxed) || span.is_disabled() {
        return;
    }
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    if span.set_parent(opentelemetry::Context::new()).is_ok() {
        for (key, value) in attributes() {
            span.set_attribute(key, value);
        }
    }
}

/// The tracing level wasmlet's own crates log at for a verbosity.
pub fn own_level(verbosity: u32) -> LevelFilter {
    match verbosity {
        0..=1 => LevelFilter::INFO,
        2..=4 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// The `v` a JSON line carries: the lowest verbosity at which its level shows; `None` for
/// errors, which upstream's JSON lines write without `v`.
pub fn verbosity_of(level: tracing::Level) -> Option<u32> {
    match level {
        tracing::Level::ERROR => None,
        tracing::Level::WARN | tracing::Level::INFO => Some(0),
        tracing::Level::DEBUG => Some(2),
        tracing::Level::TRACE => Some(5),
    }
}

/// The EnvFilter directives for `logging`'s verbosity and vmodule (see the module docs).
pub fn directives(logging: &LoggingConfiguration) -> Result<String, LoggingError> {
    let own = own_level(logging.verbosity);
    let libraries = if logging.verbosity >= 8 {
        LevelFilter::DEBUG
    } else {
        LevelFilter::INFO
    };
    let mut directives = libraries.to_string().to_lowercase();
    if own > libraries {
        let own = own.to_string().to_lowercase();
        for krate in ["wasmlet", "wasmlet_plugin_host"] {
            directives.push_str(&format!(",{krate}={own}"));
        }
    }
    for item in &logging.vmodule {
        let target = item.target().map_err(LoggingError::VModule)?;
        let level = own_level(item.verbosity).to_string().to_lowercase();
        directives.push_str(&format!(",{target}={level}"));
    }
    Ok(directives)
}

/// The filter of the log lines: `RUST_LOG` when it is set, else [`directives`].
fn log_filter(logging: &LoggingConfiguration) -> Result<EnvFilter, LoggingError> {
    match std::env::var(EnvFilter::DEFAULT_ENV) {
        Ok(value) if !value.trim().is_empty() => {
            EnvFilter::try_from_default_env().map_err(LoggingError::RustLog)
        }
        _ => Ok(EnvFilter::new(directives(logging)?)),
    }
}

/// Installs the global subscriber: log lines on stderr in `logging.format`, and, when
/// `tracing` is set, wasmlet's spans exported over OTLP/gRPC. Call it inside the Tokio
/// runtime when `tracing` is set (the gRPC channel is spawned on it). `node_name` becomes
/// the spans' `host.name`.
pub fn init(
    logging: &LoggingConfiguration,
    tracing: Option<&TracingConfiguration>,
    node_name: &str,
) -> Result<LoggingGuard, LoggingError> {
    let filter = log_filter(logging)?;
    let stderr_is_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let log_layer = match logging.format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(stderr_is_terminal)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .fmt_fields(JsonFields)
            .event_format(JsonFormat)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
    };
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = vec![log_layer];
    let mut exporter = None;
    if let Some(tracing) = tracing {
        let (layer, handle) = otlp::layer(tracing, node_name)?;
        layers.push(layer);
        exporter = Some(handle);
    }
    tracing_subscriber::registry().with(layers).try_init()?;
    EXPORTING.store(exporter.is_some(), Ordering::Relaxed);
    Ok(LoggingGuard { tracer: exporter })
}

#[cfg(test)]
mod tests;
