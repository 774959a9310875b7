//! The Prometheus text exposition format 0.0.4, written by hand because `/metrics/resource` and
//! `/metrics/cadvisor` carry per-sample timestamps, which the `prometheus-client` registry
//! cannot write. The layout is client_golang's: families sorted by name, series by label
//! values, a family without series left out, floats as Go's `%g`. The other writer of this
//! format, `metrics::exposition`, derives it from the registry's OpenMetrics text for
//! `/metrics`; the two share the content type and nothing else, since neither input can be
//! given to the other.

use std::fmt::Write;

/// The `Content-Type` of the text format: the one `/metrics` answers with when the scraper
/// asks for Prometheus text, so the two writers cannot drift apart.
pub use crate::metrics::exposition::PROMETHEUS_TEXT as CONTENT_TYPE;

/// A family's `# TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (until the thing it counts restarts).
    Counter,
    /// Goes up and down.
    Gauge,
}

/// One family: its name, help, type and series.
#[derive(Debug, Clone)]
pub struct Family {
    /// The metric name.
    pub name: &'static str,
    /// The help text, as upstream words it.
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
    /// Its samples.
    pub series: Vec<Series>,
}

/// Label pairs rendered once (`a="x",b="y"`, values escaped), so that a set shared by many
/// series costs one copy each rather than one allocation per label. Ordered as rendered, which
/// within a family (same names, same order) is the order of the values.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct LabelSet(String);

impl LabelSet {
    /// `pairs` in the order given; client_golang writes them sorted by name.
    pub fn new<V: AsRef<str>>(pairs: &[(&str, V)]) -> Self {
        let mut text = String::new();
        for (i, (name, value)) in pairs.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(name);
            text.push_str("=\"");
            escape_label_into(&mut text, value.as_ref());
            text.push('"');
        }
        LabelSet(text)
    }
}

impl From<Vec<(&'static str, String)>> for LabelSet {
    fn from(pairs: Vec<(&'static str, String)>) -> Self {
        LabelSet::new(&pairs)
    }
}

/// One series: its labels, value, optional timestamp in ms.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The label pairs.
    pub labels: LabelSet,
    /// The sample.
    pub value: f64,
    /// Milliseconds since the epoch, when the sample carries its own time.
    pub timestamp_ms: Option<i64>,
}

impl Family {
    /// An empty family.
    pub fn new(name: &'static str, help: &'static str, kind: Kind) -> Self {
        Family {
            name,
            help,
            kind,
            series: Vec::new(),
        }
    }
}

/// `families` in the text format, sorted by name as client_golang gathers them.
pub fn encode(families: &mut [Family]) -> String {
    families.sort_by_key(|f| f.name);
    let mut out = String::new();
    for family in families {
        write_family(&mut out, family);
    }
    out
}

/// One family in the text format; nothing for a family without series, as client_golang.
pub fn write_family(out: &mut String, family: &mut Family) {
    if family.series.is_empty() {
        return;
    }
    family.series.sort_by(|a, b| a.labels.cmp(&b.labels));
    let kind = match family.kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    };
    let help = family.help.replace('\\', "\\\\").replace('\n', "\\n");
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# HELP {} {help}", family.name);
    let _ = writeln!(out, "# TYPE {} {kind}", family.name);
    for series in &family.series {
        out.push_str(family.name);
        if !series.labels.0.is_empty() {
            out.push('{');
            out.push_str(&series.labels.0);
            out.push('}');
        }
        out.push(' ');
        write_go_float(out, series.value);
        if let Some(ms) = series.timestamp_ms {
            let _ = write!(out, " {ms}");
        }
        out.push('\n');
    }
}

/// Appends a label value with `\`, `"` and newlines escaped.
fn escape_label_into(out: &mut String, value: &str) {
    if !value.contains(['\\', '"', '\n']) {
        out.push_str(value);
        return;
    }
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Appends [`go_float`] of `value`; whole numbers below 1e6 (most samples) without the
/// exponent round trip.
fn write_go_float(out: &mut String, value: f64) {
    if value.fract() == 0.0 && value.abs() < 1e6 && value != 0.0 {
        let _ = write!(out, "{}", value as i64);
    } else {
        out.push_str(&go_float(value));
    }
}

/// A float as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes it: the shortest digits that
/// read back exactly, in exponent form (`1.7e+09`) below 1e-4 and from 1e6 on.
pub fn go_float(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if value == 0.0 {
        return "0".into();
    }
    let scientific = format!("{value:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return format!("{value}");
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_written_as_go_writes_them() {
        assert_eq!(go_float(0.0), "0");
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(12.5), "12.5");
        assert_eq!(go_float(123_456.0), "123456");
        assert_eq!(go_float(4_194_304.0), "4.194304e+06");
        assert_eq!(go_float(1_699_999_001.0), "1.699999001e+09");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5e10), "-2.5e+10");
        assert_eq!(go_float(f64::NAN), "NaN");
    }

    #[test]
    fn families_are_sorted_and_empty_ones_left_out() {
        let mut b = Family::new("b_total", "B.", Kind::Counter);
        b.series.push(Series {
            labels: LabelSet::new(&[("x", "2")]),
            value: 2.0,
            timestamp_ms: Some(5),
        });
        b.series.push(Series {
            labels: LabelSet::new(&[("x", "1\"")]),
            value: 1.0,
            timestamp_ms: None,
        });
        let empty = Family::new("a", "A.", Kind::Gauge);
        assert_eq!(
            encode(&mut [b, empty]),
            "# HELP b_total B.\n# TYPE b_total counter\nb_total{x=\"1\\\"\"} 1\nb_total{x=\"2\"} 2 5\n"
        );
    }
}
