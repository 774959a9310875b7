//! The two text formats a scraper may ask for. The kubelet serves the Prometheus text format
//! 0.0.4 unless the scraper's `Accept` prefers OpenMetrics (client_golang's `promhttp` with
//! OpenMetrics enabled); `prometheus-client` writes only OpenMetrics, so the 0.0.4 text is
//! derived from it by the formats' documented differences: a counter family is named as its
//! samples (`..._total`), an info family becomes a gauge named `..._info`, and `# UNIT`,
//! `_created` samples and `# EOF` go.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::registry::Registry;

/// The `Content-Type` of the Prometheus text format, as client_golang writes it.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The `Content-Type` of OpenMetrics text 1.0.
pub const OPENMETRICS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upstream counters whose names do not end in `_total` (they predate the convention): in the
/// Prometheus text their samples keep the bare name, in OpenMetrics they gain `_total` as
/// client_golang writes them.
const COUNTERS_WITHOUT_TOTAL: &[&str] = &[
    "kubelet_evictions",
    "kubelet_preemptions",
    "kubelet_pleg_discard_events",
];

/// A family registered with its help text as given. `Registry::register` appends a period to
/// every help text, which would change upstream's texts (and double the period of those that
/// have one); a collector's descriptor is written verbatim.
#[derive(Debug)]
struct Verbatim<M> {
    name: &'static str,
    help: &'static str,
    metric: M,
}

impl<M> Collector for Verbatim<M>
where
    M: EncodeMetric + std::fmt::Debug + Send + Sync + 'static,
{
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let family =
            encoder.encode_descriptor(self.name, self.help, None, self.metric.metric_type())?;
        self.metric.encode(family)
    }
}

/// Registers `metric` as `name` with `help` exactly as given (counters without `_total`: the
/// encoder appends it).
pub fn register_verbatim<M>(
    registry: &mut Registry,
    name: &'static str,
    help: &'static str,
    metric: M,
) where
    M: EncodeMetric + std::fmt::Debug + Send + Sync + 'static,
{
    registry.register_collector(Box::new(Verbatim { name, help, metric }));
}

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text 0.0.4, the default.
    Prometheus,
    /// OpenMetrics text 1.0.0, when the scraper prefers it.
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header prefers: the supported media range with the highest
    /// `q` (ties keep the order given); anything unparsable or absent is the default.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Prometheus;
        };
        let mut best: Option<(f32, Format)> = None;
        for range in accept.split(',') {
            let Ok(media) = range.trim().parse::<mime::Mime>() else {
                continue;
            };
            let format = match (media.type_().as_str(), media.subtype().as_str()) {
                ("application", "openmetrics-text") => Format::OpenMetrics,
                ("text", "plain") | ("text", "*") | ("*", "*") => Format::Prometheus,
                _ => continue,
            };
            let q = media
                .get_param("q")
                .and_then(|q| q.as_str().parse::<f32>().ok())
                .unwrap_or(1.0);
            if q > 0.0 && best.is_none_or(|(best_q, _)| q > best_q) {
                best = Some((q, format));
            }
        }
        best.map_or(Format::Prometheus, |(_, format)| format)
    }

    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => PROMETHEUS_TEXT,
            Format::OpenMetrics => OPENMETRICS_TEXT,
        }
    }
}

/// Every family of `registries`, in order, in `format`.
pub fn render(format: Format, registries: &[&Registry]) -> String {
    let mut openmetrics = String::new();
    for registry in registries {
        if let Err(error) =
            prometheus_client::encoding::text::encode_registry(&mut openmetrics, registry)
        {
            tracing::warn!(%error, "cannot encode metrics");
        }
    }
    match format {
        Format::OpenMetrics => {
            // Cannot fail: writing to a String.
            let _ = prometheus_client::encoding::text::encode_eof(&mut openmetrics);
            openmetrics
        }
        Format::Prometheus => to_prometheus_text(&openmetrics),
    }
}

/// What the current family's samples are renamed to in the Prometheus text.
enum Family<'a> {
    /// Pass the samples through.
    Same,
    /// A counter: drop `_created`; a legacy counter's `<name>_total` samples lose the suffix.
    Counter { name: &'a str, legacy: bool },
}

/// OpenMetrics text (without `# EOF`, as `prometheus-client` writes it) to Prometheus text.
fn to_prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<(&str, &str)> = None;
    let mut family = Family::Same;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name, text));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (exposed, kind) = match kind {
                "counter" if COUNTERS_WITHOUT_TOTAL.contains(&name) => {
                    family = Family::Counter { name, legacy: true };
                    (name.to_string(), "counter")
                }
                "counter" => {
                    family = Family::Counter {
                        name,
                        legacy: false,
                    };
                    (format!("{name}_total"), "counter")
                }
                "info" => {
                    family = Family::Same;
                    (format!("{name}_info"), "gauge")
                }
                "gaugehistogram" => {
                    family = Family::Same;
                    (name.to_string(), "histogram")
                }
                "unknown" => {
                    family = Family::Same;
                    (name.to_string(), "untyped")
                }
                other => {
                    family = Family::Same;
                    (name.to_string(), other)
                }
            };
            if let Some((_, text)) = help.take().filter(|(help_name, _)| *help_name == name) {
                out.push_str(&format!("# HELP {exposed} {text}\n"));
            }
            out.push_str(&format!("# TYPE {exposed} {kind}\n"));
            continue;
        }
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        if let Family::Counter { name, legacy } = family {
            if let Some(rest) = line.strip_prefix(name) {
                if rest.starts_with("_created") {
                    continue;
                }
                if legacy {
                    if let Some(tail) = rest.strip_prefix("_total") {
                        out.push_str(name);
                        out.push_str(tail);
                        out.push('\n');
                        continue;
                    }
                }
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
