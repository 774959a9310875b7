//! The Prometheus text exposition format 0.0.4, written by hand because `/metrics/resource` and
//! `/metrics/cadvisor` carry per-sample timestamps, which the `prometheus-client` registry
//! cannot write. The layout is client_golang's: families sorted by name, series by label
//! values, a family without series left out, floats as Go's `%g`.

use std::fmt::Write;

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

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

/// One series: label pairs in the order they are written, value, optional timestamp in ms.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// `(name, value)` pairs; client_golang writes them sorted by name.
    pub labels: Vec<(&'static str, String)>,
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
        if !series.labels.is_empty() {
            out.push('{');
            for (i, (name, value)) in series.labels.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{name}=\"{}\"", escape_label(value));
            }
            out.push('}');
        }
        let _ = write!(out, " {}", go_float(series.value));
        if let Some(ms) = series.timestamp_ms {
            let _ = write!(out, " {ms}");
        }
        out.push('\n');
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
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
            labels: vec![("x", "2".into())],
            value: 2.0,
            timestamp_ms: Some(5),
        });
        b.series.push(Series {
            labels: vec![("x", "1\"".into())],
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
